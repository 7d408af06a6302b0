"""Two block workers against one, per placement of their working state:
does a page shared by the two threads' state slow them down?

Each placement is a fresh vecadd 1M module (its own LaunchRun and worker
copy, made where the heap has room at that moment) launched without
counters at 1 and 2 workers in paired turns, twice, the placements taking
turns so that a slow spell of the machine slows all of them alike. For
each it prints the paired ratios and whether the run's warp frames and its
worker copy's share a 4 KB page (they are made one after the other).
`--lines` allocates the working state as before gpuemu/machine/cache_lines.py
put it on pages of its own: on lines of their own only.

    taskset -c 0,1 python benchmarks/page_sharing.py --placements 6 [--lines]

Run it a few times: the heap differs from process to process.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpuemu  # noqa: E402
from gpuemu import aligned_memory  # noqa: E402
from gpuemu.machine import cache_lines, worker_copy  # noqa: E402

def _runs() -> dict:
    return {id(o): o for o in gc.get_objects() if type(o).__name__ == "LaunchRun"}


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--placements", type=int, default=6)
    ap.add_argument("--turns", type=int, default=40, help="paired turns per measurement")
    ap.add_argument("--threads", type=int, default=1 << 20, help="vecadd's threads (a multiple of 256)")
    ap.add_argument("--lines", action="store_true",
                    help="working state on lines of its own only (the rule before pages)")
    args = ap.parse_args(argv)
    zeros = cache_lines.zeros
    if args.lines:
        cache_lines.zeros = lambda shape, dtype: aligned_memory.zeros(shape, dtype, cache_lines.LINE, pad=True)
    try:
        _measure(args)
    finally:
        cache_lines.zeros = zeros
    return 0


def _measure(args) -> None:
    import bench_workers as bw
    t = bw._transpose(1024)                  # as bench_workers: the heap the launches see there
    bw._same_at(t.launch, t.get, t.want, t.name, 2)
    n = args.threads
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    x, y, c = gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.zeros(n, dtype=np.float32)
    path = str(Path(__file__).resolve().parents[1] / "programs" / "vecadd.cu")

    def launcher(k):
        return lambda w: k((n // 256,), (256,), (x, y, c, np.int32(n)), workers=w, stats=False)

    placements = []
    for i in range(args.placements):
        before = _runs()
        k = gpuemu.RawModule(path=path).get_function("vecadd")     # a kernel of its own: its own runs
        launch = launcher(k)
        launch(1)
        launch(2)
        assert np.array_equal(c.get(), a + b)
        run = next(r for j, r in _runs().items() if j not in before and r.__dict__.get(worker_copy.KEPT))
        copy = run.__dict__[worker_copy.KEPT][0].run
        placements.append((launch, bool(set(cache_lines.pages(run.frames)) & set(cache_lines.pages(copy.frames))), []))

    for _ in range(2):
        for launch, _, got in placements:
            ts = []
            for _ in range(args.turns):
                t0 = time.perf_counter()
                launch(1)
                t1 = time.perf_counter()
                launch(2)
                ts.append((t1 - t0, time.perf_counter() - t1))
            got.append((statistics.median(o / w for o, w in ts), statistics.median(o for o, _ in ts),
                        statistics.median(w for _, w in ts)))
    rule = "lines of their own only" if args.lines else "pages of their own"
    print(f"vecadd {n:,} threads, counters off, {args.turns} paired turns a measurement; working state on {rule}")
    print("| placement | frames share a page | paired, first | paired, second | 1 worker (ms) | 2 workers (ms) |")
    print("|---|---|---|---|---|---|")
    for i, (_, shared, got) in enumerate(placements):
        print(f"| {i} | {'yes' if shared else 'no'} | {got[0][0]:.2f}x | {got[1][0]:.2f}x | "
              f"{1e3 * got[1][1]:.2f} | {1e3 * got[1][2]:.2f} |")
    for shared in (True, False):
        rs = [min(g[0][0], g[1][0]) for _, s, g in placements if s == shared]
        if rs:
            print(f"frames {'in one page' if shared else 'apart'}: {len(rs)} placements, "
                  f"{sum(r >= 1.7 for r in rs)} at 1.7x or more (the lower of the two), "
                  f"{min(rs):.2f}-{max(rs):.2f}x")


if __name__ == "__main__":
    sys.exit(main())
