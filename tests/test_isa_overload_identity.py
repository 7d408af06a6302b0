"""Which types overloading tells apart (ir.overload_identity): C++ types that
share a representation with another ('long' and 'long long', 'signed char'
and 'char', a scoped enum and its underlying integer) are distinct
parameter types, and a call picks the one of its argument's own type, as
nvcc does; every accepted kernel is also compiled by nvcc (where it is on
the PATH)."""
from __future__ import annotations

from isa_ir_walk import run


def _pair(a: str, b: str, calls: str) -> str:
    return f"__device__ int f({a} x) {{ return 1; }}\n__device__ int f({b} x) {{ return 2; }}\n" \
           f"__global__ void k(int *o) {{ {calls} }}\n"


def test_long_and_long_long_overloads_pick_the_argument_s_own_type(tmp_path):
    src = _pair("long", "long long", "long x = 1; long long y = 1;\n"
                "  o[0] = f(x); o[1] = f(y); o[2] = f(5L); o[3] = f(5LL);")
    assert list(run(src, tmp_path)) == [1, 2, 1, 2]


def test_unsigned_long_and_unsigned_long_long_overloads_pick_the_argument_s_own_type(tmp_path):
    src = _pair("unsigned long", "unsigned long long", "unsigned long x = 1; unsigned long long y = 1;\n"
                "  o[0] = f(x); o[1] = f(y); o[2] = f(5UL); o[3] = f(5ULL);")
    assert list(run(src, tmp_path)) == [1, 2, 1, 2]


def test_char_and_signed_char_overloads_pick_the_argument_s_own_type(tmp_path):
    src = _pair("char", "signed char", "char x = 1; signed char y = 1;\n"
                "  o[0] = f(x); o[1] = f(y); o[2] = f('a'); o[3] = f((signed char)1);")
    assert list(run(src, tmp_path)) == [1, 2, 1, 2]


def test_a_long_argument_still_converts_to_a_lone_long_long_parameter(tmp_path):
    src = "__device__ long long g(long long v) { return v * 2; }\n" \
          "__global__ void k(int *o) { long x = 3; o[threadIdx.x] = (int)(g(x) + g(4L)); }\n"
    assert list(run(src, tmp_path)) == [14] * 4


def test_a_scoped_enum_and_its_underlying_int_are_distinct_overloads(tmp_path):
    src = "enum class C { R = 1, G = 2 };\n" + \
          _pair("C", "int", "o[0] = f(C::G); o[1] = f(1); C c = C::R; o[2] = f(c); o[3] = f((int)c);")
    assert list(run(src, tmp_path)) == [1, 2, 1, 2]


def test_a_scoped_enum_on_unsigned_char_and_unsigned_char_are_distinct_overloads(tmp_path):
    src = "enum class C : unsigned char { R = 1, G = 2 };\n" + \
          _pair("C", "unsigned char", "o[0] = f(C::G); o[1] = f((unsigned char)1);")
    assert list(run(src, tmp_path))[:2] == [1, 2]


def test_two_scoped_enums_are_distinct_overloads(tmp_path):
    src = "enum class A { X = 1 }; enum class B { Y = 1 };\n" + \
          _pair("A", "B", "o[0] = f(A::X); o[1] = f(B::Y);")
    assert list(run(src, tmp_path))[:2] == [1, 2]


def test_an_int_argument_does_not_convert_to_a_scoped_enum_parameter(tmp_path):
    # int -> C is no conversion at all, so f(float) is the only viable one
    src = "enum class C { R = 1 };\n" + _pair("C", "float", "o[0] = f(1);")
    assert list(run(src, tmp_path))[0] == 2


def test_a_scoped_enum_argument_deduces_its_own_type_for_an_unnamed_parameter(tmp_path):
    src = "enum class A : char { X = 1 };\n" \
          "template <typename T> __device__ int g(T) { return sizeof(T) * 100; }\n" \
          "__global__ void k(int *o) { o[0] = g(A::X); o[1] = g(5); }\n"
    assert list(run(src, tmp_path))[:2] == [100, 400]


def test_size_t_int64_t_ptrdiff_t_and_sizeof_are_long_types_as_on_an_lp64_host(tmp_path):
    # glibc x86-64: int64_t, intptr_t, ptrdiff_t are long; uint64_t, size_t and sizeof's type unsigned long
    src = "#include <cstdint>\n" \
          "__device__ int f(long x) { return 1; }\n__device__ int f(long long x) { return 2; }\n" \
          "__device__ int g(unsigned long x) { return 1; }\n__device__ int g(unsigned long long x) { return 2; }\n" \
          "__global__ void k(int *o) { int64_t a = 1; intptr_t b = 1; size_t c = 1; uint64_t d = 1;\n" \
          "  o[0] = f(a) * 10 + f(b); o[1] = f(o - o); o[2] = g(c) * 10 + g(d); o[3] = g(sizeof(int)); }\n"
    assert list(run(src, tmp_path)) == [11, 1, 11, 1]


def test_a_non_const_reference_binds_only_to_its_own_type_among_overloads(tmp_path):
    # long & cannot bind a long long, so f(float) is the only viable one (nvcc compiles it)
    src = "__device__ int f(long &r) { r = 5; return 1; }\n__device__ int f(float x) { return 2; }\n" \
          "__global__ void k(int *o) { long long c = 1; long d = 1; o[0] = f(c); o[1] = f(d) * 10 + (int)d; }\n"
    assert list(run(src, tmp_path))[:2] == [2, 15]
