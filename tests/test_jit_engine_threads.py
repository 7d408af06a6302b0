"""Threads that compile their first kernels at the same time share one JIT
engine, and each gets its kernel (a second engine made meanwhile replaced
the first between loading an object and finding its symbol)."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process (the engine is made once per process): engine creation
# slowed down, so threads asking at once all ask before the first is made.
SCRIPT = textwrap.dedent("""
    import sys, threading, time
    sys.path.insert(0, {root!r})
    import llvmlite.binding as llvm
    import gpuemu
    from gpuemu.jit import engine
    made = []
    real = llvm.create_mcjit_compiler

    def slow(*a, **k):
        time.sleep(0.2)
        made.append(1)
        return real(*a, **k)

    llvm.create_mcjit_compiler = slow
    bar = threading.Barrier(4)
    errors = []

    def body():
        bar.wait()
        try:
            gpuemu.RawModule(path={path!r}).get_function("vecadd")
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=body) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(len(made), errors)
""")


def test_threads_compiling_at_once_share_one_engine_and_all_get_their_kernel(tmp_path):
    script = SCRIPT.format(root=str(ROOT), path=str(ROOT / "programs" / "vecadd.cu"))
    env = {"GPUEMU_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 []"


@pytest.mark.parametrize("name", ["_lock", "_init_lock", "_native_lock"])
def test_a_child_forked_during_a_compile_finds_the_engine_s_locks_free(name):
    from fork_check import child_finds_free
    from gpuemu.jit import engine
    assert child_finds_free(getattr(engine, name))


def test_every_call_into_llvm_of_a_compile_and_load_is_made_holding_the_engine_s_lock():
    # a fork waits for the engine's lock (not for llvmlite's own): LLVM used
    # outside it (an object disposed after it was let go) left the child's
    # llvmlite lock held, its first compile hung
    import gc
    import llvmlite.binding as llvm
    from gpuemu.jit import engine
    engine.host_id()                                    # (the engine made beforehand)
    gc.collect()
    held = []
    acq = lambda: held.append(engine._lock.locked())
    rel = lambda: None
    ir = 'define i32 @seven() {\n  ret i32 7\n}\n'
    llvm.ffi.register_lock_callback(acq, rel)
    try:
        engine.load_object(engine.compile_to_object(ir), "seven")
    finally:
        llvm.ffi.unregister_lock_callback(acq, rel)
    assert held and all(held)


def test_ctrl_c_during_a_compile_is_raised_after_it_outside_llvmlite(ctrl_c_raises):
    # a KeyboardInterrupt raised inside llvmlite could dispose an LLVM object
    # twice (ObjectRef.detach is not interrupt-safe): the process aborted
    import signal
    import llvmlite.binding as llvm
    from gpuemu.jit import engine
    engine.host_id()                                    # (the engine made beforehand)
    handler = signal.getsignal(signal.SIGINT)
    sent = []

    def ctrl_c():                                       # on the first call into LLVM
        if not sent:
            sent.append(1)
            signal.raise_signal(signal.SIGINT)
    rel = lambda: None
    llvm.ffi.register_lock_callback(ctrl_c, rel)
    try:
        with pytest.raises(KeyboardInterrupt) as got:
            engine.compile_to_object('define i32 @eight() {\n  ret i32 8\n}\n')
    finally:
        llvm.ffi.unregister_lock_callback(ctrl_c, rel)
    assert sent and not any("llvmlite" in str(entry.path) for entry in got.traceback)
    assert signal.getsignal(signal.SIGINT) is handler
