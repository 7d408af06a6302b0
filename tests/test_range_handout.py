"""Ranges handed out in native code to the block workers of a launch without
counters (gpuemu/machine/range_handout.py): every block once, in the
reference's order, events finished in Python, the end waited for natively."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import gpuemu
from gpuemu.errors import KernelError
from gpuemu.machine import block_runner, block_workers, handed_launch, range_handout
from gpuemu.machine.block_ranges import block_ranges

ORDER = r"""
extern "C" __global__ void k(int* out, int* order, int* turn) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = blockIdx.x * 7 + threadIdx.x;
    if (threadIdx.x == 0) order[blockIdx.x] = atomicAdd(turn, 1);
}
"""

DIVERGENT = r"""
extern "C" __global__ void k(int* out) {
    if (threadIdx.x < 16 && blockIdx.x % 3 == 1) { __syncthreads(); }
    else { __syncthreads(); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = blockIdx.x;
}
"""

FAULT = r"""
extern "C" __global__ void k(float* x, int bad_block) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x >= bad_block) i += 1 << 20;
    x[i] = 1.0f;
}
"""

BLOCKS, THREADS = 1024, 64


@pytest.fixture
def handed(monkeypatch):
    """Every launch on the workers (SERIAL_BELOW 0); the launches run_handed ran, counted."""
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})
    ran = []
    real = handed_launch.run_handed

    def spy(run, ranges, nworkers, spent, pool):
        ran.append(nworkers)
        return real(run, ranges, nworkers, spent, pool)
    monkeypatch.setattr(handed_launch, "run_handed", spy)
    return ran


def _order_kernel():
    return gpuemu.RawModule(code=ORDER).get_function("k")


def _order_launch(k, workers: int):
    out = np.zeros(BLOCKS * THREADS, np.int32)
    order = np.full(BLOCKS, -1, np.int32)
    turn = np.zeros(1, np.int32)
    k((BLOCKS,), (THREADS,), (out, order, turn), stats=False, workers=workers)
    return out, order, turn


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_every_block_runs_once_on_several_workers(handed, workers):
    out, order, turn = _order_launch(_order_kernel(), workers)
    assert handed == [workers]
    expect = (np.arange(BLOCKS)[:, None] * 7 + np.arange(THREADS)[None, :]).ravel()
    assert np.array_equal(out, expect)
    assert turn[0] == BLOCKS and np.array_equal(np.sort(order), np.arange(BLOCKS))


def test_one_thread_runs_the_ranges_in_the_reference_s_order(handed, monkeypatch):
    # the pool thread takes no range (its flag set at once): the calling thread
    # runs them all through the native loop, in the order the reference hands out
    def idle(w, take, args, ranges, st, results):
        st[(args[4] - st.ctypes.data) // 8] = range_handout.FINISHED
    monkeypatch.setattr(handed_launch, "_pool_ranges", idle)
    _, order, _ = _order_launch(_order_kernel(), 2)
    assert handed == [2]
    ranges = range_handout.ranges_array(BLOCKS, 2, THREADS)
    st = range_handout.state(1)
    ran: list = []

    def take():
        st[range_handout.NEXT] += 1
        return int(st[range_handout.NEXT]) - 1
    got = range_handout.take_ranges_reference(lambda lo, hi: ran.extend(range(lo, hi)) or 0,
                                              ranges, st, None, take)
    assert got == -1 and len(ranges) > 4
    assert np.array_equal(np.argsort(order), np.array(ran))


def test_the_handed_ranges_are_block_ranges_guided_ones():
    ranges = range_handout.ranges_array(4096, 2, 256)
    assert [range(int(lo), int(hi)) for lo, hi in ranges] == list(block_ranges(4096, 2, 256))


def test_the_reference_hands_a_code_back_with_the_range_s_index():
    ranges = np.array([(0, 4), (4, 8), (8, 12)], np.int64)
    st = range_handout.state(1)
    turns = iter(range(10))
    got = range_handout.take_ranges_reference(lambda lo, hi: 2 if lo == 4 else 0, ranges, st,
                                              range_handout.DONE0, lambda: next(turns))
    assert got == (1 << range_handout.CODE_BITS) | 2
    assert st[range_handout.DONE0] == range_handout.RUNNING      # its flag only once none is left
    assert range_handout.take_ranges_reference(lambda lo, hi: 0, ranges, st, range_handout.DONE0,
                                               lambda: next(turns)) == -1
    assert st[range_handout.DONE0] == range_handout.FINISHED


@pytest.mark.parametrize("workers", [2, 3])
def test_blocks_that_come_back_to_python_give_one_worker_s_findings_and_results(handed, workers):
    runs = []
    for w in (1, workers):
        out = np.zeros(640 * 32, np.int32)
        lau = gpuemu.RawModule(code=DIVERGENT).get_function("k")((640,), (32,), (out,), stats=False,
                                                                workers=w)
        runs.append(([(f.kind, f.line, f.block) for f in lau.findings], out))
    assert handed == [workers]
    assert runs[1][0] == runs[0][0] and runs[0][0]
    assert np.array_equal(runs[1][1], runs[0][1])


@pytest.mark.parametrize("workers", [2, 3])
def test_a_fault_on_any_thread_names_the_first_faulting_block(handed, workers):
    x = np.zeros(BLOCKS * THREADS, np.float32)
    k = gpuemu.RawModule(code=FAULT).get_function("k")
    with pytest.raises(KernelError) as e:
        k((BLOCKS,), (THREADS,), (x, np.int32(300)), stats=False, workers=workers)
    assert handed == [workers]
    assert e.value.findings[0].block == (300, 0, 0)


def test_a_pool_thread_failing_outside_its_ranges_fails_the_launch_and_the_next_is_right(
        handed, monkeypatch):
    k = _order_kernel()
    real, armed = handed_launch._handed_loop, [True]

    def failing(w, take, args, ranges, st, results):
        if args[4] and armed[0]:            # a pool thread (its flag's address)
            armed[0] = False
            raise MemoryError("injected")
        return real(w, take, args, ranges, st, results)
    monkeypatch.setattr(handed_launch, "_handed_loop", failing)
    with pytest.raises(MemoryError, match="injected"):
        _order_launch(k, 2)
    out, order, turn = _order_launch(k, 2)
    assert handed == [2, 2] and turn[0] == BLOCKS
    assert np.array_equal(out, (np.arange(BLOCKS)[:, None] * 7 + np.arange(THREADS)[None, :]).ravel())


def _state_with_flags(*flags) -> np.ndarray:
    st = range_handout.state(len(flags))
    st[range_handout.DONE0::range_handout.WORDS][:len(flags)] = flags
    return st


def test_the_wait_counts_the_pool_threads_that_are_not_finished():
    wait = block_runner.wait_workers_function()
    F, L, R = range_handout.FINISHED, range_handout.LEFT, range_handout.RUNNING
    assert wait(_state_with_flags(F, F, F).ctypes.data, 3) == 0
    assert wait(_state_with_flags(F, L, F).ctypes.data, 3) == 1     # left on an error: no spin for it
    assert wait(_state_with_flags(R, F).ctypes.data, 2) == 1        # still running when the spin ends


def _pool_call_with_none_left(st: np.ndarray) -> int:
    """gpuemu_take_ranges as a pool thread calls it where no range is left
    (it runs no block: argv is never read)."""
    ranges = np.zeros((1, 2), np.int64)
    st[range_handout.NEXT] = 1
    take = block_runner.take_ranges_function()
    return take(0, ranges.ctypes.data, 1, st.ctypes.data, st.ctypes.data + 8 * range_handout.DONE0, 0)


def test_a_pool_thread_with_no_range_left_sets_its_flag_and_leaves_once_acked():
    st = range_handout.state(1)
    st[range_handout.ACK] = 1
    assert _pool_call_with_none_left(st) == -1
    assert st[range_handout.DONE0] == range_handout.FINISHED


def test_a_pool_thread_leaves_without_the_ack_after_its_spin():
    st = range_handout.state(1)
    assert _pool_call_with_none_left(st) == -1
    assert st[range_handout.DONE0] == range_handout.FINISHED and st[range_handout.ACK] == 0


def test_a_closed_handout_runs_no_more_blocks(handed, monkeypatch):
    # the calling thread's first range fails: the pool thread, made to start
    # only then, finds the handout closed
    k = gpuemu.RawModule(code=FAULT).get_function("k")
    x = np.zeros(BLOCKS * THREADS, np.float32)
    real = handed_launch._pool_ranges
    started = threading.Event()
    ran_after = []

    def late(w, take, args, ranges, st, results):
        started.wait(10)
        ran_after.append(int(st[range_handout.NEXT]) >= len(ranges))
        return real(w, take, args, ranges, st, results)
    real_loop = handed_launch._handed_loop

    def calling(w, take, args, ranges, st, results):
        try:
            return real_loop(w, take, args, ranges, st, results)
        finally:
            if not args[4]:
                started.set()
    monkeypatch.setattr(handed_launch, "_pool_ranges", late)
    monkeypatch.setattr(handed_launch, "_handed_loop", calling)
    with pytest.raises(KernelError) as e:
        k((BLOCKS,), (THREADS,), (x, np.int32(0)), stats=False, workers=2)
    assert e.value.findings[0].block == (0, 0, 0)
    assert ran_after == [True]
