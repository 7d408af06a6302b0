"""The Python API in CuPy's RawModule / RawKernel shape (DESIGN section 6).

    mod = gpuemu.RawModule(code=src, arch="sm_90")
    k = mod.get_function("transpose")
    launch = k((32, 32), (32, 8), (y, x, np.int32(n)), shared_mem=0, budget=10**7)
    launch.stats["shared_load_wavefronts"], launch.stats_by_line, launch.findings

numpy arrays passed as arguments are copied to device memory before the
launch and copied back after it (not when the kernel fails, so a faulty
kernel leaves the user's arrays untouched); arrays sharing memory share one
device copy, and a read-only array is not copied back: the kernel writing
one is a LaunchError (gpuemu/numpy_arguments.py). Scalars (Python numbers or numpy
scalars) are converted to the parameter's type.
"""
from __future__ import annotations

import numbers
import os
import shlex
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Optional

import numpy as np

from isa import ir
from isa.diagnostics import CompileError

from . import numpy_arguments, printf_output
from .compile_options import check_options
from .device_array import DeviceArray, asarray
from .device_memory import device_memory
from .errors import KernelError, LaunchError
from .texture import Texture
from .jit import abi, compile_kernel
from .check import parse_check
from .check.shadow_memory import forget_args
from .host.streams import Stream, place_kernel, place_launch
from .machine import block_workers
from .machine import DEFAULT_BUDGET, MAX_BUDGET, LaunchRun, launch_cache, launch_gate, launch_plan
from .machine.weak_memory import parse_memory_model
from .memory.launch_sums import Ended
from .stats import Deferred, Stats, deferred, deferred_field, made

_NP = {("int", 8, True): np.int8, ("int", 8, False): np.uint8, ("int", 16, True): np.int16,
       ("int", 16, False): np.uint16, ("int", 32, True): np.int32, ("int", 32, False): np.uint32,
       ("int", 64, True): np.int64, ("int", 64, False): np.uint64,
       ("float", 32, True): np.float32, ("float", 64, True): np.float64,
       ("bool", 1, False): np.bool_}


def numpy_dtype(t) -> np.dtype:
    """The numpy dtype of an IR scalar or vector element type."""
    if isinstance(t, ir.VectorType):
        t = t.elem
    if isinstance(t, ir.PointerType):
        return np.dtype(np.uint64)
    if isinstance(t, ir.ScalarType):
        key = (t.kind, t.bits, t.signed if t.kind == "int" else (t.kind != "bool"))
        return np.dtype(_NP[key])
    raise TypeError(str(t))


def _short(n: int) -> str:
    """An int as an error message shows it: its digits, a huge one's first and count."""
    text = str(n)
    return text if len(text) <= 40 else f"{text[:12]}... ({len(text.lstrip('-'))} digits)"


def _get_preset(arch: str):
    from .arch import get_preset
    try:
        return get_preset(arch)
    except ValueError as e:
        raise LaunchError(str(e)) from None


def _parse_options(options, cc: tuple = (9, 0), arch: str = "sm_90") -> tuple:
    """(-I include dirs, -D defines, the other options) from nvcc-style
    options, each checked by compile_options (a refused or unknown option is
    a CompileError)."""
    incs, defs, rest = [], {}, []
    if isinstance(options, str):        # one option string, not its characters
        options = (options,)
    try:
        opts = list(options or ())
    except TypeError:
        raise TypeError(f"options must be a tuple of nvcc-style option strings, "
                        f"got {type(options).__name__}") from None
    flat = []
    for o in opts:
        try:
            flat += shlex.split(o) if isinstance(o, str) and " " in o else [o]
        except ValueError as e:         # an unclosed quote: a diagnostic pointing at the option
            raise CompileError(f"cannot split the option: {e}", ir.Loc("<options>", 1, 1), o) from None
    flat = check_options(flat, cc, arch)
    i = 0
    while i < len(flat):
        o = str(flat[i])
        if o in ("-I", "-D") and i + 1 < len(flat):
            o = o + str(flat[i + 1])
            i += 1
        if o.startswith("-I") or o.startswith("--include-path="):
            incs.append(o.split("=", 1)[1] if o.startswith("--") else o[2:])
        elif o.startswith("-D"):
            k, eq, v = o[2:].partition("=")
            defs[k] = v if eq else "1"          # -DNAME= defines it empty, as gcc and nvcc do
        else:
            rest.append(o)
        i += 1
    return tuple(incs), defs, tuple(rest)


def _source_text(data: bytes, filename: str) -> str:
    """Source bytes as text (UTF-8, as nvcc reads them); a byte that is not is
    a CompileError pointing at it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        start = data.rfind(b"\n", 0, e.start) + 1
        end = data.find(b"\n", e.start)
        line = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
        raise CompileError(f"the source is not UTF-8 text (byte {data[e.start]:#04x})",
                           ir.Loc(filename, data.count(b"\n", 0, e.start) + 1, e.start - start + 1),
                           line) from None


# CuPy's RawModule / RawKernel keywords that choose how CuPy compiles (NVRTC or
# nvcc, Jitify, cuComplex translation, cooperative launch): taken, and nothing
# for gpuemu's own front end to do.
CUPY_COMPILE_KEYWORDS = ("backend", "translate_cucomplex", "enable_cooperative_groups", "jitify")


def _refuse_unknown_keywords(where: str, kwargs: dict, known: tuple) -> None:
    """The TypeError Python raises for an unexpected keyword argument, with
    the known keyword it was likely meant to be (a misspelt options= must
    not vanish: its -D defines would never apply)."""
    import difflib
    for name in kwargs:
        if name not in CUPY_COMPILE_KEYWORDS:
            close = difflib.get_close_matches(name, known + CUPY_COMPILE_KEYWORDS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}{hint}")


class RawModule:
    """A compiled CUDA C source: kernels and file-scope symbols.

    code= is source text (a str, or UTF-8 bytes), path= a source file; a source
    that cannot be read or decoded, or an option that cannot be split, is a
    CompileError; a kernel name that is not one of the module's (or not a str)
    is a KeyError listing its kernels. CuPy's compile keywords (backend=,
    jitify=, translate_cucomplex=, enable_cooperative_groups=) are taken and
    change nothing; any other keyword is a TypeError (a misspelt options=)."""

    def __init__(self, code: Optional[str] = None, path: Optional[str] = None, arch: str = "sm_90",
                 options: tuple = (), name_expressions=None, **kwargs):
        import isa
        _refuse_unknown_keywords("RawModule", kwargs,
                                 ("code", "path", "arch", "options", "name_expressions"))
        if (code is None) == (path is None):
            raise ValueError("RawModule needs exactly one of code= or path=")
        filename = "<source>"
        self.preset = _get_preset(arch)
        cc = tuple(getattr(self.preset, "compute_capability", (9, 0)))
        incs, defs, self.options = _parse_options(options, cc, arch)
        # nvcc's -Xptxas -dlcm=cg / -dlcm=ca: the L1 policy for global loads,
        # the default of every launch of this module (a launch's l1= wins).
        dlcm = [o.split("=", 1)[1] for o in self.options if str(o).lstrip("-").startswith("dlcm=")]
        self.l1_default = {"cg": False, "ca": True}.get(dlcm[-1]) if dlcm else None
        if path is not None:
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"RawModule path= is the path of a source file (a str or "
                                f"os.PathLike), got {type(path).__name__}")
            filename = str(path)
            try:
                code = Path(path).read_bytes()
            except OSError as e:            # missing, a directory, unreadable (nvcc: a fatal error)
                raise CompileError(f"cannot read the source file: {e.strerror or e}",
                                   ir.Loc(filename, 1, 1)) from None
            incs = incs + (str(Path(path).resolve().parent),)
        if isinstance(code, (bytes, bytearray)):
            code = _source_text(bytes(code), filename)
        elif not isinstance(code, str):
            raise TypeError(f"RawModule code= is CUDA C source text (a str), got {type(code).__name__}")
        self.code, self.arch, self.filename = code, arch, filename
        self.module = isa.compile_source(code, filename=filename, include_dirs=incs,
                                         defines=defs or None, arch=cc[0] * 100 + cc[1] * 10,
                                         max_local_bytes=self.preset.max_local_bytes)
        self._kernels: dict = {}
        self._names: dict = {}     # name expression -> instance name (templates)
        self._symbols: dict = {}
        self._layout_symbols()
        self.symbol_table = np.array([abi.as_int64(self._symbols[g.name][0].pointer)
                                      for g in self.module.globals] or [0], dtype=np.int64)
        if isinstance(name_expressions, str):
            name_expressions = (name_expressions,)
        self.name_expressions = tuple(name_expressions or ())
        for expr in self.name_expressions:
            self._instance_name(expr)

    def _instance_name(self, name: str) -> str:
        """The kernel a name (or template name expression, as CuPy's
        name_expressions: 'reduce<float, 256>') stands for; instantiates it."""
        if not isinstance(name, str):
            raise KeyError(f"a kernel name or name expression is a str, got {name!r} "
                           f"(kernels: {self._kernel_names()})")
        got = self._names.get(name)
        if got is None:
            got = name
            inst = getattr(self.module, "instantiate", None)
            if "<" in name and inst is not None:
                got = inst(self.module, name)
            self._names[name] = got
        return got

    def get_lowered_name(self, name: str) -> str:
        """The instance name of a name expression (CuPy's RawModule method)."""
        return self._instance_name(name)

    def _layout_symbols(self):
        """__device__ symbols: one global allocation each. __constant__
        symbols: packed with natural alignment into one 64 KB bank."""
        mem = device_memory()
        const_off = 0
        limit = int(getattr(self.preset, "constant_bytes", 65536))
        for g in self.module.globals:
            size = max(int(g.type.size), 1)
            if g.space == "constant":
                al = max(int(getattr(g.type, "align", 1)), g.align, 1)
                const_off = (const_off + al - 1) // al * al
                if const_off + size > limit:
                    lines = self.module.source.splitlines()
                    src = lines[g.loc.line - 1] if 0 < g.loc.line <= len(lines) else None
                    raise CompileError(f"__constant__ data exceeds the {limit}-byte constant bank "
                                       f"({const_off + size} bytes with '{g.name}')", g.loc, src)
                alloc = mem.allocate(size, "constant", name=f"__constant__ {g.name}",
                                     address=const_off)
                const_off += size
            else:
                try:
                    alloc = mem.allocate(size, "global", name=f"__device__ {g.name}")
                except MemoryError:         # a real GPU fails the module load: out of memory
                    lines = self.module.source.splitlines()
                    src = lines[g.loc.line - 1] if 0 < g.loc.line <= len(lines) else None
                    raise CompileError(f"__device__ '{g.name}' needs {size:,} bytes of global memory: more "
                                       "than the emulator can allocate (it holds device memory in host memory)",
                                       g.loc, src) from None
            if g.init:
                alloc.host[:len(g.init)] = np.frombuffer(bytes(g.init), dtype=np.uint8)
            self._symbols[g.name] = (alloc, g)

    def get_function(self, name: str) -> "RawKernel":
        """The kernel `name` as a RawKernel (compiled on first use); KeyError lists the kernels."""
        name = self._instance_name(name)
        k = self._kernels.get(name)
        if k is None:
            self._kernel(name)
            k = self._kernels[name] = RawKernel(self, name)
        return k

    def _kernel(self, name: str):
        """The IR of the kernel `name`; KeyError lists the kernels."""
        try:
            return self.module.kernel(name)
        except KeyError:
            raise KeyError(f"no __global__ function named {name!r} "
                           f"(kernels: {self._kernel_names()})") from None

    def _kernel_names(self) -> str:
        return ", ".join(f.name for f in self.module.kernels) or "none"

    def get_global(self, symbol: str) -> DeviceArray:
        """A device array over a __constant__ or __device__ symbol."""
        try:
            alloc, g = self._symbols[symbol]
        except KeyError:
            raise KeyError(f"no __device__ or __constant__ symbol named {symbol!r}") from None
        t, shape = g.type, []
        while isinstance(t, ir.ArrayType):
            shape.append(t.count or 0)
            t = t.elem
        if isinstance(t, ir.VectorType):
            shape.append(t.count)
        try:
            dt = numpy_dtype(t)
        except (TypeError, KeyError):
            dt = np.dtype(np.uint8)
            shape = [g.type.size]
        return DeviceArray(alloc, tuple(shape), dt)


@dataclass
class Launch:
    """What one launch did: counters, findings, timing."""
    kernel: str
    grid: tuple
    block: tuple
    shared_mem: int
    stats: dict = field(default_factory=dict)
    stats_by_line: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)
    seconds: float = 0.0
    compile_seconds: float = 0.0
    printed: str = ""        # the kernel's printf output (also written to stdout)
    arch: str = ""
    source: str = field(default="", repr=False)       # the kernel's source text
    filename: str = ""
    # per (space, stats_by_line key): the costliest warp request of the line
    # (gpuemu/memory/worst_requests.py) and the memory rules that priced it
    worst_requests: dict = field(default_factory=dict, repr=False)
    memory_config: object = field(default=None, repr=False)
    timing: object = None      # mode="timing": a gpuemu.timing TimingReport
    # the modelled GPU time on the host timeline (gpuemu/host/streams.py):
    # start, end, seconds (cycles at the SM clock + managed page faults), stream
    timeline: dict = field(default_factory=dict)

    def __getstate__(self) -> dict:
        """Pickled and copied with its counters made (stats, stats_by_line and
        worst_requests are made when first read; vars() shows a placeholder,
        stats.Deferred, until then: dataclasses.asdict gives plain dicts)."""
        return made(self)

    def report(self, top: int = 3):
        """A Report of this launch (gpuemu/report/): counter tables and the source
        annotated line by line, costliest lines marked; print it, or call
        .to_dict(), .to_html() or .save_html(path)."""
        from .report import Report
        return Report.from_launch(self, top=top)


# made when first read (RawKernel._launch_of holds a Deferred until then)
Launch.stats = deferred_field("stats", """The launch's counters (DESIGN section 6 names), in a fixed
    order: every name of gpuemu.stats.COUNTERS in that order (0 where not
    counted), then the other counters in the order the machine first adds
    them (the memory model's, then the per-line ones), then
    active_lanes_per_instruction.""")
Launch.stats_by_line = deferred_field("stats_by_line", """The counters per source line (a line
    number, or "file:line" for an included file), lines ascending; a line
    holds the counters it counted.""")
Launch.worst_requests = deferred_field("worst_requests", """Per (space, stats_by_line key): the
    costliest warp request of the line (gpuemu/memory/worst_requests.py).""")
Launch.findings = deferred_field("findings", """What the launch found (gpuemu/machine/findings.py,
    the check tools'), in the order found.""")


def _totals_of(stats: Stats) -> dict:
    """launch.stats of a launch's Stats (Launch.stats says the order)."""
    st = stats.as_dict()
    wi = st["warp_instructions"]
    st["active_lanes_per_instruction"] = (st["thread_instructions"] / wi) if wi else 0.0
    return st


def _lines_of(stats: Stats, key) -> dict:
    """launch.stats_by_line: per line (key(row), else the row), lines ascending."""
    return {key(row) if key else row: c for row, c in stats.lines_dict().items()}


def _worst_of(worst, key) -> dict:
    """launch.worst_requests: per (space, line key) the kept request."""
    return {(sp, key(row) if key else row): w for (sp, row), w in worst.by_line.items()}


_LAUNCH_FIELDS = tuple(f.name for f in fields(Launch))
_new = object.__new__

# the counters of a launch with stats=False
NO_COUNTS = dict(Stats().as_dict(), active_lanes_per_instruction=0.0)
# launch.stats of such a launch: a fresh copy made when first read (one Deferred
# serves every launch: it holds nothing of any)
_NO_COUNTS_LATER = Deferred(dict, NO_COUNTS)
# its stats_by_line and worst_requests, and worst_requests of any launch without
# a memory model: a fresh empty dict made when first read (no two dicts made per launch)
_EMPTY_LATER = Deferred(dict)
# the findings of a launch that found nothing: a fresh empty list made when first read
_NONE_FOUND_LATER = Deferred(list)

# Launch keywords handed to the machine / memory system besides budget,
# stats and scheduler: l1 (False: global loads bypass L1, as -dlcm=cg; True:
# cached in L1, as -dlcm=ca; default: the module's -dlcm option, else the preset's),
# bank_mode (4 or 8 bytes on cc3.x), seed (seeded-random choices),
# enable_cooperative_groups (accepted for CuPy compatibility, unused),
# workers (blocks on N host threads: gpuemu/machine/block_workers.py; default
# $GPUEMU_WORKERS or 1), progress (a callable given the blocks each batch ran),
# check: True or a list of tools ("race", "memcheck", "initcheck", "synccheck";
# gpuemu/check/) whose findings land in launch.findings; memory_model: "weak"
# lets global stores reach other blocks late unless fenced (gpuemu/machine/weak_memory.py).
LAUNCH_OPTIONS = frozenset({"l1", "bank_mode", "seed", "enable_cooperative_groups", "workers",
                            "progress", "check", "memory_model"})


def _worded_asserts(err: "KernelError", strings: list) -> "KernelError":
    """A failed assert's finding says the condition, as CUDA's message does."""
    for f in err.findings:
        tid = f.extra.get("text_id") if f.kind == "assert" else None
        if tid is not None and 0 <= tid < len(strings):
            f.message = f"Assertion `{strings[tid]}` failed"
    return KernelError(err.findings)


def _check_local_frame(kernel: "RawKernel") -> None:
    """The front end caps each function's own local variables; the device
    functions inlined into a kernel add theirs to its frame, which must fit the
    preset's local memory per thread as well (Guide: 512 KB from cc 2.0)."""
    limit = kernel.module.preset.max_local_bytes
    need = kernel.compiled.meta.local_stride
    if need > limit:
        mod, loc = kernel.module, kernel.kernel_ir.loc
        lines = mod.module.source.splitlines() if loc.file == mod.filename else []
        src = lines[loc.line - 1] if 0 < loc.line <= len(lines) else None
        raise CompileError(f"kernel '{kernel.name}' needs {need} bytes of local memory per thread with the "
                           f"device functions it calls; the limit is {limit} bytes ({limit // 1024} KB) "
                           f"per thread", loc, src)


def _check_param_space(kernel: "RawKernel") -> None:
    """A kernel's parameters are passed in constant memory, limited to the
    preset's max_param_bytes (Guide, "Function Parameters": 32,764 bytes on
    Volta and later with CUDA 12.1+, 4 KB before); nvcc refuses more with
    'Formal parameter space overflowed'. The CompileError points at the
    first parameter that does not fit."""
    limit = int(kernel.module.preset.max_param_bytes)
    end, first = 0, None
    for v in kernel.kernel_ir.params:
        end = -(-end // max(int(v.type.align), 1)) * max(int(v.type.align), 1) + int(v.type.size)
        if end > limit and first is None:
            first = v
    if first is not None:
        mod, loc = kernel.module, first.loc
        lines = mod.module.source.splitlines() if loc.file == mod.filename else []
        src = lines[loc.line - 1] if 0 < loc.line <= len(lines) else None
        raise CompileError(f"formal parameter space overflowed: kernel '{kernel.name}' needs {end} bytes "
                           f"of parameters, the limit is {limit} bytes on {mod.preset.name}; parameter "
                           f"'{first.name}' ({first.type}, {first.type.size} bytes) does not fit", loc, src)


def _vector_fast(vals: np.ndarray, elem: ir.ScalarType):
    """The bytes of a vector argument's values where numpy converts them all
    as RawKernel._scalar would each (integers that fit an integer element;
    bools, integers and floats for a float element); else None, and the
    values go one by one (wording the error)."""
    kind = vals.dtype.kind
    if elem.kind == "int" and kind in "biu":
        conv = vals.astype(numpy_dtype(elem))
        return conv.tobytes() if (conv == vals).all() else None
    if elem.kind == "float" and kind in "biuf":
        return vals.astype(numpy_dtype(elem)).tobytes()
    return None


REGISTER_ESTIMATE_SURE = 0.9   # the share of the register estimate a launch check relies on


class RawKernel:
    """One __global__ function of a RawModule; call it to launch."""
    _kept_launches = None           # launch_cache's kept runs, per call key, once one is kept
    _last_kept = None               # launch_cache.launch's: (key, its KeptLaunch) of the last kept launch
    _gate = None                    # launch_gate's native function, while armed

    def __init__(self, module, name: str, options: tuple = (), arch: str = "sm_90", **kwargs):
        _refuse_unknown_keywords("RawKernel", kwargs, ("module", "name", "options", "arch"))
        if isinstance(module, str):   # CuPy's RawKernel(code, name, options=...)
            module = RawModule(code=module, options=options, arch=arch)
            name = module._instance_name(name)
            module._kernels[name] = self
        elif not isinstance(module, RawModule):
            raise TypeError(f"RawKernel takes CUDA C source (a str) or a RawModule, "
                            f"got {type(module).__name__}")
        self.module, self.name = module, name
        self.kernel_ir = module._kernel(name)
        _check_param_space(self)
        self.compiled = compile_kernel(module.module, name, module.arch, module.options)
        _check_local_frame(self)
        self._max_dynamic = None
        self._last_call = None      # launch_cache.call_key's: the parts and key of the last plain call
                                    # (__call__ reads it: a call of the very same parts has that key)
        self._preferred_carveout = None

    @property
    def preferred_carveout(self):
        """The L1/shared carve-out preference timing mode's occupancy uses, as
        cudaFuncSetCacheConfig / cudaFuncAttributePreferredSharedMemoryCarveout
        set it: None (the default), a percent 0..100 or 'prefer_shared' /
        'prefer_l1' / 'prefer_equal' (gpuemu/machine/occupancy.py); another
        value is a LaunchError when set."""
        return self._preferred_carveout

    @preferred_carveout.setter
    def preferred_carveout(self, carveout) -> None:
        self._check_carveout(carveout)
        self._preferred_carveout = carveout

    def _check_carveout(self, carveout) -> None:
        """A LaunchError naming a carve-out the preset cannot take."""
        if carveout is not None:
            from .machine.occupancy import carveout_bytes
            try:
                carveout_bytes(self.module.preset, carveout)
            except ValueError as e:
                raise LaunchError(f"carveout: {e}") from None

    @property
    def meta(self):
        """The compiled kernel's metadata: parameters, shared sizes, memory instructions, lines."""
        return self.compiled.meta

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """Dynamic shared memory a launch may ask for (CuPy's attribute of the
        same name, cudaFuncAttributeMaxDynamicSharedMemorySize). Defaults to
        what fits in the preset's 48 KB per block; set it higher, up to the
        opt-in limit less the static shared memory, to launch with more."""
        if self._max_dynamic is not None:
            return self._max_dynamic
        return max(self.module.preset.max_shared_per_block - self.meta.static_shared, 0)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, nbytes: int) -> None:
        preset = self.module.preset
        room = preset.max_shared_per_block_optin - self.meta.static_shared
        if not isinstance(nbytes, numbers.Integral) or not 0 <= nbytes <= room:
            raise LaunchError(f"max_dynamic_shared_size_bytes must be 0..{room} on {preset.name} "
                              f"(opt-in limit {preset.max_shared_per_block_optin} bytes less "
                              f"{self.meta.static_shared} static), got {nbytes!r}")
        self._max_dynamic = int(nbytes)
        launch_gate.forget(self)    # armed for a call under the old limit

    @property
    def registers(self):
        """The register estimate (isa/register_estimate.py): demand, count, cap, spills."""
        if getattr(self, "_registers", None) is None:
            from isa.register_estimate import estimate_registers
            self._registers = estimate_registers(self.kernel_ir, self.module.preset, self.module.options)
        return self._registers

    @property
    def num_regs(self) -> int:
        """Registers per thread, as CuPy's RawKernel.num_regs (estimated from the IR)."""
        return self.registers.count

    def occupancy(self, block, shared_mem: int = 0, carveout=None):
        """Occupancy of a launch with this block shape and dynamic shared memory,
        as the CUDA occupancy calculator gives it (gpuemu/machine/occupancy.py)."""
        from .machine.occupancy import kernel_occupancy
        from .machine.launch_config import check_launch
        # a block or shared memory a launch would refuse has no occupancy (a LaunchError as
        # the launch's); the calculator takes any shared memory the kernel may opt in to
        shape = check_launch(self.module.preset, 1, block, self.meta.static_shared, shared_mem,
                             self.meta.launch_bounds, max_dynamic_shared=float("inf"))
        self._check_carveout(carveout)
        return kernel_occupancy(self.module.preset, shape.threads_per_block, self.num_regs,
                                self.meta.static_shared, shared_mem, carveout, self.meta.launch_bounds)

    def _pack(self, args) -> tuple:
        meta = self.meta
        if not isinstance(args, (tuple, list)):
            raise LaunchError(f"kernel arguments must be a tuple, got {type(args).__name__}")
        if len(args) != len(meta.params):
            raise LaunchError(f"kernel '{self.name}' takes {len(meta.params)} arguments, "
                              f"got {len(args)}")
        buf = np.zeros(max(meta.param_bytes, 8), dtype=np.uint8)
        copies, keep, arrays, at = [], [], [], []
        for i, ((pname, t, off), a) in enumerate(zip(meta.params, args)):
            where = f"argument {i} ('{pname}', {t})"
            if isinstance(t, ir.PointerType):
                if isinstance(a, DeviceArray):
                    v = a.ptr
                elif isinstance(a, np.ndarray) and a.ndim > 0:
                    numpy_arguments.check_dtype(a.dtype, t, where)
                    arrays.append((a, where))      # its device pointer written below
                    at.append(off)
                    continue
                elif a is None or (isinstance(a, numbers.Integral) and not isinstance(a, bool) and a == 0):
                    v = 0
                else:
                    raise LaunchError(f"{where} is a pointer: pass a DeviceArray or a numpy array, "
                                      f"got {type(a).__name__}")
                buf[off:off + 8] = np.frombuffer(np.uint64(v).tobytes(), dtype=np.uint8)
            elif isinstance(t, ir.ScalarType):
                if isinstance(a, Texture):        # a cudaTextureObject_t parameter
                    a = a.handle
                buf[off:off + t.size] = np.frombuffer(self._scalar(a, t, where), dtype=np.uint8)
            elif isinstance(t, ir.VectorType):
                try:
                    vals = np.asarray(a.get() if isinstance(a, DeviceArray) else a)
                except (TypeError, ValueError):     # ragged, or not a sequence numpy reads
                    raise LaunchError(f"{where} needs {t.count} values, got {a!r}") from None
                if vals.size != t.count:
                    raise LaunchError(f"{where} needs {t.count} values, got {vals.size}")
                raw = _vector_fast(vals, t.elem)
                if raw is None:     # each value as a scalar argument: no silent wrap or truncation
                    raw = b"".join(self._scalar(v, t.elem, f"{where} value {j}")
                                   for j, v in enumerate(vals.reshape(-1)))
                buf[off:off + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
            else:   # struct by value: raw bytes of the C layout
                raw = a.tobytes() if hasattr(a, "tobytes") else bytes(a) if isinstance(a, (bytes, bytearray)) else None
                if raw is None or len(raw) != t.size:
                    raise LaunchError(f"{where} is a struct of {t.size} bytes: pass a numpy "
                                      f"structured scalar or bytes of that size")
                buf[off:off + t.size] = np.frombuffer(raw, dtype=np.uint8)
        if arrays:      # (arrays sharing memory share one device copy)
            ptrs, copies = numpy_arguments.copy_in(arrays)
            keep = [c.dev for c in copies]
            for off, v in zip(at, ptrs):
                buf[off:off + 8] = np.frombuffer(np.uint64(v).tobytes(), dtype=np.uint8)
        return buf, copies, keep

    @staticmethod
    def _scalar(a, t: ir.ScalarType, where: str) -> bytes:
        dt = numpy_dtype(t)
        if isinstance(a, np.ndarray) and a.ndim == 0:
            a = a[()]
        if isinstance(a, (DeviceArray, np.ndarray, list, tuple)):
            raise LaunchError(f"{where} is a scalar, got {type(a).__name__}")
        if isinstance(a, np.generic):   # by the Python rules below, as the number it holds
            if isinstance(a, np.bool_):
                a = bool(a)
            elif isinstance(a, np.integer) and not isinstance(a, np.timedelta64):
                a = int(a)
            elif isinstance(a, np.floating):
                a = float(a)
            else:                       # complex, datetime, str, void
                raise LaunchError(f"{where}: cannot convert {type(a).__name__}")
        if isinstance(a, bool):
            return np.array(int(a)).astype(dt).tobytes()
        if isinstance(a, numbers.Integral):
            if t.kind == "int":
                lo = -(1 << (t.bits - 1)) if t.signed else 0
                hi = (1 << t.bits) - 1 if not t.signed else (1 << (t.bits - 1)) - 1
                if not lo <= int(a) <= hi:
                    raise LaunchError(f"{where}: value {_short(a)} does not fit in {t}")
            elif t.kind == "float":
                try:
                    float(a)
                except OverflowError:
                    raise LaunchError(f"{where}: value {_short(a)} does not fit in {t}") from None
            return np.array(int(a)).astype(dt).tobytes()
        if isinstance(a, numbers.Real):
            if t.kind == "int":
                raise LaunchError(f"{where} is an integer, got the float {a!r}")
            return np.array(float(a)).astype(dt).tobytes()
        raise LaunchError(f"{where} is a scalar, got {type(a).__name__}")

    def _check_call(self, mode, grid, block, shared_mem, budget, options) -> tuple:
        """(checked launch shape, check tools) of a launch call, or the
        LaunchError naming what is wrong (launch_plan.checked_call remembers
        the answer for calls like this one)."""
        if mode not in ("functional", "timing"):
            raise LaunchError(f"mode must be 'functional' or 'timing', got {mode!r}")
        unknown = set(options) - LAUNCH_OPTIONS
        if unknown:
            raise LaunchError(f"unknown launch option(s) {', '.join(sorted(unknown))}; known: "
                              f"budget, stats, scheduler, {', '.join(sorted(LAUNCH_OPTIONS))}")
        shape = launch_plan.checked_shape(self, grid, block, shared_mem)
        self._check_registers(shape.threads_per_block)
        if not isinstance(budget, numbers.Integral) or not 1 <= budget <= MAX_BUDGET:
            raise LaunchError(f"budget must be a positive int of at most 2**63 - 1 (loop iterations "
                              f"per warp), got {_short(budget) if isinstance(budget, int) else repr(budget)}")
        w = options.get("workers")
        if w is not None and (isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1):
            raise LaunchError(f"workers must be a positive int, got {w!r}")
        if w is not None and w > block_workers.MAX_WORKERS:
            raise block_workers.too_many_workers(w, "workers")
        try:
            if parse_memory_model(options.get("memory_model")) and mode == "timing":
                raise ValueError("memory_model='weak' runs in functional mode only, not timing mode")
        except ValueError as e:
            raise LaunchError(str(e)) from None
        try:
            tools = parse_check(options.get("check"))
        except ValueError as e:
            raise LaunchError(str(e)) from None
        if options:
            self._check_options(options)
        return shape, tools

    def _check_registers(self, threads: int) -> None:
        """A LaunchError where one block's registers exceed the register file a
        block may use: CUDA fails such a launch with cudaErrorLaunchOutOfResources
        ('too many resources requested for launch'; Programming Guide, Compute
        Capabilities table: 64 K 32-bit registers per thread block), counted per
        warp as the occupancy calculator counts them (machine/occupancy.py)."""
        from .machine.occupancy import blocks_limited_by_registers
        preset = self.module.preset
        regs = self.num_regs
        # the estimate (isa/register_estimate.py) runs a few percent above
        # ptxas's (132 against nvcc -Xptxas -v's 126, 109 against 106): a
        # block is refused only where it would not fit with 10% fewer, so no
        # launch CUDA runs is refused on the estimate's error
        if blocks_limited_by_registers(preset, threads, int(regs * REGISTER_ESTIMATE_SURE)) == 0:
            most = next((t for t in range(threads - threads % preset.warp_size, 0, -preset.warp_size)
                         if blocks_limited_by_registers(preset, t, int(regs * REGISTER_ESTIMATE_SURE))), 0)
            limit = int(getattr(preset, "registers_per_block", None) or preset.registers_per_sm)
            raise LaunchError(f"too many resources requested for launch: kernel '{self.name}' uses "
                              f"{regs} registers per thread (estimated), {threads} threads per block "
                              f"need {regs * threads} registers; {preset.name} has {limit} registers "
                              f"per block (this kernel: at most {most} threads per block; cap its "
                              f"registers with __launch_bounds__ or -maxrregcount)")

    def _check_options(self, options: dict) -> None:
        """A LaunchError naming a launch option whose value it does not take."""
        seed = options.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)
                                 or seed < 0):
            # (numpy.random.default_rng's seeds: non-negative ints)
            raise LaunchError(f"seed must be a non-negative int or None, got {seed!r}")
        progress = options.get("progress")
        if progress is not None and not callable(progress):
            raise LaunchError(f"progress must be a callable (given the blocks each batch ran) "
                              f"or None, got {progress!r}")
        for name in ("l1", "enable_cooperative_groups"):
            v = options.get(name)
            if v is not None and type(v) is not bool and type(v) is not np.bool_:
                raise LaunchError(f"{name} must be True, False or None, got {v!r}")
        bank = options.get("bank_mode")
        if bank is not None:
            preset = self.module.preset
            modes = sorted(preset.mem.shared_bank_modes)
            if isinstance(bank, bool) or not isinstance(bank, numbers.Integral) or bank not in modes:
                raise LaunchError(f"bank_mode must be one of the bank widths {preset.name} offers "
                                  f"({', '.join(map(str, modes)) or 'none: fixed 4-byte banks'}) "
                                  f"or None, got {bank!r}")

    def _check_schedulers(self, mode: str, scheduler, block_scheduler) -> None:
        """A LaunchError naming a warp or block scheduler the launch cannot use."""
        try:
            if scheduler is not None and mode == "timing":
                from .timing.warp_policies import get_policy
                get_policy(scheduler)
            elif scheduler is not None:
                from .machine.warp_scheduler import get_warp_scheduler
                if not callable(getattr(get_warp_scheduler(scheduler), "order", None)):
                    raise ValueError(f"a warp scheduler needs an order(ready) method: {scheduler!r}")
        except ValueError as e:
            raise LaunchError(f"scheduler: {e}") from None
        if block_scheduler is not None:     # (timing mode's; checked in either mode)
            from .timing.block_policy import get_block_policy
            try:
                policy = get_block_policy(block_scheduler)
            except ValueError as e:
                raise LaunchError(f"block_scheduler: {e}") from None
            if not (callable(getattr(policy, "pick_sm", None)) and callable(getattr(policy, "reset", None))):
                raise LaunchError(f"block_scheduler: a block scheduler needs reset(num_sms) and "
                                  f"pick_sm(free, resident) methods, got {block_scheduler!r}")

    def _check_placement(self, carveout, stream) -> None:
        """A LaunchError for a carve-out or stream the launch cannot use."""
        self._check_carveout(carveout)
        if stream is not None and not isinstance(stream, Stream):
            raise LaunchError(f"stream must be a gpuemu.Stream or None (the default stream), "
                              f"got {stream!r}")

    def __call__(self, grid, block, args, shared_mem: int = 0, *, budget: int = DEFAULT_BUDGET,
                 stats: bool = True, scheduler=None, mode: str = "functional",
                 block_scheduler=None, carveout=None, stream=None, **options) -> Launch:
        """Launch on the emulated GPU. mode="timing" also runs the cycle-level
        model (gpuemu/timing/): `scheduler` is then its warp scheduling policy,
        `block_scheduler` its block policy, `carveout` the L1/shared carve-out
        for occupancy (as cudaFuncSetCacheConfig / PreferredSharedMemoryCarveout;
        default: the kernel's `preferred_carveout`); the report is `launch.timing`.
        `stream`: a gpuemu.Stream for the host timeline (gpuemu/host/streams.py;
        default: the legacy default stream)."""
        if carveout is not None or stream is not None:     # (checked before the gate, which takes
            self._check_placement(carveout, stream)         # any carve-out)
        gate = self._gate           # a kept launch checked and run in one native call (launch_gate)
        if gate is not None:
            try:
                got = gate(grid, block, args, shared_mem, budget, stats, mode, scheduler,
                           block_scheduler, stream, options)
            except BaseException:   # (a failure inside it, its exception set: MemoryError)
                launch_gate.dead(self, gate)
                raise
            if got is not None:     # (else not the launch it was armed for: the Python path)
                return got if type(got) is not tuple else launch_gate.finish(self, gate, got)
        last = self._last_call      # a call of the very parts of the last plain call: its key
        if (last is not None and grid is last[0] and block is last[1] and stats is last[2]
                and shared_mem is last[3] and budget is last[4] and mode is last[5]
                and self._max_dynamic is last[6] and scheduler is None and block_scheduler is None
                and (launch_cache.one_worker(options) if last[7] else not options)):
            key = last[8]
        else:
            key = launch_cache.call_key(self, grid, block, shared_mem, budget, stats, mode,
                                        scheduler, block_scheduler, options)
        if key is not None:         # a plain launch like an earlier one: its kept run, if idle
            got = launch_cache.launch(self, key, args, stream, options)
            if got is not None:
                return got
        if stats is not True and stats is not False and type(stats) is not np.bool_:
            raise LaunchError(f"stats must be True or False, got {stats!r}")    # (a kept call's is a bool)
        shape, tools = launch_plan.checked_call(self, mode, grid, block, shared_mem, budget,
                                                options, self._check_call)
        if scheduler is not None or block_scheduler is not None:   # (such a call is never kept)
            self._check_schedulers(mode, scheduler, block_scheduler)
        mod = self.module
        meta = self.meta
        options.setdefault("l1", mod.l1_default)
        if "initcheck" not in tools:
            forget_args(args)
        params, copies, keep = launch_plan.pack(self, args)
        pbuf = printf_output.new_buffer() if self._uses_printf() else None
        if pbuf is not None:
            options = dict(options, printf_buffer=pbuf)
        timing = mode == "timing"
        if timing:
            run = LaunchRun(self.compiled, mod.preset, shape, params, mod.symbol_table,
                            device_memory(), budget=budget, stats=True, options=options)
        else:       # a prepared run of an earlier launch like this one, renewed
            run = launch_plan.take_run(self, shape, params, mod.symbol_table, device_memory(),
                                       budget, stats, scheduler, options)
        occ = (self.occupancy(block, shared_mem,
                              self.preferred_carveout if carveout is None else carveout)
               if timing else None)
        t0 = time.perf_counter()
        printed = ""
        report = None
        try:
            if timing:
                from .timing.timing_mode import time_launch
                res, report = time_launch(run, occ.active_blocks_per_sm, scheduler, block_scheduler)
            else:
                res = run.run()
        except KernelError as err:
            raise self._worded(err) from None
        finally:
            if pbuf is not None:   # printed even when the kernel fails (an assert), as CUDA does
                printed = printf_output.text(pbuf, int(run.ctx[abi.C_PRINTF_LEN]), shape.grid,
                                             mod.module.strings)
                sys.stdout.write(printed)
                sys.stdout.flush()
        seconds = time.perf_counter() - t0
        launch = self._launch_of(run, res.stats, res.findings, shape, seconds, stream, copies,
                                 printed, report)
        del keep
        if not launch_cache.keep(self, key, run):
            launch_plan.give_back(self, run)
        return launch

    def _worded(self, err: KernelError) -> KernelError:
        """A kernel's error as a launch raises it (failed asserts say their condition)."""
        return _worded_asserts(err, self.module.module.strings)

    def _launch_of(self, run, stats, findings, shape, seconds: float, stream, copies=(),
                   printed: str = "", report=None) -> Launch:
        """The Launch of a finished run (the one constructor of a launch's
        result, full path and kept path alike): its counters (per line keyed
        as meta.line_key keys them; stats None: a launch without counters,
        which models no time), findings and costliest requests, and its place
        on the host timeline; numpy arguments are copied back after it is
        placed there. The fields the kernel and shape fix are worked out once
        per run (_fixed_fields)."""
        try:
            fixed = run._launch_fields
        except AttributeError:
            fixed = run._launch_fields = self._fixed_fields(shape)
        out = fixed.copy()             # in Launch's field order; the per-launch ones set here
        ms = run.memsys                # (the others' defaults are in fixed: a launch's without counters)
        if stats is None and ms is None:    # no counters, no memory model
            out["timeline"] = place_kernel(self.name, 0.0, stream)   # no cycles: kernel_seconds is 0
        else:
            meta = self.compiled.meta
            key = meta.line_key if meta.line_files else None    # else a counter row is its line
            if stats is None:
                out["timeline"] = place_kernel(self.name, 0.0, stream)
            else:                      # the counter dicts made when first read (Launch.stats)
                out["stats"] = deferred(_totals_of, (stats,))
                out["stats_by_line"] = deferred(_lines_of, (stats, key))
                out["timeline"] = place_launch(self.name, stats, self.module.preset, stream)
            if ms is not None:
                # (a kept launch's end, launch_sums.Ended, holds its kept requests until read)
                out["worst_requests"] = deferred(_worst_of, (stats if type(stats) is Ended else ms.worst, key))
                out["memory_config"] = ms.mem
        if copies:                     # after the launch is placed
            numpy_arguments.copy_back(copies)
        if findings:                   # (else fixed's: an empty list made when first read)
            out["findings"] = list(findings)
        out["seconds"] = seconds
        if printed:
            out["printed"] = printed
        if report is not None:
            out["timing"] = report
        launch = _new(Launch)          # Launch(**out) without its __init__'s keyword parsing
        launch.__dict__ = out
        return launch

    def _fixed_fields(self, shape) -> dict:
        """A Launch's fields in field order: those the kernel and launch shape
        fix, the printed text, memory configuration and timing report their
        defaults, stats, stats_by_line and worst_requests a launch's without
        counters and findings a launch's that found nothing (each made when
        first read: a fresh dict or list per launch), the other per-launch
        ones None until _launch_of sets them."""
        mod = self.module
        got = dict.fromkeys(_LAUNCH_FIELDS)
        got.update(kernel=self.name, grid=shape.grid, block=shape.block,
                   shared_mem=shape.shared_dynamic, compile_seconds=self.compiled.meta.compile_seconds,
                   arch=mod.arch, source=mod.code, filename=mod.filename, printed="",
                   memory_config=None, timing=None, stats=_NO_COUNTS_LATER,
                   stats_by_line=_EMPTY_LATER, worst_requests=_EMPTY_LATER, findings=_NONE_FOUND_LATER)
        return got

    def _uses_printf(self) -> bool:
        if getattr(self, "_printf", None) is None:
            self._printf = printf_output.uses_printf(self.kernel_ir, self.module.module)
        return self._printf
