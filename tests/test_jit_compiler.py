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
