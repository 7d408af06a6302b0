"""compile_kernel: IR kernel -> loaded native warp function plus metadata."""
from __future__ import annotations

import ctypes
import hashlib
import time
from pathlib import Path
from dataclasses import dataclass, field

import llvmlite.ir as ll

from isa import ir
from isa.diagnostics import CompileError
from isa.frontend import ensure_recursion_limit
from isa.register_spill import apply_register_cap
from gpuemu.arch import get_preset

from . import engine, gc_pause, kernel_cache
from .warp_codegen import WarpCodegen

VERSION = "0.1.0"
WARP_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)


@dataclass
class KernelMeta:
    """Everything the machine needs besides the code (picklable)."""
    name: str
    symbol: str
    params: list            # [(name, IR type, byte offset in the param buffer)]
    param_bytes: int
    frame_bytes: int
    local_offset: int
    local_stride: int
    static_shared: int
    dynamic_offset: int
    objects: list           # [(tag, name, space, lo, hi, dynamic)]
    instrs: list            # [MemInstr]
    nlines: int
    launch_bounds: tuple = None
    compile_seconds: float = 0.0
    line_files: dict = field(default_factory=dict)   # counter row -> (file, line) of an #include'd file

    def where(self, row: int) -> tuple:
        """(line, file or None, label) of a counter row: main-file rows are
        their own line numbers; rows of #include'd files map back here."""
        if row in self.line_files:
            file, line = self.line_files[row]
            return line, file, f"{file}:{line}"
        return row, None, f"line {row}"

    def line_key(self, row: int):
        """stats_by_line key: the line number in the main file, 'file:line' otherwise."""
        return self.where(row)[2] if row in self.line_files else row


@dataclass
class CompiledKernel:
    meta: KernelMeta
    address: int
    fn: object = field(repr=False)
    from_cache: str = "compiled"     # 'compiled' | 'memory' | 'disk'


def _jit_revision() -> str:
    """Hash of the JIT's own source: changing the code generator
    invalidates cached object code."""
    global _REVISION
    if _REVISION is None:
        h = hashlib.sha256()
        memory = Path(__file__).parent.parent / "memory"     # emitted into kernels too
        for p in sorted(Path(__file__).parent.glob("*.py")) + [memory / n for n in _EMITTED]:
            h.update(p.read_bytes())
        _REVISION = h.hexdigest()[:16]
    return _REVISION


_REVISION = None
# gpuemu/memory modules whose code the load/store helpers emit (jit/memory_access.py)
_EMITTED = ("warp_bank_counts.py", "request_table.py", "native_ir.py", "trace.py")


def _ir_key(module: ir.Module, kernel: ir.Function) -> str:
    glob = ";".join(f"{g.name}:{g.type}:{g.space}" for g in module.globals)
    return repr(kernel) + "|" + glob + "|" + module.filename


def compile_kernel(module: ir.Module, name: str, arch: str = "sm_90",
                   options: tuple = (), use_cache: bool = True) -> CompiledKernel:
    """Compile (or fetch from cache) kernel `name` of an IR module."""
    ensure_recursion_limit()        # deeply nested expressions (raised only: threads compile at once)
    try:
        return _compile_kernel(module, name, arch, options, use_cache)
    except RecursionError:          # the front end bounds nesting (isa/nesting.py): a last guard
        loc = module.kernel(name).loc
        lines = module.source.splitlines()
        raise CompileError(f"kernel '{name}' nests too deeply to compile", loc,
                           lines[loc.line - 1] if 0 < loc.line <= len(lines) else None) from None


def _compile_kernel(module, name, arch, options, use_cache) -> CompiledKernel:
    kernel = module.kernel(name)
    # values beyond the register cap live in local memory (isa/register_spill.py)
    kernel = apply_register_cap(kernel, get_preset(arch), options)[0]
    key = kernel_cache.make_key(VERSION, _jit_revision(), arch, repr(tuple(options)), name,
                                engine.host_id(), _ir_key(module, kernel))
    if use_cache:
        hit = kernel_cache.memory_get(key)
        if hit is not None:
            return CompiledKernel(hit.meta, hit.address, hit.fn, "memory")
        disk = kernel_cache.disk_get(key)
        if disk is not None:
            obj, meta = disk
            addr = engine.load_object(obj, meta.symbol)
            ck = CompiledKernel(meta, addr, WARP_FN(addr), "disk")
            kernel_cache.memory_put(key, ck)
            return ck
    t0 = time.perf_counter()
    symbol = f"gpuemu_{name}_{key[:16]}"
    llmod = ll.Module(name=f"gpuemu_{name}")
    llmod.triple = engine.triple()
    try:
        its = bool(getattr(get_preset(arch), "independent_thread_scheduling", True))
        with gc_pause.paused():
            cg = WarpCodegen(module, kernel, llmod, symbol, its=its).build()
            text = str(llmod)
        obj = engine.compile_to_object(text)
    except CompileError:
        raise
    except Exception as e:  # a construct the JIT does not handle: a diagnostic, not a traceback
        lines = module.source.splitlines()
        ln = kernel.loc.line
        raise CompileError(f"the JIT cannot compile kernel '{name}' ({type(e).__name__}: {e})",
                           kernel.loc, lines[ln - 1] if 0 < ln <= len(lines) else None) from e
    st = cg.st
    meta = KernelMeta(
        name=name, symbol=symbol, params=cg.param_layout, param_bytes=cg.param_bytes,
        frame_bytes=st.frame_bytes, local_offset=st.local_offset, local_stride=st.local_stride,
        static_shared=st.static_shared, dynamic_offset=st.dynamic_offset,
        objects=[(o.tag, o.name, o.space, o.lo, o.hi, o.dynamic) for o in st.objects],
        instrs=list(cg.instrs), nlines=cg.nlines, launch_bounds=kernel.launch_bounds,
        line_files=dict(cg.line_files))
    addr = engine.load_object(obj, symbol)
    meta.compile_seconds = time.perf_counter() - t0
    ck = CompiledKernel(meta, addr, WARP_FN(addr), "compiled")
    if use_cache:
        kernel_cache.memory_put(key, ck)
        kernel_cache.disk_put(key, obj, meta)
    return ck
