"""Everything else tvtv asks of TVM: parse and print TVMScript, keep tensor constants
beside the script, run passes, check well-formedness, build and run on the VM.

With `relax_reader.py`, this is the only code that imports TVM (apache-tvm 0.27).

Tensor constants: TVM 0.27 prints tensor constants as `metadata["ir.GenericConst"][i]` and
cannot print their values (`show_meta=True` segfaults). `save_module(mod, "m.py")` therefore
writes the values to `m.consts.npz` (arrays `c0`, `c1`, ... in the order of the indices `i`),
and `load_module("m.py")` reads them back from there.
"""
from __future__ import annotations

import functools
import os
import re
import runpy
import typing
import zipfile
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from tvtv.errors import InputError, tvm_message
from tvtv.ir import npz

IRModule = tvm.ir.IRModule
_METADATA_RE = re.compile(r'metadata\["ir\.GenericConst"\]\[(\d+)\]')
_FUNC_RE = re.compile(r"^    def (\w+)\(", re.M)


# the error of a script TVM's parser rejects (`parse_script`)
MALFORMED = "malformed TVMScript"

def consts_path(script_path: str | os.PathLike) -> Path:
    """Where the tensor constants of `script_path` live: `name.consts.npz` beside it."""
    p = Path(script_path)
    return p.with_name(p.stem + ".consts.npz")


def _script_env(consts: Sequence[Any]) -> dict[str, Any]:
    # extra_vars replaces TVM's defaults, so I, R and T must be given too.
    # TypeVar: TVM prints a buffer's symbolic elem_offset as `elem_offset = TypeVar("...")`
    # (index_put's and the scatters' legalized PrimFuncs), which must parse back.
    return {"I": tvm.script.ir, "R": tvm.script.relax, "T": tvm.script.tirx,
            "TypeVar": typing.TypeVar, "metadata": {"ir.GenericConst": list(consts)}}


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    # TVM's diagnostics start with the location; keep the line that names the error.
    lines = [l for l in text.splitlines() if l.strip()]
    for line in lines:
        if "error" in line.lower():
            return line.strip()
    return lines[0].strip() if lines else type(err).__name__


def parse_script(text: str, consts: Sequence[np.ndarray] = (), origin: str = "<string>") -> IRModule:
    """Parse TVMScript text (as `mod.script()` prints it) into an IRModule."""
    needed = [int(i) for i in _METADATA_RE.findall(text)]
    if needed and max(needed) >= len(consts):
        raise InputError(
            f"{origin}: refers to tensor constant metadata[\"ir.GenericConst\"][{max(needed)}] "
            f"but only {len(consts)} constant(s) were found (expected them in "
            f"{consts_path(origin).name if origin != '<string>' else 'a .consts.npz file'})")
    # the dtype spelled out: relax.const would turn int64 arrays into int32 constants
    const_exprs = [relax.const(np.asarray(c), str(np.asarray(c).dtype)) for c in consts]
    try:
        mod = tvm.script.from_source(text, extra_vars=_script_env(const_exprs))
    except Exception as err:  # TVM raises DiagnosticError and friends
        raise InputError(f"{origin}: {MALFORMED}: {_first_line(err)}") from None
    if not isinstance(mod, IRModule):
        raise InputError(f"{origin}: the script does not define an IRModule (@I.ir_module)")
    # `mod` is what `text` with `consts` parses to, so that is a faithful way to write it out
    # again (a counterexample's report loads its case files and shows them)
    _remember(mod, text, [np.array(c) for c in consts])
    return mod


def load_module(path: str | os.PathLike) -> IRModule:
    """Read a module from a TVMScript file, with its constants from `consts_path(path)`.

    A Python file that builds a module in code (imports tvm, defines an IRModule
    variable) is run instead, when it is not plain TVMScript.
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise InputError(f"{p}: cannot read: {err.strerror}") from None
    consts: list[np.ndarray] = []
    cp = consts_path(p)
    if cp.exists():
        data = npz.load(cp)
        consts = [data[f"c{i}"] for i in range(len(data))]
    elif _METADATA_RE.search(text):
        raise InputError(f"{p}: refers to tensor constants (metadata[...]) but {cp.name} "
                         f"is missing beside it")
    try:
        return parse_script(text, consts, origin=str(p))
    except InputError:
        if re.search(r"^\s*(import tvm|from tvm)", text, re.M):
            return _run_python_module(p)
        raise


def _run_python_module(p: Path) -> IRModule:
    try:
        env = runpy.run_path(str(p))
    except Exception as err:
        raise InputError(f"{p}: error while running the file: {_first_line(err)}") from None
    mods = [v for k, v in env.items() if isinstance(v, IRModule)]
    if not mods:
        raise InputError(f"{p}: defines no IRModule")
    for name in ("Module", "mod", "Before", "Expected", "After"):
        if isinstance(env.get(name), IRModule):
            return env[name]
    return mods[0]


def _constants_visited(mod: IRModule, script: str) -> list[Any]:
    """`mod`'s tensor constants (not scalars), each once, in the order a post-order walk of
    its Relax functions meets them, the functions taken in their order in `script`."""
    order = _FUNC_RE.findall(script)
    funcs = {gv.name_hint: f for gv, f in mod.functions.items()}
    seen: list[Any] = []

    def visit(e: Any) -> None:
        if isinstance(e, tvm.ir.GenericConst) and e.ty.ndim != 0:
            if not any(e.same_as(s) for s in seen):
                seen.append(e)

    for name in order:
        f = funcs.get(name)
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, visit)
    return seen


def _constants_in_print_order(mod: IRModule, script: str) -> list[Any]:
    """The constants as `script` numbers them (`metadata["ir.GenericConst"][i]`): TVM's
    printer numbers them in the order it first meets them, which is `_constants_visited`'s
    (`module_to_script` checks it on every module it writes)."""
    return _constants_visited(mod, script)


# The scripts of the modules written last, at most this many. A counterexample case writes
# the same source and target many times (each VM run of confirmation, the case's files, the
# report's text, the reproducer), and a module with tensor constants is parsed back each
# time (TVMScript's parser: ~1 s for a FuseTIR graph of 24 ops, measured on seed 0's graph 6).
KEEP_SCRIPTS = 16
_written: list[tuple[IRModule, str, list[np.ndarray]]] = []


def module_to_script(mod: IRModule) -> tuple[str, list[np.ndarray]]:
    """Print `mod` and return the script with its tensor constants (in index order).

    Remembered for the last `KEEP_SCRIPTS` module objects: TVM's IR is immutable, so the
    same object always prints the same script (the entry holds the object, so its identity
    cannot be taken by another while remembered). A module `parse_script` made is written
    as the text it was parsed from.

    The printer numbers the constants `metadata["ir.GenericConst"][i]` in its own order,
    which `_constants_in_print_order` restates; the script is parsed back with them to
    check that each use site gets its own constant. The whole module need not survive
    printing and parsing structurally: TVM 0.27 prints a block iter var's domain
    `[v, v + e)` as `(v, v + e)` and parses it back with extent `v + e - v` (measured on
    LegalizeOps of adaptive_avg_pool2d with 8 -> 5 columns), which computes the same values
    but is not structurally equal; a module without constants is written out as printed
    either way."""
    for i, (known, script, arrays) in enumerate(_written):
        if known.same_as(mod):
            _written.append(_written.pop(i))
            return script, list(arrays)
    script, arrays = _module_to_script(mod)
    _remember(mod, script, arrays)
    return script, list(arrays)


def _remember(mod: IRModule, script: str, arrays: list[np.ndarray]) -> None:
    """Let `module_to_script(mod)` answer `script` and `arrays` (a script that parses to `mod`
    with `arrays` as its tensor constants) while `mod` is among the last remembered."""
    for a in arrays:        # shared by every caller from now on
        a.setflags(write=False)
    _written.append((mod, script, arrays))
    del _written[:max(len(_written) - KEEP_SCRIPTS, 0)]


def _without_unparsable_ty_args(script: str) -> str:
    """`script` with the `ty_args=...` of each `R.builtin.alloc_tensor(...)` call removed.

    TVM 0.27 prints CallTIRRewrite's allocations as `R.builtin.alloc_tensor(shape, dtype, 0,
    R.str("global"), ty_args=(R.Tensor(...),))` but its parser rejects that keyword
    ("alloc_tensor() got an unexpected keyword argument 'ty_args'"); the type it gives is
    the one the parser infers from the shape and dtype (docs/findings.md)."""
    head, keyword = "R.builtin.alloc_tensor(", ", ty_args="
    out, pos = [], 0
    while (start := script.find(head, pos)) >= 0:
        depth, i = 0, start + len(head) - 1
        cut = None
        while i < len(script):
            c = script[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    break
            elif c == '"':
                i = script.index('"', i + 1)       # the strings here hold no escaped quotes
            elif depth == 1 and script.startswith(keyword, i):
                cut = i
            i += 1
        out.append(script[pos:cut if cut is not None else i])
        pos = i
    out.append(script[pos:])
    return "".join(out)


def _module_to_script(mod: IRModule) -> tuple[str, list[np.ndarray]]:
    """`module_to_script` without the memo."""
    script = _without_unparsable_ty_args(mod.script())
    consts = _constants_in_print_order(mod, script) if _METADATA_RE.search(script) else []
    arrays = [c.value.numpy() for c in consts]
    if arrays:
        back = tvm.script.from_source(script, extra_vars=_script_env(consts))
        if not tvm_ffi.structural_equal(back, mod):
            # each use site got its own constant back: the walk meets the very same
            # objects in the same order in the parsed module as in `mod`
            parsed, original = _constants_visited(back, script), _constants_visited(mod, script)
            if len(parsed) != len(original) or not all(a.same_as(b) for a, b in zip(parsed, original)):
                raise InputError("cannot save the module's tensor constants: the printed order "
                                 "could not be recovered")
    return script, arrays


def save_module(mod: IRModule, path: str | os.PathLike) -> Path:
    """Write `mod` as TVMScript to `path`, tensor constants to `consts_path(path)`."""
    p = Path(path)
    script, arrays = module_to_script(mod)
    p.write_text(script)
    cp = consts_path(p)
    if arrays:
        npz.savez(cp, **{f"c{i}": a for i, a in enumerate(arrays)})
    elif cp.exists():
        cp.unlink()
    return p


def structural_hash(a: Any) -> int:
    return int(tvm_ffi.structural_hash(a))


def structural_equal(a: Any, b: Any) -> bool:
    return bool(tvm_ffi.structural_equal(a, b))


def is_well_formed(mod: IRModule) -> bool:
    return bool(relax.analysis.check_well_formed(mod))


def ill_formed(mod: IRModule) -> str | None:
    """Why TVM's well-formedness check rejects `mod` (its last line), or None if it passes."""
    if is_well_formed(mod):
        return None
    try:
        relax.analysis.well_formed(mod)
    except Exception as err:   # the checker raises with what it found
        return tvm_message(err)
    return "TVM's well-formedness check fails"


def relax_pass(name: str, *args: Any, **kwargs: Any) -> Any:
    """`relax.transform.NAME(*args, **kwargs)`."""
    factory = getattr(relax.transform, name, None)
    if factory is None:
        raise InputError(f"TVM has no pass relax.transform.{name}")
    return factory(*args, **kwargs)


def pipeline(name: str) -> Any:
    return relax.get_pipeline(name)


def sequential(passes: Sequence[Any]) -> Any:
    return tvm.transform.Sequential(list(passes))


def apply(pass_obj: Any, mod: IRModule) -> IRModule:
    """Run a TVM pass on a module. Passes that need a target (sort lowering) get llvm."""
    with tvm.target.Target("llvm"):
        with tvm.transform.PassContext(opt_level=3):
            return pass_obj(mod)


def _tensor_arg(a: Any) -> bool:
    return isinstance(a, (tvm.ir.Var, tvm.ir.GenericConst)) and isinstance(a.ty, relax.TensorType)


def _scalar_const(a: Any) -> bool:
    """A 0-d tensor constant: LegalizeOps folds these into the PrimFunc as literals where the
    operator allows (`_try_convert_to_scalar_const`: binary operators, full, astype, ...)."""
    return isinstance(a, tvm.ir.GenericConst) and isinstance(a.ty, relax.TensorType) \
        and a.ty.ndim == 0


# arguments that compute a value: a single-operator module cannot keep them as they are
_DYNAMIC = (tvm.ir.Var, tvm.ir.Call, tvm.ir.TupleGetItem, relax.If, relax.Function, tvm.ir.GlobalVar)


def _static_arg(a: Any) -> bool:
    """An argument that is no tensor and computes nothing: a prim value, shape, string or
    dtype, or a tuple of those (strided_slice's `(1,)`: a Tuple of IntImm). It is part of
    the operator's attributes and stays as it is in a single-operator module."""
    if isinstance(a, tvm.ir.Tuple):
        return all(_static_arg(f) for f in a.fields)
    return not _tensor_arg(a) and not isinstance(a, _DYNAMIC)


def _single_op_module(call: Any, keep_scalar_consts: bool = False) -> IRModule | None:
    """`main(x0, x1, ...) = call` with the call's tensor arguments (variables or constants,
    alone or in a tuple) made parameters, in order; other arguments (prim values, shapes,
    strings, dtypes) kept. With `keep_scalar_consts`, 0-d constants stay constants, as in the
    graph. None when an argument is anything else (a nested call)."""
    params: list[Any] = []

    def param(a: Any) -> Any:
        p = relax.Var(f"x{len(params)}", a.ty)
        params.append(p)
        return p

    args = []
    for a in call.args:
        if keep_scalar_consts and _scalar_const(a):
            args.append(a)
        elif _tensor_arg(a):
            args.append(param(a))
        elif isinstance(a, tvm.ir.Tuple) and all(_tensor_arg(f) for f in a.fields):
            args.append(tvm.ir.Tuple([param(f) for f in a.fields]))
        elif _static_arg(a):   # strided_slice's axes/begin/end/strides: tuples of IntImm
            args.append(a)
        elif isinstance(a, (tvm.ir.Tuple, *_DYNAMIC)):   # computed, or a tuple mixing both
            return None
        else:
            args.append(a)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit(tvm.ir.Call(call.op, args, call.attrs, call.ty_args))
            gv = bb.emit_output(out)
        bb.emit_func_output(gv)
    return bb.get()


def single_op_modules(mod: IRModule) -> list[tuple[str, list[IRModule]]]:
    """(operator name, modules) for each distinct call of a Relax operator in `mod`'s Relax
    functions (If branches included): the call alone, on parameters of its arguments' types
    (`_single_op_module`). Structurally equal ones are given once.

    A call with a 0-d constant argument has two modules, to be tried in order: the constant
    kept (LegalizeOps folds it into the PrimFunc, so only this module's legalization has the
    graph's PrimFunc: `less(1.5, x)` becomes `call_tir(less, (x,))` with 1.5 inside), then
    the constant made a parameter (for operators that pass it to the PrimFunc as an argument).
    """
    found: dict[int, tuple[str, list[IRModule]]] = {}

    def visit(e: Any) -> None:
        variants = _variants(e)
        if variants is not None:
            found.setdefault(int(tvm_ffi.structural_hash(variants[0])), (e.op.name, variants))

    for _, fn in mod.functions.items():
        if isinstance(fn, relax.Function):
            relax.analysis.post_order_visit(fn, visit)
    return list(found.values())


def _variants(e: Any) -> list[IRModule] | None:
    """The single-operator modules of an operator call `e`, in the order they are tried
    (`single_op_modules`), or None for anything else."""
    if not (isinstance(e, tvm.ir.Call) and isinstance(e.op, tvm.ir.Op)
            and not e.op.name.startswith("relax.call_")):
        return None
    single = _single_op_module(e)
    if single is None:
        return None
    variants = [single]
    if any(_scalar_const(a) for a in e.args):
        kept = _single_op_module(e, keep_scalar_consts=True)
        if kept is not None:
            variants.insert(0, kept)
    return variants


class CallSite(NamedTuple):
    """An operator call in a public Relax function's own bindings (`tvtv.lift`): the
    function's name, the structural hash of the call's first single-operator module, and for
    each of that module's parameters the name of the function parameter passed there
    (`params`, None for a computed value or a constant) and the name of the variable passed
    there, parameter or binding (`vars`, None for a constant)."""

    function: str
    module_hash: int
    params: list[str | None]
    vars: list[str | None]


def operator_call_sites(mod: IRModule) -> list[CallSite]:
    """Every operator call with a single-operator module in the public Relax functions' own
    bindings (`CallSite`), in binding order."""
    sites: list[CallSite] = []
    for gv, fn in mod.functions.items():
        if not isinstance(fn, relax.Function) or fn.attrs is None \
                or "global_symbol" not in fn.attrs:
            continue
        def name_of(a: Any, params: Any = fn.params) -> str | None:
            return next((p.name for p in params if a.same_as(p)), None)

        def var_of(a: Any) -> str | None:
            return a.name if isinstance(a, tvm.ir.Var) else None

        for block in fn.body.blocks:
            for binding in block.bindings:
                e = binding.value
                variants = _variants(e)
                if variants is None:
                    continue
                keep = any(_scalar_const(a) for a in e.args) and len(variants) > 1
                slots: list[Any] = []
                for a in e.args:
                    if keep and _scalar_const(a):
                        continue
                    if _tensor_arg(a):
                        slots.append(a)
                    elif isinstance(a, tvm.ir.Tuple) and all(_tensor_arg(f) for f in a.fields):
                        slots.extend(a.fields)
                sites.append(CallSite(gv.name_hint, int(tvm_ffi.structural_hash(variants[0])),
                                      [name_of(a) for a in slots], [var_of(a) for a in slots]))
    return sites


def parameter_call_sites(mod: IRModule) -> list[tuple[str, int, list[str | None]]]:
    """(function name, structural hash of the call's first single-operator module, and for
    each of that module's parameters the name of the function parameter passed there, or
    None) for each operator call in a public Relax function's own bindings that takes one of
    the function's parameters as an argument (`tvtv.lift`)."""
    return [(s.function, s.module_hash, s.params) for s in operator_call_sites(mod) if any(s.params)]


def is_pass(obj: Any) -> bool:
    return isinstance(obj, tvm.transform.Pass)


def pass_name(obj: Any) -> str:
    return str(obj.info.name)


def build_vm(mod: IRModule) -> Any:
    """Build `mod` for llvm; the VM to run its functions."""
    return vm_of(build_executable(mod))


def has_local_functions(mod: IRModule) -> bool:
    """Whether a Relax function of `mod` defines a function inside its body (the typed
    generator's `f0 = R.function ...` in a branch)."""
    found = False

    def visit(node: Any) -> None:
        nonlocal found
        found = found or isinstance(node, relax.Function)
    for func in mod.functions.values():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func.body, visit)
    return found


def build_executable(mod: IRModule) -> Any:
    """`mod` built for llvm (`relax.build`), to be run by `vm_of`.

    relax.build cannot build a local function ("VMShapeLower do not work for local functions,
    make sure to run it after LambdaLift", TVM 0.27), so a module with one is lambda-lifted
    first: LambdaLift moves each local function to a private global one and changes no
    value (it is one of the passes tvtv validates; on a module without local functions it
    leaves the structural hash unchanged, measured on typed graphs)."""
    if has_local_functions(mod):
        mod = relax.transform.LambdaLift()(mod)
    return relax.build(mod, target="llvm")


def vm_of(executable: Any) -> Any:
    """A new VM on the CPU for a built executable."""
    return relax.VirtualMachine(executable, tvm.cpu())


def run_built(vm: Any, func: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run `func` on the VM; the outputs flattened into a list."""
    args = [tvm.runtime.tensor(np.array(a, order="C", copy=True), tvm.cpu()) for a in inputs]
    out = vm[func](*args)
    flat: list[np.ndarray] = []

    def walk(o: Any) -> None:
        if hasattr(o, "numpy"):
            flat.append(o.numpy())
        else:
            for x in o:
                walk(x)

    walk(out)
    return flat


# tvm.tirx builders whose names differ from the IEEE model's function names
_TIRX_NAMES = {"pow": "power"}


@functools.lru_cache(maxsize=None)
def _cpu_function(fname: str, dtype: str, arity: int) -> Any:
    """The TIR intrinsic `fname` (the IEEE model's name: exp, erf, pow, ...) over vectors
    of `dtype`, compiled for llvm (one PrimFunc `main`), or None when TVM has no such
    intrinsic or cannot compile it (float16 erf or atan: LLVM has no such intrinsic)."""
    from tvm import te

    build = getattr(tvm.tirx, _TIRX_NAMES.get(fname, fname), None)
    if build is None:
        return None
    n = tvm.tirx.Var("n", "int64")
    xs = [te.placeholder((n,), dtype, f"a{k}") for k in range(arity)]
    try:
        out = te.compute((n,), lambda i: build(*(x[i] for x in xs)), "out")
        return tvm.compile(te.create_prim_func([*xs, out]), target="llvm")["main"]
    except Exception:   # TVM's InternalError "unknown intrinsic", or any other refusal
        return None


def cpu_function_values(fname: str, dtype: str, args: np.ndarray) -> np.ndarray | None:
    """The TIR intrinsic `fname` applied to each row of `args` (shape (k, arity)), as TVM's
    CPU code computes it in `dtype` (LLVM, the C library it links): the values the
    abstraction's uninterpreted exp, erf, tanh, ... take in a run. None when TVM cannot
    compile the function for `dtype` or does not know it."""
    cols = np.asarray(args, dtype=dtype).reshape(len(args), -1)
    fn = _cpu_function(fname, dtype, cols.shape[1])
    if fn is None:
        return None
    res = tvm.runtime.empty((len(cols),), dtype, tvm.cpu())
    fn(*(tvm.runtime.tensor(np.ascontiguousarray(cols[:, k])) for k in range(cols.shape[1])), res)
    return res.numpy()


def run_vm(mod: IRModule, func: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Build `mod` for llvm and run `func` on the VM; the outputs flattened into a list."""
    return run_built(build_vm(mod), func, inputs)


def fuse_ops_by_pattern() -> Any:
    """FuseOpsByPattern with tvtv's default patterns: matmul/conv2d with a bias add and an
    optional activation, the epilogues TVM's BYOC backends fuse."""
    from tvm.relax.dpl import is_op, wildcard

    def chain(anchor: str, *epilogue: str) -> Any:
        p = is_op(anchor)(wildcard(), wildcard())
        for op in epilogue:
            p = is_op(op)(p, wildcard()) if op in ("relax.add", "relax.multiply") else is_op(op)(p)
        return p

    patterns = [
        ("tvtv.matmul_add_relu", chain("relax.matmul", "relax.add", "relax.nn.relu")),
        ("tvtv.matmul_add", chain("relax.matmul", "relax.add")),
        ("tvtv.conv2d_add_relu", chain("relax.nn.conv2d", "relax.add", "relax.nn.relu")),
        ("tvtv.conv2d_add", chain("relax.nn.conv2d", "relax.add")),
        ("tvtv.conv2d_relu", chain("relax.nn.conv2d", "relax.nn.relu")),
        ("tvtv.matmul", chain("relax.matmul")),
    ]
    return relax.transform.FuseOpsByPattern(patterns, bind_constants=False, annotate_codegen=False)


def run_vm_isolated(mods: dict[str, IRModule], func: str, input_sets: Sequence[Sequence[np.ndarray]],
                    timeout: float = 120.0) -> dict[str, list[tuple[str, Any]]]:
    """Run `func` of each module on each input set on the VM, in a child process (the server
    this process keeps, `tvtv.ir.vm_server`).

    Returns name -> one entry per input set: ("ok", outputs) | ("error", message) |
    ("crash", message)."""
    import tempfile

    from tvtv.ir import vm_server

    with tempfile.TemporaryDirectory(prefix="tvtv-vm-") as tmp:
        folder = Path(tmp)
        npz.savez(folder / "inputs.npz", **{f"s{j}_a{i}": np.asarray(a) for j, inputs in enumerate(input_sets)
                                          for i, a in enumerate(inputs)})
        for name, mod in mods.items():
            try:
                save_module(mod, folder / f"{name}.py")
            except InputError as err:
                raise InputError(f"{name}: {err}") from None
        crash = vm_server.server().run(folder, func, len(input_sets), list(mods), timeout)
        results: dict[str, list[tuple[str, Any]]] = {}
        for name in mods:
            entries: list[tuple[str, Any]] = []
            for j in range(len(input_sets)):
                out, err = folder / f"{name}.s{j}.out.npz", folder / f"{name}.s{j}.error.txt"
                if out.exists():
                    try:
                        data = npz.load(out)
                        entries.append(("ok", [data[f"o{i}"] for i in range(len(data))]))
                    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as bad:
                        entries.append(("crash", crash or f"unreadable result: {bad}"))
                elif err.exists():
                    entries.append(("error", err.read_text()))
                else:
                    entries.append(("crash", crash or "no result"))
            results[name] = entries
        return results
