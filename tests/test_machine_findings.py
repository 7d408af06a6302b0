"""What a stopped warp's fault says: the object an access missed, by name."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu


def fault(src: str, n: int) -> gpuemu.Finding:
    k = gpuemu.RawModule(code=src).get_function("k")
    with pytest.raises(gpuemu.KernelError) as err:
        k(1, 32, (np.zeros(32, np.int32), np.int32(n)))
    return err.value.findings[0]


def test_index_minus_one_of_the_first_shared_array_is_four_bytes_before_it():
    f = fault(r"""
    extern "C" __global__ void k(int* o, int n) {
        __shared__ int s[32];
        s[threadIdx.x] = 1;
        __syncthreads();
        o[threadIdx.x] = s[n];
    }""", -1)
    assert (f.kind, f.line, f.space, f.address) == ("out_of_bounds", 6, "shared", -4)
    assert f.message == "read of 4 bytes at shared address -0x4, 4 bytes before the shared array 's' [0, 128)"


def test_index_minus_two_of_the_first_local_array_is_eight_bytes_before_it():
    f = fault(r"""
    extern "C" __global__ void k(int* o, int n) {
        int l[4];
        for (int i = 0; i < 4; i++) l[i] = i;
        o[threadIdx.x] = l[n];
    }""", -2)
    assert (f.kind, f.line, f.space, f.address) == ("out_of_bounds", 5, "local", -8)
    assert f.message == "read of 4 bytes at local address -0x8, 8 bytes before the local array 'l' [0, 16)"


def test_a_pointer_to_no_object_does_not_show_the_internal_tag():
    k = gpuemu.RawModule(code=r"""
    extern "C" __global__ void k(float* out, unsigned long long step) {
        __shared__ float a[32];
        a[threadIdx.x] = 1.0f;
        float* p = (float*)((unsigned long long)a + (step << 48));
        out[threadIdx.x] = p[threadIdx.x];
    }""").get_function("k")
    with pytest.raises(gpuemu.KernelError) as err:
        k(1, 32, (gpuemu.zeros(32, np.float32), np.uint64(1)))
    msg = err.value.findings[0].message
    assert "points to no object" in msg and "tag" not in msg
