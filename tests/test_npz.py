"""bfloat16 and float8 arrays through `.npz` files: the VM worker's inputs and outputs, saved
counterexamples and reproducer scripts (before `tvtv.ir.npz`, `np.load` gave them back as
`|V2` records, which TVM refuses, so a bfloat16 counterexample could not run on the VM)."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from tvm.script import ir as I
from tvm.script import relax as R

from tvtv.api import check_pass
from tvtv.ir import npz, tvm_bridge
from tvtv.reports.repro import reproducer_source
from tvtv.runner import load_inputs, save_inputs

sys.path.insert(0, str(Path(__file__).parent / "plugin_project"))
from demo_passes import add_to_subtract  # noqa: E402  (the demo project's broken pass)

SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3.0e38, -3.0e38]


@I.ir_module
class AddBF16:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="bfloat16"), y: R.Tensor((2, 3), dtype="bfloat16")) -> R.Tensor((2, 3), dtype="bfloat16"):
        with R.dataflow():
            a = R.add(x, y)
            R.output(a)
        return a


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4,
                                   np.float16, np.float32, np.int64, np.bool_])
def test_round_trip_keeps_dtype_and_bits(dtype):
    values = np.array(SPECIAL, dtype=np.float32)
    if np.dtype(dtype).kind in "iub":                # integers: small values, no casts of inf
        a = (np.arange(len(SPECIAL)) % 3).astype(dtype)
    else:
        with np.errstate(over="ignore"):            # float16/float8: ±3e38 becomes ±inf/max
            a = values.astype(dtype)
    scalar = np.asarray(a[2])                        # a 0-d array
    buf = io.BytesIO()
    npz.savez(buf, a=a, s=scalar)
    back = npz.load(io.BytesIO(buf.getvalue()))
    assert list(back) == ["a", "s"]
    for name, original in (("a", a), ("s", scalar)):
        got = back[name]
        assert got.dtype == original.dtype and got.shape == original.shape
        assert got.tobytes() == original.tobytes()  # NaN payloads and -0 included


def test_plain_npz_files_still_load(tmp_path):
    np.savez(tmp_path / "old.npz", x=np.arange(3, dtype="float32"))
    assert npz.load(tmp_path / "old.npz")["x"].tolist() == [0.0, 1.0, 2.0]


def test_a_name_holding_the_dtype_mark_is_refused():
    with pytest.raises(ValueError, match="marks a stored dtype"):
        npz.savez(io.BytesIO(), **{"x@bfloat16": np.zeros(2, dtype="float32")})


def test_saved_counterexample_inputs_keep_bfloat16(tmp_path):
    x = np.array([1.5, -0.0, np.inf], dtype=ml_dtypes.bfloat16)
    t = (np.array([2.0], dtype=ml_dtypes.bfloat16), np.array([3], dtype="int32"))
    save_inputs(tmp_path / "in.npz", {"x": x, "t": t})
    back = load_inputs(tmp_path / "in.npz")
    assert back["x"].dtype == ml_dtypes.bfloat16 and back["x"].tobytes() == x.tobytes()
    assert isinstance(back["t"], tuple) and back["t"][0].dtype == ml_dtypes.bfloat16


def test_bfloat16_runs_on_the_vm_in_a_child_process():
    x = np.array([[1, 2, -0.0], [np.inf, 0.5, -3]], dtype=ml_dtypes.bfloat16)
    y = np.array([[1, 1, 0.0], [1, 0.25, 1]], dtype=ml_dtypes.bfloat16)
    [(status, outs)] = tvm_bridge.run_vm_isolated({"m": AddBF16}, "main", [[x, y]])["m"]
    assert status == "ok", outs
    assert outs[0].dtype == ml_dtypes.bfloat16
    assert outs[0].astype("float32").tolist() == (x.astype("float32") + y.astype("float32")).tolist()


def test_bfloat16_counterexample_is_shown_on_the_vm_and_by_its_reproducer(tmp_path):
    """A broken pass on a bfloat16 graph: the counterexample is confirmed by execution on the
    VM (before, the worker refused the inputs and only the IEEE evaluation could confirm
    it), and its standalone reproducer shows the difference."""
    report = check_pass(add_to_subtract, AddBF16)
    r = report.results[0]
    assert r.verdict == "counterexample" and r.confirmed is True
    cex = r.counterexample
    # by execution: on the solver's inputs, or on drawn ones when Z3's model separates add
    # from subtract only in the abstraction (as in tests/test_refinement.py's twin)
    assert cex.confirmed_by in ("vm", "vm-random-inputs")
    assert all(v.dtype == ml_dtypes.bfloat16 for v in cex.inputs.values())
    after = tvm_bridge.apply(add_to_subtract, AddBF16)
    script = tmp_path / "repro_bf16.py"
    script.write_text(reproducer_source(AddBF16, after, "main", [cex.inputs["x"], cex.inputs["y"]],
                                        "add to subtract in bfloat16", "AddToSubtract"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DIFFERENCE: output 0 at index" in proc.stdout
