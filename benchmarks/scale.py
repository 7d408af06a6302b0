"""Scale: vecadd from 1K to 16M threads (issue 6, item 3).

    python benchmarks/scale.py [--max 16M] [--stats] [--workers N] [--rounds R] [--json FILE]

For each size (1K, 4K, ..., 16M threads, blocks of 256) it launches
programs/vecadd.cu warm (two untimed launches of each size first: a new
shape's first launch sets up its run, the second is its first kept one) and reports seconds (the minimum over
--rounds rounds, default 10, of 20 runs each up to 64K, 3 below 4M, 2 from
4M up: a small launch is cheap, and its minimum needs more tries on a busy
machine), microseconds per launch, seconds per thread, that over the best
per-thread time of the sweep (the target: within 2x at every size),
and the emulator's memory beyond the arrays: the peak of numpy/Python
allocations during one more launch (tracemalloc, which numpy reports to;
not timed) over what was allocated before it (the host and device arrays), and the growth
of the process's peak RSS over the size's first launches. Pinned to one CPU unless --workers > 1.

A round times every size once, smallest first, so that each size is timed
in every spell of the machine's speed: on a virtual machine whose cores
run faster or slower for seconds at a time, sizes timed one after another
would each see one spell, and the ratio to the best size would measure the
spells as much as the emulator. A small size's turn in a round is a few
milliseconds, one sample of the spells; with 5 rounds, one lent process in
six saw 1K only in slow ones (its best size at 3.3 ns a thread, its 1K
launch as slow as in processes whose best was 5.0 ns), hence 10.
`--cpu-time`: per-thread times from the launching thread's CPU time (on a
machine shared with other work, wall time measures the others too).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def _label(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"


class Size:
    """One size's arrays, launch arguments and the times taken so far."""

    def __init__(self, k, n: int, stats: bool, workers: int) -> None:
        import numpy as np
        import gpuemu
        rng = np.random.default_rng(1)
        self.n = n
        self.a, self.b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        self.dc = gpuemu.asarray(np.zeros_like(self.a))
        self.args = (gpuemu.asarray(self.a), gpuemu.asarray(self.b), self.dc, np.int32(n))
        self.grid = ((n + 255) // 256,)
        self.times: list = []
        self.cpus: list = []
        # the launch, bound (functools.partial: the timed window holds no harness lookups)
        self.launch = functools.partial(k, self.grid, (256,), self.args, stats=stats, workers=workers)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.launch()                    # warm: a new shape's first launch sets up its run
        self.launch()                    # (and the first kept one: the RSS growth of both)
        self.rss_growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024

    def time(self, repeats: int) -> None:
        """`repeats` timed launches. The wall clock is read inside the thread
        CPU clock's reads, so that neither clock counts toward a launch:
        reading a thread's CPU time is a system call, 0.36 us on ours (a tenth
        of a 1K launch), that sat inside the wall time before."""
        launch, wall, cpu = self.launch, time.perf_counter, time.thread_time
        for _ in range(repeats):
            c0 = cpu()
            t0 = wall()
            launch()
            t1 = wall()
            c1 = cpu()
            self.times.append(t1 - t0)
            self.cpus.append(c1 - c0)

    def row(self) -> dict:
        """The size's row: its least times, and the memory of one more launch."""
        import numpy as np
        tracemalloc.start()              # one more run for the memory (tracing slows it)
        base = tracemalloc.get_traced_memory()[0]
        self.launch()
        extra = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        assert np.array_equal(self.dc.get(), self.a + self.b), "wrong result"
        n, t = self.n, min(self.times)
        return {"threads": n, "label": _label(n), "seconds": t, "seconds_per_thread": t / n,
                "cpu_seconds": min(self.cpus), "cpu_per_thread": min(self.cpus) / n,
                "emulator_bytes": extra, "rss_growth_bytes": self.rss_growth,
                "array_bytes": 3 * self.a.nbytes * 2}


def repeats_of(n: int) -> int:
    """Timed launches of a size per round."""
    return 20 if n <= 1 << 16 else 3 if n < 1 << 22 else 2


def measure(k, n: int, stats: bool, workers: int, repeats: int) -> dict:
    """One size alone: its first launches, `repeats` timed ones, its row."""
    size = Size(k, n, stats, workers)
    size.time(repeats)
    return size.row()


def sweep(k, sizes: list, stats: bool, workers: int, rounds: int) -> list:
    """The rows of `sizes`, each timed in `rounds` rounds over all of them."""
    got = [Size(k, n, stats, workers) for n in sizes]
    for r in range(rounds):
        for size in got:
            size.time(repeats_of(size.n))
    return [size.row() for size in got]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", default="16M", help="largest thread count (default 16M)")
    ap.add_argument("--stats", action="store_true", help="counters on (default: off, results only)")
    ap.add_argument("--workers", type=int, default=1, help="block workers (default 1)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="per-thread times from the launching thread's CPU time, not wall "
                         "time (steadier on a loaded machine; one worker)")
    ap.add_argument("--rounds", type=int, default=10,
                    help="rounds over all sizes (default 10); a size's time is its least")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    a = ap.parse_args(argv)
    if a.workers == 1:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[-1]})
    sys.path.insert(0, str(REPO))
    import gpuemu
    k = gpuemu.RawModule(path=str(REPO / "programs" / "vecadd.cu")).get_function("vecadd")
    measure(k, 1 << 12, a.stats, a.workers, 1)                       # warm
    sizes = []
    n = 1 << 10
    while n <= _size(a.max):
        sizes.append(n)
        n <<= 2
    rows = sweep(k, sizes, a.stats, a.workers, a.rounds)
    key = "cpu_per_thread" if a.cpu_time else "seconds_per_thread"
    best = min(r[key] for r in rows)
    print(f"vecadd scale, stats {'on' if a.stats else 'off'}, workers {a.workers}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'threads':>8} {'seconds':>9} {'cpu s':>8} {'us/launch':>10} {'ns/thread':>10} "
          f"{'vs best':>8} {'emulator MB':>12} {'RSS growth MB':>14}")
    for r in rows:
        r["vs_best"] = r[key] / best
        print(f"{r['label']:>8} {r['seconds']:9.4f} {r['cpu_seconds']:8.4f} "
              f"{r[key] * r['threads'] * 1e6:10.1f} {r[key] * 1e9:10.1f} "
              f"{r['vs_best']:7.2f}x {r['emulator_bytes'] / 2**20:12.1f} "
              f"{r['rss_growth_bytes'] / 2**20:14.1f}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
