"""synccheck for warp-level operations: masks naming absent lanes, shuffles
reading inactive lanes; the numpy path against the reference."""
from __future__ import annotations

import numpy as np
import pytest

from gpuemu.check.synccheck import lane_problems, lane_problems_reference, why
from kernel_launch import launch


def test_full_mask_from_half_a_warp_names_the_missing_lanes():
    probs = lane_problems_reference(0x0000FFFF, [0xFFFFFFFF] * 32, [-1] * 32, 0xFFFFFFFF, False)
    assert [p[0] for p in probs] == list(range(16))
    assert all(p[1] == 0xFFFF0000 for p in probs)


def test_lanes_beyond_the_last_thread_are_not_required():
    assert lane_problems_reference(0x0000FFFF, [0xFFFFFFFF] * 32, [-1] * 32, 0x0000FFFF, False) == []


def test_a_lane_outside_its_own_mask_is_a_problem():
    probs = lane_problems_reference(0b11, [0b10, 0b11] + [0] * 30, [-1] * 32, 0xFFFFFFFF, False)
    assert probs == [(0, 1, -1)]


def test_shuffle_from_an_inactive_lane():
    srcs = [(l + 1) % 32 for l in range(32)]
    probs = lane_problems_reference(0x55555555, [0x55555555] * 32, srcs, 0xFFFFFFFF, True)
    assert [p[2] for p in probs] == [l + 1 for l in range(0, 32, 2)]


@pytest.mark.parametrize("seed", range(5))
def test_fast_path_agrees_with_the_reference(seed):
    rng = np.random.default_rng(seed)
    n = 20
    mask = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    mk = rng.choice([0xFFFFFFFF, 0x0000FFFF, 0], size=(n, 32)) | (mask.astype(np.int64)[:, None])
    src = rng.integers(-1, 32, (n, 32))
    addr = (mk.astype(np.int64) << 32) | (src & 0xFFFFFFFF)
    existing = rng.choice([0xFFFFFFFF, 0xFFFF], n).astype(np.int64)
    shuffle = rng.random(n) < 0.5
    r, lane, missing, bad = lane_problems(mask, addr, existing, shuffle)
    got = sorted(zip(r.tolist(), lane.tolist(), missing.tolist(), bad.tolist()))
    want = sorted((i, *p) for i in range(n) for p in lane_problems_reference(
        int(mask[i]), [int(x) for x in mk[i]], [int(x) for x in src[i]], int(existing[i]), bool(shuffle[i])))
    assert got == want and want


def test_shuffle_inside_a_correct_partial_mask_is_clean():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int v = threadIdx.x;
        if (threadIdx.x < 16) v += __shfl_xor_sync(0x0000ffff, v, 1);
        out[threadIdx.x] = v;
    }"""
    out = np.zeros(32, np.int32)
    la = launch(src, "k", 1, 32, out, check=["synccheck"])
    assert la.findings == []
    np.testing.assert_array_equal(out[:16], np.arange(16) + (np.arange(16) ^ 1))


def test_full_mask_shuffle_of_a_partial_last_warp_is_clean_but_reading_past_it_is_not():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int v = __shfl_xor_sync(0xffffffff, (int)threadIdx.x, 1);
        out[threadIdx.x] = v + __shfl_down_sync(0xffffffff, v, 1);
    }"""
    la = launch(src, "k", 1, 48, np.zeros(48, np.int32), check=["synccheck"])
    [f] = la.findings        # lane 15 of the 16-thread last warp reads lane 16
    assert (f.kind, f.line, f.thread) == ("invalid_shuffle", 4, (47, 0, 0))
    assert f.extra["source_lane"] == 16


def test_syncwarp_from_half_a_warp_is_barrier_divergence_with_its_count():
    src = r"""
    extern "C" __global__ void k(int* out) {
        if (threadIdx.x < 16) {
            __syncwarp();
            out[threadIdx.x] = 1;
        }
    }"""
    la = launch(src, "k", 2, 64, np.zeros(64, np.int32), check=["synccheck"])
    [f] = la.findings
    assert (f.kind, f.line) == ("barrier_divergence", 4)
    assert f.extra["missing_lanes"] == 0xFFFF0000 and f.extra["count"] >= 4


def test_a_lane_outside_its_own_mask_is_told_so():
    # lane 16 calls __syncwarp(0x0000ffff) with the whole warp: every lane
    # the mask names does execute it; the fault is lane 16's own absence
    assert why(16, 1 << 16, 0x0000FFFF, 0xFFFFFFFF, -1) == (
        "is called by lane 16, which is not in its own mask 0x0000ffff "
        "(the calling thread must be in the mask)")


def test_a_mask_naming_absent_lanes_is_told_which():
    assert why(3, 0xFFFF0000, 0xFFFFFFFF, 0x0000FFFF, -1) == (
        "its mask names lanes 0xffff0000 that do not execute it with this lane "
        "(active lanes 0x0000ffff)")


def test_syncwarp_by_lanes_outside_its_mask_names_the_calling_lane():
    src = r"""
    extern "C" __global__ void k(int* out) {
        __syncwarp(0x0000ffff);
        out[threadIdx.x] = 1;
    }"""
    la = launch(src, "k", 1, 32, np.zeros(32, np.int32), check=["synccheck"])
    [f] = la.findings
    assert f.kind == "barrier_divergence" and f.thread == (16, 0, 0)
    assert "is called by lane 16, which is not in its own mask 0x0000ffff" in f.message
    assert "names lanes" not in f.message
