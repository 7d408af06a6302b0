"""The `gpuemu` command line: run a kernel, list the GPUs it can emulate.

    gpuemu run programs/vecadd.json
    gpuemu run k.cu --kernel vecadd --grid 20 --block 256 \\
        --arg float32[5000]=random:1 --arg float32[5000]=random:2 \\
        --arg out:float32[5000] --arg i32:5000
    gpuemu info archs

Bad input (a compile error, a launch the GPU would refuse, a kernel that
faults) prints the diagnostic and exits with status 1, never a traceback.
Exit status: 0 ok, 1 error or an output that does not match its
expectation, 2 bad command line, 3 an internal error of gpuemu.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from . import manifest as mf
from .errors import KernelError
from .machine import MAX_BUDGET
from .machine.block_workers import MAX_WORKERS
from .stats import COUNTERS

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# Short and C spellings accepted wherever a dtype is named on the command line.
DTYPE_ALIASES = {
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f32": "float32", "f64": "float64",
    "char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16",
    "int": "int32", "uint": "uint32", "unsigned": "uint32",
    "longlong": "int64", "ulonglong": "uint64", "float": "float32", "double": "float64",
}

ARG_HELP = """\
argument SPECs (one --arg per kernel parameter, in order):
  [NAME=][out:]TYPE[COUNT][=INIT]   a buffer of COUNT elements in global memory
  [NAME=]TYPE:VALUE                 a scalar passed by value

  TYPE   a numpy dtype (float32, int32, uint8, ...) or a short/C name:
         i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char short int unsigned float double
  INIT   zeros (default) | arange (0, 1, 2, ...) | const:V
         | random:SEED (numpy.random.default_rng(SEED): random() for floats,
           integers(0, 1000) for integers) | file:PATH.npy
  out:   mark the buffer as an output: printed (and saved with --save)
  NAME=  a name for the argument (default argN), used in the report and --expect

  examples:  --arg float32[1024]=random:1   --arg out:float32[1024]
             --arg n=i32:1024               --arg f32:2.5
  --const fills a __constant__ or __device__ symbol before the launch:
             --const coeffs=float32[8]=arange

manifests (FILE.json): kernel, grid, block, dynamic_shared_bytes, args
  ({"kind": "buffer", "name", "dtype", "count", "init", "output"} or
  {"kind": "scalar", "name", "dtype", "value"}), optional constants, source
  (default: the .cu beside the manifest), expect (numpy statements over the
  argument names, e.g. "c = a + b") or expect_file (.npz by output name).
  See programs/*.json and README.md.
"""

_BUFFER_RE = re.compile(
    r"^(?:(?P<name>[A-Za-z_]\w*)=)?(?P<out>out:)?(?P<dtype>[A-Za-z_]\w*)"
    r"\[(?P<count>\d+)\](?:=(?P<init>.+))?$")
_SCALAR_RE = re.compile(r"^(?:(?P<name>[A-Za-z_]\w*)=)?(?P<dtype>[A-Za-z_]\w*):(?P<value>.+)$")


class UsageError(ValueError):
    """A command line that cannot be run; the message says what to fix."""


# --------------------------------------------------------------------------- parsing

def dim3(text: str) -> tuple:
    """'X', 'X,Y' or 'X,Y,Z' (also with 'x') -> a 3-tuple of positive ints."""
    parts = re.split(r"[,x]", text.strip())
    try:
        vals = [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not X[,Y[,Z]] integers") from None
    if not 1 <= len(vals) <= 3:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to 3 dimensions")
    return tuple(vals) + (1,) * (3 - len(vals))


def int_at_least(low: int, high: Optional[int] = None, why: str = "") -> Any:
    """An argparse type: an integer of at least `low` (a count, a size, a seed)
    and, given `high`, at most that (`why` says whose limit it is)."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {v}")
        if high is not None and v > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}{why}, got {v}")
        return v
    return parse


def tolerance(text: str) -> float:
    """An argparse type: a finite number of at least 0 (NaN or a negative
    tolerance would fail every comparison)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, got {text}")
    return v


def dtype_name(text: str) -> str:
    """A dtype as typed on the command line (f32, int, ...) -> its numpy name."""
    return DTYPE_ALIASES.get(text, text)


def parse_arg_spec(text: str, index: int) -> mf.ArgSpec:
    """One --arg SPEC (see ARG_HELP) -> an ArgSpec."""
    m = _BUFFER_RE.match(text.strip())
    if m:
        name = m.group("name") or f"arg{index}"
        try:
            spec = mf.ArgSpec(name=name, kind="buffer",
                              dtype=mf.parse_dtype(dtype_name(m.group("dtype")), name),
                              count=int(m.group("count")), init=m.group("init") or "zeros",
                              output=bool(m.group("out")))
            spec.build(Path("."))            # validate the init now, with a clear message
        except mf.ManifestError as e:
            raise UsageError(f"--arg {text}: {e}") from None
        return spec
    m = _SCALAR_RE.match(text.strip())
    if m:
        name = m.group("name") or f"arg{index}"
        try:
            dt = mf.parse_dtype(dtype_name(m.group("dtype")), name)
            mf.scalar_value(dt, m.group("value"), name)
        except mf.ManifestError as e:
            raise UsageError(f"--arg {text}: {e}") from None
        return mf.ArgSpec(name=name, kind="scalar", dtype=dt, value=m.group("value"))
    raise UsageError(f"--arg {text!r}: not a buffer [NAME=][out:]TYPE[COUNT][=INIT] "
                     f"nor a scalar [NAME=]TYPE:VALUE (see gpuemu run --help)")


def parse_const_spec(text: str) -> mf.ArgSpec:
    """One --const SYMBOL=TYPE[COUNT]=INIT or SYMBOL=TYPE:VALUE."""
    spec = parse_arg_spec(text, 0)
    if not re.match(r"^[A-Za-z_]\w*=", text.strip()):
        raise UsageError(f"--const {text!r}: name the symbol, e.g. coeffs=float32[8]=arange")
    spec.symbol = spec.name
    return spec


def refuse_cu_options(ns: argparse.Namespace) -> None:
    """A usage error for an option only a .cu target uses given with a manifest,
    which sets the launch itself (the option would be ignored)."""
    stray = [o for o in ("kernel", "block", "arg", "const") if getattr(ns, o, None)]
    if stray:
        raise UsageError(f"a manifest sets the launch itself; drop --{stray[0]} "
                         f"(or run the .cu file with its options)")


def target_manifest(ns: argparse.Namespace) -> tuple:
    """(manifest, whether it came from a .json file) of the launch ns.target
    names: a manifest, its grid and dynamic shared bytes replaced by --grid
    and --shared where given, or a kernel source with the command line's
    launch options (`gpuemu run` and `gpuemu check`)."""
    target = Path(ns.target)
    if target.suffix == ".json":
        refuse_cu_options(ns)
        m = mf.load(target)
        if ns.grid:
            m.grid = ns.grid
        if ns.shared is not None:
            m.dynamic_shared_bytes = ns.shared
        return m, True
    if target.suffix in (".cu", ".cuh", ".c", ".h") or target.is_file():
        return manifest_from_args(ns), False
    raise UsageError(f"{target}: expected a .cu kernel source or a .json manifest")


def manifest_from_args(ns: argparse.Namespace) -> mf.Manifest:
    """The in-memory manifest a `gpuemu run FILE.cu ...` command line describes."""
    if not ns.kernel:
        raise UsageError("running a .cu file needs --kernel NAME")
    if ns.block is None:
        raise UsageError("running a .cu file needs --block X[,Y,Z]")
    args = [parse_arg_spec(s, i) for i, s in enumerate(ns.arg or [])]
    consts = [parse_const_spec(s) for s in ns.const or []]
    # (a --const named like an --arg would be filled from the argument's value)
    names = [a.name for a in args + consts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"argument and constant names repeat: {', '.join(dup)}")
    return mf.Manifest(kernel=ns.kernel, grid=ns.grid or (1, 1, 1), block=ns.block,
                       args=args, dynamic_shared_bytes=ns.shared or 0, constants=consts,
                       source=Path(ns.target), expect=ns.expect,
                       rtol=ns.rtol if ns.rtol is not None else 1e-6)


# --------------------------------------------------------------------------- output

def _console(stream: Any = None) -> Any:
    """A rich Console (wide when not on a terminal, so tables do not wrap), or None."""
    try:
        from rich.console import Console
    except ImportError:
        return None
    stream = stream or sys.stdout
    width = None if stream.isatty() else 160
    return Console(file=stream, width=width, highlight=False, soft_wrap=False)


def _fmt_value(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    return str(v)


def summarize(name: str, a: np.ndarray, show: int = 8) -> dict:
    """Shape, dtype, first values, sum and CRC-32 of one output."""
    flat = np.asarray(a).reshape(-1)
    if flat.dtype.kind == "f":
        total = float(flat.astype(np.float64).sum())
    else:
        total = int(flat.astype(np.int64).sum())
    return {"name": name, "dtype": flat.dtype.name, "shape": list(np.shape(a)),
            "first": [v.item() for v in flat[:show]], "sum": total, "crc32": mf.checksum(flat)}


def stats_rows(stats: dict) -> list:
    """(counter, value) in the order of gpuemu.stats.COUNTERS, then any others."""
    order = [c for c in COUNTERS if c in stats] + sorted(k for k in stats if k not in COUNTERS)
    return [(k, stats[k]) for k in order]


def _source_lines(m: mf.Manifest) -> list:
    try:
        text = Path(m.source).read_text()
    except OSError:
        return []
    return text.splitlines()


def print_report(m: mf.Manifest, res: mf.RunResult, arch: str, mismatches: Optional[list],
                 show: int, by_line: bool, seconds: float, counters: bool = True) -> None:
    """Human-readable report: launch, outputs, counters (rich tables when available;
    counters=False leaves the counters to the --report view)."""
    console = _console()
    launch = res.launch
    stats = dict(getattr(launch, "stats", {}) or {})
    head = (f"kernel {m.kernel}  grid {m.grid}  block {m.block}  "
            f"dynamic shared {m.dynamic_shared_bytes} B  arch {arch}")
    summaries = [summarize(n, res.outputs[n], show) for n in m.outputs]
    bad = {mm.name: mm for mm in (mismatches or [])}

    def verdict(name: str) -> str:
        if mismatches is None:
            return ""
        return f"DOES NOT match expectation: {bad[name].message}" if name in bad else "matches expectation"

    rows = stats_rows(stats) if counters else []
    if console is None:
        print(head)
        for s in summaries:
            print(f"  {s['name']}: {s['dtype']}{s['shape']} first {[_fmt_value(v) for v in s['first']]} "
                  f"sum {_fmt_value(s['sum'])} crc32 {s['crc32']} {verdict(s['name'])}")
        for k, v in rows:
            h100 = f"  (H100 {m.measured[k]})" if k in m.measured else ""
            print(f"  {k:32s} {v}{h100}")
        if by_line:
            _print_by_line(print, m, getattr(launch, "stats_by_line", {}) or {})
    else:
        from rich.table import Table
        console.print(head)
        out = Table(title="outputs", title_justify="left")
        for col in ("name", "dtype", "shape", "first values", "sum", "crc32", "expectation"):
            out.add_column(col, overflow="fold")
        for s in summaries:
            out.add_row(s["name"], s["dtype"], "x".join(map(str, s["shape"])),
                        " ".join(_fmt_value(v) for v in s["first"]) + (" ..." if s["shape"] and
                                                                        np.prod(s["shape"]) > show else ""),
                        _fmt_value(s["sum"]), s["crc32"], verdict(s["name"]) or "-")
        if summaries:
            console.print(out)
        else:
            console.print("no outputs (mark buffers with out: or \"output\": true)")
        ct = Table(title="counters", title_justify="left")
        ct.add_column("counter")
        ct.add_column("value", justify="right")
        if m.measured:
            ct.add_column("H100 (measured)", justify="right")
        for k, v in rows:
            ct.add_row(k, _fmt_value(v), *([_fmt_value(m.measured.get(k, ""))] if m.measured else []))
        if rows:
            console.print(ct)
        if by_line:
            _print_by_line(lambda text: console.print(text, markup=False, soft_wrap=True),
                           m, getattr(launch, "stats_by_line", {}) or {})
    findings = list(getattr(launch, "findings", []) or [])
    for f in findings:
        print(f"finding: {f}")
    print(f"time {seconds:.3f} s (compile and run)"
          + (f", kernel {launch.seconds:.3f} s" if isinstance(getattr(launch, "seconds", None), float) else ""))


def _print_by_line(emit: Any, m: mf.Manifest, by_line: dict) -> None:
    """The kernel source, each line followed by its non-zero counters."""
    src = _source_lines(m)
    emit("counters by source line")
    lines = [k for k in by_line if isinstance(k, int)]
    for ln in range(1, max([len(src)] + lines) + 1):
        emit(f"{ln:4d}  {src[ln - 1] if ln <= len(src) else ''}")
        _emit_counters(emit, by_line.get(ln))
    for where in sorted(k for k in by_line if not isinstance(k, int)):   # #include'd files
        emit(f"      {where}")
        _emit_counters(emit, by_line[where])


def _emit_counters(emit: Any, counters: Optional[dict]) -> None:
    nonzero = [(k, v) for k, v in stats_rows(counters or {}) if v]
    if nonzero:
        emit("      # " + "  ".join(f"{k}={_fmt_value(v)}" for k, v in nonzero))


def _json_safe(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


# --------------------------------------------------------------------------- commands

def check_arch(name: str) -> None:
    """A clear usage error for an arch name no preset has."""
    try:
        from .arch import PRESETS
    except ImportError:
        return                       # let the emulator report it
    names = list(PRESETS.keys() if isinstance(PRESETS, dict) else (p.name for p in PRESETS))
    if name not in names:
        raise UsageError(f"unknown arch {name!r}; the presets are {', '.join(names)} "
                         f"(gpuemu info archs)")


def check_workers_environment() -> None:
    """A usage error for a GPUEMU_WORKERS above block_workers.MAX_WORKERS
    (the launch would refuse it; said before anything is compiled)."""
    from .machine import block_workers
    from .errors import LaunchError
    try:
        block_workers.default_workers()
    except LaunchError as e:
        raise UsageError(str(e)) from None


def check_bank_mode(arch: str, mode: Optional[int]) -> None:
    """A usage error for a --bank-mode the preset does not offer (only cc3.x
    has the 4/8-byte switch, as cudaDeviceSetSharedMemConfig)."""
    if mode is None:
        return
    from .arch import PRESETS, get_preset
    if mode not in get_preset(arch).mem.shared_bank_modes:
        offer = [n for n in PRESETS if get_preset(n).mem.shared_bank_modes]
        raise UsageError(f"--bank-mode {mode}: {arch} has fixed 4-byte shared-memory banks; "
                         f"the bank mode is a setting of {', '.join(offer)}")


def check_output_paths(ns: argparse.Namespace) -> None:
    """A usage error, before the launch, for an output file (--save, --html,
    --timeline) that cannot be written: its folder missing, or a folder itself."""
    check_writable((("--save", [ns.save]), ("--html", [ns.html]), ("--timeline", ns.timeline or [])))
    for path in ns.timeline or []:
        if Path(path).suffix.lower() not in (".json", ".png"):
            raise UsageError(f"--timeline {path}: the timeline is written as FILE.json (a Chrome "
                             f"trace for Perfetto) or FILE.png (a picture); name the file so")


def check_writable(options) -> None:
    """check_output_paths for (option, [paths]) pairs (None: not given)."""
    for option, paths in options:
        for path in paths:
            if path is None:
                continue
            p = Path(path)
            if p.is_dir():
                raise UsageError(f"{option} {path}: is a folder, not a file")
            if not p.resolve().parent.is_dir():
                raise UsageError(f"{option} {path}: no such folder {p.parent}")


def _write(option: str, path: str, write: Any) -> None:
    """Call write(path), a failure to write being a clean error naming the option."""
    try:
        write(path)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write: {e.strerror or e}") from None


def cmd_run(ns: argparse.Namespace) -> int:
    """`gpuemu run`: build the manifest, launch, print (tables, --json, --report, --html)."""
    check_arch(ns.arch)
    check_bank_mode(ns.arch, ns.bank_mode)
    check_workers_environment()
    check_output_paths(ns)
    target = Path(ns.target)
    m, from_manifest = target_manifest(ns)
    if from_manifest:
        if ns.expect and m.expect_finding is not None:
            raise UsageError(f"--expect: {target} expects the launch to stop with a "
                             f"'{m.expect_finding}' finding (expect_finding): no outputs to check")
        if ns.expect:
            m.expect, m.expect_file = ns.expect, None
        if ns.rtol is not None:
            m.rtol = ns.rtol
    if ns.rtol is not None and not m.has_expectation:
        raise UsageError("--rtol: no expectation to compare with (give --expect, or a "
                         "manifest's expect or expect_file)")
    if m.source is not None and not Path(m.source).is_file():
        raise mf.ManifestError(f"{m.source}: no such file")
    t0 = time.perf_counter()
    launch_options = {k: v for k, v in (("budget", ns.budget), ("bank_mode", ns.bank_mode),
                                        ("seed", ns.seed),
                                        ("memory_model", ns.memory_model)) if v is not None}
    if ns.no_l1:
        launch_options["l1"] = False
    if ns.timing or ns.scheduler or ns.timeline:
        launch_options.update(mode="timing", scheduler=ns.scheduler)
    if ns.workers is not None:
        launch_options["workers"] = ns.workers
    from .progress import LaunchProgress
    grid = tuple(m.grid) + (1, 1)
    with LaunchProgress(grid[0] * grid[1] * grid[2], m.kernel) as bar:
        if not ns.quiet:
            launch_options["progress"] = bar
        try:
            res = mf.run(m, arch=ns.arch, **launch_options)
        except KernelError as e:
            if m.expect_finding is None or {f.kind for f in e.findings} != {m.expect_finding}:
                raise
            return report_expected_stop(m, e, ns)
    timing = getattr(res.launch, "timing", None)
    if timing is not None and ns.timeline:
        for path in ns.timeline:
            _write("--timeline", path, timing.timeline_png if str(path).endswith(".png")
                   else timing.chrome_trace)
    seconds = time.perf_counter() - t0
    mismatches = mf.check(res) if m.has_expectation else None
    if ns.save:
        _write("--save", ns.save, lambda path: np.savez(path, **res.outputs))
    launch = res.launch
    rep = launch.report(top=ns.top) if ns.report or ns.html else None    # built once
    if ns.json:
        out = {
            "kernel": m.kernel, "arch": ns.arch, "grid": list(m.grid), "block": list(m.block),
            "dynamic_shared_bytes": m.dynamic_shared_bytes,
            "outputs": {n: summarize(n, res.outputs[n], ns.show) for n in m.outputs},
            "expectation": None if mismatches is None else
            ("match" if not mismatches else "mismatch"),
            "mismatches": [str(x) for x in mismatches or []],
            "stats": dict(getattr(launch, "stats", {}) or {}),
            "measured": m.measured,
            "findings": [str(f) for f in getattr(launch, "findings", []) or []],
            "seconds": seconds,
        }
        if ns.lines:
            out["stats_by_line"] = getattr(launch, "stats_by_line", {}) or {}
        if timing is not None:
            out["timing"] = timing.summary()
        if ns.report:
            out["report"] = rep.to_dict()
        print(json.dumps(_json_safe(out), indent=1))
    else:
        print_report(m, res, ns.arch, mismatches, ns.show, ns.lines, seconds,
                     counters=not ns.report or bool(m.measured))
        if timing is not None:
            print("timing: " + "  ".join(f"{k} {v}" for k, v in timing.summary().items()))
        if ns.report:
            rep.render(_console(), counters=not m.measured, findings=False)
    if ns.html:
        _write("--html", ns.html, rep.save_html)
        print(f"wrote {ns.html}", file=sys.stderr if ns.json else sys.stdout)
    if m.expect_finding is not None:
        _error(f"gpuemu: {m.path}: expect_finding: the launch ended without the "
               f"'{m.expect_finding}' finding the manifest expects")
        return EXIT_ERROR
    return EXIT_ERROR if mismatches else EXIT_OK


def report_expected_stop(m: mf.Manifest, e: Any, ns: argparse.Namespace) -> int:
    """A launch that stopped with the finding its manifest expects ("expect_finding",
    a bug demo): its findings, exit status 0, as a matching `expect` gives; 1 when
    an output file was asked for, since a stopped launch has none to write."""
    findings = [str(f) for f in e.findings]
    if ns.json:
        print(json.dumps({"kernel": m.kernel, "arch": ns.arch, "expectation": "expected finding",
                          "expect_finding": m.expect_finding, "findings": findings}, indent=1))
    else:
        print(f"kernel {m.kernel} stopped with the finding its manifest expects "
              f"(expect_finding '{m.expect_finding}'):")
        for f in findings:
            print(f"  {f}")
    unwritten = [o for o, v in (("--save", ns.save), ("--html", ns.html),
                                ("--timeline", ns.timeline)) if v]
    for option in unwritten:
        _error(f"gpuemu: {option}: not written: the launch stopped")
    return EXIT_ERROR if unwritten else EXIT_OK


def _mem(p: Any, key: str) -> Any:
    """A memory-model field of a preset (its `memory` dict, else its `mem` config)."""
    mem = getattr(p, "memory", {}) or {}
    if key in mem:
        return mem[key]
    return getattr(getattr(p, "mem", None), key, None)


def _kib(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (int, np.integer)):
        if v == 0:
            return "none"
        for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
            if v >= size and v % (size // 4) == 0:
                return f"{v / size:g} {unit}"
        return f"{v} B"
    return str(v)


def arch_rows() -> list:
    """One row per preset: name, cc, SMs, shared/block, banks, L1, L2, description."""
    from .arch import PRESETS
    presets = PRESETS.values() if isinstance(PRESETS, dict) else PRESETS
    rows = []
    for p in presets:
        cc = ".".join(str(x) for x in p.compute_capability)
        l1 = _mem(p, "l1_bytes")
        l2 = _mem(p, "l2_bytes")
        if _mem(p, "l1_present") is False:
            l1_text = "none"
        else:   # say when L1 does not cache global loads by default (-dlcm=cg)
            l1_text = _kib(l1) + (" (no global loads)"
                                  if _mem(p, "l1_caches_global_loads") is False else "")
        rows.append({"name": p.name, "cc": cc, "sms": p.num_sms,
                     "shared_per_block": p.max_shared_per_block,
                     "shared_per_sm": p.shared_per_sm,
                     "banks": f"{p.shared_banks} x {p.shared_bank_width} B",
                     "l1": l1_text, "l2": _kib(l2), "description": p.description})
    return rows


def cmd_occupancy(ns: argparse.Namespace) -> int:
    """`gpuemu occupancy`: each kernel's occupancy for the block and shared memory given."""
    from . import RawModule
    from .machine.launch_config import check_launch
    from .machine.occupancy import occupancy_report
    check_arch(ns.arch)
    if not Path(ns.source).is_file():
        raise UsageError(f"no such file: {ns.source}")
    if Path(ns.source).suffix.lower() == ".json":
        raise UsageError(f"occupancy takes a kernel source (FILE.cu), not a manifest: "
                         f"{_occupancy_of_manifest(ns.source)}")
    options = tuple(f"-maxrregcount={ns.maxrregcount}" for _ in [0] if ns.maxrregcount)
    mod = RawModule(path=ns.source, arch=ns.arch, options=options)
    names = [ns.kernel] if ns.kernel else [f.name for f in mod.module.kernels]
    carveout = int(ns.carveout) if ns.carveout and ns.carveout.isdigit() else ns.carveout
    for name in names:
        try:
            k = mod.get_function(name)
        except KeyError:
            raise UsageError(f"no __global__ function '{name}' in {ns.source}") from None
        # a block or shared memory a launch would refuse (over the threads-per-block limit or
        # the opt-in shared limit) has no occupancy: a LaunchError, as RawKernel.occupancy's
        check_launch(k.module.preset, 1, ns.block, k.meta.static_shared, ns.shared,
                     k.meta.launch_bounds, max_dynamic_shared=float("inf"))
        try:
            occ = k.occupancy(ns.block, shared_mem=ns.shared, carveout=carveout)
        except ValueError as e:
            raise UsageError(str(e)) from None
        print(f"kernel {name}  arch {ns.arch}")
        print(occupancy_report(occ))
    return EXIT_OK


def _occupancy_of_manifest(path: str) -> str:
    """The occupancy command of a manifest's launch, for a message (or what to give,
    where the manifest cannot be read)."""
    try:
        m = mf.load(path)
    except mf.ManifestError:
        m = None
    if m is None or m.source is None:
        return "give its kernel source and --kernel, --block"
    block = ",".join(str(v) for v in m.block).removesuffix(",1").removesuffix(",1")
    return (f"for its launch run 'gpuemu occupancy {m.source} --kernel {m.kernel} --block {block}"
            f"{f' --shared {m.dynamic_shared_bytes}' if m.dynamic_shared_bytes else ''}'")


def cmd_info(ns: argparse.Namespace) -> int:
    """`gpuemu info archs | arch [NAME] | counters`."""
    if ns.name and ns.what != "arch":
        raise UsageError(f"'info {ns.what}' takes no NAME (did you mean 'info arch {ns.name}'?)")
    if ns.what == "archs":
        rows = arch_rows()
        if ns.json:
            print(json.dumps(_json_safe(rows), indent=1))
            return EXIT_OK
        console = _console()
        cols = [("name", "name"), ("cc", "cc"), ("SMs", "sms"), ("shared/block", "shared_per_block"),
                ("shared/SM", "shared_per_sm"), ("banks", "banks"), ("L1", "l1"), ("L2", "l2"),
                ("description", "description")]
        if console is None:
            for r in rows:
                print("  ".join(f"{h}={_kib(r[k]) if 'shared' in k else r[k]}" for h, k in cols))
            return EXIT_OK
        from rich.table import Table
        t = Table(title="architecture presets (--arch NAME)", title_justify="left")
        for h, _ in cols:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*[_kib(r[k]) if "shared" in k else str(r[k]) for _, k in cols])
        console.print(t)
        return EXIT_OK
    if ns.what == "arch":
        return _info_arch(ns)
    if ns.what == "counters":
        from .stats import COUNTERS
        for c in COUNTERS:
            print(c)
        return EXIT_OK
    if ns.what.endswith((".cu", ".cuh")) or Path(ns.what).is_file():
        return cmd_info_resources(ns)
    raise UsageError(f"unknown info topic {ns.what!r}: use archs, arch, counters or a .cu file")


def cmd_info_resources(ns: argparse.Namespace) -> int:
    """`gpuemu info FILE.cu`: per kernel, the lines ptxas -v prints (gpuemu/resources.py)."""
    from . import RawModule
    from .resources import cap_note, kernel_resources, ptxas_lines
    check_arch(ns.arch)
    if not Path(ns.what).is_file():
        raise UsageError(f"no such file: {ns.what}")
    options = (f"-maxrregcount={ns.maxrregcount}",) if ns.maxrregcount else ()
    mod = RawModule(path=ns.what, arch=ns.arch, options=options)
    out = []
    for f in mod.module.kernels:
        r = kernel_resources(mod.get_function(f.name))
        if ns.json:
            out.append(r.__dict__)
            continue
        print(ptxas_lines(r))
        note = cap_note(r)
        if note:
            print(note)
    if ns.json:
        print(json.dumps(out, indent=1))
    return EXIT_OK


def _info_arch(ns: argparse.Namespace) -> int:
    """`gpuemu info arch [NAME] [--markdown]`: every setting of a preset with
    its meaning and source (gpuemu/arch/reference.py)."""
    from .arch import get_preset
    from .arch import reference
    if ns.name and not _known_arch(ns.name):
        check_arch(ns.name)                      # the usage error naming the presets
    names = [get_preset(ns.name).name] if ns.name else None
    if ns.markdown:
        sys.stdout.write(reference.markdown(names) if not ns.name
                         else reference.preset_markdown(get_preset(ns.name)))
        return EXIT_OK
    if ns.json:
        out = {p: [{"field": f, "value": v, "meaning": m, "note": n}
                   for _, f, v, m, n in reference.rows(get_preset(p))] for p in names or reference.PRESETS}
        print(json.dumps(_json_safe(out), indent=1, default=str))
        return EXIT_OK
    from rich.table import Table
    console = _console()
    for p in names or list(reference.PRESETS):
        preset = get_preset(p)
        t = Table(title=f"{preset.name}: {preset.description}", title_justify="left")
        for col in ("setting", "value", "meaning", "source / note"):
            t.add_column(col, overflow="fold")
        for _, f, v, m, n in reference.rows(preset):
            t.add_row(f, reference.fmt(v, f), m, n)
        console.print(t)
    return EXIT_OK


def _known_arch(name: str) -> bool:
    from .arch import get_preset
    try:
        get_preset(name)
        return True
    except ValueError:
        return False


# --------------------------------------------------------------------------- parser

def cmd_sweep(ns: argparse.Namespace) -> int:
    from . import sweep
    check_writable((("--out", [ns.out]),))      # (before the sweep runs, not after)
    try:
        tasks = sweep.load_spec(ns.spec)
    except sweep.SweepError as e:
        raise UsageError(str(e)) from None
    if ns.workers is not None and ns.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {ns.workers}")
    try:
        rows = sweep.run_sweep(tasks, scheduler=ns.scheduler, workers=ns.workers or 2,
                               log=None if ns.json else lambda msg: print(msg, file=sys.stderr))
    except sweep.SweepError as e:
        raise UsageError(f"--scheduler: {e}") from None
    counters = tasks[0].counters
    if ns.out:
        _write("--out", ns.out, lambda path: sweep.write_rows(rows, path, counters))
    if ns.json:
        print(json.dumps(_json_safe(rows), indent=1))
    else:
        print(sweep.format_table(rows, counters))
    return EXIT_ERROR if any(r["error"] or r["result"] == "mismatch" for r in rows) else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every subcommand (its --help texts are the CLI's manual)."""
    p = argparse.ArgumentParser(
        prog="gpuemu",
        description="gpuemu: a SIMT GPU emulator. Runs CUDA C kernels on numpy data and "
                    "reports what they would cost on a chosen GPU (bank conflicts, memory "
                    "sectors, divergence, cycles).",
        epilog="examples:\n  gpuemu run programs/vecadd.json\n"
               "  gpuemu run programs/transpose_tiled32.json --lines\n"
               "  gpuemu run programs/transpose_tiled32.json --report --html report.html\n"
               "  gpuemu run k.cu --kernel scale --grid 4 --block 256 "
               "--arg out:float32[1024]=arange --arg f32:2 --arg i32:1024\n"
               "  gpuemu occupancy programs/matmul_tiled.cu --block 16,16\n"
               "  gpuemu info archs\n\n"
               "exit status: 0 ok; 1 compile/launch/kernel error or an output that does not "
               "match its expectation; 2 bad command line; 3 internal error",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from . import __version__
    p.add_argument("--version", action="version", version=f"gpuemu {__version__}")
    p.add_argument("--traceback", action="store_true",
                   help="on an internal error, show the Python traceback (for bug reports)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser(
        "run", help="compile and launch a kernel, print its outputs and counters",
        description="Compile and launch one kernel on the emulated GPU, then print a summary "
                    "of the output buffers (shape, dtype, first values, sum, CRC-32, and "
                    "whether they match the manifest's expectation) and the cost counters. "
                    "TARGET is a manifest (FILE.json: the launch and its arguments) or a "
                    "kernel source (FILE.cu: give --kernel, --grid, --block and one --arg per "
                    "kernel parameter).",
        epilog=ARG_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("target", metavar="TARGET", help="FILE.json manifest or FILE.cu kernel source")
    r.add_argument("--kernel", metavar="NAME", help="the __global__ function to launch (.cu only)")
    r.add_argument("--grid", type=dim3, metavar="X[,Y,Z]",
                   help="blocks in the grid (default 1; overrides a manifest's grid)")
    r.add_argument("--block", type=dim3, metavar="X[,Y,Z]", help="threads per block (.cu only)")
    r.add_argument("--shared", type=int_at_least(0), metavar="BYTES",
                   help="dynamic shared memory per block, for extern __shared__ arrays (default 0)")
    r.add_argument("--arg", action="append", metavar="SPEC",
                   help="one kernel argument, in parameter order (repeat); SPEC below")
    r.add_argument("--const", action="append", metavar="SYMBOL=SPEC",
                   help="fill a __constant__/__device__ symbol before the launch (repeat)")
    r.add_argument("--expect", metavar="PYTHON",
                   help="numpy statements giving expected outputs by name, e.g. 'arg2 = arg0 + arg1'")
    r.add_argument("--rtol", type=tolerance, metavar="R",
                   help="relative tolerance for float outputs (default 1e-6)")
    r.add_argument("--arch", default="sm_90", metavar="NAME",
                   help="GPU preset to emulate (default sm_90; see 'gpuemu info archs')")
    r.add_argument("--budget", type=int_at_least(1, MAX_BUDGET, " (2**63 - 1)"), metavar="N",
                   help="watchdog: stop a warp after N loop iterations with a 'timeout' "
                        "finding (default: the emulator's, 10 million)")
    r.add_argument("--no-l1", action="store_true",
                   help="global loads bypass L1 (as nvcc -Xptxas -dlcm=cg)")
    r.add_argument("--bank-mode", type=int, choices=(4, 8), metavar="{4,8}",
                   help="shared-memory bank width in bytes on cc3x "
                        "(as cudaDeviceSetSharedMemConfig)")
    r.add_argument("--seed", type=int, metavar="N",
                   help="seed for the emulator's random choices (e.g. which lane's store wins "
                        "when several write one shared address); default: deterministic")
    r.add_argument("--memory-model", choices=("default", "weak"), metavar="{default,weak}",
                   help="weak: global stores reach other blocks late unless a __threadfence "
                        "orders them (a missing fence gives a wrong result on some seeds)")
    r.add_argument("--timing", action="store_true",
                   help="timing mode: cycle-level warp schedulers (cycles, IPC, stall reasons)")
    r.add_argument("--scheduler", metavar="NAME",
                   help="warp scheduling policy in timing mode: gto (default), lrr, two_level, "
                        "random (implies --timing)")
    r.add_argument("--timeline", action="append", metavar="FILE.json|FILE.png",
                   help="write the warp timeline (Chrome trace JSON for Perfetto, or a PNG); "
                        "implies --timing; repeat for both")
    r.add_argument("--workers", type=int_at_least(1, MAX_WORKERS, " (4 host threads per core)"),
                   metavar="N",
                   help="run blocks on N host threads (default $GPUEMU_WORKERS or 1); "
                        "results and counters are the same as with one")
    r.add_argument("--quiet", action="store_true",
                   help="no progress bar (one appears on a terminal after 2 s of a long launch)")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    r.add_argument("--lines", action="store_true", help="also print the counters per source line")
    r.add_argument("--report", action="store_true",
                   help="also print the source view: every line with its executions, active "
                        "lanes, shared requests, wavefronts per request, bank conflicts (n-way), "
                        "global requests, sectors per request, divergent branches (and stall "
                        "cycles in timing mode), the costliest lines highlighted; with --json, "
                        "add it as 'report'")
    r.add_argument("--html", metavar="FILE.html",
                   help="write one self-contained HTML page: counters, source view, bank heat "
                        "map of the worst shared-memory line, coalescing per line (and the warp "
                        "timeline of a timing-mode launch)")
    r.add_argument("--top", type=int_at_least(0), default=3, metavar="N",
                   help="how many of the costliest lines --report and --html highlight (default 3)")
    r.add_argument("--show", type=int_at_least(0), default=8, metavar="N",
                   help="how many leading values of each output to print (default 8)")
    r.add_argument("--save", metavar="FILE.npz", help="save the outputs by name with numpy.savez")
    r.set_defaults(func=cmd_run)

    o = sub.add_parser(
        "occupancy", help="resident blocks and warps per SM, as the CUDA occupancy calculator",
        description="Compute a kernel's occupancy on a GPU preset as the CUDA occupancy "
                    "calculator does: blocks per SM allowed by warps, blocks, registers (the "
                    "emulator's estimate of the kernel's registers per thread, capped by "
                    "__launch_bounds__ and --maxrregcount) and shared memory (static plus "
                    "--shared, with the L1/shared carve-out), the active warps, the "
                    "occupancy and the limiting resource.")
    o.add_argument("source", metavar="FILE.cu", help="kernel source")
    o.add_argument("--kernel", metavar="NAME", help="one __global__ function (default: all)")
    o.add_argument("--block", type=dim3, required=True, metavar="X[,Y,Z]", help="threads per block")
    o.add_argument("--shared", type=int_at_least(0), default=0, metavar="BYTES",
                   help="dynamic shared memory per block (default 0)")
    o.add_argument("--arch", default="sm_90", metavar="NAME", help="GPU preset (default sm_90)")
    o.add_argument("--carveout", metavar="PERCENT|prefer_shared|prefer_l1|prefer_equal",
                   help="shared memory share of the unified L1/shared storage, as "
                        "cudaFuncAttributePreferredSharedMemoryCarveout or cudaFuncSetCacheConfig")
    o.add_argument("--maxrregcount", type=int_at_least(1), metavar="N", help="cap registers per thread, as nvcc's")
    o.set_defaults(func=cmd_occupancy)

    from .check.command import add_parser as add_check_parser
    add_check_parser(sub, dim3)

    w = sub.add_parser(
        "sweep", help="run a grid of launches (program x arch x scheduler x size) on Dask",
        description="Run every launch of a sweep SPEC (a JSON file: programs, archs, "
                    "schedulers, sizes, counters; see gpuemu/sweep.py) as tasks on a Dask "
                    "cluster and print one table of results (one row per launch: threads, "
                    "seconds, whether the outputs match the manifest, the counters).")
    w.add_argument("spec", metavar="SPEC", help="the sweep's JSON file")
    w.add_argument("--scheduler", metavar="ADDRESS",
                   help="an existing Dask scheduler (e.g. tcp://host:8786); default: a local cluster")
    w.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default 2)")
    w.add_argument("--out", metavar="FILE", help="also write the rows (.json, else CSV)")
    w.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    w.set_defaults(func=cmd_sweep)

    i = sub.add_parser("info", help="the architecture presets and their settings, or the counter names",
                       description="Show what gpuemu knows: 'archs' lists the GPU presets "
                                   "(--arch NAME) with compute capability, SM count, shared "
                                   "memory per block and per SM, banks, L1 and L2; 'arch [NAME]' "
                                   "every setting of one preset (or all) with its meaning and "
                                   "source ('arch --markdown' writes the reference docs/arch.md "
                                   "holds); 'counters' lists the counter names a launch reports; "
                                   "FILE.cu prints per kernel the resource lines ptxas -v prints "
                                   "(registers, spills, stack, shared, constant).",
                       epilog="examples:\n  gpuemu info archs\n  gpuemu info arch sm_90\n"
                              "  gpuemu info arch --markdown > docs/arch.md\n  gpuemu info counters\n"
                              "  gpuemu info programs/register_spill.cu --arch sm_90",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("what", help="archs | arch | counters | FILE.cu")
    i.add_argument("name", nargs="?", metavar="NAME", help="a preset, for 'arch' (default: all)")
    i.add_argument("--json", action="store_true", help="print JSON instead of a table (archs, arch, FILE.cu)")
    i.add_argument("--markdown", action="store_true",
                   help="print Markdown (arch): the whole reference, or one preset's section")
    i.add_argument("--arch", default="sm_90", metavar="NAME", help="GPU preset for FILE.cu (default sm_90)")
    i.add_argument("--maxrregcount", type=int_at_least(1), metavar="N", help="cap registers per thread, as nvcc's (FILE.cu)")
    i.set_defaults(func=cmd_info)
    return p


def _error(msg: str) -> None:
    print(msg, file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `gpuemu` console script and `python -m gpuemu`."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if not getattr(ns, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        from .errors import CompileError, KernelError, LaunchError
    except ImportError as e:  # pragma: no cover - the package is broken
        _error(f"gpuemu: cannot import the emulator: {e}")
        return EXIT_INTERNAL
    try:
        return ns.func(ns)
    except UsageError as e:
        _error(f"gpuemu: {e}")
        return EXIT_USAGE
    except CompileError as e:
        _error(str(e))
        return EXIT_ERROR
    except LaunchError as e:
        _error(f"launch error: {e}")
        return EXIT_ERROR
    except KernelError as e:
        _error(f"kernel error: {len(e.findings)} finding(s)")
        for f in e.findings:
            _error(f"  {f}")
        if not e.findings:
            _error(f"  {e}")
        return EXIT_ERROR
    except mf.ManifestError as e:
        _error(f"gpuemu: {e}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _error("gpuemu: interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # an emulator bug: say so plainly, traceback on request
        if ns.traceback or os.environ.get("GPUEMU_TRACEBACK"):
            raise
        _error(f"gpuemu: internal error: {type(e).__name__}: {e}\n"
               f"(run with --traceback or GPUEMU_TRACEBACK=1 for details)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
