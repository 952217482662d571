"""Counts of the Relax constructs in a module (by walking the IR, not by asking the generator)."""
from __future__ import annotations

from collections import Counter
from typing import Any

import tvm
from tvm import relax


def module_stats(mod: tvm.ir.IRModule) -> Counter:
    """Counter of: op_calls, if, tuple, get_item, local_func, private_func, call_private,
    call_local, match_cast, match_cast_wide (from a less specific type), dataflow_blocks,
    and `dtype:<d>` for the dtypes of bound tensor values."""
    c: Counter = Counter()
    privates = {gv.name_hint for gv, f in mod.functions.items()
                if isinstance(f, relax.Function) and "global_symbol" not in (f.attrs or {})}
    c["private_func"] = len(privates)

    def visit(e: Any) -> None:
        if isinstance(e, relax.If):
            c["if"] += 1
        elif isinstance(e, tvm.ir.Tuple):
            c["tuple"] += 1
        elif isinstance(e, tvm.ir.TupleGetItem):
            c["get_item"] += 1
        elif isinstance(e, relax.Function):
            c["local_func"] += 1
        elif isinstance(e, tvm.ir.Call):
            if isinstance(e.op, tvm.ir.Op):
                c["op_calls"] += 1
            elif isinstance(e.op, tvm.ir.GlobalVar):
                c["call_private"] += 1
            else:
                c["call_local"] += 1
        elif isinstance(e, relax.SeqExpr):
            for block in e.blocks:
                if isinstance(block, relax.DataflowBlock):
                    c["dataflow_blocks"] += 1
                for b in block.bindings:
                    if isinstance(b, relax.MatchCast):
                        c["match_cast"] += 1
                        src = b.value.ty
                        if isinstance(src, relax.TensorType) and \
                                not isinstance(src.shape, relax.ShapeExpr):
                            c["match_cast_wide"] += 1
                    ty = b.var.ty
                    if isinstance(ty, relax.TensorType):
                        c["dtype:" + str(ty.dtype)] += 1

    for _, f in mod.functions.items():
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f.body, visit)
    return c


def op_call_count(mod: tvm.ir.IRModule) -> int:
    """Calls of Relax operators in all Relax functions of `mod` (nested functions included)."""
    return module_stats(mod)["op_calls"]
