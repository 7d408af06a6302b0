"""Texture objects and fetches (gpuemu/texture.py, isa/texture_fetch.py):
results against the numpy statement of the Guide's texture-fetching rules,
and the texture cache's 2D locality."""
import numpy as np
import pytest

import gpuemu
from conftest import PROGRAMS
from gpuemu.texture import (reference_fetch_1d, reference_fetch_2d, reference_fetch_linear)

SRC = r'''
extern "C" __global__ void s2(float *out, cudaTextureObject_t t, const float *xs, const float *ys, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = tex2D<float>(t, xs[i], ys[i]); }
extern "C" __global__ void s1(float *out, cudaTextureObject_t t, const float *xs, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = tex1D<float>(t, xs[i]); }
extern "C" __global__ void f1(float *out, cudaTextureObject_t t, const int *is, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = tex1Dfetch<float>(t, is[i]); }
'''
N = 256
A2 = np.random.default_rng(5).random((11, 19), dtype=np.float32)
A1 = np.random.default_rng(6).random(23, dtype=np.float32)
CASES = [("clamp", "point", False), ("clamp", "linear", False), ("border", "point", False),
         ("border", "linear", False), ("wrap", "point", True), ("wrap", "linear", True),
         ("mirror", "point", True), ("mirror", "linear", True), ("clamp", "linear", True)]


def mod():
    return gpuemu.RawModule(code=SRC)


def coords(norm, n, size, seed):
    rng = np.random.default_rng(seed)
    lo, hi = (-1.5, 2.5) if norm else (-3.0, size + 3.0)
    return rng.uniform(lo, hi, n).astype(np.float32)


@pytest.mark.parametrize("mode,filt,norm", CASES)
def test_tex2D_follows_the_fetching_rules(mode, filt, norm):
    xs, ys = coords(norm, N, 19, 1), coords(norm, N, 11, 2)
    tex = gpuemu.Texture(A2, address_mode=mode, filter_mode=filt, normalized_coords=norm, border_value=0.25)
    out = np.zeros(N, np.float32)
    mod().get_function("s2")((N // 64,), (64,), (out, tex, xs, ys, np.int32(N)))
    np.testing.assert_allclose(out, reference_fetch_2d(A2, xs, ys, mode, filt, norm, 0.25), rtol=1e-6)


@pytest.mark.parametrize("mode,filt,norm", CASES)
def test_tex1D_follows_the_fetching_rules(mode, filt, norm):
    xs = coords(norm, N, 23, 3)
    tex = gpuemu.Texture(A1, address_mode=mode, filter_mode=filt, normalized_coords=norm, border_value=0.25)
    out = np.zeros(N, np.float32)
    mod().get_function("s1")((N // 64,), (64,), (out, tex, xs, np.int32(N)))
    np.testing.assert_allclose(out, reference_fetch_1d(A1, xs, mode, filt, norm, 0.25), rtol=1e-6)


def test_tex1Dfetch_reads_linear_memory_and_zero_outside():
    d = gpuemu.asarray(A1)
    idx = np.arange(-4, N - 4, dtype=np.int32) % 40 - 8
    out = np.zeros(N, np.float32)
    mod().get_function("f1")((N // 64,), (64,), (out, gpuemu.Texture(d, linear=True), idx, np.int32(N)))
    np.testing.assert_array_equal(out, reference_fetch_linear(A1, idx))
    assert out[idx < 0].max() == 0 and out[idx >= A1.size].max() == 0


def test_linear_filtering_between_two_texels_is_their_mean():
    # unnormalised x = 1.0: xB = 0.5, i = 0, alpha = 0.5
    a = np.array([2.0, 4.0, 8.0], np.float32)
    assert reference_fetch_1d(a, np.float32(1.0), filter_mode="linear") == 3.0


def test_alpha_has_8_fractional_bits():
    # alpha = 0.001 is below 1/512: it rounds to 0, so the fetch is texel 0
    a = np.array([2.0, 4.0], np.float32)
    assert reference_fetch_1d(a, np.float32(0.501), filter_mode="linear") == 2.0


def test_point_filtering_takes_the_texel_containing_x():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    assert reference_fetch_2d(a, np.float32(2.9), np.float32(1.2)) == 6.0


def test_wrap_needs_normalized_coordinates():
    with pytest.raises(ValueError, match="normalized"):
        gpuemu.Texture(A2, address_mode="wrap")


def test_texels_must_be_float32():
    with pytest.raises(ValueError, match="float32"):
        gpuemu.Texture(np.zeros((4, 4), np.int32))


def test_a_non_float_fetch_is_a_diagnostic():
    src = ('extern "C" __global__ void k(int *o, cudaTextureObject_t t)'
           '{ o[0] = tex1Dfetch<int>(t, 0); }')
    with pytest.raises(gpuemu.CompileError, match="float texels only"):
        gpuemu.RawModule(code=src)


def test_a_fetch_with_missing_coordinates_is_a_diagnostic():
    src = ('extern "C" __global__ void k(float *o, cudaTextureObject_t t)'
           '{ o[0] = tex2D<float>(t, 0.5f); }')
    with pytest.raises(gpuemu.CompileError, match="takes 3 arguments"):
        gpuemu.RawModule(code=src)


def walk(arch="sm_90"):
    w, h = 64, 256
    img = np.random.default_rng(0).random((h, w), dtype=np.float32)
    m = gpuemu.RawModule(path=str(PROGRAMS / "texture_walk.cu"), arch=arch)
    og, ot = np.zeros(h, np.float32), np.zeros(h, np.float32)
    g = m.get_function("walk_global")((h // 128,), (128,), (og, img, np.int32(w), np.int32(h)))
    t = m.get_function("walk_texture")((h // 128,), (128,), (ot, gpuemu.Texture(img), np.int32(w), np.int32(h)))
    np.testing.assert_allclose(og, img.sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(ot, og)
    return g.stats, t.stats


def test_a_column_walk_touches_half_the_sectors_through_a_texture():
    g, t = walk()
    # 32 rows at one x: 32 sectors in a pitch-linear image, 16 in 4x2-texel sectors
    assert g["global_load_sectors"] == 32 * g["global_load_requests"]
    assert t["texture_sectors"] == 16 * t["texture_requests"]


def test_a_column_walk_costs_less_memory_time_through_a_texture():
    g, t = walk()
    assert t["memory_cycles"] < g["memory_cycles"]


def test_on_maxwell_the_texture_cache_saves_l2_traffic():
    g, t = walk("sm_52")
    assert t["texture_hits"] > 0 and t["l2_read_sectors"] < g["l2_read_sectors"]


def test_descriptor_reads_are_not_memory_traffic():
    _, t = walk()
    assert t["global_load_requests"] == t["texture_requests"] == t["readonly_load_requests"]


# A fetch is one TEX instruction on the GPU (the texture unit reads the header,
# addresses and filters): the same kernel with the fetch replaced by a plain
# load has the same instruction counts, line by line.
ONE_FETCH = r'''
extern "C" __global__ void by_texture(float *out, cudaTextureObject_t t, const float *a)
{
    int i = threadIdx.x;
    float x = i + 0.5f;
    const float *p = a + i;
    float v = tex2D<float>(t, x, 0.5f);
    out[i] = v;
}
extern "C" __global__ void by_load(float *out, cudaTextureObject_t t, const float *a)
{
    int i = threadIdx.x;
    float x = i + 0.5f;
    const float *p = a + i;
    float v = *p;
    out[i] = v;
}
'''
FETCH_LINE, LOAD_LINE = 7, 15


def one_fetch(name, filter_mode, mode="functional"):
    a = np.random.default_rng(7).random(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    tex = gpuemu.Texture(a[None, :], filter_mode=filter_mode)
    res = gpuemu.RawModule(code=ONE_FETCH).get_function(name)((1,), (64,), (out, tex, a), mode=mode)
    np.testing.assert_array_equal(out, a)   # x + 0.5: the texel itself, point or linear
    return res


@pytest.mark.parametrize("filter_mode", ["point", "linear"])
def test_a_fetch_is_one_warp_instruction(filter_mode):
    t = one_fetch("by_texture", filter_mode)
    # 64 threads = 2 warps, one TEX each; the coordinates are variables
    assert t.stats_by_line[FETCH_LINE]["warp_instructions"] == 2
    assert t.stats_by_line[FETCH_LINE]["thread_instructions"] == 64


@pytest.mark.parametrize("filter_mode", ["point", "linear"])
def test_a_fetch_counts_as_a_plain_load(filter_mode):
    t, g = one_fetch("by_texture", filter_mode), one_fetch("by_load", filter_mode)
    assert g.stats_by_line[LOAD_LINE]["warp_instructions"] == 2
    for key in ("warp_instructions", "thread_instructions", "divergent_branches"):
        assert t.stats[key] == g.stats[key]


def test_timing_mode_sees_a_fetch_as_one_instruction():
    t = one_fetch("by_texture", "linear", mode="timing")
    g = one_fetch("by_load", "linear", mode="timing")
    assert t.timing.instructions == g.timing.instructions == g.stats["warp_instructions"]


@pytest.mark.parametrize("arch", ["sm_90", "sm_52"])
def test_a_column_walk_takes_fewer_cycles_through_a_texture(arch):
    # CUDA C Programming Guide, "Texture and Surface Memory": reads with 2D
    # locality cost less through the texture cache; the fetch itself is one
    # instruction, fewer than the global walk's index arithmetic and load
    g, t = walk(arch)
    assert t["warp_instructions"] < g["warp_instructions"]
    assert t["cycles"] < g["cycles"]
