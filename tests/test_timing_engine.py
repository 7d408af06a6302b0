"""The timing engine: hand-worked cycle counts, and the fast engine against
the plain-Python reference (gpuemu/timing/reference_engine.py) for every
built-in scheduling policy on real kernels."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.timing.block_policy import LeastLoaded, RoundRobinBlocks
from gpuemu.timing.native_engine import NativeEngine
from gpuemu.timing.reference_engine import ReferenceEngine
from gpuemu.timing.sm_engine import (R_BARRIER, R_DEPENDENCY, R_MEMORY, R_NOT_SELECTED, R_PIPE,
                                     SMEngine)
from gpuemu.timing.warp_policies import POLICIES, get_policy
from gpuemu.timing.warp_trace import BARRIER, EXIT, MEM, PIPE_LSU, PIPE_SHARED, programs_from_items


def run(progs, engine=SMEngine, sms=1, schedulers=1, blocks_per_sm=1, alu=4, policy="gto",
        block_policy=None, seed=0):
    return engine(progs, sms, schedulers, blocks_per_sm, alu, get_policy(policy),
                  block_policy or RoundRobinBlocks(), nrows=8, seed=seed).run()


def exit_at(n, line=0):
    return (n, EXIT, 0, 0, 0, -1, line)


def test_a_lone_warp_issues_once_per_issue_interval():
    # 10 instructions at cycles 0, 4, ..., 36: the SM is busy for 37 cycles
    tr = run(programs_from_items(1, [[exit_at(10)]]), alu=4)
    assert tr.cycles == 37
    assert tr.stalls[0, R_DEPENDENCY] == 36 - 9


def test_four_warps_on_one_scheduler_hide_the_alu_latency():
    # 4 warps x 10 instructions, one every cycle: the last issues at cycle 39
    tr = run(programs_from_items(4, [[exit_at(10)]] * 4), alu=4)
    assert tr.cycles == 40
    assert tr.issued[0] == 40


def test_a_load_is_waited_for_at_its_first_use_not_at_issue():
    # load as instruction 0 (latency 100), its value first read 5 instructions later
    items = [(0, MEM, PIPE_LSU, 1, 100, 5, 2), exit_at(10)]
    tr = run(programs_from_items(1, [items]), alu=1)
    # instructions 0..5 at cycles 0..5; instruction 6 (the use) waits until cycle 100
    assert tr.cycles == 100 + 4
    assert tr.stalls[0, R_MEMORY] == 100 - 6
    assert tr.stalls_by_row[2, R_MEMORY] == 100 - 6


def test_a_busy_pipe_delays_the_next_request():
    # two warps each issue a shared request costing 32 cycles as their first instruction
    items = [(0, MEM, PIPE_SHARED, 32, 40, -1, 1), exit_at(1)]
    tr = run(programs_from_items(2, [items, items]), alu=1)
    # warp 1 loses cycle 0 to warp 0 (not selected), then waits for the pipe
    # during cycles 1..31 and issues at 32
    assert tr.stalls[1, R_PIPE] == 31
    assert tr.stalls[1, R_NOT_SELECTED] == 1
    assert tr.cycles == 33


def test_a_barrier_holds_the_block_until_its_last_warp_arrives():
    fast = [(1, BARRIER, 0, 0, 0, -1, 3), exit_at(2)]
    slow = [(9, BARRIER, 0, 0, 0, -1, 3), exit_at(10)]
    tr = run(programs_from_items(2, [fast, slow]), schedulers=2, alu=1)
    # the slow warp reaches the barrier after 9 instructions (cycle 8), both go on at 9
    assert tr.stalls[0, R_BARRIER] == 8
    assert tr.cycles == 10


def test_gto_keeps_the_last_warp_and_lrr_rotates():
    # two warps, 3 instructions each, alu latency 1: GTO runs warp 0 to the end first
    progs = programs_from_items(2, [[exit_at(3)], [exit_at(3)]])
    gto, lrr = run(progs, policy="gto", alu=1), run(progs, policy="lrr", alu=1)
    assert gto.stalls[0].sum() == 0 and gto.stalls[1].sum() == 3
    assert lrr.stalls[0].sum() == 2 and lrr.stalls[1].sum() == 3


def test_blocks_wait_for_room_on_the_sm():
    # 3 blocks of one warp, 1 block per SM, 1 SM: they run one after another
    progs = programs_from_items(1, [[exit_at(5)]] * 3)
    tr = run(progs, alu=1)
    assert tr.cycles == 15


SRC = r'''
extern "C" __global__ void mix(float *out, const float *in, int n)
{
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    float w = in[(i * 7) % n];
    s[threadIdx.x] = v * 2.0f;
    __syncthreads();
    float acc = 0.0f;
    for (int k = 0; k < 4; k++)
        acc += s[(threadIdx.x * 4 + k) % blockDim.x] + w;
    if (threadIdx.x % 3 == 0)
        return;
    out[i] = acc;
}
'''


@pytest.fixture(scope="module")
def mix_programs():
    n = 2048
    k = gpuemu.RawModule(code=SRC).get_function("mix")
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    launch = k((8,), (256,), (out, a, np.int32(n)), mode="timing")
    return launch.timing.programs, launch.timing.result.stalls_by_row.shape[0]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_fast_engine_matches_the_reference(mix_programs, policy):
    progs, nrows = mix_programs
    args = dict(sms=3, schedulers=4, blocks_per_sm=2, alu=4, policy=policy, seed=7)
    fast = run(progs, SMEngine, **args)
    ref = run(progs, ReferenceEngine, **args)
    assert fast.cycles == ref.cycles
    assert np.array_equal(fast.sm_cycles, ref.sm_cycles)
    assert np.array_equal(fast.issued, ref.issued)
    assert np.array_equal(fast.stalls, ref.stalls)
    assert np.array_equal(fast.stalls_by_row[:ref.stalls_by_row.shape[0]], ref.stalls_by_row)
    assert np.array_equal(fast.idle, ref.idle)
    assert np.array_equal(fast.active_warp_cycles, ref.active_warp_cycles)


def test_fast_engine_matches_the_reference_with_least_loaded_blocks(mix_programs):
    progs, _ = mix_programs
    args = dict(sms=3, schedulers=4, blocks_per_sm=2, policy="lrr")
    fast = run(progs, SMEngine, block_policy=LeastLoaded(), **args)
    ref = run(progs, ReferenceEngine, block_policy=LeastLoaded(), **args)
    assert fast.cycles == ref.cycles and np.array_equal(fast.stalls, ref.stalls)


def test_every_instruction_is_issued_once(mix_programs):
    progs, _ = mix_programs
    tr = run(progs, sms=4, schedulers=4, blocks_per_sm=2)
    assert tr.issued.sum() == progs.instructions.sum()


def test_a_policy_without_priority_runs_through_pick(mix_programs):
    from gpuemu.timing.warp_policies import GreedyThenOldest

    class PickOnly(GreedyThenOldest):
        priority = None

    progs, _ = mix_programs
    args = dict(sms=3, schedulers=4, blocks_per_sm=2)
    slow = SMEngine(progs, 3, 4, 2, 4, PickOnly(), RoundRobinBlocks(), nrows=8).run()
    fast = run(progs, SMEngine, policy="gto", **args)
    assert slow.cycles == fast.cycles and np.array_equal(slow.stalls, fast.stalls)


def test_a_block_dispatched_within_a_release_is_not_counted_at_its_barrier_twice():
    # Block 0: warps 1 and 2 exit early; warp 0 alone passes its barrier and exits at the
    # same count, in the release. Its room goes at once to block 1, whose warps 0 and 1
    # wait at a barrier as their first instruction: warp 2 arrives there only after 3
    # instructions, and the barrier must hold until then (each arrival counted once).
    bar = lambda at: (at, BARRIER, 0, 0, 0, -1, 1)  # noqa: E731
    first = [[bar(4), exit_at(4)], [exit_at(1)], [exit_at(1)]]
    second = [[bar(0), exit_at(2)], [bar(0), exit_at(2)], [bar(3), exit_at(5)]]
    progs = programs_from_items(3, first + second)
    for policy in ("gto", "lrr"):
        ref = run(progs, ReferenceEngine, alu=1, policy=policy)
        fast = run(progs, SMEngine, alu=1, policy=policy)
        assert fast.cycles == ref.cycles
        assert np.array_equal(fast.stalls, ref.stalls)
        assert np.array_equal(fast.stalls_by_row[:ref.stalls_by_row.shape[0]], ref.stalls_by_row)
        assert fast.stalls[3, R_BARRIER] > 0 and fast.stalls[4, R_BARRIER] > 0
        native = run(progs, NativeEngine, alu=1, policy=policy)
        assert native.cycles == ref.cycles and np.array_equal(native.stalls, ref.stalls)
