"""Conversion functions (isa/conversion_functions.py): `operator T *()` of a
struct called where its object initialises, is assigned to or is cast to
another type (the CUDA samples' SharedMemory idiom), is passed or returned,
or is a condition (`explicit operator bool()` too). The kernels that must
run are also compiled by nvcc where nvcc is on the PATH; those refused are
refused by nvcc as well."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from isa_ir_walk import compile_error, nvcc_accepts, refused, run

# the reduction sample's (cuda-samples 2_Concepts_and_Techniques/reduction) first kernel
SHARED_MEMORY = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <class T>
struct SharedMemory {
  __device__ inline operator T *() {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
  __device__ inline operator const T *() const {
    extern __shared__ int __smem[];
    return (T *)__smem;
  }
};
template <class T>
__global__ void reduce0(T *g_idata, T *g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T *sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}
template __global__ void reduce0<int>(int *, int *, unsigned int);
template __global__ void reduce0<float>(float *, float *, unsigned int);
'''

CONVERSIONS = r'''
struct W {
    int v;
    __device__ operator int() { return v + 100; }
    __device__ operator int() const { return v; }
};
template <typename T> struct Ptr { T *p; __device__ operator T *() const { return p; } };
__global__ void k(int *o)
{
    W w = {5};
    const W cw = {7};
    int a = w;
    int b = cw;
    float f = w;
    Ptr<int> q = {o + 2};
    int *r = q;
    r[0] = 42;
    int *s;
    s = q;
    s[1] = 43;
    o[0] = a;
    o[1] = b;
    o[4] = (int)f;
    o[5] = (int *)q == o + 2;
}
'''


@pytest.mark.parametrize("dtype,name", [(np.int32, "reduce0<int>"), (np.float32, "reduce0<float>")])
def test_shared_memory_idiom_of_the_reduction_sample(dtype, name):
    mod = gpuemu.RawModule(code=SHARED_MEMORY)
    a = np.arange(256, dtype=dtype)
    o = gpuemu.zeros(2, dtype=dtype)
    mod.get_function(name)((2,), (128,), (gpuemu.asarray(a), o, np.uint32(256)), shared_mem=128 * a.itemsize)
    assert o.get().tolist() == [a[:128].sum(), a[128:].sum()]


@pytest.fixture(scope="module")
def converted() -> list:
    o = gpuemu.zeros(6, dtype=np.int32)
    gpuemu.RawModule(code=CONVERSIONS).get_function("k")((1,), (1,), (o,))
    return o.get().tolist()


def test_a_non_const_object_takes_the_non_const_conversion_and_a_const_one_the_const(converted):
    assert converted[0] == 105 and converted[1] == 7


def test_the_result_converts_on_to_the_target_type(converted):
    assert converted[4] == 105


def test_initialisation_assignment_and_cast_call_the_conversion(converted):
    assert converted[2:4] == [42, 43] and converted[5] == 1


def test_a_target_no_conversion_function_reaches_is_named():
    e = compile_error("template <typename T> struct P { T *p; __device__ operator T *() { return p; } };\n"
                      "__global__ void k(int *o) {\n    P<float> q = {0};\n    int *r = q;\n}\n")
    assert e.message == "no suitable conversion function from 'P<float>' to 'int *' exists"
    assert (e.line, e.col) == (4, 14)


@pytest.mark.parametrize("src", [SHARED_MEMORY, CONVERSIONS], ids=["shared_memory", "conversions"])
def test_the_kernels_here_are_valid_cuda(src, tmp_path):
    nvcc_accepts(src, tmp_path)


FLAGS = r"""
struct Flag { int v; __device__ explicit operator bool() const { return v != 0; } };
struct Num { int v; __device__ operator int() const { return v * 2; } };
"""


def test_an_explicit_operator_bool_is_a_condition_of_if_while_and_the_ternary(tmp_path):
    src = FLAGS + r"""__global__ void k(int *o) {
        Flag f = {(int)(threadIdx.x & 1)};
        int r = 0;
        if (f) r += 1;
        r += f ? 10 : 20;
        for (Flag g = {2}; g; g.v--) r += 100;
        o[threadIdx.x] = r;
    }"""
    assert list(run(src, tmp_path)) == [220, 211, 220, 211]


def test_not_and_or_convert_a_struct_operand_contextually(tmp_path):
    src = FLAGS + r"""__global__ void k(int *o) {
        Flag f = {(int)(threadIdx.x & 1)};
        Num n = {(int)(threadIdx.x >> 1)};
        o[threadIdx.x] = !f + 10 * (f && n) + 100 * (f || n);
    }"""
    assert list(run(src, tmp_path)) == [1, 100, 101, 110]


def test_a_cast_calls_an_explicit_conversion_function(tmp_path):
    src = FLAGS + "__global__ void k(int *o) { Flag f = {(int)threadIdx.x}; o[threadIdx.x] = (bool)f; }"
    assert list(run(src, tmp_path)) == [0, 1, 1, 1]


def test_an_argument_and_a_return_value_convert_by_an_implicit_conversion_function(tmp_path):
    src = FLAGS + r"""
    __device__ int inc(int x) { return x + 1; }
    __device__ int value(Num n) { return n; }
    __device__ bool nonzero(Num n) { return n; }
    __global__ void k(int *o) {
        Num n = {(int)threadIdx.x};
        o[threadIdx.x] = inc(n) * 100 + value(n) * 10 + nonzero(n);
    }"""
    assert list(run(src, tmp_path)) == [100, 321, 541, 761]


def test_overloads_rank_the_conversion_after_a_conversion_function(tmp_path):
    # operator int() then int -> int (exact) beats int -> float (a conversion)
    src = FLAGS + r"""
    __device__ int f(int x) { return 1; }
    __device__ int f(float x) { return 2; }
    __global__ void k(int *o) { Num n = {1}; o[threadIdx.x] = f(n); }"""
    assert list(run(src, tmp_path)) == [1] * 4


def test_two_overloads_a_conversion_function_reaches_equally_are_ambiguous(tmp_path):
    src = FLAGS + r"""
    __device__ int h(double x) { return 1; }
    __device__ int h(long x) { return 2; }
    __global__ void k(int *o) { Num n = {1}; o[threadIdx.x] = h(n); }"""
    assert refused(src, tmp_path).startswith("more than one instance of overloaded function 'h'")


@pytest.mark.parametrize("helper,use", [("", "int x = f; o[0] = x;"),
                                        ("__device__ int inc(int x) { return x + 1; }", "o[0] = inc(f);"),
                                        ("__device__ int give(Flag f) { return f; }", "o[0] = give(f);")],
                         ids=["initialisation", "argument", "return"])
def test_an_explicit_conversion_function_is_not_implicit(helper, use, tmp_path):
    src = FLAGS + helper + "\n__global__ void k(int *o) { Flag f = {1}; " + use + " }"
    assert refused(src, tmp_path) == "no suitable conversion function from 'Flag' to 'int' exists"


def test_an_explicit_operator_int_is_no_condition(tmp_path):
    src = "struct E { int v; __device__ explicit operator int() const { return v; } };\n" \
          "__global__ void k(int *o) { E e = {1}; if (e) o[0] = 1; }"
    assert refused(src, tmp_path) == "no suitable conversion function from 'E' to 'bool' exists"


def test_built_in_operators_subscripts_switch_and_built_in_functions_convert_a_struct_operand(tmp_path):
    src = FLAGS + r"""
    struct Ptr { int *p; __device__ operator int *() const { return p; } };
    __global__ void k(int *o) {
        Num n = {(int)threadIdx.x};          // converts to 2 * threadIdx.x
        Ptr q = {o};
        int a[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        int r = (n + 1) * 1000 + (n == 2) * 100 + a[n] * 10 + (int)sqrtf(n);
        switch (n) { case 4: r = -r; }
        r += -n;
        __syncthreads();
        q[threadIdx.x] = r;
    }"""
    assert list(run(src, tmp_path)) == [1000, 3121 - 2, -5042 - 4, 7062 - 6]


def test_two_conversion_functions_to_built_in_types_make_an_operand_ambiguous(tmp_path):
    src = "struct Two { __device__ operator int() const { return 1; } __device__ operator float() const " \
          "{ return 2; } };\n__global__ void k(int *o) { Two t; o[0] = t + 1; }\n"
    assert refused(src, tmp_path) == ("more than one conversion function from 'Two' to a built-in type applies "
                                      "(operator int, operator float)")


def test_a_struct_result_of_a_call_converts_in_a_condition_an_operand_and_an_argument(tmp_path):
    src = FLAGS + r"""
    __device__ Num make(int v) { Num n = {v}; return n; }
    __device__ int inc(int x) { return x + 1; }
    __global__ void k(int *o) {
        int r = 0;
        if (make((int)threadIdx.x)) r = 1;
        o[threadIdx.x] = r + 10 * (make(2) + 1) + 100 * inc(make(1));
    }"""
    assert list(run(src, tmp_path)) == [350, 351, 351, 351]


def test_a_brace_initialiser_converts_by_a_conversion_function(tmp_path):
    src = FLAGS + "__global__ void k(int *o) { Num n = {3}; int x{n}; o[threadIdx.x] = x; }"
    assert list(run(src, tmp_path)) == [6] * 4
