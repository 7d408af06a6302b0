"""The native cycle engine (gpuemu/timing/native_engine.py) gives exactly what
the plain-Python reference (reference_engine.py, the definition) and the
numpy engine (sm_engine.py) give: cycles, per-SM counts, stall cycles per warp,
reason and source row, and the warp / barrier timeline, on random stop-point
programs and on real kernels, for every built-in warp and block policy."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from conftest import PROGRAMS
from gpuemu.timing import timing_mode
from gpuemu.timing.block_policy import BLOCK_POLICIES, LeastLoaded, RoundRobinBlocks
from gpuemu.timing.native_engine import NativeEngine, engine_for, supports
from gpuemu.timing.reference_engine import ReferenceEngine
from gpuemu.timing.sm_engine import R_BARRIER, R_DEPENDENCY, R_MEMORY, R_NOT_SELECTED, R_PIPE, SMEngine
from gpuemu.timing.warp_policies import POLICIES, GreedyThenOldest, TwoLevel, get_policy
from gpuemu.timing.warp_trace import BARRIER, EXIT, MEM, PIPE_LSU, PIPE_SHARED, programs_from_items

NROWS = 8


def run(engine, progs, sms=1, schedulers=1, blocks_per_sm=1, alu=1, policy="gto",
        block_policy="round_robin", seed=0):
    pol = policy if not isinstance(policy, str) else get_policy(policy)
    bpol = BLOCK_POLICIES[block_policy]() if isinstance(block_policy, str) else block_policy
    return engine(progs, sms, schedulers, blocks_per_sm, alu, pol, bpol, nrows=NROWS, seed=seed).run()


def assert_same(a, b, timeline=True):
    assert a.cycles == b.cycles
    for name in ("sm_cycles", "issued", "stalls", "stalls_by_row", "idle", "active_warp_cycles"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape and np.array_equal(x, y), name
    if timeline:
        assert a.timeline_rows() == b.timeline_rows()


def random_programs(seed: int, warps_per_block: int, blocks: int, gap: int = 5, max_cost: int = 39):
    """Random stop points: memory requests (either pipe, any cost up to max_cost,
    latency and use distance, several per instruction at times), barriers (a
    different number per warp at times) and exits, warps of uneven lengths; up to
    gap - 1 plain instructions between two points."""
    rng = np.random.default_rng(seed)
    warps = []
    for _ in range(blocks * warps_per_block):
        items, at = [], 0
        for _ in range(int(rng.integers(0, 10))):
            at += int(rng.integers(0, gap))
            if rng.random() < 0.75:
                items.append((at, MEM, int(rng.integers(0, 2)), int(rng.integers(1, max_cost + 1)),
                              int(rng.integers(1, 300)), int(rng.integers(-1, 7)),
                              int(rng.integers(0, NROWS))))
            else:
                items.append((at, BARRIER, 0, 0, 0, -1, int(rng.integers(0, NROWS))))
        # stream order: a barrier reached at count c comes before the request issued as number c
        items.sort(key=lambda it: 2 * it[0] + (it[1] == MEM))
        end = max([it[0] + (it[1] == MEM) for it in items], default=0) + int(rng.integers(1, 6))
        items.append((end, EXIT, 0, 0, 0, -1, int(rng.integers(0, NROWS))))
        warps.append(items)
    return programs_from_items(warps_per_block, warps)


SHAPES = [  # (warps per block, blocks, SMs, schedulers, blocks per SM, issue interval)
    (1, 3, 1, 1, 1, 1), (2, 5, 2, 1, 2, 4), (4, 9, 3, 4, 2, 1), (3, 7, 2, 2, 3, 2),
    (8, 8, 4, 4, 1, 1), (5, 6, 8, 4, 4, 1), (6, 10, 3, 2, 2, 4),
    (16, 6, 2, 2, 2, 1),    # 16 warps per scheduler, as the 512x512 matmul: most wait, few issue
    (16, 6, 1, 1, 4, 1),    # 64 slots per scheduler: every place of the list marks (MAX_LIST)
    (8, 10, 1, 1, 9, 1),    # 72 slots: more than the marks hold, the numpy engine's rules
]


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("shape", range(len(SHAPES)))
def test_random_programs_match_the_reference_and_the_numpy_engine(policy, shape):
    nw, nb, sms, sched, bps, alu = SHAPES[shape]
    for seed in range(3):
        progs = random_programs(100 * shape + seed, nw, nb)
        for bpol in ("round_robin", "least_loaded"):
            args = dict(sms=sms, schedulers=sched, blocks_per_sm=bps, alu=alu, policy=policy,
                        block_policy=bpol, seed=seed)
            native = run(NativeEngine, progs, **args)
            assert_same(native, run(ReferenceEngine, progs, **args), timeline=False)
            assert_same(native, run(SMEngine, progs, **args))


LONG_SHAPES = [  # (warps per block, blocks, SMs, schedulers, blocks per SM): issue interval 1
    (1, 4, 1, 1, 2), (2, 6, 1, 2, 2), (4, 9, 2, 2, 3), (8, 8, 2, 4, 2), (16, 6, 2, 2, 2),
]


@pytest.mark.parametrize("shape", range(len(LONG_SHAPES)))
def test_gto_runs_of_plain_instructions_match_the_reference(shape):
    # up to 40 plain instructions between stop points: gto issues them as runs, which
    # other schedulers' requests, barrier releases, exits and stall ends cut short
    nw, nb, sms, sched, bps = LONG_SHAPES[shape]
    for seed in range(4):
        progs = random_programs(1000 + 10 * shape + seed, nw, nb, gap=40)
        for bpol in ("round_robin", "least_loaded"):
            args = dict(sms=sms, schedulers=sched, blocks_per_sm=bps, alu=1, policy="gto",
                        block_policy=bpol)
            native = run(NativeEngine, progs, **args)
            assert_same(native, run(ReferenceEngine, progs, **args), timeline=False)
            assert_same(native, run(SMEngine, progs, **args))


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_once_every_block_is_resident_the_sms_run_one_after_another_with_the_same_counts(policy):
    # 12 blocks on 4 SMs x 3: all resident from cycle 0, so each SM runs to its end alone
    # (native_engine: the timeline rows are put back in cycle order)
    progs = random_programs(77, 4, 12, gap=20)
    args = dict(sms=4, schedulers=2, blocks_per_sm=3, alu=1, policy=policy)
    native = run(NativeEngine, progs, **args)
    assert_same(native, run(ReferenceEngine, progs, **args), timeline=False)
    assert_same(native, run(SMEngine, progs, **args))
    assert len(native.timeline_rows()[0]) == 48 and len(set(native.sm_cycles.tolist())) > 1


def exit_at(n: int):
    return (n, EXIT, 0, 0, 0, -1, 0)


def _two_schedulers(*warps):
    """One SM, two schedulers, two blocks of two warps resident (block 0's warps first
    in each scheduler), gto, issue interval 1: the native engine and the reference."""
    progs = programs_from_items(2, list(warps))
    args = dict(sms=1, schedulers=2, blocks_per_sm=2, alu=1)
    native = run(NativeEngine, progs, **args)
    assert_same(native, run(ReferenceEngine, progs, **args), timeline=False)
    return native


def test_a_run_is_cut_where_a_barrier_release_wakes_its_scheduler():
    # scheduler 0: block 0 warp 0 runs 50 plain instructions; block 1 warp 0 waits at a
    # barrier from the start. Scheduler 1: block 0 warp 1 exits after 3, then block 1
    # warp 1 issues 10 (cycles 3..12) and reaches the barrier: released at 13, block 1
    # warp 0 is ready but not selected while the run goes on (cycles 13..49)
    tr = _two_schedulers([exit_at(50)], [exit_at(3)],
                         [(0, BARRIER, 0, 0, 0, -1, 1), exit_at(5)],
                         [(10, BARRIER, 0, 0, 0, -1, 1), exit_at(12)])
    assert tr.stalls[2, R_BARRIER] == 13 and tr.stalls[2, R_NOT_SELECTED] == 37
    assert tr.issued[0] == 50 + 3 + 5 + 12 and tr.cycles == 55


def test_a_run_is_cut_where_another_schedulers_request_takes_the_pipe():
    # scheduler 0: block 0 warp 0 runs 40 plain instructions; block 1 warp 0's next
    # instruction is a shared request (ready, not selected). At cycle 5 scheduler 1 issues
    # a shared request costing 30: the pipe is busy until 35, a pipe stall for 6..34
    tr = _two_schedulers([exit_at(40)], [(5, MEM, PIPE_SHARED, 30, 40, -1, 2), exit_at(6)],
                         [(0, MEM, PIPE_SHARED, 1, 10, -1, 3), exit_at(1)], [exit_at(1)])
    assert tr.stalls[2, R_PIPE] == 29
    assert tr.stalls[2, R_NOT_SELECTED] == 40 - 29
    assert tr.cycles == 41


def test_a_one_cycle_request_stalls_no_one_and_the_run_goes_on():
    # as above, but scheduler 1's request at cycle 5 costs one cycle: the pipe is free again
    # at 6, so block 1 warp 0 stays ready and not selected while the run goes on
    tr = _two_schedulers([exit_at(40)], [(5, MEM, PIPE_SHARED, 1, 40, -1, 2), exit_at(6)],
                         [(0, MEM, PIPE_SHARED, 1, 10, -1, 3), exit_at(1)], [exit_at(1)])
    assert tr.stalls[2, R_PIPE] == 0
    assert tr.stalls[2, R_NOT_SELECTED] == 40
    assert tr.cycles == 41


def test_two_one_cycle_requests_in_one_cycle_queue_and_stall_a_waiting_request():
    # scheduler 0's block 0 warp 0 and scheduler 1's block 0 warp 1 each issue a one-cycle
    # shared request at cycle 5: the second waits for the first, the pipe is busy until 7, so
    # block 1 warp 0 (a shared request next, ready from 0) stalls for the pipe at cycle 6
    tr = _two_schedulers([(5, MEM, PIPE_SHARED, 1, 10, -1, 2), exit_at(40)],
                         [(5, MEM, PIPE_SHARED, 1, 10, -1, 2), exit_at(6)],
                         [(0, MEM, PIPE_SHARED, 1, 10, -1, 3), exit_at(1)], [exit_at(1)])
    assert tr.stalls[2, R_PIPE] == 1


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_one_cycle_requests_as_the_matmul_makes_them_match_the_reference(policy):
    # conflict-free shared requests cost one cycle: a pipe taken at t is free again at t + 1
    # unless two requests queue; 16 warps per scheduler, most of them waiting
    for seed in range(3):
        progs = random_programs(500 + seed, 16, 4, gap=4, max_cost=2)
        args = dict(sms=2, schedulers=2, blocks_per_sm=2, alu=1, policy=policy, seed=seed)
        native = run(NativeEngine, progs, **args)
        assert_same(native, run(ReferenceEngine, progs, **args), timeline=False)
        assert_same(native, run(SMEngine, progs, **args))


def test_a_run_stops_at_the_first_use_of_a_load_not_yet_there():
    # a load as instruction 0 (value at cycle 20), first read by instruction 11; 50 in all
    items = [(0, MEM, PIPE_LSU, 1, 20, 10, 2), exit_at(50)]
    tr = run(NativeEngine, programs_from_items(1, [items]), alu=1)
    # instructions 0..10 at cycles 0..10, 11..49 at cycles 20..58
    assert tr.cycles == 59 and tr.stalls[0, R_MEMORY] == 9


def test_two_level_with_another_active_set_size_matches():
    progs = random_programs(7, 8, 6)
    for active in (1, 2, 6):
        args = dict(sms=2, schedulers=2, blocks_per_sm=2, alu=2)
        native = run(NativeEngine, progs, policy=TwoLevel(active), **args)
        assert_same(native, run(ReferenceEngine, progs, policy=TwoLevel(active), **args), timeline=False)


def test_the_hand_worked_load_is_waited_for_at_its_first_use():
    # load as instruction 0 (latency 100), first read 5 instructions later: as in test_timing_engine
    items = [(0, MEM, 0, 1, 100, 5, 2), (10, EXIT, 0, 0, 0, -1, 0)]
    tr = run(NativeEngine, programs_from_items(1, [items]))
    assert tr.cycles == 104
    assert tr.stalls[0, R_MEMORY] == 94 and tr.stalls_by_row[2, R_MEMORY] == 94


def test_a_lone_warp_waits_its_issue_interval_between_instructions():
    tr = run(NativeEngine, programs_from_items(1, [[(10, EXIT, 0, 0, 0, -1, 0)]]), alu=4)
    assert tr.cycles == 37 and tr.stalls[0, R_DEPENDENCY] == 27


def test_without_timeline_the_lists_stay_empty_and_the_counts_equal():
    progs = random_programs(3, 4, 6)
    pol, bpol = get_policy("gto"), RoundRobinBlocks()
    off = NativeEngine(progs, 2, 2, 2, 1, pol, bpol, nrows=NROWS, timeline=False).run()
    on = run(NativeEngine, progs, sms=2, schedulers=2, blocks_per_sm=2)
    assert off.timeline_rows() == ([], [])
    assert_same(off, on, timeline=False)


def _reduce_launch(mode="timing", **kw):
    k = gpuemu.RawModule(path=str(PROGRAMS / "reduce_sequential.cu")).get_function("reduce_sequential")
    a = np.arange(6 * 256, dtype=np.float32)
    out = np.zeros(6, np.float32)
    return k((6,), (256,), (a, out), mode=mode, **kw)


def _matmul_launch(mode="timing", **kw):
    k = gpuemu.RawModule(path=str(PROGRAMS / "matmul_tiled.cu")).get_function("matmul_tiled")
    n = 32
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    out = np.zeros((n, n), np.float32)
    return k((n // 16, n // 16), (16, 16), (a, a, out, np.int32(n), np.int32(n), np.int32(n)),
             mode=mode, **kw)


@pytest.fixture(scope="module", params=["reduce_sequential", "matmul_tiled"])
def kernel_programs(request):
    launch = {"reduce_sequential": _reduce_launch, "matmul_tiled": _matmul_launch}[request.param]()
    return launch.timing.programs


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("block_policy", sorted(BLOCK_POLICIES))
def test_a_real_kernel_matches_the_reference_and_the_numpy_engine(kernel_programs, policy, block_policy):
    args = dict(sms=3, schedulers=4, blocks_per_sm=2, alu=1, policy=policy,
                block_policy=block_policy, seed=11)
    native = run(NativeEngine, kernel_programs, **args)
    assert_same(native, run(ReferenceEngine, kernel_programs, **args), timeline=False)
    assert_same(native, run(SMEngine, kernel_programs, **args))


def test_built_in_policies_run_natively_and_others_in_the_numpy_engine():
    class Mine(GreedyThenOldest):       # a subclass may change pick: not the built-in rule
        pass

    class MyBlocks(LeastLoaded):
        pass

    for name in POLICIES:
        for bname in BLOCK_POLICIES:
            assert supports(get_policy(name), BLOCK_POLICIES[bname]())
            assert engine_for(get_policy(name), BLOCK_POLICIES[bname]()) is NativeEngine
    assert engine_for(Mine(), RoundRobinBlocks()) is SMEngine
    assert engine_for(GreedyThenOldest(), MyBlocks()) is SMEngine
    with pytest.raises(ValueError, match="native engine"):
        NativeEngine(random_programs(0, 1, 1), 1, 1, 1, 1, Mine(), RoundRobinBlocks(), nrows=NROWS)


def test_a_timed_launch_uses_the_native_engine_for_a_built_in_policy(monkeypatch):
    used = []
    real = timing_mode.engine_for

    def spy(policy, block_policy):
        used.append(real(policy, block_policy))
        return used[-1]

    monkeypatch.setattr(timing_mode, "engine_for", spy)
    _reduce_launch(scheduler="lrr")

    class Mine(GreedyThenOldest):
        pass

    _reduce_launch(scheduler=Mine)
    assert used == [NativeEngine, SMEngine]


def test_numbers_beyond_int32_run_in_the_numpy_engine_with_the_same_result():
    # a request costing 2**31 cycles does not fit the native stop-point records
    items = [(0, MEM, 0, 1 << 31, 5, 0, 1), (2, EXIT, 0, 0, 0, -1, 0)]
    progs = programs_from_items(1, [items, items])
    native = run(NativeEngine, progs, schedulers=1)
    assert native.cycles > 1 << 31
    assert_same(native, run(SMEngine, progs, schedulers=1))
