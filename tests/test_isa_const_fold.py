"""Constant folding of IR expressions, with the GPU's answers where C is open."""
from __future__ import annotations

from isa import ir
from isa.const_fold import fold, pack
from isa.ir import I32, U32, F32, BOOL, NOLOC


def c(v, t=I32):
    return ir.Const(t, NOLOC, v)


def b(op, x, y, t=I32):
    return ir.Binary(t, NOLOC, op, x, y)


def test_signed_division_truncates_toward_zero():
    assert fold(b("div", c(-7), c(2))) == -3 and fold(b("rem", c(-7), c(2))) == -1


def test_unsigned_overflow_wraps():
    assert fold(b("add", c(0xFFFFFFFF, U32), c(1, U32), U32)) == 0


def test_signed_overflow_wraps_as_the_gpu_does():
    assert fold(b("add", c(2**31 - 1), c(1))) == -2**31


def test_division_by_zero_is_not_constant():
    assert fold(b("div", c(1), c(0))) is None


def test_over_wide_shift_clamps_like_ptx():
    assert fold(b("shl", c(1), c(40))) == 0
    assert fold(b("shr", c(-8), c(40))) == -1


def test_comparison_folds_to_bool():
    assert fold(ir.Binary(BOOL, NOLOC, "lt", c(1), c(2))) is True


def test_conditional_picks_side():
    assert fold(ir.Cond(I32, NOLOC, c(False, BOOL), c(1), c(2))) == 2


def test_non_constant_is_none():
    v = ir.Var("x", I32, "reg")
    assert fold(b("add", ir.VarRef(I32, NOLOC, v), c(1))) is None


def test_float_arithmetic_rounds_to_binary32():
    assert fold(b("div", c(1.0, F32), c(3.0, F32), F32)) == 0.3333333432674408


def test_pack_little_endian():
    assert pack(-2, I32) == b"\xfe\xff\xff\xff" and pack(1.0, F32) == b"\x00\x00\x80\x3f"
