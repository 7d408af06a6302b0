"""llvmlite plumbing: one target machine and one MCJIT engine per process.

Kernels are compiled to object code (`emit_object`) and loaded with
`add_object_file`, so the same bytes can be stored in the disk cache and
loaded by a later process without recompiling.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import threading
import weakref

import llvmlite.binding as llvm

from .intrinsics_codegen import LIBM

_lock = threading.Lock()
_state: dict = {}
_init_lock = threading.Lock()


def _init() -> dict:
    """The process's target machine and engine, made once: threads that
    first compile at the same time share one (a second engine replacing
    the first between load_object's add and lookup lost the symbol)."""
    if _state:
        return _state
    with _interrupts_after(), _init_lock:
        if not _state:
            _state.update(_make())
    return _state


@contextlib.contextmanager
def _interrupts_after():
    """SIGINT (Ctrl-C) on the main thread waits until the block ended, then
    goes to the handler that was there before: a KeyboardInterrupt raised
    inside llvmlite can dispose an LLVM object twice (llvmlite 0.50's
    ObjectRef.detach is not interrupt-safe), aborting the process. Nothing
    is changed on other threads (signals reach the main thread only)."""
    # (a handler set outside Python, None here, could not be put back)
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield
        return
    got: list = []
    try:
        before = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    except ValueError:                   # (not the main interpreter)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
        if got:
            signal.raise_signal(signal.SIGINT)


def _make() -> dict:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    # no FMA contraction, no fast-math: fp-contract stays 'off' by default
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten(),
                                      opt=2, reloc="default", codemodel="jitdefault")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for names in LIBM.values():
        for n in names:
            try:
                llvm.add_symbol(n, ctypes.cast(getattr(libm, n), ctypes.c_void_p).value)
            except AttributeError:
                pass
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    return dict(tm=tm, engine=engine, triple=llvm.get_process_triple(),
                host=f"{llvm.get_host_cpu_name()}|{llvm.get_host_cpu_features().flatten()}")


def host_id() -> str:
    """Identifies the CPU the object code is built for (part of cache keys)."""
    return _init()["host"]


def triple() -> str:
    return _init()["triple"]


def has_feature(name: str) -> bool:
    """Whether the CPU the code is built for has feature `name` (LLVM's name: "avx")."""
    return f"+{name}" in _init()["host"].split("|", 1)[1].split(",")


# InstCombine sinks a value into the next block when that block alone uses
# it, one block per visit: a value made before a memory access and used after
# it (each access ends its block at the fault check) walks down a chain of
# accesses block by block, quadratic in the chain (a 1000-term sum of loads:
# 4.3 s of InstCombine, every partial sum sunk to the last block and kept
# live across all the calls). Modules longer than this many lines of IR are
# optimised without that sinking; shorter ones (every programs/*.cu kernel
# is under 14000) as before.
SINKING_LIMIT = 20000


def sinks(llvm_ir: str) -> bool:
    """Whether InstCombine may sink instructions while optimising this module."""
    return llvm_ir.count("\n") <= SINKING_LIMIT


def _set_sinking(st: dict, on: bool) -> None:
    """LLVM's option is process-wide: set under _lock, only when it changes."""
    if st.get("sinking", True) != on:
        llvm.set_option("", f"-instcombine-code-sinking={int(on)}")
        st["sinking"] = on


def optimise(llvm_ir: str):
    """The module parsed, verified and optimised (O2, no fast-math); the
    caller holds _lock."""
    st = _init()
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    _set_sinking(st, sinks(llvm_ir))
    pto = llvm.create_pipeline_tuning_options(speed_level=2)
    pb = llvm.create_pass_builder(st["tm"], pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def _with_optimised(llvm_ir: str, use):
    """use(the optimised module), all under _lock."""
    with _interrupts_after(), _lock:
        mod = None
        try:
            mod = optimise(llvm_ir)
            return use(mod)
        finally:
            # disposed under the lock: every call into LLVM is made holding
            # it, so a fork that waits for it (_before_fork) finds LLVM idle
            del mod


def optimised_ir(llvm_ir: str) -> str:
    """The text of the module as compile_to_object optimises it."""
    return _with_optimised(llvm_ir, str)


def compile_to_object(llvm_ir: str) -> bytes:
    """Optimise the module (O2, no fast-math) and return native object code."""
    return _with_optimised(llvm_ir, lambda mod: _init()["tm"].emit_object(mod))


def load_object(obj: bytes, symbol: str) -> int:
    """Load object code into the process; the address of `symbol`."""
    with _interrupts_after(), _lock:
        st = _init()
        st["engine"].add_object_file(llvm.ObjectFileRef.from_data(obj))
        st["engine"].finalize_object()
        return _lookup(st["engine"], symbol)


def _lookup(engine, symbol: str) -> int:
    addr = engine.get_function_address(symbol)
    if not addr:
        raise RuntimeError(f"symbol {symbol} not found in loaded object")
    return addr


_native_lock = threading.Lock()
_natives: dict = {}


_built: set = set()        # the build_ir functions whose module is loaded


def native_function(symbol: str, build_ir, prototype):
    """A helper of the machine written in LLVM IR (`build_ir()` -> module
    text defining `symbol`), compiled and loaded once per process, called
    through the ctypes `prototype` (which releases the GIL). Several
    symbols of one module (one `build_ir`) share its one compile and load
    (block_runner's range module: the range call and range_handout's two,
    some 0.15 s each)."""
    fn = _natives.get(symbol)
    if fn is None:
        with _native_lock:
            fn = _natives.get(symbol)
            if fn is None:
                if build_ir in _built:
                    addr = _address(symbol)
                else:
                    addr = load_object(compile_to_object(build_ir()), symbol)
                    _built.add(build_ir)
                fn = _natives[symbol] = prototype(addr)
    return fn


def _address(symbol: str) -> int:
    """The address of `symbol` in an object already loaded."""
    with _lock:
        return _lookup(_init()["engine"], symbol)


# Taken in this order (native_function holds _native_lock while it compiles,
# compile_to_object and load_object hold _lock while _init takes _init_lock).
_LOCKS = (_native_lock, _lock, _init_lock)


def _before_fork() -> None:
    """A fork waits for a compile or load in progress: the child gets these
    locks free (a lock held by a parent's thread stays held in the child,
    its next compile hung) and LLVM's state whole."""
    for lk in _LOCKS:
        lk.acquire()


def _after_fork() -> None:
    for lk in reversed(_LOCKS):
        lk.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof
_READ_ONLY: dict = {}      # id -> (weak ref, address): read-only arrays (kernel tables) seen


def _forget(key: int, ref) -> None:
    """A remembered read-only array died: its entry goes (unless its id was taken again)."""
    got = _READ_ONLY.get(key)
    if got is not None and got[0] is ref:
        del _READ_ONLY[key]


def address(a) -> int:
    """The address of a numpy array's first element, as `a.ctypes.data`
    gives it, for native calls: a read-only one (a kernel's tables, handed
    to every batch) remembered by a weak reference, found first; a
    C-contiguous writable array through ctypes' buffer view, a few times
    cheaper (numpy's .ctypes object costs microseconds, paid per array of
    every small batch); anything else as numpy gives it."""
    got = _READ_ONLY.get(id(a))
    if got is not None and got[0]() is a:
        return got[1]
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError):
        pass
    if a.flags.writeable or not a.flags.c_contiguous:
        return a.ctypes.data
    if len(_READ_ONLY) >= 1024:
        _READ_ONLY.clear()
    key = id(a)
    ref = weakref.ref(a, lambda r, key=key: _forget(key, r))
    addr = a.ctypes.data
    _READ_ONLY[key] = (ref, addr)       # another thread may clear the dict: not read back
    return addr
