"""Parallel block workers: the blocks of one launch on several host threads.

Blocks of a launch are independent until they meet in global memory, so
functional mode can run them on several cores. Each worker is a copy of the
launch's `LaunchRun` with its own frames, shared memory, ctx, trace buffer
and per-line counters; global memory, the bounds table, the parameters and
the symbols are shared. The native warp functions are called through
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
  worker that wrote and prepared it (_OrderedCharge.now);
- findings and errors: reported in block order, the first fault of the
  lowest batch, the first barrier divergence per line.

The calling thread is one of the workers (N - 1 come from threads kept
between launches: worker_threads.py): with counters on each thread
charges every batch that is ready in block order (unless another is
charging) before it runs its next range, so no core waits for the
ordered step but at the very end. Batches are consecutive ranges of
blocks (block_ranges.py): counters off, they shrink toward the end of the
grid (guided self-scheduling), so the workers finish together, and are
handed out in native code (range_handout.py: no return to Python between
ranges, the launch's end waited for with the GIL let go); counters on,
they are even, so the ordered step gets them at a steady pace.

Launches with a seed (seeded-random store order per warp run), a warp
scheduler other than the default, printf (one output buffer, filled in
the order the warps run), check mode or the weak memory model (both follow
blocks in order) run on one worker. So does the next launch of a run
whose last launch's blocks took less CPU than the workers' fixed part
could pay for (SERIAL_BELOW: a launch of a few thousand threads).
"""
from __future__ import annotations

import copy
import ctypes
import functools
import itertools
import os
import threading
import time
from typing import Callable, Iterable, Optional

import numpy as np

from gpuemu.errors import LaunchError
from gpuemu.jit import abi
from gpuemu.memory import warp_bank_counts
from gpuemu.memory.native_batch import NativeBatch
from gpuemu.stats import Stats
from gpuemu.timing import record_pool

from . import block_runner, cache_lines, range_handout, worker_threads

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


class _Worker:
    """One worker's copy of the launch: private state, shared memory. With
    `own`, the launch itself (the calling thread works too). A copy is made
    once per kept run (launch_plan keeps runs between launches) and renewed
    for each launch of it (`_renew`: fresh counters, ctx from the launch's);
    a pool thread takes or makes its own, so the calling thread starts at once.

    A worker writes its whole launch's trace into one buffer, in batches
    of at most WORKER_TRACE_RECORDS records (sized to stay in its core's
    L2 with their columns; a pool thread's buffer is that long, the
    calling thread's copy writes that much of the run's): each batch
    is prepared by the native passes into a NativeBatch of the worker's
    (native_batch.NativeBatch.prepare) and applied at once where its range
    is the next in order (NativeBatch.apply: the caches, cycle sums, the
    fold of the launch's sums), else it keeps what the ordered step reads
    of the records (keep_records) and is applied in order by whichever
    thread charges, then given back (`release`) to the worker that
    prepared it; the same buffer,
    just read by the passes, is in its core's caches (a worker that went
    on in a spare buffer while its batches waited used 2 to 6 a launch,
    each batch's 2.4 MB, at 8,192 records, written to memory no cache
    held). Where the
    native passes do not serve a batch, MemorySystem.prepare's batch
    reads the buffer until it is applied: the worker goes on in a spare
    one of its own, or a new one from record_pool (storage already
    mapped: a fresh buffer is 600 pages to fault in).

    The calling thread's copy starts in the run's own trace buffer (the run
    traces nothing itself meanwhile). At the end of a launch (`idle`) the
    trace buffers go back to record_pool (its next launch takes them again,
    mapped) and their NativeBatches stay with the copy (`natives`, up to
    NATIVES_KEPT; 0.8 MB each for a buffer of 8,192 records, a third of
    the buffer): a new NativeBatch is 0.3 ms of Python and numpy and some
    60 pages of fresh memory to fault in, and a launch of two workers made
    1 to 6 of them when its copies kept one spare buffer each (the worker
    that runs ahead holds several batches the ordered step has not charged
    yet), while a kept buffer is 2.4 MB of launch_plan's byte budget for a
    run."""

    def __init__(self, run, own: bool = False, start: Optional[np.ndarray] = None) -> None:
        self.chunks: list = []
        # a trace buffer goes with its NativeBatch (the columns the memory
        # model reads, copied out of the records, and the native passes' buffers)
        self.held: list = []     # (buffer, NativeBatch) the last batch's chunks point into
        self.spare: list = []    # (buffer, NativeBatch) free to write (list.pop/append: atomic)
        self.native = None      # the current trace buffer's
        self.natives: list = []  # NativeBatches kept from the last launch, for new buffers
        self.records = 0        # trace records of the last batch
        self.front = None       # (the launch's _OrderedCharge, the range's number) of the range it runs
        if own:
            self.run = run
            return
        w = copy.copy(run)
        for k in ("_block_runner_scratch", "_block_range_scratch", KEPT, LAST, WORK, "_native_batch"):   # one per worker
            w.__dict__.pop(k, None)
        w._setup()
        w.issue = cache_lines.zeros(run.preset.num_sms, np.int64)
        w.drain = self._keep_trace            # the main thread charges it, in order
        self.run = w
        self._renew(run, run.ctx if start is None else start)

    def _renew(self, run, start: np.ndarray, lend: bool = False) -> None:
        """Ready for a launch of `run` (this copy's run, maybe renewed since):
        its parameters, options and memory model; fresh counters and
        findings; the ctx the launch starts from (`start`, the run's) but
        for this copy's own buffers."""
        w = self.run
        w.params, w.options, w.memsys = run.params, run.options, run.memsys
        w.stats = Stats()
        w.findings = []
        w._divergent_barriers = set()
        w.__dict__.pop("_merged_divergence", None)
        w.ctx[:] = start
        if w._tracing and w.trace is None:      # let go at the last launch's end (idle)
            w.trace = run.trace if lend else _new_trace(run.trace, trace_records(run.trace))
            self.native = self.natives.pop() if self.natives else None
        if w.trace is not None:
            w.ctx[abi.C_TRACE], w.ctx[abi.C_TRACE_CAP] = w.trace.ctypes.data, trace_records(w.trace)
        w.ctx[abi.C_COUNTERS] = w.counters.ctypes.data
        w.ctx[abi.C_STORE_ORDER] = w.store_order.ctypes.data
        warp_bank_counts.for_run(w)           # its own shared-request counts, not the launch's
        w.counters.fill(0)
        w.issue.fill(0)
        w._wi_total = 0
        block_runner.new_launch(w)

    def _keep_trace(self) -> None:
        """The trace so far, prepared for the memory model on this thread (the
        order-free part of charging: the native passes into the buffer's
        NativeBatch, else MemorySystem.prepare), then applied now, on this
        thread, where its range is the next to charge and no other thread
        is charging (`front`, _OrderedCharge.now: the order one worker
        charges in); else kept and applied in order by whichever thread
        gets to it. Prepared outside the ordered step, a batch applied at
        once holds that step only for its apply (charged there whole, its
        passes made the ordered chain as long as a third of the launch,
        and the last ranges' batches waited for it at the launch's end).
        The worker goes on in the same buffer (a batch the native passes
        prepared keeps what it reads of it, NativeBatch.keep_records, where
        it waits), and in a spare one where MemorySystem.prepare's batch
        waits, reading this one."""
        w = self.run
        ctx = w.ctx
        n = int(ctx[abi.C_TRACE_LEN])
        if n:
            buf, nb, ms, instrs = w.trace, self.native, w.memsys, w.meta.instrs
            if nb is None:
                nb = self.native = NativeBatch(ms, instrs, len(buf))
            elif not nb.serves(ms, instrs):
                nb.bind(ms, instrs)
            self.records += n
            front = self.front
            records = buf[:n]                # (one view: the columns prepare filled are reused)
            chunk = nb if nb.prepare(records) else ms.prepare(
                nb.cols.batch(records, ms._op, ms._size, ms._skip, filled=True), instrs)
            if front is not None and front[0].now(front[1], self, chunk):
                pass                         # applied: the buffer and its NativeBatch free again
            elif chunk is nb:                # applied in order (nb.apply) later
                nb.keep_records()
                self.chunks.append(nb)
                self.held.append((None, nb))
                if not self.spare and front is not None:
                    front[0].ready()         # (the ordered step may give one of its NativeBatches back)
                try:
                    self.native = self.spare.pop()[1]
                except IndexError:
                    self.native = self.natives.pop() if self.natives else None
            else:
                self.chunks.append(chunk)
                self.held.append((buf, nb))
                try:
                    nxt, self.native = self.spare.pop()      # (its own, the last given back)
                except IndexError:
                    nxt = self.native = None
                if nxt is None or len(nxt) != len(buf):
                    nxt = _new_trace(buf, len(buf))     # (the ctx's capacity holds)
                    self.native = self.natives.pop() if self.natives else None
                w.trace = nxt
                ctx[abi.C_TRACE] = nxt.ctypes.data
        ctx[abi.C_TRACE_LEN] = 0

    def release(self, buffers: list) -> None:
        """(Trace buffer, NativeBatch) of this worker whose chunks are charged:
        free to write again (called on the charging thread)."""
        self.spare.extend(buffers)

    def run_batch(self, blocks):
        """Run the blocks; (trace chunks, findings, error) of this batch (the
        trace buffers its chunks read are in `held` until released)."""
        self.chunks = []
        self.held = []
        self.records = 0
        nf = len(self.run.findings)
        err = None
        try:
            self.run._run_batch(blocks)
            if self.run.want_stats:
                self._keep_trace()
        except BaseException as e:          # handed to the main thread, in block order
            err = e
        return self.chunks, self.run.findings[nf:], err

    def idle(self) -> None:
        """The launch is over: drop what only it needed (its memory model,
        counters); the trace buffers go back to record_pool, NativeBatches
        (the current buffer's, the unused kept ones and the spares') are
        kept for the next launch's buffers, up to NATIVES_KEPT, bound to
        the run's memory system (kept with the run: its next launch needs
        no rebinding; launch_plan.keep_memory_system lets them go, `let_go`,
        where it drops it)."""
        w = self.run
        w.memsys = w.stats = w.params = w.options = None
        w.findings = []
        natives, spare = self.natives, self.spare
        kept = [self.native] if self.native is not None else []
        while len(kept) < NATIVES_KEPT and (natives or spare):
            nb = natives.pop() if natives else spare.pop()[1]
            if nb is not None:
                kept.append(nb)
        self.natives, self.native = kept, None
        spare.clear()
        if w.trace is not None:
            w.trace = None                 # back to record_pool (its pages mapped)
            w.ctx[abi.C_TRACE] = 0
        self.chunks, self.held = [], []


KEPT = "_worker_copies"   # a run's worker copies, kept for its next launch
LAST = "_worker_last"     # a run's last traced launch on workers: its sums, its caches' rows
NATIVES_KEPT = 6          # NativeBatches a kept copy holds on to (without their buffers)


# A parallel traced launch's workers charge their traces in batches of at
# most this many records (executor.TRACE_CAPACITY, 8192, on one worker):
# a batch's records (296 bytes each) and its NativeBatch's columns (about
# 100) then stay in the core's L2 (2 MB a core on our machine) from the
# native code that writes them through prepare and apply. Measured on our
# 2-core machine, vecadd 1M with counters, one worker against two in
# paired turns (two kernels of one process taking turns): 1.67x-1.71x at
# 4096, 1.71x at 3584, 1.64x at 5120 and 2560, 1.59x-1.63x at 8192 (the
# transpose 1.75x at 4096, 1.74x at 8192). Each range is one batch
# (GuidedRanges.in_units), so smaller batches are more ranges, each with
# its fixed part: back to back, vecadd's 3-5% slower than at 8192.
WORKER_TRACE_RECORDS = 4096


def trace_records(trace: np.ndarray) -> int:
    """Records a worker's batch holds in `trace` (WORKER_TRACE_RECORDS at most)."""
    return min(len(trace), WORKER_TRACE_RECORDS)


def _new_trace(like: np.ndarray, n: int) -> np.ndarray:
    """A trace buffer of `n` of `like`'s records, from record_pool (storage
    already mapped, when the pool has it)."""
    return record_pool.records(n, like.dtype.itemsize, np.uint8).view(like.dtype)[:, 0]


def _take(run, start: np.ndarray, lend: bool = False) -> _Worker:
    """A worker copy of `run` for this launch: a kept one renewed, else a new
    one. `lend`: one that needs a trace buffer takes the run's own (the
    calling thread's copy: the run does not trace itself meanwhile). The
    calling thread takes the last kept copy, the pool's threads the first
    ones (`_keep` keeps the calling thread's last), so each thread takes
    back the copy it had, its NativeBatches' buffers in its core's caches."""
    try:
        kept = run.__dict__.get(KEPT, [])
        wk = kept.pop() if lend else kept.pop(0)
    except IndexError:
        return _Worker(run, start=start)
    wk._renew(run, start, lend)
    return wk


def kept_bytes(run) -> int:
    """Bytes of the worker copies `run` keeps for its next launch (their
    buffers and NativeBatches) and of the launch sums they and its last
    traced launch (LAST) keep, each sums counted once (the NativeBatches of
    one launch fold into the same): launch_plan counts them with the run's."""
    n = 0
    sums = {}
    for wk in run.__dict__.get(KEPT, ()):
        n += wk.run.buffer_bytes()
        for nb in wk.natives:
            n += nb.buffer_nbytes
            s = nb.folds_into
            if s is not None:
                sums[id(s)] = s
    last = run.__dict__.get(LAST, (None,))[0]
    if last is not None:
        sums[id(last)] = last
    return n + sum(s.nbytes for s in sums.values())


def let_go(run) -> None:
    """The NativeBatches of `run`'s kept worker copies let go of the memory
    system they served (launch_plan.keep_memory_system drops it: its caches'
    states go back to record_pool when it dies); they bind again at the
    next launch."""
    for wk in run.__dict__.get(KEPT, ()):
        for nb in wk.natives:
            nb.let_go()


def _keep(run, workers: list, mine: Optional[_Worker] = None) -> None:
    """The copies of a launch that finished without error, kept for the run's
    next; the calling thread's (`mine`) last."""
    if mine is not None:
        workers = [wk for wk in workers if wk is not mine] + [mine]
    for wk in workers:
        wk.idle()
    run.__dict__.setdefault(KEPT, []).extend(workers)


def run_parallel(run, batches: Iterable, nworkers: int,
                 progress: Optional[Callable[[int], None]] = None) -> None:
    """Run `batches` (lists of blocks or ranges of linear indices, in schedule
    order) on `nworkers` threads, the calling thread one of them; charge
    traces, merge counters and findings into `run`. A run whose last launch's
    blocks took less CPU than SERIAL_BELOW runs them on the calling thread
    alone (`_run_serial`)."""
    d = run.__dict__
    if d.get(WORK, SERIAL_BELOW[True]) < SERIAL_BELOW[bool(run._tracing)]:
        _run_serial(run, batches, progress)
        return
    spent: list = []             # CPU seconds of each thread in the launch's blocks
    if not run._tracing:
        ranges = _handed(run, batches, nworkers) if progress is None else None
        if ranges is not None:
            _run_handed(run, ranges, nworkers, spent)
        else:
            _run_untraced(run, list(batches), nworkers, progress, spent)
    else:
        _run_traced(run, batches, nworkers, progress, spent)
    d[WORK] = sum(spent)


WORK = "_worker_work"      # the CPU seconds of its last launch's blocks, all threads (ranges, charging)
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
    run.__dict__[WORK] = time.thread_time() - t0


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
        _join(futures)


def _join(futures: list) -> None:
    """Wait for every task (an interrupt of the wait raised once all ended),
    then raise what the first that failed raised."""
    caught = None
    for f in futures:
        got = f.wait()
        caught = caught or got
    if caught is not None:
        raise caught
    for f in futures:
        f.result()


def _run_traced(run, batches: Iterable, nworkers: int, progress: Optional[Callable[[int], None]],
                spent: list) -> None:
    """run_parallel of a traced launch (counters on): the ordered step."""
    ms = run.memsys
    # made here, not by two threads at once (a worker's NativeBatch.bind reads
    # them): the tables, the sums (the last launch's, settled: the kept
    # NativeBatches fold into them), the caches' states as large as the last launch's
    sums, rows = run.__dict__.get(LAST, (None, ()))
    states = ms.share(run.meta.instrs, sums, rows)
    source = _source(batches, nworkers, run.shape.threads_per_block, even=True)
    charge = _OrderedCharge(run, source)
    start = run.ctx.copy()       # what every worker's ctx starts from
    workers: list = []           # each thread's copy, taken on its own thread
    merged = threading.Lock()
    got: dict = {"reported": 0}  # the calling thread's: its copy, blocks told to progress

    def finished(wk: _Worker) -> None:
        """The worker ran its last blocks: its counts go into the launch's
        (sums, and the first costliest request: any order gives the same),
        on its own thread, while the others finish."""
        with merged:
            _merge_counts(run, [wk])

    def work(wk: _Worker, nxt) -> None:
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
                wk = got["mine"] = _take(run, start, lend=True)
            else:
                wk = _take(run, start)
            workers.append(wk)       # list.append is atomic
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
    run.__dict__[LAST] = (ms.launch_sums(), tuple(st.rows for st in states))
    _keep(run, workers, got["mine"])


class _OrderedCharge:
    """The ordered step of a traced launch: finished ranges' batches are
    charged to the memory model in range order (NativeBatch.apply, or
    MemorySystem.apply via LaunchRun._charge_prepared), their findings
    merged, by whichever thread finds the next one ready and no other
    thread charging, so the work balances between threads and one
    worker's order is kept; the running range that is next in order has
    its batches applied as its worker prepares them (`now`)."""

    def __init__(self, run, source) -> None:
        self.run, self.source = run, source
        self.seq = 0                  # the next batch to charge
        self.blocks = 0               # blocks charged so far (progress)
        self.error: Optional[BaseException] = None
        self._done: dict = {}
        self._lock = threading.Lock()          # held by the thread charging
        self._mutex = threading.Lock()         # guards _done, seq and _waiting
        self._cond = threading.Condition(self._mutex)   # the calling thread waits on it (wait)
        self._waiting = 0                      # threads waiting (notified only then)

    def fail(self, err: BaseException) -> None:
        """A worker failed outside a batch's run (a batch it took will never
        be put): nothing more is handed out, and the calling thread stops
        waiting and raises `err` (the first error)."""
        with self._mutex:
            if self.error is None:
                self.error = err
            self.source.close()
            if self._waiting:
                self._cond.notify_all()

    def put(self, seq: int, nblocks: int, result: tuple, worker: Optional[_Worker] = None,
            buffers: tuple = ()) -> None:
        """A finished batch: (trace chunks, findings, error) of run_batch;
        the trace buffers its chunks read go back to `worker` once charged."""
        with self._mutex:
            self._done[seq] = (nblocks, result, worker, buffers)
            if self._waiting:
                self._cond.notify_all()

    def ready(self) -> None:
        """Charge the batches ready in order, unless another thread is charging
        (it will: a batch put while it holds the lock is seen after it lets go)."""
        while self._lock.acquire(blocking=False):
            try:
                while self.error is None:
                    with self._mutex:
                        got = self._done.pop(self.seq, None)
                    if got is None:
                        break
                    self._charge(*got)
            finally:
                self._lock.release()
            with self._mutex:
                if self.error is not None or self.seq not in self._done:
                    return

    def now(self, seq: int, worker: _Worker, chunk) -> bool:
        """Apply a prepared batch (`chunk`: a NativeBatch, or MemorySystem.
        prepare's) of range `seq` now, on the worker's thread that wrote and
        prepared it, where that range is the next to charge and no other
        thread is charging (False: nothing done): the range's batches the
        worker holds first, then `chunk`, as one worker charges them, so its
        buffer is free again and its records are read while in this core's
        caches."""
        if self.seq != seq or not self._lock.acquire(blocking=False):
            return False
        try:
            if self.seq != seq or self.error is not None:
                return False
            self._apply(worker.chunks)
            worker.release(worker.held)
            worker.chunks, worker.held = [], []
            self._apply((chunk,))
            return True
        finally:
            self._lock.release()

    def _apply(self, chunks: list) -> None:
        """Prepared batches, the next in order, charged."""
        for c in chunks:
            if type(c) is NativeBatch:
                c.apply()
            else:
                self.run._charge_prepared(c)

    def _charge(self, nblocks: int, result: tuple, worker: Optional[_Worker], buffers: list) -> None:
        chunks, findings, err = result
        try:
            self._apply(chunks)
            _merge_findings(self.run, findings)
        except BaseException as e:       # handed to the calling thread
            err = e
        if worker is not None and err is None:
            worker.release(buffers)
        with self._mutex:
            if err is not None:
                self.error = err
                self.source.close()
            else:
                self.blocks += nblocks
            self.seq += 1
            if self._waiting:
                self._cond.notify_all()

    def wait(self, source) -> bool:
        """`source` handed out everything: wait until a batch is ready to charge
        (True) or every batch is charged or one failed (False)."""
        with self._mutex:
            while True:
                if self.error is not None or self.seq >= source.handed:
                    return False
                if self.seq in self._done and not self._lock.locked():
                    return True      # (a thread charging takes it itself)
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1


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
            wk = _Worker(run, own=True)
        else:
            wk = _take(run, start)
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
        _merge_findings(run, findings)
        if err is not None:
            raise err
    if progress is not None:
        _report(progress, finished, reported[0])
    _merge_counts(run, workers)
    _keep(run, workers)


def _handed(run, batches, nworkers: int) -> Optional[np.ndarray]:
    """The launch's ranges as range_handout's int64 pairs where its native
    loop can hand them out (block_ranges' own; untimed: no recorder to hear
    events), else None."""
    if (type(batches) is tuple and batches and type(batches[0]) is range and batches[0].start == 0
            and run.recorder is None and run._range_runner is block_runner.run_range
            and batches is block_ranges(batches[-1].stop, nworkers, run.shape.threads_per_block)):
        return range_handout.ranges_array(batches[-1].stop, nworkers, run.shape.threads_per_block)
    return None


def _run_handed(run, ranges: np.ndarray, nworkers: int, spent: list) -> None:
    """_run_untraced with the ranges handed out in native code
    (range_handout.py): each thread runs ranges until none is left, back in
    Python only for a block that needs it; the calling thread then waits
    for the pool threads' flags natively, and for their tasks only where
    a flag was not set (an error). The pool threads' copies are renewed
    here, before the first range (a few microseconds), and their native
    call's arguments made, so each starts its ranges as it wakes.
    Findings and the first error in range order, as _run_untraced merges
    them."""
    d = run.__dict__
    st = d.get(HANDOUT)
    if st is None or len(st) < range_handout.words(nworkers - 1):
        st = d[HANDOUT] = range_handout.state(nworkers - 1)
    else:
        st.fill(0)
    base = run.findings
    run.findings = []
    workers = [_take(run, run.ctx) for _ in range(nworkers - 1)]    # the launch's start ctx
    results: dict = {}           # range index -> (findings, error), where a block came back
    take = block_runner.take_ranges_function()
    n = len(ranges)
    pool = _threads(nworkers - 1)
    futures = [pool.submit(functools.partial(
        _pool_ranges, wk.run, take, _take_args(wk.run, ranges, st, k + 1, 0), ranges, st, results))
        for k, wk in enumerate(workers)]
    t0 = time.perf_counter()
    missing = nworkers - 1
    try:
        missing = _handed_loop(run, take, _take_args(run, ranges, st, 0, nworkers - 1),
                               ranges, st, results)
    finally:
        if missing:              # an error, here or on a pool thread
            range_handout.close(st, n)
            missing = block_runner.wait_workers_function()(st.ctypes.data, nworkers - 1)
        st[range_handout.ACK] = 1
        # the pool threads' CPU is not measured, so the calling thread's wall time stands
        # for each: its CPU time would count nothing where another process held its core
        # and the pool thread ran the blocks (on a loaded machine one launch in six of a
        # vecadd 1M went to the calling thread alone next, WORK near 0)
        spent.append((time.perf_counter() - t0) * nworkers)
        if missing:
            _join(futures)
    run.findings = base
    for i in sorted(results):
        findings, err = results[i]
        _merge_findings(run, findings)
        if err is not None:
            raise err
    if run.want_stats:           # (without counters nothing reads them)
        _merge_counts(run, workers)
    _keep(run, workers)


HANDOUT = "_handout_state"    # a run's range_handout state, kept for its next launch


def _take_args(w, ranges: np.ndarray, st: np.ndarray, thread: int, nwait: int) -> tuple:
    """gpuemu_take_ranges' arguments for copy `w`: thread 0 the calling one
    (waits for `nwait` pool threads), thread k > 0 the pool thread with
    flag k - 1."""
    scratch = w.__dict__.get("_block_range_scratch") or block_runner._range_scratch(w)
    done = st.ctypes.data + 8 * (range_handout.DONE0 + (thread - 1) * range_handout.WORDS)
    return (ctypes.addressof(scratch[2]), ranges.ctypes.data, len(ranges), st.ctypes.data,
            done if thread else 0, nwait)


def _pool_ranges(w, take, args: tuple, ranges: np.ndarray, st: np.ndarray, results: dict) -> None:
    """A pool thread's part of _run_handed: ranges until none is left (its
    flag set natively, FINISHED), else its flag LEFT (an error: the rest
    closed)."""
    try:
        if _handed_loop(w, take, args, ranges, st, results) == 0:
            return               # the calling thread may go on: nothing more here touches the launch
    except BaseException:
        range_handout.close(st, len(ranges))
        _leave(st, args)
        raise
    _leave(st, args)


def _leave(st: np.ndarray, args: tuple) -> None:
    """A pool thread's flag LEFT (it left its ranges on an error)."""
    st[(args[4] - st.ctypes.data) // 8] = range_handout.LEFT


def _handed_loop(w, take, args: tuple, ranges: np.ndarray, st: np.ndarray, results: dict) -> int:
    """One thread's ranges from the native loop (`take(*args)`): where a
    block comes back, finish it and its range in Python (block_runner.
    run_range's rest) and keep the range's findings or error. Once no range
    is left, how many of the pool threads' flags the calling thread waited
    for are not FINISHED (0 on a pool thread); -1 after an error (the rest
    closed)."""
    while True:
        got = take(*args)
        if got < 0:
            if not args[4]:
                st[range_handout.ACK] = 1     # first: the pool threads leave native code
            return -1 - got
        i, code = got >> range_handout.CODE_BITS, got & ((1 << range_handout.CODE_BITS) - 1)
        scratch = w._block_range_scratch
        nf = len(w.findings)
        err = None
        try:
            lin = block_runner._range_event(w, code, scratch[0], scratch[1]) + 1
            if w._resident is None:
                block_runner.run_range(w, lin, int(ranges[i, 1]))
        except BaseException as e:      # handed to the calling thread, in range order
            err = e
        if err is not None or len(w.findings) > nf:
            results[i] = (w.findings[nf:], err)
        if err is not None:
            range_handout.close(st, len(ranges))
            return -1


def _report(progress: Callable[[int], None], finished: list, reported: int) -> int:
    """Tell `progress` of the blocks finished since `reported`; the new total."""
    total = sum(finished)
    if total > reported:
        progress(total - reported)
    return total


def _merge_counts(run, workers: list) -> None:
    """Add the workers' per-line counters, issue cycles and shared-request
    counts to the launch's (in any order: sums, and the first costliest
    request by block; run_parallel's workers each add their own as they
    finish, under a lock)."""
    for wk in workers:
        w = wk.run
        run.counters += w.counters
        run.issue += w.issue
        if run.warp_counts is not None and w.warp_counts is not None:
            run.warp_counts.merge(w.warp_counts)


def _merge_findings(run, findings: list) -> None:
    """Barrier divergence is reported once per line, a barrier mismatch once per
    set of barrier lines (as one worker keys them): keep the first in block order."""
    if not findings:
        return
    seen = run.__dict__.setdefault("_merged_divergence", set())
    for f in findings:
        if f.kind == "barrier_divergence":
            key = tuple(f.extra.get("barrier_lines") or ()) or f.line
            if key in seen:
                continue
            seen.add(key)
        run.findings.append(f)
