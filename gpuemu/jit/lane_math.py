"""Double-precision arithmetic written once, run two ways: as 32-lane LLVM
vectors (LaneOps, the JIT's code) or on one Python float (ScalarOps, the
plain-Python reference the JIT's code is tested against, bit for bit).

Special functions built from glibc's double ones (gpuemu/jit/special_functions.py)
are written against this small interface: IEEE double operations, each
rounded once (fma too), comparisons that are false for NaN, a select, and
calls of glibc's libm; nothing else, so both ways give the same bits.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math

import llvmlite.ir as ll

from .abi import WARP
from .c_semantics import intrinsic, vname
from .lane_types import I32, splat

_D = ll.DoubleType()
_DV = ll.VectorType(_D, WARP)
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b}


def _libm(name: str, argtypes: list):
    f = getattr(_LIBM, name)
    f.restype, f.argtypes = ctypes.c_double, argtypes
    return f


class ScalarOps:
    """The operations on one Python float (a double), glibc for libm calls."""

    def c(self, v: float) -> float:
        return float(v)

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def mul(self, a, b):
        return a * b

    def div(self, a, b):
        if b == 0:
            return math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1.0, b)
        return a / b

    def fma(self, a, b, c):
        return _libm("fma", [ctypes.c_double] * 3)(a, b, c)

    def sqrt(self, a):
        return math.sqrt(a) if a >= 0 else (a if a == 0 else math.nan)

    def fabs(self, a):
        return abs(a)

    def copysign(self, a, b):
        return math.copysign(a, b)

    def cmp(self, op: str, a, b) -> bool:
        return _CMP[op](a, b)

    def isnan(self, a) -> bool:
        return a != a

    def or_(self, p, q) -> bool:
        return p or q

    def and_(self, p, q) -> bool:
        return p and q

    def int_negative(self, n) -> bool:
        return n < 0

    def select(self, p, a, b):
        return a if p else b

    def libm(self, name: str, a):
        return _libm(name, [ctypes.c_double])(a)

    def libm_n(self, name: str, n, a):
        """glibc's jn or yn of the integer n."""
        return _libm(name, [ctypes.c_int, ctypes.c_double])(int(n), a)


class LaneOps:
    """The same operations on 32 lanes of doubles, emitted into b."""

    def __init__(self, b: ll.IRBuilder, m: ll.Module, libm_used: set):
        self.b, self.m, self.libm_used = b, m, libm_used

    def _llvm(self, name: str, vals: list):
        return self.b.call(intrinsic(self.m, f"llvm.{name}.{vname(_D)}", _DV, [_DV] * len(vals)), vals)

    def c(self, v: float):
        return splat(float(v), _D)

    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def fma(self, a, b, c):
        return self._llvm("fma", [a, b, c])

    def sqrt(self, a):
        return self._llvm("sqrt", [a])

    def fabs(self, a):
        return self._llvm("fabs", [a])

    def copysign(self, a, b):
        return self._llvm("copysign", [a, b])

    def cmp(self, op: str, a, b):
        return self.b.fcmp_ordered(op, a, b)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def or_(self, p, q):
        return self.b.or_(p, q)

    def and_(self, p, q):
        return self.b.and_(p, q)

    def int_negative(self, n):
        return self.b.icmp_signed("<", n, splat(0, I32))

    def select(self, p, a, b):
        return self.b.select(p, a, b)

    def _per_lane(self, name: str, types: list, vals: list):
        self.libm_used.add(name)
        fn = intrinsic(self.m, name, _D, types)
        out = ll.Constant(_DV, ll.Undefined)
        for lane in range(WARP):
            idx = ll.Constant(I32, lane)
            out = self.b.insert_element(out, self.b.call(fn, [self.b.extract_element(v, idx) for v in vals]), idx)
        return out

    def libm(self, name: str, a):
        return self._per_lane(name, [_D], [a])

    def libm_n(self, name: str, n, a):
        return self._per_lane(name, [I32, _D], [n, a])
