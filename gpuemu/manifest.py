"""Launch manifests: a JSON file that says how to run one kernel.

The format is the one of ../shared/conformance/README.md, so the H100
conformance cases and our programs/ load the same way:

    {"kernel": "vecadd", "grid": [16, 1, 1], "block": [256, 1, 1],
     "dynamic_shared_bytes": 0,
     "args": [{"kind": "buffer", "name": "a", "dtype": "float32",
               "count": 4096, "init": "random:1", "output": false},
              {"kind": "scalar", "name": "n", "dtype": "int32", "value": 4096}],
     "constants": [{"symbol": "coeff", "dtype": "float32", "count": 16,
                    "init": "arange"}],
     "source": "vecadd.cu",
     "expect": "c = a + b"}

Buffer inits: ``zeros``, ``arange`` (0, 1, 2, ... cast to the dtype),
``const:V``, ``random:SEED`` (``numpy.random.default_rng(SEED)``, then
``rng.random(count)`` cast for float dtypes, ``rng.integers(0, 1000, count)``
cast for integer dtypes) -- the rules the GPU measurements were made with.

Expectations, checked by `check`: ``expect`` (or the conformance files'
``reference``) is Python over numpy run with the arguments' initial values
bound to their names and ``np`` to numpy; each statement assigns an output
name.  ``expect_file`` (or ``outputs_file``) is an ``.npz`` keyed by output
name, relative to the manifest.  Integers must match exactly, floats to
``rtol`` (default 1e-6, the conformance rule) and ``atol`` (default 0).

The fields each level may hold are data (MANIFEST_FIELDS, ARG_FIELDS,
CONSTANT_FIELDS, LAUNCH_FIELDS); any other field is a ManifestError naming the
file, the field's path (``args[1].dtyp``) and the closest valid name.
"""
from __future__ import annotations

import ast
import difflib
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from isa import ir

from .api import LAUNCH_OPTIONS
from .numpy_arguments import check_dtype

INIT_KINDS = ("zeros", "arange", "const:V", "random:SEED")


class ManifestError(ValueError):
    """A manifest or argument spec that cannot be used; the message says which field."""


@dataclass
class ArgSpec:
    """One kernel argument (or one __constant__ fill when `symbol` is set)."""
    name: str
    kind: str                      # 'buffer' | 'scalar'
    dtype: np.dtype
    count: int = 0
    init: str = "zeros"
    output: bool = False
    value: Any = None
    symbol: Optional[str] = None

    def build(self, base: Optional[Path] = None) -> Any:
        """The initial value: a numpy array for a buffer, a numpy scalar for a scalar."""
        if self.kind == "scalar":
            return scalar_value(self.dtype, self.value, self.name)
        return init_array(self.dtype, self.count, self.init, base=base, what=self.name)


@dataclass
class Manifest:
    """A parsed manifest. `path` is None for one built in memory (the CLI)."""
    kernel: str
    grid: tuple
    block: tuple
    args: list
    dynamic_shared_bytes: int = 0
    constants: list = field(default_factory=list)
    source: Optional[Path] = None
    expect: Optional[str] = None
    expect_file: Optional[Path] = None
    rtol: float = 1e-6
    atol: float = 0.0
    path: Optional[Path] = None
    purpose: str = ""
    # counters a real GPU reported for this launch (the conformance cases'
    # "h100" block), shown beside the emulator's by the CLI
    measured: dict = field(default_factory=dict)
    # "launch": keyword options of the kernel call (budget, bank_mode, seed, l1)
    launch_options: dict = field(default_factory=dict)
    # "expect_finding": the kind of finding the launch must stop with (a demo of
    # a bug, e.g. "timeout" for a deadlock the watchdog ends) instead of outputs
    expect_finding: Optional[str] = None
    # "check_finding": the kind of finding check mode reports on a bug demo
    # whose outputs still come out right (check mode's own test reads it)
    check_finding: Optional[str] = None

    @property
    def outputs(self) -> list:
        return [a.name for a in self.args if a.kind == "buffer" and a.output]

    @property
    def has_expectation(self) -> bool:
        return self.expect is not None or self.expect_file is not None


@dataclass
class RunResult:
    """What `run` gives back: initial values, outputs after the launch, the Launch."""
    manifest: Manifest
    inputs: dict
    outputs: dict
    launch: Any


# --------------------------------------------------------------------------- inits

def parse_dtype(name: Any, what: str = "dtype") -> np.dtype:
    """A numpy dtype from its name ('float32', 'int16', ...)."""
    try:
        dt = np.dtype(name)
    except (TypeError, ValueError):
        raise ManifestError(f"{what}: unknown dtype {name!r}") from None
    if dt.kind not in "biuf":
        raise ManifestError(f"{what}: dtype {name!r} is not a bool, integer or float type")
    return dt


def _const_value(dtype: np.dtype, text: str, what: str) -> Any:
    try:
        v = int(text, 0) if dtype.kind in "biu" else float(text)
    except ValueError:
        try:
            v = float(text)
        except ValueError:
            raise ManifestError(f"{what}: const value {text!r} is not a number") from None
    return v


def init_array(dtype: Any, count: int, init: str, base: Optional[Path] = None,
               what: str = "buffer") -> np.ndarray:
    """Build a buffer's initial contents by the conformance rules.

    zeros | arange | const:V | random:SEED (default_rng(SEED); random() for
    floats, integers(0, 1000) for integers; then cast) | file:PATH.npy."""
    try:
        return _init_array(dtype, count, init, base, what)
    except (MemoryError, ValueError) as e:
        if isinstance(e, ManifestError):
            raise
        raise ManifestError(f"{what}: cannot build {count} values: {e or type(e).__name__}") from None


def _init_array(dtype: Any, count: int, init: str, base: Optional[Path], what: str) -> np.ndarray:
    dt = parse_dtype(dtype, what)
    try:
        count = int(count)
    except (TypeError, ValueError):
        raise ManifestError(f"{what}: count {count!r} is not an integer") from None
    if count < 0:
        raise ManifestError(f"{what}: count {count} is negative")
    init = str(init if init is not None else "zeros").strip()
    if init == "zeros":
        return np.zeros(count, dtype=dt)
    if init == "arange":
        return np.arange(count).astype(dt)
    if init.startswith("const:"):
        return np.full(count, _const_value(dt, init[6:], what)).astype(dt)
    if init.startswith("random:"):
        try:
            seed = int(init[7:])
        except ValueError:
            raise ManifestError(f"{what}: random seed {init[7:]!r} is not an integer") from None
        rng = np.random.default_rng(seed)
        if dt.kind == "f":
            return rng.random(count).astype(dt)
        return rng.integers(0, 1000, count).astype(dt)
    if init.startswith("file:"):
        p = Path(init[5:])
        if base is not None and not p.is_absolute():
            p = base / p
        try:
            data = np.load(p)
        except (OSError, ValueError) as e:
            raise ManifestError(f"{what}: cannot load {p}: {e}") from None
        data = np.asarray(data).reshape(-1).astype(dt)
        if data.size != count:
            raise ManifestError(f"{what}: {p} holds {data.size} values, count is {count}")
        return data
    raise ManifestError(f"{what}: unknown init {init!r} (use one of {', '.join(INIT_KINDS)}, file:PATH.npy)")


def scalar_value(dtype: Any, value: Any, what: str = "scalar") -> Any:
    """A numpy scalar of the given dtype (an int value must fit the type)."""
    dt = parse_dtype(dtype, what)
    if value is None:
        raise ManifestError(f"{what}: a scalar needs a 'value'")
    if isinstance(value, str):
        value = _const_value(dt, value, what)
    if dt.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise ManifestError(f"{what}: value {value} is not an integer for {dt.name}")
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise ManifestError(f"{what}: value {value} does not fit {dt.name} "
                                f"[{info.min}, {info.max}]")
        return dt.type(int(value))
    return dt.type(value)


# --------------------------------------------------------------------------- loading

def _dim3(v: Any, what: str) -> tuple:
    if isinstance(v, int):
        v = [v]
    if not isinstance(v, (list, tuple)) or not 1 <= len(v) <= 3 or \
            not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise ManifestError(f"{what}: expected 1 to 3 integers, got {v!r}")
    return tuple(v) + (1,) * (3 - len(v))


# Every field a manifest may hold, at each level, with the JSON types it may
# take (NoneType: it may be null) and the words a diagnostic uses for them;
# values are checked further where they are read. The loader refuses any other
# field, naming the closest valid one: a typo ("gird", "dtyp") or a field at
# the wrong level would otherwise be ignored and the launch run without it.
_INT = ((int,), "an integer")
_NUMBER = ((int, float), "a number")
_TEXT = ((str,), "a string")
_BOOL = ((bool,), "true or false")
_NAME = ((str, type(None)), "a file name (a string)")
_DIM3 = ((int, list), "1 to 3 integers")
_EXPECT = ((str, list, type(None)), "a string or a list of strings")
_FINDING = ((str, type(None)), "a finding kind (a string)")
MANIFEST_FIELDS = {
    "kernel": _TEXT,                       # the __global__ function to launch
    "grid": _DIM3, "block": _DIM3,
    "dynamic_shared_bytes": _INT,
    "args": ((list,), "a list of argument objects"),            # ARG_FIELDS
    "constants": ((list, type(None)), "a list of constant objects"),   # CONSTANT_FIELDS
    "source": _NAME,                       # default: the .cu beside the manifest
    "expect": _EXPECT, "reference": _EXPECT,                    # reference: the conformance name
    "expect_file": _NAME, "outputs_file": _NAME,                # outputs_file: likewise
    "rtol": _NUMBER, "atol": _NUMBER,
    "purpose": _TEXT,                      # what the launch shows, for the reader
    "note": _TEXT,                         # a remark on a case (benchmarks/fidelity.py shows it)
    "h100": ((dict, type(None)), "an object of counter: value"),   # open: the GPU's measurements
    "launch": ((dict, type(None)), "an object of launch options"),  # LAUNCH_FIELDS
    "expect_finding": _FINDING,            # the finding a bug demo stops with
    "check_finding": _FINDING,             # the finding check mode reports on a demo that ends
}
_KIND = ((str,), "'buffer' or 'scalar'")
_VALUE = ((int, float, str, bool), "a number or true/false")
# an argument's fields, by its kind (a missing kind is 'buffer')
ARG_FIELDS = {
    "buffer": {"kind": _KIND, "name": _TEXT, "dtype": _TEXT, "count": _INT, "init": _TEXT,
               "output": _BOOL},
    "scalar": {"kind": _KIND, "name": _TEXT, "dtype": _TEXT, "value": _VALUE},
}
# a constant's: an argument's, less 'output', plus the symbol it fills (its name:
# 'name' is the other spelling, used where 'symbol' is missing)
CONSTANT_FIELDS = {
    kind: {"symbol": _TEXT, **{k: v for k, v in fields.items() if k != "output"}}
    for kind, fields in ARG_FIELDS.items()
}
# kernel-call options a "launch" block may not set, and why: `run` passes the
# first four from the manifest's own fields; the last take Python objects
_LAUNCH_NOT_IN_JSON = {
    "grid": "the manifest's 'grid' gives it", "block": "the manifest's 'block' gives it",
    "args": "the manifest's 'args' give them",
    "shared_mem": "the manifest's 'dynamic_shared_bytes' gives it",
    "stream": "it takes a gpuemu.Stream, which JSON cannot hold",
    "progress": "it takes a Python callable, which JSON cannot hold",
}
# the keyword options of the kernel call a "launch" block may set (their
# values are the launch's to check)
LAUNCH_FIELDS = tuple(sorted(({"budget", "stats", "scheduler", "mode", "block_scheduler",
                               "carveout"} | LAUNCH_OPTIONS) - set(_LAUNCH_NOT_IN_JSON)))
# fields no level has because the run chooses them, and why
_CHOSEN_BY_THE_RUN = {
    "arch": "the GPU preset is chosen when the manifest runs (gpuemu run --arch NAME, "
            "gpuemu.manifest.run(path, arch=NAME)), so one manifest runs on every preset",
}
# the conformance files' names of two fields: giving both would leave one unread
_ALIASES = {"reference": "expect", "outputs_file": "expect_file"}
# each level's fields under the words a diagnostic uses for it
_LEVELS = {
    "the manifest's top level": tuple(MANIFEST_FIELDS),
    "a buffer argument": tuple(ARG_FIELDS["buffer"]),
    "a scalar argument": tuple(ARG_FIELDS["scalar"]),
    "a buffer constant": tuple(CONSTANT_FIELDS["buffer"]),
    "a scalar constant": tuple(CONSTANT_FIELDS["scalar"]),
    "'launch'": LAUNCH_FIELDS,
}


def unknown_field(d: dict, level: str, levels: dict) -> Optional[str]:
    """None when every key of `d` is a field of `level` (a key of `levels`,
    which maps each level to its fields); else the first other key, "unknown
    field of LEVEL", where it belongs if another level has it or else the
    closest valid name, and the level's fields. (The sweep spec uses it too.)"""
    allowed = levels[level]
    for key in d:
        if key in allowed:
            continue
        shown = key if len(key) <= 40 else key[:37] + "..."
        msg = f"{shown}: unknown field of {level}"
        elsewhere = [lv for lv, fields in levels.items() if key in fields and lv != level]
        close = difflib.get_close_matches(key, allowed, n=1)
        if elsewhere:
            msg += f"; '{key}' is a field of {', '.join(elsewhere)}"
        elif close:
            msg += f"; did you mean '{close[0]}'?"
        return f"{msg} (the fields of {level}: {', '.join(allowed)})"
    return None


def _refuse_unknown(d: dict, level: str, where: str, path: str) -> None:
    """A ManifestError for the first key of `d` that `level` has no field of."""
    for key in d:
        if key in _CHOSEN_BY_THE_RUN:
            raise ManifestError(f"{where}: {path}{key}: a manifest does not set it: "
                                f"{_CHOSEN_BY_THE_RUN[key]}")
    msg = unknown_field(d, level, _LEVELS)
    if msg:
        raise ManifestError(f"{where}: {path}{msg}")


def _check_types(d: dict, table: dict, where: str) -> None:
    """A ManifestError naming the first field whose JSON type the table does not allow."""
    for key, (types, wanted) in table.items():
        v = d.get(key)
        if key in d and (not isinstance(v, types) or (isinstance(v, bool) and bool not in types)):
            text = json.dumps(v, default=repr)
            text = text if len(text) <= 40 else text[:37] + "..."
            raise ManifestError(f"{where}: '{key}' must be {wanted}, got {text}")


def _arg(d: Any, i: int, where: str, constant: bool = False) -> ArgSpec:
    path = f"constants[{i}]" if constant else f"args[{i}]"
    if not isinstance(d, dict):
        raise ManifestError(f"{where}: {path}: expected an object, got {d!r}")
    kind = d.get("kind", "buffer")
    if kind not in ("buffer", "scalar"):
        raise ManifestError(f"{where}: {path}: kind {kind!r} is not 'buffer' or 'scalar'")
    _refuse_unknown(d, f"a {kind} {'constant' if constant else 'argument'}", where, f"{path}.")
    _check_types(d, (CONSTANT_FIELDS if constant else ARG_FIELDS)[kind], f"{where}: {path}")
    if constant and d.get("name", d.get("symbol")) != d.get("symbol", d.get("name")):
        raise ManifestError(f"{where}: {path}: 'name' {d['name']!r} and 'symbol' "
                            f"{d['symbol']!r} differ: a constant is named by its symbol; give one")
    name = d.get("symbol" if constant else "name", d.get("name", f"arg{i}"))
    where = f"{where}: {path} ({name})"
    if "dtype" not in d:
        raise ManifestError(f"{where}: missing 'dtype'")
    dt = parse_dtype(d["dtype"], where)
    if kind == "scalar":
        if "value" not in d:
            raise ManifestError(f"{where}: a scalar needs a 'value'")
        return ArgSpec(name=name, kind=kind, dtype=dt, value=d["value"],
                       symbol=d.get("symbol") if constant else None)
    if "count" not in d:
        raise ManifestError(f"{where}: a buffer needs a 'count'")
    return ArgSpec(name=name, kind=kind, dtype=dt, count=d["count"],
                   init=d.get("init", "zeros"), output=bool(d.get("output", False)),
                   symbol=d.get("symbol") if constant else None)


def _expect_text(v: Any, what: str) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, list) and all(isinstance(s, str) for s in v):
        return "\n".join(v)
    if isinstance(v, str):
        return v
    raise ManifestError(f"{what}: expected a string or a list of strings")


def from_dict(d: dict, path: Optional[Path] = None) -> Manifest:
    """Build a Manifest from parsed JSON; `path` anchors relative file names."""
    where = str(path) if path else "manifest"
    if not isinstance(d, dict):
        raise ManifestError(f"{where}: the top level must be a JSON object")
    for key in ("kernel", "grid", "block"):
        if key not in d:
            raise ManifestError(f"{where}: missing '{key}'")
    _refuse_unknown(d, "the manifest's top level", where, "")
    _check_types(d, MANIFEST_FIELDS, where)
    for alias, name in _ALIASES.items():
        if alias in d and name in d:
            raise ManifestError(f"{where}: '{name}' and '{alias}' are one field ('{alias}' is "
                                f"the conformance files' name for it): give one")
    for key, why in _LAUNCH_NOT_IN_JSON.items():
        if key in (d.get("launch") or {}):
            raise ManifestError(f"{where}: 'launch' may not set '{key}': {why}")
    _refuse_unknown(d.get("launch") or {}, "'launch'", where, "launch.")
    base = path.parent if path else Path(".")
    args = d.get("args", [])
    specs = [_arg(a, i, where) for i, a in enumerate(args)]
    consts = [_arg(a, i, where, constant=True) for i, a in enumerate(d.get("constants") or [])]
    for c in consts:
        c.symbol = c.symbol or c.name
    source = d.get("source")
    if source is not None:
        source = base / source
    elif path is not None:
        source = path.with_suffix(".cu")
    expect_file = d.get("expect_file") or d.get("outputs_file")
    for key in ("rtol", "atol"):
        if key in d and not (math.isfinite(d[key]) and d[key] >= 0):
            raise ManifestError(f"{where}: '{key}' must be a finite number of at least 0 (a "
                                f"negative or NaN tolerance fails every comparison), got {d[key]}")
    shared = d.get("dynamic_shared_bytes", 0)
    if shared < 0:
        raise ManifestError(f"{where}: dynamic_shared_bytes must be a non-negative integer")
    m = Manifest(
        kernel=str(d["kernel"]), grid=_dim3(d["grid"], f"{where}: grid"),
        block=_dim3(d["block"], f"{where}: block"), args=specs,
        dynamic_shared_bytes=shared, constants=consts,
        source=source,
        expect=_expect_text(d.get("expect", d.get("reference")), f"{where}: expect"),
        expect_file=(base / expect_file) if expect_file else None,
        rtol=float(d.get("rtol", 1e-6)), atol=float(d.get("atol", 0.0)),
        path=path, purpose=str(d.get("purpose", "")),
        measured={k: v for k, v in (d.get("h100") or {}).items() if isinstance(v, (int, float))},
        launch_options=dict(d.get("launch") or {}), expect_finding=d.get("expect_finding"),
        check_finding=d.get("check_finding"))
    for key in ("expect_finding", "check_finding"):
        _check_finding_kind(getattr(m, key), f"{where}: {key}")
    given = [k for k in ("expect", "reference", "expect_file", "outputs_file")
             if d.get(k) is not None]
    if m.expect_finding is not None and given:
        raise ManifestError(f"{where}: 'expect_finding' and '{given[0]}': a launch expected to "
                            f"stop with a finding has no outputs to check; give one")
    # each argument and constant is bound to its name in `expect`, and a
    # constant's symbol (its name) filled from its own value: one of each name
    for what, names in (("argument names", [a.name for a in specs]),
                        ("argument and constant names", [a.name for a in specs + consts])):
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ManifestError(f"{where}: {what} repeat: {', '.join(sorted(dup))}")
    return m


def read_json(path: Path, what: str = "a manifest") -> Any:
    """A JSON file's value, or a ManifestError naming the file and what is wrong
    (`what` names the kind of file in the message; the sweep spec uses it too)."""
    try:
        text = path.read_bytes().decode("utf-8")     # JSON is UTF-8 (RFC 8259, section 8.1)
    except OSError as e:
        raise ManifestError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ManifestError(f"{path}: not UTF-8 text (byte {e.start}): {what} is "
                            f"JSON in UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise ManifestError(f"{path}: invalid JSON: nested too deeply") from None


def _check_finding_kind(kind: Optional[str], where: str) -> None:
    """A ManifestError for a finding kind no launch reports (a typo would make
    the demo fail for the wrong reason), with the closest kind."""
    from .errors import FINDING_KINDS
    if kind is None or kind in FINDING_KINDS:
        return
    close = difflib.get_close_matches(kind, FINDING_KINDS, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    raise ManifestError(f"{where}: unknown finding kind {kind!r}{hint} "
                        f"(the kinds: {', '.join(FINDING_KINDS)})")


def load(path: str | Path) -> Manifest:
    """Read a manifest file (JSON); a path that is not a str or os.PathLike is a TypeError."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"a manifest is a Manifest or the path of its JSON file (a str or "
                        f"os.PathLike), got {type(path).__name__}")
    path = Path(path)
    return from_dict(read_json(path), path)


# --------------------------------------------------------------------------- running

def build_inputs(m: Manifest) -> dict:
    """Initial values of every argument and constant, by name (fresh arrays)."""
    base = m.path.parent if m.path else None
    values = {a.name: a.build(base) for a in m.args}
    for c in m.constants:
        values.setdefault(c.name, c.build(base))
    return values


def module_for(m: Manifest, arch: str = "sm_90", **options: Any) -> Any:
    """Compile the manifest's source with gpuemu.RawModule."""
    import gpuemu
    if m.source is None:
        raise ManifestError("manifest has neither 'source' nor a path to find NAME.cu beside it")
    if not Path(m.source).is_file():
        raise ManifestError(f"kernel source {m.source} not found")
    return gpuemu.RawModule(path=str(m.source), arch=arch, **options)


def _fill_symbol(mod: Any, symbol: str, value: Any) -> None:
    """Write a __constant__/__device__ symbol, reshaped to the symbol's own shape."""
    try:
        sym = mod.get_global(symbol)
    except KeyError as e:
        raise ManifestError(f"constants: {e.args[0] if e.args else symbol}") from None
    current = sym.get()
    value = np.asarray(value)
    if value.size != current.size:
        raise ManifestError(f"constant {symbol}: {value.size} values given, the symbol "
                            f"holds {current.size}")
    sym.set(value.astype(current.dtype).reshape(current.shape))


def run(m: Manifest | str | Path, arch: str = "sm_90", module: Any = None,
        **launch_options: Any) -> RunResult:
    """Compile (unless `module` is given), fill constants, launch, copy outputs back.

    Extra keyword arguments go to the kernel call (e.g. a watchdog budget)."""
    import gpuemu
    if not isinstance(m, Manifest):
        m = load(m)
    mod = module if module is not None else module_for(m, arch)
    try:
        fn = mod.get_function(m.kernel)
    except KeyError as e:
        raise ManifestError(f"kernel: {e.args[0] if e.args else m.kernel}") from None
    inputs = build_inputs(m)
    for c in m.constants:
        _fill_symbol(mod, c.symbol, inputs[c.name])
    dev = {}
    call_args = []
    params = fn.meta.params
    for i, a in enumerate(m.args):
        if a.kind == "buffer":
            if i < len(params) and isinstance(params[i][1], ir.PointerType):
                # a device array is passed as its pointer alone: the buffer's declared
                # dtype meets the kernel's pointee here, as a numpy array's does in a launch
                pname, t, _ = params[i]
                check_dtype(inputs[a.name].dtype, t, f"argument {i} ('{pname}', {t})")
            dev[a.name] = gpuemu.asarray(inputs[a.name].copy())
            call_args.append(dev[a.name])
        else:
            call_args.append(inputs[a.name])
    launch = fn(m.grid, m.block, tuple(call_args), shared_mem=m.dynamic_shared_bytes,
                **{**m.launch_options, **launch_options})
    outputs = {name: dev[name].get() for name in m.outputs}
    return RunResult(manifest=m, inputs=inputs, outputs=outputs, launch=launch)


# --------------------------------------------------------------------------- checking

def _assigned_names(tree: ast.AST) -> set:
    """Names a statement list assigns to, whole or in part (``c = ...``,
    ``c[:] = ...``, ``c += ...``, ``c.x = ...``, ``for c in ...``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and \
                isinstance(node.ctx, (ast.Store, ast.Del)):
            base = node.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                out.add(base.id)
    return out


def _changed(before: Any, after: Any) -> bool:
    """Whether an argument's copy no longer equals its initial value."""
    try:
        return not np.array_equal(np.asarray(before), np.asarray(after), equal_nan=True)
    except (TypeError, ValueError):
        return not np.array_equal(np.asarray(before), np.asarray(after))


def expected_outputs(m: Manifest, inputs: dict) -> dict:
    """The expected value of each output the expectation gives.

    `expect` gives an output by assigning it (``c = a + b``) or by changing a
    copy of its initial value in place (``c[:] = a + b``, ``c += 1``,
    ``np.copyto(c, a)``). An expectation that gives no output is a
    ManifestError: it would otherwise check nothing and pass."""
    want: dict = {}
    if m.expect_file is not None:
        try:
            with np.load(m.expect_file) as npz:
                want.update({k: npz[k] for k in npz.files})
        except (OSError, ValueError) as e:
            raise ManifestError(f"expect_file {m.expect_file}: {e}") from None
    if m.expect is not None:
        ns: dict = {"np": np, "numpy": np}
        copies = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
        ns.update(copies)
        try:
            code = compile(m.expect, f"<expect of {m.kernel}>", "exec", ast.PyCF_ONLY_AST)
            assigned = _assigned_names(code)
            exec(compile(code, f"<expect of {m.kernel}>", "exec"), ns)
        except Exception as e:  # the expression is user text: report, do not crash
            raise ManifestError(f"expect: {type(e).__name__}: {e}") from None
        for k in m.outputs:
            if k not in ns:
                continue
            if k in assigned or ns[k] is not copies.get(k) or _changed(inputs.get(k), ns[k]):
                want[k] = np.asarray(ns[k])
    if m.has_expectation and not any(k in want for k in m.outputs):
        given = "expect_file" if m.expect is None else "expect"
        raise ManifestError(f"{given}: gives no output (assign one of: "
                            f"{', '.join(m.outputs) or 'none; mark a buffer output'}), "
                            f"so it would check nothing")
    return want


@dataclass
class Mismatch:
    """One output that differs from its expectation."""
    name: str
    message: str

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float = 1e-6,
            atol: float = 0.0) -> Optional[Mismatch]:
    """None when `got` matches `want` (integers exactly, floats to rtol/atol)."""
    want = np.asarray(want).reshape(-1)
    got = np.asarray(got).reshape(-1)
    if got.size != want.size:
        return Mismatch(name, f"{got.size} values, expected {want.size}")
    if got.dtype.kind == "f" or want.dtype.kind == "f":
        g = got.astype(np.float64)
        w = want.astype(got.dtype).astype(np.float64)
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    else:
        # the expectation is cast to the output's type: it wraps as the GPU's integers do
        bad = got != want.astype(got.dtype)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return Mismatch(name, f"{int(bad.sum())} of {got.size} values differ; first at [{i}]: "
                          f"got {got[i]!r}, expected {want.astype(got.dtype)[i]!r}")


def check(result: RunResult) -> list:
    """Mismatches between a run's outputs and its manifest's expectation ([] = all match)."""
    m = result.manifest
    want = expected_outputs(m, result.inputs)
    out = []
    for name, w in want.items():
        if name not in result.outputs:
            continue
        mm = compare(name, result.outputs[name], w, m.rtol, m.atol)
        if mm:
            out.append(mm)
    return out


def checksum(a: np.ndarray) -> str:
    """A short content checksum (CRC-32 of the bytes, hex) to compare runs."""
    return f"{zlib.crc32(np.ascontiguousarray(a).tobytes()) & 0xffffffff:08x}"


def discover(folder: str | Path) -> Sequence[Path]:
    """Every *.json manifest in a folder, sorted by name."""
    return sorted(Path(folder).glob("*.json"))
