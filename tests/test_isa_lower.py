"""Function lowering: the per-thread local frame a function's variables take."""
from __future__ import annotations

import pytest

import isa
from isa_ir_walk import compile_error


def test_local_array_over_512_kb_is_compile_error_at_its_declaration():
    e = compile_error("__global__ void k(int *p)\n{\n    int a[1 << 28];\n    a[5] = 1; p[0] = a[5];\n}\n")
    assert e.message == ("'a' needs 1073741824 bytes of local memory per thread; "
                         "the limit is 524288 bytes (512 KB) per thread")
    assert (e.line, e.col) == (3, 9) and str(e).splitlines()[2] == " " * 8 + "^"


def test_local_variables_over_512_kb_together_are_compile_error_at_the_one_past_the_limit():
    e = compile_error("__global__ void k(int *p)\n{\n    int a[100000];\n    float b[40000];\n"
                      "    a[5] = 1; b[0] = 2; p[0] = a[5] + b[0];\n}\n")
    assert e.message == ("local variables of 'k' need 560000 bytes per thread with 'b'; "
                         "the limit is 524288 bytes (512 KB) per thread")
    assert (e.line, e.col) == (4, 11)


def test_local_array_of_exactly_512_kb_compiles():
    m = isa.compile_source("__global__ void k(int *p) { int a[131072]; a[5] = 1; p[0] = a[5]; }")
    assert m.kernel("k").name == "k"


def test_device_function_local_array_over_the_limit_is_compile_error():
    e = compile_error("__device__ int f(int i) { double d[70000]; d[i] = i; return d[3]; }\n"
                      "__global__ void k(int *p) { p[0] = f(3); }\n")
    assert e.message.startswith("'d' needs 560000 bytes") and (e.line, e.col) == (1, 34)


def test_template_instance_local_array_over_the_limit_is_compile_error():
    import gpuemu
    src = "template <int N> __global__ void k(int *p) { int a[N]; a[5] = 1; p[0] = a[5]; }\n"
    with pytest.raises(isa.CompileError) as e:
        gpuemu.RawModule(code=src, name_expressions=("k<200000>",))
    assert e.value.message.startswith("'a' needs 800000 bytes") and e.value.col == 50


def test_limit_is_the_given_max_local_bytes():
    e = compile_error("__global__ void k(int *p) { int a[5000]; a[1] = 1; p[0] = a[1]; }",
                      max_local_bytes=16 * 1024)
    assert "the limit is 16384 bytes (16 KB)" in e.message


def test_local_arrays_of_sibling_scopes_share_the_limit():
    # nvcc -arch=sm_90 -Xptxas -v: "300000 bytes stack frame" (the branches' arrays overlap)
    m = isa.compile_source("__global__ void k(char *o, int c)\n{\n"
                           "    if (c) { char a[300000]; a[c] = 1; o[0] = a[c]; }\n"
                           "    else { char b[300000]; b[1] = 2; o[1] = b[1]; }\n}\n")
    assert m.kernel("k").name == "k"


def test_local_array_after_a_closed_scope_takes_its_memory():
    m = isa.compile_source("__global__ void k(char *o, int n)\n{\n"
                           "    for (int j = 0; j < n; j++) { char a[300000]; a[j] = 1; o[j] = a[j]; }\n"
                           "    char b[300000]; b[n] = 2; o[n] = b[n];\n}\n")
    assert m.kernel("k").name == "k"


def test_local_array_of_an_inner_scope_adds_to_the_enclosing_ones():
    # two 300000-byte arrays live at once: nvcc -Xptxas -v reports "600000 bytes stack frame"
    e = compile_error("__global__ void k(char *o, int c)\n{\n    char a[300000]; a[c] = 1;\n"
                      "    if (c) { char b[300000]; b[c] = 2; o[0] = a[c] + b[c]; }\n}\n")
    assert e.message == ("local variables of 'k' need 600000 bytes per thread with 'b'; "
                         "the limit is 524288 bytes (512 KB) per thread")
    assert (e.line, e.col) == (4, 19)
