"""A suite of kernels in the style of NVIDIA's CUDA samples (tests/cuda_samples/):
cooperative groups, templates, references, namespaces, C++ casts. Each runs
unmodified and is checked against numpy; each also compiles with nvcc
(the same files, with their explicit template instantiations)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import gpuemu
from conftest import nvcc_cubin

SAMPLES = Path(__file__).parent / "cuda_samples"
NVCC = shutil.which("nvcc")
RNG = np.random.default_rng(2024)


def module(name: str, **kw) -> gpuemu.RawModule:
    return gpuemu.RawModule(path=str(SAMPLES / name), **kw)


def blocks_sum(kernel: str, name: str, dtype, n: int, threads: int, grid: int, per_thread: int = 1,
               shared: bool = False):
    x = (RNG.integers(0, 100, n) if np.dtype(dtype).kind in "iu" else RNG.random(n)).astype(dtype)
    out = np.zeros(grid, dtype)
    shm = threads * np.dtype(dtype).itemsize if shared else 0
    module(kernel).get_function(name)((grid,), (threads,), (x, out, np.uint32(n)), shared_mem=shm)
    return x, out


@pytest.mark.parametrize("kernel,name,dtype", [
    ("reduce0.cu", "reduce0<float>", np.float32), ("reduce0.cu", "reduce0<int>", np.int32),
    ("reduce1.cu", "reduce1<float>", np.float32), ("reduce2.cu", "reduce2<float>", np.float32)])
def test_reductions_0_to_2_sum_each_block(kernel, name, dtype):
    x, out = blocks_sum(kernel, name, dtype, 1000, 128, 8, shared=True)
    want = np.add.reduceat(np.pad(x, (0, 24)), np.arange(0, 1024, 128))
    assert np.allclose(out, want, rtol=1e-5)


@pytest.mark.parametrize("kernel,name,threads", [
    ("reduce3.cu", "reduce3<float>", 128), ("reduce4.cu", "reduce4<float, 128>", 128),
    ("reduce4.cu", "reduce4<float,256>", 256), ("reduce5.cu", "reduce5<float, 512>", 512)])
def test_reductions_3_to_5_add_two_elements_per_thread(kernel, name, threads):
    grid = 4
    x, out = blocks_sum(kernel, name, np.float32, grid * threads * 2 - 100, threads, grid,
                        shared=kernel == "reduce3.cu")
    want = np.add.reduceat(np.pad(x, (0, 100)), np.arange(0, grid * threads * 2, threads * 2))
    assert np.allclose(out, want, rtol=1e-5)


def test_reduce5_integer_instance_is_exact():
    x, out = blocks_sum("reduce5.cu", "reduce5<int, 64>", np.int32, 512, 64, 4)
    assert np.array_equal(out, x.reshape(4, 128).sum(1))


@pytest.mark.parametrize("name,dtype,threads,n", [
    ("reduce6<float, 256, true>", np.float32, 256, 1 << 14), ("reduce6<float,128,false>", np.float32, 128, 10000),
    ("reduce6<double, 64, false>", np.float64, 64, 3333), ("reduce6<int,512,true>", np.int32, 512, 1 << 13)])
def test_reduce6_at_several_template_parameters(name, dtype, threads, n):
    x, out = blocks_sum("reduce6.cu", name, dtype, n, threads, 4)
    assert np.allclose(out.sum(), x.sum(), rtol=1e-5) if dtype != np.int32 else out.sum() == x.sum()


@pytest.mark.parametrize("name,dtype,threads", [("reduce7<float, 256>", np.float32, 256),
                                                ("reduce7<unsigned int, 1024>", np.uint32, 1024)])
def test_reduce7_cg_reduce_per_warp_then_across_warps(name, dtype, threads):
    x, out = blocks_sum("reduce7.cu", name, dtype, 50000, threads, 3)
    assert np.allclose(out.sum(), x.sum(), rtol=1e-5)


def test_block_minimum_and_maximum_with_cg_less_and_greater():
    x = RNG.standard_normal(1000).astype(np.float32)
    lo, hi = np.zeros(4, np.float32), np.zeros(4, np.float32)
    module("max_reduce.cu").get_function("minmax")((4,), (256,), (x, lo, hi, np.int32(1000)))
    parts = [x[i:i + 256] for i in range(0, 1000, 256)]
    parts[-1] = np.concatenate([parts[-1], x[:1]])
    assert lo.tolist() == [p.min() for p in parts] and hi.tolist() == [p.max() for p in parts]


def test_tiled_transpose_with_cg_sync():
    w, h = 96, 64
    a = RNG.random((h, w)).astype(np.float32)
    out = np.zeros((w, h), np.float32)
    launch = module("transpose_cg.cu").get_function("transposeNoBankConflicts")(
        (w // 32, h // 32), (32, 8), (out, a, np.int32(w), np.int32(h)))
    assert np.array_equal(out, a.T)
    assert launch.stats["shared_bank_conflicts"] == 0


def test_histogram_with_per_warp_sub_histograms():
    data = RNG.integers(0, 256, 20000).astype(np.uint8)
    hist = np.zeros(64, np.uint32)
    module("histogram_warp.cu").get_function("histogram64")((8,), (128,), (hist, data, np.uint32(data.size)))
    assert np.array_equal(hist, np.bincount(data >> 2, minlength=64))


def test_block_scan_with_tile_shuffles():
    data = RNG.integers(0, 10, 1024).astype(np.int32)
    partial = np.zeros(4, np.int32)
    d = data.copy()
    module("scan_tile.cu").get_function("shfl_scan<256>")((4,), (256,), (d, partial))
    want = np.concatenate([np.cumsum(data[i:i + 256]) for i in range(0, 1024, 256)])
    assert np.array_equal(d, want) and np.array_equal(partial, want[255::256])


def test_cg_inclusive_and_exclusive_scan_of_tiles():
    x = RNG.integers(0, 50, 128).astype(np.uint32)
    inc, exc = np.zeros_like(x), np.zeros_like(x)
    module("scan_cg.cu").get_function("tile_scans")((2,), (64,), (x, inc, exc))
    want = np.concatenate([np.cumsum(x[i:i + 16]) for i in range(0, 128, 16)]).astype(np.uint32)
    assert np.array_equal(inc, want) and np.array_equal(exc, want - x)


def test_last_block_reduction_with_threadfence():
    x = RNG.random(10000).astype(np.float32)
    out = np.zeros(16, np.float32)
    mod = module("threadfence_reduction.cu")
    mod.get_function("reduceSinglePass<128>")((16,), (128,), (x, out, np.uint32(x.size)))
    assert np.isclose(out[0], x.sum(dtype=np.float64), rtol=1e-5)
    assert mod.get_global("retirementCount").get()[()] == 0


def test_warp_aggregated_atomics_compact_the_positive_values():
    src = RNG.integers(-5, 5, 3000).astype(np.int32)
    dst, nres = np.zeros_like(src), np.zeros(1, np.int32)
    module("warp_aggregated_atomics.cu").get_function("filter_positive")(
        (12,), (256,), (dst, nres, src, np.int32(src.size)))
    pos = src[src > 0]
    assert nres[0] == pos.size and sorted(dst[:pos.size].tolist()) == sorted(pos.tolist())


def test_tile_votes_count_any_all():
    x = RNG.random(256).astype(np.float32)
    x[:8] = 1.0
    count, anyv, allv = (np.zeros(32, np.int32) for _ in range(3))
    module("vote_tiles.cu").get_function("tile_votes")((2,), (128,), (x, np.float32(0.5), count, anyv, allv))
    p = (x > 0.5).reshape(32, 8)
    assert np.array_equal(count, p.sum(1)) and np.array_equal(anyv, p.any(1)) and np.array_equal(allv, p.all(1))


@pytest.mark.parametrize("T", [np.float32, np.float64, np.int32])
def test_axpy_template_with_deduced_device_template_and_references(T):
    x = (RNG.integers(-9, 9, 5000)).astype(T)
    y = (RNG.integers(-9, 9, 5000)).astype(T)
    want = 3 * x + y
    name = {np.float32: "float", np.float64: "double", np.int32: "int"}[T]
    module("axpy_templates.cu", name_expressions=[f"axpy<{name}>"]).get_function(f"axpy<{name}>")(
        (4,), (256,), (y, x, T(3), np.int32(x.size)))
    assert np.array_equal(y, want)


@pytest.mark.parametrize("bs", [8, 16])
def test_matrix_multiply_with_template_block_size(bs):
    hA, wA, wB = 4 * bs, 3 * bs, 2 * bs
    a = RNG.random((hA, wA)).astype(np.float32)
    b = RNG.random((wA, wB)).astype(np.float32)
    c = np.zeros((hA, wB), np.float32)
    module("matmul_tiled.cu").get_function(f"MatrixMulCUDA<{bs}>")(
        (wB // bs, hA // bs), (bs, bs), (c, a, b, np.int32(wA), np.int32(wB)))
    assert np.allclose(c, a @ b, rtol=1e-5)


def test_mandelbrot_with_struct_member_functions():
    w, h, it = 48, 32, 40
    x0, y0, step = np.float32(-2.0), np.float32(-1.0), np.float32(2.0 / 32)
    counts = np.zeros((h, w), np.int32)
    module("mandelbrot_struct.cu").get_function("mandelbrot")(
        (w // 16, h // 16), (16, 16), (counts, np.int32(w), np.int32(h), x0, y0, step, np.int32(it)))
    c = (x0 + np.arange(w, dtype=np.float32) * step)[None, :] + \
        1j * (y0 + np.arange(h, dtype=np.float32) * step)[:, None]
    re, im = np.zeros((h, w), np.float32), np.zeros((h, w), np.float32)
    want = np.zeros((h, w), np.int32)
    for _ in range(it):
        live = re * re + im * im <= np.float32(4)
        re, im = np.where(live, re * re - im * im + c.real.astype(np.float32), re), \
            np.where(live, np.float32(2) * re * im + c.imag.astype(np.float32), im)
        want += live
    assert np.array_equal(counts, want)


SOURCES = sorted(SAMPLES.glob("*.cu"))


def test_the_suite_has_at_least_15_kernels():
    assert len(SOURCES) >= 15


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_sample_compiles_with_nvcc(source, tmp_path):
    nvcc_cubin(NVCC, source, tmp_path)
