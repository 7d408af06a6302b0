"""The machine's own ceiling for N threads: plain numpy work split over N
threads, the shape of the block workers' pool (the calling thread takes one
share, pool threads woken by an Event take the others, the caller waits for
them), timed in turns with the launches it is compared with.

A speed-up of N workers on a virtual machine is bounded by what N threads of
any code get there at that moment: the host may run two vCPUs on one
physical core's hyperthreads, or slow both when both are busy
(benchmarks/core_speed.py measures it). numpy's ufuncs release the GIL, so
this work scales as far as the cores let it; gpuemu's speed-up over this
ceiling, measured in the same spell, is what is left to the emulator.
Its threads run their shares off the calling thread's CPU, as the pool's
run their tasks (gpuemu/machine/thread_placement.py): woken by an Event on
a virtual machine, they shared that CPU often enough to take the ceiling
of our 2-core machine from 2.2x to 1.2x once gpuemu's pool no longer did.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from gpuemu.machine.thread_placement import OffCaller, current_cpu

_N = 1 << 18          # floats per pass and thread share: 1 MB, streamed and computed on


class Ceiling:
    """numpy work that takes about `seconds` on one thread, runnable split
    over 1..`nthreads` threads."""

    def __init__(self, seconds: float, nthreads: int) -> None:
        self.nthreads = nthreads
        self.a = np.linspace(1.0, 2.0, _N * nthreads, dtype=np.float32)
        self.b = self.a[::-1].copy()
        self.c = np.zeros_like(self.a)
        self.passes = 1
        one = min(self._timed(1) for _ in range(5))
        self.passes = max(1, round(seconds / one))
        self._go = [threading.Event() for _ in range(nthreads - 1)]
        self._done = [threading.Event() for _ in range(nthreads - 1)]
        self._share = [(0, 0)] * nthreads
        self._caller = -1                # the CPU the calling thread ran on (thread_placement)
        for i in range(nthreads - 1):
            threading.Thread(target=self._loop, args=(i,), daemon=True).start()

    def _work(self, lo: int, hi: int) -> None:
        a, b, c = self.a[lo:hi], self.b[lo:hi], self.c[lo:hi]
        for _ in range(self.passes):
            np.add(a, b, out=c)          # streams memory, as vecadd's blocks do
            np.sqrt(c, out=c)            # and computes, as the transpose's index arithmetic does

    def _loop(self, i: int) -> None:
        while True:
            self._go[i].wait()
            self._go[i].clear()
            with OffCaller(self._caller):    # as the pool's threads run their tasks
                self._work(*self._share[i + 1])
            self._done[i].set()

    def run(self, nthreads: int) -> None:
        """The whole work once, split over `nthreads` (1..self.nthreads)."""
        total = _N * self.nthreads
        step = total // nthreads
        self._share = [(i * step, total if i == nthreads - 1 else (i + 1) * step)
                       for i in range(nthreads)]
        self._caller = current_cpu()
        for i in range(nthreads - 1):
            self._done[i].clear()
            self._go[i].set()
        self._work(*self._share[0])
        for i in range(nthreads - 1):
            self._done[i].wait()

    def _timed(self, nthreads: int) -> float:
        t0 = time.perf_counter()
        if nthreads == 1:
            self._work(0, _N * self.nthreads)
        else:
            self.run(nthreads)
        return time.perf_counter() - t0
