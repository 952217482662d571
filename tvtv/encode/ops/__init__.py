"""Relax op encoders, one module per family. Importing this package registers them all."""
from tvtv.encode.ops import (  # noqa: F401
    advanced_indexing,
    attention,
    bucketing,
    convolution,
    creation,
    elementwise,
    image,
    indexing,
    linalg,
    loss,
    manipulate,
    normalization,
    pooling,
    quantization,
    rearrange,
    statistical,
)
