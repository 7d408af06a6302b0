"""benchmarks/thread_waits.py: where each thread's time goes, on
hand-worked numbers and on a real two-worker launch. No timing asserts."""
from __future__ import annotations

import sys
import threading

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_workers  # noqa: E402
import thread_waits  # noqa: E402

MS = 1_000_000


def test_the_summary_splits_cpu_into_native_and_python_and_blocked_time_into_gil_and_batch_waits():
    # per part: [cpu, run queue, blocked (ns), calls, sleeps]
    main = {"launch": [20 * MS, 1 * MS, 6 * MS, 1, 9], "native": [12 * MS, 0, 2 * MS, 9, 4],
            "wait": [0, 0, 1 * MS, 1, 1]}
    pool = {"range": [9 * MS, 0, 3 * MS, 2, 5], "charge": [3 * MS, 0, 1 * MS, 2, 1],
            "native": [10 * MS, 0, 2.5 * MS, 8, 3]}
    got = thread_waits.summary({1: main, 2: pool}, main=1)
    assert got["main"] == pytest.approx({"cpu": 20, "native_cpu": 12, "python_cpu": 8, "gil_at_return": 2,
                                         "gil_other": 3, "wait_batches": 1, "run_queue": 1,
                                         "sleeps_at_return": 4})
    assert got["others"] == pytest.approx({"cpu": 12, "native_cpu": 10, "python_cpu": 2, "gil_at_return": 2.5,
                                           "gil_other": 1.5, "wait_batches": 0, "run_queue": 0,
                                           "sleeps_at_return": 3})


def test_a_two_worker_launch_is_timed_on_both_threads_and_the_clock_is_taken_off_after(monkeypatch):
    from gpuemu.machine import block_workers, worker_copy
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (small: on the workers)
    run_batch = worker_copy.Worker.run_batch
    b = bench_workers._vecadd(1 << 16)
    b.launch(workers=2)
    with thread_waits.wait_clock() as (spent, timed):
        timed(b.launch, "launch")(workers=2)
    main = threading.get_ident()
    assert spent[main]["launch"][3] == 1 and spent[main]["native"][3] >= 1
    assert sum(ph.get("range", [0, 0, 0, 0])[3] for ph in spent.values()) >= 2     # every batch, some thread
    got = thread_waits.summary(spent, main)
    assert got["main"]["cpu"] > 0 and got["main"]["native_cpu"] > 0
    assert worker_copy.Worker.run_batch is run_batch
