"""Relax op encoders, one module per family. Importing this package registers them all."""
from tvtv.encode.ops import convolution, elementwise, linalg, manipulate, pooling  # noqa: F401
