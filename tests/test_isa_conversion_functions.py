"""Conversion functions (isa/conversion_functions.py): `operator T *()` of a
struct called where its object initialises, is assigned to or is cast to
another type; the CUDA samples' SharedMemory idiom. The kernels that must
run are also compiled by nvcc where nvcc is on the PATH."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from isa_ir_walk import compile_error, nvcc_accepts

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
