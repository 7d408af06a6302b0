"""C++11/14/17 declaration syntax that nvcc accepts: `__align__`/`alignas`,
empty structs, brace initialisation, alias declarations, scoped enums,
static_assert, digit separators, char arrays from string literals, if/switch
with an initialiser. Each kernel runs on gpuemu with nvcc's answer (worked by
hand from the C++ rules); where nvcc is on the PATH it also compiles each
accepted kernel, and refuses each refused one, to show they are valid (or
invalid) CUDA."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import gpuemu
from isa_ir_walk import compile_error

NVCC = shutil.which("nvcc")


def nvcc_result(src: str, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "k.cu"
    path.write_text(src)
    return subprocess.run([NVCC, "-arch=sm_90", "-c", str(path), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True, timeout=300)


def run(src: str, tmp_path, n: int = 1) -> list:
    """Launch `k(int *o)` on one thread; o's first n ints. nvcc compiles src too."""
    if NVCC is not None:
        r = nvcc_result(src, tmp_path)
        assert r.returncode == 0, r.stderr
    o = gpuemu.zeros(n, dtype=np.int32)
    gpuemu.RawModule(code=src).get_function("k")((1,), (1,), (o,))
    return [int(x) for x in o.get()]


def refused(src: str, tmp_path) -> str:
    """gpuemu's CompileError message for src (nvcc refuses it too)."""
    if NVCC is not None:
        assert nvcc_result(src, tmp_path).returncode != 0
    return str(compile_error(src))


# ------------------------------------------------------- __align__ / alignas

def test_align_between_struct_and_tag_sets_size_and_alignment(tmp_path):
    src = ("struct __align__(16) V { float a, b; };\n"
           "__global__ void k(int *o) { o[0] = sizeof(V); o[1] = alignof(V); }")
    assert run(src, tmp_path, 2) == [16, 16]


def test_align_after_struct_body_applies_to_the_type(tmp_path):
    src = ("struct W { float a, b; } __align__(16);\n"
           "__global__ void k(int *o) { o[0] = sizeof(W); o[1] = alignof(W); }")
    assert run(src, tmp_path, 2) == [16, 16]


def test_alignas_on_struct_and_on_member(tmp_path):
    src = ("struct alignas(16) Y { float a, b; };\n"
           "struct Z { char c; alignas(8) int i; };\n"
           "__global__ void k(int *o) { o[0] = sizeof(Y); o[1] = alignof(Y); o[2] = sizeof(Z); o[3] = alignof(Z); }")
    assert run(src, tmp_path, 4) == [16, 16, 16, 8]


def test_aligned_struct_as_member_pads_the_outer_struct(tmp_path):
    src = ("struct __align__(16) V { float a, b; };\n"
           "struct Q { char c; V v; };\n"
           "typedef struct __align__(8) { float x; } T;\n"
           "__global__ void k(int *o) { o[0] = sizeof(Q); o[1] = alignof(Q); o[2] = sizeof(T); o[3] = alignof(T); }")
    assert run(src, tmp_path, 4) == [32, 16, 8, 8]


def test_smaller_alignment_than_natural_is_ignored(tmp_path):
    src = ("struct __align__(2) S { int i; };\n"
           "__global__ void k(int *o) { o[0] = sizeof(S); o[1] = alignof(S); }")
    assert run(src, tmp_path, 2) == [4, 4]


def test_alignas_on_variables_places_them_aligned(tmp_path):
    src = ("__constant__ char c0; __constant__ alignas(16) float c1[2];\n"
           "__global__ void k(int *o) { __shared__ char s0; __shared__ __align__(32) int s1[3];"
           " alignas(16) float l1[3]; l1[0] = c0 + c1[0] + s0;"
           " o[0] = (int)((size_t)&s1 % 32); o[1] = (int)((size_t)&c1 % 16); o[2] = (int)((size_t)l1 % 16);"
           " o[3] = (int)((size_t)&s1 - (size_t)&s0); }")
    assert run(src, tmp_path, 4) == [0, 0, 0, 32]


def test_alignment_not_a_power_of_two_is_refused(tmp_path):
    msg = refused("struct alignas(3) A { int i; };\n__global__ void k(int *o) { }", tmp_path)
    assert "t.cu:1:16" in msg and "invalid alignment 3" in msg


# ------------------------------------------------------------- empty structs

def test_struct_without_data_members_has_size_one(tmp_path):
    src = ("struct E {};\nstruct F { E e; int i; };\n"
           "__global__ void k(int *o) { E e; E a[3]; F f; f.i = 3; E e2 = e;"
           " o[0] = sizeof(E); o[1] = alignof(E); o[2] = sizeof(F); o[3] = f.i; o[4] = sizeof(a); }")
    assert run(src, tmp_path, 5) == [1, 1, 8, 3, 3]


def test_struct_of_member_functions_only_calls_one_defined_later(tmp_path):
    src = ("struct A { __device__ int f() { return g() + 1; } __device__ int g() { return 41; } };\n"
           "__global__ void k(int *o) { A a; o[0] = a.f(); }")
    assert run(src, tmp_path) == [42]


def test_member_function_calls_a_later_one_reading_data_members(tmp_path):
    src = ("struct A { int v; __device__ int f(int k = 2) { return g(k) + 1; }"
           " __device__ int g(int k) const { return v * k; } };\n"
           "__global__ void k(int *o) { A a; a.v = 20; A *p = &a; o[0] = a.f(); o[1] = a.f(3); o[2] = p->f(); }")
    assert run(src, tmp_path, 3) == [41, 61, 41]


# ------------------------------------------------- brace initialisation, T{...}

def test_direct_list_initialisation_of_struct_scalar_and_array(tmp_path):
    src = ("struct P { int x, y; };\n"
           "__global__ void k(int *o) { P q{3, 4}; int x{5}; int z{}; float a[3]{1, 2, 3}; int b[]{4, 5};"
           " o[0] = q.x * 10 + q.y; o[1] = x; o[2] = z; o[3] = (int)(a[0] + a[1] + a[2]); o[4] = sizeof(b); }")
    assert run(src, tmp_path, 5) == [34, 5, 0, 6, 8]


def test_direct_list_initialisation_of_several_declarators_and_nested_braces(tmp_path):
    src = ("struct P { int x, y; }; struct L { P a, b; };\n"
           "__device__ int g{7};\n"
           "__global__ void k(int *o) { int a{1}, b{2}, *p{&a}; L l{{1, 2}, {3, 4}}; P ps[2]{{5, 6}, {7, 8}};"
           " o[0] = a + b + *p; o[1] = l.b.x; o[2] = ps[1].y; o[3] = g; }")
    assert run(src, tmp_path, 4) == [4, 3, 8, 7]


def test_struct_temporary_from_braces_returned_passed_and_read(tmp_path):
    src = ("struct V { float x; };\n"
           "__device__ V add(V a, V b) { return V{a.x + b.x}; }\n"
           "__global__ void k(int *o) { V a{1.f}, b{2.f}; o[0] = (int)add(a, b).x; o[1] = (int)V{7.f}.x;"
           " o[2] = (int)add(V{3.f}, b).x; }")
    assert run(src, tmp_path, 3) == [3, 7, 5]


def test_functional_notation_value_initialises_and_copies_structs(tmp_path):
    src = ("struct V { float x; int y; };\n"
           "__global__ void k(int *o) { V a{1.5f, 2}; V b = V(a); V c = V(); o[0] = b.y; o[1] = c.y;"
           " o[2] = (int)c.x; o[3] = int{9} + int(); }")
    assert run(src, tmp_path, 4) == [2, 0, 0, 9]


def test_vector_temporary_from_braces(tmp_path):
    src = "__global__ void k(int *o) { float4 v{1, 2, 3, 4}; int2 w = int2{5, 6}; o[0] = (int)v.w; o[1] = w.y; }"
    assert run(src, tmp_path, 2) == [4, 6]


def test_non_narrowing_constants_in_braces_are_accepted(tmp_path):
    src = ("__global__ void k(int *o) { const int ci = 5; char c{ci}; float f{1.1}; unsigned char u{255};"
           " float g{16777216}; o[0] = c + u + (int)(f * 10) + (g == 16777216.0f); }")
    assert run(src, tmp_path) == [5 + 255 + 11 + 1]


@pytest.mark.parametrize("decl, frm, to", [
    ("int x{1.5};", "double", "int"),
    ("long l = 5; int x{l};", "long", "int"),
    ("unsigned x{-1};", "int", "unsigned int"),
    ("float x{16777217};", "int", "float"),
    ("double d = 2; float x{d};", "double", "float"),
])
def test_narrowing_inside_braces_is_refused(decl, frm, to):
    # nvcc 13.0 only warns (#2361, #2364, #68) and compiles; the subset refuses
    msg = str(compile_error("__global__ void k(int *o) { " + decl + " o[0] = x; }"))
    assert "narrowing conversion from" in msg and f"to '{to}' inside braces" in msg


def test_narrowing_inside_struct_temporary_is_refused():
    msg = str(compile_error("struct P { int x; float y; };\n__global__ void k(int *o) { P q = P{2.5, 1}; }"))
    assert "t.cu:2:37" in msg and "narrowing conversion from 'double' to 'int'" in msg


# ------------------------------------------------------- alias declarations

def test_alias_declarations_at_file_and_block_scope(tmp_path):
    src = ("namespace ns { struct P { int x; }; }\n"
           "using U = unsigned; using A4 = int[4]; using PP = const ns::P *;\n"
           "__global__ void k(int *o) { using F = float; U u = 0u - 1u; A4 a = {1, 2, 3, 4}; ns::P p{5};"
           " PP q = &p; F f = 2.5f; o[0] = u > 0; o[1] = sizeof(A4); o[2] = q->x; o[3] = (int)(f * 2) + a[3]; }")
    assert run(src, tmp_path, 4) == [1, 16, 5, 9]


def test_block_scope_typedef_and_alias_together(tmp_path):
    src = "__global__ void k(int *o) { typedef int T; using U = unsigned; T a = 3; U b = 4; o[0] = a + b; }"
    assert run(src, tmp_path) == [7]


# -------------------------------------------------------------- scoped enums

ENUMS = ("enum class Color { Red = 1, Green = 5, Blue };\n"
         "enum struct Small : unsigned char { A, B = 200 };\n"
         "enum E : short { X = -3, Y };\n"
         "namespace ns { enum class In { P = 7 }; }\n")


def test_scoped_enum_values_casts_sizes_and_comparisons(tmp_path):
    src = ENUMS + ("__global__ void k(int *o) { Color c = Color::Green; Small s = Small::B; E e = Y; E f = E::X;"
                   " o[0] = (int)c; o[1] = static_cast<int>(Color::Blue); o[2] = (int)s; o[3] = e + f;"
                   " o[4] = sizeof(Small) * 100 + sizeof(E) * 10 + sizeof(Color);"
                   " o[5] = c == Color::Green; o[6] = c != Color::Red && c > Color::Red; o[7] = (int)ns::In::P; }")
    assert run(src, tmp_path, 8) == [5, 6, 200, -5, 124, 1, 1, 7]


def test_switch_on_scoped_enum_and_cast_from_int(tmp_path):
    src = ENUMS + ("__global__ void k(int *o) { Color c = static_cast<Color>(5);"
                   " switch (c) { case Color::Red: o[0] = 1; break; case Color::Green: o[0] = 2; break;"
                   " default: o[0] = 3; } o[1] = (Color)1 == Color::Red; }")
    assert run(src, tmp_path, 2) == [2, 1]


def test_scoped_enum_members_and_results(tmp_path):
    src = ENUMS + ("struct S { Color c; Small s; int i; };\n"
                   "__device__ Color pick(bool b) { return b ? Color::Red : Color::Blue; }\n"
                   "__global__ void k(int *o) { S x{Color::Blue, Small::A, 4}; o[0] = sizeof(S); o[1] = (int)x.c;"
                   " o[2] = (int)pick(true); }")
    assert run(src, tmp_path, 3) == [12, 6, 1]


@pytest.mark.parametrize("body, msg", [
    ("int x = Color::Green;", "no implicit conversion from 'Color' to 'int'"),
    ("Color c = 5;", "no implicit conversion from 'int' to 'Color'"),
    ("o[0] = Color::Green;", "no implicit conversion from 'Color' to 'int'"),
    ("o[0] = (int)(Color::Green + 1);", "invalid operands to binary '+' ('Color' and 'int')"),
    ("o[0] = Color::Green == 5;", "invalid operands to binary '==' ('Color' and 'int')"),
    ("if (Color::Green) o[0] = 1;", "'Color' is not contextually convertible to 'bool'"),
    ("o[0] = (int)-Color::Green;", "invalid argument type 'Color' to unary '-'"),
    ("Color c = Color::Red; c++;", "cannot increment or decrement a value of type 'Color'"),
    ("o[Color::Green] = 1;", "array subscript is not an integer ('Color')"),
    ("o[0] = (int)Green;", "use of undeclared identifier 'Green'"),
])
def test_scoped_enum_does_not_convert_implicitly(body, msg, tmp_path):
    src = ENUMS + "__global__ void k(int *o) { " + body + " }"
    assert msg in refused(src, tmp_path)


def test_enumerator_outside_the_underlying_type_is_refused(tmp_path):
    msg = refused("enum class T : unsigned char { A = 300 };\n__global__ void k(int *o) { }", tmp_path)
    assert "t.cu:1:32" in msg and "enumerator value 300 is outside the range of the underlying type" in msg


# ------------------------------------------------------------- static_assert

def test_true_static_asserts_at_file_struct_and_block_scope_compile_to_nothing(tmp_path):
    src = ("static_assert(sizeof(int) == 4, \"int\"); static_assert(sizeof(long) == 8);\n"
           "struct S { int a; static_assert(sizeof(int) == 4, \"in struct\"); int b; };\n"
           "__global__ void k(int *o) { constexpr int n = 3; static_assert(n == 3, \"block\");"
           " static_assert(sizeof(S) == 8); o[0] = sizeof(S); }")
    assert run(src, tmp_path) == [8]


@pytest.mark.parametrize("src, where, msg", [
    ("static_assert(sizeof(int) == 8, \"int must be \" \"8 bytes\");\n__global__ void k(int *o) { }",
     "t.cu:1:1", "static assertion failed: int must be 8 bytes"),
    ("struct S {\n  char c;\n  static_assert(sizeof(char) == 2, \"char\");\n};\n__global__ void k(int *o) { }",
     "t.cu:3:3", "static assertion failed: char"),
    ("__global__ void k(int *o) {\n  const int n = 2;\n  static_assert(n > 2);\n}",
     "t.cu:3:3", "static assertion failed"),
    ("__global__ void k(int *o) { int n = o[0]; static_assert(n > 2, \"x\"); }",
     "t.cu:1:59", "the condition of a static_assert must be a constant expression"),
])
def test_false_or_non_constant_static_assert_is_refused_at_its_line(src, where, msg, tmp_path):
    e = refused(src, tmp_path)
    assert where in e and msg in e


# -------------------------------------------------------- digit separators

def test_digit_separators_in_integer_and_floating_literals(tmp_path):
    src = ("__global__ void k(int *o) { o[0] = 1'000'000; o[1] = 0xFF'FF; o[2] = 0b1010'1010;"
           " o[3] = (int)(1'000.5f * 2); long long b = 1'000'000'000'000LL; o[4] = (int)(b / 1'000'000);"
           " o[5] = 0'17; o[6] = 'a' + 1'2; }")
    assert run(src, tmp_path, 7) == [1000000, 65535, 170, 2001, 1000000, 15, 97 + 12]


def test_macros_after_a_digit_separator_are_expanded(tmp_path):
    src = ("#define FF 3\n#define N 5\n#if 1'000 > 999\n#define M 7\n#endif\n"
           "__global__ void k(int *o) { o[0] = 0xFF'FF + FF; o[1] = 1'000 + N; char c = 'x'; o[2] = M + c; }")
    assert run(src, tmp_path, 3) == [65538, 1005, 7 + 120]


@pytest.mark.parametrize("lit, col", [("1'000'", 41), ("1''000", 37)])
def test_misplaced_digit_separator_is_refused(lit, col, tmp_path):
    e = refused("__global__ void k(int *o) { o[0] = " + lit + "; }", tmp_path)
    assert f"t.cu:1:{col}" in e and "digit separator cannot appear here" in e


# ------------------------------------------------ char arrays from literals

def test_char_array_sized_by_its_string_literal_and_nul(tmp_path):
    src = ("__global__ void k(int *o) { char s[] = \"hi\"; char w[] = {\"a\" \"b\"}; const char c[] = \"z\\n\";"
           " o[0] = s[0] + s[1] + sizeof(s); o[1] = sizeof(w); o[2] = c[1] + sizeof(c); }")
    assert run(src, tmp_path, 3) == [104 + 105 + 3, 3, 10 + 3]


def test_longer_char_array_is_zero_filled_after_the_literal(tmp_path):
    src = "__global__ void k(int *o) { char t[8] = \"hi\"; o[0] = t[1]; o[1] = t[2] + t[7]; o[2] = sizeof(t); }"
    assert run(src, tmp_path, 3) == [105, 0, 8]


def test_signed_and_unsigned_char_arrays_and_nested_and_file_scope_ones(tmp_path):
    src = ("__constant__ char g[] = \"abc\"; __device__ unsigned char h[6] = \"xy\";\n"
           "__global__ void k(int *o) { unsigned char u[] = \"\\xff\"; signed char v[4] = \"\\xff\";"
           " char n[2][3] = {\"ab\", \"cd\"}; o[0] = u[0]; o[1] = v[0]; o[2] = n[1][1];"
           " o[3] = sizeof(g) * 100 + g[2]; o[4] = h[1] + h[5]; }")
    assert run(src, tmp_path, 5) == [255, -1, 100, 499, 121]


@pytest.mark.parametrize("src, where", [
    ("__global__ void k(int *o) { char s[2] = \"hi\"; }", "t.cu:1:41"),
    ("__constant__ char g[3] = \"abc\";\n__global__ void k(int *o) { }", "t.cu:1:26"),
])
def test_string_literal_longer_than_its_char_array_is_refused(src, where, tmp_path):
    e = refused(src, tmp_path)
    assert where in e and "needs" in e and "bytes with its NUL; it does not fit 'char [" in e


# ------------------------------------------- if / switch with an initialiser

def test_if_with_initialiser_sees_it_in_both_branches_and_hides_the_outer_name(tmp_path):
    src = ("__device__ int f(int i) { return i - 1; }\n"
           "__global__ void k(int *o) { int x = 100; if (int x = f(threadIdx.x); x > 0) o[0] = x; else o[0] = x - 10;"
           " o[1] = x; if (x = 5; x > 3) o[2] = x; if (int a = 2, b = 3; a < b) o[3] = a * b;"
           " int n = 0; for (int i = 0; i < 3; i++) if (int j = i * 2; j != 2) n += j; o[4] = n; }")
    assert run(src, tmp_path, 5) == [-11, 100, 5, 6, 4]


def test_switch_with_initialiser(tmp_path):
    src = ("struct P { int a, b; };\n"
           "__global__ void k(int *o) { switch (int v = 2; v) { case 2: o[0] = v * 10; break; default: o[0] = -1; }"
           " switch (P q = {5, 6}; q.b) { case 6: o[1] = q.a; break; } if (P p{3, 4}; p.a < p.b) o[2] = p.a + p.b; }")
    assert run(src, tmp_path, 3) == [20, 5, 7]


def test_if_initialiser_is_out_of_scope_after_the_statement(tmp_path):
    e = refused("__global__ void k(int *o) { if (int x = 1; x) o[0] = x; o[1] = x; }", tmp_path)
    assert "t.cu:1:64" in e and "use of undeclared identifier 'x'" in e


def test_auto_with_one_braced_initialiser_takes_its_type(tmp_path):
    src = "__global__ void k(int *o) { auto x{5}; auto y{2.5f}; o[0] = x; o[1] = sizeof(x) + sizeof(y); o[2] = y * 2; }"
    assert run(src, tmp_path, 3) == [5, 8, 5]


def test_a_scoped_enum_value_template_parameter_takes_its_enumerators(tmp_path):
    src = "enum class A { X = 1, Y = 7 };\n" \
          "template <A a = A::Y> __device__ int h() { switch (a) { case A::X: return 10; default: return (int)a; } }\n" \
          "__global__ void k(int *o) { o[0] = h<A::X>(); o[1] = h(); o[2] = h<A::Y>(); }\n"
    assert run(src, tmp_path, 3) == [10, 7, 7]


def test_an_integer_for_a_scoped_enum_template_parameter_is_refused(tmp_path):
    src = "enum class A { X = 1 };\ntemplate <A a> __device__ int h() { return (int)a; }\n" \
          "__global__ void k(int *o) { o[0] = h<1>(); }\n"
    assert "template argument 'a' must be a constant of type 'A'" in refused(src, tmp_path)
