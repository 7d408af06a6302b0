"""benchmarks/worker_schedule.py: the model of the block workers' schedule,
on hand-worked schedules."""
from __future__ import annotations

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import worker_schedule  # noqa: E402


def test_two_equal_ranges_without_an_ordered_step_take_one_range_on_two_threads():
    assert worker_schedule.schedule([1.0, 1.0], [0.0, 0.0], 2) == 1.0


def test_an_odd_range_out_waits_for_one_thread():
    # 3 ranges on 2 threads: one thread runs two of them
    assert worker_schedule.schedule([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], 2) == 2.0


def test_the_ordered_step_charges_ranges_in_order_on_one_thread_at_a_time():
    # both ranges end at 2; the calling thread charges range 0 (2-3), then
    # range 1 (3-4); the other thread finds the ordered step taken and no range left
    assert worker_schedule.schedule([2.0, 2.0], [1.0, 1.0], 2) == 4.0
    assert worker_schedule.speedup([2.0, 2.0], [1.0, 1.0], 2) == pytest.approx(1.5)


def test_a_thread_charges_before_it_takes_the_next_range():
    # 0-1: ranges 0 and 1; the calling thread charges both (1-2), runs range 2 (2-3),
    # charges it and range 3 (3-4); the other runs range 3 (1-2) and stops
    assert worker_schedule.schedule([1.0] * 4, [0.5] * 4, 2) == 4.0


def test_one_worker_runs_and_charges_everything_in_turn():
    assert worker_schedule.schedule([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], 1) == 7.5


def test_the_model_s_ranges_are_those_run_parallel_hands_out():
    import bench_workers
    from gpuemu.machine.block_ranges import block_ranges
    # counters off: guided ranges; on: 1/32 of the grid, then whole worker batches
    # (24 records a block: 0.98 * 4096 / 24 = 167 blocks a batch of WORKER_TRACE_RECORDS)
    from gpuemu.machine.worker_copy import WORKER_TRACE_RECORDS
    assert WORKER_TRACE_RECORDS == 4096
    assert bench_workers.model_ranges(4096, 2, 256, False, 0) == [len(r) for r in block_ranges(4096, 2, 256)]
    assert bench_workers.model_ranges(4096, 2, 256, True, 4096 * 24) == [128] + [167] * 23 + [4096 - 128 - 167 * 23]
