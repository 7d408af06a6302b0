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


def test_a_fault_in_an_included_file_names_that_file_beside_its_line(tmp_path):
    (tmp_path / "h.cuh").write_text("// helper\n__device__ void put(int *p, int i)\n{\n    p[i + 1000] = 1;\n}\n")
    (tmp_path / "m.cu").write_text('#include "h.cuh"\nextern "C" __global__ void k(int *a)\n'
                                   "{\n    put(a, threadIdx.x);\n}\n")
    k = gpuemu.RawModule(path=str(tmp_path / "m.cu")).get_function("k")
    with pytest.raises(gpuemu.KernelError) as err:
        k(1, 32, (np.zeros(32, np.int32),))
    f = err.value.findings[0]
    assert (f.line, f.extra["file"]) == (4, str(tmp_path / "h.cuh"))
    assert f" line 4 of {tmp_path / 'h.cuh'}: write of 4 bytes" in str(err.value)


CONSTANT_WRITE = r"""
__constant__ int c[4];
extern "C" __global__ void k(int *out, int v)
{
    int *p = (int *)c;
    out[threadIdx.x] = p[threadIdx.x % 4];
    if (v) WRITE;
}"""


def _constant_kernel(write: str):
    m = gpuemu.RawModule(code=CONSTANT_WRITE.replace("WRITE", write))
    m.get_global("c").set(np.array([5, 6, 7, 8], np.int32))
    return m, m.get_function("k")


@pytest.mark.parametrize("write", ["p[1] = v", "atomicAdd(&p[1], v)"])
def test_a_store_through_a_pointer_cast_from_a_constant_is_a_constant_write_fault(write):
    m, k = _constant_kernel(write)
    with pytest.raises(gpuemu.KernelError) as err:
        k(1, 32, (np.zeros(32, np.int32), np.int32(42)))
    f = err.value.findings[0]
    assert (f.kind, f.line, f.space, f.address) == ("constant_write", 7, "constant", 4)
    assert "constant memory is read-only in device code" in f.message
    assert list(m.get_global("c").get()) == [5, 6, 7, 8]


def test_a_load_through_a_pointer_cast_from_a_constant_reads_it():
    _, k = _constant_kernel("p[1] = v")
    out = np.zeros(32, np.int32)
    k(1, 32, (out, np.int32(0)))
    assert list(out[:8]) == [5, 6, 7, 8, 5, 6, 7, 8]
