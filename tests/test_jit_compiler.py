"""gpuemu.jit.compiler.compile_kernel: its effects on the process."""
import sys

import isa
from gpuemu.jit.compiler import compile_kernel


def test_compile_kernel_never_lowers_the_recursion_limit_a_concurrent_compile_needs():
    # the limit is process-wide: putting back the one it found would leave another
    # thread's compile, parsing a deep expression meanwhile, without room
    module = isa.compile_source("__global__ void k(float *y) { y[threadIdx.x] = 1.0f; }")
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        compile_kernel(module, "k")
        after = sys.getrecursionlimit()
    finally:
        sys.setrecursionlimit(max(before, sys.getrecursionlimit()))
    assert after >= 20000


def test_a_kernel_at_the_nesting_limit_gets_its_cache_key():
    # the key is the IR's repr, a recursive walk: isa/nesting.py's limit keeps it inside
    # the recursion limit compile_kernel sets (999 subscripts: 3,997 IR levels)
    from gpuemu.jit.compiler import _ir_key
    from isa.frontend import ensure_recursion_limit
    src = "__global__ void k(int *a) { a[0] = " + "a[" * 999 + "0" + "]" * 999 + "; }"
    module = isa.compile_source(src)
    ensure_recursion_limit()
    assert _ir_key(module, module.kernel("k")).startswith("Function(")


def test_a_recursion_error_in_compile_kernel_is_a_compile_error(monkeypatch):
    import pytest
    import gpuemu.jit.compiler as jc

    def too_deep(module, kernel):
        raise RecursionError("maximum recursion depth exceeded")
    module = isa.compile_source("__global__ void k(float *y) {\n  y[0] = 1.0f;\n}")
    monkeypatch.setattr(jc, "_ir_key", too_deep)
    with pytest.raises(isa.CompileError) as e:
        compile_kernel(module, "k", use_cache=False)
    assert e.value.message == "kernel 'k' nests too deeply to compile" and e.value.line == 1
