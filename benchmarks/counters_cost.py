"""What counters cost: compare.py's kernels launched with every counter on
and off, in CPU time.

    python benchmarks/counters_cost.py [--quick] [--kernels K,..] [--repeats N] [--size N]

Functional mode, compare.py's kernels, inputs and launch shapes (--quick:
its quick sizes); each launch is timed with the process's CPU time
(time.process_time, so the numbers hold on a shared machine; the warm-up
launch compiles), minimum of --repeats (default 3), results checked
against numpy. Printed per kernel: seconds on, seconds off, on / off and
the overhead (on - off). Issue 6 asks counters on within about 1.4x of
off for matmul 512x512 (1,000x Numba's simulator per thread).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def cpu_seconds(bench, k, inp: dict, stats: bool, repeats: int) -> float:
    """Minimum CPU seconds of `repeats` launches (outputs fresh, result checked)."""
    import gpuemu
    dev = {n: gpuemu.asarray(v) for n, v in inp.items() if not n.startswith("_") and hasattr(v, "dtype")}
    for n, v in inp.items():
        dev.setdefault(n, v)
    grid, block = bench.shape(inp)
    best = None
    for _ in range(repeats):
        out = {n: gpuemu.asarray(v) for n, v in bench.outputs(inp).items()}
        args = bench.args(dev, out)
        t0 = time.process_time()
        k(grid, block, args, stats=stats)
        dt = time.process_time() - t0
        bench.check(bench.result(out), inp, f"stats={stats}")
        best = dt if best is None else min(best, dt)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="compare.py's quick sizes")
    ap.add_argument("--size", type=int, default=0, help="one size for every kernel (a test's small launch)")
    ap.add_argument("--kernels", default="matmul", help="comma-separated (default: matmul; 'all')")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    import compare
    names = list(compare.BENCHES) if a.kernels == "all" else a.kernels.split(",")
    print(f"{'kernel':14s} {'size':>8s} {'on s':>8s} {'off s':>8s} {'on/off':>7s} {'overhead s':>10s}")
    for name in names:
        bench = compare.BENCHES[name]
        size = a.size or (bench.quick if a.quick else bench.full)
        k, _, _ = compare.compile_kernel(bench)
        inp = bench.make_inputs(size)
        t = {}
        for stats in (True, False):
            cpu_seconds(bench, k, inp, stats, 1)          # warm: compile, lazy set-up
            t[stats] = cpu_seconds(bench, k, inp, stats, a.repeats)
        print(f"{name:14s} {size:>8d} {t[True]:8.4f} {t[False]:8.4f} {t[True] / max(t[False], 1e-9):6.2f}x"
              f" {t[True] - t[False]:10.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
