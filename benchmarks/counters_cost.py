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

`--processes N` runs the whole measurement in N fresh processes one after
the other and prints each process's rows, then per kernel the least and
the median over the processes: a launch's time can settle at a different
level in each process (matmul 512x512 on an idle core: counters off
0.51-0.93 s), and the minimum within one process does not show it.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))    # this checkout's gpuemu, as compare.py's main


def cpu_seconds(bench, k, inp: dict, stats: bool, repeats: int) -> float:
    """Minimum CPU seconds of `repeats` launches (compare.gpuemu_launch: outputs fresh,
    result checked)."""
    import compare
    return min(compare.gpuemu_launch(bench, k, inp, stats, repeats, clock=time.process_time)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="compare.py's quick sizes")
    ap.add_argument("--size", type=int, default=0, help="one size for every kernel (a test's small launch)")
    ap.add_argument("--kernels", default="matmul", help="comma-separated (default: matmul; 'all')")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--processes", type=int, default=1,
                    help="run it in N fresh processes, then the least and median per kernel")
    a = ap.parse_args(argv)
    if a.processes > 1:
        return per_process(a, list(sys.argv[1:] if argv is None else argv))
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


def per_process(a, argv: list) -> int:
    """Rerun this script with ARGV in `a.processes` fresh processes; print every row,
    then per kernel the least and median of on and off."""
    cmd = [sys.executable, __file__, *argv, "--processes", "1"]     # the last one counts
    rows: dict = {}
    for i in range(a.processes):
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
        if i == 0:
            print("process " + out[0])
        for line in out[1:]:
            print(f"{i + 1:>7d} {line}", flush=True)
            f = line.split()
            rows.setdefault((f[0], f[1]), []).append((float(f[2]), float(f[3])))
    print(f"{'kernel':14s} {'size':>8s} {'on least':>9s} {'on median':>9s} {'off least':>9s} {'off median':>10s}")
    for (name, size), ts in rows.items():
        on, off = [t[0] for t in ts], [t[1] for t in ts]
        print(f"{name:14s} {size:>8s} {min(on):9.4f} {statistics.median(on):9.4f} "
              f"{min(off):9.4f} {statistics.median(off):10.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
