"""Runs one launch: blocks on SMs, warps until their events, barriers.

Python runs once per warp event (barrier, exit, full trace buffer), never per
lane or instruction. Blocks run one at a time in functional mode (each to
completion, unless it spins: then the blocks that would be resident with
it run meanwhile, resident_blocks.py); the block scheduler decides their SM. Options `workers` (N >
1: batches of blocks on N threads, block_workers.py) and `progress` (called
with the number of blocks each finished batch ran). Option `memory_model`
"weak": blocks one at a time, late global stores held back from other blocks
until a fence or the end of the kernel (weak_memory.py).

Barrier rule: a block's barrier releases when every warp that has not exited
waits at the same `__syncthreads()`; exited threads no longer take part (as
on Volta and later). If every live warp waits but not all at the same
barrier, no warp can ever move: KernelError with a 'deadlock' finding.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from gpuemu.errors import KernelError
from gpuemu.jit import abi
from gpuemu.memory import warp_bank_counts
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.native_batch import LINE_COUNTER_SET, NativeBatch
from gpuemu.stats import Stats

from . import block_runner, block_workers, cache_lines, resident_blocks, static_tags, weak_memory
from .block_scheduler import BlockBatch, RoundRobinBlockScheduler
from .findings import (barrier_divergence_finding, barrier_mismatch_finding, fault_finding,
                       spin_finding, static_object, thread_of)
from .thread_scheduling import split_warp
from .launch_config import LaunchShape
from .warp_scheduler import get_warp_scheduler

DEFAULT_BUDGET = 10_000_000     # loop back-edges per warp
MAX_BUDGET = (1 << 63) - 1      # the ctx word the generated code compares with is an int64
TRACE_CAPACITY = 8192           # records per drain

READY, WAITING, EXITED = 0, 1, 2
_CUR, _VALID, _EXITED = abi.F_CUR // 4, abi.F_VALID // 4, abi.F_EXITED // 4


def make_memory_system(preset, options: dict) -> MemorySystem:
    """The launch's memory model. Option l1: None = the preset's default,
    False = global loads bypass L1 (-dlcm=cg), True = cache them (-dlcm=ca)."""
    l1 = options.get("l1")
    return MemorySystem(preset, l1_enabled=l1 is not False, cache_global_loads=l1 or None,
                        bank_mode=options.get("bank_mode"), seed=options.get("seed"))


def grid_blocks(shape: LaunchShape) -> int:
    """Blocks in the grid."""
    return shape.grid[0] * shape.grid[1] * shape.grid[2]


def workers_of(options: dict) -> int:
    """Block workers the launch asks for (option workers, else GPUEMU_WORKERS)."""
    return options.get("workers") or block_workers.default_workers()


@dataclass
class RunResult:
    stats: Stats
    findings: list = field(default_factory=list)
    seconds: float = 0.0


class LaunchRun:
    """One kernel launch on the emulated device."""

    def __init__(self, ck, preset, shape: LaunchShape, params: np.ndarray, symbols: np.ndarray,
                 memory, budget: int = DEFAULT_BUDGET, stats: bool = True,
                 scheduler=None, options: dict | None = None):
        self.ck, self.meta = ck, ck.meta
        self.preset, self.shape = preset, shape
        self.params, self.symbols, self.memory = params, symbols, memory
        self.budget = int(budget)
        self.want_stats = stats
        self.scheduler = get_warp_scheduler(scheduler)
        # warp schedulers per SM (an SM's issue cycles: its warp instructions over them,
        # at least one: MemorySystem.finish and busiest_call divide by issue_divisor of it)
        self.schedulers = int(getattr(preset, "warp_schedulers_per_sm", 1))
        self.options = options or {}
        self.stats = Stats()
        self.findings: list = []
        self._divergent_barriers: set = set()
        self.memsys = make_memory_system(preset, self.options) if stats else None
        self.recorder = None    # timing mode: a gpuemu.timing TraceRecorder
        from gpuemu.check import make_checker   # the bug finders, when check= asks
        self.checker = make_checker(self.options.get("check"), ck.meta, preset, shape, memory, params)
        self.weak = None    # memory_model="weak": a weak_memory.WeakGlobalMemory per run
        self.warp_counts = None   # shared requests counted by the warps (memory/warp_bank_counts.py)
        self._tracing = stats or self.checker is not None or weak_memory.parse_memory_model(
            self.options.get("memory_model"))

    # ------------------------------------------------------------------ setup
    def _static_entries(self) -> static_tags.Entries:
        """The kernel's shared/local/param objects' bounds entries: the run's
        own table of its static tags (static_tags.py), named in ctx."""
        entries = self.__dict__.get("_bounds_entries")
        if entries is None:                # worked out once per run
            entries = self._bounds_entries = static_tags.Entries(self.meta, self.shape.shared_dynamic)
        return entries

    def _setup(self):
        meta, shape = self.meta, self.shape
        ctx = self.ctx = cache_lines.zeros(abi.CTX_FIELDS, np.int64)
        entries = self._static_entries()
        dyn_ptr = entries.dyn_ptr
        ctx[abi.C_BOUNDS] = self.memory.bounds.ctypes.data     # allocations: one table per device memory
        entries.bind(ctx)                                      # static tags: the run's own table
        if self._tracing:
            self.trace = np.empty(TRACE_CAPACITY, dtype=abi.TRACE_DTYPE)   # read up to C_TRACE_LEN
            ctx[abi.C_CHECK] = int(self.checker is not None or self._weak_mode())
            ctx[abi.C_TRACE] = self.trace.ctypes.data
            ctx[abi.C_TRACE_CAP] = TRACE_CAPACITY
        else:
            self.trace = None
            ctx[abi.C_TRACE_CAP] = 1 << 62
        ctx[abi.C_PARAMS] = self.params.ctypes.data
        ctx[abi.C_SYMBOLS] = self.symbols.ctypes.data
        self.counters = cache_lines.zeros((meta.nlines, abi.N_LINE_COUNTERS), np.int64)
        ctx[abi.C_COUNTERS] = self.counters.ctypes.data
        ctx[abi.C_BUDGET] = self.budget
        ctx[abi.C_NTID:abi.C_NTID + 3] = shape.block
        ctx[abi.C_NCTAID:abi.C_NCTAID + 3] = shape.grid
        ctx[abi.C_NLINES] = meta.nlines
        ctx[abi.C_LOCAL_OFF] = meta.local_offset
        ctx[abi.C_LOCAL_STRIDE] = meta.local_stride
        ctx[abi.C_DYN_SHARED] = abi.as_int64(dyn_ptr)
        # Which lane's plain store lands when several write one address: the
        # highest by default; with a seed, a seeded-random lane per warp run.
        self.store_order = cache_lines.zeros(abi.WARP, np.uint8)
        self.store_order[:] = np.arange(abi.WARP)
        ctx[abi.C_STORE_ORDER] = self.store_order.ctypes.data
        pbuf = self.options.get("printf_buffer")    # int64 words (gpuemu/printf_output.py)
        if pbuf is not None:
            ctx[abi.C_PRINTF], ctx[abi.C_PRINTF_CAP] = pbuf.ctypes.data, len(pbuf)
        seed = self.options.get("seed")
        self._order_rng = np.random.default_rng(seed) if seed is not None else None
        nw = shape.warps_per_block
        # whole ranges of blocks per native call, each block reset natively in
        # one block slot (block_runner.run_range), where no Python is needed
        # between blocks; else blocks are prepared in batches so numpy's
        # per-call cost is shared
        self._range_runner = block_runner.run_range if block_runner.range_usable(self) else None
        blocks = grid_blocks(shape)
        self.batch = 1 if self._range_runner else max(
            1, min(64, 2048 // nw, (64 << 20) // (nw * meta.frame_bytes), blocks))
        self.frames = cache_lines.zeros((self.batch * nw, meta.frame_bytes), np.uint8)
        self.shared_stride = (max(meta.dynamic_offset + shape.shared_dynamic,
                                  meta.static_shared, 16) + 255) // 256 * 256
        self.shared = cache_lines.zeros(self.batch * self.shared_stride, np.uint8)
        valid = np.full(nw, -1, dtype=np.int64)
        rem = shape.threads_per_block % abi.WARP
        if rem:
            valid[-1] = (1 << rem) - 1
        valid = valid.astype(np.uint32).view(np.int32)
        # the header every warp starts from; per batch only block fields change
        tpl = np.zeros((self.batch * nw, abi.HEADER_BYTES), dtype=np.uint8)
        t32 = tpl.view(np.int32)
        t32[:, abi.F_VALID // 4] = np.tile(valid, self.batch)
        t32[:, abi.F_WARP // 4] = np.tile(np.arange(nw), self.batch)
        tpl.view(np.int64)[:, abi.F_SHARED // 8] = (
            self.shared.ctypes.data + np.repeat(np.arange(self.batch), nw) * self.shared_stride)
        self.header_template = tpl
        # values the per-block loop reads, looked up once
        self._fn = self.ck.fn
        self._ctxp = ctx.ctypes.data
        self._nw = nw
        self._i32 = self.frames.view(np.int32)
        fb = self.frames.ctypes.data
        self._fptrs = [fb + w * meta.frame_bytes for w in range(self.batch * nw)]
        self._fptr_array = np.array(self._fptrs, dtype=np.int64)
        # the same loop as _run_block in native code, where it applies
        self._block_runner = block_runner.run_block if block_runner.usable(self) else None
        self._ctx_start = ctx.copy()       # what renew() starts the next launch from
        # renew's copy of it into ctx, as memoryviews (a third of numpy's slice copy)
        self._ctx_views = (memoryview(ctx), memoryview(self._ctx_start))
        self._ctx_params = self.params     # the parameters _ctx_start points at
        warp_bank_counts.for_run(self, fresh=True)

    def renew(self, params: np.ndarray, options: dict, ctx: bool = True) -> None:
        """Make this (finished) run ready for another launch of the same
        kernel, shape and options with new parameters: fresh counters,
        findings and memory model (its caches cold, MemorySystem.reset),
        the buffers of `_setup` kept (gpuemu/machine/launch_plan.py and
        launch_cache.py reuse runs this way). ctx=False: the ctx is made
        anew from _ctx_start by the caller, as the run starts
        (launch_cache.launch, in the kept range's native call), so what a launch must
        find in its ctx goes into _ctx_start too."""
        self.params, self.options = params, options
        self.fresh_findings()
        if params is not self._ctx_params:      # a new buffer (the same one: launch_cache)
            self._ctx_start[abi.C_PARAMS] = params.ctypes.data
            self._ctx_params = params
        if ctx:
            into, start = self._ctx_views
            into[:] = start                # ctx = _ctx_start: its bounds table, trace buffer, parameters
        if self.want_stats:                # without counters nothing reads them
            self.stats = Stats()
            if self.memsys is None:
                self.memsys = make_memory_system(self.preset, options)
            else:                          # the one of an earlier launch like this one
                self.memsys.reset()
            self._fresh_counts(self.__dict__.get("issue"))
        elif self.stats is None:           # (no memory system: no warp counts, as _setup bound)
            self.stats = Stats()
        if self._order_rng is not None:    # a seeded launch shuffled it
            self.store_order[:] = np.arange(abi.WARP, dtype=np.uint8)
            self._order_rng = None
        seed = options.get("seed")
        if seed is not None:
            self._order_rng = np.random.default_rng(seed)

    def renew_kept(self) -> None:
        """renew(self.params, self.options, ctx=False) of a kept run with
        counters (launch_cache: its own parameters and options again, no
        seed), written out where it keeps its memory system."""
        ms, issue = self.memsys, self.__dict__.get("issue")
        if ms is None or issue is None:    # (dropped: launch_plan.keep_memory_system)
            return self.renew(self.params, self.options, ctx=False)
        if self.findings:                  # (a launch copies them: an empty list serves again;
            self.fresh_findings()          # a barrier found divergent was found with one)
        self.stats = Stats()
        ms.reset()
        self._fresh_counts(issue)

    def _fresh_counts(self, issue: np.ndarray | None) -> None:
        """renew's counters with the memory system renewed: the per-line
        counters and `issue` (the run's issue counts, None before it ran)
        zero, the warps' bank counts bound to the memory system."""
        if self._zeroed:                   # (by the last launch's end: _charge_last)
            self._zeroed = False
            zeroed = True
        else:
            self.counters.fill(0)
            zeroed = False
        warp_bank_counts.for_run(self)     # after the memory system: it binds to it
        if issue is not None:              # kept: the native loop's scratch points at it
            if not zeroed:
                issue.fill(0)
            block_runner.new_launch(self)

    def fresh_findings(self) -> None:
        """What each launch starts without: findings, the barriers found
        divergent, block_workers' merged divergence (reported per launch)."""
        self.findings = []
        if self._divergent_barriers:
            self._divergent_barriers = set()
        if "_merged_divergence" in self.__dict__:
            del self._merged_divergence

    # the arrays a finished run keeps for its next launch (buffer_bytes)
    KEPT_ARRAYS = ("frames", "shared", "header_template", "trace", "counters", "issue")

    def buffer_bytes(self) -> int:
        """Bytes of the buffers this run keeps for a next launch: its arrays,
        its warp bank counts and trace columns (launch_plan's budget of kept
        runs counts them; the memory system's caches apart)."""
        d = self.__dict__
        n = 0
        for name in self.KEPT_ARRAYS:
            a = d.get(name)
            n += a.nbytes if a is not None else 0
        for name in ("warp_counts", "_native_batch"):
            o = d.get(name)
            n += o.nbytes if o is not None else 0
        return n

    def _reset_batch(self, blocks: list):
        """Fresh headers for the warps of `blocks` [(linear, (x, y, z), sm)]."""
        nw = self.shape.warps_per_block
        n = len(blocks) * nw
        f = self.frames
        f[:n, :abi.HEADER_BYTES] = self.header_template[:n]
        i32 = f.view(np.int32)
        if isinstance(blocks, BlockBatch):
            arr = blocks.rows
        else:
            arr = np.array([(lin, x, y, z, sm) for lin, (x, y, z), sm in blocks], dtype=np.int32)
        rep = np.repeat(arr, nw, axis=0)
        i32[:n, abi.F_BLOCK // 4] = rep[:, 0]
        i32[:n, abi.F_CTAID // 4:abi.F_CTAID // 4 + 3] = rep[:, 1:4]
        i32[:n, abi.F_SM // 4] = rep[:, 4]
        self.shared[:len(blocks) * self.shared_stride] = 0

    # ------------------------------------------------------------------ trace
    def trace_room(self) -> None:
        """Room in the trace for a warp that stopped at EV_TRACE_FULL: the
        records so far charged (drain), or, where there are none (one
        statement needs more room than the whole trace), a trace twice as long."""
        if self.ctx[abi.C_TRACE_LEN]:
            self.drain()
        else:
            self._grow_trace()

    def _grow_trace(self):
        self.trace = np.zeros(2 * len(self.trace), dtype=abi.TRACE_DTYPE)
        for ctx in (self.ctx, self._ctx_start):     # this launch's, and the next ones'
            ctx[abi.C_TRACE] = self.trace.ctypes.data
            ctx[abi.C_TRACE_CAP] = len(self.trace)

    def drain(self):
        ctx = self.ctx
        n = int(ctx[abi.C_TRACE_LEN])
        if n:
            r = self.trace[:n]
            at = int(ctx[abi.C_TRACE])      # its address (numpy is slow to tell a structured array's)
            if self.weak is not None:
                self.weak.observe(r)
            if self.checker is not None:
                self.checker.consume(r)
            if self.checker is not None or self.weak is not None:
                sync = r["space"] == abi.SYNC_SPACE
                if sync.any():
                    r, at = r[~sync], None
            self._charge_records(r, at)
        ctx[abi.C_TRACE_LEN] = 0

    def _charge_records(self, r: np.ndarray, at: int | None = None) -> None:
        """Charge trace records (abi.TRACE_DTYPE, issue order; at: their
        address, where known) to the memory model."""
        if self.memsys is None:
            return
        ms = self.memsys
        nb = self.__dict__.get("_native_batch")
        if nb is None:                  # charged at once: kept for the run
            nb = self._native_batch = NativeBatch(ms, self.meta.instrs, max(len(r), 64))
        elif not nb.serves(ms, self.meta.instrs):    # a new memory system (launch_plan.keep_memory_system)
            nb.bind(ms, self.meta.instrs)
        if self.recorder is None and nb.charge(r, at):
            return
        batch = nb.cols.batch(r, ms._op, ms._size, ms._skip, filled=True)    # else prepare and apply, from them
        self._charge_prepared(ms.prepare(batch, self.meta.instrs), r)

    def _charge_prepared(self, prepared, r: np.ndarray | None = None) -> None:
        """Charge a prepared batch, the next in issue order (MemorySystem.apply)."""
        res = self.memsys.apply(prepared, self.stats)
        if self.recorder is not None:
            self.recorder.requests(r, res, self.meta.instrs)

    # -------------------------------------------------------------------- run
    def run(self) -> RunResult:
        """Run the launch."""
        t0 = time.perf_counter()
        if getattr(self, "ctx", None) is None:     # a renewed run keeps its buffers
            self._setup()
        if self.recorder is not None and self.__dict__.get("warp_counts") is not None:
            warp_bank_counts.for_run(self)    # a timing recorder set since renew: shared requests traced
        if self._weak_mode():
            self.weak = weak_memory.WeakGlobalMemory(self.meta, self.memory, self.options.get("seed"))
        shape = self.shape
        if "issue" not in self.__dict__:   # a renewed run's was set to zero by renew()
            self.issue = np.zeros(self.preset.num_sms, dtype=np.int64)
        self._wi_total = 0
        progress = self.options.get("progress")
        workers = workers_of(self.options)
        self._resident = self._watch = self._block_order = None
        self._first_look(0)
        if self._order_rng is not None and self.recorder is None:
            # functional mode with a seed: blocks in a seeded-random order, as a
            # GPU's block scheduler gives no order (timing mode has its own)
            blocks = list(RoundRobinBlockScheduler(self.preset.num_sms).schedule(shape.grid))
            blocks = self._block_order = [blocks[i] for i in self._order_rng.permutation(len(blocks))]
            batches = self._batches(blocks)
        elif self._range_runner is not None:    # ranges of linear indices, reset natively
            total = grid_blocks(shape)
            if workers == 1 and progress is None:   # nothing to share or report: one call
                batches = (range(0, total),)
            else:
                batches = block_workers.block_ranges(total, workers, shape.threads_per_block)
        else:                          # the schedule's order, a batch at a time in numpy
            batches = self._array_batches(RoundRobinBlockScheduler(self.preset.num_sms))
        if workers > 1 and block_workers.can_parallelise(self):
            block_workers.run_parallel(self, batches, workers, progress)
        else:
            self._park_ok = True
            try:
                self.run_batches(batches, progress)
            finally:
                self._park_ok, self._resident = False, None
        self.finish()
        return RunResult(self.stats, self.findings, time.perf_counter() - t0)

    def run_batches(self, batches, progress=None) -> None:
        """The batches of blocks on this thread, in order (one worker; also a
        launch of several that block_workers finds too small to share),
        telling `progress` of each."""
        told = 0
        for blocks in batches:
            self._run_batch(blocks)
            if self._resident is not None:     # a block spun: the rest runs resident
                self._resident.run_rest()
                if progress is not None:
                    progress(grid_blocks(self.shape) - told)
                break
            if progress is not None:
                progress(len(blocks))
                told += len(blocks)

    def finish(self) -> None:
        """After the last block: charge the rest of the trace, release weak
        stores, collect the counters and the check tools' findings (a kept
        run's launch ends in finish_kept instead)."""
        if self._tracing and self.want_stats and self._charge_last(False) is not None:
            return
        self._finish_rest()

    def finish_kept(self):
        """finish of a kept run's launch with counters (launch_cache),
        renewed for a next launch before anything else reads its memory
        system: its caches and cycles may be reset now, in the native call
        that charges the last batch (MemorySystem.reset_native_done). Its
        counters as RawKernel._launch_of takes them, a
        launch_sums.Ended where the native end charged it (made into the
        launch's Stats when first read), else the Stats."""
        got = self._charge_last(True, True)
        if got is not None:
            return got
        self._finish_rest()
        return self.stats

    def end_kept(self, code: int, blocks: int):
        """The rest of a kept launch of `blocks` blocks whose native range call
        handed back `code` (launch_cache.launch, launch_gate.finish): the
        blocks from the one that stopped there (block_runner.kept_event),
        then with counters finish_kept's end; the launch's counters, or None
        without counters."""
        if code != block_runner.DONE:
            self._resident = self._watch = self._block_order = None
            self._park_ok = True
            try:
                block_runner.kept_event(self, code, blocks)
                if self._resident is not None:     # a block spun: the rest runs resident
                    self._resident.run_rest()
            finally:
                self._park_ok, self._resident = False, None
        return self.finish_kept() if self.want_stats else None

    def _finish_rest(self) -> None:
        """finish where the native end did not serve the launch."""
        if self._tracing:
            self.drain()
        if self.weak is not None:
            self.weak.finish()
        if self.want_stats:
            self._collect()
        if self.checker is not None:
            self.findings.extend(self.checker.finish())

    def _array_batches(self, sched):
        """The blocks of `sched.schedule(grid)` in BlockBatch batches of at most `batch`."""
        kept = self.__dict__.get("_kept_batches")     # a renewed run's, made before
        if kept is not None:
            yield from kept
            return
        total = grid_blocks(self.shape)
        made = []
        for start in range(0, total, self.batch):
            made.append(BlockBatch(sched.schedule_array(self.shape.grid, start,
                                                        min(start + self.batch, total))))
            yield made[-1]
        if len(made) <= 16:                # a small grid's schedule is kept for the next launch
            self._kept_batches = made

    def _batches(self, blocks):
        """The scheduled blocks in lists of at most `batch` (one frames buffer)."""
        pending: list = []
        for blk in blocks:
            pending.append(blk)
            if len(pending) == self.batch:
                yield pending
                pending = []
        if pending:
            yield pending

    def _run_batch(self, blocks: list):
        if isinstance(blocks, range):    # linear block indices (block_runner.run_range)
            return self._range_runner(self, blocks.start, blocks.stop)
        self._reset_batch(blocks)
        for j, (linear, idx, sm) in enumerate(blocks):
            self._run_block(j, idx)
            if self.weak is not None:     # its late stores held back from other blocks
                self.drain()
                self.weak.block_done()
            if self.want_stats:
                tot = int(self.counters[:, 0].sum())
                self.issue[sm] += tot - self._wi_total
                self._wi_total = tot
            if self._resident is not None:     # it spun: the blocks after it run resident
                return

    def _run_block(self, j: int, idx: tuple):
        """Run the warps of the batch's block j until all have exited.

        On presets with independent thread scheduling a warp may split into
        fragments (EV_SPLIT, see gpuemu/machine/thread_scheduling.py): each
        is one more entry here, with its own frame and owned lanes."""
        if self._block_runner is not None:
            return self._block_runner(self, j, idx)
        fn, ctxp, nw, i32 = self._fn, self._ctxp, self._nw, self._i32
        first = j * nw
        fptrs = self._fptrs[first:first + nw]
        rows = [i32[first + w] for w in range(nw)]
        order = self.scheduler.order
        state = [READY] * nw
        live = nw
        rng = self._order_rng
        fragments = []                 # frames of warp fragments (independent thread scheduling)
        spin_at = self._spin_first or block_runner.SPIN_FIRST   # as the native loop: past it ask _spun
        while live:
            ready = [w for w in range(len(state)) if state[w] == READY]
            if rng is not None and len(ready) > 1:   # seeded warp interleaving
                ready = [ready[k] for k in rng.permutation(len(ready))]
            for w in order(ready):
                if rng is not None:
                    self.store_order[:] = rng.permutation(abi.WARP)
                ev = fn(fptrs[w], ctxp)
                while ev == abi.EV_TRACE_FULL:
                    self.trace_room()
                    ev = fn(fptrs[w], ctxp)
                if self.recorder is not None and ev in (abi.EV_BARRIER, abi.EV_EXIT):
                    self._record_event(rows[w], ev)
                if ev == abi.EV_BARRIER:
                    state[w] = WAITING
                    row = rows[w]
                    if (row[_CUR] ^ row[_VALID]) & ~row[_EXITED]:   # not all live lanes here
                        self._barrier_divergence(idx, int(row[abi.F_WARP // 4]), row)
                elif ev == abi.EV_EXIT:
                    state[w] = EXITED
                    live -= 1
                elif ev == abi.EV_YIELD:   # stays ready: the next round runs it on
                    if rows[w].view(np.int64)[abi.F_BACKEDGES // 8] >= spin_at:
                        spin_at = self._spun(idx, w, rows, state)[0]
                elif ev == abi.EV_SPLIT:
                    frag = split_warp(rows[w], self.meta.frame_bytes, self.recorder)
                    fragments.append(frag)
                    fptrs.append(frag.ctypes.data)
                    rows.append(frag.view(np.int32))
                    state.append(READY)
                    live += 1
                else:
                    self._fail(ev, idx, w, rows, state)
            if not live:
                break
            waiting = [w for w in range(len(state)) if state[w] == WAITING]
            points = {int(rows[w][abi.F_RESUME // 4]) for w in waiting}
            if len(waiting) < live:    # some warps yielded: they run on first
                continue
            if len(points) > 1:
                self._barrier_mismatch(idx, waiting, rows)
            for w in waiting:      # the barrier counts arrivals, as bar.sync does
                state[w] = READY

    # ------------------------------------------------------- spinning blocks
    _resident = None      # resident_blocks.ResidentBlocks once a block of the launch spun
    _watch = None         # the SpinWatch of the launch's block that yields
    _block_order = None   # a seeded launch's blocks in their order (else linear order)
    _park_ok = False      # blocks that spin may be parked (one worker; timing mode too)
    _spin_first = 0       # the back edges of a block's first look (_first_look)

    def _memory_hash(self) -> int:
        return resident_blocks.global_memory_hash(self)

    def _spun(self, idx: tuple, w: int, rows: list, states, task=None) -> tuple:
        """Entry w of block idx yielded past its spin threshold (the native
        loop's SPIN_F, the Python loop's spin_at): whether the block spins
        (resident_blocks.SpinWatch). The launch's own block, if so, waits
        while the blocks that would be resident with it run; a resident one
        (`task`) is parked. (the back edges of the next look, park)."""
        row = rows[w]
        edges = int(row.view(np.int64)[abi.F_BACKEDGES // 8])
        if task is not None:
            watch = task.watch
            task.spin_w = w
        else:
            lin = int(row[abi.F_BLOCK // 4])
            watch = self._watch
            if watch is None or watch.block != lin:
                watch = self._watch = resident_blocks.SpinWatch(lin)
        # while no other block has run (none parked yet), global memory that moves
        # between two looks moved by this block's own work: not a spin
        alone = self._park_ok and task is None and self._resident is None
        spins = watch.spins(w, rows, states, self.shared_stride,
                            self._memory_hash if alone else None) and self._park_ok
        if watch.moved:                  # a long loop, not a spin: later blocks look later
            self._first_look(min(max(self._spin_first, 2 * edges), self._look_cap()))
        resident = self._resident
        if task is not None:
            return resident.next_look(task, watch.next_look(edges), edges), spins
        if not spins:
            return watch.next_look(edges), False
        if resident is None:
            resident = self._resident = resident_blocks.ResidentBlocks(
                self, self._not_started(watch.block),
                resident_blocks.resident_limit(self.preset, self.shape, self.meta))
        self._switched(watch.block, int(row[abi.F_SM // 4]), False)
        resident.wait(watch)
        return resident.next_look(None, watch.next_look(edges), edges), False

    def _first_look(self, edges: int) -> None:
        """Blocks started from now on first look at a yield past `edges`
        back edges (0: block_runner.SPIN_FIRST): raised where a look found
        a warp's loop moving on, so that a launch of many blocks with long
        loops leaves the native loop a few times, not at every block (a
        kept run keeps it for its next launches; others start from 0)."""
        self._spin_first = edges
        scratch = self.__dict__.get("_block_range_scratch")
        if scratch is not None:
            scratch[1][block_runner.L_SPIN] = edges

    def _look_cap(self) -> int:
        """The furthest first look: well within the watchdog budget, so a
        block that spins is seen spinning before its watchdog stops it."""
        return max(block_runner.SPIN_FIRST, min(1 << 24, self.budget // 8))

    def _not_started(self, lin: int):
        """The launch's blocks after block `lin`, in its order: (linear, (x, y, z), sm)."""
        order = self._block_order
        if order is not None:
            at = next(k for k, b in enumerate(order) if b[0] == lin)
            return iter(order[at + 1:])
        return itertools.islice(RoundRobinBlockScheduler(self.preset.num_sms).schedule(self.shape.grid),
                                lin + 1, None)

    def _switched(self, lin: int, sm: int, done: bool) -> None:
        """Block `lin` on `sm` stops (done: it finished; else it spins) and
        another runs: its warp instructions to its SM, its records to the
        check tools (a block that spins has its shared and local records
        held until it finishes, Checker.hold_block), its stores to the weak
        memory model (released as it spins, weak_memory.WeakGlobalMemory.block_spins)."""
        if self.want_stats:
            tot = int(self.counters[:, 0].sum())
            # the count of warp instructions given to SMs: the range loop's, else _run_batch's
            lau = self._block_range_scratch[1] if self._range_runner is not None else None
            self.issue[sm] += tot - (int(lau[block_runner.L_ISSUED]) if lau is not None else self._wi_total)
            self._wi_total = tot
            if lau is not None:
                lau[block_runner.L_ISSUED] = tot
        if self.weak is not None or self.checker is not None:
            self.drain()
        if self.weak is not None:
            if done:
                self.weak.block_done()
            else:
                self.weak.block_spins()
        if self.checker is not None:
            (self.checker.block_done if done else self.checker.hold_block)(lin)

    def _weak_mode(self) -> bool:
        return weak_memory.parse_memory_model(self.options.get("memory_model"))

    def _barrier_mismatch(self, idx, waiting, rows):
        """Every live warp waits, but at different __syncthreads(): a
        condition around them was not uniform across the block (CUDA C
        Programming Guide, "Synchronization Functions": undefined). The
        hardware's barrier counts arriving warps, so they all go on;
        reported once per set of lines."""
        pairs = [(int(rows[w][abi.F_WARP // 4]), int(rows[w][abi.F_EVENT_LINE // 4])) for w in waiting]
        key = tuple(sorted({ln for _, ln in pairs}))
        if key in self._divergent_barriers:
            return
        self._divergent_barriers.add(key)
        self.findings.append(barrier_mismatch_finding(self.meta, idx, pairs, self.shape.block))

    def _record_event(self, row: np.ndarray, ev: int):
        """Timing mode: the warp of frame `row` (int32 view) reached a barrier or exited."""
        icount = int(row.view(np.uint8)[abi.F_ICOUNT:abi.F_ICOUNT + 8].view(np.int64)[0])
        self.recorder.event(int(row[abi.F_BLOCK // 4]), int(row[abi.F_WARP // 4]),
                            1 if ev == abi.EV_BARRIER else 2, icount,
                            int(row[abi.F_EVENT_LINE // 4]) if ev == abi.EV_BARRIER else 0)

    def _barrier_divergence(self, idx, w, row):
        """A warp reached __syncthreads with some of its live lanes elsewhere
        (CUDA C Programming Guide, "Synchronization Functions": the barrier
        must be reached by all threads of the block, else behaviour is
        undefined). Reported once per barrier line, the launch goes on."""
        line = int(row[abi.F_EVENT_LINE // 4])
        if line in self._divergent_barriers:
            return
        self._divergent_barriers.add(line)
        missing = int(np.uint32((row[_CUR] ^ row[_VALID]) & ~row[_EXITED]))
        lane = (missing & -missing).bit_length() - 1
        self.findings.append(barrier_divergence_finding(
            self.meta, idx, w, lane, line, int(np.uint32(row[_CUR])), self.shape.block))

    def _charge_last(self, renewed: bool, ended: bool = False):
        """finish's one native call, where it applies (the trace charged at
        once by the run's NativeBatch; no check tool, weak memory model,
        timing recorder or shared requests counted by the warps): the last
        trace batch, the memory counters settled, the busiest SM's cycles
        (NativeBatch.charge_last), the per-line counters and the cycles
        added as _collect adds them, in the same Stats call; what it
        returned (the cycles, or with `ended` the launch's end). None:
        nothing done (finish goes the general way)."""
        nb = self.__dict__.get("_native_batch")
        if (nb is None or self.warp_counts is not None or self.checker is not None or self.weak is not None
                or self.recorder is not None):
            return None
        ctx = self._ctx_views[0]           # (ctx's items as Python ints)
        n = ctx[abi.C_TRACE_LEN]
        if not n:
            return None
        got = nb.charge_last(self.memsys, self.meta.instrs, n, ctx[abi.C_TRACE], self.stats, self.issue,
                             self.schedulers, renewed, self.counters, ended)
        if got is not None:
            ctx[abi.C_TRACE_LEN] = 0
            self._zeroed = renewed         # (the per-line counters and issue counts: renew need not zero them)
        return got

    _zeroed = False                        # the counters and issue counts are zero (_charge_last)

    def _collect(self):
        """The native per-line counters into the launch's Stats, then cycles
        (the memory counters settled first). The per-line table is added as
        sums when the counters are read (Stats.defer_table), counter by
        counter and line by line (the order tests/test_executor_counters.py
        checks against Stats.add_lines' sums)."""
        stats = self.stats
        self.memsys.settle(stats)          # the memory counters first, as charged
        stats.defer_table(abi.LINE_COUNTERS, self.counters.copy(), LINE_COUNTER_SET)
        if self.warp_counts is not None:
            self.memsys.add_warp_counts(self.warp_counts, self.meta.instrs, stats)
        self.memsys.finish(stats, self.issue, self.schedulers)

    def _fail(self, ev, idx, w, rows, state):
        meta, shape = self.meta, self.shape
        row = rows[w]
        warp = int(row[abi.F_WARP // 4])
        if ev == abi.EV_FAULT:
            f = fault_finding(self.ctx, meta, idx, warp, shape.block, self._describe_tag)
        elif ev == abi.EV_TIMEOUT and self._resident is not None and self._resident.stuck:
            f = self._resident.timeout_finding(idx, row)     # every resident block spins
        elif ev == abi.EV_TIMEOUT:
            waiting = [(int(rows[v][abi.F_WARP // 4]), int(rows[v][abi.F_EVENT_LINE // 4]))
                       for v in range(len(state)) if state[v] == WAITING]
            exited = []
            for r in rows:
                gone = int(np.uint32(r[abi.F_EXITED // 4])) & int(np.uint32(r[abi.F_VALID // 4]))
                base = int(r[abi.F_WARP // 4]) * abi.WARP
                exited += [thread_of(base + ln, shape.block) for ln in range(abi.WARP) if gone >> ln & 1]
            f = spin_finding(meta, idx, warp, row, shape.block, self.budget, waiting,
                             bool(getattr(self.preset, "independent_thread_scheduling", True)), exited)
        else:
            raise RuntimeError(f"warp function returned unknown event {ev}")
        raise KernelError([f] + self._findings_so_far())

    def _findings_so_far(self) -> list:
        """What the check tools found before a kernel stopped."""
        if self.checker is None:
            return []
        self.drain()
        return self.findings + self.checker.finish()

    def _describe_tag(self, tag: int) -> str:
        static = static_object(self.meta, self.shape.shared_dynamic, tag)
        if static is not None:
            return static[0]
        d = self.memory.describe(tag)
        return d or "any object"
