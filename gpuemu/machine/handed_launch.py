"""A launch without counters on block workers whose ranges are handed out in
native code (range_handout.py builds that code and its state): each
thread runs ranges until none is left, back in Python only for a block
that needs it, and the calling thread waits for the pool threads' flags
natively.
"""
from __future__ import annotations

import ctypes
import functools
import time
from typing import Optional

import numpy as np

from . import block_runner, range_handout, worker_copy, worker_threads
from .block_ranges import block_ranges
from .ordered_charge import merge_findings


def handed(run, batches, nworkers: int) -> Optional[np.ndarray]:
    """The launch's ranges as range_handout's int64 pairs where its native
    loop can hand them out (block_ranges' own; untimed: no recorder to hear
    events), else None."""
    if (type(batches) is tuple and batches and type(batches[0]) is range and batches[0].start == 0
            and run.recorder is None and run._range_runner is block_runner.run_range
            and batches is block_ranges(batches[-1].stop, nworkers, run.shape.threads_per_block)):
        return range_handout.ranges_array(batches[-1].stop, nworkers, run.shape.threads_per_block)
    return None


def run_handed(run, ranges: np.ndarray, nworkers: int, spent: list,
               pool: worker_threads.Threads) -> None:
    """block_workers' _run_untraced with the ranges handed out in native code
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
    workers = [worker_copy.take(run, run.ctx) for _ in range(nworkers - 1)]    # the launch's start ctx
    results: dict = {}           # range index -> (findings, error), where a block came back
    take = block_runner.take_ranges_function()
    n = len(ranges)
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
            worker_threads.join(futures)
    run.findings = base
    for i in sorted(results):
        findings, err = results[i]
        merge_findings(run, findings)
        if err is not None:
            raise err
    if run.want_stats:           # (without counters nothing reads them)
        worker_copy.merge_counts(run, workers)
    worker_copy.keep(run, workers)


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
    """A pool thread's part of run_handed: ranges until none is left (its
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
