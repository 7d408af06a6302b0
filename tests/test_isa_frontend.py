"""isa.compile_source: the one entry point, its arguments and its result."""
from __future__ import annotations

import pytest

import isa
from isa import ir
from isa.frontend import arch_number


def test_module_keeps_source_and_filename():
    src = "__global__ void k(int *p) { p[0] = 1; }\n"
    m = isa.compile_source(src, "mine.cu")
    assert m.source == src and m.filename == "mine.cu" and [k.name for k in m.kernels] == ["k"]


def test_device_functions_are_functions_not_kernels():
    m = isa.compile_source("__device__ int f(int x) { return x; }\n__global__ void k(int *p) { p[0] = f(1); }")
    assert [(f.name, f.is_kernel) for f in m.functions] == [("f", False), ("k", True)]


def test_host_only_functions_are_not_in_the_module():
    m = isa.compile_source("int host_helper(int x) { return x; }\n__global__ void k(int *p) { }")
    assert [f.name for f in m.functions] == ["k"]


def test_host_device_function_is_compiled():
    m = isa.compile_source("__host__ __device__ int f(int x) { return 2 * x; }\n__global__ void k(int *p) { p[0] = f(3); }")
    assert "f" in [f.name for f in m.functions]


@pytest.mark.parametrize("arch,num", [(900, 900), ("sm_90", 900), ("sm_52", 520), ("compute_80", 800),
                                      ("sm_90a", 900), (None, None), ("cc2x", None)])
def test_arch_number(arch, num):
    assert arch_number(arch) == num


def test_arch_string_sets_cuda_arch():
    m = isa.compile_source("__global__ void k(int *p) { p[0] = __CUDA_ARCH__; }", arch="sm_80")
    st = [s for s in m.kernel("k").body.stmts if isinstance(s, ir.ExprStmt)][0]
    assert st.expr.value.value == 800


def test_compile_error_is_exported():
    assert isa.CompileError is isa.diagnostics.CompileError


def test_very_long_expression_compiles():
    src = "__global__ void k(int *p) { p[0] = " + " + ".join(f"p[{i}]" for i in range(1500)) + "; }"
    assert isa.compile_source(src).kernel("k").body is not None
