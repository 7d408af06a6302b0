"""The block workers' threads: tasks run at once on threads kept between launches."""
from __future__ import annotations

import threading

import pytest

from gpuemu.machine import worker_threads


def test_as_many_tasks_as_threads_run_at_once():
    # each task waits for the others: they finish only if all run at the same time
    meet = threading.Barrier(3, timeout=10)
    pool = worker_threads.threads(3)
    tasks = [pool.submit(meet.wait) for _ in range(3)]
    for t in tasks:
        t.result()


def test_a_task_runs_on_a_thread_other_than_the_caller_s_and_the_threads_are_kept():
    ran = []
    pool = worker_threads.threads(1)
    pool.submit(lambda: ran.append(threading.current_thread())).result()
    assert ran[0] is not threading.current_thread() and ran[0].daemon
    assert worker_threads.threads(1) is pool and pool.size >= 1


def test_result_raises_what_the_task_raised_and_the_thread_takes_the_next_task():
    def fail():
        raise ValueError("batch 3")
    pool = worker_threads.threads(1)
    bad = pool.submit(fail)
    with pytest.raises(ValueError, match="batch 3"):
        bad.result()
    with pytest.raises(ValueError):               # (again: it is over, its error kept)
        bad.result()
    got = []
    pool.submit(lambda: got.append(1)).result()
    assert got == [1]


def test_asking_for_more_threads_starts_only_the_missing_ones():
    pool = worker_threads.threads(2)
    before = pool.size
    worker_threads.threads(before + 1)
    assert pool.size == before + 1
    worker_threads.threads(1)
    assert pool.size == before + 1
