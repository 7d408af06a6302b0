"""A warp split into fragments (sm_70+ independent thread scheduling) is
replayed as one instruction stream (gpuemu/timing/warp_fragments.py)."""
from __future__ import annotations

import numpy as np

import gpuemu
from gpuemu.arch import get_preset
from gpuemu.timing.latencies import issue_rules
from gpuemu.timing.warp_fragments import merge_fragments
from gpuemu.timing.warp_trace import BARRIER, EXIT, MEM

# three lanes of each warp (0, 1, 31) take turns in a lock: the warp splits twice
WARP_LOCKS = r"""
extern "C" __global__ void k(int* lock, int* counter, int* seen) {
    int w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (lane < 2 || lane == 31) {
        while (atomicCAS(&lock[w], 0, 1) != 0) { }
        counter[w] = counter[w] + 1;
        __threadfence();
        atomicExch(&lock[w], 0);
    }
    __syncthreads();
    seen[threadIdx.x] = counter[w];
}"""


def merged(points: list, splits: list) -> list:
    """(at, kind) of warp 0's stream from (fragment id, count, kind) points,
    sorted as TraceRecorder.programs sorts them."""
    fid, count, kind = (np.array(c, np.int64) for c in zip(*points))
    at = fid << 32 | count
    key = 2 * at + (kind == MEM)
    at, key, keep = merge_fragments(np.zeros(at.size, np.int64), at, kind, key, splits)
    order = np.lexsort((np.arange(at.size), key))
    order = order[keep[order]]
    return list(zip(at[order].tolist(), kind[order].tolist()))


def test_fragment_instructions_are_added_to_the_warp_stream():
    # the warp (id 0) splits lanes 0b100 (id 4) off at count 10; both count on from 10
    points = [(0, 14, MEM), (4, 12, MEM), (0, 20, MEM), (4, 13, EXIT), (0, 25, BARRIER), (0, 30, EXIT)]
    assert merged(points, [(0, 0, 4, 10)]) == [
        (14, MEM), (20, MEM), (22, MEM),       # the warp's +14, +6, then the fragment's +2
        (27, BARRIER),                         # +5: only the warp is left to arrive
        (33, EXIT)]                            # +5 and the fragment's +1
    assert 33 == 10 + (30 - 10) + (13 - 10)    # what the two executed


def test_one_barrier_once_every_fragment_arrived_and_a_fragment_starts_in_its_interval():
    # a barrier at 3, the split at 5 (lanes 0b10, id 2): both meet at a second barrier
    points = [(0, 3, BARRIER), (0, 7, BARRIER), (2, 6, BARRIER), (0, 9, EXIT), (2, 8, EXIT)]
    assert merged(points, [(0, 0, 2, 5)]) == [(3, BARRIER), (8, BARRIER), (12, EXIT)]


def test_spin_lock_warps_issue_what_functional_mode_counts():
    k = gpuemu.RawModule(code=WARP_LOCKS, arch="sm_90").get_function("k")
    runs = {}
    for mode in ("functional", "timing"):
        counter, seen = np.zeros(2, np.int32), np.zeros(64, np.int32)
        runs[mode] = k(1, 64, (np.zeros(2, np.int32), counter, seen), mode=mode)
        assert counter.tolist() == [3, 3] and (seen == 3).all()
    f, t = runs["functional"], runs["timing"]
    p = t.timing.programs
    assert t.timing.instructions == p.instructions.sum() == f.stats["warp_instructions"]
    assert t.stats["thread_instructions"] == f.stats["thread_instructions"]
    for g in range(p.num_warps):         # one stream per warp: one barrier, one exit
        kinds = p.kind[p.start[g]:p.end[g]].tolist()
        assert kinds.count(BARRIER) == 1 and kinds.count(EXIT) == 1 and kinds[-1] == EXIT
        assert (np.diff(p.at[p.start[g]:p.end[g]]) >= 0).all()
    # cycles: at least the longest stream, at most everything one after another
    mem = p.kind == MEM
    serial = (p.instructions.sum() * issue_rules(get_preset("sm_90")).issue_interval
              + p.cost[mem].sum() + p.latency[mem].sum() + np.count_nonzero(p.kind == BARRIER))
    assert p.instructions.max() <= t.timing.cycles <= serial
