"""C arithmetic per type, checked against numpy, and the GPU's answers where C has none."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_launch import launch

BINOP = r"""
extern "C" __global__ void k(const T* a, const T* b, T* out, int n) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n) out[i] = a[i] OP b[i];
}
"""

TYPES = {"int": np.int32, "unsigned int": np.uint32, "long long": np.int64,
         "unsigned long long": np.uint64, "float": np.float32, "double": np.float64}


def _binop(ctype, op, a, b):
    src = BINOP.replace("T", ctype).replace("OP", op)
    out = np.zeros_like(a)
    launch(src, "k", 1, len(a), a, b, out, np.int32(len(a)))
    return out


@pytest.mark.parametrize("ctype", list(TYPES))
@pytest.mark.parametrize("op", ["+", "-", "*"])
def test_add_sub_mul_match_numpy_per_type(ctype, op):
    dt = TYPES[ctype]
    rng = np.random.default_rng(1)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
        b = rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
    else:
        a = (rng.random(64) * 200 - 100).astype(dt)
        b = (rng.random(64) * 200 - 100).astype(dt)
    with np.errstate(over="ignore"):
        want = {"+": a + b, "-": a - b, "*": a * b}[op]
    np.testing.assert_array_equal(_binop(ctype, op, a, b), want)


def test_unsigned_wraps_around():
    a = np.array([0, 1, 0xFFFFFFFF, 5], dtype=np.uint32)
    b = np.array([1, 2, 1, 0xFFFFFFFF], dtype=np.uint32)
    np.testing.assert_array_equal(_binop("unsigned int", "-", a, b),
                                  np.array([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE, 6], dtype=np.uint32))
    np.testing.assert_array_equal(_binop("unsigned int", "+", a, b),
                                  np.array([1, 3, 0, 4], dtype=np.uint32))


def test_signed_division_and_remainder_truncate_toward_zero():
    a = np.array([7, -7, 7, -7, 0, -1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], dtype=np.int32)
    np.testing.assert_array_equal(_binop("int", "/", a, b), np.array([3, -3, -3, 3, 0, 0], np.int32))
    np.testing.assert_array_equal(_binop("int", "%", a, b), np.array([1, -1, 1, -1, 0, -1], np.int32))


def test_integer_division_by_zero_gives_all_ones_and_remainder_the_dividend():
    a = np.array([7, -7, 0], dtype=np.int32)
    z = np.zeros(3, dtype=np.int32)
    np.testing.assert_array_equal(_binop("int", "/", a, z), np.array([-1, -1, -1], np.int32))
    np.testing.assert_array_equal(_binop("int", "%", a, z), a)
    ua = np.array([7, 0xFFFFFFFF], dtype=np.uint32)
    np.testing.assert_array_equal(_binop("unsigned int", "/", ua, np.zeros(2, np.uint32)),
                                  np.array([0xFFFFFFFF, 0xFFFFFFFF], np.uint32))


def test_int_min_divided_by_minus_one_gives_int_min():
    a = np.array([-2**31], dtype=np.int32)
    m1 = np.array([-1], dtype=np.int32)
    np.testing.assert_array_equal(_binop("int", "/", a, m1), a)
    np.testing.assert_array_equal(_binop("int", "%", a, m1), np.array([0], np.int32))


SHIFT = r"""
extern "C" __global__ void k(const T* a, const int* s, T* l, T* r, int n) {
    int i = threadIdx.x;
    if (i < n) { l[i] = a[i] << s[i]; r[i] = a[i] >> s[i]; }
}
"""


def _shift(ctype, dt, a, s):
    l, r = np.zeros_like(a), np.zeros_like(a)
    launch(SHIFT.replace("T", ctype), "k", 1, 32, a, s, l, r, np.int32(len(a)))
    return l, r


def test_shift_counts_at_or_past_the_width_clamp_as_ptx():
    a = np.array([1, -8, 1, -8, 5], dtype=np.int32)
    s = np.array([31, 1, 32, 40, -1], dtype=np.int32)
    l, r = _shift("int", np.int32, a, s)
    np.testing.assert_array_equal(l, np.array([-2**31, -16, 0, 0, 0], np.int32))
    np.testing.assert_array_equal(r, np.array([0, -4, 0, -1, 0], np.int32))


def test_unsigned_right_shift_past_the_width_gives_zero():
    a = np.array([0x80000000, 0xFFFFFFFF], dtype=np.uint32)
    s = np.array([31, 33], dtype=np.int32)
    l, r = _shift("unsigned int", np.uint32, a, s)
    np.testing.assert_array_equal(r, np.array([1, 0], np.uint32))
    np.testing.assert_array_equal(l, np.array([0, 0], np.uint32))


def test_float_to_int_conversion_saturates_and_nan_gives_zero():
    src = r"""
    extern "C" __global__ void k(const float* f, int* i, unsigned int* u, int n) {
        int t = threadIdx.x;
        if (t < n) { i[t] = (int)f[t]; u[t] = (unsigned int)f[t]; }
    }"""
    f = np.array([1.9, -1.9, 3e9, -3e9, np.nan, np.inf, -np.inf], dtype=np.float32)
    i = np.zeros(len(f), np.int32)
    u = np.zeros(len(f), np.uint32)
    launch(src, "k", 1, 32, f, i, u, np.int32(len(f)))
    np.testing.assert_array_equal(i, np.array([1, -1, 2**31 - 1, -2**31, 0, 2**31 - 1, -2**31], np.int32))
    np.testing.assert_array_equal(u, np.array([1, 0, 3000000000, 0, 0, 2**32 - 1, 0], np.uint32))


NARROW = r"""
extern "C" __global__ void k(const float* f, const double* d, int* o) {
    int t = threadIdx.x;
    o[8 * t + 0] = (signed char)f[t]; o[8 * t + 1] = (unsigned char)f[t];
    o[8 * t + 2] = (short)f[t];       o[8 * t + 3] = (unsigned short)f[t];
    o[8 * t + 4] = (signed char)d[t]; o[8 * t + 5] = (unsigned char)d[t];
    o[8 * t + 6] = (short)d[t];       o[8 * t + 7] = (unsigned short)d[t];
}"""


def _narrow_by_hand(x: float) -> list:
    """nvcc -arch=sm_90: cvt.rzi.s32 (signed) or .u32 (unsigned), saturating,
    NaN -> 0; then cvt.s32.s8/.s16 (sign-extend the low bits) or and 255/65535."""
    def rzi(lo, hi):
        return 0 if x != x else max(lo, min(hi, int(x) if abs(x) != float("inf") else (hi if x > 0 else lo)))
    s, u = rzi(-2**31, 2**31 - 1), rzi(0, 2**32 - 1)
    def low(v, bits, signed):
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v
    return [low(s, 8, True), low(u, 8, False), low(s, 16, True), low(u, 16, False)]


def test_float_to_char_and_short_saturates_to_32_bits_then_keeps_the_low_bits():
    """(char)300.0f is 44 (300 = 0x12c), (short)3e9f is -1 (0x7fffffff), (unsigned char)-1.0f
    is 0 (cvt.rzi.u32 saturates at 0), (unsigned short)70000.0f is 4464: what nvcc's PTX gives."""
    vals = [300.0, 300.7, -200.0, 40000.0, 70000.0, 3e9, -3e9, -1.0, 1e20, -5.5, np.nan, np.inf, -np.inf, 127.9]
    f = np.array(vals, np.float32)
    o = np.zeros(8 * len(vals), np.int32)
    launch(NARROW, "k", 1, len(vals), f, f.astype(np.float64), o)
    o = o.reshape(len(vals), 8)
    for k, x in enumerate(f):
        want = _narrow_by_hand(float(x))
        assert list(o[k]) == want + want, f"x={x}"
    assert list(o[0, :4]) == [44, 44, 300, 300] and list(o[5, :4]) == [-1, 0, -1, 0x5E00]


def test_compound_assignment_of_a_float_to_unsigned_char_keeps_the_low_byte():
    src = r"""
    extern "C" __global__ void k(const float* f, int* o) { unsigned char uc = 10; uc += f[0]; o[0] = uc; }"""
    o = np.zeros(1, np.int32)
    launch(src, "k", 1, 1, np.array([300.7], np.float32), o)
    assert o[0] == 310 - 256

def test_float_constant_to_char_and_short_folds_as_the_runtime_conversion():
    src = r"""
    extern "C" __global__ void k(int* o) {
        o[0] = (signed char)300.0f; o[1] = (unsigned char)300.0f; o[2] = (short)3e9f;
        o[3] = (unsigned short)70000.0f; o[4] = (unsigned char)-1.0f; o[5] = (signed char)-200.0;
    }"""
    o = np.zeros(6, np.int32)
    launch(src, "k", 1, 1, o)
    assert list(o) == [44, 44, -1, 4464, 0, 56]

def test_char_arithmetic_promotes_then_truncates():
    src = r"""
    extern "C" __global__ void k(const unsigned char* a, unsigned char* out, int* wide) {
        int t = threadIdx.x;
        out[t] = a[t] + 200;
        wide[t] = a[t] + 200;
    }"""
    a = np.arange(32, dtype=np.uint8) * 7
    out = np.zeros(32, np.uint8)
    wide = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, a, out, wide)
    np.testing.assert_array_equal(out, (a.astype(np.int32) + 200).astype(np.uint8))
    np.testing.assert_array_equal(wide, a.astype(np.int32) + 200)


def test_float_division_and_math_functions_match_numpy():
    src = r"""
    extern "C" __global__ void k(const float* a, float* q, float* s, float* e) {
        int t = threadIdx.x;
        q[t] = a[t] / 3.0f;
        s[t] = sqrtf(a[t]);
        e[t] = expf(a[t] * 0.01f);
    }"""
    a = np.arange(32, dtype=np.float32) * 1.5
    q, s, e = (np.zeros(32, np.float32) for _ in range(3))
    launch(src, "k", 1, 32, a, q, s, e)
    np.testing.assert_array_equal(q, a / np.float32(3.0))
    np.testing.assert_array_equal(s, np.sqrt(a))
    np.testing.assert_allclose(e, np.exp(a * np.float32(0.01)), rtol=1e-6)
