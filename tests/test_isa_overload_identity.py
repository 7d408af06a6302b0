"""Which types overloading tells apart (ir.overload_identity): C++ types that
share a representation with another ('long' and 'long long', 'signed char'
and 'char', a scoped enum and its underlying integer) are distinct
parameter types, and a call picks the one of its argument's own type, as
nvcc does; every accepted kernel is also compiled by nvcc (where it is on
the PATH)."""
from __future__ import annotations

from test_isa_overloads import run


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
