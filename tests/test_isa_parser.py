"""The parser: the AST of C constructs and one-sentence syntax diagnostics."""
from __future__ import annotations

import pytest

from isa import ast as A
from isa.parser import parse
from isa.preprocessor import preprocess
from isa_ir_walk import compile_error


def tu(src: str) -> A.TranslationUnit:
    return parse(preprocess(src, "p.cu"))


def body_items(src: str) -> list:
    f = tu(f"__global__ void k(int *p)\n{{\n{src}\n}}\n").items[0]
    return f.body.items


def test_function_definition_has_specs_and_params():
    f = tu("__global__ void k(float *a, int n) {}").items[0]
    assert isinstance(f, A.FunctionDef) and f.declarator.name == "k"
    assert "__global__" in f.specs.storage
    params = f.declarator.ops[-1][1]
    assert [p.declarator.name for p in params] == ["a", "n"]


def test_pointer_to_pointer_declarator_ops():
    d = body_items("int **pp;")[0].decl.items[0].declarator
    assert [op[0] for op in d.ops] == ["ptr", "ptr"]


def test_two_dimensional_array_declarator_is_base_first():
    d = body_items("int a[2][3];")[0].decl.items[0].declarator
    sizes = [op[1].text for op in d.ops]
    assert sizes == ["3", "2"]


def test_array_of_pointers_declarator():
    d = body_items("int *a[4];")[0].decl.items[0].declarator
    assert [op[0] for op in d.ops] == ["ptr", "array"]


def test_precedence_multiplication_binds_tighter():
    e = body_items("p[0] = 1 + 2 * 3;")[0].expr.value
    assert isinstance(e, A.BinOp) and e.op == "+" and isinstance(e.b, A.BinOp) and e.b.op == "*"


def test_shift_lexes_as_one_operator():
    e = body_items("p[0] = 1 << 3;")[0].expr.value
    assert e.op == "<<"


def test_compound_shift_assignment():
    e = body_items("p[0] <<= 3;")[0].expr
    assert isinstance(e, A.AssignOp) and e.op == "<<="


def test_cast_of_typedef_name():
    items = tu("typedef unsigned int u32;\n__global__ void k(int *p) { p[0] = (u32)p[1]; }").items
    e = items[1].body.items[0].expr.value
    assert isinstance(e, A.CastExpr)


def test_parenthesised_expression_is_not_a_cast():
    e = body_items("int x = 1; p[0] = (x) * 2;")[1].expr.value
    assert isinstance(e, A.BinOp) and e.op == "*"


def test_typedef_then_use_on_next_statement():
    f = tu("typedef float real;\nreal g(real x);\n").items
    assert len(f) == 2


def test_struct_name_usable_without_struct_keyword():
    items = tu("struct P { int x; };\n__global__ void k(P *p) { p->x = 1; }").items
    assert isinstance(items[1], A.FunctionDef)


def test_dangling_else_binds_to_nearest_if():
    s = body_items("if (p) if (p[0]) p[1] = 1; else p[2] = 2;")[0]
    assert s.other is None and s.then.other is not None


def test_for_with_empty_condition_and_step():
    s = body_items("for (int i = 0;;) break;")[0]
    assert isinstance(s, A.For) and s.cond is None and s.step is None


def test_for_with_step_only():
    s = body_items("int i = 0; for (; ; i++) break;")[1]
    assert s.cond is None and isinstance(s.step, A.UnaryOp)


def test_ternary_is_right_associative():
    e = body_items("p[0] = p[1] ? 1 : p[2] ? 2 : 3;")[0].expr.value
    assert isinstance(e, A.Ternary) and isinstance(e.b, A.Ternary)


def test_sizeof_type_and_expression():
    items = body_items("p[0] = sizeof(int) + sizeof p[1];")
    e = items[0].expr.value
    assert isinstance(e.a, A.SizeofType) and isinstance(e.b, A.SizeofExpr)


def test_ast_nodes_carry_locations():
    e = body_items("  p[0] = 1;")[0].expr
    assert e.loc.line == 3 and e.target.loc.col == 3


def test_literals_keep_their_text():
    e = body_items("p[0] = 0x1Fu + 2.5f;")[0].expr.value
    assert e.a.text == "0x1Fu" and e.b.text == "2.5f"


# ---------------------------------------------------------------- diagnostics

def test_missing_semicolon_after_expression():
    e = compile_error("__global__ void k(int *p)\n{\n    p[0] = 1\n    p[1] = 2;\n}\n")
    assert e.message == "expected ';' after expression"
    assert (e.line, e.col) == (3, 13)


def test_diagnostic_shows_source_line_and_caret():
    e = compile_error("__global__ void k(int *p)\n{\n    p[0] = 1\n    p[1] = 2;\n}\n", "kern.cu")
    text = str(e).splitlines()
    assert text[0] == "kern.cu:3:13: error: expected ';' after expression"
    assert text[1] == "    p[0] = 1"
    assert text[2] == " " * 12 + "^"


def test_missing_semicolon_after_declaration():
    e = compile_error("__global__ void k()\n{\n    int x\n    x = 1;\n}\n")
    assert e.message == "expected ';' at end of declaration" and e.line == 3


def test_missing_close_paren():
    e = compile_error("__global__ void k(int *p)\n{\n    if (p[0] == 1 { }\n}\n")
    assert e.message.startswith("expected ')'") and e.line == 3 and e.col == 19


def test_unterminated_block_at_end_of_input():
    e = compile_error("__global__ void k(int *p)\n{\n    p[0] = 1;\n")
    assert e.message == "expected '}' at end of input"


def test_unexpected_character():
    e = compile_error("__global__ void k(int *p)\n{\n    p[0] = 1 @ 2;\n}\n")
    assert e.message == "unexpected character '@'" and (e.line, e.col) == (3, 14)


def test_unknown_type_name():
    e = compile_error("__global__ void k(foo_t x)\n{\n}\n")
    assert "foo_t" in e.message and e.line == 1


def test_missing_expression():
    e = compile_error("__global__ void k(int *p)\n{\n    p[0] = ;\n}\n")
    assert e.message == "expected an expression before ';'"


def test_compile_error_never_leaks_lark_exception():
    for bad in ["}", "int (", "__global__ void k( {", "int x = ((1);", "struct { int a }", "for"]:
        e = compile_error(bad + "\n")
        assert "lark" not in str(e) and "Token(" not in str(e) and e.line >= 1


@pytest.mark.parametrize("src,msg", [
    ("class C { int x; };", "classes are not supported"),
    ("__global__ void k() { int *p = new int; }", "new and delete are not supported"),
    ("__global__ void k() { goto end; end: ; }", "goto is not supported"),
    ("__global__ void k() { auto f = [](int x) { return x; }; }", "lambdas are not supported"),
    ("template <typename T> struct S { T x; };\ntemplate <typename T> struct S<T &> { T y; };\n"
     "__global__ void k() { S<int> s; }", "this form of partial specialisation argument ('T &') is not supported"),
    ("struct B { virtual void f(); };", "virtual functions are not supported"),
    ("__global__ void k(int &r) {}", "a __global__ function cannot take a reference parameter"),
    ("__global__ void k() { cooperative_groups::grid_group g; }", "grid and multi-grid groups need a cooperative launch"),
    ("__global__ void k() { try { } catch (...) { } }", "exceptions are not supported"),
    ("__global__ void k(int *p) { p[0] = [=]() { return 1; }(); }", "lambdas are not supported"),
    ("__global__ void k(cudaSurfaceObject_t t) {}", "surface objects are not supported"),
    ("__global__ void k(float *p, cudaTextureObject_t t) { p[0] = tex3D(t, 0, 0, 0); }",
     "3D, layered and cubemap textures are not supported"),
    ("__global__ void k() { std::min(1, 2); }", "the C++ standard library is not supported"),
    ("#include <vector>\n", "system header 'vector' not found"),
    ("__global__ void k() { asm(\"exit;\"); }", "inline PTX assembly (asm) is not supported"),
    ("__global__ void k(float *p) { p[0] = __shfl(p[0], 1); }", "use '__shfl_sync'"),
    ("__global__ void k(int *p) { p[0] = __reduce_add_sync(0xffffffff, p[1]); }", "'__reduce_add_sync' is not supported"),
    ("__global__ void __cluster_dims__(2, 1, 1) k(int *p) { }", "thread block clusters (__cluster_dims__) are not supported"),
])
def test_unsupported_construct_is_named(src, msg):
    e = compile_error(src + "\n")
    assert msg in e.message


def test_unsupported_diagnostic_points_at_construct():
    e = compile_error("__global__ void k()\n{\n    int x = 1;\n    goto done;\n}\n")
    assert (e.line, e.col) == (4, 5)


@pytest.mark.parametrize("src,msg", [
    ("struct S {\n  int a;\n  S() : a(0) {}\n};\n", "constructors and destructors are not supported"),
    ("__global__ void k(int *p) { for (int x : p) {} }\n", "range-based for loops are not supported"),
    ("__global__ void k(int *p) { int x(5); }\n", "direct initialisation 'T x(...)' is not supported"),
    ("__global__ void k(int *p) { foo_t *q = 0; }\n", "unknown type name 'foo_t'"),
])
def test_cxx_construct_named_in_syntax_error(src, msg):
    assert msg in compile_error(src).message
