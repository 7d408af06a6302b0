"""Where each thread of a block-workers launch spends its time: CPU in
native code (GIL released) and in Python (GIL held), and its waits, told
apart by the kernel's scheduler statistics, so a loaded machine measures
them too.

Linux keeps per thread (/proc/self/task/TID/schedstat, second field) the
time it was ready to run but waited for a CPU (other processes had the
cores). Over an interval, wall = CPU + that run-queue wait + blocked, and a
thread of ours blocks only on a lock or condition: the GIL, or the ordered
step's condition (`OrderedCharge.wait`, the calling thread waiting for a
batch). So, per thread:
- gil_at_return: blocked inside a native call's wrapper: the native code
  ran (it blocks on nothing), then the thread waited to take the GIL back;
- gil_other: blocked elsewhere in its batches and charges: the GIL again,
  taken from it after the switch interval (sys.getswitchinterval) by the
  other thread, or the ordered step's short condition lock;
- wait_batches: blocked in `OrderedCharge.wait` (the calling thread with
  no range left, waiting for batches to charge: the schedule, not the GIL);
- run_queue: waiting for a CPU (other processes: noise on a loaded machine).
The kernel adds a run-queue wait when the thread gets a CPU back, at a
scheduler tick's resolution: on a loaded machine the split of blocked time
between parts is off by up to the run-queue time (tens of ms with five
processes on two cores); on idle cores it is exact. What load does not
blur: sleeps_at_return, how many native calls returned to a GIL held by
the other thread and slept for it (voluntary context switches,
getrusage(RUSAGE_THREAD)).

    with wait_clock() as (spent, timed):
        timed(launch, "launch")(workers=2)
    summary(spent, threading.get_ident())   # ms per role and kind of time
"""
from __future__ import annotations

import os
import resource
import threading
import time
from contextlib import contextmanager

from gpuemu.jit import packed_call
from gpuemu.machine import block_runner, ordered_charge, worker_copy
from gpuemu.memory.trace_columns import TraceColumns

PARTS = ("native", "range", "charge", "wait", "launch")


class _Clock:
    """(thread CPU ns, run-queue wait ns, wall ns) of the calling thread, now."""

    def __init__(self) -> None:
        self._fds: dict = {}
        self._lock = threading.Lock()

    def now(self) -> tuple:
        tid = threading.get_native_id()
        fd = self._fds.get(tid)
        if fd is None:
            with self._lock:
                fd = self._fds[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)
        # (the first field, CPU, is updated only at scheduler events: thread_time is exact)
        rq = int(os.pread(fd, 128, 0).split()[1])
        return (time.thread_time_ns(), rq, time.perf_counter_ns(),
                resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def available() -> bool:
    """Whether this system keeps per-thread scheduler statistics."""
    return os.path.exists(f"/proc/self/task/{threading.get_native_id()}/schedstat")


@contextmanager
def wait_clock():
    """Time the native calls (block loops, memory-model passes, also those
    made with kept arguments (packed_call.PackedCall, Chain), and the copy of records into
    columns, TraceColumns.fill), the workers'
    batches and charges and the calling thread's waits for batches. Yields
    (spent, timed): spent {thread ident: {part: [cpu, run_queue, blocked,
    calls, sleeps]}} (times in ns), part one of PARTS; timed(fn, part) wraps fn to add its
    calls to spent (the caller times a whole launch as 'launch')."""
    clock = _Clock()
    spent: dict = {}

    def timed(fn, part):
        def call(*args, **kw):
            c0, q0, w0, s0 = clock.now()
            try:
                return fn(*args, **kw)
            finally:
                c1, q1, w1, s1 = clock.now()
                acc = spent.setdefault(threading.get_ident(), {}).setdefault(part, [0, 0, 0, 0, 0])
                acc[0] += c1 - c0
                acc[1] += q1 - q0
                acc[2] += (w1 - w0) - (c1 - c0) - (q1 - q0)
                acc[3] += 1
                acc[4] += s1 - s0
        return call

    saved_callers = dict(packed_call._callers)
    saved_native = packed_call.native

    def native(symbol, build_ir, nargs):      # memory-model passes made from now on
        if symbol not in packed_call._callers:
            saved_native(symbol, build_ir, nargs)
            packed_call._callers[symbol] = timed(packed_call._callers[symbol], "native")
        return packed_call._callers[symbol]
    for k, v in saved_callers.items():
        packed_call._callers[k] = timed(v, "native")
    patches = [(block_runner, n, lambda get: (lambda: timed(get(), "native")))
               for n in ("_function", "_range_function", "take_ranges_function", "wait_workers_function")
               if hasattr(block_runner, n)]
    patches += [(packed_call.PackedCall, "__call__", lambda f: timed(f, "native")),   # kept-argument passes
                (packed_call.Chain, "__call__", lambda f: timed(f, "native")),        # and their chains
                (TraceColumns, "fill", lambda f: timed(f, "native")),
                (packed_call, "native", lambda _: native),
                (worker_copy.Worker, "run_batch", lambda f: timed(f, "range")),
                (ordered_charge.OrderedCharge, "_charge", lambda f: timed(f, "charge")),
                (ordered_charge.OrderedCharge, "wait", lambda f: timed(f, "wait"))]
    saved = [getattr(owner, n) for owner, n, _ in patches]
    for (owner, n, wrap), old in zip(patches, saved):
        setattr(owner, n, wrap(old))
    try:
        yield spent, timed
    finally:
        for (owner, n, _), old in zip(patches, saved):
            setattr(owner, n, old)
        packed_call._callers.clear()
        packed_call._callers.update(saved_callers)
        clock.close()


def summary(spent: dict, main: int) -> dict:
    """Per role ('main': the calling thread, 'others': the pool threads
    summed), ms: cpu, native_cpu, python_cpu (in batches, charges and the
    launch's own Python), gil_at_return, gil_other, wait_batches,
    run_queue; and sleeps_at_return (a count)."""
    out = {}
    for role in ("main", "others"):
        threads = [ph for t, ph in spent.items() if (t == main) == (role == "main")]

        def part(name, i):
            return sum(ph.get(name, [0] * 5)[i] for ph in threads) / (1 if i == 4 else 1e6)
        if role == "main":
            cpu, rq, blocked = (part("launch", i) for i in range(3))
        else:                      # a pool thread: its batches and charges (its loop's rest is small)
            cpu, rq, blocked = (part("range", i) + part("charge", i) for i in range(3))
        out[role] = {"cpu": cpu, "native_cpu": part("native", 0), "python_cpu": cpu - part("native", 0),
                     "gil_at_return": part("native", 2),
                     "gil_other": blocked - part("native", 2) - part("wait", 2),
                     "wait_batches": part("wait", 2), "run_queue": rq,
                     "sleeps_at_return": part("native", 4)}
    return out
