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
