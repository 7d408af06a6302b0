"""Threads that compile their first kernels at the same time share one JIT
engine, and each gets its kernel (a second engine made meanwhile replaced
the first between loading an object and finding its symbol)."""
import subprocess
import sys
import textwrap
from pathlib import Path

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
