"""Workers' stderr: TVM's harmless C++ warnings dropped, every other line kept, in order.

The filter works on file descriptor 2, so each test runs a fresh Python process (the pytest
process's own stderr is pytest's).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tvtv.native_log import ENV, HARMLESS, harmless

FAST_MODE = next(iter(HARMLESS))

TAKE_MODULE = '''
from tvm.script import ir as I, relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 3), "float32"), i: R.Tensor((2,), "int64")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            y = R.take(x, i, axis=0)
            R.output(y)
        return y
'''


def python(code: str, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != ENV}
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=300, env=full)


RAW_WRITES = f"""
    import os, sys
    from tvtv.native_log import filtered_stderr
    with filtered_stderr() as f:
        os.write(2, b"first\\n[12:00:00] transform.h:1261: Warning: {FAST_MODE}. Make sure\\n")
        print("from python", file=sys.stderr, flush=True)
        os.write(2, b"[12:00:01] other.cc:1: Warning: something else\\n")
        os.write(2, b"{FAST_MODE} again\\nno newline at the end")
    print("after", file=sys.stderr)
    print(dict(f.dropped) if f else None)
"""


def test_harmless_lines_are_dropped_and_the_others_kept_in_order():
    res = python(RAW_WRITES)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ("first\nfrom python\n[12:00:01] other.cc:1: Warning: something else\n"
                          "no newline at the endafter\n")
    assert res.stdout.strip() == repr({FAST_MODE: 2})


def test_every_line_is_kept_when_asked_for():
    res = python(RAW_WRITES, env={ENV: "all"})
    assert res.returncode == 0, res.stderr
    assert res.stderr.count(FAST_MODE) == 2 and "something else" in res.stderr
    assert res.stdout.strip() == "None"


def test_harmless_names_only_the_known_warning():
    assert harmless(f"[1] /project/include/tvm/topi/transform.h:1261: Warning: {FAST_MODE}.")
    assert harmless("Warning: Fast mode is on") is None
    assert harmless("") is None
    # what a pass that rejects a module prints besides its error (the verdict's reason)
    assert harmless("[19:34:11] /project/src/tirx/script/printer/expr.cc:429: Warning: "
                    "No TScriptPrinterName attribute for te.tensor_load")
    assert harmless("[19:34:11] /project/src/relax/ir/block_builder.cc:67: Warning: "
                    "BlockBuilder destroyed with remaining blocks!")


LEGALIZE_TAKE = """
    import sys
    from tvm import relax
    from tvtv.ir.tvm_bridge import load_module
    from tvtv.native_log import filtered_stderr
    module = load_module(sys.argv[1])
    with filtered_stderr() as f:
        relax.transform.LegalizeOps()(module)
    print(sum(f.dropped.values()) if f else -1)
"""


def test_tvm_still_prints_the_warning_the_filter_names(tmp_path: Path):
    """LegalizeOps of relax.take prints TVM's fast-mode warning: shown with the filter off,
    dropped with it on (if TVM changes the text, the first assertion fails)."""
    (tmp_path / "take.py").write_text(TAKE_MODULE)
    shown = python(LEGALIZE_TAKE, str(tmp_path / "take.py"), env={ENV: "all"})
    assert shown.returncode == 0, shown.stderr
    assert FAST_MODE in shown.stderr
    quiet = python(LEGALIZE_TAKE, str(tmp_path / "take.py"))
    assert quiet.returncode == 0, quiet.stderr
    assert FAST_MODE not in quiet.stderr
    assert int(quiet.stdout.strip().splitlines()[-1]) >= 1


def test_the_cli_workers_output_has_no_fast_mode_warning(tmp_path: Path):
    """`tvtv check` with a worker: the take module is proved and stderr is free of the
    warning; with TVTV_TVM_WARNINGS=all it is there."""
    (tmp_path / "take.py").write_text(TAKE_MODULE)
    args = [sys.executable, "-m", "tvtv", "check", "--pass", "LegalizeOps", "--module",
            str(tmp_path / "take.py"), "--jobs", "1"]
    env = {k: v for k, v in os.environ.items() if k != ENV and not k.startswith("TVTV_TEST_")}
    res = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "proved" in res.stdout
    assert FAST_MODE not in res.stderr + res.stdout
    loud = subprocess.run(args, capture_output=True, text=True, timeout=300, env={**env, ENV: "all"})
    assert loud.returncode == 0
    assert FAST_MODE in loud.stderr


KEEP_PYTHON = f"""
    import os, sys
    from tvtv.native_log import filtered_stderr
    before = sys.stderr
    with filtered_stderr(keep_python=True) as f:
        os.write(2, b"[12:00:00] transform.h:1261: Warning: {FAST_MODE}.\\n")
        print("python: {FAST_MODE}", file=sys.stderr, flush=True)
        moved = sys.stderr is not before and sys.stderr.fileno() != 2
    print("after", file=sys.stderr)
    print(moved, sys.stderr is before, dict(f.dropped) if f else None)
"""


def test_keep_python_moves_only_python_writes_past_the_filter():
    """tvtv's own process: what C++ writes to fd 2 is filtered, Python's sys.stderr writes
    to a copy of the real descriptor (a terminal stays one for rich) and comes back after."""
    res = python(KEEP_PYTHON)
    assert res.returncode == 0, res.stderr
    assert res.stderr == f"python: {FAST_MODE}\nafter\n"
    assert res.stdout.strip() == f"True True {repr({FAST_MODE: 1})}"


def _check_in_process(module: Path, env: dict[str, str], stderr: int | None = None
                      ) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "tvtv", "check", "--pass", "LegalizeOps", "--module",
            str(module), "--jobs", "0"]
    return subprocess.run(args, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE if stderr is None else stderr,
                          text=True, timeout=300, env=env)


def test_the_in_process_run_has_no_fast_mode_warning(tmp_path: Path):
    """`tvtv check --jobs 0` runs TVM in tvtv's own process: the warning is dropped there
    too, and shown with TVTV_TVM_WARNINGS=all."""
    (tmp_path / "take.py").write_text(TAKE_MODULE)
    env = {k: v for k, v in os.environ.items() if k != ENV and not k.startswith("TVTV_TEST_")}
    res = _check_in_process(tmp_path / "take.py", env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "proved" in res.stdout
    assert FAST_MODE not in res.stderr + res.stdout
    loud = _check_in_process(tmp_path / "take.py", {**env, ENV: "all"})
    assert loud.returncode == 0
    assert FAST_MODE in loud.stderr


def test_the_in_process_progress_display_is_drawn_on_a_terminal(tmp_path: Path):
    """With stderr on a terminal (a pseudo-terminal here) rich still draws its progress
    display while the C++ warnings are filtered: a pipe on fd 2 alone would make rich think
    stderr is no terminal and draw nothing."""
    import pty
    (tmp_path / "take.py").write_text(TAKE_MODULE)
    env = {k: v for k, v in os.environ.items() if k != ENV and not k.startswith("TVTV_TEST_")}
    env["COLUMNS"] = "120"
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tvtv", "check", "--pass", "LegalizeOps",
                             "--module", str(tmp_path / "take.py"), "--jobs", "0"],
                            stdout=subprocess.PIPE, stderr=slave, text=True, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:   # EIO once the child has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    out = proc.stdout.read() if proc.stdout else ""
    assert proc.wait(timeout=300) == 0, out
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert "checking LegalizeOps" in shown and "1/1" in shown
    assert FAST_MODE not in shown
    assert "proved" in out
