"""Standalone reproducer scripts: one Python file per finding that needs only TVM and numpy.

The script embeds the source and target modules (TVMScript text, tensor constants as a
base64 npz) and the inputs (a base64 npz: exact dtypes and special values), builds both on the
VM for llvm, runs the function, and prints the first differing output element. Exit status 1
when it shows the difference, 0 when it does not, 2 when the source cannot be built or run.

When the VM cannot show the difference (LegalizeOps: the VM legalizes the source too), the
finding was confirmed against the IEEE evaluation of the source's specification; the script
then also embeds that value and compares the target's output with it.
"""
from __future__ import annotations

import base64
import io
import re
from typing import Any

import numpy as np

from tvtv.ir import npz, tvm_bridge
from tvtv.report import json_scalar

_TEMPLATE = '''#!/usr/bin/env python3
"""tvtv reproducer: {title}

Runs the module before the pass (source) and after it (target) on the TVM VM on the inputs
tvtv found, and prints the first output element where they differ (NaN equals NaN; +0.0 and
-0.0 differ). Needs only TVM (apache-tvm) and numpy. Exit status: 1 the difference shows,
0 it does not, 2 the source cannot be built or run.
"""
import base64
import io
import math
import sys

import ml_dtypes
import numpy as np
import tvm
import tvm.script
from tvm import relax

FUNCTION = {func!r}
PASS = {pass_name!r}
SOURCE = {source!r}
TARGET = {target!r}
SOURCE_CONSTS = {source_consts!r}
TARGET_CONSTS = {target_consts!r}
INPUTS = {inputs!r}
# (output, index, value) of the source's specification where the VM cannot show the
# difference (it legalizes the source too); None otherwise
SPEC = {spec!r}


def arrays(blob):
    if not blob:
        return []
    # an array stored as `a3@bfloat16` holds the bits of an ml_dtypes array (tvtv.ir.npz)
    out = {{}}
    with np.load(io.BytesIO(base64.b64decode(blob))) as data:
        for key in data.files:
            name, _, dtype = key.partition("@")
            out[int(name[1:])] = data[key].view(np.dtype(getattr(ml_dtypes, dtype))) if dtype else data[key]
    return [out[i] for i in sorted(out)]


def parse(text, consts):
    tirx = getattr(tvm.script, "tirx", None) or getattr(tvm.script, "tir")
    env = {{"I": tvm.script.ir, "R": tvm.script.relax, "T": tirx,
           "metadata": {{"ir.GenericConst": [relax.const(c) for c in consts]}}}}
    return tvm.script.from_source(text, extra_vars=env)


def run(mod, inputs):
    # relax.build cannot build local functions; LambdaLift makes them private globals and
    # changes nothing else (a module without any is left as it is)
    mod = relax.transform.LambdaLift()(mod)
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    out = vm[FUNCTION](*[make(np.ascontiguousarray(a), tvm.cpu()) for a in inputs])
    flat = []

    def walk(o):
        if hasattr(o, "numpy"):
            flat.append(o.numpy())
        else:
            for x in o:
                walk(x)
    walk(out)
    return flat


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def main():
    inputs = arrays(INPUTS)
    for k, a in enumerate(inputs):
        print(f"input {{k}}: {{a.dtype}}{{list(a.shape)}} = {{np.array2string(a, threshold=20)}}")
    try:
        src = run(parse(SOURCE, arrays(SOURCE_CONSTS)), inputs)
    except Exception as err:
        print(f"the source cannot be built or run: {{err}}")
        return 2
    try:
        tgt = run(parse(TARGET, arrays(TARGET_CONSTS)), inputs)
    except Exception as err:
        print(f"DIFFERENCE: the source runs but the target fails: {{str(err).strip().splitlines()[-1:]}}")
        return 1
    if len(src) != len(tgt):
        print(f"DIFFERENCE: the source returns {{len(src)}} tensors, the target {{len(tgt)}}")
        return 1
    for k, (a, b) in enumerate(zip(src, tgt)):
        if a.shape != b.shape or a.dtype != b.dtype:
            print(f"DIFFERENCE: output {{k}}: source {{a.dtype}}{{list(a.shape)}}, target {{b.dtype}}{{list(b.shape)}}")
            return 1
        for idx in np.ndindex(a.shape):
            x, y = a[idx].item(), b[idx].item()
            if not same(x, y):
                print(f"DIFFERENCE: output {{k}} at index {{idx}}: source {{x!r}}, target {{y!r}}")
                return 1
    if SPEC is not None:
        k, idx, want = SPEC
        want = {{"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}}.get(want, want)
        got = tgt[k][tuple(idx)].item()
        if not same(float(want), float(got)) if isinstance(got, float) else want != got:
            print(f"DIFFERENCE from the specification: output {{k}} at index {{tuple(idx)}}: the "
                  f"source's specification (IEEE) gives {{want!r}}, the target computes {{got!r}} "
                  f"(the VM legalizes the source too, so source and target agree on the VM)")
            return 1
    print("no difference on the VM")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _npz_b64(arrays: list[np.ndarray]) -> str:
    if not arrays:
        return ""
    buf = io.BytesIO()
    npz.savez(buf, **{f"a{i}": np.asarray(a) for i, a in enumerate(arrays)})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def safe_name(label: str) -> str:
    """A file-name-safe form of a finding's label."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", label) or "case"


def reproducer_source(before: Any, after: Any, func: str, inputs: list[np.ndarray],
                      title: str, pass_name: str, spec: tuple[int, list[int], Any] | None = None) -> str:
    """The text of a standalone reproducer script (see the module docstring)."""
    src, src_consts = tvm_bridge.module_to_script(before)
    tgt, tgt_consts = tvm_bridge.module_to_script(after)
    # the docstring must not end early: keep the title on one line without quotes
    title = " ".join(title.replace('"""', "'''").replace("\\", "/").split())
    return _TEMPLATE.format(title=title, func=func, pass_name=pass_name, source=src,
                            target=tgt, source_consts=_npz_b64(src_consts),
                            target_consts=_npz_b64(tgt_consts), inputs=_npz_b64(inputs),
                            spec=None if spec is None else (int(spec[0]), [int(i) for i in spec[1]],
                                                            json_scalar(spec[2])))
