"""Shuffles (with width), votes and bit intrinsics against hand-worked values."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_launch import launch

SHFL = r"""
extern "C" __global__ void k(const int* in, int* out, int arg, int width) {
    int t = threadIdx.x;
    out[t] = CALL;
}
"""


def _shfl(call, arg, width):
    vals = (np.arange(32, dtype=np.int32) + 1) * 10
    out = np.zeros(32, np.int32)
    launch(SHFL.replace("CALL", call), "k", 1, 32, vals, out, np.int32(arg), np.int32(width))
    return vals, out


@pytest.mark.parametrize("width", [32, 16, 8, 4])
def test_shfl_reads_the_source_lane_within_its_segment(width):
    vals, out = _shfl("__shfl_sync(0xffffffff, in[t], arg, width)", 5, width)
    lane = np.arange(32)
    np.testing.assert_array_equal(out, vals[(lane // width) * width + 5 % width])


@pytest.mark.parametrize("width", [32, 16, 8])
def test_shfl_up_keeps_own_value_below_delta_in_segment(width):
    vals, out = _shfl("__shfl_up_sync(0xffffffff, in[t], arg, width)", 3, width)
    lane = np.arange(32)
    src = np.where(lane % width >= 3, lane - 3, lane)
    np.testing.assert_array_equal(out, vals[src])


@pytest.mark.parametrize("width", [32, 16, 8])
@pytest.mark.parametrize("delta", [33, 35, 50, 64 + 2, -31])
def test_shfl_up_reads_the_low_five_bits_of_delta(width, delta):
    """PTX shfl.sync.up: bval = b[4:0]; j = lane - bval, kept where j >= the
    segment's first lane (minLane = lane & c[12:8], c[12:8] = 32 - width).
    A delta of 33 acts as 1, as down, xor and idx already read it."""
    vals, out = _shfl("__shfl_up_sync(0xffffffff, in[t], arg, width)", delta, width)
    lane = np.arange(32)
    j = lane - (delta & 31)
    src = np.where(j >= (lane & (32 - width) & 31), j, lane)
    np.testing.assert_array_equal(out, vals[src])

@pytest.mark.parametrize("width", [32, 16, 8])
def test_shfl_down_keeps_own_value_past_segment_end(width):
    vals, out = _shfl("__shfl_down_sync(0xffffffff, in[t], arg, width)", 2, width)
    lane = np.arange(32)
    src = np.where(lane % width + 2 < width, lane + 2, lane)
    np.testing.assert_array_equal(out, vals[src])


@pytest.mark.parametrize("width", [32, 16, 4])
def test_shfl_xor_exchanges_within_segment(width):
    vals, out = _shfl("__shfl_xor_sync(0xffffffff, in[t], arg, width)", 1, width)
    np.testing.assert_array_equal(out, vals[np.arange(32) ^ 1])


def test_shfl_xor_to_a_later_segment_keeps_own_value():
    vals, out = _shfl("__shfl_xor_sync(0xffffffff, in[t], arg, width)", 8, 8)
    lane = np.arange(32)
    j = lane ^ 8
    src = np.where(j <= (lane & ~7) + 7, j, lane)   # earlier segments readable, later not
    np.testing.assert_array_equal(out, vals[src])


def test_shfl_of_float_and_double_values():
    src = r"""
    extern "C" __global__ void k(const float* f, const double* d, float* of, double* od) {
        int t = threadIdx.x;
        of[t] = __shfl_down_sync(0xffffffff, f[t], 1);
        od[t] = __shfl_sync(0xffffffff, d[t], 31 - t);
    }"""
    f = np.arange(32, dtype=np.float32) + 0.5
    d = np.arange(32, dtype=np.float64) * 1e10
    of, od = np.zeros_like(f), np.zeros_like(d)
    launch(src, "k", 1, 32, f, d, of, od)
    np.testing.assert_array_equal(of, np.append(f[1:], f[31]))
    np.testing.assert_array_equal(od, d[::-1])


def test_warp_reduction_with_shfl_down_sums_the_warp():
    src = r"""
    extern "C" __global__ void k(const int* in, int* out) {
        int v = in[threadIdx.x + blockIdx.x * 32];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
        if (threadIdx.x == 0) out[blockIdx.x] = v;
    }"""
    vals = np.arange(128, dtype=np.int32) ** 2
    out = np.zeros(4, np.int32)
    launch(src, "k", 4, 32, vals, out)
    np.testing.assert_array_equal(out, vals.reshape(4, 32).sum(axis=1))


def test_ballot_all_any_under_divergence():
    src = r"""
    extern "C" __global__ void k(unsigned* ballot, int* all, int* any) {
        int t = threadIdx.x;
        if (t < 20) {
            ballot[t] = __ballot_sync(0xffffffff, t % 3 == 0);
            all[t] = __all_sync(0xffffffff, t < 20);
            any[t] = __any_sync(0xffffffff, t == 25);
        } else {
            ballot[t] = __ballot_sync(0xffffffff, 1);
            all[t] = __all_sync(0xffffffff, t < 30);
            any[t] = __any_sync(0xffffffff, t == 25);
        }
    }"""
    ballot = np.zeros(32, np.uint32)
    all_, any_ = np.zeros(32, np.int32), np.zeros(32, np.int32)
    launch(src, "k", 1, 32, ballot, all_, any_)
    b_first = sum(1 << t for t in range(20) if t % 3 == 0)
    b_second = sum(1 << t for t in range(20, 32))
    np.testing.assert_array_equal(ballot, [b_first] * 20 + [b_second] * 12)
    np.testing.assert_array_equal(all_, [1] * 20 + [0] * 12)
    np.testing.assert_array_equal(any_, [0] * 20 + [1] * 12)


def test_bit_intrinsics_match_hand_worked_values():
    src = r"""
    extern "C" __global__ void k(const unsigned* x, int* popc, int* clz, int* ffs, unsigned* brev) {
        int t = threadIdx.x;
        popc[t] = __popc(x[t]); clz[t] = __clz(x[t]); ffs[t] = __ffs(x[t]); brev[t] = __brev(x[t]);
    }"""
    x = np.array([0, 1, 0x80000000, 0xF0, 0xFFFFFFFF] + [6] * 27, dtype=np.uint32)
    popc, clz, ffs = (np.zeros(32, np.int32) for _ in range(3))
    brev = np.zeros(32, np.uint32)
    launch(src, "k", 1, 32, x, popc, clz, ffs, brev)
    np.testing.assert_array_equal(popc[:5], [0, 1, 1, 4, 32])
    np.testing.assert_array_equal(clz[:5], [32, 31, 0, 24, 0])
    np.testing.assert_array_equal(ffs[:5], [0, 1, 32, 5, 1])
    np.testing.assert_array_equal(brev[:5], [0, 0x80000000, 1, 0x0F000000, 0xFFFFFFFF])


def test_shfl_from_an_inactive_lane_gives_that_lanes_last_value():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        int v = t;
        int r = -1;
        if (t < 16) {
            v = 100 + t;
            r = __shfl_sync(0x0000ffff, v, t + 16);   // lanes 16..31 are not active here
        }
        out[t] = r;
    }"""
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, [t + 16 for t in range(16)] + [-1] * 16)
