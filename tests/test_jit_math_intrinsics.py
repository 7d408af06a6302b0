"""Integer and float intrinsics against numpy or hand-worked values."""
from __future__ import annotations

import math
import shutil
from fractions import Fraction

import numpy as np
import pytest

from conftest import nvcc_cubin
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


# --- directed rounding: a plain-Python reference from exact rationals -------

_FLT_MAX = float(np.finfo(np.float32).max)
_DBL_MAX = float(np.finfo(np.float64).max)
# a binary format: (least normal exponent, fraction bits, largest finite)
_FLOAT, _DOUBLE = (-126, 23, _FLT_MAX), (-1022, 52, _DBL_MAX)


def _binade(num: int, den: int) -> int:
    """floor(log2(num / den)) for positive integers."""
    e = num.bit_length() - den.bit_length()
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    return e


def _round_float(sign: int, e: int, floor_and_exact, mode: str, fmt=_FLOAT) -> float:
    """A nonzero value v rounded to the format (float32 unless fmt says)
    toward zero ('rz'), +inf ('ru') or -inf ('rd') by hand: sign of v,
    e = floor(log2|v|), and floor_and_exact(q) -> (floor(|v| / q), whether
    |v| is a multiple of q)."""
    emin, bits, largest = fmt
    q = Fraction(2) ** (max(e, emin) - bits)      # the grid's step at |v| (subnormals: float 2^-149)
    n, exact = floor_and_exact(q)
    away = (mode == "ru" and sign > 0) or (mode == "rd" and sign < 0)
    if away and not exact:
        n += 1
    mag = n * q
    if mag > Fraction(largest):                   # past the largest finite: inf away from zero, else the largest
        mag = Fraction(largest) if not away else None
    return sign * (float(mag) if mag is not None else np.inf)


def _round_rational(v: Fraction, mode: str, fmt=_FLOAT) -> float:
    num, den = abs(v.numerator), v.denominator

    def floor_and_exact(q):
        n, r = divmod(num * q.denominator, den * q.numerator)
        return n, r == 0
    return _round_float(1 if v > 0 else -1, _binade(num, den), floor_and_exact, mode, fmt)


def _round_sqrt(a: Fraction, mode: str, fmt=_FLOAT) -> float:
    """sqrt(a) for a > 0, rounded: floor(sqrt(a)/q) = isqrt(floor(a/q^2))."""
    def floor_and_exact(q):
        n = math.isqrt(math.floor(a / (q * q)))
        return n, n * n * q * q == a
    return _round_float(1, _binade(a.numerator, a.denominator) // 2, floor_and_exact, mode, fmt)


# the double intrinsics by the float one of the same operation
_FLOAT_OP = {"dadd": "fadd", "dsub": "fsub", "dmul": "fmul", "fma": "fmaf", "ddiv": "fdiv",
             "drcp": "frcp", "dsqrt": "fsqrt"}


def directed_reference(op: str, mode: str, a: float, b: float, c: float) -> float:
    """CUDA's __{op}_{mode}(a, b[, c]): IEEE 754's result rounded in the
    given direction (PTX add/mul/fma/div/rcp/sqrt.{rz,rp,rm}.f32 on float32
    inputs; .f64 for the double ops: __dadd_rz, __fma_ru, ...)."""
    fmt = _DOUBLE if op in _FLOAT_OP else _FLOAT
    op = _FLOAT_OP.get(op, op)
    args = {"fadd": (a, b), "fsub": (a, b), "fmul": (a, b), "fmaf": (a, b, c),
            "fdiv": (a, b), "frcp": (a,), "fsqrt": (a,)}[op]
    with np.errstate(all="ignore"):
        x, y, z = (np.float64(v) for v in (a, b, c))
        fma_special = z if math.isfinite(a) and math.isfinite(b) else x * y + z
        special = {"fadd": x + y, "fsub": x - y, "fmul": x * y, "fmaf": fma_special, "fdiv": x / y,
                   "frcp": 1 / x, "fsqrt": np.sqrt(x)}[op]
    if not all(math.isfinite(v) for v in args) or (op == "fdiv" and b == 0) or (op == "frcp" and a == 0) \
            or (op == "fsqrt" and a < 0):
        return float(special)           # inf, NaN, or an exact result from an infinite operand
    fa, fb, fc = (Fraction(v) for v in args + (0.0,) * (3 - len(args)))
    exact = {"fadd": fa + fb, "fsub": fa - fb, "fmul": fa * fb, "fmaf": fa * fb + fc,
             "fdiv": fa / fb if fb else None, "frcp": 1 / fa if fa else None, "fsqrt": fa}[op]
    if exact == 0:
        if op in ("fmul", "fdiv", "frcp", "fsqrt"):
            return float(special)       # the sign of an exact product, quotient or root of zero
        product = math.copysign(1.0, a) * math.copysign(1.0, b)
        terms = {"fadd": (a, b), "fsub": (a, -b), "fmaf": (product, c)}[op]
        negs = [math.copysign(1.0, t) < 0 for t in terms]
        # IEEE 754 6.3: an exact zero sum is +0, -0 rounding down; -0 + -0 is -0 always
        return -0.0 if all(negs) or (mode == "rd" and any(negs)) else 0.0
    if op == "fsqrt":
        return _round_sqrt(exact, mode, fmt)
    return _round_rational(exact, mode, fmt)


_DIRECTED_OPS = (("fadd", "a, b"), ("fsub", "a, b"), ("fmul", "a, b"), ("fmaf", "a, b, c"),
                 ("fdiv", "a, b"), ("frcp", "a"), ("fsqrt", "fabsf(a)"))


_DIRECTED_F64_OPS = (("dadd", "a, b"), ("dsub", "a, b"), ("dmul", "a, b"), ("fma", "a, b, c"),
                     ("ddiv", "a, b"), ("drcp", "a"), ("dsqrt", "fabs(a)"))


def _directed_inputs(n: int, dtype=np.float32) -> tuple:
    """Operands that reach every rounding case: random bit patterns (all
    binades, subnormals, inf, NaN), sums that cancel or barely move, products
    near the largest finite value and in the subnormal range, fma's c near
    -a*b, signed zeros; for double also fma's c near -a*b at any scale and
    fma's product or c far below the other."""
    rng = np.random.default_rng(7)
    fi = np.finfo(dtype)
    wide = dtype == np.float64
    p2 = dtype
    def bits(k):
        if wide:
            return rng.integers(0, 2**64, k, dtype=np.uint64).view(np.float64)
        return rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32).view(np.float32)
    def near_one(k):
        return ((1 + rng.integers(-4096, 4096, k) * 2.0**-fi.nmant) * rng.choice([-1, 1], k)).astype(dtype)
    tiny, top = float(fi.smallest_subnormal), float(fi.max)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, tiny, -tiny, float(fi.tiny),
                      float(fi.tiny) - tiny, top, -top, 2.0**64, 3.0, 0.1], dtype)
    big, small = ((2.0**511, 2.0**512), (2.0**-540, 2.0**-530)) if wide else ((2.0**63, 2.0**64), (2.0**-70, 2.0**-75))
    k = n // 4
    a = np.concatenate([bits(k), near_one(k), p2(big[0]) * near_one(k), p2(small[0]) * near_one(k)])
    b = np.concatenate([bits(k), p2(2.0**-(fi.nmant + 1)) * near_one(k), p2(big[1]) * near_one(k),
                        p2(small[1]) * near_one(k)])
    with np.errstate(over="ignore"):
        c = np.concatenate([bits(k), -near_one(k), -(a[2 * k:3 * k] * b[2 * k:3 * k]),
                            p2(tiny) * rng.integers(-8, 8, k).astype(dtype)])
    e = len(edges)
    a[:e * e] = np.repeat(edges, e)                  # every pair of edge values
    b[:e * e] = np.tile(edges, e)
    b[e * e:e * e + k // 4] = -a[e * e:e * e + k // 4]    # exact cancellation: a + (-a)
    if wide:
        # fma at every scale: c = -(a*b) rounded, times 1 + a few ulps, or 2^-60..2^-300 of a*b, or a*b that far below c
        with np.errstate(all="ignore"):
            a2 = near_one(k) * np.exp2(rng.integers(-1074, 1024, k)).astype(dtype)
            b2 = near_one(k) * np.exp2(rng.integers(-1074, 1024, k)).astype(dtype)
            p = a2 * b2
            lift = np.exp2(rng.integers(-300, 300, k) * rng.choice([0, 1], k)).astype(dtype)
            c2 = -p * near_one(k) * lift
        a, b, c = (np.concatenate([v, w]) for v, w in ((a, a2), (b, b2), (c, c2)))
    return a, b, c


def _check_directed(ops: tuple, dtype, n: int) -> None:
    """Every __{op}_{rz,ru,rd} on _directed_inputs against directed_reference, bit for bit."""
    calls = [(op, mode, f"__{op}_{mode}({args})") for op, args in ops for mode in ("rz", "ru", "rd")]
    ct, it = ("float", np.uint32) if dtype == np.float32 else ("double", np.uint64)
    body = "\n".join(f"o[{len(calls)} * t + {j}] = {call};" for j, (_, _, call) in enumerate(calls))
    src = (f'extern "C" __global__ void k(const {ct}* A, const {ct}* B, const {ct}* C, {ct}* o) {{\n'
           f"int t = blockIdx.x * blockDim.x + threadIdx.x; {ct} a = A[t], b = B[t], c = C[t];\n"
           + body + "\n}")
    a, b, c = _directed_inputs(n, dtype)
    o = np.zeros(len(a) * len(calls), dtype)
    launch(src, "k", len(a) // 128, 128, a, b, c, o)
    o = o.reshape(len(a), len(calls))
    bad = []
    for t in range(len(a)):
        for j, (op, mode, _) in enumerate(calls):
            x = abs(a[t]) if "sqrt" in op else a[t]
            want = dtype(directed_reference(op, mode, float(x), float(b[t]), float(c[t])))
            got = o[t, j]
            if not (np.isnan(want) and np.isnan(got)) and want.view(it) != got.view(it):
                bad.append(f"__{op}_{mode}({a[t]!r}, {b[t]!r}, {c[t]!r}) = {got!r}, want {want!r}")
    assert not bad, f"{len(bad)} wrong, e.g. " + "; ".join(bad[:5])


def test_directed_rounding_intrinsics_match_the_exact_result_rounded_by_hand():
    """__fadd_rz/ru/rd & co. (CUDA Math API, single precision intrinsics):
    each is IEEE 754's exact result rounded once in its direction, with
    subnormals, overflow to FLT_MAX toward zero and signed zeros."""
    _check_directed(_DIRECTED_OPS, np.float32, 2048)


def test_double_directed_rounding_intrinsics_match_the_exact_result_rounded_by_hand():
    """__dadd_rz/ru/rd, __dsub, __dmul, __fma, __ddiv, __drcp, __dsqrt (CUDA
    Math API, double precision intrinsics): IEEE 754's exact result rounded
    once in its direction, with subnormals, overflow to DBL_MAX toward zero
    and signed zeros."""
    _check_directed(_DIRECTED_F64_OPS, np.float64, 2048)


def test_directed_rounding_of_one_plus_a_small_sum():
    """Hand-worked: 1 + 1.5 * 2^-24 lies between 1 and 1 + 2^-23 (nearer the
    latter): rz and rd give 1 (0x3f800000), ru and rn 1 + 2^-23 (0x3f800001);
    for -1 - 1.5 * 2^-24 rz and ru give -1, rd -1 - 2^-23."""
    src = r"""
    extern "C" __global__ void k(const float* a, unsigned* o) {
        o[0] = __float_as_uint(__fadd_rz(a[0], a[1])); o[1] = __float_as_uint(__fadd_rd(a[0], a[1]));
        o[2] = __float_as_uint(__fadd_ru(a[0], a[1])); o[3] = __float_as_uint(__fadd_rn(a[0], a[1]));
        o[4] = __float_as_uint(__fsub_rz(-a[0], a[1])); o[5] = __float_as_uint(__fsub_ru(-a[0], a[1]));
        o[6] = __float_as_uint(__fsub_rd(-a[0], a[1]));
    }"""
    a = np.array([1.0, 1.5 * 2.0**-24], np.float32)
    o = np.zeros(7, np.uint32)
    launch(src, "k", 1, 1, a, o)
    assert [hex(v) for v in o] == ["0x3f800000", "0x3f800000", "0x3f800001", "0x3f800001",
                                   "0xbf800000", "0xbf800000", "0xbf800001"]


def test_directed_rounding_toward_zero_stops_at_flt_max():
    """Overflow: rz (and rd for a positive result) give FLT_MAX, ru gives inf."""
    src = r"""
    extern "C" __global__ void k(const float* a, float* o) {
        o[0] = __fmul_rz(a[0], a[0]); o[1] = __fmul_rd(a[0], a[0]); o[2] = __fmul_ru(a[0], a[0]);
        o[3] = __fadd_rz(-a[1], -a[1]); o[4] = __fadd_ru(-a[1], -a[1]); o[5] = __fadd_rd(-a[1], -a[1]);
    }"""
    a = np.array([2.0**64, _FLT_MAX], np.float32)
    o = np.zeros(6, np.float32)
    launch(src, "k", 1, 1, a, o)
    m = np.float32(_FLT_MAX)
    np.testing.assert_array_equal(o, [m, m, np.inf, -m, -m, -np.inf])


def test_exact_zero_sum_rounding_down_is_negative_zero():
    """IEEE 754 6.3: x + (-x) is +0 in every direction but down, where it is -0."""
    src = r"""
    extern "C" __global__ void k(const float* a, float* o) {
        o[0] = __fadd_rd(a[0], -a[0]); o[1] = __fadd_rz(a[0], -a[0]); o[2] = __fsub_ru(a[0], a[0]);
        o[3] = __fmaf_rd(a[0], a[0], -a[0] * a[0]); o[4] = __fadd_rd(0.0f, 0.0f);
    }"""
    a = np.array([3.0], np.float32)
    o = np.ones(5, np.float32)
    launch(src, "k", 1, 1, a, o)
    assert [math.copysign(1.0, v) for v in o] == [-1.0, 1.0, 1.0, -1.0, 1.0]



def test_fmaf_ieee_forms_round_as_fmaf_without_ftz():
    """__fmaf_ieee_rz: __fmaf_rz that ignores -ftz; here (no -ftz) the same:
    (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46 rounds toward zero to 1 + 2^-22."""
    src = r"""
    extern "C" __global__ void k(const float* a, float* o) {
        o[0] = __fmaf_ieee_rz(a[0], a[0], 0.0f); o[1] = __fmaf_ieee_ru(a[0], a[0], 0.0f);
    }"""
    a = np.array([1 + 2.0**-23], np.float32)
    o = np.zeros(2, np.float32)
    launch(src, "k", 1, 1, a, o)
    np.testing.assert_array_equal(o, np.array([1 + 2.0**-22, 1 + 2.0**-22 + 2.0**-23], np.float32))


def test_double_directed_rounding_of_one_plus_a_small_sum():
    """Hand-worked: 1 + 1.5 * 2^-53 lies between 1 and 1 + 2^-52: rz and rd
    give 1, ru 1 + 2^-52; -1 - 1.5 * 2^-53: rz and ru give -1, rd -1 - 2^-52."""
    src = r"""
    extern "C" __global__ void k(const double* a, double* o) {
        o[0] = __dadd_rz(a[0], a[1]); o[1] = __dadd_rd(a[0], a[1]); o[2] = __dadd_ru(a[0], a[1]);
        o[3] = __dsub_rz(-a[0], a[1]); o[4] = __dsub_ru(-a[0], a[1]); o[5] = __dsub_rd(-a[0], a[1]);
    }"""
    a = np.array([1.0, 1.5 * 2.0**-53])
    o = np.zeros(6)
    launch(src, "k", 1, 1, a, o)
    up = 1 + 2.0**-52
    assert list(o) == [1.0, 1.0, up, -1.0, -1.0, -up]


def test_double_directed_rounding_toward_zero_stops_at_dbl_max():
    """Overflow: rz (and rd for a positive result) give DBL_MAX, ru gives inf."""
    src = r"""
    extern "C" __global__ void k(const double* a, double* o) {
        o[0] = __dmul_rz(a[0], a[0]); o[1] = __dmul_rd(a[0], a[0]); o[2] = __dmul_ru(a[0], a[0]);
        o[3] = __dadd_rz(-a[1], -a[1]); o[4] = __dadd_ru(-a[1], -a[1]); o[5] = __dadd_rd(-a[1], -a[1]);
        o[6] = __fma_rz(a[0], a[0], a[1]); o[7] = __ddiv_ru(a[1], 0.5);
    }"""
    a = np.array([2.0**512, _DBL_MAX])
    o = np.zeros(8)
    launch(src, "k", 1, 1, a, o)
    m = _DBL_MAX
    np.testing.assert_array_equal(o, [m, m, np.inf, -m, -m, -np.inf, m, np.inf])


def test_double_directed_rounding_keeps_subnormals():
    """2^-600 * 2^-600 = 2^-1200 is below the least subnormal 2^-1074: ru
    gives 2^-1074, rz and rd 0; 1/3 of 2^-1072 (4 * 2^-1074) is 1.33 * 2^-1074:
    rd gives 2^-1074, ru 2 * 2^-1074; sqrt(2^-1074) = 2^-537 exactly."""
    src = r"""
    extern "C" __global__ void k(const double* a, double* o) {
        o[0] = __dmul_ru(a[0], a[0]); o[1] = __dmul_rz(a[0], a[0]); o[2] = __dmul_rd(a[0], a[0]);
        o[3] = __ddiv_rd(a[1], 3.0); o[4] = __ddiv_ru(a[1], 3.0); o[5] = __dsqrt_rd(a[2]);
        o[6] = __fma_rd(-a[0], a[0], 0.0);
    }"""
    a = np.array([2.0**-600, 2.0**-1072, 2.0**-1074])
    o = np.ones(7)
    launch(src, "k", 1, 1, a, o)
    t = 2.0**-1074
    assert list(o) == [t, 0.0, 0.0, t, 2 * t, 2.0**-537, -t]


def test_double_exact_zero_sum_rounding_down_is_negative_zero():
    """IEEE 754 6.3: x + (-x) is +0 in every direction but down, where it is -0."""
    src = r"""
    extern "C" __global__ void k(const double* a, double* o) {
        o[0] = __dadd_rd(a[0], -a[0]); o[1] = __dadd_rz(a[0], -a[0]); o[2] = __dsub_ru(a[0], a[0]);
        o[3] = __fma_rd(a[0], a[0], -9.0); o[4] = __dadd_rd(0.0, 0.0); o[5] = __fma_rd(0.0, -1.0, 0.0);
    }"""
    a = np.array([3.0])
    o = np.ones(6)
    launch(src, "k", 1, 1, a, o)
    assert [math.copysign(1.0, v) for v in o] == [-1.0, 1.0, 1.0, -1.0, 1.0, -1.0]


def _rsqrt_rn_reference(x: float) -> float:
    """1/sqrt(x) rounded to the nearest float32, by hand: g is right when the
    midpoints m- and m+ either side of it bracket 1/sqrt(x), m-^2 x < 1 < m+^2 x
    (never equal: 1/sqrt(x) is not a 25-bit midpoint for a float x)."""
    if not x > 0 or math.isinf(x):
        with np.errstate(all="ignore"):
            return float(np.float32(1) / np.sqrt(np.float32(x)))
    fx = Fraction(x)
    g = np.float32(1 / math.sqrt(x))
    while True:
        up, down = np.nextafter(g, np.float32(np.inf)), np.nextafter(g, np.float32(0))
        if ((Fraction(float(g)) + Fraction(float(up))) / 2) ** 2 * fx <= 1:
            g = up
        elif ((Fraction(float(g)) + Fraction(float(down))) / 2) ** 2 * fx >= 1:
            g = down
        else:
            return float(g)


def test_frsqrt_rn_is_correctly_rounded():
    """__frsqrt_rn (CUDA Math API: 1/sqrt(x) in round-to-nearest-even mode):
    one rounding. 1.0f / sqrtf(x) rounds twice and is one ulp off for about a
    quarter of [1, 4). Inputs: random, the ones nearest a rounding midpoint
    among 2^20 others, subnormals, huge values and the special cases."""
    rng = np.random.default_rng(3)
    pool = rng.integers(0x3F800000, 0x40800000, 1 << 20, dtype=np.int64).astype(np.uint32).view(np.float32)
    y = 1 / np.sqrt(pool.astype(np.float64))
    f = y.astype(np.float32).astype(np.float64)
    half_ulp = np.spacing(y.astype(np.float32)).astype(np.float64) / 2
    hardest = pool[np.argsort(np.abs(np.abs(y - f) - half_ulp) / y)[:64]]
    special = np.array([0.0, -0.0, np.inf, -1.0, np.nan, 2.0**-149, 2.0**-130 * 3, 2.0**-126,
                        float(np.finfo(np.float32).max), 4.0, 0.25, 2.0], np.float32)
    x = np.concatenate([rng.uniform(1, 4, 1856).astype(np.float32), hardest, special,
                        (2.0**-140 * rng.uniform(1, 4, 52)).astype(np.float32),
                        (2.0**100 * rng.uniform(1, 4, 64)).astype(np.float32)])
    o = np.zeros_like(x)
    src = r"""
    extern "C" __global__ void k(const float* x, float* o) {
        int t = blockIdx.x * blockDim.x + threadIdx.x;
        o[t] = __frsqrt_rn(x[t]);
    }"""
    launch(src, "k", len(x) // 128, 128, x, o)
    want = np.array([_rsqrt_rn_reference(float(v)) for v in x], np.float32)
    bad = [f"x={x[i]!r}: {o[i]!r} want {want[i]!r}" for i in range(len(x))
           if not (np.isnan(o[i]) and np.isnan(want[i])) and o[i].view(np.uint32) != want[i].view(np.uint32)]
    assert not bad, f"{len(bad)} wrong, e.g. " + "; ".join(bad[:5])


def test_fdividef_gives_zero_for_a_divisor_past_2_to_the_126():
    """CUDA Programming Guide, "Intrinsic Functions": for 2^126 < |y| < 2^128
    __fdividef(x, y) delivers 0 (x times a reciprocal flushed to zero), and
    NaN where x is infinite; at |y| = 2^126 the quotient is exact."""
    src = r"""
    extern "C" __global__ void k(const float* x, const float* y, float* o) {
        int t = threadIdx.x;
        o[t] = __fdividef(x[t], y[t]);
    }"""
    big = 2.0**127
    x = np.array([1.0, np.inf, 3e38, -1.0, 1.0, 1.0, 1.0, 6.0], np.float32)
    y = np.array([big, big, big, big, -big, 2.0**126, 2.0**126 * (1 + 2.0**-23), 3.0], np.float32)
    o = np.zeros(8, np.float32)
    launch(src, "k", 1, 8, x, y, o)
    np.testing.assert_array_equal(o, np.array([0.0, np.nan, 0.0, -0.0, -0.0, 2.0**-126, 0.0, 2.0], np.float32))
    assert [math.copysign(1.0, v) for v in o[[0, 3, 4]]] == [1.0, -1.0, -1.0]


_POW_OF_INTEGERS = r"""
extern "C" __global__ void k(const int* i, const float* f, double* o) {
    o[0] = (int)pow(2, 10); o[1] = pow(i[0], i[1]); o[2] = pow(i[0], -1);
    o[3] = pow(f[0], 3); o[4] = pow(f[0], 3.0f); o[5] = pow(3, f[1]);
}"""


def test_pow_of_integers_runs_in_double_as_nvcc_calls_it():
    """pow(int, int) and pow(float, int) call the double pow (nvcc -ptx):
    2^10 = 1024, 3^4 = 81, 3^-1 = 1/3 in double; 1.1f cubed in double differs
    from powf's float result; pow(3, 0.5f) is sqrt(3) in double."""
    i, f = np.array([3, 4], np.int32), np.array([1.1, 0.5], np.float32)
    o = np.zeros(6)
    launch(_POW_OF_INTEGERS, "k", 1, 1, i, f, o)
    x = float(f[0])
    assert list(o) == [1024.0, 81.0, 1 / 3, x ** 3, float(np.float32(x) ** np.float32(3)), math.sqrt(3.0)]
    assert o[3] != o[4]


# ----------------------------------------- the float taken apart (ldexp, frexp, modf, ilogb, logb)

_PARTS = r"""
extern "C" __global__ void k(const float *x, const double *xd, const int *n, float *f, double *d, int *e) {
    int t = threadIdx.x, c = blockDim.x;
    f[t] = ldexpf(x[t], n[t]); f[c + t] = scalbnf(x[t], n[t]); f[2 * c + t] = ldexp(x[t], n[t]);
    d[t] = ldexp(xd[t], 8 * n[t]); d[c + t] = scalbn(xd[t], 8 * n[t]); d[2 * c + t] = scalbln(xd[t], 8L * n[t]);
    int ef, ed;
    f[3 * c + t] = frexpf(x[t], &ef); e[t] = ef;
    d[3 * c + t] = frexp(xd[t], &ed); e[c + t] = ed;
    e[2 * c + t] = ilogbf(x[t]); e[3 * c + t] = ilogb(xd[t]);
    f[4 * c + t] = logbf(x[t]); d[4 * c + t] = logb(xd[t]);
}"""


def _random_bits(rng, n: int, dtype) -> np.ndarray:
    """Floats of every binade, subnormals, infinities and NaNs among them."""
    u = {np.float32: np.uint32, np.float64: np.uint64}[dtype]
    return rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True).view(dtype)


def _ilogb(v: float) -> int:
    if v == 0 or math.isnan(v):
        return -2**31
    return 2**31 - 1 if math.isinf(v) else math.frexp(v)[1] - 1


def _logb(v: float) -> float:
    if v == 0:
        return -math.inf
    return abs(v) if not math.isfinite(v) else float(math.frexp(v)[1] - 1)


def _launch_parts(x, xd, n):
    c = len(x)
    f, d, e = np.zeros(5 * c, np.float32), np.zeros(5 * c), np.zeros(4 * c, np.int32)
    launch(_PARTS, "k", 1, c, x, xd, n, f, d, e)
    return f.reshape(5, c), d.reshape(5, c), e.reshape(4, c)


def test_ldexp_and_scalbn_round_once_as_the_c_library():
    """ldexpf/scalbnf/ldexp(float) and ldexp/scalbn/scalbln(double) of random
    bit patterns (subnormal inputs and results, overflow, underflow, inf,
    NaN) equal numpy's ldexp (C's, exact) bit for bit."""
    rng = np.random.default_rng(7)
    for _ in range(4):
        x, xd = _random_bits(rng, 256, np.float32), _random_bits(rng, 256, np.float64)
        n = rng.integers(-300, 300, 256).astype(np.int32)
        f, d, _ = _launch_parts(x, xd, n)
        with np.errstate(all="ignore"):
            want, want_d = np.ldexp(x, n), np.ldexp(xd, 8 * n)
        for row in range(3):
            np.testing.assert_array_equal(f[row].view(np.uint32)[~np.isnan(x)], want.view(np.uint32)[~np.isnan(x)])
            np.testing.assert_array_equal(d[row].view(np.uint64)[~np.isnan(xd)],
                                          want_d.view(np.uint64)[~np.isnan(xd)])
            assert np.isnan(f[row][np.isnan(x)]).all() and np.isnan(d[row][np.isnan(xd)]).all()


def test_ldexp_rounds_a_subnormal_result_to_nearest_even():
    """1.5 * 2^-149 is halfway between 2^-149 and 2^-148: even is 2^-148;
    1.25 * 2^-149 rounds down to 2^-149; 2^-150 (a tie) to 0; the double
    0x1.8p-1074 to 2 * 2^-1074."""
    x = np.array([1.5, 1.25, 1.0, -1.5] + [1.0] * 28, np.float32)
    xd = np.array([1.5, 1.25, 1.0, -1.5] + [1.0] * 28)
    n = np.array([-149, -149, -150, -149] + [0] * 28, np.int32)
    f, d, _ = _launch_parts(x, xd, n)
    assert list(f[0][:4]) == [2.0 ** -148, 2.0 ** -149, 0.0, -(2.0 ** -148)]
    xd2 = xd.copy()
    xd2[:4] = [1.5 * 2.0 ** -50, 1.25 * 2.0 ** -50, 2.0 ** -50, -1.5 * 2.0 ** -50]
    n2 = np.array([-128, -128, -129, -128] + [0] * 28, np.int32)     # 8 * n: -1024 - 50 = -1074
    _, d, _ = _launch_parts(x, xd2, n2)
    assert list(d[0][:4]) == [2.0 ** -1073, 2.0 ** -1074, 0.0, -(2.0 ** -1073)]


def test_scalbln_takes_a_long_exponent_past_int():
    """scalbln(1.0, 2^32) overflows to inf and (1.0, -2^32) underflows to 0:
    the long is not cut to an int (whose 2^32 would be 0)."""
    src = r"""
    extern "C" __global__ void k(double *o) {
        long big = 1L << 32;
        o[0] = scalbln(1.0, big); o[1] = scalbln(1.0, -big); o[2] = scalblnf(1.0f, big);
        o[3] = ldexp(3.0, 2.5);
    }"""
    o = np.zeros(4)
    launch(src, "k", 1, 1, o)
    assert list(o) == [math.inf, 0.0, math.inf, 12.0]


def test_frexp_splits_like_the_c_library_and_stores_zero_for_zero_inf_nan():
    """frexpf/frexp of random bit patterns equal numpy's frexp (significand
    in [0.5, 1), subnormals normalised); 0, inf and NaN come back as they
    are with the exponent 0 (libdevice's __nv_frexpf)."""
    rng = np.random.default_rng(8)
    x, xd = _random_bits(rng, 32, np.float32), _random_bits(rng, 32, np.float64)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149]
    xd[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -1074]
    f, d, e = _launch_parts(x, xd, np.zeros(32, np.int32))
    for got, ex, v in ((f[3], e[0], x), (d[3], e[1], xd)):
        m, want_e = np.frexp(v)
        fin = np.isfinite(v)
        np.testing.assert_array_equal(got[fin].view(np.uint8), m[fin].view(np.uint8))
        np.testing.assert_array_equal(ex[fin], want_e[fin])
        assert list(ex[2:5]) == [0, 0, 0] and list(got[2:4]) == [math.inf, -math.inf] and math.isnan(got[4])
        assert math.copysign(1, got[1]) == -1.0
    assert (e[0][5], f[3][5], e[1][5], d[3][5]) == (-148, 0.5, -1073, 0.5)


def test_ilogb_and_logb_give_the_exponent_and_the_special_values():
    """ilogb: INT_MIN for +-0 and NaN, INT_MAX for +-inf, a subnormal's
    exponent as if normalised (2^-149: -149); logb: -inf for 0, +inf for
    -inf, NaN for NaN (CUDA Math API)."""
    rng = np.random.default_rng(9)
    x, xd = _random_bits(rng, 32, np.float32), _random_bits(rng, 32, np.float64)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149]
    xd[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -1074]
    f, d, e = _launch_parts(x, xd, np.zeros(32, np.int32))
    assert list(e[2]) == [_ilogb(float(v)) for v in x] and list(e[3]) == [_ilogb(float(v)) for v in xd]
    assert e[2][5] == -149 and e[3][5] == -1074 and e[2][2] == 2**31 - 1 and e[2][4] == -2**31
    np.testing.assert_array_equal(f[4], np.array([_logb(float(v)) for v in x], np.float32))
    np.testing.assert_array_equal(d[4], [_logb(float(v)) for v in xd])


_MODF = r"""
__device__ float split(float v, float *ip) { return modff(v, ip); }

extern "C" __global__ void k(const float *x, const double *xd, float *frac, float *ipart, double *d) {
    __shared__ float sh[32];
    float loc[32];
    int t = threadIdx.x, c = blockDim.x;
    float *where[3] = {&ipart[t], &sh[t], &loc[t]};
    frac[t] = split(x[t], where[t % 3]);             // generic pointers into global, shared, local memory
    if (t % 3 == 1) ipart[t] = sh[t];
    if (t % 3 == 2) ipart[t] = loc[t];
    double i;
    d[t] = modf(xd[t], &i); d[c + t] = i;
}"""


def test_modf_splits_into_parts_with_the_sign_of_x_through_any_pointer():
    """modff/modf equal numpy's modf bit for bit (fractional and integral
    parts, -0.0 for the fraction of -2.0 and of -inf, inf as the integral
    part of inf); the integral part is written through a generic pointer
    into global, shared or local memory; NaN gives NaN for both."""
    vals = [2.5, -2.5, -2.0, 2.0, -0.0, 0.0, math.inf, -math.inf, math.nan, 1e-45, -0.75, 8388608.5,
            123456.789, -1e30, 2.0 ** -149, 3.75] * 2
    x, xd = np.array(vals, np.float32), np.array(vals)
    xd[11] = 4503599627370496.5      # 2^52 + 0.5
    frac, ipart, d = np.zeros(32, np.float32), np.zeros(32, np.float32), np.zeros(64)
    launch(_MODF, "k", 1, 32, x, xd, frac, ipart, d)
    for got_f, got_i, v in ((frac, ipart, x), (d[:32], d[32:], xd)):
        want_f, want_i = np.modf(v)
        ok = ~np.isnan(v)
        np.testing.assert_array_equal(got_f[ok].view(np.uint8), want_f[ok].view(np.uint8))
        np.testing.assert_array_equal(got_i[ok].view(np.uint8), want_i[ok].view(np.uint8))
        assert np.isnan(got_f[~ok]).all() and np.isnan(got_i[~ok]).all()
    assert math.copysign(1, frac[2]) == -1.0 and math.copysign(1, frac[7]) == -1.0 and ipart[6] == math.inf


def test_frexp_of_a_local_keeps_it_in_a_register():
    """`int e; frexpf(x, &e)`: after inlining nvcc keeps e in a register;
    here too, no local memory is touched."""
    src = r"""
    extern "C" __global__ void k(const float *x, float *o) {
        int e; float ip;
        float m = frexpf(x[threadIdx.x], &e);
        o[threadIdx.x] = m + e + modff(x[threadIdx.x], &ip) + ip;
    }"""
    x, o = np.array([3.5] * 32, np.float32), np.zeros(32, np.float32)
    stats = launch(src, "k", 1, 32, x, o)
    assert list(o) == [0.875 + 2 + 0.5 + 3.0] * 32
    assert [stats.stats[k] for k in ("local_load_requests", "local_store_requests")] == [0, 0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("src", [_PARTS, _MODF], ids=["parts", "modf"])
def test_float_parts_kernels_compile_with_nvcc(tmp_path, src):
    f = tmp_path / "parts.cu"
    f.write_text(src)
    nvcc_cubin(shutil.which("nvcc"), f, tmp_path)


# ------------------------------------ libm-backed functions, within the CUDA Math API's ulp bounds

# CUDA C Programming Guide, "Mathematical Functions" (single, double): maximum ulp error;
# lgamma's bound holds outside [-10.001, -2.264] (float) and [-23.0001, -2.2637] (double)
_ULP_BOUNDS = {"acosh": (4, 3), "asinh": (3, 3), "atanh": (3, 2), "erf": (2, 2), "erfc": (4, 5),
               "lgamma": (6, 4), "tgamma": (5, 10)}
_DOMAINS = {"acosh": (1.0, 40.0), "asinh": (-30.0, 30.0), "atanh": (-0.99, 0.99), "erf": (-5.0, 5.0),
            "erfc": (-2.0, 9.0), "lgamma": (-2.2, 40.0), "tgamma": (-2.9, 30.0)}


@pytest.mark.parametrize("name", sorted(_ULP_BOUNDS))
def test_libm_function_is_within_the_cuda_ulp_bound(name):
    """f(x) for float and double, over 64 points of its domain (sub-ranges,
    tiny arguments, poles avoided), against a 100-digit reference."""
    from math_reference import reference, ulps
    src = f"""
    extern "C" __global__ void k(const float *x, const double *xd, float *f, double *d) {{
        int t = blockIdx.x * blockDim.x + threadIdx.x;
        f[t] = {name}f(x[t]); d[t] = {name}(xd[t]);
    }}"""
    lo, hi = _DOMAINS[name]
    xd = lo + (hi - lo) * (np.arange(64) + 0.37) / 64
    xd[:3] = [lo + 1e-7 if name != "acosh" else 1.0 + 2.0 ** -20, 1e-30 if lo <= 0 else lo + 0.5, 0.5 * (lo + hi)]
    xd = np.where(np.abs(xd - np.round(xd)) < 1e-3, xd + 0.1, xd) if name in ("lgamma", "tgamma") else xd
    x = xd.astype(np.float32)
    xd = x.astype(np.float64)
    f, d = np.zeros(64, np.float32), np.zeros(64)
    launch(src, "k", 2, 32, x, xd, f, d)
    bf, bd = _ULP_BOUNDS[name]
    worst_f = max(ulps(g, reference(name, v), np.float32) for g, v in zip(f, x))
    worst_d = max(ulps(g, reference(name, v), np.float64) for g, v in zip(d, xd))
    assert worst_f <= bf and worst_d <= bd, (worst_f, worst_d)


def test_lgamma_near_two_is_accurate_where_a_naive_formula_is_not():
    """lgamma(1.977419376373291) = -0.009381532127711272 (100-digit
    reference); CPython's own lgamma is 104 ulps off there."""
    src = r"""
    extern "C" __global__ void k(const double *x, double *o) { o[threadIdx.x] = lgamma(x[threadIdx.x]); }"""
    x, o = np.full(32, 1.977419376373291), np.zeros(32)
    launch(src, "k", 1, 32, x, o)
    assert abs(o[0] - -0.009381532127711272) <= 2 * np.spacing(0.009381532127711272)


def _remainder(a: float, b: float) -> float:
    return math.remainder(a, b) if math.isfinite(a) and b != 0 else math.nan


def test_fdim_nextafter_remainder_are_exact():
    """fdim: x - y where x > y, else +0, NaN from NaN; nextafter: the next
    float toward y (subnormals too); remainder: x - n*y with n = x/y
    rounded to even, exact (C99 and the CUDA Math API)."""
    src = r"""
    extern "C" __global__ void k(const float *x, const float *y, float *f, double *d) {
        int t = threadIdx.x, c = blockDim.x;
        f[t] = fdimf(x[t], y[t]); f[c + t] = nextafterf(x[t], y[t]); f[2 * c + t] = remainderf(x[t], y[t]);
        d[t] = fdim((double)x[t], (double)y[t]); d[c + t] = nextafter((double)x[t], (double)y[t]);
        d[2 * c + t] = remainder((double)x[t], (double)y[t]);
    }"""
    x = np.array([5.0, 2.0, 0.0, -0.0, 2.0 ** -149, 1.0, np.inf, np.nan, 7.5, -7.5, 6.0, 1e30] * 2
                 + [3.0] * 8, np.float32)
    y = np.array([3.0, 5.0, 1.0, -1.0, 0.0, 2.0, 1.0, 1.0, 2.0, 2.0, 4.0, 3.0] * 2 + [1.5] * 8, np.float32)
    f, d = np.zeros(96, np.float32), np.zeros(96)
    with np.errstate(all="ignore"):
        launch(src, "k", 1, 32, x, y, f, d)
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        want_f = [np.where(x > y, x - y, np.where(np.isnan(x) | np.isnan(y), np.nan, 0.0)).astype(np.float32),
                  np.nextafter(x, y), np.remainder(x, y)]
        want_d = [np.where(xd > yd, xd - yd, np.where(np.isnan(xd) | np.isnan(yd), np.nan, 0.0)),
                  np.nextafter(xd, yd), np.array([_remainder(a, b) for a, b in zip(xd, yd)])]
    want_f[2] = np.array([_remainder(a, b) for a, b in zip(xd, yd)], np.float32)
    for got, want in zip(list(f.reshape(3, 32)) + list(d.reshape(3, 32)), want_f + want_d):
        np.testing.assert_array_equal(got, want)
    assert list(f[64 + 8:64 + 10]) == [-0.5, 0.5] and f[32 + 3] == -(2.0 ** -149) and f[32 + 4] == 0.0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
def test_libm_backed_functions_compile_with_nvcc(tmp_path):
    calls = " + ".join(f"{n}f(x[0]) + {n}(d[0])" for n in sorted(_ULP_BOUNDS))
    calls += " + fdimf(x[0], x[1]) + nextafterf(x[0], x[1]) + remainderf(x[0], x[1])"
    calls += " + fdim(d[0], d[1]) + nextafter(d[0], d[1]) + remainder(d[0], d[1])"
    f = tmp_path / "libm.cu"
    f.write_text(f"__global__ void k(float *x, double *d) {{ d[2] = {calls}; }}")
    nvcc_cubin(shutil.which("nvcc"), f, tmp_path)


# ------------------------------------------------ lrint, llrint, lround, llround

_ROUNDING = r"""
extern "C" __global__ void k(const float *x, long long *o) {
    int t = threadIdx.x, c = blockDim.x;
    double d = x[t];
    o[t] = lrintf(x[t]); o[c + t] = llrint(d);
    o[2 * c + t] = lroundf(x[t]); o[3 * c + t] = llround(x[t]); o[4 * c + t] = lround(d);
}"""
_ROUND_IN = [0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 3.7, -3.7, 2.0 ** 62, -0.0, 1e19, -1e19, np.inf, -np.inf, np.nan]


def _rounded(mode: str) -> list:
    """Hand-worked: rint halves to even, round halves away; past +-2^63 and
    at +-inf they saturate."""
    even = [0, 2, 2, 0, -2, 0, 4, -4, 2**62, 0]
    away = [1, 2, 3, -1, -3, 0, 4, -4, 2**62, 0]
    return (even if mode == "rint" else away) + [2**63 - 1, -2**63, 2**63 - 1, -2**63]


def test_lrint_rounds_half_to_even_saturates_and_gives_zero_for_nan():
    """cvt.rni.s64 (nvcc -ptx for lrintf and llrint): NaN converts to 0."""
    x = np.array(_ROUND_IN + [1.0] * 17, np.float32)
    o = np.zeros(5 * 32, np.int64)
    launch(_ROUNDING, "k", 1, 32, x, o)
    o = o.reshape(5, 32)
    for row in (0, 1):
        assert list(o[row][:15]) == _rounded("rint") + [0]


def test_lround_rounds_half_away_and_lroundf_gives_llong_min_for_nan():
    """lroundf and llround of a float (its float overload): NaN gives
    LLONG_MIN (libdevice __nv_llroundf); lround of a double truncates
    x + 0.5 rounded toward zero, cvt.rzi.s64: NaN gives 0 (nvcc -ptx)."""
    x = np.array(_ROUND_IN + [1.0] * 17, np.float32)
    o = np.zeros(5 * 32, np.int64)
    launch(_ROUNDING, "k", 1, 32, x, o)
    o = o.reshape(5, 32)
    for row, nan in ((2, -2**63), (3, -2**63), (4, 0)):
        assert list(o[row][:15]) == _rounded("round") + [nan]


def test_lround_of_the_double_below_one_half_is_zero():
    """0.49999999999999994 + 0.5 rounds to 1.0 to nearest, but lround adds
    it rounded toward zero: 0, as round() gives."""
    src = r"""
    extern "C" __global__ void k(const double *x, long *o) { o[threadIdx.x] = lround(x[threadIdx.x]); }"""
    x, o = np.full(32, 0.49999999999999994), np.zeros(32, np.int64)
    launch(src, "k", 1, 32, x, o)
    assert o[0] == 0


# ------------------------------------------------------------------------------- sincos

_SINCOS = r"""
__device__ void both(double v, double *s, double *c) { sincos(v, s, c); }

extern "C" __global__ void k(const float *x, float *o, double *d) {
    __shared__ float sh[32];
    int t = threadIdx.x, c = blockDim.x;
    float s;
    sincosf(x[t], &s, &sh[t]);                 // a register and shared memory
    o[t] = s; o[c + t] = sh[t];
    both(x[t], &d[t], d + c + t);              // global memory through a device function's pointers
}"""


def test_sincos_writes_sin_and_cos_through_its_pointers():
    """sincosf/sincos give sin and cos within CUDA's 2 ulp (float and
    double) of the correctly rounded value; `&s` of a local keeps s in a
    register (no local memory)."""
    x = np.linspace(-10, 10, 32).astype(np.float32)
    o, d = np.zeros(64, np.float32), np.zeros(64)
    stats = launch(_SINCOS, "k", 1, 32, x, o, d)
    for got, fn in ((o[:32], math.sin), (o[32:], math.cos)):
        want = np.array([fn(float(v)) for v in x], np.float32)
        assert np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32)).max() <= 2
    for got, fn in ((d[:32], math.sin), (d[32:], math.cos)):
        want = np.array([fn(float(v)) for v in x])
        assert np.abs(got.view(np.int64) - want.view(np.int64)).max() <= 2
    assert [stats.stats[k] for k in ("local_load_requests", "local_store_requests")] == [0, 0]


# ------------------------------------------------ norm3d, norm4d, rnorm3d, rnorm4d, rhypot

_NORMS = r"""
extern "C" __global__ void k(const double *a, float *f, double *d) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, c = gridDim.x * blockDim.x;
    double x = a[4 * t], y = a[4 * t + 1], z = a[4 * t + 2], w = a[4 * t + 3];
    d[t] = norm3d(x, y, z); d[c + t] = norm4d(x, y, z, w); d[2 * c + t] = rnorm3d(x, y, z);
    d[3 * c + t] = rnorm4d(x, y, z, w); d[4 * c + t] = rhypot(x, y);
    float xf = x, yf = y, zf = z, wf = w;
    f[t] = norm3df(xf, yf, zf); f[c + t] = norm4df(xf, yf, zf, wf); f[2 * c + t] = rnorm3df(xf, yf, zf);
    f[3 * c + t] = rnorm4df(xf, yf, zf, wf); f[4 * c + t] = rhypotf(xf, yf);
}"""
_NORM_ROWS = [(3, False), (4, False), (3, True), (4, True), (2, True)]


def _norm_reference(vals, reciprocal: bool):
    from decimal import Decimal, localcontext
    with localcontext() as c:
        c.prec = 60
        s = sum(Decimal(float(v)) ** 2 for v in vals).sqrt()
        return 1 / s if reciprocal else s


def _launch_norms(a: np.ndarray):
    n = len(a) // 4
    f, d = np.zeros(5 * n, np.float32), np.zeros(5 * n)
    with np.errstate(all="ignore"):
        launch(_NORMS, "k", n // 32, 32, a, f, d)
    return f.reshape(5, n), d.reshape(5, n)


def test_norms_are_within_one_ulp_over_the_whole_exponent_range():
    """Double arguments from 1e-300 to 1e300 (squares that over- or
    underflow) and float ones from 1e-30 to 1e30: every result within 1 ulp
    of a 60-digit reference (CUDA allows 2)."""
    from math_reference import ulps
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4 * 128) * 10.0 ** rng.integers(-300, 300, 4 * 128)
    a[:4 * 64] = rng.standard_normal(4 * 64) * 10.0 ** rng.integers(-30, 30, 4 * 64)
    f, d = _launch_norms(a)
    with np.errstate(over="ignore"):
        a4, af = a.reshape(128, 4), a.reshape(128, 4).astype(np.float32)
    for row, (k, rec) in enumerate(_NORM_ROWS):
        for i in range(128):
            want = _norm_reference(a4[i][:k], rec)
            if math.isfinite(float(want)) and float(want) != 0:
                assert ulps(d[row][i], want, np.float64) <= 1, (row, a4[i])
            if i < 64:
                assert ulps(f[row][i], _norm_reference(af[i][:k], rec), np.float32) <= 1, (row, af[i])


def test_norms_of_infinities_zeros_and_nans():
    """An infinity wins over a NaN (norm +inf, reciprocal +0), as hypot; all
    zeros give 0 and +inf; a NaN otherwise gives NaN; rhypot(3, 4) = 0.2,
    norm3d(1e300, 1e300, 1e300) = sqrt(3) 1e300 with no overflow."""
    rows = [[math.inf, math.nan, 1, 1], [0, 0, 0, 0], [0, math.nan, 0, 0], [3, 4, 0, 0],
            [1e300, 1e300, 1e300, 0], [-math.inf, 2, 2, 2]] + [[1, 1, 1, 1]] * 26
    f, d = _launch_norms(np.array(rows, np.float64).ravel())
    for got in (d, f):
        assert [got[0][0], got[2][0]] == [math.inf, 0.0] and [got[1][5], got[3][5]] == [math.inf, 0.0]
        assert [got[0][1], got[2][1], got[4][1]] == [0.0, math.inf, math.inf]
        assert all(math.isnan(got[r][2]) for r in range(5))
        assert got[4][3] == np.float32(0.2) if got is f else got[4][3] == 0.2
    assert d[0][4] == float(_norm_reference([1e300] * 3, False))


# ------------------------------------------------------------- sinpi, cospi, sincospi

_PI_TRIG = r"""
extern "C" __global__ void k(const float *x, const double *xd, float *f, double *d) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, c = gridDim.x * blockDim.x;
    float s;
    sincospi(x[t], &s, &f[c + t]);
    f[t] = s; f[2 * c + t] = sinpif(x[t]); f[3 * c + t] = cospi(x[t]);
    sincospi(xd[t], &d[t], &d[c + t]);
    d[2 * c + t] = sinpi(xd[t]); d[3 * c + t] = cospi(xd[t]);
}"""


def _launch_pi_trig(x, xd):
    n = len(x)
    f, d = np.zeros(4 * n, np.float32), np.zeros(4 * n)
    launch(_PI_TRIG, "k", n // 32, 32, x, xd, f, d)
    return f.reshape(4, n), d.reshape(4, n)


def test_sinpi_and_cospi_are_within_the_cuda_ulp_bound():
    """Random arguments from 1e-3 to 1e6 (and double ones past 2^52):
    float within 1 ulp (CUDA: 1), double within 2 (CUDA: 2) of a 100-digit
    reference; sincospi gives the same as sinpi and cospi."""
    from math_reference import reference, ulps
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(128) * 10.0 ** rng.integers(-3, 6, 128)).astype(np.float32)
    xd = x.astype(np.float64)
    xd[:8] = [0.1, 1 / 3, 1e15 + 0.5, 2.0 ** 52 + 0.5, 0.49999999999999994, 1e-300, 2.000000000001, -0.3]
    f, d = _launch_pi_trig(x, xd)
    np.testing.assert_array_equal(f[:2], f[2:])
    np.testing.assert_array_equal(d[:2], d[2:])
    for got, v, dt, bound in ((f, x, np.float32, 1), (d, xd, np.float64, 2)):
        for i, a in enumerate(v):
            a = float(a)
            if a != math.trunc(a) and 2 * a != math.trunc(2 * a):
                assert ulps(got[0][i], reference("sinpi", a), dt) <= bound, ("sinpi", a)
                assert ulps(got[1][i], reference("cospi", a), dt) <= bound, ("cospi", a)


def test_sinpi_and_cospi_of_integers_and_half_integers_are_exact():
    """sinpi(n) is +0 or -0 with n's sign, cospi(n) +-1, cospi(n + 1/2) +0,
    sinpi(n + 1/2) +-1; huge arguments are even integers; inf and NaN give
    NaN (libdevice __nv_sinpif, __nv_cospif)."""
    vals = [0.0, -0.0, 1.0, -1.0, 2.0, -3.0, 0.5, -0.5, 1.5, 2.5, 1e8, -1e8, 2.0 ** -149, 0.25, np.inf, np.nan]
    x = np.array(vals * 2, np.float32)
    f, d = _launch_pi_trig(x, x.astype(np.float64))
    for got in (f, d):
        s, c = got[0][:16], got[1][:16]
        assert [math.copysign(1, v) for v in s[:6]] == [1, -1, 1, -1, 1, -1] and not s[:6].any()
        assert list(c[:6]) == [1, 1, -1, -1, 1, -1]
        assert list(s[6:10]) == [1, -1, -1, 1] and list(c[6:10]) == [0, 0, 0, 0]
        assert all(math.copysign(1, v) == 1 for v in c[6:10])
        assert list(c[10:12]) == [1, 1] and np.isnan(s[14:]).all() and np.isnan(c[14:]).all()
        assert abs(float(s[13]) - math.sqrt(0.5)) <= 1e-7 and 0 < s[12] < 1e-43


# ----------------------------------------------------------------------------- nan(tag)

_NAN = r"""
#include <cmath>
extern "C" __global__ void k(unsigned *o, unsigned long long *d) {
    o[0] = __float_as_uint(nanf("")); o[1] = __float_as_uint(nanf("0x1f")); o[2] = __float_as_uint(nanf("12"));
    o[3] = __float_as_uint(nanf("017")); o[4] = __float_as_uint(nanf("abc"));
    o[5] = __float_as_uint(nanf("99999999999999999999999"));
    d[0] = __double_as_longlong(nan("")); d[1] = __double_as_longlong(nan("0x1F"));
    d[2] = __double_as_longlong(nan("99999999999999999999999"));
}"""


def test_nan_takes_its_payload_from_the_tag_as_libdevice_reads_it():
    """"" and "abc" (not a number) give the plain quiet NaN (nvcc folds both
    to 0x7fc00000); "0x1f" hex, "12" decimal, "017" octal go under the
    quiet bit; a decimal past 2^64 overflows to all ones (libdevice's
    __nv_nanf / __nv_nan)."""
    o, d = np.zeros(6, np.uint32), np.zeros(3, np.uint64)
    launch(_NAN, "k", 1, 1, o, d)
    assert list(o) == [0x7FC00000, 0x7FC0001F, 0x7FC0000C, 0x7FC0000F, 0x7FC00000, 0x7FFFFFFF]
    assert list(d) == [0x7FF8000000000000, 0x7FF800000000001F, 0x7FFFFFFFFFFFFFFF]


# -------------------------------------------------------------------------------- rcbrt

_RCBRT = r"""
extern "C" __global__ void k(const float *x, const double *xd, float *f, double *d) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    f[t] = rcbrtf(x[t]); d[t] = rcbrt(xd[t]);
}"""


def test_rcbrt_is_within_one_ulp_over_the_whole_exponent_range():
    """Double arguments from 1e-310 (subnormal) to 1e308, float ones from
    1e-40 to 1e38: within 1 ulp of a 100-digit reference (CUDA: 1)."""
    from math_reference import reference, ulps
    rng = np.random.default_rng(5)
    xd = rng.standard_normal(128) * 10.0 ** rng.integers(-310, 308, 128)
    x = (rng.standard_normal(128) * 10.0 ** rng.integers(-40, 38, 128)).astype(np.float32)
    f, d = np.zeros(128, np.float32), np.zeros(128)
    launch(_RCBRT, "k", 4, 32, x, xd, f, d)
    for got, v, dt in ((f, x, np.float32), (d, xd, np.float64)):
        for g, a in zip(got, v):
            assert ulps(g, reference("rcbrt", float(a)), dt) <= 1, (dt, a)


def test_rcbrt_special_values():
    """rcbrt(+-0) = +-inf, rcbrt(+-inf) = +-0, NaN gives NaN; 8 and -27 give
    0.5 and the double nearest -1/3."""
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 8.0, -27.0, 1.0] * 4
    x, xd = np.array(vals, np.float32), np.array(vals)
    f, d = np.zeros(32, np.float32), np.zeros(32)
    launch(_RCBRT, "k", 1, 32, x, xd, f, d)
    for got in (f, d):
        assert list(got[:4]) == [math.inf, -math.inf, 0.0, 0.0] and math.copysign(1, got[3]) == -1
        assert math.isnan(got[4]) and got[5] == 0.5 and got[7] == 1.0
    assert d[6] == -1 / 3 and f[6] == np.float32(-1 / 3)


# ------------------------------------------------------------------------------- remquo

_REMQUO = r"""
extern "C" __global__ void k(const float *x, const float *y, float *f, int *q, double *d, int *qd) {
    int t = threadIdx.x;
    int qq;
    f[t] = remquof(x[t], y[t], &qq); q[t] = qq;
    d[t] = remquo((double)x[t], (double)y[t], &qd[t]);
}"""


def test_remquo_gives_the_remainder_and_the_quotients_low_bits_with_its_sign():
    """Hand-worked: 7.5/2 = 3.75 -> n = 4, r = -0.5, quo 4; -7.5/2 -> quo -4;
    29/3 -> n = 10, quo 10 & 7 = 2, r = -1; 13/1 -> quo 5; y = 0, x = inf or
    NaN give a NaN remainder and quo 0 (libdevice __nv_remquof)."""
    x = np.array([7.5, -7.5, 7.5, 10, 29, -29, 13, 2.5, 3, np.inf, np.nan, 5] * 2 + [1] * 8, np.float32)
    y = np.array([2, 2, -2, 3, 3, 3, 1, 1, 0, 1, 1, np.inf] * 2 + [1] * 8, np.float32)
    f, q, d, qd = np.zeros(32, np.float32), np.zeros(32, np.int32), np.zeros(32), np.zeros(32, np.int32)
    with np.errstate(all="ignore"):
        launch(_REMQUO, "k", 1, 32, x, y, f, q, d, qd)
    for rem, quo in ((f, q), (d, qd)):
        assert list(rem[:8]) == [-0.5, 0.5, -0.5, 1.0, -1.0, 1.0, 0.0, 0.5] and rem[11] == 5.0
        assert list(quo[:12]) == [4, -4, -4, 3, 2, -2, 5, 2, 0, 0, 0, 0]
        assert np.isnan(rem[8:11]).all()


# --------------------------------------------- special functions glibc lacks (erfinv & co.)

def _special_kernel(name: str) -> str:
    return f"""
extern "C" __global__ void k(const float *x, const double *xd, float *f, double *d) {{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    f[t] = {name}f(x[t]); d[t] = {name}(xd[t]);
}}"""


def _launch_special(name: str, x, xd):
    f, d = np.zeros(len(x), np.float32), np.zeros(len(xd))
    launch(_special_kernel(name), "k", len(x) // 32, 32, np.asarray(x, np.float32), np.asarray(xd), f, d)
    return f, d


def _near_edges(rng, lo: float, hi: float, n: int) -> np.ndarray:
    """n points: uniform over [lo, hi] and at 10^-k from either end."""
    span = hi - lo
    k = rng.uniform(0, 15, n // 2)
    return np.concatenate([lo + span * rng.random(n // 4), lo + span * 10.0 ** -k[: n // 4],
                           hi - span * 10.0 ** -k[n // 4:], lo + span * rng.random(n - n // 4 - n // 2)])


# CUDA C Programming Guide, "Mathematical Functions": maximum ulp error (float, double)
_SPECIAL_BOUNDS = {"erfinv": (2, 5), "erfcinv": (4, 6), "normcdfinv": (5, 8), "erfcx": (4, 4), "normcdf": (5, 5),
                   "cyl_bessel_i0": (6, 6), "cyl_bessel_i1": (6, 6)}
# erfcx: overflows below -9.38 (float), -26.63 (double); normcdf underflows below -14.1, -38.5
# (float, double) arguments: uniform over [lo, hi], and every one within [lo, top];
# erfcx overflows below -9.38 (float), -26.63 (double), normcdf underflows below -14.1, -38.5,
# cyl_bessel_i0 and i1 overflow past 91.9, 713.98
_SPECIAL_RANGES = {"erfcx": ((-9.3, 40.0, math.inf), (-26.6, 40.0, math.inf)),
                   "normcdf": ((-14.0, 9.0, math.inf), (-38.4, 9.0, math.inf)),
                   "cyl_bessel_i0": ((-91.0, 91.0, 91.0), (-713.0, 713.0, 713.0)),
                   "cyl_bessel_i1": ((-91.0, 91.0, 91.0), (-713.0, 713.0, 713.0))}
_SPECIAL_DOMAINS = {"erfinv": (-1.0, 1.0), "erfcinv": (0.0, 2.0), "normcdfinv": (0.0, 1.0)}
# double arguments a float cannot hold: subnormal and near-subnormal tails, 1 - 2^-53
_SPECIAL_EXTRA = {"erfinv": [1 - 2.0 ** -53, -(1 - 2.0 ** -53), 1e-300, 5e-324, 0.5, -0.5000000000000001],
                  "erfcinv": [5e-324, 1e-300, 2.2250738585072014e-308, 2 - 2.0 ** -52, 0.5, 1.5],
                  "normcdfinv": [5e-324, 1e-300, 1 - 2.0 ** -53, 0.25, 0.75, 2.0 ** -1074 * 3]}


def _signed_decades(rng, lo: int, hi: int, n: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(lo, hi, n)


def _special_args(name: str, rng) -> tuple:
    """128 float and 128 double arguments for `name`: its whole domain,
    where it grows without bound or underflows, and (double) values a float
    cannot hold."""
    if name in _SPECIAL_DOMAINS:
        lo, hi = _SPECIAL_DOMAINS[name]
        x = _near_edges(rng, lo, hi, 128).astype(np.float32)
        x = x[(x > lo) & (x < hi)][:96]
        x = np.concatenate([x, np.full(128 - len(x), 0.3 * lo + 0.7 * hi, np.float32)])
        xd = np.concatenate([_near_edges(rng, lo, hi, 128 - len(_SPECIAL_EXTRA[name])), _SPECIAL_EXTRA[name]])
        return x, np.where((xd > lo) & (xd < hi), xd, 0.5 * (lo + hi))
    (lo_f, hi_f, top_f), (lo_d, hi_d, top_d) = _SPECIAL_RANGES[name]
    x = np.concatenate([rng.uniform(lo_f, hi_f, 64), _signed_decades(rng, -38, 38, 64)])
    xd = np.concatenate([rng.uniform(lo_d, hi_d, 64), _signed_decades(rng, -307, 308, 62), [5e-324, -1e-310]])
    x = np.where((x > lo_f) & (x < top_f), x, (lo_f + hi_f) / 3)
    xd = np.where((xd > lo_d) & (xd < top_d), xd, (lo_d + hi_d) / 3)
    return x.astype(np.float32), xd


@pytest.mark.parametrize("name", sorted(_SPECIAL_BOUNDS))
def test_special_function_is_within_the_cuda_ulp_bound(name):
    """128 arguments over the domain, many near where the result grows
    without bound or underflows, and double ones a float cannot hold:
    within CUDA's ulp bounds of a 100-digit reference; the double lanes give
    the plain-Python reference's bits (gpuemu/jit/lane_math.py)."""
    from math_reference import reference, ulps
    from gpuemu.jit.lane_math import ScalarOps
    from gpuemu.jit.special_functions import FUNCTIONS
    x, xd = _special_args(name, np.random.default_rng(6))
    f, d = _launch_special(name, x, xd)
    bf, bd = _SPECIAL_BOUNDS[name]
    worst_f = max(ulps(g, reference(name, float(v)), np.float32) for g, v in zip(f, x))
    worst_d = max(ulps(g, reference(name, float(v)), np.float64) for g, v in zip(d, xd))
    assert worst_f <= bf and worst_d <= bd, (worst_f, worst_d)
    assert list(d) == [FUNCTIONS[name](ScalarOps(), float(v)) for v in xd]


_INF, _NaN = math.inf, math.nan
# (argument, result) where CUDA's Math API names the value or the domain ends
_SPECIAL_VALUES = {
    "erfinv": [(1.0, _INF), (-1.0, -_INF), (0.0, 0.0), (-0.0, -0.0), (1.5, _NaN), (-2.0, _NaN),
               (_INF, _NaN), (_NaN, _NaN)],
    "erfcinv": [(0.0, _INF), (2.0, -_INF), (1.0, 0.0), (-0.5, _NaN), (2.5, _NaN), (_INF, _NaN), (_NaN, _NaN)],
    "normcdfinv": [(0.0, -_INF), (1.0, _INF), (-0.5, _NaN), (1.5, _NaN), (_NaN, _NaN)],
    "erfcx": [(_INF, 0.0), (-_INF, _INF), (0.0, 1.0), (-0.0, 1.0), (-30.0, _INF), (_NaN, _NaN)],
    "normcdf": [(_INF, 1.0), (-_INF, 0.0), (0.0, 0.5), (-40.0, 0.0), (40.0, 1.0), (_NaN, _NaN)],
    "cyl_bessel_i0": [(0.0, 1.0), (-0.0, 1.0), (_INF, _INF), (-_INF, _INF), (1000.0, _INF), (_NaN, _NaN)],
    "cyl_bessel_i1": [(0.0, 0.0), (-0.0, -0.0), (_INF, _INF), (-_INF, -_INF), (-1000.0, -_INF), (_NaN, _NaN)],
}


@pytest.mark.parametrize("name", sorted(_SPECIAL_VALUES))
def test_special_function_gives_the_special_values(name):
    """Ends of the domain give +-inf, outside it NaN, zeros keep their sign."""
    vals = _SPECIAL_VALUES[name]
    args = [a for a, _ in vals] * (32 // len(vals)) + [0.5] * (32 % len(vals))
    f, d = _launch_special(name, args, args)
    for got in (f, d):
        for (a, want), g in zip(vals, got):
            assert (math.isnan(g) if math.isnan(want) else g == want and math.copysign(1, g) == math.copysign(1, want)), (a, g)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("name", sorted(_SPECIAL_BOUNDS))
def test_special_function_kernel_compiles_with_nvcc(name, tmp_path):
    f = tmp_path / f"{name}.cu"
    f.write_text(_special_kernel(name))
    nvcc_cubin(shutil.which("nvcc"), f, tmp_path)


# ------------------------------------------------------------ Bessel functions j0 .. yn

_BESSEL = r"""
extern "C" __global__ void k(const float *x, const double *xd, float *f, double *d) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, c = gridDim.x * blockDim.x;
    f[t] = j0f(x[t]); f[c + t] = j1f(x[t]); f[2 * c + t] = y0f(x[t]); f[3 * c + t] = y1f(x[t]);
    d[t] = j0(xd[t]); d[c + t] = j1(xd[t]); d[2 * c + t] = y0(xd[t]); d[3 * c + t] = y1(xd[t]);
}"""
_BESSEL_NAMES = ("j0", "j1", "y0", "y1")
# CUDA C Programming Guide, "Mathematical Functions": j0, j1, y0, y1 within 9 ulp (float), 7 (double)
# for |x| < 8, else within 2.2e-6 (float), 5e-12 (double) absolute
_BESSEL_ULP, _BESSEL_ABS = {np.float32: 9, np.float64: 7}, {np.float32: 2.2e-6, np.float64: 5e-12}


def _launch_bessel(x, xd):
    n = len(x)
    f, d = np.zeros(4 * n, np.float32), np.zeros(4 * n)
    launch(_BESSEL, "k", n // 32, 32, np.asarray(x, np.float32), np.asarray(xd), f, d)
    return f.reshape(4, n), d.reshape(4, n)


def _bessel_args(rng, dtype) -> np.ndarray:
    """128 arguments: 10^-k..10^-1 from each zero below 8 (where glibc's j0
    & co. lose up to 264 ulp), over (-8, 8), and from 8 to 10^5."""
    from gpuemu.jit.special_functions import _BESSEL_ZEROS
    zeros = [float(z) for pairs in _BESSEL_ZEROS.values() for z, _ in pairs]
    near = [z + s * 10.0 ** -k for z in zeros for s, k in zip((-1, 1, -1, 1), rng.uniform(1, 12, 4))]
    x = np.concatenate([near, rng.uniform(-8, 8, 128 - len(near) - 32), 8 + 10.0 ** rng.uniform(-3, 5, 32)])
    return x.astype(dtype)


def test_bessel_functions_are_within_the_cuda_bounds():
    """j0, j1, y0, y1 (y of positive arguments) against a 100-digit
    reference: within 9 ulp float, 7 double below 8 (36 arguments near the
    zeros among them), within 2.2e-6, 5e-12 absolute past it; double lanes
    give the plain-Python reference's bits."""
    from math_reference import reference, ulps
    from gpuemu.jit.lane_math import ScalarOps
    from gpuemu.jit.special_functions import FUNCTIONS
    rng = np.random.default_rng(8)
    x, xd = _bessel_args(rng, np.float32), _bessel_args(rng, np.float64)
    f, d = _launch_bessel(x, xd)
    f_pos, d_pos = _launch_bessel(np.abs(x), np.abs(xd))
    for k, name in enumerate(_BESSEL_NAMES):
        for got, args, dt in ((f, x, np.float32), (d, xd, np.float64), (f_pos, np.abs(x), np.float32),
                              (d_pos, np.abs(xd), np.float64)):
            if name[0] == "y" and (args < 0).any():
                continue
            for g, a in zip(got[k], args):
                want = reference(name, float(a))
                if abs(a) < 8:
                    assert ulps(g, want, dt) <= _BESSEL_ULP[dt], (name, float(a), ulps(g, want, dt))
                else:
                    assert abs(float(g) - float(want)) <= _BESSEL_ABS[dt], (name, float(a))
        assert list(d_pos[k]) == [FUNCTIONS[name](ScalarOps(), float(v)) for v in np.abs(xd)]


def test_bessel_zeros_are_those_of_the_reference():
    """The zeros below 8 and the slopes there that the Taylor windows use
    (gpuemu/jit/special_functions.py) agree with the 100-digit series:
    C_nu(z) = 0 and C_nu'(z) = -C_1(z) (nu = 0), C_0(z) (nu = 1)."""
    from decimal import Decimal, localcontext
    from math_reference import bessel
    from gpuemu.jit.special_functions import _BESSEL_ZEROS
    with localcontext() as c:
        c.prec = 100
        for (kind, nu), pairs in _BESSEL_ZEROS.items():
            for z, slope in pairs:
                z, second = Decimal(z), kind == "y"
                assert abs(bessel(nu, z, second)) < Decimal("1e-39")
                want = bessel(0, z, second) if nu else -bessel(1, z, second)
                assert abs(want - Decimal(slope)) < Decimal("1e-39")


def test_bessel_functions_special_values():
    """j0(+-inf) = +0, j1(+-inf) = +-0 (j1 odd: j1(-0) = -0; j0 even), y0 and y1 of
    +-0 are -inf, of a negative argument NaN, of +inf +0; NaN gives NaN
    (CUDA Math API)."""
    vals = [math.inf, -math.inf, 0.0, -0.0, -1.0, math.nan, 1.0, -2.0] * 4
    f, d = _launch_bessel(vals, vals)
    for got in (f, d):
        j0, j1, y0, y1 = (list(r[:8]) for r in got)
        assert j0[:4] == [0.0, 0.0, 1.0, 1.0] and math.isnan(j0[5])
        assert [math.copysign(1, v) for v in j1[:4]] == [1, -1, 1, -1] and j1[:4] == [0, 0, 0, 0]
        assert j1[4] == -j1[6] and j0[4] == j0[6]          # odd and even
        for y in (y0, y1):
            assert y[0] == 0.0 and y[2:4] == [-math.inf, -math.inf]
            assert all(math.isnan(v) for v in (y[1], y[4], y[5], y[7]))


_BESSEL_N = r"""
extern "C" __global__ void k(const int *n, const float *x, const double *xd, float *f, double *d) {
    int t = blockIdx.x * blockDim.x + threadIdx.x, c = gridDim.x * blockDim.x;
    f[t] = jnf(n[t], x[t]); f[c + t] = ynf(n[t], x[t]);
    d[t] = jn(n[t], xd[t]); d[c + t] = yn(n[t], xd[t]);
}"""


def _launch_bessel_n(n, x, xd):
    m = len(n)
    f, d = np.zeros(2 * m, np.float32), np.zeros(2 * m)
    launch(_BESSEL_N, "k", m // 32, 32, np.asarray(n, np.int32), np.asarray(x, np.float32), np.asarray(xd), f, d)
    return f.reshape(2, m), d.reshape(2, m)


def test_integer_order_bessel_functions_are_within_the_cuda_bounds():
    """jn and yn for n = 0..20 and 128, x from 10^-2 to 300: jn within
    2.2e-6 (float), 5e-12 (double) absolute; ynf within ceil(2 + 2.5n) ulp
    below n and 2.2e-6 absolute past it; yn within 5e-12 absolute past 1.5n
    (CUDA C Programming Guide, "Mathematical Functions")."""
    from math_reference import bessel, ulps
    rng = np.random.default_rng(9)
    n = np.concatenate([rng.integers(0, 21, 96), np.full(32, 128)])
    x = np.concatenate([10.0 ** rng.uniform(-2, 1.5, 96), rng.uniform(1, 300, 32)]).astype(np.float32)
    xd = x.astype(np.float64) + rng.uniform(0, 1e-6, 128)
    f, d = _launch_bessel_n(n, x, xd)
    for a, k in enumerate(n):
        k, ad = int(k), a
        jf, jd = bessel(k, float(x[a]), False), bessel(k, float(xd[ad]), False)
        assert abs(float(f[0][a]) - float(jf)) <= 2.2e-6 and abs(float(d[0][ad]) - float(jd)) <= 5e-12, (k, x[a])
        yf, yd = bessel(k, float(x[a]), True), bessel(k, float(xd[ad]), True)
        if x[a] < k:
            if float(yf) > -3e38:
                assert ulps(f[1][a], yf, np.float32) <= math.ceil(2 + 2.5 * k), (k, x[a])
        else:
            assert abs(float(f[1][a]) - float(yf)) <= 2.2e-6, (k, x[a])
        if xd[ad] > 1.5 * k:
            assert abs(float(d[1][ad]) - float(yd)) <= 5e-12, (k, xd[ad])


def test_integer_order_bessel_functions_special_values():
    """jn and yn of a negative order are NaN; yn(n, +-0) = -inf, yn of a
    negative x NaN; jn(n, +inf) = yn(n, +inf) = +0; jn(n, 0) is 1 for n = 0
    and 0 past it (CUDA Math API)."""
    n = [-1, -3, 2, 2, 2, 5, 0, 1, 3, 2] * 3 + [0, 0]
    x = [1.0, 1.0, 0.0, -0.0, -1.0, math.inf, 0.0, 0.0, math.nan, 2.0] * 3 + [0.0, 0.0]
    f, d = _launch_bessel_n(n, x, x)
    for got in (f, d):
        j, y = got
        assert all(math.isnan(v) for v in (j[0], j[1], y[0], y[1], y[4], j[8], y[8]))
        assert list(y[2:4]) == [-math.inf, -math.inf] and j[5] == 0.0 and y[5] == 0.0
        assert list(j[6:8]) == [1.0, 0.0] and j[2] == 0.0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("src", [_BESSEL, _BESSEL_N])
def test_bessel_kernels_compile_with_nvcc(tmp_path, src):
    f = tmp_path / "bessel.cu"
    f.write_text(src)
    nvcc_cubin(shutil.which("nvcc"), f, tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("name, src", [
    ("pow_of_integers", _POW_OF_INTEGERS), ("rounding", _ROUNDING), ("sincos", _SINCOS),
    ("norms", _NORMS), ("pi_trig", _PI_TRIG), ("nan", _NAN), ("rcbrt", _RCBRT), ("remquo", _REMQUO)])
def test_the_kernel_compiles_with_nvcc(name, src, tmp_path):
    f = tmp_path / f"{name}.cu"
    f.write_text(src)
    nvcc_cubin(shutil.which("nvcc"), f, tmp_path)
