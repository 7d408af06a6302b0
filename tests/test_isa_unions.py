"""Unions: members share storage at offset 0 (C11 6.7.2.1p16, C++ [class.union]);
sizeof is the largest member rounded up to the largest alignment; a member
read after another was written reads the bytes written (type punning, as
nvcc does); braces initialise the first member. The kernels are also
compiled by nvcc (skipped only where it is absent)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from conftest import nvcc_cubin
from isa_ir_walk import compile_error
from kernel_launch import launch

PUN = r"""
union U { float f; unsigned u; };
extern "C" __global__ void k(const float* x, unsigned* o) {
    U v; v.f = x[threadIdx.x]; o[threadIdx.x] = v.u;
}"""

SIZES = r"""
union A { char c; double d; int i[3]; };
union B { char c[5]; short s; };
union __align__(16) C { int i; };
extern "C" __global__ void k(int* o) {
    o[0] = sizeof(A); o[1] = alignof(A); o[2] = sizeof(B); o[3] = alignof(B); o[4] = sizeof(C);
}"""

INIT = r"""
union U { int a[2]; double d; };
struct S { char c; U u; int k; };
extern "C" __global__ void k(int* o) {
    U x = {7, 8}; U z = {}; S s = {1, {{3, 4}}, 5};
    o[0] = x.a[0]; o[1] = x.a[1]; o[2] = z.a[0]; o[3] = z.a[1];
    o[4] = s.u.a[1]; o[5] = s.k; o[6] = sizeof(S); o[7] = (int)((char*)&s.k - (char*)&s);
}"""

STORAGE = r"""
union U { int i; float f; };
__device__ U g = {3};
__device__ U bump(U x) { x.i += 1; return x; }
extern "C" __global__ void k(int* o) {
    __shared__ U sh[2];
    U a; a.i = 41; U b = bump(a); U* p = &a; p->f = -0.0f;
    sh[threadIdx.x].f = 1.0f; __syncthreads();
    o[0] = b.i; o[1] = a.i; o[2] = sh[0].i; o[3] = g.i; g.f = 0.5f; o[4] = g.i;
}"""

ANONYMOUS = r"""
struct S { int t; union { struct { short lo, hi; }; int all; }; };
extern "C" __global__ void k(int* o) {
    S s = {9, {{1, 2}}}; o[0] = s.all; o[1] = sizeof(S);
    s.all = 0x00050006; o[2] = s.lo; o[3] = s.hi;
    union { int q; float r; }; r = 1.0f; o[4] = q;
}"""

METHODS = r"""
template <typename T> union Bits { T value; unsigned char byte[sizeof(T)]; };
union U { int i; float f; __device__ int as_int() const { return i; } };
extern "C" __global__ void k(int* o) {
    Bits<float> b; b.value = 1.0f; U u; u.f = 2.0f;
    o[0] = b.byte[3]; o[1] = sizeof(Bits<double>); o[2] = u.as_int();
}"""

KERNELS = {"pun": PUN, "sizes": SIZES, "init": INIT, "storage": STORAGE, "anonymous": ANONYMOUS,
           "methods": METHODS}


def test_writing_one_member_and_reading_another_reads_its_bytes():
    x = np.array([1.0, -2.5, 0.0, -0.0], np.float32)
    o = np.zeros(4, np.uint32)
    launch(PUN, "k", 1, 4, x, o)
    np.testing.assert_array_equal(o, x.view(np.uint32))


def test_union_size_is_the_largest_member_rounded_to_the_largest_alignment():
    """A: int[3] (12) rounded to double's 8: 16; B: char[5] rounded to short's 2: 6; C: __align__(16)."""
    o = np.zeros(5, np.int32)
    launch(SIZES, "k", 1, 1, o)
    assert list(o) == [16, 8, 6, 2, 16]


def test_braces_initialise_the_first_member():
    """{7, 8} fills int a[2] (brace elision), {} zeroes it; in S the union sits at 8 (double's
    alignment), k at 16, sizeof(S) 24."""
    o = np.zeros(8, np.int32)
    launch(INIT, "k", 1, 1, o)
    assert list(o) == [7, 8, 0, 0, 4, 5, 24, 16]


def test_unions_as_copies_through_pointers_in_shared_and_global_memory():
    """bump gets a copy (42, a stays 41 until -0.0f is written through p: 0x80000000);
    1.0f in shared reads as 0x3f800000; a __device__ union starts as {3}, then 0.5f."""
    o = np.zeros(5, np.int32)
    launch(STORAGE, "k", 1, 2, o)
    assert list(o) == [42, -2**31, 0x3F800000, 3, 0x3F000000]


def test_anonymous_union_members_belong_to_the_enclosing_struct_or_block():
    """s.lo and s.hi (an anonymous struct in an anonymous union) share s.all's bytes: {1, 2} is
    0x00020001; sizeof(S) 8; in a block, q and r name one union."""
    o = np.zeros(5, np.int32)
    launch(ANONYMOUS, "k", 1, 1, o)
    assert list(o) == [0x00020001, 8, 6, 5, 0x3F800000]


def test_union_templates_and_member_functions():
    """1.0f = 0x3f800000: its high byte 0x3f; Bits<double> is 8 bytes; 2.0f = 0x40000000."""
    o = np.zeros(3, np.int32)
    launch(METHODS, "k", 1, 1, o)
    assert list(o) == [0x3F, 8, 0x40000000]


@pytest.mark.parametrize("src,msg", [
    ("static __device__ union { int a; float b; };", "anonymous unions at file scope are not supported"),
    ("struct W { int; int z; };", "declaration does not declare anything"),
    ("struct S { enum { A, B }; int x; };", "enums defined inside a struct are not supported"),
    ("struct S { int i; union { int i; float f; }; };", "duplicate member 'i'"),
    ("union U { int i; float f; };\n__global__ void k() { U u = {1, 2}; }", "too many initialisers"),
])
def test_union_errors_are_named(src, msg):
    assert msg in compile_error(src + "\n").message


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_union_kernel_compiles_with_nvcc(name, tmp_path):
    src = tmp_path / f"{name}.cu"
    src.write_text(KERNELS[name])
    nvcc_cubin(shutil.which("nvcc"), src, tmp_path)
