"""Blocks on parallel workers: one worker against N on vecadd and the tiled
transpose (issue 6, item 4), results and counters compared.

Run it on an otherwise idle machine, pinned to the cores it may use:

    taskset -c 0,1 python benchmarks/bench_workers.py --workers 2

Each launch is warm (compiled and run once first); seconds are the minimum
of --repeats runs, counters off (`stats=False`, the fast path). Before
timing, each kernel runs once with every counter on at 1 and at N workers
and the outputs and counters must be identical.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import gpuemu  # noqa: E402


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vecadd", type=int, default=1 << 22, help="vecadd elements")
    ap.add_argument("--transpose", type=int, default=1024, help="transpose side")
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"cores allowed: {cores}; load average: {os.getloadavg()}")
    print(f"| kernel | threads | 1 worker (s) | {args.workers} workers (s) | speed-up | "
          f"outputs and counters |")
    print("|---|---|---|---|---|---|")
    for name, make, size in (("vecadd", _vecadd, args.vecadd),
                             ("transpose", _transpose, args.transpose)):
        launch, get, want = make(size)
        runs = {}
        for w in (1, args.workers):
            st = launch(workers=w).stats
            assert np.array_equal(get(), want), f"{name}: wrong result with {w} workers"
            runs[w] = dict(st.items()) if hasattr(st, "items") else st
        same = "identical" if runs[1] == runs[args.workers] else "DIFFER"
        best = {}
        for w in (1, args.workers):
            launch(workers=w, stats=False)
            ts = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                launch(workers=w, stats=False)
                ts.append(time.perf_counter() - t0)
            best[w] = min(ts)
        threads = size if name == "vecadd" else size * size
        print(f"| {name} | {threads:,} | {best[1]:.4f} | {best[args.workers]:.4f} | "
              f"{best[1] / best[args.workers]:.2f}x | {same} |")


if __name__ == "__main__":
    main()
