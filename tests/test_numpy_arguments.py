"""numpy arrays as pointer arguments: arrays sharing memory share one device copy."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu

SRC = "__global__ void k(int* out, const int* in) { int i = threadIdx.x; out[i] = in[i] + 100; }"


@pytest.fixture(scope="module")
def kern():
    return gpuemu.RawModule(code=SRC).get_function("k")


def test_one_array_for_two_pointers_keeps_the_kernels_writes(kern):
    a = np.arange(8, dtype=np.int32)
    kern(1, 8, (a, a))
    assert a.tolist() == list(range(100, 108))


def test_overlapping_views_see_one_memory(kern):
    b = np.arange(16, dtype=np.int32)
    kern(1, 8, (b[0:8], b[4:12]))
    # one warp: every thread's load of in[i] = b[4+i] comes before any store to out[i] = b[i]
    assert b.tolist() == list(range(104, 112)) + list(range(8, 16))


def test_separate_arrays_still_copy_back_each(kern):
    out, inp = np.zeros(8, np.int32), np.arange(8, dtype=np.int32)
    kern(1, 8, (out, inp))
    assert out.tolist() == list(range(100, 108))
    assert inp.tolist() == list(range(8))


def test_interleaved_strided_views_are_separate_copies(kern):
    b = np.arange(16, dtype=np.int32)
    kern(1, 8, (b[0::2], b[1::2]))      # no byte in common: each its own dense copy
    assert b[0::2].tolist() == [101 + 2 * i for i in range(8)]
    assert b[1::2].tolist() == [1 + 2 * i for i in range(8)]


def test_overlapping_strided_view_the_kernel_writes_alone_is_copied_back(kern):
    b = np.arange(32, dtype=np.int32)
    kern(1, 8, (b[0:16:2], b[0:8]))     # out: every other of b[0:16]; in: b[0:8], only read
    want = list(range(32))
    want[0:16:2] = [100 + i for i in range(8)]
    assert b.tolist() == want


def test_one_strided_view_passed_twice_is_read_as_itself():
    dot = gpuemu.RawModule(code=(
        "__global__ void dot(const float* x, const float* y, float* out, int n)"
        "{ if (threadIdx.x == 0) { float s = 0; for (int i = 0; i < n; i++) s += x[i] * y[i];"
        " out[0] = s; } }")).get_function("dot")
    a, out = np.arange(8, dtype=np.float32), np.zeros(1, np.float32)
    dot(1, 1, (a[::2], a[::2], out, np.int32(4)))
    assert out[0] == 0 * 0 + 2 * 2 + 4 * 4 + 6 * 6


def test_overlapping_strided_views_the_kernel_writes_both_are_refused_and_left_alone():
    two = gpuemu.RawModule(code=(
        "__global__ void two(int* p, int* q) { int i = threadIdx.x; p[i] = 5; q[i] = 6; }"
    )).get_function("two")
    m = np.arange(16, dtype=np.int32).reshape(4, 4)
    with pytest.raises(gpuemu.LaunchError, match=r"share memory.*more than one"):
        two(1, 4, (m[:, 0], m[0]))
    assert m.tolist() == np.arange(16).reshape(4, 4).tolist()


def test_read_only_array_the_kernel_only_reads_is_accepted(kern):
    out = np.zeros(8, np.int32)
    inp = np.frombuffer(np.arange(8, dtype=np.int32).tobytes(), dtype=np.int32)
    kern(1, 8, (out, inp))
    assert out.tolist() == list(range(100, 108))


def test_broadcast_input_is_read_as_its_values(kern):
    out = np.zeros(8, np.int32)
    kern(1, 8, (out, np.broadcast_to(np.int32(5), (8,))))
    assert out.tolist() == [105] * 8


def test_kernel_writing_a_read_only_array_is_a_launch_error_naming_it(kern):
    ro = np.frombuffer(np.zeros(8, np.int32).tobytes(), dtype=np.int32)
    with pytest.raises(gpuemu.LaunchError, match=r"argument 0 \('out'.*read-only"):
        kern(1, 8, (ro, np.arange(8, dtype=np.int32)))
    assert ro.tolist() == [0] * 8


def test_writable_arguments_are_copied_back_before_the_read_only_error():
    both = gpuemu.RawModule(code="__global__ void w(int* a, int* b) "
                                 "{ int i = threadIdx.x; a[i] = i + 1; b[i] = i + 2; }").get_function("w")
    ro = np.frombuffer(np.zeros(8, np.int32).tobytes(), dtype=np.int32)
    out = np.zeros(8, np.int32)
    with pytest.raises(gpuemu.LaunchError, match=r"argument 0 \('a'.*read-only"):
        both(1, 8, (ro, out))
    assert out.tolist() == list(range(2, 10))


def test_object_array_argument_is_a_launch_error_naming_it(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"argument 1 \('in'.*Python objects"):
        kern(1, 8, (np.zeros(8, np.int32), np.array([object()] * 8)))


# ------------------------------------------------ the array's dtype against the pointee

VECADD = "__global__ void add(float* c, const float* a, int n) { int i = threadIdx.x; if (i < n) c[i] += a[i]; }"


@pytest.fixture(scope="module")
def add():
    return gpuemu.RawModule(code=VECADD).get_function("add")


def test_a_float64_array_for_a_float_pointer_is_refused_naming_both(add):
    c = np.zeros(8, np.float32)
    with pytest.raises(gpuemu.LaunchError, match=r"argument 1 \('a', float\*\).* float64 .*8 bytes, not 4"):
        add(1, 8, (c, np.arange(8.0), 8))
    assert c.tolist() == [0.0] * 8


def test_a_float64_output_array_for_a_float_pointer_is_refused(add):
    with pytest.raises(gpuemu.LaunchError, match=r"argument 0 \('c', float\*\).*float64"):
        add(1, 8, (np.zeros(8), np.ones(8, np.float32), 8))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.complex128, "<U1"])
def test_an_array_of_other_numbers_of_the_same_size_is_refused_for_a_float_pointer(add, dtype):
    with pytest.raises(gpuemu.LaunchError, match=r"argument 1 \('a'.*cannot be passed"):
        add(1, 8, (np.zeros(8, np.float32), np.zeros(8, dtype), 8))


def test_a_float_array_for_an_int_pointer_is_refused(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"argument 1 \('in', i32\*\) points to i32: an array of float32 .*floats, not integers"):
        kern(1, 8, (np.zeros(8, np.int32), np.zeros(8, np.float32)))


def test_an_unsigned_array_for_an_int_pointer_is_taken(kern):
    out = np.zeros(8, np.uint32)
    kern(1, 8, (out, np.arange(8, dtype=np.uint32)))
    assert out.tolist() == list(range(100, 108))


def test_byte_pointers_take_any_array():
    k = gpuemu.RawModule(code="__global__ void k(unsigned char* o, const char* i, void* v) "
                              "{ o[threadIdx.x] = i[threadIdx.x] + 1; }").get_function("k")
    out, src = np.zeros(2, np.float32), np.zeros(2, np.float64)
    k(1, 8, (out, src, np.zeros(3, np.int16)))
    assert out.view(np.uint8).tolist() == [1] * 8


@pytest.mark.parametrize("dtype", ["<U1", "datetime64[D]", np.longdouble])
def test_a_dtype_no_device_array_holds_is_refused_even_for_a_void_pointer(dtype):
    k = gpuemu.RawModule(code="__global__ void k(void* v) { }").get_function("k")
    with pytest.raises(gpuemu.LaunchError, match=r"argument 0 \('v', void\*\) points to void: an array of "):
        k(1, 1, (np.zeros(4, dtype),))


def test_vector_and_struct_pointees_take_their_elements_and_records():
    src = ("struct P { float x, y, z; };\n"
           "__global__ void k(float4* v, float2* c, P* p, uchar4* px) {\n"
           "  v[0].w = 1.0f; c[0].y = 2.0f; p[0].z = 3.0f; px[0].w = 4; }")
    k = gpuemu.RawModule(code=src).get_function("k")
    v, c = np.zeros(4, np.float32), np.zeros(2, np.float32)
    p, px = np.zeros(3, np.float32), np.zeros(1, np.uint32)
    k(1, 1, (v, c, p, px))
    assert (v[3], c[1], p[2], px[0]) == (1.0, 2.0, 3.0, 4 << 24)
    rec = np.zeros(1, [("x", "f4"), ("y", "f4"), ("z", "f4"), ("w", "f4")])
    k(1, 1, (rec, c, p, px))
    assert rec["w"][0] == 1.0


def test_a_float64_array_for_a_float4_pointer_is_refused():
    k = gpuemu.RawModule(code="__global__ void k(float4* v) { v[0].x = 1.0f; }").get_function("k")
    with pytest.raises(gpuemu.LaunchError, match=r"argument 0 \('v', float4\*\).*float64"):
        k(1, 1, (np.zeros(4),))


def test_a_device_array_of_another_dtype_stays_a_pointer(add):
    # CuPy passes a device array's pointer whatever its dtype (reinterpretation is the caller's)
    c = gpuemu.asarray(np.zeros(2, np.float64))
    add(1, 4, (c, np.ones(4, np.float32), 4))
    assert c.get().view(np.float32).tolist() == [1.0] * 4


def test_a_complex_array_is_pairs_of_floats_for_a_float2_pointer():
    k = gpuemu.RawModule(code="__global__ void conj2(float2* z) { z[threadIdx.x].y = -z[threadIdx.x].y; }"
                         ).get_function("conj2")
    z = np.array([1 + 2j, 3 - 4j], np.complex64)
    k(1, 2, (z,))
    assert z.tolist() == [1 - 2j, 3 + 4j]


def test_a_half_array_is_its_bits_for_an_unsigned_short_pointer():
    k = gpuemu.RawModule(code="__global__ void neg(unsigned short* h) { h[threadIdx.x] ^= 0x8000; }"
                         ).get_function("neg")
    h = np.array([1.5, -2.0], np.float16)
    k(1, 2, (h,))
    assert h.tolist() == [-1.5, 2.0]


def test_a_big_endian_array_is_refused_for_a_double_pointer_naming_the_byte_order():
    k = gpuemu.RawModule(code="__global__ void k(double* o) { o[threadIdx.x] += 1; }").get_function("k")
    a = np.zeros(2, ">f8")
    with pytest.raises(gpuemu.LaunchError, match=r"big-endian .*newbyteorder"):
        k(1, 2, (a,))
    assert a.tolist() == [0.0, 0.0]


def test_a_big_endian_array_is_bytes_for_a_byte_pointer():
    k = gpuemu.RawModule(code="__global__ void k(unsigned char* o) { o[threadIdx.x] = o[threadIdx.x]; }"
                         ).get_function("k")
    a = np.array([1.0], ">f8")
    k(1, 8, (a,))
    assert a.tolist() == [1.0]
