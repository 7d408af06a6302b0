"""C's conversion rules as pure functions (C11 6.3.1, 6.4.4.1)."""
from __future__ import annotations

import math

import pytest

from isa.conversions import promote, usual_arithmetic, wrap, const_value, int_literal_type, char_literal_value, \
    char_literal_type
from isa.ir import BOOL, I8, U8, I16, U16, I32, U32, I64, U64, F32, F64
from isa import ir
from isa_ir_walk import compile_error, compile_kernel, nodes


def test_small_integers_promote_to_int():
    assert [promote(t) for t in (BOOL, I8, U8, I16, U16)] == [I32] * 5


def test_int_and_wider_do_not_promote():
    assert [promote(t) for t in (I32, U32, I64, F32)] == [I32, U32, I64, F32]


def test_int_with_unsigned_is_unsigned():
    assert usual_arithmetic(I32, U32) == U32


def test_unsigned_with_long_long_is_long_long():
    assert usual_arithmetic(U32, I64) == I64


def test_unsigned_long_long_with_long_long_is_unsigned():
    assert usual_arithmetic(U64, I64) == U64


def test_float_with_int_is_float():
    assert usual_arithmetic(F32, I64) == F32


def test_float_with_double_is_double():
    assert usual_arithmetic(F32, F64) == F64


def test_char_with_char_is_int():
    assert usual_arithmetic(I8, U8) == I32


def test_wrap_to_signed_byte():
    assert wrap(200, I8) == -56


def test_wrap_to_unsigned_int():
    assert wrap(-1, U32) == 4294967295


def test_float_to_int_constant_truncates_toward_zero():
    assert const_value(-2.7, I32) == -2


def test_float_to_int_constant_saturates_like_cvt_rzi():
    assert const_value(1e20, I32) == 2**31 - 1 and const_value(-1e20, U32) == 0


def test_nan_to_int_constant_is_zero():
    assert const_value(math.nan, I32) == 0


def test_double_constant_to_float_rounds_to_binary32():
    assert const_value(0.1, F32) == 0.10000000149011612


def test_decimal_literal_types():
    assert int_literal_type("2147483647") == (2147483647, I32)
    assert int_literal_type("2147483648") == (2147483648, I64)


def test_hex_literal_may_be_unsigned():
    assert int_literal_type("0x80000000") == (2147483648, U32)


def test_octal_literal_value():
    assert int_literal_type("017") == (15, I32)


def test_suffixes():
    assert int_literal_type("5u")[1] == U32
    assert int_literal_type("5ll")[1] == I64
    assert int_literal_type("5ULL")[1] == U64
    assert int_literal_type("5lu")[1] == U64


def test_decimal_literal_past_long_long_is_unsigned_long_long():
    # gcc: "integer constant is so large that it is unsigned"
    assert int_literal_type("18446744073709551615") == (2**64 - 1, U64)


@pytest.mark.parametrize("text", ["99999999999999999999999999", "0xffffffffffffffffffff", "18446744073709551616"])
def test_literal_wider_than_64_bits_fits_no_type(text):
    with pytest.raises(OverflowError):
        int_literal_type(text)


def stored_literal_error(literal: str):
    """The CompileError of `p[0] = literal;` on line 3, column 12 of its kernel."""
    return compile_error(f"__global__ void k(long long *p)\n{{\n    p[0] = {literal};\n}}\n")


def test_literal_wider_than_64_bits_is_compile_error_at_the_literal():
    e = stored_literal_error("0xffffffffffffffffffff")
    assert e.message == "integer literal '0xffffffffffffffffffff' is too large for any integer type"
    assert (e.line, e.col) == (3, 12) and str(e).splitlines()[2] == " " * 11 + "^"


def test_array_size_wider_than_64_bits_is_compile_error_at_the_size():
    e = compile_error("__global__ void k()\n{\n    __shared__ char a[100000000000000000000];\n}\n")
    assert "too large for any integer type" in e.message and (e.line, e.col) == (3, 23)


def test_char_literal_escapes():
    assert char_literal_value("'\\0'") == 0
    assert char_literal_value("'\\x41'") == 65
    assert char_literal_value("'\\''") == 39


def test_multi_character_literal_is_int_of_its_bytes_as_gcc():
    assert char_literal_type("'ab'") == (0x6162, I32)
    assert char_literal_type(r"'\xff\xff'") == (0xFFFF, I32)


def test_multi_character_literal_keeps_the_last_four_chars():
    assert char_literal_value("'abcde'") == char_literal_value("'bcde'") == 0x62636465


def test_octal_escape_takes_at_most_three_digits():
    assert char_literal_value(r"'\1234'") == 0x5334


def test_single_char_literal_is_signed_char():
    assert char_literal_type(r"'\xff'") == (-1, I8) and char_literal_type("'a'") == (97, I8)


@pytest.mark.parametrize("text,message", [(r"'\x1ff'", "hex escape sequence out of range"),
                                          (r"'\777'", "octal escape sequence out of range")])
def test_escape_past_0xff_is_out_of_range(text, message):
    with pytest.raises(ValueError, match=message):
        char_literal_value(text)


def test_out_of_range_escape_is_compile_error_at_the_literal():
    e = stored_literal_error(r"'\x1ff'")
    assert e.message == r"hex escape sequence out of range in character literal '\x1ff'" and (e.line, e.col) == (3, 12)


def test_multi_character_literal_stores_its_int_value():
    fn = compile_kernel("p[0] = 'ab';", "int *p")
    assert nodes(fn.body, ir.Store)[0].value.value == 0x6162


def test_float_to_char_and_short_constant_saturates_to_32_bits_then_wraps():
    # as the JIT and nvcc's cvt.rzi.s32/.u32 then the low bits: 300 -> 0x2c
    assert const_value(300.0, I8) == 44 and const_value(300.0, U8) == 44
    assert const_value(3e9, I16) == -1 and const_value(70000.0, U16) == 4464
    assert const_value(-1.0, U8) == 0 and const_value(-200.0, I8) == 56
    assert const_value(-3e9, I16) == 0 and const_value(math.inf, U8) == 255 and const_value(math.nan, I8) == 0
