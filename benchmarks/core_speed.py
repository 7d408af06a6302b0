"""How steady the machine's cores are: a fixed loop's rate per core, over time.

    python benchmarks/core_speed.py --cores 12,13 --seconds 60

A speed-up measured from wall times (benchmarks/bench_workers.py, scale.py)
means something only where a core runs the same work at the same speed from
one second to the next. On a virtual machine it may not: the host's other
guests, its turbo and its power states make a vCPU faster or slower for
seconds at a time, while /proc/stat shows no steal. This runs one fixed
loop (numpy's sin over 4096 floats, no memory traffic beyond L1) in slices
of --slice seconds, on each core alone in turn and then on all of them at
once, and prints each slice's rate: the spread of one core's rates is what
any wall-time ratio on that core can be trusted to, and the rate of the
cores running together against alone shows whether they share a physical
core (hyperthreads: about 0.6) or not (about 1.0).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from multiprocessing import get_context


def rate(seconds: float) -> float:
    """Loops per second of the fixed loop for `seconds`."""
    import numpy as np
    a = np.random.default_rng(0).random(4096)
    n, t0 = 0, time.perf_counter()
    while True:
        for _ in range(64):
            np.sin(a)
        n += 64
        t = time.perf_counter() - t0
        if t >= seconds:
            return n / t


def _on_core(args: tuple) -> float:
    core, seconds = args
    os.sched_setaffinity(0, {core})
    return rate(seconds)


def spread(rates: list) -> dict:
    """min, median, max of a core's slice rates and max / min."""
    return {"min": min(rates), "median": statistics.median(rates), "max": max(rates),
            "max_over_min": max(rates) / min(rates)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", default=None,
                    help="comma-separated cores (default: the two last this process may use)")
    ap.add_argument("--seconds", type=float, default=30.0, help="total time (default 30)")
    ap.add_argument("--slice", type=float, default=0.5, help="one measurement (default 0.5 s)")
    ap.add_argument("--json", metavar="FILE", help="also write the rates as JSON")
    a = ap.parse_args(argv)
    cores = ([int(c) for c in a.cores.split(",")] if a.cores
             else sorted(os.sched_getaffinity(0))[-2:])
    alone: dict = {c: [] for c in cores}
    together: dict = {c: [] for c in cores}
    t_end = time.perf_counter() + a.seconds
    with get_context("spawn").Pool(len(cores)) as pool:
        while time.perf_counter() < t_end:
            for c in cores:                           # each alone, in turn
                alone[c].append(pool.map(_on_core, [(c, a.slice)])[0])
            for c, r in zip(cores, pool.map(_on_core, [(c, a.slice) for c in cores])):
                together[c].append(r)
    print(f"fixed loop (np.sin over 4096 floats), loops per second in slices of {a.slice} s, "
          f"{len(alone[cores[0]])} slices per core")
    print("| core | alone: min | median | max | max / min | together: median | together / alone |")
    print("|---|---|---|---|---|---|---|")
    for c in cores:
        s = spread(alone[c])
        tm = statistics.median(together[c])
        print(f"| {c} | {s['min']:.0f} | {s['median']:.0f} | {s['max']:.0f} | {s['max_over_min']:.2f} | "
              f"{tm:.0f} | {tm / s['median']:.2f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cores": cores, "slice": a.slice, "alone": alone, "together": together}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
