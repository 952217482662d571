"""Relax op encoders, one module per family. Importing this package registers them all."""
from tvtv.encode.ops import (  # noqa: F401
    convolution,
    creation,
    elementwise,
    indexing,
    linalg,
    loss,
    manipulate,
    normalization,
    pooling,
    statistical,
)
