"""Parallel block workers: the blocks of one launch on several host threads.

Blocks of a launch are independent until they meet in global memory, so
functional mode can run them on several cores. Each worker is a copy of the
launch's `LaunchRun` with its own frames, shared memory, ctx, trace buffer
and per-line counters (worker_copy.py); global memory, the bounds table,
the parameters and the symbols are shared. The native warp functions are called through
ctypes, which releases the GIL, so the workers' native code runs in
parallel; atomics are atomic instructions in the generated code
(gpuemu/jit/memory_access.py), so concurrent blocks' atomics on one address
never lose an update.

Identical to one worker, by construction:
- results: every block runs the same code on the same inputs (a kernel whose
  blocks race on global memory is racy on the GPU too);
- counters: per-line counters and issue cycles are sums over blocks; each
  worker prepares its trace records for the memory model on its own thread
  (MemorySystem.prepare: bank conflicts, coalescing, request and sector
  counts, which no other request changes) and one thread at a time charges
  the prepared batches in block order (MemorySystem.apply: the
  order-dependent caches), the order one worker produces (splitting a
  trace into batches changes no counter: gpuemu/memory/memory_system.py);
  a batch of the range next in that order is applied at once by the
  worker that wrote and prepared it (ordered_charge.py);
- findings and errors: reported in block order, the first fault of the
  lowest batch, the first barrier divergence per line.

The calling thread is one of the workers (N - 1 come from threads kept
between launches: worker_threads.py): with counters on each thread
charges every batch that is ready in block order (unless another is
charging) before it runs its next range, so no core waits for the
ordered step but at the very end. Batches are consecutive ranges of
blocks (block_ranges.py): counters off, they shrink toward the end of the
grid (guided self-scheduling), so the workers finish together, and are
handed out in native code (handed_launch.py, range_handout.py: no return
to Python between ranges, the launch's end waited for with the GIL let
go); counters on,
they are even, so the ordered step gets them at a steady pace.

Launches with a seed (seeded-random store order per warp run), a warp
scheduler other than the default, printf (one output buffer, filled in
the order the warps run), check mode or the weak memory model (both follow
blocks in order) run on one worker. So does the next launch of a run
whose last launch's blocks took less CPU than the workers' fixed part
could pay for (SERIAL_BELOW: a launch of a few thousand threads).

This module decides where a launch runs and drives its workers: the
launch's policy (how many workers, whether it may use several) and the
three ways a launch runs on them, traced (counters on, through the ordered
step), untraced, and handed out natively.
"""
from __future__ import annotations

import itertools
import os
import threading
import time
from typing import Callable, Iterable, Optional

from gpuemu.errors import LaunchError
from gpuemu.jit import abi

from . import handed_launch, ordered_charge, worker_copy, worker_threads

from .block_ranges import GuidedRanges, block_ranges, blocks_per_batch
from .warp_scheduler import LooseRoundRobin


_ENVIRON = os.environ
_ENV = getattr(_ENVIRON, "_data", None)      # the dict behind os.environ (CPython)
_ENV_KEY = _ENVIRON.encodekey("GPUEMU_WORKERS") if _ENV is not None else None


def workers_in_environment() -> bool:
    """Whether GPUEMU_WORKERS is set; found in the dict behind os.environ,
    without its encoding and KeyError (a microsecond or two of a small launch)."""
    if _ENV is not None and os.environ is _ENVIRON:
        return _ENV_KEY in _ENV
    return "GPUEMU_WORKERS" in os.environ


# The most block workers a launch may ask for (workers= or GPUEMU_WORKERS):
# each is a host thread with its own copy of the launch's state (frames,
# shared memory, trace buffers of a few MB), and more threads than a few per
# core run the blocks no faster. Without a cap workers=10**6 started threads
# until the process could start no more, and left them alive.
MAX_WORKERS = 4 * (os.cpu_count() or 1)


def too_many_workers(n: int, where: str) -> LaunchError:
    """The LaunchError of a worker count above MAX_WORKERS."""
    return LaunchError(f"{where} must be at most {MAX_WORKERS} (4 host threads per core of this "
                       f"machine's {os.cpu_count() or 1}), got {n}")


def default_workers() -> int:
    """GPUEMU_WORKERS, else 1 (the cores are often shared; ask for more).
    Read on every launch; a value that is no number counts as 1, one above
    MAX_WORKERS is a LaunchError (before any thread starts)."""
    if not workers_in_environment():
        return 1
    try:
        n = int(os.environ.get("GPUEMU_WORKERS", "1"))
    except ValueError:
        return 1
    if n > MAX_WORKERS:
        raise too_many_workers(n, "GPUEMU_WORKERS")
    return max(1, n)


def can_parallelise(run) -> bool:
    """Whether this launch may run its blocks on several workers."""
    return (run.options.get("seed") is None
            and run.options.get("printf_buffer") is None     # one FIFO, in warp order
            and getattr(run, "checker", None) is None        # judges blocks in order
            and getattr(run, "weak", None) is None           # holds stores block by block
            and type(run.scheduler) is LooseRoundRobin)

def run_parallel(run, batches: Iterable, nworkers: int,
                 progress: Optional[Callable[[int], None]] = None) -> None:
    """Run `batches` (lists of blocks or ranges of linear indices, in schedule
    order) on `nworkers` threads, the calling thread one of them; charge
    traces, merge counters and findings into `run`. A run whose last launch's
    blocks took less CPU than SERIAL_BELOW runs them on the calling thread
    alone (`_run_serial`)."""
    d = run.__dict__
    if d.get(worker_copy.WORK, SERIAL_BELOW[True]) < SERIAL_BELOW[bool(run._tracing)]:
        _run_serial(run, batches, progress)
        return
    spent: list = []             # CPU seconds of each thread in the launch's blocks
    if not run._tracing:
        ranges = handed_launch.handed(run, batches, nworkers) if progress is None else None
        if ranges is not None:
            handed_launch.run_handed(run, ranges, nworkers, spent, _threads(nworkers - 1))
        else:
            _run_untraced(run, list(batches), nworkers, progress, spent)
    else:
        _run_traced(run, batches, nworkers, progress, spent)
    d[worker_copy.WORK] = sum(spent)


# A launch on N workers costs its calling thread a fixed part besides its
# share of the blocks (the pool thread's start, the worker copies renewed,
# the memory system shared, the copies kept; about 0.4 ms with counters on,
# 0.05-0.1 ms off, measured on our 2-core machine from launches of vecadd of
# 4K to 64K threads at 1 and 2 workers: the calling thread's CPU at 2 workers
# minus half one worker's), so two workers gain only where the blocks take
# more than about twice that on one: below these (counters on, off), a run's
# next launch runs on the calling thread alone, measured again, so a
# launch that grows goes back to the workers.
SERIAL_BELOW = {True: 1.0e-3, False: 0.15e-3}


def _run_serial(run, batches: Iterable, progress: Optional[Callable[[int], None]]) -> None:
    """The batches on the calling thread in order, as one worker runs them
    (LaunchRun.run_batches), their CPU measured (WORK). Consecutive ranges
    of linear indices with no progress to report go as one range, one
    native call (as LaunchRun.run gives one worker)."""
    if progress is None and isinstance(batches, tuple) and batches and isinstance(batches[0], range):
        batches = (_one_range(batches),)
    t0 = time.thread_time()
    run.run_batches(batches, progress)
    run.__dict__[worker_copy.WORK] = time.thread_time() - t0


def _one_range(ranges: tuple) -> range:
    """block_ranges' consecutive ranges (lo..hi-1 in order) as one range."""
    return range(ranges[0].start, ranges[-1].stop)


def _threads(n: int) -> worker_threads.Threads:
    """The process's block worker threads, at least n (worker_threads.py;
    tests count the pools asked for here)."""
    return worker_threads.threads(n)


def _on_threads(nworkers: int, pool_loop: Callable[[], None], own_loop: Callable[[], None],
                close: Callable[[], None]) -> None:
    """`pool_loop` on nworkers - 1 pool threads and `own_loop` on this one;
    then `close` (nothing more is handed out) and the pool threads joined,
    also where `own_loop` raised or the join is interrupted (Ctrl-C: the
    interrupt is raised once every pool thread ended its loop, so none
    writes into the launch's arrays after it returned)."""
    pool = _threads(nworkers - 1)
    futures = [pool.submit(pool_loop) for _ in range(nworkers - 1)]
    try:
        own_loop()
    finally:
        close()
        worker_threads.join(futures)


def _run_traced(run, batches: Iterable, nworkers: int, progress: Optional[Callable[[int], None]],
                spent: list) -> None:
    """run_parallel of a traced launch (counters on): the ordered step."""
    ms = run.memsys
    # made here, not by two threads at once (a worker's NativeBatch.bind reads
    # them): the tables, the sums (the last launch's, settled: the kept
    # NativeBatches fold into them), the caches' states as large as the last launch's
    sums, rows = run.__dict__.get(worker_copy.LAST, (None, ()))
    states = ms.share(run.meta.instrs, sums, rows)
    source = _source(batches, nworkers, run.shape.threads_per_block, even=True)
    charge = ordered_charge.OrderedCharge(run, source)
    start = run.ctx.copy()       # what every worker's ctx starts from
    # the pool threads' copies renewed here, before they wake: on a pool thread
    # that took 0.07-0.09 ms of GIL waits before its first range (vecadd 1M,
    # counters on: two workers 1-1.5% faster, steady turns of 40-60 rounds)
    workers = [worker_copy.take(run, start) for _ in range(nworkers - 1)]
    theirs = list(workers)       # each pool thread pops one (list.pop is atomic)
    merged = threading.Lock()
    got: dict = {"reported": 0}  # the calling thread's: its copy, blocks told to progress

    def finished(wk: worker_copy.Worker) -> None:
        """The worker ran its last blocks: its counts go into the launch's
        (sums, and the first costliest request: any order gives the same),
        on its own thread, while the others finish."""
        with merged:
            worker_copy.merge_counts(run, [wk])

    def work(wk: worker_copy.Worker, nxt) -> None:
        seq, blocks = nxt
        wk.front = (charge, seq)
        res = wk.run_batch(blocks)
        if res[2] is not None:
            source.close()      # every lower batch is already taken: the rest need not run
        elif wk.records:        # ranges of one batch from now on, each about full
            source.in_units(blocks_per_batch(int(wk.run.ctx[abi.C_TRACE_CAP]), len(blocks), wk.records))
        charge.put(seq, len(blocks), res, wk, wk.held)

    def loop(mine: bool = False) -> None:
        """A worker's: the ordered step first (it is the longest chain), then
        the next range, until none is left; the calling thread's (`mine`) then
        tells `progress` and charges until every batch handed out is charged."""
        try:
            if mine:
                wk = got["mine"] = worker_copy.take(run, start, lend=True)
            else:
                wk = theirs.pop()
            t0 = time.thread_time()
            done = False
            while True:
                charge.ready()
                if mine and progress is not None and charge.blocks > got["reported"]:
                    progress(charge.blocks - got["reported"])
                    got["reported"] = charge.blocks
                nxt = source.take()
                if nxt is not None:
                    work(wk, nxt)
                    continue
                if not done:
                    finished(wk)
                    done = True
                if not mine:
                    charge.ready()
                    break
                if not charge.wait(source):
                    break                # every batch handed out is charged, or one failed
            spent.append(time.thread_time() - t0)
        except BaseException as e:   # (else the calling thread would wait for its batch for ever)
            charge.fail(e)
            raise

    # (the pool threads start while this one takes its copy)
    _on_threads(nworkers, loop, lambda: loop(mine=True), source.close)
    if progress is not None and charge.blocks > got["reported"]:
        progress(charge.blocks - got["reported"])
    if charge.error is not None:
        raise charge.error
    run.__dict__[worker_copy.LAST] = (ms.launch_sums(), tuple(st.rows for st in states))
    worker_copy.keep(run, workers, got["mine"])


class _InOrder:
    """Batches handed out in the given order (GuidedRanges' interface)."""

    def __init__(self, batches: Iterable) -> None:
        self._it = enumerate(batches)
        self._lock = threading.Lock()
        self.handed = 0
        self.closed = False

    def take(self) -> Optional[tuple]:
        with self._lock:
            nxt = None if self.closed else next(self._it, None)
            if nxt is None:
                self.closed = True
            else:
                self.handed += 1
            return nxt

    def in_units(self, blocks: int) -> None:
        pass

    def close(self) -> None:
        with self._lock:
            self.closed = True


def _source(batches: Iterable, nworkers: int, threads_per_block: int, even: bool = False):
    """What hands out the batches: ranges of linear block indices that follow
    one another are cut afresh as they are taken (GuidedRanges, even or
    guided); others go in the given order. block_ranges' own (LaunchRun.run's,
    kept per launch shape) are known to follow one another, unchecked."""
    if type(batches) is tuple and batches and type(batches[0]) is range and batches[0].start == 0:
        total = batches[-1].stop
        if batches is block_ranges(total, nworkers, threads_per_block):
            return GuidedRanges(0, total, nworkers, threads_per_block, even)
    batches = list(batches)
    if batches and all(isinstance(b, range) and b.step == 1 for b in batches) and all(
            x.stop == y.start for x, y in zip(batches, batches[1:])):
        return GuidedRanges(batches[0].start, batches[-1].stop, nworkers, threads_per_block, even)
    return _InOrder(batches)


def _run_untraced(run, batches: list, nworkers: int,
                  progress: Optional[Callable[[int], None]], spent: list) -> None:
    """Nothing to charge in order (counters off): the calling thread works as
    one of the workers, each takes the next batch until none is left, and
    findings and the first error are merged in batch order at the end."""
    base = run.findings
    run.findings = []
    start = run.ctx.copy()       # before the calling thread's blocks change it
    workers: list = []           # each pool thread's copy, taken on its own thread
    nxt = itertools.count()
    results: dict = {}
    finished: list = []          # blocks per finished batch (list.append is atomic)
    stop = threading.Event()
    reported = [0]

    def loop(mine: bool = False) -> None:
        """A worker's: the next batch until none is left or one failed; the
        calling thread's (`mine`, the launch itself) tells `progress`."""
        if mine:
            wk = worker_copy.Worker(run, own=True)
        else:
            wk = worker_copy.take(run, start)
            workers.append(wk)
        t0 = time.thread_time()
        try:
            while not stop.is_set():
                seq = next(nxt)
                if seq >= len(batches):
                    break
                res = results[seq] = wk.run_batch(batches[seq])
                finished.append(len(batches[seq]))
                if res[2] is not None:
                    stop.set()      # every lower batch is already taken: the rest need not run
                    break
                if mine and progress is not None:
                    reported[0] = _report(progress, finished, reported[0])
        finally:
            spent.append(time.thread_time() - t0)

    _on_threads(nworkers, loop, lambda: loop(mine=True), stop.set)
    run.findings = base
    for seq in sorted(results):
        _, findings, err = results[seq]
        ordered_charge.merge_findings(run, findings)
        if err is not None:
            raise err
    if progress is not None:
        _report(progress, finished, reported[0])
    worker_copy.merge_counts(run, workers)
    worker_copy.keep(run, workers)



def _report(progress: Callable[[int], None], finished: list, reported: int) -> int:
    """Tell `progress` of the blocks finished since `reported`; the new total."""
    total = sum(finished)
    if total > reported:
        progress(total - reported)
    return total
