"""A block worker's copy of a launch (block_workers.py runs blocks on several).

Each worker is a copy of the launch's `LaunchRun` with its own frames,
shared memory, ctx, trace buffer and per-line counters; global memory, the
bounds table, the parameters and the symbols are shared. A run keeps its
copies between launches (`keep`, `take`), with their NativeBatches, so a
launch like the last one renews them instead of making them; their counts
go into the launch's (`merge_counts`).
"""
from __future__ import annotations

import copy
from typing import Optional

import numpy as np

from gpuemu.jit import abi
from gpuemu.memory import warp_bank_counts
from gpuemu.memory.native_batch import NativeBatch
from gpuemu.stats import Stats
from gpuemu.timing import record_pool

from . import block_runner, cache_lines

WORK = "_worker_work"      # the CPU seconds of its last launch's blocks, all threads (ranges, charging)


class Worker:
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
        self.front = None       # (the launch's OrderedCharge, the range's number) of the range it runs
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
        is charging (`front`, OrderedCharge.now: the order one worker
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


def take(run, start: np.ndarray, lend: bool = False) -> Worker:
    """A worker copy of `run` for this launch: a kept one renewed, else a new
    one. `lend`: one that needs a trace buffer takes the run's own (the
    calling thread's copy: the run does not trace itself meanwhile). The
    calling thread takes the last kept copy, the pool's threads the first
    ones (`keep` keeps the calling thread's last), so each thread takes
    back the copy it had, its NativeBatches' buffers in its core's caches."""
    try:
        kept = run.__dict__.get(KEPT, [])
        wk = kept.pop() if lend else kept.pop(0)
    except IndexError:
        return Worker(run, start=start)
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


def keep(run, workers: list, mine: Optional[Worker] = None) -> None:
    """The copies of a launch that finished without error, kept for the run's
    next; the calling thread's (`mine`) last."""
    if mine is not None:
        workers = [wk for wk in workers if wk is not mine] + [mine]
    for wk in workers:
        wk.idle()
    run.__dict__.setdefault(KEPT, []).extend(workers)


def merge_counts(run, workers: list) -> None:
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

