"""constexpr functions in constant expressions (isa/constexpr_eval.py): array
sizes, template arguments, case labels and constexpr variables call them at
compile time, as nvcc does; every accepted kernel is also compiled by nvcc
(where it is on the PATH)."""
from __future__ import annotations

from isa_ir_walk import NVCC, compile_error, nvcc_result, run

SQ = "__device__ constexpr int sq(int x) { return x * x; }\n"


def test_constexpr_call_as_an_array_size(tmp_path):
    src = SQ + "__global__ void k(int *o) { int a[sq(2)]; a[0] = 1; o[threadIdx.x] = sizeof(a) + a[0]; }\n"
    assert list(run(src, tmp_path)) == [17] * 4


def test_constexpr_call_as_a_template_argument(tmp_path):
    src = SQ + "template <int N> __device__ int get() { return N; }\n" \
               "__global__ void k(int *o) { o[threadIdx.x] = get<sq(3)>(); }\n"
    assert list(run(src, tmp_path)) == [9] * 4


def test_constexpr_call_as_a_case_label(tmp_path):
    src = SQ + "__global__ void k(int *o) { int r = 0;\n" \
               "  switch (threadIdx.x) { case sq(1): r = 5; break; case sq(1) + 1: r = 7; break; default: r = 9; }\n" \
               "  o[threadIdx.x] = r; }\n"
    assert list(run(src, tmp_path)) == [9, 5, 7, 9]


def test_constexpr_local_initialised_by_a_call_is_a_constant(tmp_path):
    src = SQ + "__global__ void k(int *o) { constexpr int n = sq(3) + 1; int a[n]; o[threadIdx.x] = sizeof(a); }\n"
    assert list(run(src, tmp_path)) == [40] * 4


def test_recursive_constexpr_function_with_a_conditional(tmp_path):
    # the branch not taken is not evaluated: fact(1) does not call fact(0), fact(-1), ...
    src = "__host__ __device__ constexpr int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }\n" \
          "__global__ void k(int *o) { int a[fact(4)]; o[threadIdx.x] = sizeof(a); }\n"
    assert list(run(src, tmp_path)) == [96] * 4


def test_constexpr_body_with_locals_loops_and_if(tmp_path):
    src = "__device__ constexpr int evens(int n) { int r = 0;\n" \
          "  for (int i = 0; i < n; ++i) { if (i % 2) continue; r += i; } return r; }\n" \
          "template <int N> __device__ int get() { return N; }\n" \
          "__global__ void k(int *o) { o[threadIdx.x] = get<evens(7)>(); }\n"
    assert list(run(src, tmp_path)) == [12] * 4


def test_host_constexpr_function_at_file_scope(tmp_path):
    src = "constexpr int hsq(int x) { return x * x; }\nconstexpr int N = hsq(3);\n__device__ float g[hsq(2)];\n" \
          "__global__ void k(int *o) { int a[N]; o[threadIdx.x] = sizeof(a) + sizeof(g); }\n"
    assert list(run(src, tmp_path)) == [52] * 4


def test_constexpr_function_is_also_called_at_run_time(tmp_path):
    src = SQ + "__global__ void k(int *o) { o[threadIdx.x] = sq(threadIdx.x); }\n"
    assert list(run(src, tmp_path)) == [0, 1, 4, 9]


def test_host_constexpr_function_in_device_code_is_refused(tmp_path):
    src = "constexpr int hsq(int x) { return x * x; }\n__global__ void k(int *o) { int a[hsq(2)]; o[0] = 1; }\n"
    e = compile_error(src)
    assert e.message == ("calling a constexpr __host__ function ('hsq') from device code is not allowed; "
                         "declare it __device__ constexpr (or __host__ __device__)")
    if NVCC is not None:
        assert "calling a constexpr __host__ function" in nvcc_result(src, tmp_path).stderr


def test_constexpr_call_with_a_variable_argument_is_not_a_constant(tmp_path):
    src = SQ + "__global__ void k(int *o) { int n = threadIdx.x; int a[sq(n)]; o[0] = 1; }\n"
    assert compile_error(src).message == "the array size must be an integer constant expression"
    if NVCC is not None:
        assert "expression must have a constant value" in nvcc_result(src, tmp_path).stderr


def test_endless_constexpr_recursion_stops_at_nvcc_depth():
    src = "__device__ constexpr int inf(int x) { return inf(x + 1); }\n" \
          "__global__ void k(int *o) { int a[inf(1)]; o[0] = 1; }\n"
    assert compile_error(src).message == "constexpr evaluation of 'inf' exceeds the depth of 512 calls"
