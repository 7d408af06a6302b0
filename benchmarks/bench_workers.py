"""Blocks on parallel workers: one worker against N on vecadd and the tiled
transpose (issue 6, item 4), results and counters compared.

Run it on an otherwise idle machine, pinned to the cores it may use:

    taskset -c 0,1 python benchmarks/bench_workers.py --workers 2

Each launch is warm (compiled and run once first); seconds are the minimum
of --repeats runs, counters off (`stats=False`, the fast path) and on (the
default). Before timing, each kernel runs once with every counter on at 1
and at N workers and the outputs and counters must be identical.

`--serial` measures instead, on one worker, what limits N workers on any
machine, loaded or not: the share s of a launch's CPU time spent outside
what the workers run in parallel, and Amdahl's bound on the speed-up,
1 / (s + (1 - s) / N). Two shares: outside the native block loops (which
release the GIL), and outside them and the memory model's prepare step
(counters on: numpy on each worker's own trace, which releases the GIL
inside array operations but not between them; the truth lies between):

    python benchmarks/bench_workers.py --serial
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import gpuemu  # noqa: E402
from gpuemu.machine import block_runner  # noqa: E402
from gpuemu.machine.executor import LaunchRun  # noqa: E402


def _vecadd(n: int):
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    k = gpuemu.RawModule(path=str(ROOT / "programs" / "vecadd.cu")).get_function("vecadd")
    x, y, c = gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.zeros(n, dtype=np.float32)

    def launch(**opt):
        return k(((n + 255) // 256,), (256,), (x, y, c, np.int32(n)), **opt)
    return launch, lambda: c.get(), a + b


def _transpose(n: int):
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    k = gpuemu.RawModule(path=str(ROOT / "programs" / "transpose_tiled33.cu")).get_function(
        "transpose_tiled33")
    x, y = gpuemu.asarray(a), gpuemu.zeros((n, n), dtype=np.float32)

    def launch(**opt):
        return k((n // 32, n // 32), (32, 8), (y, x, np.int32(n)), **opt)
    return launch, lambda: y.get(), a.T


def _kernels(args):
    """(name, threads, launch, output getter, expected output) of each kernel."""
    yield ("vecadd", args.vecadd, *_vecadd(args.vecadd))
    yield ("transpose", args.transpose ** 2, *_transpose(args.transpose))


@contextmanager
def _parallel_clock():
    """Sum the thread CPU time a launch spends in what block workers run in
    parallel: [inside the block loops' native calls (GIL-free), inside
    LaunchRun._prepare_records, the memory model's prepare step (numpy; the
    GIL is held between its array operations)]."""
    spent = [0.0, 0.0]

    def timing(fn, slot):
        def call(*args, **kw):
            t0 = time.thread_time()
            try:
                return fn(*args, **kw)
            finally:
                spent[slot] += time.thread_time() - t0
        return call

    patches = [(block_runner, n, lambda get: (lambda: timing(get(), 0)))
               for n in ("_function", "_range_function", "_batch_function")
               if hasattr(block_runner, n)]
    if hasattr(LaunchRun, "_prepare_records"):
        patches.append((LaunchRun, "_prepare_records", lambda f: timing(f, 1)))
    saved = [getattr(owner, n) for owner, n, _ in patches]
    for (owner, n, wrap), old in zip(patches, saved):
        setattr(owner, n, wrap(old))
    try:
        yield spent
    finally:
        for (owner, n, _), old in zip(patches, saved):
            setattr(owner, n, old)


def serial_fraction(launch, repeats: int, **opt) -> tuple:
    """(CPU seconds of a one-worker launch, share outside the native block
    loops, share outside them and the memory model's prepare step), the run
    with the least CPU time of `repeats`."""
    launch(workers=1, **opt)
    best = None
    for _ in range(repeats):
        with _parallel_clock() as spent:
            t0 = time.thread_time()
            launch(workers=1, **opt)
            t = time.thread_time() - t0
        if best is None or t < best[0]:
            best = (t, max(t - spent[0], 0.0) / t, max(t - spent[0] - spent[1], 0.0) / t)
    return best


def _serial_table(args) -> None:
    n = args.workers

    def bound(s):
        return f"{1 / (s + (1 - s) / n):.2f}x"
    print(f"| kernel | threads | counters | CPU s (1 worker) | s: all but native loops | "
          f"bound, {n} workers | s: all but native loops and prepare | bound, {n} workers |")
    print("|---|---|---|---|---|---|---|---|")
    for name, threads, launch, _, _ in _kernels(args):
        for stats in (False, True):
            t, s_native, s_prepared = serial_fraction(launch, args.repeats, stats=stats)
            print(f"| {name} | {threads:,} | {'on' if stats else 'off'} | {t:.4f} | "
                  f"{s_native:.3f} | {bound(s_native)} | {s_prepared:.3f} | {bound(s_prepared)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vecadd", type=int, default=1 << 20, help="vecadd elements")
    ap.add_argument("--transpose", type=int, default=1024, help="transpose side")
    ap.add_argument("--serial", action="store_true",
                    help="print the serial share of one worker's launch and Amdahl's bound")
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"cores allowed: {cores}; load average: {os.getloadavg()}")
    if args.serial:
        _serial_table(args)
        return
    print(f"| kernel | threads | counters | 1 worker (s) | {args.workers} workers (s) | speed-up | "
          f"outputs and counters |")
    print("|---|---|---|---|---|---|---|")
    for name, threads, launch, get, want in _kernels(args):
        runs = {}
        for w in (1, args.workers):
            lau = launch(workers=w)
            assert np.array_equal(get(), want), f"{name}: wrong result with {w} workers"
            runs[w] = (lau.stats, lau.stats_by_line)
        same = "identical" if runs[1] == runs[args.workers] else "DIFFER"
        for stats in (False, True):
            best = {}
            for w in (1, args.workers):
                launch(workers=w, stats=stats)
                ts = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    launch(workers=w, stats=stats)
                    ts.append(time.perf_counter() - t0)
                best[w] = min(ts)
            print(f"| {name} | {threads:,} | {'on' if stats else 'off'} | {best[1]:.4f} | "
                  f"{best[args.workers]:.4f} | {best[1] / best[args.workers]:.2f}x | {same} |")


if __name__ == "__main__":
    main()
