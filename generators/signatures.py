"""How each Relax op is called by the emitter and read back by the importer.

`SIGNATURES` maps a TVM op name to an `OpSignature`: which leading arguments are tensors, which
graph attributes become further (non-tensor) Relax arguments, and which are fields of the op's
attrs object. Every generator's ops must have an entry here; add new ops to this table.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpSignature:
    """How a Relax op is called.

    * `tensors`: number of leading tensor arguments, or ``None`` for ops taking one Relax
      tuple of tensors (concat);
    * `args`: names of graph attributes passed as further Relax arguments after the tensors
      (shapes become ``ShapeExpr``, numbers prim values, lists of ints Relax tuples);
    * `attrs`: names of the fields of the op's attrs object, all passed as keywords.
    """

    tensors: int | None
    args: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()


_UNARY = ("exp", "tanh", "sigmoid", "sqrt", "negative", "abs", "nn.relu", "nn.gelu",
          "nn.silu", "square", "erf", "floor", "ceil", "round", "sign", "log", "rsqrt",
          "sin", "cos", "nn.gelu_tanh", "isnan", "isinf", "isfinite",
          "logical_not", "nn.selu")
_BINARY = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
           "floor_divide", "floor_mod", "less", "greater", "equal", "not_equal", "less_equal",
           "greater_equal", "logical_and", "logical_or")
_REDUCE = ("sum", "mean", "max", "min", "variance", "prod", "std")
_POOL2D = ("pool_size", "strides", "padding", "dilation", "ceil_mode", "count_include_pad",
           "layout", "out_layout")

# Added for the HIRGen generator (elementwise ops of its pool that no other table has).
_HIRGEN_UNARY = ("atan", "sinh", "cosh")

SIGNATURES: dict[str, OpSignature] = {
    **{f"relax.{n}": OpSignature(1) for n in _HIRGEN_UNARY},
    **{f"relax.{n}": OpSignature(1) for n in _UNARY},
    **{f"relax.{n}": OpSignature(2) for n in _BINARY},
    **{f"relax.{n}": OpSignature(1, attrs=("axis", "keepdims")) for n in _REDUCE},
    "relax.clip": OpSignature(1, args=("min", "max")),
    "relax.nn.softmax": OpSignature(1, attrs=("axis",)),
    "relax.nn.log_softmax": OpSignature(1, attrs=("axis",)),
    "relax.nn.leakyrelu": OpSignature(1, attrs=("alpha",)),
    "relax.reshape": OpSignature(1, args=("shape",)),
    "relax.permute_dims": OpSignature(1, attrs=("axes",)),
    "relax.expand_dims": OpSignature(1, attrs=("axis",)),
    "relax.squeeze": OpSignature(1, attrs=("axis",)),
    "relax.flatten": OpSignature(1),
    "relax.concat": OpSignature(None, attrs=("axis",)),
    "relax.split": OpSignature(1, attrs=("indices_or_sections", "axis")),
    "relax.strided_slice": OpSignature(1, args=("axes", "begin", "end", "strides"),
                                       attrs=("assume_inbound",)),
    "relax.take": OpSignature(2, attrs=("axis", "mode")),
    "relax.broadcast_to": OpSignature(1, args=("shape",)),
    "relax.tile": OpSignature(1, attrs=("repeats",)),
    "relax.repeat": OpSignature(1, attrs=("repeats", "axis")),
    "relax.flip": OpSignature(1, attrs=("axis",)),
    "relax.argmax": OpSignature(1, attrs=("axis", "keepdims")),
    "relax.argmin": OpSignature(1, attrs=("axis", "keepdims")),
    "relax.matmul": OpSignature(2, attrs=("out_dtype",)),
    "relax.nn.conv2d": OpSignature(2, attrs=("strides", "padding", "dilation", "groups",
                                             "data_layout", "kernel_layout", "out_layout",
                                             "out_dtype")),
    "relax.nn.max_pool2d": OpSignature(1, attrs=_POOL2D),
    "relax.nn.avg_pool2d": OpSignature(1, attrs=_POOL2D),
    "relax.nn.adaptive_avg_pool2d": OpSignature(1, attrs=("output_size", "layout",
                                                          "out_layout")),
    "relax.nn.layer_norm": OpSignature(3, attrs=("axes", "epsilon", "center", "scale")),
    "relax.nn.batch_norm": OpSignature(5, attrs=("axis", "epsilon", "center", "scale",
                                                 "momentum", "training")),
    "relax.nn.pad": OpSignature(1, attrs=("pad_width", "pad_mode", "pad_value")),
    "relax.where": OpSignature(3),
    "relax.astype": OpSignature(1, attrs=("dtype",)),
    # -- added for the GenCoG generator (generators/gencog/ops.py) --
    **{f"relax.{n}": OpSignature(1) for n in ("tan", "trunc", "bitwise_not",
                                               "nn.batch_flatten")},
    **{f"relax.{n}": OpSignature(2) for n in ("bitwise_and", "bitwise_or", "bitwise_xor",
                                               "logical_xor")},
    **{f"relax.nn.conv{d}d": OpSignature(2, attrs=("strides", "padding", "dilation", "groups",
                                                    "data_layout", "kernel_layout",
                                                    "out_layout", "out_dtype"))
       for d in (1, 3)},
    **{f"relax.nn.conv{d}d_transpose": OpSignature(
        2, attrs=("strides", "padding", "output_padding", "dilation", "groups", "data_layout",
                  "kernel_layout", "out_layout", "out_dtype")) for d in (1, 2, 3)},
    **{f"relax.nn.{k}_pool{d}d": OpSignature(1, attrs=_POOL2D)
       for k in ("max", "avg") for d in (1, 3)},
    **{f"relax.nn.adaptive_avg_pool{d}d": OpSignature(1, attrs=("output_size", "layout",
                                                                "out_layout"))
       for d in (1, 3)},
    "relax.nn.prelu": OpSignature(2, attrs=("axis",)),
    "relax.nn.instance_norm": OpSignature(3, attrs=("channel_axis", "axes", "epsilon", "center",
                                                    "scale")),
    "relax.nn.group_norm": OpSignature(3, attrs=("num_groups", "channel_axis", "axes",
                                                 "epsilon", "center", "scale")),
    "relax.nn.rms_norm": OpSignature(2, attrs=("axes", "epsilon")),
    "relax.image.resize2d": OpSignature(1, args=("size",), attrs=(
        "roi", "layout", "method", "coordinate_transformation_mode", "rounding_method",
        "cubic_alpha", "cubic_exclude", "extrapolation_value", "out_dtype")),
    # -- added for the GenCoG generator's Relax-era ops (generators/gencog/ops_relax.py) --
    **{f"relax.{n}": OpSignature(1) for n in ("acos", "acosh", "asin", "asinh", "atanh")},
    **{f"relax.{n}": OpSignature(2) for n in ("atan2", "mod", "log_add_exp", "outer")},
    **{f"relax.{n}": OpSignature(1, attrs=("axis", "dtype", "exclusive"))
       for n in ("cumsum", "cumprod")},
    "relax.nn.softplus": OpSignature(1, attrs=("beta", "threshold")),
    "relax.sort": OpSignature(1, attrs=("axis", "descending")),
    "relax.argsort": OpSignature(1, attrs=("axis", "descending", "dtype")),
    "relax.topk": OpSignature(1, attrs=("k", "axis", "ret_type", "largest", "dtype")),
    "relax.median": OpSignature(1, attrs=("axis", "keepdims")),
    "relax.tril": OpSignature(1, args=("k",)),
    "relax.triu": OpSignature(1, args=("k",)),
    "relax.stack": OpSignature(None, attrs=("axis",)),
    "relax.meshgrid": OpSignature(None, attrs=("indexing",)),
    "relax.einsum": OpSignature(None, attrs=("subscripts",)),
    "relax.slice_scatter": OpSignature(2, args=("start", "end", "step"), attrs=("axis",)),
    "relax.collapse_sum_to": OpSignature(1, args=("shape",)),
    "relax.zeros_like": OpSignature(1, attrs=("dtype",)),
    "relax.ones_like": OpSignature(1, attrs=("dtype",)),
    "relax.nn.dropout": OpSignature(1, attrs=("rate",)),
    "relax.image.resize3d": OpSignature(1, args=("size",), attrs=(
        "roi", "layout", "method", "coordinate_transformation_mode", "rounding_method",
        "cubic_alpha", "cubic_exclude", "extrapolation_value", "out_dtype")),
    "relax.image.affine_grid": OpSignature(1, args=("size",), attrs=("align_corners",)),
    "relax.nn.attention": OpSignature(3, attrs=("scale", "causal_mask", "window_size")),
}
