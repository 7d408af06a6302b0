"""Static first-use distances of loads (gpuemu/jit/use_distance.py)."""
from __future__ import annotations

import gpuemu


def distances(src: str, name: str = "k") -> list:
    k = gpuemu.RawModule(code=src).get_function(name)
    return [(i.op, i.space, i.use_distance) for i in k.meta.instrs]


def test_a_load_stored_at_once_is_used_at_once():
    src = r'''extern "C" __global__ void k(float *o, const float *a)
    { o[threadIdx.x] = a[threadIdx.x]; }'''
    assert distances(src)[0] == ("ld", "global", 0)


def test_the_left_operand_waits_for_the_right_operand_s_instructions():
    # a[i] * b[i]: after a's load come b's address (Cast, PtrAdd) and b's load
    src = r'''extern "C" __global__ void k(float *o, const float *a, const float *b)
    { unsigned i = threadIdx.x; o[i] = a[i] * b[i]; }'''
    d = distances(src)
    assert d[0][2] > d[1][2] == 0


def test_a_load_into_a_variable_is_used_at_its_first_read():
    src = r'''extern "C" __global__ void k(float *o, const float *a, int n)
    {
        float v = a[threadIdx.x];
        int j = n * 3 + 1;
        int m = j * j + n;
        o[threadIdx.x] = v + m;
    }'''
    near = r'''extern "C" __global__ void k(float *o, const float *a, int n)
    {
        float v = a[threadIdx.x];
        o[threadIdx.x] = v + n;
    }'''
    assert distances(src)[0][2] > distances(near)[0][2] + 3
