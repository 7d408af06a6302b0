"""Blocks on parallel workers: one worker against N on vecadd and the tiled
transpose (issue 6, item 4), results and counters compared.

Run it on an otherwise idle machine, pinned to the cores it may use:

    taskset -c 2,3 python benchmarks/bench_workers.py --workers 2 --vecadd 1048576,4194304 --repeats 25

It prints these tables, counters off (`stats=False`, the fast path) and on
(the default):

1. speed-up: seconds of a warm launch (compiled and run once first), the
   minimum of --repeats runs, at 1 and N workers, and the median; the runs
   at 1 and N workers take turns, and "median of paired ratios" is the
   median of each pair's 1-worker / N-worker ratio (steadier on a noisy
   machine than the ratio of the medians); the machine's ceiling is the
   same paired ratio of numpy work as long as one worker's launch, split
   over N threads the way the workers' pool splits it, timed in the same
   turns, each N-thread run right after its 1-thread run as gpuemu's are
   (benchmarks/machine_ceiling.py): what any code's N threads got in
   that spell, and "of the ceiling" the share of it gpuemu reached; before timing, each
   kernel runs once with every counter on at 1 and at N workers and the
   outputs and counters must be identical ("identical" in the last column).
2. steady state (`--steady` prints only this one): launches back to back,
   as a loop of launches runs them: rounds of 5 launches at 1 worker then 5
   at N, each block's first 2 dropped (they follow the other count's), the
   median of the rounds' ratios of the blocks' medians. In the paired turns
   of table 1 every N-worker launch follows a one-worker launch, and on our
   2-core virtual machine a two-worker launch with counters that follows
   11 ms in which the other core ran none of its threads takes 5-18%
   longer (the comment above STEADY_BLOCK).
3. serial share (`--serial` prints only this one): on one worker, what
   limits N workers on any machine, loaded or not: the share s of a
   launch's thread CPU time spent outside what the workers run in
   parallel, and Amdahl's bound on the speed-up, 1 / (s + (1 - s) / N).
   Two shares: outside the native block loops (which release the GIL),
   and outside them and the memory model's prepare step (counters on:
   numpy or native passes on each worker's own trace).
4. time per phase (`--phases` prints only this one), ms, at 1 and N
   workers, of the fastest of --repeats runs: the calling thread's CPU in
   the native block loops, the prepare step, the ordered apply step and
   the rest, and its idle time (wall minus CPU); the other workers' CPU
   in native, prepare, apply (any thread charges the next batch in order
   when it is ready) and the rest, and their off-CPU time inside their
   batches (on idle cores: waiting for the GIL); all_cpu, the CPU of all
   threads, against one worker's shows what running in parallel adds
   (GIL hand-offs, caches).
5. model (`--model` prints only this one): N workers' schedule
   (benchmarks/worker_schedule.py) worked out from one worker's thread CPU:
   the ranges run_parallel hands out, each costing its blocks' share of
   the launch's work on the thread that runs it and of the ordered step
   on the thread that charges it, and each of its trace batches a batch's
   fixed cost (a one-block launch's). What the schedule alone allows (the
   ordered chain, the ranges' grain), fair on a loaded machine; on idle
   cores the measured speed-up falls short of it by the GIL waits and
   the slower memory of two threads at once.
6. CPU (`--cpu` prints only this one; Unix): per launch at 1 and N workers,
   taking turns, the CPU of all threads (process time) and the minor page
   faults, min and median, and the median of the pairs' N-worker / 1-worker
   CPU ratios: what running on N threads adds to one worker's work, which
   a loaded machine measures as well as an idle one (wall times it cannot);
   the calling thread's serial CPU at N workers (before it hands the
   blocks out, after it finds the workers done: what N workers cannot split);
   and the faults of the N-worker launches after the first WARM, and how
   many of them had a burst (more than 100: a fresh 2.4 MB trace buffer
   is some 600).
7. calls (`--calls` prints only this one): Python calls (and calls into
   C) per launch at 1 and N workers, on the calling thread and the others:
   what the GIL serialises, a count a loaded machine measures exactly.
8. waits (`--waits` prints only this one; Linux): per thread of the
   launch of least wall time, ms: CPU in native code and in Python, and
   the time blocked waiting for the GIL (as a native call returns, and
   elsewhere), waiting for batches to charge, and waiting for a CPU (other
   processes), from the kernel's per-thread scheduler statistics
   (benchmarks/thread_waits.py), so a loaded machine measures the GIL
   waits too. `--switch-interval MS` sets sys.setswitchinterval first.
9. rounds (`--rounds R` prints only this one): tables 1 and 2 for every
   cell, R rounds in a row, each round's paired ratio, ceiling and steady
   ratio, then per cell the least, median and largest over the rounds and
   how many reached `--target` (default 1.7): one run shows one of the
   machine's spells, R rounds show how far they move the figures.
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import gpuemu  # noqa: E402
from gpuemu.machine import block_runner, handed_launch, worker_copy, worker_threads  # noqa: E402
from gpuemu.machine.block_ranges import GuidedRanges, blocks_per_batch  # noqa: E402
from gpuemu.machine.executor import TRACE_CAPACITY, LaunchRun  # noqa: E402
from gpuemu.memory.memory_system import MemorySystem  # noqa: E402
from gpuemu.memory.native_batch import NativeBatch  # noqa: E402
import thread_waits  # noqa: E402
from machine_ceiling import Ceiling  # noqa: E402
from worker_schedule import schedule  # noqa: E402


class Bench(NamedTuple):
    """A kernel's launch at one size: its shape (blocks, threads per block),
    the launch (keyword options), its output getter and expected output."""
    name: str
    blocks: int
    tpb: int
    launch: Callable
    get: Callable
    want: np.ndarray

    @property
    def threads(self) -> int:
        """Threads the launch runs."""
        return self.blocks * self.tpb


def _vecadd(n: int) -> Bench:
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    k = gpuemu.RawModule(path=str(ROOT / "programs" / "vecadd.cu")).get_function("vecadd")
    x, y, c = gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.zeros(n, dtype=np.float32)
    blocks = (n + 255) // 256

    def launch(**opt):
        return k((blocks,), (256,), (x, y, c, np.int32(n)), **opt)
    return Bench("vecadd", blocks, 256, launch, lambda: c.get(), a + b)


def _transpose(n: int) -> Bench:
    """n x n, in 32x32 tiles of one 32x8 block each (each thread moves 4 elements)."""
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    k = gpuemu.RawModule(path=str(ROOT / "programs" / "transpose_tiled33.cu")).get_function(
        "transpose_tiled33")
    x, y = gpuemu.asarray(a), gpuemu.zeros((n, n), dtype=np.float32)

    def launch(**opt):
        return k((n // 32, n // 32), (32, 8), (y, x, np.int32(n)), **opt)
    return Bench("transpose", (n // 32) ** 2, 32 * 8, launch, lambda: y.get(), a.T)


def _kernels(args):
    """Each kernel's Bench at the sizes asked for."""
    for n in args.vecadd:
        yield _vecadd(n)
    yield _transpose(args.transpose)


PHASES = ("native", "prepare", "apply", "range")


@contextmanager
def _phase_clock():
    """Per thread, the CPU and wall seconds a launch spends in each phase:
    native (the block loops' native calls, GIL-free), prepare (the memory
    model's order-free step, MemorySystem.prepare: native passes and numpy, on the
    thread that ran the blocks), apply (the ordered step,
    LaunchRun._charge_prepared: caches, on the calling thread; the native
    passes' own, NativeBatch.prepare and apply, the same: one worker's
    NativeBatch.charge is made those two steps here, and its last batch
    with the launch's end, NativeBatch.charge_last, counts as apply) and range
    (a worker's whole batch: native, prepare, the applies its worker makes
    at once, OrderedCharge.now, and the Python around them; counters off,
    a pool thread's whole part, its ranges handed out natively). An apply
    inside a range counts as well under "apply_in_range" (its range holds
    it: `split_phases` counts it once).
    Yields {thread id: {phase: [cpu, wall]}}; the calling thread's id is
    threading.main_thread().ident."""
    spent: dict = {}
    in_range = threading.local()

    def timing(fn, phase):
        def call(*args, **kw):
            inside = getattr(in_range, "on", False)
            if phase == "range":
                in_range.on = True
            c0, w0 = time.thread_time(), time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                cpu, wall = time.thread_time() - c0, time.perf_counter() - w0
                if phase == "range":
                    in_range.on = inside
                mine = spent.setdefault(threading.get_ident(), {})
                for name in (phase, f"{phase}_in_range") if inside and phase == "apply" else (phase,):
                    acc = mine.setdefault(name, [0.0, 0.0])
                    acc[0] += cpu
                    acc[1] += wall
        return call

    patches = [(block_runner, n, lambda get: (lambda: timing(get(), "native")))
               for n in ("_function", "_range_function", "_batch_function", "take_ranges_function",
                         "wait_workers_function")
               if hasattr(block_runner, n)]
    for owner, n, phase in ((MemorySystem, "prepare", "prepare"),
                            (LaunchRun, "_charge_prepared", "apply"),
                            (NativeBatch, "prepare", "prepare"),  # the native passes' own steps
                            (NativeBatch, "apply", "apply"),
                            (NativeBatch, "charge_last", "apply"),   # one worker's last batch and end
                            (worker_copy.Worker, "run_batch", "range"),
                            (handed_launch, "_pool_ranges", "range")):   # a pool thread's handed ranges
        if hasattr(owner, n):
            patches.append((owner, n, lambda f, ph=phase: timing(f, ph)))
    patches.append((NativeBatch, "charge", lambda f: _charge_in_two_steps))
    saved = [getattr(owner, n) for owner, n, _ in patches]
    for (owner, n, wrap), old in zip(patches, saved):
        setattr(owner, n, wrap(old))
    try:
        yield spent
    finally:
        for (owner, n, _), old in zip(patches, saved):
            setattr(owner, n, old)


def _charge_in_two_steps(nb: NativeBatch, records: np.ndarray, at: int | None = None) -> bool:
    """NativeBatch.charge as its two steps (the same counters: block workers
    charge every batch this way), so that the phase clock tells a launch's
    order-free part (prepare) from its ordered part (apply) on one worker
    too: one native call would count as neither."""
    if not nb.prepare(records):
        return False
    nb.apply()
    return True


def _timed(launch, **opt) -> tuple:
    """(wall s, calling thread's CPU s, {thread: {phase: [cpu, wall]}}) of one launch."""
    with _phase_clock() as spent:
        w0, c0 = time.perf_counter(), time.thread_time()
        launch(**opt)
        c, w = time.thread_time() - c0, time.perf_counter() - w0
    return w, c, spent


def serial_fraction(launch, repeats: int, **opt) -> tuple:
    """(CPU seconds of a one-worker launch, share outside the native block
    loops, share outside them and the memory model's prepare step, share
    outside them and the ordered apply step), the run with the least CPU
    time of `repeats`."""
    launch(workers=1, **opt)
    best = None
    for _ in range(repeats):
        _, t, spent = _timed(launch, workers=1, **opt)
        ph = spent.get(threading.main_thread().ident, {})
        native, prep, app = (ph.get(k, [0.0])[0] for k in ("native", "prepare", "apply"))
        if best is None or t < best[0]:
            best = (t, max(t - native, 0.0) / t, max(t - native - prep, 0.0) / t,
                    max(t - native - prep - app, 0.0) / t)
    return best


def phase_times(launch, workers: int, repeats: int, **opt) -> dict:
    """Milliseconds per phase of the run with the least wall time of `repeats`:
    the calling thread's CPU (native, prepare, apply, other) and idle (wall
    minus CPU: waiting for workers or for the GIL); the other threads' CPU
    (native, prepare, apply, other) and their off-CPU time inside batches (on idle
    cores: waiting for the GIL)."""
    launch(workers=workers, **opt)
    best = None
    for _ in range(repeats):
        got = _timed(launch, workers=workers, **opt)
        if best is None or got[0] < best[0]:
            best = got
    return split_phases(*best)


def split_phases(wall: float, cpu: float, spent: dict) -> dict:
    """phase_times' milliseconds from one launch's wall and calling thread's
    CPU seconds and its _phase_clock: an apply a worker made inside its
    range (apply_in_range) counts once, in its range, not in the other
    workers' "other" nor twice in all_cpu."""
    main = spent.get(threading.main_thread().ident, {})
    others = [ph for t, ph in spent.items() if t != threading.main_thread().ident]

    def cpu_of(phs, name):
        return 1e3 * sum(ph.get(name, [0.0, 0.0])[0] for ph in phs)

    def off_cpu(phs):
        return 1e3 * sum(ph.get("range", [0.0, 0.0])[1] - ph.get("range", [0.0, 0.0])[0]
                         for ph in phs)
    m = {k: cpu_of([main], k) for k in ("native", "prepare", "apply")}
    o = {k: cpu_of(others, k) for k in ("native", "prepare", "apply", "range", "apply_in_range")}
    return {"wall": 1e3 * wall, "main_cpu": 1e3 * cpu, **{f"main_{k}": v for k, v in m.items()},
            "main_other": 1e3 * cpu - sum(m.values()), "main_idle": 1e3 * (wall - cpu),
            "main_offcpu_in_batches": off_cpu([main]),
            "workers_native": o["native"], "workers_prepare": o["prepare"],
            "workers_apply": o["apply"],
            "workers_other": o["range"] - o["native"] - o["prepare"] - o["apply_in_range"],
            "workers_offcpu_in_batches": off_cpu(others),
            "all_cpu": 1e3 * cpu + o["range"] + o["apply"] - o["apply_in_range"]}


def _phase_table(args) -> None:
    print(f"\nPer phase, ms (the fastest of {args.repeats} runs): CPU of all threads (against "
          "one worker's: what running in parallel adds), the calling thread's CPU and idle time, "
          "the other workers' CPU and off-CPU time inside their batches")
    cols = ("wall", "all_cpu", "main_cpu", "main_native", "main_prepare", "main_apply", "main_other",
            "main_idle", "main_offcpu_in_batches", "workers_native", "workers_prepare", "workers_apply",
            "workers_other", "workers_offcpu_in_batches")
    _head(("kernel", "threads", "counters", "workers") + cols)
    for k, stats, w, row in _cells(args):
        t = phase_times(k.launch, w, args.repeats, stats=stats)
        print(row + " | ".join(f"{t[c]:.1f}" for c in cols) + " |")


def _head(cols: tuple) -> None:
    """A markdown table's head."""
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))


def _cells(args):
    """(Bench, counters on, workers, the row's first cells) of each kernel,
    counters off and on, 1 and N workers."""
    for k in _kernels(args):
        for stats in (False, True):
            for w in sorted({1, args.workers}):
                yield k, stats, w, f"| {k.name} | {k.threads:,} | {'on' if stats else 'off'} | {w} | "


def _serial_table(args) -> None:
    n = args.workers

    def bound(s):
        return f"{1 / (s + (1 - s) / n):.2f}x"
    print(f"\nSerial share of one worker's launch (thread CPU, the least of {args.repeats} runs); "
          "the last bound lets the ordered step overlap the workers (the calling thread charges "
          "between its own batches): 1 / max(s0 + (1 - s0) / N, s), s0 the share outside all three")
    print(f"| kernel | threads | counters | CPU s (1 worker) | s: all but native loops | "
          f"bound, {n} workers | s: all but native loops and prepare | bound, {n} workers | "
          f"s0: all but native, prepare, apply | bound, apply overlapped |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in _kernels(args):
        for stats in (False, True):
            t, s_native, s_prepared, s0 = serial_fraction(k.launch, args.repeats, stats=stats)
            overlapped = 1 / max(s0 + (1 - s0) / n, s_prepared)
            print(f"| {k.name} | {k.threads:,} | {'on' if stats else 'off'} | {t:.4f} | "
                  f"{s_native:.3f} | {bound(s_native)} | {s_prepared:.3f} | {bound(s_prepared)} | "
                  f"{s0:.3f} | {overlapped:.2f}x |")


def _records(launch) -> int:
    """Trace records of one launch (counters on, one worker: each drain's
    records reach LaunchRun._charge_records)."""
    seen = [0]
    orig = LaunchRun._charge_records

    def count(self, r, *a, **kw):
        seen[0] += len(r)
        return orig(self, r, *a, **kw)
    LaunchRun._charge_records = count
    try:
        launch(workers=1)
    finally:
        LaunchRun._charge_records = orig
    return seen[0]


def model_ranges(blocks: int, nworkers: int, tpb: int, stats: bool, records: int) -> list:
    """Blocks per range as run_parallel hands them out: guided (counters off),
    or even and, after the first range, in whole trace buffers (on)."""
    src = GuidedRanges(0, blocks, nworkers, tpb, even=stats)
    out = []
    while (got := src.take()) is not None:
        out.append(len(got[1]))
        if stats and len(out) == 1 and records:
            src.in_units(blocks_per_batch(worker_copy.WORKER_TRACE_RECORDS, blocks, records))
    return out


def _batches(records: int, blocks: int, capacity: int) -> Callable[[int], int]:
    """The trace batches of a range of b blocks (of a launch of `blocks`
    making `records` records), at `capacity` records a batch (0: none)."""
    if not capacity:
        return lambda b: 0
    return lambda b: -(-b * records // (blocks * capacity))


def _model_table(args) -> None:
    n = args.workers
    print(f"\nModel of {n} workers' schedule (benchmarks/worker_schedule.py) from one worker's thread "
          f"CPU (the least of {args.repeats} runs): each range costs its blocks' share of the native "
          "loops, prepare and the rest on the thread that runs it, of the ordered step on the thread "
          "that charges it, and each of its trace batches a batch's fixed cost (a one-block launch's "
          "prepare and ordered step); no GIL waits, no slower memory with two threads running")
    print(f"| kernel | threads | counters | 1 worker CPU (ms) | ordered step (ms) | batch's fixed cost, "
          f"prepare / ordered (ms) | ranges | {n} workers, model (ms) | speed-up, model |")
    print("|---|---|---|---|---|---|---|---|---|")
    tiny = {"vecadd": _vecadd(256).launch, "transpose": _transpose(32).launch}    # one block each
    for k in _kernels(args):
        blocks, tpb = k.blocks, k.tpb
        records = _records(k.launch)
        one = phase_times(tiny[k.name], 1, args.repeats, stats=True)
        for stats in (False, True):
            t = phase_times(k.launch, 1, args.repeats, stats=stats)
            fixed = (one["main_prepare"], one["main_apply"]) if stats else (0.0, 0.0)
            # trace batches of b blocks: TRACE_CAPACITY records on one worker, WORKER_TRACE_RECORDS on N
            one_batches = _batches(records, blocks, TRACE_CAPACITY if stats else 0)
            batches = _batches(records, blocks, worker_copy.WORKER_TRACE_RECORDS if stats else 0)
            ordered = t["main_apply"]
            rest = t["main_cpu"] - ordered
            w = (rest - one_batches(blocks) * fixed[0]) / blocks
            a = (ordered - one_batches(blocks) * fixed[1]) / blocks
            ranges = model_ranges(blocks, n, tpb, stats, records)
            work = [w * b + batches(b) * fixed[0] for b in ranges]
            apply = [a * b + batches(b) * fixed[1] for b in ranges]
            wall = schedule(work, apply, n)
            print(f"| {k.name} | {k.threads:,} | {'on' if stats else 'off'} | {t['main_cpu']:.1f} | "
                  f"{ordered:.1f} | {fixed[0]:.2f} / {fixed[1]:.2f} | {len(ranges)} | {wall:.1f} | "
                  f"{t['main_cpu'] / wall:.2f}x |")


def thread_waits_of(launch, workers: int, repeats: int, **opt) -> dict:
    """thread_waits.summary, with 'wall' added, of the launch of least wall
    time of `repeats` (after a warm one) and of the median one by wall time:
    {'fastest': ..., 'median': ...} (what the median launch loses beside
    the fastest shows where the spread comes from)."""
    launch(workers=workers, **opt)
    runs = []
    for _ in range(repeats):
        with thread_waits.wait_clock() as (spent, timed):
            w0 = time.perf_counter()
            timed(launch, "launch")(workers=workers, **opt)
            wall = 1e3 * (time.perf_counter() - w0)
        runs.append({"wall": wall, **thread_waits.summary(spent, threading.get_ident())})
    runs.sort(key=lambda r: r["wall"])
    return {"fastest": runs[0], "median": runs[len(runs) // 2]}


def _waits_table(args) -> None:
    cols = ("cpu", "native_cpu", "python_cpu", "gil_at_return", "gil_other", "wait_batches", "run_queue",
            "sleeps_at_return")
    print(f"\nWhere each thread's time goes, ms (the launch of least wall time of {args.repeats}, and the median one; "
          f"switch interval {sys.getswitchinterval() * 1e3:g} ms; benchmarks/thread_waits.py): CPU in "
          "native code and in Python; blocked waiting for the GIL as a native call returns and "
          "elsewhere; the calling thread waiting for batches to charge; waiting for a CPU (other "
          "processes; on a loaded machine it blurs the split of the waits); how many native calls "
          "slept for the GIL as they returned")
    _head(("kernel", "threads", "counters", "workers", "launch", "thread", "wall") + cols)
    for k, stats, w, row in _cells(args):
        got = thread_waits_of(k.launch, w, args.repeats, stats=stats)
        for which, t in got.items():
            for role in ("main", "others") if w > 1 else ("main",):
                print(row + f"{which} | {role} | {t['wall']:.1f} | "
                      + " | ".join(f"{t[role][c]:.0f}" if c.startswith("sleeps") else f"{t[role][c]:.2f}"
                                   for c in cols) + " |")


@contextmanager
def _hand_out_clock():
    """The calling thread's CPU clock (time.thread_time) as it first hands a
    task to the block worker threads and as it last finds one finished
    (worker_threads' submit and Task.result): yields {'out': s, 'back': s}
    (empty for a launch that hands nothing out)."""
    marks: dict = {}
    me = threading.get_ident()
    submit, result = worker_threads.Threads.submit, worker_threads.Task.result

    def handing(self, fn):
        if threading.get_ident() == me:
            marks.setdefault("out", time.thread_time())
        return submit(self, fn)

    def joined(self):
        try:
            return result(self)
        finally:
            if threading.get_ident() == me:
                marks["back"] = time.thread_time()
    worker_threads.Threads.submit, worker_threads.Task.result = handing, joined
    try:
        yield marks
    finally:
        worker_threads.Threads.submit, worker_threads.Task.result = submit, result


def cpu_of_launches(launch: Callable, nworkers: int, repeats: int, **opt) -> dict:
    """Per launch at 1 and `nworkers` workers, taking turns (after a warm
    launch of each): the CPU seconds of all the process's threads, of the
    calling thread, the minor page faults, and the calling thread's serial
    CPU: before it hands the blocks out and after it finds the workers
    done (all of it where it hands nothing out), the part that two workers
    cannot split. {workers: [(all, calling, faults, serial), ...]}."""
    for w in (1, nworkers):
        launch(workers=w, **opt)
    out: dict = {1: [], nworkers: []}
    for _ in range(repeats):
        for w in (1, nworkers):
            with _hand_out_clock() as marks:
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                c0, t0 = time.process_time(), time.thread_time()
                launch(workers=w, **opt)
                c, t1 = time.process_time() - c0, time.thread_time()
            serial = (marks["out"] - t0) + (t1 - marks["back"]) if "back" in marks else t1 - t0
            out[w].append((c, t1 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, serial))
    return out


WARM = 8     # launches of a kind a run needs before record_pool holds the storage its launches use at most


def _cpu_table(args) -> None:
    n = args.workers
    print(f"\nCPU of all threads per launch, ms, and minor page faults ({args.repeats} launches at 1 and at "
          f"{n} workers, taking turns): what running on {n} threads adds to one worker's work, fair on a "
          "loaded machine (the CPU, not the wall time)")
    _head(("kernel", "threads", "counters", "1 worker, min", "1 worker, median", f"{n} workers, min",
           f"{n} workers, median", "median of paired ratios", "calling thread, min",
           "calling thread serial (before the hand-out, after the join), min",
           "faults, 1 worker (median / max)", f"faults, {n} workers (median / max)",
           f"faults of the {n}-worker launches after the {WARM}th: sum (launches with > 100)"))
    for k in _kernels(args):
        for stats in (False, True):
            got = cpu_of_launches(k.launch, n, args.repeats, stats=stats)
            one, many = (np.array(got[w], dtype=float) for w in (1, n))
            print(f"| {k.name} | {k.threads:,} | {'on' if stats else 'off'} | {1e3 * one[:, 0].min():.1f} | "
                  f"{1e3 * np.median(one[:, 0]):.1f} | {1e3 * many[:, 0].min():.1f} | "
                  f"{1e3 * np.median(many[:, 0]):.1f} | {paired_ratio(many[:, 0], one[:, 0]):.3f} | "
                  f"{1e3 * many[:, 1].min():.1f} | {1e3 * many[:, 3].min():.2f} | "
                  f"{np.median(one[:, 2]):.0f} / {one[:, 2].max():.0f} | "
                  f"{np.median(many[:, 2]):.0f} / {many[:, 2].max():.0f} | "
                  f"{many[WARM:, 2].sum():.0f} ({int((many[WARM:, 2] > 100).sum())} of {len(many[WARM:])}) |")


def calls_per_launch(launch: Callable, nworkers: int, repeats: int, where: Callable | None = None,
                     **opt) -> tuple:
    """Python calls per launch at `nworkers` workers (after a warm launch):
    (on the calling thread, on the other threads), the mean of `repeats`
    launches, counted by a profile function on every thread (the pool's
    threads are started afresh so that they have it); `where(code)` picks
    the functions counted (default: all, and every call into C)."""
    launch(workers=nworkers, **opt)
    counts = [0, 0]
    me = threading.get_ident()

    def count(frame, event, arg):
        if event == "call" and (where is None or where(frame.f_code)) or event == "c_call" and where is None:
            counts[threading.get_ident() != me] += 1
    worker_threads.forget()              # (the old threads idle on; new ones are profiled)
    threading.setprofile(count)
    sys.setprofile(count)
    try:
        for _ in range(repeats):
            launch(workers=nworkers, **opt)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return counts[0] / repeats, counts[1] / repeats


def _calls_table(args) -> None:
    n = args.workers
    print(f"\nPython calls per launch (and calls into C), the mean of {args.repeats}: what the GIL "
          "serialises, counted exactly on a loaded machine")
    _head(("kernel", "threads", "counters", "1 worker", f"{n} workers, calling thread",
           f"{n} workers, other threads", f"{n} workers, all"))
    for k in _kernels(args):
        for stats in (False, True):
            one = calls_per_launch(k.launch, 1, args.repeats, stats=stats)
            mine, others = calls_per_launch(k.launch, n, args.repeats, stats=stats)
            print(f"| {k.name} | {k.threads:,} | {'on' if stats else 'off'} | {sum(one):.0f} | {mine:.0f} | "
                  f"{others:.0f} | {mine + others:.0f} |")


def speed_cell(launch: Callable, n: int, repeats: int, stats: bool) -> dict:
    """One cell of the speed table: `repeats` paired turns of a launch at 1
    and n workers beside the machine's ceiling in the same turns. Seconds
    (min and median per worker count), the median of paired ratios, the
    ceiling's, and its share."""
    for w in (1, n):
        launch(workers=w, stats=stats)
    ceiling = Ceiling(warm_seconds(lambda: launch(workers=1, stats=stats), CALIBRATION_RUNS), n)
    ts, cs = timed_turns(lambda w: launch(workers=w, stats=stats), ceiling.run, n, repeats)
    ours, top = paired_ratio(ts[1], ts[n]), paired_ratio(cs[1], cs[n])
    return {"min": {w: min(v) for w, v in ts.items()}, "median": {w: float(np.median(v)) for w, v in ts.items()},
            "paired": ours, "ceiling": top, "share": ours / top}


def _same_at(launch, get, want, name: str, n: int) -> str:
    """'identical' where a launch with every counter on gives the same output
    and counters at 1 and n workers (the output checked against numpy)."""
    runs = {}
    for w in (1, n):
        lau = launch(workers=w)
        assert np.array_equal(get(), want), f"{name}: wrong result with {w} workers"
        runs[w] = (lau.stats, lau.stats_by_line)
    return "identical" if runs[1] == runs[n] else "DIFFER"


def _speed_table(args) -> None:
    n = args.workers
    print(f"| kernel | threads | counters | 1 worker (s), min | {n} workers (s), min | speed-up | "
          f"1 worker, median | {n} workers, median | speed-up of medians | median of paired ratios | "
          f"machine's ceiling (numpy, paired) | of the ceiling | outputs and counters |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, blocks, tpb, launch, get, want in _kernels(args):
        threads = blocks * tpb
        same = _same_at(launch, get, want, name, n)
        for stats in (False, True):
            c = speed_cell(launch, n, args.repeats, stats)
            lo, med = c["min"], c["median"]
            print(f"| {name} | {threads:,} | {'on' if stats else 'off'} | {lo[1]:.4f} | {lo[n]:.4f} | "
                  f"{lo[1] / lo[n]:.2f}x | {med[1]:.4f} | {med[n]:.4f} | {med[1] / med[n]:.2f}x | "
                  f"{c['paired']:.2f}x | {c['ceiling']:.2f}x | {c['share']:.2f} | {same} |")


def _rounds_table(args) -> None:
    """--rounds R: the speed and steady measurements of every cell, R rounds
    in a row (a round measures every cell once), each round's figures, then
    per cell the least, median and largest over the rounds and in how many
    rounds the speed-up reached --target: how a machine's spells move the
    figures (a single run shows one spell)."""
    n, target = args.workers, args.target
    kernels = list(_kernels(args))
    cells = [(k, stats) for k in kernels for stats in (False, True)]
    for k in kernels:
        assert _same_at(k.launch, k.get, k.want, k.name, n) == "identical", f"{k.name}: counters differ"
    rounds = steady_rounds(args.repeats)
    got: dict = {}
    print(f"\nRounds: each measures every cell once, paired ({args.repeats} turns, beside the machine's "
          f"ceiling) then steady ({rounds} rounds of {STEADY_BLOCK} launches); outputs and counters "
          f"identical at 1 and {n} workers in every cell (checked once, before)")
    print("| round | kernel | counters | 1 worker, median (s) | paired | ceiling | of the ceiling | steady |")
    print("|---|---|---|---|---|---|---|---|")
    for r in range(args.rounds):
        for k, stats in cells:
            c = speed_cell(k.launch, n, args.repeats, stats)
            steady = steady_ratio(steady_cell(k.launch, n, rounds, stats), n)
            got.setdefault((k.name, stats), []).append((c["paired"], c["ceiling"], c["share"], steady))
            print(f"| {r + 1} | {k.name} | {'on' if stats else 'off'} | {c['median'][1]:.4f} | "
                  f"{c['paired']:.2f}x | {c['ceiling']:.2f}x | {c['share']:.2f} | {steady:.2f}x |", flush=True)
    print(f"\nOver {args.rounds} rounds: least / median / largest, and the rounds at {target}x or more")
    print("| kernel | counters | paired | rounds >= target | steady | rounds >= target | ceiling, median | "
          "of the ceiling, median |")
    print("|---|---|---|---|---|---|---|---|")
    for (name, stats), v in got.items():
        paired, ceiling, share, steady = (np.array(x) for x in zip(*v))

        def spread(a):
            return f"{a.min():.2f} / {np.median(a):.2f} / {a.max():.2f}x"
        print(f"| {name} | {'on' if stats else 'off'} | {spread(paired)} | {int((paired >= target).sum())} of "
              f"{len(v)} | {spread(steady)} | {int((steady >= target).sum())} of {len(v)} | "
              f"{np.median(ceiling):.2f}x | {np.median(share):.2f} |")


def steady_rounds(repeats: int) -> int:
    """Rounds of the steady state for --repeats (as many launches per worker count)."""
    return max(1, repeats // STEADY_BLOCK * 2)


def steady_cell(launch: Callable, n: int, rounds: int, stats: bool) -> dict:
    """One cell of the steady table: both worker counts warmed, then
    `rounds` rounds of steady_turns; {w: [[seconds] per round]}."""
    for w in (1, n):
        launch(workers=w, stats=stats)
    return steady_turns(lambda w: launch(workers=w, stats=stats), n, rounds)


def _steady_table(args) -> None:
    n = args.workers
    rounds = steady_rounds(args.repeats)
    print(f"\nSteady state: launches back to back, as a loop of launches runs them: each round "
          f"{STEADY_BLOCK} launches at 1 worker, then {STEADY_BLOCK} at {n}, the first {STEADY_SKIP} "
          f"of each block dropped (they follow the other count's launches); {rounds} rounds; per "
          f"round the ratio of the blocks' medians, and the median of those")
    print(f"| kernel | threads | counters | 1 worker (s), median | {n} workers (s), median | "
          f"median of the rounds' ratios |")
    print("|---|---|---|---|---|---|")
    for name, blocks, tpb, launch, get, want in _kernels(args):
        for stats in (False, True):
            got = steady_cell(launch, n, rounds, stats)
            med = {w: float(np.median([t for block in v for t in block])) for w, v in got.items()}
            print(f"| {name} | {blocks * tpb:,} | {'on' if stats else 'off'} | {med[1]:.4f} | "
                  f"{med[n]:.4f} | {steady_ratio(got, n):.2f}x |")


# Steady state, measured apart from the paired turns: there each N-worker launch
# follows a one-worker launch, and on our 2-core virtual machine a two-worker launch
# with counters that follows any 11 ms in which the other core ran none of the
# launch's threads took 5-18% longer than right after another (vecadd 1M: 7.22 ms
# against 6.13 median, one worker 2% longer). It stays with both threads pinned, with
# a busy loop keeping the pool's CPU from halting and with another run's launch in the
# gap: data left alone 11 ms falls out of a core's caches there whatever the core did
# (a numpy gather over 1.5 MB: 22% slower; arithmetic in cache: not), and two workers
# refill both cores in a 6 ms launch, one worker one core in 11 (README, stop 29).
STEADY_BLOCK = 5          # launches per block
STEADY_SKIP = 2           # of them dropped: the first follow the other worker count's


def steady_turns(launch: Callable[[int], object], n: int, rounds: int,
                 block: int = STEADY_BLOCK, skip: int = STEADY_SKIP) -> dict:
    """Seconds of `launch(w)` back to back: each round `block` launches at
    w = 1, then `block` at n, each block's first `skip` dropped:
    {w: [[seconds of a block's kept launches] per round]}."""
    got: dict = {1: [], n: []}
    for _ in range(rounds):
        for w in (1, n):
            times = []
            for _ in range(block):
                t0 = time.perf_counter()
                launch(w)
                times.append(time.perf_counter() - t0)
            got[w].append(times[skip:])
    return got


def steady_ratio(got: dict, n: int) -> float:
    """The median over rounds of the 1-worker block's median / the n-worker block's."""
    return float(np.median([np.median(a) / np.median(b) for a, b in zip(got[1], got[n])]))


CALIBRATION_RUNS = 5     # one-worker launches the ceiling's length is taken from (the least)


def warm_seconds(run: Callable[[], object], repeats: int) -> float:
    """The least wall time of `repeats` calls of `run`: a warm launch's, what
    the ceiling's numpy work is made as long as. Taken from one call, the
    third launch of a kernel (its second on one worker) was a cold one, 45 ms
    where a warm vecadd 1M takes 2.5 (the kept launch arms the launch gate,
    compiled then), so the ceiling's every turn ran 45 ms of numpy on one
    thread and 20 on two before gpuemu's launches, which then ran 17% (one
    worker) and 25% (two) slower: two workers' vecadd 1M without counters
    read 1.70-1.73x on our 2-core machine, 1.78-1.89x with warm numpy turns."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def timed_turns(launch: Callable[[int], object], ceiling: Callable[[int], None], n: int,
                repeats: int) -> tuple:
    """Seconds of `launch(w)` and of the machine's ceiling `ceiling(w)` at
    w = 1 and n, `repeats` turns: ({w: [s]}, {w: [s]})."""
    ts: dict = {1: [], n: []}
    cs: dict = {1: [], n: []}        # the machine's ceiling, numpy, in the same turns
    for _ in range(repeats):         # interleaved: a slower spell hits both
        # each N-thread run right after its own 1-thread run, gpuemu's and numpy's
        # alike, so that the other cores were idle as long before each. Run right
        # after the ceiling's 1-thread numpy, N workers paid for the other core's
        # idle spell: on our 2-core virtual machine two workers' vecadd 1M took a
        # median 2.0-2.1 ms there, 1.7-1.9 ms right after one worker's launch (and
        # 2.5-3.2 ms after 3 ms asleep: an idle virtual CPU comes back slowly)
        for run, out in ((launch, ts), (ceiling, cs)):
            for w in (1, n):
                t0 = time.perf_counter()
                run(w)
                out[w].append(time.perf_counter() - t0)
    return ts, cs


def paired_ratio(num: list, den: list) -> float:
    """The median of the pairs' ratios num[i] / den[i]: each pair ran back to
    back (interleaved), so a slow spell of the machine (another process, a
    busy memory bus) slows both of a pair and cancels out of its ratio,
    where the ratio of the two medians mixes pairs from different spells."""
    return float(np.median(np.asarray(num, dtype=float) / np.asarray(den, dtype=float)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vecadd", type=lambda v: [int(x) for x in v.split(",")], default=[1 << 20],
                    help="vecadd elements, or several sizes: 1048576,4194304")
    ap.add_argument("--transpose", type=int, default=1024, help="transpose side")
    ap.add_argument("--serial", action="store_true",
                    help="print only the serial share of one worker's launch and Amdahl's bound")
    ap.add_argument("--phases", action="store_true",
                    help="print only the time per phase (CPU and idle per thread) at 1 and N workers")
    ap.add_argument("--model", action="store_true",
                    help="print only the model of N workers' schedule from one worker's thread CPU")
    ap.add_argument("--cpu", action="store_true",
                    help="print only the CPU of all threads and the page faults per launch, 1 and N workers")
    ap.add_argument("--steady", action="store_true",
                    help="print only the steady state: blocks of launches back to back at 1 and N workers")
    ap.add_argument("--calls", action="store_true",
                    help="only the Python calls per launch, at 1 and N workers")
    ap.add_argument("--waits", action="store_true",
                    help="print only where each thread's time goes: native, Python, GIL waits (Linux)")
    ap.add_argument("--rounds", type=int, default=0,
                    help="print only R rounds of the paired and steady measurements of every cell, "
                         "then their spread and how many reached --target")
    ap.add_argument("--target", type=float, default=1.7, help="the speed-up --rounds counts rounds against")
    ap.add_argument("--switch-interval", type=float, default=None,
                    help="sys.setswitchinterval for the run, ms (Python's default: 5)")
    args = ap.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval / 1e3)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"cores allowed: {cores}; load average: {os.getloadavg()}")
    if args.rounds:
        _rounds_table(args)
        return
    if args.serial or args.phases or args.model or args.waits or args.cpu or args.calls or args.steady:
        if args.steady:
            _steady_table(args)
        if args.cpu:
            _cpu_table(args)
        if args.calls:
            _calls_table(args)
        if args.waits:
            _waits_table(args)
        if args.model:
            _model_table(args)
        if args.serial:
            _serial_table(args)
        if args.phases:
            _phase_table(args)
        return
    _speed_table(args)
    _steady_table(args)
    _serial_table(args)
    _phase_table(args)
    _model_table(args)
    if thread_waits.available():
        _waits_table(args)


if __name__ == "__main__":
    main()
