"""CUDA's special functions that glibc lacks, in double, from glibc's erfc,
exp and log: erfcx, normcdf, the inverse error functions and the modified
Bessel functions cyl_bessel_i0 and cyl_bessel_i1; and the Bessel functions
j0, j1, y0, y1 (glibc's, but near their zeros below 8 a Taylor series about
the zero, where glibc's relative error grows without bound), jn and yn.

Written against gpuemu/jit/lane_math.py's operations (o), so the same code is
the JIT's (LaneOps) and the plain-Python reference (ScalarOps). Float forms
take the double result and round it once. CUDA Math API bounds (double,
float, in ulp): erfcx 4, 4; normcdf 5, 5; erfinv 5, 2; erfcinv 6, 4;
normcdfinv 8, 5; cyl_bessel_i0 and i1 6, 6; j0, j1, y0, y1 7, 9 below 8,
then 5e-12, 2.2e-6 absolute; jn, yn 5e-12, 2.2e-6 absolute.

erfcx(x) = exp(x^2) erfc(x): exp of x^2 held exactly as h + l (fma), so its
rounding is not magnified; past x = 25 the asymptotic series in 1/x^2;
below 0, 2 exp(x^2) - erfcx(-x), +inf once 2 exp(x^2) overflows.
normcdf(x) = erfc(-x / sqrt 2) / 2, with the argument's rounding error put
back to first order (erfc's slope), since erfc magnifies it by 2u^2.
erfcinv(t) for t <= 1/2 solves log erfc(x) = log t by Newton's method in
log space, log erfc(x) = log erfcx(x) - x^2, which neither underflows nor
loses the small t's digits (erfc(x) = t itself would, for subnormal t);
near the middle, erfinv(y) for |y| <= 1/2 solves erf(x) = y; each from
an approximation good to a few digits (asymptotic; Giles 2010) and
iterated to convergence. erfinv(y) past 1/2 is erfcinv(1 - |y|) (exact).
"""
from __future__ import annotations

import math
from fractions import Fraction

_SQRT_PI = 1.7724538509055159
_INV_SQRT_PI = 0.5641895835477563
_TWO_OVER_SQRT_PI = 1.1283791670955126
_HALF_SQRT_PI = 0.886226925452758
_SQRT2_HI, _SQRT2_LO = 1.4142135623730951, -9.667293313452913e-17
_RSQRT2_HI, _RSQRT2_LO = 0.7071067811865476, -4.833646656726457e-17
_INF = math.inf
_ASYMPTOTIC = 25.0
# erfcx(x) ~ 1/(x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k; 12 terms leave < 2^-60 past x = 25
_ERFCX_SERIES = [(-1) ** k * math.prod(range(1, 2 * k, 2)) / 2.0 ** k for k in range(12)]
# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010), w < 5
_GILES = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
          -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]


def _split(q: Fraction) -> tuple:
    hi = float(q)
    return hi, float(q - Fraction(hi))


def _horner(o, coeffs: list, z):
    p = o.c(coeffs[0])
    for a in coeffs[1:]:
        p = o.fma(p, z, o.c(a))
    return p


def _exp_square(o, x):
    """exp(x^2) with x^2 = h + l exact: exp(h) (1 + l); +inf past overflow."""
    h = o.mul(x, x)
    l = o.fma(x, x, o.sub(o.c(0.0), h))
    e = o.libm("exp", h)
    return o.select(o.cmp("==", e, o.c(_INF)), e, o.fma(e, l, e))


def _erfcx_positive(o, x):
    """erfcx for x >= 0 (NaN for NaN)."""
    near = o.mul(o.libm("erfc", x), _exp_square(o, x))
    q = o.div(o.c(1.0), o.mul(x, x))
    series = o.div(o.mul(o.c(_INV_SQRT_PI), _horner(o, _ERFCX_SERIES[::-1], q)), x)
    return o.select(o.cmp(">=", x, o.c(_ASYMPTOTIC)), series, near)


def erfcx(o, x):
    ax = o.fabs(x)
    p = _erfcx_positive(o, ax)
    e = _exp_square(o, ax)
    neg = o.select(o.cmp("==", e, o.c(_INF)), e, o.fma(o.c(2.0), e, o.sub(o.c(0.0), p)))
    return o.select(o.cmp("<", x, o.c(0.0)), neg, p)


def normcdf(o, x):
    u = o.mul(x, o.c(-_RSQRT2_HI))
    u_lo = o.fma(x, o.c(-_RSQRT2_HI), o.sub(o.c(0.0), u))
    u_lo = o.fma(x, o.c(-_RSQRT2_LO), u_lo)
    u_lo = o.select(o.cmp("==", o.fabs(x), o.c(_INF)), o.c(0.0), u_lo)
    slope = o.mul(o.c(_TWO_OVER_SQRT_PI), o.libm("exp", o.sub(o.c(0.0), o.mul(u, u))))
    return o.mul(o.c(0.5), o.fma(o.sub(o.c(0.0), slope), u_lo, o.libm("erfc", u)))


def _erfcinv_tail(o, t):
    """x > 0 with erfc(x) = t, for 0 < t <= 1/2 (NaN or inf outside)."""
    lt = o.libm("log", t)
    x0 = o.sqrt(o.sub(o.c(0.0), lt))
    x = o.sqrt(o.sub(o.sub(o.c(0.0), lt), o.libm("log", o.mul(x0, o.c(_SQRT_PI)))))
    for _ in range(5):
        ex = _erfcx_positive(o, x)
        h = o.mul(x, x)
        l = o.fma(x, x, o.sub(o.c(0.0), h))
        g = o.sub(o.add(o.sub(o.sub(o.c(0.0), lt), h), o.libm("log", ex)), l)
        x = o.fma(o.mul(g, ex), o.c(_HALF_SQRT_PI), x)
    return x


def _erfinv_middle(o, y):
    """x with erf(x) = y, for |y| <= 1/2."""
    w = o.sub(o.c(0.0), o.libm("log", o.mul(o.sub(o.c(1.0), y), o.add(o.c(1.0), y))))
    x = o.mul(_horner(o, _GILES, o.sub(w, o.c(2.5))), y)
    for _ in range(3):
        slope = o.mul(o.c(_TWO_OVER_SQRT_PI), o.libm("exp", o.sub(o.c(0.0), o.mul(x, x))))
        x = o.sub(x, o.div(o.sub(o.libm("erf", x), y), slope))
    return x


def erfinv(o, y):
    ay = o.fabs(y)
    tail = o.copysign(_erfcinv_tail(o, o.sub(o.c(1.0), ay)), y)
    x = o.select(o.cmp("<=", ay, o.c(0.5)), _erfinv_middle(o, y), tail)
    x = o.select(o.cmp("==", ay, o.c(1.0)), o.copysign(o.c(_INF), y), x)
    return o.select(o.cmp(">", ay, o.c(1.0)), o.c(math.nan), x)


def erfcinv(o, t):
    low = o.select(o.cmp("==", t, o.c(0.0)), o.c(_INF), _erfcinv_tail(o, t))
    high = o.sub(o.c(0.0), o.select(o.cmp("==", t, o.c(2.0)), o.c(_INF), _erfcinv_tail(o, o.sub(o.c(2.0), t))))
    x = o.select(o.cmp("<=", t, o.c(0.5)), low, _erfinv_middle(o, o.sub(o.c(1.0), t)))
    x = o.select(o.cmp(">=", t, o.c(1.5)), high, x)
    outside = o.or_(o.cmp("<", t, o.c(0.0)), o.cmp(">", t, o.c(2.0)))
    return o.select(outside, o.c(math.nan), x)


def normcdfinv(o, p):
    """-sqrt(2) erfcinv(2p), sqrt(2) held as two doubles."""
    x = erfcinv(o, o.mul(o.c(2.0), p))
    r = o.select(o.cmp("==", o.fabs(x), o.c(_INF)), x, o.fma(x, o.c(_SQRT2_HI), o.mul(x, o.c(_SQRT2_LO))))
    return o.sub(o.c(0.0), r)


# cyl_bessel_i0 and i1: the power series (x/2)^nu sum (x^2/4)^k / (k! (k+nu)!) up to 25, past it
# e^x / sqrt(2 pi x) sum (-1)^k a_k(nu) / x^k, a_k = prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! 8^k)
# (Abramowitz & Stegun 9.6.10, 9.7.1): 56 and 24 terms leave < 2^-60 at x = 25
# the series in double-double (its terms' roundings would add up to 8 ulp near x = 16)
_BESSEL_I_SERIES = {nu: [_split(Fraction(1, math.factorial(k) * math.factorial(k + nu))) for k in range(56)]
                    for nu in (0, 1)}
_BESSEL_I_ASYMPTOTIC = {nu: [(-1) ** k * math.prod(4 * nu * nu - (2 * j - 1) ** 2 for j in range(1, k + 1))
                             / (math.factorial(k) * 8 ** k) for k in range(24)] for nu in (0, 1)}


def _two_sum(o, a, b):
    s = o.add(a, b)
    v = o.sub(s, a)
    return s, o.add(o.sub(a, o.sub(s, v)), o.sub(b, v))


def _dd_horner(o, coeffs: list, zh, zl):
    """sum c_k z^k in double-double: coefficients (hi, lo), z = zh + zl."""
    ph, pl = o.c(coeffs[0][0]), o.c(coeffs[0][1])
    for ch, cl in coeffs[1:]:
        mh = o.mul(ph, zh)
        ml = o.add(o.fma(ph, zh, o.sub(o.c(0.0), mh)), o.fma(ph, zl, o.mul(pl, zh)))
        sh, sl = _two_sum(o, mh, o.c(ch))
        sl = o.add(sl, o.add(ml, o.c(cl)))
        ph = o.add(sh, sl)
        pl = o.sub(sl, o.sub(ph, sh))
    return ph, pl


def _bessel_i(o, x, nu: int):
    """I_nu(|x|) for nu = 0 or 1."""
    ax = o.fabs(x)
    half = o.mul(o.c(0.5), ax)
    zh = o.mul(half, half)
    sh, sl = _dd_horner(o, _BESSEL_I_SERIES[nu][::-1], zh, o.fma(half, half, o.sub(o.c(0.0), zh)))
    series = o.fma(sh, half, o.mul(sl, half)) if nu else o.add(sh, sl)
    s = _horner(o, _BESSEL_I_ASYMPTOTIC[nu][::-1], o.div(o.c(1.0), ax))
    scaled = o.div(s, o.sqrt(o.mul(o.c(2 * math.pi), ax)))
    e = o.libm("exp", half)                     # e^x as (e^(x/2))^2 where e^x alone would overflow
    big = o.select(o.cmp(">", ax, o.c(700.0)), o.mul(o.mul(scaled, e), e), o.mul(scaled, o.libm("exp", ax)))
    r = o.select(o.cmp(">", ax, o.c(_ASYMPTOTIC)), big, series)
    return o.select(o.cmp("==", ax, o.c(_INF)), ax, r)


def cyl_bessel_i0(o, x):
    return _bessel_i(o, x, 0)


def cyl_bessel_i1(o, x):
    return o.copysign(_bessel_i(o, x, 1), x)


# Zeros of J0, J1, Y0, Y1 below 8 and the slope there, to 40 digits (Newton's method on the
# 100-digit power series of tests/math_reference.py; tests/test_jit_math_intrinsics.py checks them)
_BESSEL_ZEROS = {
    ("j", 0): [("2.404825557695772768621631879326454643124", "-0.519147497289466788140202640208624244569"),
               ("5.520078110286310649596604112813027425222", "0.3402648065583681485649118922546190461835")],
    ("j", 1): [("3.831705970207512315614435886308160766565", "-0.402759395702552972096002186427165202968"),
               ("7.015586669815618753537049981476524743276", "0.3001157525261325632066200336952789140720")],
    ("y", 0): [("0.8935769662791675215848871020583382412251", "0.8794208024971947710548338776092657078458"),
               ("3.957678419314857868375677186917401281419", "-0.402542671775024235721961474815399501224"),
               ("7.086051060301772697623624596820352468972", "0.3000976149104751862252865831642127190444")],
    ("y", 1): [("2.197141326031017035149033562698966273053", "0.5207864124022675111071507369263396714572"),
               ("5.429681040794135132772005190852584196584", "-0.340318045523440558225936216870934794696")],
}
# glibc's j0 & co. lose up to 264 ulp within 0.1 of a zero, 12 at 0.05: the window is 0.35 wide
# each side, or z/6 where Y's singularity at 0 (the series' radius is z) would slow it
_ZERO_WINDOW = 0.35


def _taylor_at_zero(nu: int, zero: str, slope: str, terms: int = 32) -> tuple:
    """z as two doubles and the Taylor coefficients a_1.. of a Bessel function
    of order nu about its zero z, from x^2 f'' + x f' + (x^2 - nu^2) f = 0 in
    x = z + d: a_{k+2} = -(z (k+1)(2k+1) a_{k+1} + (k^2 + z^2 - nu^2) a_k
    + 2z a_{k-1} + a_{k-2}) / (z^2 (k+1)(k+2)), a_0 = 0, exact in fractions."""
    z = Fraction(zero)
    a = [Fraction(0), Fraction(slope)]
    for k in range(terms - 1):
        prev = (a[k - 1] if k >= 1 else 0, a[k - 2] if k >= 2 else 0)
        a.append(-(z * (k + 1) * (2 * k + 1) * a[k + 1] + (k * k + z * z - nu * nu) * a[k]
                   + 2 * z * prev[0] + prev[1]) / (z * z * (k + 1) * (k + 2)))
    return _split(z), [float(c) for c in a[1:]], min(_ZERO_WINDOW, float(z) / 6)


_TAYLOR = {key: [_taylor_at_zero(key[1], z, d) for z, d in zeros] for key, zeros in _BESSEL_ZEROS.items()}


def _bessel(o, kind: str, nu: int, x):
    """glibc's j0, j1, y0 or y1, within a window about each zero below 8
    the Taylor series there (d = x - z from z's two doubles, exact)."""
    r = o.libm(f"{kind}{nu}", x)
    ax = o.fabs(x)
    for (zh, zl), coeffs, window in _TAYLOR[(kind, nu)]:
        d = o.sub(o.sub(ax, o.c(zh)), o.c(zl))
        near = o.mul(_horner(o, coeffs[::-1], d), d)
        if kind == "j" and nu == 1:             # odd
            near = o.select(o.cmp("<", x, o.c(0.0)), o.sub(o.c(0.0), near), near)
        inside = o.cmp("<", o.fabs(d), o.c(window))
        r = o.select(inside if kind == "j" else o.and_(inside, o.cmp(">", x, o.c(0.0))), near, r)
    return r


def j0(o, x):
    return _bessel(o, "j", 0, x)


def j1(o, x):
    return _bessel(o, "j", 1, x)


def y0(o, x):
    return _bessel(o, "y", 0, x)


def y1(o, x):
    return _bessel(o, "y", 1, x)


def jn(o, n, x):
    """glibc's jn; NaN for n < 0 (CUDA Math API)."""
    return o.select(o.int_negative(n), o.c(math.nan), o.libm_n("jn", n, x))


def yn(o, n, x):
    """glibc's yn: -inf at 0, NaN below; NaN for n < 0 (CUDA Math API)."""
    return o.select(o.int_negative(n), o.c(math.nan), o.libm_n("yn", n, x))


FUNCTIONS = {"erfcx": erfcx, "normcdf": normcdf, "erfinv": erfinv, "erfcinv": erfcinv,
             "normcdfinv": normcdfinv, "cyl_bessel_i0": cyl_bessel_i0, "cyl_bessel_i1": cyl_bessel_i1,
             "j0": j0, "j1": j1, "y0": y0, "y1": y1}
# of (int n, x)
INTEGER_ORDER = {"jn": jn, "yn": yn}
