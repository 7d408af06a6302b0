"""A block worker's pool thread kept off the CPU of the thread that woke it.

A launch on N block workers wakes N - 1 pool threads (worker_threads.py);
Linux picks the CPU each wakes on. On a virtual machine it often picks the
waking thread's own CPU while another allowed CPU is idle: a KVM guest sees
a halted virtual CPU as preempted (vcpu_is_preempted) and so not available
to run on, and the woken thread then shares the launching thread's CPU
until the load balancer moves it, some milliseconds later. Measured on our
2-core virtual machine (vecadd 1M, counters off, two workers): the pool
thread woke on the calling thread's CPU for whole blocks of launches, each
then taking 2.6-3.2 ms instead of 1.3 (one worker: 2.5).

So while a pool thread runs a task, its affinity leaves out the CPU the
launching thread ran on when it handed the task out (the launching thread
runs blocks there the whole launch): set as the task starts, that moves a
thread woken there now, and a wake-up inside the task (the GIL, a lock;
with counters on the pool thread waits for the GIL a few times a launch,
each wake a new placement) cannot put it back. Its affinity is given back
after the task.
"""
from __future__ import annotations

import ctypes
import os
from typing import Callable, Optional


def _sched_getcpu() -> Optional[Callable[[], int]]:
    """libc's sched_getcpu (the CPU the calling thread runs on), or None."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


_getcpu = _sched_getcpu()


def current_cpu() -> int:
    """The CPU the calling thread runs on now, or -1 where it cannot be told."""
    return _getcpu() if _getcpu is not None else -1


def elsewhere(caller: int, allowed: frozenset) -> Optional[frozenset]:
    """The CPUs a pool thread may run on during a task handed out by a thread
    on CPU `caller`, with `allowed` CPUs: all but the caller's, or None where
    nothing changes (the caller's CPU unknown or not among them, or no other)."""
    if caller < 0 or caller not in allowed or len(allowed) < 2:
        return None
    return allowed - {caller}


class OffCaller:
    """While a task runs, the pool thread's affinity without the CPU of the
    thread that handed it out (its affinity given back after): setting it
    moves the thread now where it woke on that CPU, and a wake-up inside the
    task (the GIL, a lock) cannot put it back there. Elsewhere (no affinity
    calls, an unknown CPU) nothing changes."""
    __slots__ = ("caller", "allowed")

    def __init__(self, caller: int) -> None:
        self.caller = caller
        self.allowed: Optional[frozenset] = None

    def __enter__(self) -> "OffCaller":
        if self.caller < 0 or _getcpu is None:
            return self
        try:
            allowed = frozenset(os.sched_getaffinity(0))
            cpus = elsewhere(self.caller, allowed)
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
                self.allowed = allowed
        except OSError:                 # (a CPU set changed meanwhile: leave it be)
            pass
        return self

    def __exit__(self, *exc) -> None:
        if self.allowed is not None:
            try:
                os.sched_setaffinity(0, self.allowed)
            except OSError:
                pass
            self.allowed = None
