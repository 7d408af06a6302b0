"""Type words and C struct layout."""
from __future__ import annotations

from isa import ir
from isa.builtins import VECTOR_TYPES
from isa.declarations import scalar_from_words, struct_layout, union_layout
from isa.ir import I8, U8, I16, U32, I64, U64, F64


def test_type_word_combinations():
    assert scalar_from_words(["unsigned"]) == U32
    assert scalar_from_words(["long", "unsigned", "long", "int"]) == U64
    assert scalar_from_words(["signed", "char"]) == I8
    assert scalar_from_words(["short", "int"]) == I16
    assert scalar_from_words(["long"]) == I64


def test_invalid_word_combination_is_none():
    assert scalar_from_words(["float", "int"]) is None


def test_struct_layout_aligns_members_and_pads_tail():
    t = struct_layout("S", [("c", U8), ("d", F64), ("s", I16)])
    assert [f.offset for f in t.fields] == [0, 8, 16] and t.size == 24 and t.align == 8


def test_struct_with_array_member():
    t = struct_layout("S", [("a", ir.ArrayType(U8, 3)), ("i", U32)])
    assert t.field("i").offset == 4 and t.size == 8


def test_union_layout_puts_every_member_at_offset_zero():
    t = union_layout("U", [("c", U8), ("d", F64), ("i", ir.ArrayType(U32, 3))])
    assert [f.offset for f in t.fields] == [0, 0, 0] and t.size == 16 and t.align == 8 and t.union


def test_union_size_rounds_up_to_the_largest_alignment():
    t = union_layout("U", [("c", ir.ArrayType(U8, 5)), ("s", I16)])
    assert t.size == 6 and t.align == 2 and str(t) == "union U"


def test_vector_alignment_table():
    assert {n: VECTOR_TYPES[n].align for n in ("char2", "short2", "int2", "float3", "float4", "double2",
                                               "longlong2", "double4", "uchar4")} == \
        {"char2": 2, "short2": 4, "int2": 8, "float3": 4, "float4": 16, "double2": 16, "longlong2": 16,
         "double4": 16, "uchar4": 4}
