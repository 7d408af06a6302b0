"""Double arithmetic rounded toward zero, +inf or -inf on 32 lanes: CUDA's
__dadd_rz & co. (CUDA Math API, "Double Precision Intrinsics"; PTX
add/mul/fma/div/rcp/sqrt.{rz,rp,rm}.f64: IEEE 754 results rounded once,
subnormals kept).

There is no wider type to hold the exact result, so each is the host's
round-to-nearest result r moved one double in the rounding's direction or
kept, by the sign of the rest (exact - r). The rest's sign comes from
error-free transformations on operands scaled by powers of two into a range
where they are exact: Fast2Sum for a sum; for a product, quotient and root
the fma remainder of mantissas in [1, 2) (Markstein); for an fma Boldo and
Muller's ErrFma ("Exact and approximated error of the FMA", IEEE TC 2011),
after the cases where the product or the addend is too small to matter but
as a sign. Where the scaled operation's result q is not r scaled (r went
subnormal, to 0 or to inf), the scaled grid is finer than r's and q lies
on the exact result's side of r: the sign of q - r decides.
"""
from __future__ import annotations

import llvmlite.ir as ll

from .abi import WARP
from .c_semantics import intrinsic, vname
from .lane_types import F64, I1, I64, splat

# IR name (CUDA name without the leading "__") -> operand count
DIRECTED_F64 = {f"{op}_{mode}": n for op, n in (("dadd", 2), ("dsub", 2), ("dmul", 2), ("fma", 3),
                                                ("ddiv", 2), ("drcp", 1), ("dsqrt", 1))
                for mode in ("rz", "ru", "rd")}

_V64, _VI = ll.VectorType(F64, WARP), ll.VectorType(I64, WARP)
_M52 = (1 << 52) - 1
_SIGN = -1 << 63
_ZERO_LOGB = -4000        # ilogb(0) here: below every case's threshold


class _Parts:
    """A double's sign bit, ilogb and 52-bit fraction of its mantissa
    normalised to [1, 2) (subnormals shifted up), as 32-lane i64s."""

    def __init__(self, g: "DirectedF64", x: ll.Value):
        b = g.b
        self.x = x
        bits = b.bitcast(x, _VI)
        self.sign = b.and_(bits, splat(_SIGN, I64))
        field = b.and_(b.lshr(bits, splat(52, I64)), splat(0x7FF, I64))
        man = b.and_(bits, splat(_M52, I64))
        lz = g.call("ctlz", _VI, man, ll.Constant(I1, 0))
        sub = b.icmp_signed("==", field, splat(0, I64))
        self.zero = g.eq(x, 0.0)
        logb = b.select(sub, b.sub(splat(-1011, I64), lz), b.sub(field, splat(1023, I64)))
        self.logb = b.select(self.zero, splat(_ZERO_LOGB, I64), logb)
        shifted = b.and_(b.shl(man, b.sub(lz, splat(11, I64))), splat(_M52, I64))
        self.frac = b.select(sub, shifted, man)


class DirectedF64:
    """Emits one directed-rounding double operation with builder b."""

    def __init__(self, b: ll.IRBuilder, module: ll.Module):
        self.b, self.m = b, module

    # helpers ---------------------------------------------------------------
    def call(self, name: str, t: ll.Type, *vals):
        fn = intrinsic(self.m, f"llvm.{name}.{vname(t.element)}", t,
                       [v.type for v in vals])
        return self.b.call(fn, list(vals))

    def fma(self, x, y, z):
        return self.call("fma", _V64, x, y, z)

    def eq(self, x, v: float):
        return self.b.fcmp_ordered("==", x, splat(v, F64))

    def finite(self, x):
        return self.b.fcmp_ordered("<", self.call("fabs", _V64, x), splat(float("inf"), F64))

    def setexp(self, p: _Parts, k):
        """p's value with its ilogb set to k (i64 lanes): exact where
        -1022 <= k <= 1023; inf above, a zero below; zeros, inf and NaN kept."""
        b = self.b
        bits = b.or_(b.or_(p.sign, b.shl(b.add(k, splat(1023, I64)), splat(52, I64))), p.frac)
        bits = b.select(b.icmp_signed(">", k, splat(1023, I64)), b.or_(p.sign, splat(0x7FF << 52, I64)), bits)
        bits = b.select(b.icmp_signed("<", k, splat(-1022, I64)), p.sign, bits)
        keep = b.or_(p.zero, b.xor(self.finite(p.x), splat(1, I1)))
        return b.select(keep, p.x, b.bitcast(bits, _V64))

    def scaled(self, p: _Parts, by):
        """p's value times 2^-by (by: i64 lanes), saturating as setexp."""
        return self.setexp(p, self.b.sub(p.logb, by))

    def pick(self, q, rs, rest_q):
        """The sign of exact - r, from q (the exact result rounded to nearest
        on a grid at least as fine as r's, scaled), rs (r scaled alike) and
        rest_q (a double with the sign of exact - q)."""
        b = self.b
        return b.select(b.fcmp_ordered("==", q, rs), rest_q, b.fsub(q, rs))

    # the sign of the rest, per operation ------------------------------------
    def _rest_add(self, x, y, r):
        """Fast2Sum with the larger magnitude first: exact, any range."""
        b = self.b
        ax, ay = self.call("fabs", _V64, x), self.call("fabs", _V64, y)
        first = b.fcmp_ordered(">=", ax, ay)
        big, small = b.select(first, x, y), b.select(first, y, x)
        return b.fsub(small, b.fsub(r, big))

    def _rest_mul(self, x, y, r):
        b = self.b
        px, py, pr = _Parts(self, x), _Parts(self, y), _Parts(self, r)
        x1, y1 = self.setexp(px, splat(0, I64)), self.setexp(py, splat(0, I64))
        q = b.fmul(x1, y1)
        return self.pick(q, self.scaled(pr, b.add(px.logb, py.logb)), self.fma(x1, y1, b.fneg(q)))

    def _rest_div(self, x, y, r):
        b = self.b
        px, py, pr = _Parts(self, x), _Parts(self, y), _Parts(self, r)
        x1, y1 = self.setexp(px, splat(0, I64)), self.setexp(py, splat(0, I64))
        q = b.fdiv(x1, y1)
        rem = self.fma(b.fneg(q), y1, x1)              # x1 - q*y1, exact; x1/y1 - q has its sign times y1's
        return self.pick(q, self.scaled(pr, b.sub(px.logb, py.logb)), b.fmul(rem, y1))

    def _rest_sqrt(self, x, r):
        b = self.b
        px, pr = _Parts(self, x), _Parts(self, r)
        half = b.ashr(px.logb, splat(1, I64))          # x = x1 * 4^half, x1 in [1, 4)
        x1 = self.setexp(px, b.sub(px.logb, b.shl(half, splat(1, I64))))
        q = self.call("sqrt", _V64, x1)
        return self.pick(q, self.scaled(pr, half), self.fma(b.fneg(q), q, x1))

    def _rest_fma(self, x, y, z, r):
        """x*y + z - r. Scaled by 2^-K, K the larger of the product's and the
        addend's ilogb: a product more than 2^80 below the addend only adds
        its sign (r is z); an addend more than 2^200 below the product only
        breaks ties (x*y - r is 0 or far larger); otherwise all three are
        exact normal doubles and ErrFma gives the scaled fma's own rest."""
        b = self.b
        px, py, pz, pr = (_Parts(self, v) for v in (x, y, z, r))
        ep = b.add(px.logb, py.logb)
        big = b.icmp_signed(">=", ep, pz.logb)
        k = b.select(big, ep, pz.logb)
        d1, d2 = b.sub(ep, k), b.sub(pz.logb, k)
        zero = splat(0, I64)
        x1 = self.setexp(px, zero)
        rs = self.scaled(pr, k)
        # the addend too small to matter but as a tie-breaker
        t = self.fma(x1, self.setexp(py, zero), b.fneg(rs))
        tiny_addend = b.select(self.eq(t, 0.0), z, t)
        # ErrFma(x1, y1, z1): x1*y1 + z1 = q + g + al2 exactly
        y1 = self.setexp(py, b.select(b.icmp_signed("<", d1, splat(-80, I64)), zero, d1))
        z1 = self.setexp(pz, b.select(b.icmp_signed("<", d2, splat(-200, I64)), zero, d2))
        q = self.fma(x1, y1, z1)
        u1 = b.fmul(x1, y1)
        u2 = self.fma(x1, y1, b.fneg(u1))
        al1, al2 = self._two_sum(z1, u2)
        be1, be2 = self._two_sum(u1, al1)
        g = b.fadd(b.fsub(be1, q), be2)
        rest = self.pick(q, rs, b.fadd(g, al2))
        rest = b.select(b.icmp_signed("<", d2, splat(-200, I64)), tiny_addend, rest)
        return b.select(b.icmp_signed("<", d1, splat(-80, I64)), b.fmul(x1, y1), rest)

    def _two_sum(self, x, y):
        b = self.b
        s = b.fadd(x, y)
        yv = b.fsub(s, x)
        return s, b.fadd(b.fsub(x, b.fsub(s, yv)), b.fsub(y, yv))

    # the operation -----------------------------------------------------------
    def emit(self, name: str, xs: list) -> ll.Value:
        """__{name}(xs...) for name like 'dadd_rz' (see DIRECTED_F64)."""
        b = self.b
        op, mode = name.rsplit("_", 1)
        if op == "dsub":
            op, xs = "dadd", [xs[0], b.fneg(xs[1])]
        if op == "drcp":
            op, xs = "ddiv", [splat(1.0, F64)] + xs
        finite = self.finite(xs[0])
        for v in xs[1:]:
            finite = b.and_(finite, self.finite(v))
        if op == "dadd":
            r = b.fadd(*xs)
            rest = self._rest_add(xs[0], xs[1], r)
        elif op == "dmul":
            r = b.fmul(*xs)
            rest = self._rest_mul(xs[0], xs[1], r)
        elif op == "ddiv":
            r = b.fdiv(*xs)
            finite = b.and_(finite, b.xor(self.eq(xs[1], 0.0), splat(1, I1)))
            rest = self._rest_div(xs[0], xs[1], r)
        elif op == "dsqrt":
            r = self.call("sqrt", _V64, xs[0])
            finite = b.and_(finite, b.fcmp_ordered(">", xs[0], splat(0.0, F64)))
            rest = self._rest_sqrt(xs[0], r)
        else:
            r = self.fma(*xs)
            finite = b.and_(finite, b.xor(b.or_(self.eq(xs[0], 0.0), self.eq(xs[1], 0.0)), splat(1, I1)))
            rest = self._rest_fma(xs[0], xs[1], xs[2], r)
        # an exact result that is not finite, or none (x/0, sqrt(-1)), stays
        # (a finite one past DBL_MAX has a rest of -inf: r - big, q - r)
        rest = b.select(finite, rest, splat(0.0, F64))
        return self._step(op, mode, r, rest, xs)

    def _step(self, op, mode, r, rest, xs):
        """r moved one double toward zero (rz), +inf (ru) or -inf (rd) where
        the rest's sign says the exact result lies that way."""
        b = self.b
        zero = splat(0.0, F64)
        above, below = b.fcmp_ordered(">", rest, zero), b.fcmp_ordered("<", rest, zero)
        bits = b.bitcast(r, _VI)
        neg = b.icmp_signed("<", bits, splat(0, I64))
        is0 = self.eq(r, 0.0)
        inc, dec = b.add(bits, splat(1, I64)), b.sub(bits, splat(1, I64))
        if mode == "rz":
            step = b.and_(b.xor(is0, splat(1, I1)), b.select(neg, above, below))
            new = dec
        elif mode == "ru":
            step, new = above, b.select(is0, splat(1, I64), b.select(neg, dec, inc))
        else:
            step, new = below, b.select(is0, splat(_SIGN | 1, I64), b.select(neg, inc, dec))
            if op in ("dadd", "fma"):
                # an exact zero sum is -0 rounding down unless both terms are +0 (IEEE 754 6.3)
                terms = [b.bitcast(v, _VI) for v in xs]
                if op == "fma":
                    terms = [b.xor(terms[0], terms[1]), terms[2]]
                sign = b.and_(b.or_(*terms), splat(_SIGN, I64))
                exact_zero = b.and_(is0, self.eq(rest, 0.0))
                bits = b.select(exact_zero, b.or_(bits, sign), bits)
        return b.bitcast(b.select(step, new, bits), _V64)
