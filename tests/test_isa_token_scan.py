"""The token pre-pass: typedef names become TYPE_NAME, unsupported names are
reported where they stand."""
from __future__ import annotations

import pytest

from isa.diagnostics import CompileError
from isa.parser import lex
from isa.preprocessor import preprocess
from isa.token_scan import Tokens, prepass


def scanned(src: str) -> list:
    pp = preprocess(src, "s.cu")
    toks = lex(pp)
    prepass(Tokens(pp, toks))
    return [(str(t), t.type) for t in toks]


def test_typedef_name_is_retyped_after_its_declaration():
    toks = scanned("typedef float real; real x;")
    assert ("real", "IDENT") in toks[:4] and toks[4] == ("real", "TYPE_NAME")


def test_typedef_list_declares_every_name():
    toks = scanned("typedef int A, *B; A a; B b;")
    assert [t for t in toks if t[0] in ("A", "B") and t[1] == "TYPE_NAME"] == [("A", "TYPE_NAME"), ("B", "TYPE_NAME")]


def test_typedef_of_array_declares_the_name_not_the_size_macro():
    toks = scanned("typedef int V[4]; V v;")
    assert ("V", "TYPE_NAME") in toks


def test_struct_tag_is_a_type_name_as_in_cpp():
    toks = scanned("struct P { int x; }; P p;")
    assert toks[-3] == ("P", "TYPE_NAME")


def test_builtin_vector_and_size_t_are_type_names():
    toks = scanned("float4 a; size_t n; uint2 u;")
    assert [t[1] for t in toks if t[0] in ("float4", "size_t", "uint2")] == ["TYPE_NAME"] * 3


def test_member_named_like_unsupported_word_is_fine():
    toks = scanned("s.texture = 1;")
    assert ("texture", "IDENT") in toks


@pytest.mark.parametrize("src,col", [("int a;\n  try { }", 3), ("x = a::b;", 6)])
def test_unsupported_reported_at_its_column(src, col):
    with pytest.raises(CompileError) as e:
        scanned(src)
    assert e.value.col == col


def test_kernel_launch_syntax_is_named():
    with pytest.raises(CompileError) as e:
        scanned("void h() { k<<<1, 32>>>(p); }")
    assert "kernel launches" in e.value.message
