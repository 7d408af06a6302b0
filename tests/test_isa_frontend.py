"""isa.compile_source: the one entry point, its arguments and its result."""
from __future__ import annotations

import pytest

import isa
from isa import ir
from isa.frontend import arch_number
from isa_ir_walk import compile_error


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


def test_a_compile_that_ends_leaves_room_for_one_still_parsing_in_another_thread(monkeypatch):
    # thread A (a small kernel) starts, thread B (a 900-term expression) starts,
    # A ends, then B parses: A must not have put the process's recursion limit back
    import sys
    import threading
    import isa.frontend as fe
    deep = "__global__ void d(float *y, const float *x) { y[0] = x[0]%s; }" % (" + x[0]" * 900)
    small = "__global__ void s(float *y) { y[0] = 1.0f; }"
    a_in, a_go, b_in, b_go = (threading.Event() for _ in range(4))
    real_parse = fe.parse

    def parse(pp):
        if "void s(" in pp.text:
            a_in.set()
            a_go.wait(30)
        else:
            b_in.set()
            b_go.wait(30)
        return real_parse(pp)

    monkeypatch.setattr(fe, "parse", parse)
    got = {}

    def compile_(key, src):
        try:
            got[key] = isa.compile_source(src)
        except Exception as e:      # noqa: BLE001 (the outcome is what the test reads)
            got[key] = e

    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        a = threading.Thread(target=compile_, args=("a", small))
        a.start()
        assert a_in.wait(30)
        b = threading.Thread(target=compile_, args=("b", deep))
        b.start()
        assert b_in.wait(30)
        a_go.set()
        a.join(30)
        b_go.set()
        b.join(60)
    finally:
        sys.setrecursionlimit(max(before, sys.getrecursionlimit()))
    assert isinstance(got["a"], ir.Module)
    assert isinstance(got["b"], ir.Module), got["b"]


DEEP = 'extern "C" __global__ void k(int *a)\n{\n    a[0] = 1;\n    a[0] = %s;\n}\n'


def test_expression_too_deep_to_lower_is_refused_at_its_statement():
    # 10,000 terms recurse past the front end's 20,000 frames while lowering
    e = compile_error(DEEP % "+".join(["a[1]"] * 10000))
    assert e.message == "expression or statement nesting too deep" and (e.line, e.col) == (4, 5)
    assert e.source_line.startswith("    a[0] = a[1]+a[1]")


def test_ir_nesting_past_the_limit_is_refused_at_its_statement():
    # each subscript is four IR levels (load, pointer add, multiply, widen): 1,001 are 4,005
    from isa.nesting import MAX_IR_DEPTH
    e = compile_error(DEEP % ("a[" * 1001 + "0" + "]" * 1001))
    assert e.message == f"expression or statement nesting too deep (more than {MAX_IR_DEPTH} levels)"
    assert (e.line, e.col) == (4, 5)


def test_blocks_nested_past_the_limit_are_refused_at_the_block_crossing_it():
    e = compile_error('__global__ void k(int *a)\n{\n' + "{" * 4100 + "a[0] = 1;" + "}" * 4100 + "\n}\n")
    assert e.message.startswith("expression or statement nesting too deep") and e.line == 3 and e.col == 4000


def test_expression_too_deep_to_parse_is_refused_at_its_statement():
    # 20,000 terms recurse past the limit while the syntax tree is built, before lowering
    e = compile_error(DEEP % "+".join(["1"] * 20000))
    assert e.message == "expression or statement nesting too deep" and (e.line, e.col) == (4, 5)
