"""relax.hamming_window: torch.hamming_window(window_length, periodic, alpha, beta, dtype).

Relax's docstring (python/tvm/relax/op/create.py) says only "Hamming window function" with a
window size, `periodic` ("If True, returns a window to be used as periodic function. If False,
return a symmetric window") and the coefficients alpha and beta; the op mirrors
torch.hamming_window (TVM's `relax_to_pyfunc_converter` maps it there, the PyTorch frontend
translates it to it), whose documentation is w[n] = alpha - beta * cos(2 pi n / (M - 1)) for
0 <= n < N, M = N + 1 when periodic (and the last element dropped), M = N otherwise; a window
of one element is [1], of zero elements empty.

How the arguments arrive (apache-tvm 0.27, measured): window_size is an int64 PrimValue,
periodic a bool PrimValue (an int one is accepted and cast to bool), alpha and beta float64
PrimValues (int64 for Python ints), `dtype` an attribute. Type inference rejects
window_size 0 ("must be greater than zero") and non-float dtypes, so a Relax program never
holds an empty window.
"""
from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float, numpy_dtype
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import checked_result, concrete
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX, Tensor, idx
from tvtv.encode.values import Value
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Term = z3.ExprRef
# every element is its own term (a cos of its own angle): refuse longer windows
WINDOW_BOUND = 1024
# pi to 64 digits: angles are computed in decimal and rounded once to the working precision
_PI = Decimal("3.141592653589793238462643383279502884197169399375105820974944592")


def _window_size(v: Value, call: OpCall) -> int:
    n = concrete(v, f"{call.op}: window_size")
    if isinstance(n, bool) or not isinstance(n, int):
        raise Unsupported(f"{call.op}: window_size {n!r} is not an integer")
    if n < 0 or n > WINDOW_BOUND:
        raise Unsupported(f"{call.op}: window_size {n} (limit {WINDOW_BOUND})")
    return n


def _periodic(v: Value, call: OpCall) -> bool:
    p = concrete(v, f"{call.op}: periodic")
    if not isinstance(p, (bool, int)):
        raise Unsupported(f"{call.op}: periodic {p!r} is not a bool")
    return bool(p)


def _coefficient(v: Value, call: OpCall, what: str) -> float:
    """alpha or beta as a float64 (torch's `double`); an int must be exact in float64."""
    c = concrete(v, f"{call.op}: {what}")
    if isinstance(c, bool) or not isinstance(c, (int, float)):
        raise Unsupported(f"{call.op}: {what} {c!r} is not a number")
    if isinstance(c, int) and abs(c) > 2 ** 53:
        raise Unsupported(f"{call.op}: {what} {c} is not exact in float64")
    return float(c)


def working_dtype(dtype: str) -> str:
    """The precision of the angle and of its cosine: float64 for a float64 window, float32
    for float32, float16 and bfloat16 ones (PyTorch's opmath type; TVM's lowering too)."""
    return "float64" if dtype == "float64" else "float32"


def angle(n: int, m: int, wdtype: str) -> float:
    """2 pi n / (m - 1) rounded once to `wdtype` (nearest; the value is irrational for
    n > 0, so there are no ties)."""
    with localcontext() as c:
        c.prec = 60
        exact = 2 * _PI * n / (m - 1)
        f = np.asarray(float(exact), numpy_dtype(wdtype))      # within an ulp of nearest
        cands = [np.nextafter(f, -np.inf), f, np.nextafter(f, np.inf)]
        best = min(cands, key=lambda x: abs(Decimal(float(x)) - exact))
    return float(best)


def _element(ctx: EncodeContext, theta: float, alpha: Term, beta: Term, wdtype: str,
             dtype: str) -> Term:
    """dtype(alpha - beta * cos(theta)): cos in `wdtype`, the rest in float64."""
    cos = ctx.dom(wdtype).unary("cos", ctx.dom(wdtype).const(theta))
    d64 = ctx.dom("float64")
    value = d64.sub(alpha, d64.mul(beta, ctx.model.cast(cos, wdtype, "float64")))
    return ctx.model.cast(value, "float64", dtype)


@register("relax.hamming_window")
def encode_hamming_window(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """hamming_window(N, periodic, alpha, beta, dtype) is torch.hamming_window: w[n] = alpha - beta * cos(2 pi n / (M - 1)) for n < N, M = N + 1 if periodic else N, N = 1 gives [1.0]; the angle is rounded once to float32 (float64 for float64 windows), cos is the model's function in that precision, alpha - beta * cos is computed in float64 and rounded once to dtype; literal arguments only.

    Details. The float model's cos is uninterpreted (with its special values and range), so
    the encoding is cos applied to a constant: the angle 2 pi n / (M - 1) computed exactly
    (decimal pi) and rounded to the working precision. alpha and beta are float64 PrimValues
    in Relax, so alpha - beta * cos is evaluated in float64 and rounded once to the window's
    dtype: the formula with each inexact step rounded once. PyTorch rounds every step to the
    dtype (its values can differ in the last bits; not modelled). N = 0 gives an empty
    tensor (PyTorch), but TVM's type inference rejects it. Windows above `WINDOW_BOUND`
    elements are unsupported.

    TVM 0.27's LegalizeOps (topi.hamming_window, measured TIR) computes the same chain except
    for the angle, which it rounds twice: fl(fl(2 pi) * fl(n)) / fl(M - 1) in float32
    (float64 for float64 windows). That is the nearest float32 for every angle with M <= 6
    and off by one ulp for 719 of the 2079 angles with M <= 64 (finding; the first:
    M = 7, n = 5): the VM's element then differs (float32 N = 7 at n = 5, float64 N = 4 at
    n = 1); float16 hides it (N = 12 periodic is equal everywhere). Its bfloat16 arange
    buffer is computed in float32, so indices above 256 stay exact (N = 300 measured). With
    int alpha and beta it computes alpha - beta * cos in float32, not float64 (last bits;
    equal on the measured N = 3)."""
    if len(args) != 4:
        raise Unsupported(f"{call.op} with {len(args)} arguments")
    n = _window_size(args[0], call)
    periodic = _periodic(args[1], call)
    alpha_v = _coefficient(args[2], call, "alpha")
    beta_v = _coefficient(args[3], call, "beta")
    dtype = str(call.attrs.get("dtype", ""))
    if not is_float(dtype):
        raise Unsupported(f"{call.op} of dtype {dtype!r} (float dtypes only)")
    dom = ctx.dom(dtype)
    if n <= 1:
        return checked_result(call, Tensor.from_numpy(np.ones(n), dtype, dom))
    m = n + 1 if periodic else n
    wdtype = working_dtype(dtype)
    d64 = ctx.dom("float64")
    alpha, beta = d64.const(alpha_v), d64.const(beta_v)
    elems = [_element(ctx, angle(k, m, wdtype), alpha, beta, wdtype, dtype) for k in range(n)]
    arr = z3.K(INDEX, elems[0])
    for k, e in enumerate(elems[1:], start=1):
        arr = zf.Store(arr, idx(k), e)
    return checked_result(call, Tensor((n,), dtype, arr))

