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
    while abs(term) > _TINY:
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
