"""A pool thread runs its task off the CPU of the thread that handed it out
(gpuemu/machine/thread_placement.py), its affinity given back after."""
from __future__ import annotations

import os
import threading
import time

import pytest

from gpuemu.machine import thread_placement, worker_threads


def test_a_task_from_cpu_0_may_run_on_every_allowed_cpu_but_0():
    assert thread_placement.elsewhere(0, frozenset({0, 1, 2, 3})) == {1, 2, 3}


def test_nothing_changes_where_the_caller_s_cpu_is_unknown_not_allowed_or_the_only_one():
    assert thread_placement.elsewhere(-1, frozenset({0, 1})) is None
    assert thread_placement.elsewhere(5, frozenset({0, 1})) is None
    assert thread_placement.elsewhere(0, frozenset({0})) is None


class _Affinity:
    """os.sched_getaffinity / sched_setaffinity of one thread, recorded."""

    def __init__(self, cpus: set) -> None:
        self.cpus = set(cpus)
        self.set_to: list = []

    def get(self, pid: int) -> set:
        assert pid == 0                  # the calling thread's
        return set(self.cpus)

    def set(self, pid: int, cpus) -> None:
        assert pid == 0
        self.cpus = set(cpus)
        self.set_to.append(set(cpus))


def _fake(monkeypatch, cpus: set) -> _Affinity:
    aff = _Affinity(cpus)
    monkeypatch.setattr(os, "sched_getaffinity", aff.get, raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", aff.set, raising=False)
    monkeypatch.setattr(thread_placement, "_getcpu", lambda: 1)
    return aff


def test_while_a_task_runs_its_thread_may_not_run_on_the_caller_s_cpu_and_after_it_may_again(monkeypatch):
    aff = _fake(monkeypatch, {0, 1})
    seen = []
    with thread_placement.OffCaller(1):
        seen.append(set(aff.cpus))
    assert seen == [{0}]
    assert aff.cpus == {0, 1} and aff.set_to == [{0}, {0, 1}]


def test_a_task_whose_caller_s_cpu_is_unknown_leaves_the_affinity_alone(monkeypatch):
    aff = _fake(monkeypatch, {0, 1})
    with thread_placement.OffCaller(-1):
        pass
    assert aff.set_to == []


def test_a_task_that_raises_still_gives_the_affinity_back(monkeypatch):
    aff = _fake(monkeypatch, {0, 1, 2})
    try:
        with thread_placement.OffCaller(2):
            raise ValueError("block 7")
    except ValueError:
        pass
    assert aff.cpus == {0, 1, 2}


def test_a_pool_task_carries_the_submitting_thread_s_cpu_and_runs_off_it(monkeypatch):
    monkeypatch.setattr(thread_placement, "current_cpu", lambda: 3)
    got = []
    monkeypatch.setattr(thread_placement, "OffCaller", lambda cpu: _Recorder(cpu, got))
    worker_threads.forget()              # new threads: they look OffCaller up as they start
    try:
        task = worker_threads.threads(1).submit(lambda: got.append("ran"))
        task.result()
    finally:
        worker_threads.forget()
    assert task.cpu == 3 and got == [("enter", 3), "ran", "exit"]


class _Recorder:
    def __init__(self, cpu: int, got: list) -> None:
        self.cpu, self.got = cpu, got

    def __enter__(self):
        self.got.append(("enter", self.cpu))

    def __exit__(self, *exc):
        self.got.append("exit")


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity calls on this system")
def test_after_a_pool_task_the_pool_thread_may_run_on_every_cpu_the_process_may():
    pool = worker_threads.threads(1)
    tid = []
    pool.submit(lambda: tid.append(threading.get_native_id())).result()
    want = os.sched_getaffinity(0)
    deadline = time.monotonic() + 10     # (given back just after the task's result is told)
    while os.sched_getaffinity(tid[0]) != want and time.monotonic() < deadline:
        time.sleep(0.001)
    assert os.sched_getaffinity(tid[0]) == want
