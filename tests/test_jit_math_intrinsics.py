"""Integer and float intrinsics against numpy or hand-worked values."""
from __future__ import annotations

import numpy as np

from kernel_launch import launch


def test_mul24_mulhi_sad_byte_perm():
    src = r"""
    extern "C" __global__ void k(const int* a, const int* b, int* o) {
        int t = threadIdx.x;
        o[6 * t + 0] = __mul24(a[t], b[t]);
        o[6 * t + 1] = (int)__umul24((unsigned)a[t], (unsigned)b[t]);
        o[6 * t + 2] = __mulhi(a[t], b[t]);
        o[6 * t + 3] = (int)__umulhi((unsigned)a[t], (unsigned)b[t]);
        o[6 * t + 4] = (int)__sad(a[t], b[t], 5u);
        o[6 * t + 5] = (int)__byte_perm((unsigned)a[t], (unsigned)b[t], 0x5140u);
    }"""
    a = np.array([0x123456, -0x123456, 0x7FFFFFFF, -7] + [3] * 28, dtype=np.int32)
    b = np.array([0x100, 0x10, 0x7FFFFFFF, 9] + [-2] * 28, dtype=np.int32)
    o = np.zeros(6 * 32, np.int32)
    launch(src, "k", 1, 32, a, b, o)
    o = o.reshape(32, 6)

    def s24(x):
        x = int(x) & 0xFFFFFF
        return x - (1 << 24) if x & 0x800000 else x

    for t in range(4):
        x, y = int(a[t]), int(b[t])
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
        want = [np.int32(np.uint32((s24(x) * s24(y)) & 0xFFFFFFFF)),
                np.int32(np.uint32(((ux & 0xFFFFFF) * (uy & 0xFFFFFF)) & 0xFFFFFFFF)),
                (x * y) >> 32,
                np.int32(np.uint32((ux * uy) >> 32)),
                abs(x - y) + 5]
        bytes8 = list(ux.to_bytes(4, "little") + uy.to_bytes(4, "little"))
        perm = [bytes8[(0x5140 >> (4 * n)) & 7] for n in range(4)]
        want.append(np.int32(np.uint32(int.from_bytes(bytes(perm), "little"))))
        np.testing.assert_array_equal(o[t], want)


def test_reinterpret_casts_keep_the_bits():
    src = r"""
    extern "C" __global__ void k(const float* f, const double* d, int* i, long long* l, float* back) {
        int t = threadIdx.x;
        i[t] = __float_as_int(f[t]);
        l[t] = __double_as_longlong(d[t]);
        back[t] = __int_as_float(i[t] ^ 0x80000000);
    }"""
    f = np.linspace(-3, 3, 32).astype(np.float32)
    d = np.linspace(-1e300, 1e300, 32)
    i, l, back = np.zeros(32, np.int32), np.zeros(32, np.int64), np.zeros(32, np.float32)
    launch(src, "k", 1, 32, f, d, i, l, back)
    np.testing.assert_array_equal(i, f.view(np.int32))
    np.testing.assert_array_equal(l, d.view(np.int64))
    np.testing.assert_array_equal(back, -f)


def test_integer_min_max_abs_follow_signedness():
    src = r"""
    extern "C" __global__ void k(const int* a, const int* b, int* o, unsigned* u) {
        int t = threadIdx.x;
        o[3 * t] = min(a[t], b[t]); o[3 * t + 1] = max(a[t], b[t]); o[3 * t + 2] = abs(a[t]);
        u[t] = max((unsigned)a[t], (unsigned)b[t]);
    }"""
    a = np.arange(-16, 16, dtype=np.int32)
    b = np.arange(15, -17, -1, dtype=np.int32)
    o, u = np.zeros(96, np.int32), np.zeros(32, np.uint32)
    launch(src, "k", 1, 32, a, b, o, u)
    o = o.reshape(32, 3)
    np.testing.assert_array_equal(o[:, 0], np.minimum(a, b))
    np.testing.assert_array_equal(o[:, 1], np.maximum(a, b))
    np.testing.assert_array_equal(o[:, 2], np.abs(a))
    np.testing.assert_array_equal(u, np.maximum(a.view(np.uint32), b.view(np.uint32)))


def test_float_classification_and_rounding():
    src = r"""
    extern "C" __global__ void k(const float* x, int* cls, float* r) {
        int t = threadIdx.x;
        cls[t] = isnan(x[t]) * 1 + isinf(x[t]) * 2 + isfinite(x[t]) * 4;
        r[4 * t] = floorf(x[t]); r[4 * t + 1] = ceilf(x[t]);
        r[4 * t + 2] = truncf(x[t]); r[4 * t + 3] = rintf(x[t]);
    }"""
    x = np.array([np.nan, np.inf, -np.inf, 2.5, -2.5, 0.5, 1.5, -0.7] * 4, dtype=np.float32)
    cls, r = np.zeros(32, np.int32), np.zeros(128, np.float32)
    with np.errstate(invalid="ignore"):
        launch(src, "k", 1, 32, x, cls, r)
    want = np.where(np.isnan(x), 1, np.where(np.isinf(x), 2, 4))
    np.testing.assert_array_equal(cls, want)
    r = r.reshape(32, 4)
    np.testing.assert_array_equal(r[:, 0], np.floor(x))
    np.testing.assert_array_equal(r[:, 1], np.ceil(x))
    np.testing.assert_array_equal(r[:, 2], np.trunc(x))
    np.testing.assert_array_equal(r[:, 3], np.rint(x))
