"""Plain-Python references for math functions, to some 60 digits (decimal):
the libm-backed functions are checked against them in ulps."""
from __future__ import annotations

import math
from decimal import Decimal as D, localcontext
from fractions import Fraction

import numpy as np

_PI = D("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863")
_TINY = D(10) ** -90


def _bernoulli(n: int) -> list:
    """B_0..B_n as Fractions (Akiyama-Tanigawa)."""
    b = []
    for m in range(n + 1):
        a = [Fraction(0)] * (m + 1)
        for j in range(m + 1):
            a[j] = Fraction(1, j + 1)
            for k in range(j, 0, -1):
                a[k - 1] = k * (a[k - 1] - a[k])
        b.append(a[0])
    return b


_B = _bernoulli(40)


def _sin(x: D) -> D:
    x = x % (2 * _PI)
    s, term, n = D(0), x, 1
    while term != 0 and abs(term) > abs(s) * _TINY:
        s += term
        term = -term * x * x / ((n + 1) * (n + 2))
        n += 2
    return s


def _lgamma_abs(x: D) -> D:
    """ln|Gamma(x)|: Stirling's series past 40, the reflection formula below 1/2."""
    if x < D("0.5"):
        return (_PI / abs(_sin(_PI * x))).ln() - _lgamma_abs(1 - x)
    shift = D(0)
    while x < 40:
        shift += x.ln()
        x += 1
    s = (x - D("0.5")) * x.ln() - x + (2 * _PI).ln() / 2
    for k in range(1, 20):
        b = _B[2 * k]
        s += D(b.numerator) / D(b.denominator) / (2 * k * (2 * k - 1) * x ** (2 * k - 1))
    return s - shift


def _erf_series(x: D) -> D:
    s, term, n = D(0), x, 0
    while abs(term) > abs(x) * _TINY:
        s += term / (2 * n + 1)
        n += 1
        term = -term * x * x / n
    return 2 / _PI.sqrt() * s


def _asinh(x: D) -> D:
    return -_asinh(-x) if x < 0 else (x + (x * x + 1).sqrt()).ln()


REFERENCE = {
    "lgamma": lambda x: _lgamma_abs(x),
    "tgamma": lambda x: _lgamma_abs(x).exp() * (-1 if x < 0 and math.floor(x) % 2 == 1 else 1),
    "erf": _erf_series,
    "erfc": lambda x: 1 - _erf_series(x),
    "asinh": _asinh,
    "acosh": lambda x: (x + (x * x - 1).sqrt()).ln(),
    "atanh": lambda x: ((1 + x) / (1 - x)).ln() / 2,
}


def reference(name: str, v: float) -> D:
    with localcontext() as c:
        c.prec = 100
        return +REFERENCE[name](D(float(v)))


def ulps(got: float, want: D, dtype) -> float:
    """|got - want| in units of the last place of `want` in the format."""
    w = float(want)
    unit = float(np.spacing(dtype(abs(w)))) if w != 0 else float(np.finfo(dtype).smallest_subnormal)
    return float(abs(D(float(got)) - want) / D(unit))


def _cos(x: D) -> D:
    return _sin(x + _PI / 2)


# sin(pi x) has period 2 in x: reduced first (fmod of a float is exact)
REFERENCE["sinpi"] = lambda x: _sin(_PI * D(math.fmod(float(x), 2.0)))
REFERENCE["cospi"] = lambda x: _cos(_PI * D(math.fmod(float(x), 2.0)))
REFERENCE["rcbrt"] = lambda x: (-1 if x < 0 else 1) / abs(x) ** (D(1) / 3)


def _erfcx_fraction(x: D) -> D:
    """exp(x^2) erfc(x) for x >= 5: the continued fraction
    1/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), 400 deep."""
    f = x
    for n in range(400, 0, -1):
        f = x + D(n) / 2 / f
    return 1 / (_PI.sqrt() * f)


def _erfc(x: D) -> D:
    if x < 0:
        return 2 - _erfc(-x)
    return 1 - _erf_series(x) if x < 5 else (-x * x).exp() * _erfcx_fraction(x)


def _erfcx(x: D) -> D:
    if x < 5:
        return (x * x).exp() * _erfc(x)
    return _erfcx_fraction(x)


def _root(f, slope, x: D) -> D:
    """Newton's method on f from x (a close start: the value under test)."""
    for _ in range(60):
        step = f(x) / slope(x)
        x -= step
        if abs(step) <= abs(x) * _TINY:
            break
    return x


def _erfinv(y: D) -> D:
    """The x with erf(x) = y, or erfc(x) = 1 - y past 1/2 (y's digits kept)."""
    if y < 0:
        return -_erfinv(-y)
    return _erfcinv(1 - y) if y > D("0.5") else _inverse(lambda x: _erf_series(x) - y, float(y))


def _erfcinv(t: D) -> D:
    if t > 1:
        return -_erfcinv(2 - t)
    if t >= D("0.5"):
        return _erfinv(1 - t)
    guess = math.sqrt(-math.log(float(t))) if float(t) > 0 else 27.2
    return _inverse(lambda x: _erfc(x).ln() - t.ln(), guess, log_space=True)


def _inverse(f, guess: float, log_space: bool = False) -> D:
    def slope(x):
        return -2 / _PI.sqrt() / _erfcx(x) if log_space else 2 / _PI.sqrt() * (-x * x).exp()
    return _root(f, slope, D(guess))


_SQRT2 = D("1.41421356237309504880168872420969807856967187537694807317667973799073247846210703885")
REFERENCE["erfcx"] = _erfcx
REFERENCE["normcdf"] = lambda x: _erfc(-x / _SQRT2) / 2
REFERENCE["erfinv"] = _erfinv
REFERENCE["erfcinv"] = _erfcinv
REFERENCE["normcdfinv"] = lambda p: -_SQRT2 * _erfcinv(2 * p)


def _bessel_i(nu: int, x: D) -> D:
    """I_nu(x): the power series, every term positive (its digits kept)."""
    with localcontext() as c:
        c.prec = 100 + int(abs(x) / 2)
        z, term, s, k = x * x / 4, abs(x) / 2 if nu else D(1), D(0), 0
        while term > s * _TINY or k < 2:
            s += term
            k += 1
            term = term * z / (k * (k + nu))
    return s if nu == 0 or x >= 0 else -s


REFERENCE["cyl_bessel_i0"] = lambda x: _bessel_i(0, x)
REFERENCE["cyl_bessel_i1"] = lambda x: _bessel_i(1, x)


_EULER_GAMMA = D("0.57721566490153286060651209008240243104215933593992359880576723488486772677766467093694706329174674951")


def _bessel_series(n: int, x: D) -> tuple:
    """J_n(x) and Y_n(x) for x > 0 from their power series (A&S 9.1.10, 9.1.11),
    to as many digits as the terms' cancellation needs."""
    with localcontext() as c:
        c.prec = 60 + int(x * D("0.45"))
        h = x / 2
        lead = h ** n / math.factorial(n)
        j, y, term, psi1, psi2, k = D(0), D(0), lead, -_EULER_GAMMA, -_EULER_GAMMA + sum(
            D(1) / m for m in range(1, n + 1)), 0
        while True:
            j += term
            y += (psi1 + psi2) * term
            k += 1
            psi1 += D(1) / k
            psi2 += D(1) / (n + k)
            term = -term * h * h / (k * (n + k))
            if abs(term) * (abs(psi1) + abs(psi2) + 1) < _TINY * abs(j) and k > x:
                break
        finite = sum(D(math.factorial(n - k - 1)) / math.factorial(k) * h ** (2 * k - n) for k in range(n))
        y = 2 / _PI * j * h.ln() - finite / _PI - y / _PI
    return +j, +y


def _bessel_hankel(n: int, x: D) -> tuple:
    """J_n(x) and Y_n(x) for x >> n^2 (A&S 9.2.5-9.2.10)."""
    mu, p, q, a, k = 4 * n * n, D(0), D(0), D(1), 0
    while abs(a) > _TINY:
        if k % 2 == 0:
            p += (-1) ** (k // 2) * a
        else:
            q += (-1) ** (k // 2) * a
        k += 1
        a = a * (mu - (2 * k - 1) ** 2) / (k * 8 * x)
    chi = x - (D(n) / 2 + D("0.25")) * _PI
    s, c = _sin(chi), _cos(chi)
    scale = (2 / (_PI * x)).sqrt()
    return scale * (p * c - q * s), scale * (p * s + q * c)


def _bessel(n: int, x: D, second: bool) -> D:
    """J_n(x) or Y_n(x), x > 0 (J_n(-x) = (-1)^n J_n(x))."""
    if x < 0:
        return (-1) ** n * _bessel(n, -x, second)
    j, y = _bessel_hankel(n, x) if x > 100 + 10 * n * n else _bessel_series(n, x)
    return y if second else j


REFERENCE["j0"] = lambda x: _bessel(0, x, False)
REFERENCE["j1"] = lambda x: _bessel(1, x, False)
REFERENCE["y0"] = lambda x: _bessel(0, x, True)
REFERENCE["y1"] = lambda x: _bessel(1, x, True)


def bessel(n: int, x, second: bool) -> D:
    """jn(n, x) or yn(n, x) of a float or a Decimal x, to 100 digits."""
    with localcontext() as c:
        c.prec = 100
        return +_bessel(n, x if isinstance(x, D) else D(float(x)), second)
