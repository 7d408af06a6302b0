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
