"""Check mode where message passing is heavy: every block writes one global
location, fences, adds to 256 bins with atomics (each a flag it publishes)
and reads them back (flags it reads), and every thread reads the location.
racecheck judges message passing per pair of accesses
(gpuemu/check/message_passing.py); this times the check at a few grid sizes.

Run: python benchmarks/bench_check_flags.py [--blocks 256,1024,4096]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpuemu  # noqa: E402

SRC = r"""
extern "C" __global__ void k(int* g, int* bins, int* out) {
    int t = threadIdx.x, b = blockIdx.x;
    if (t == 0) g[0] = b;
    __threadfence();
    atomicAdd(&bins[t], 1);
    int v = atomicAdd(&bins[(t + 1) % blockDim.x], 0);
    out[b * blockDim.x + t] = g[0] + v;
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", default="256,1024,4096")
    ap.add_argument("--threads", type=int, default=256)
    args = ap.parse_args()
    k = gpuemu.RawModule(code=SRC, arch="sm_90").get_function("k")
    nt = args.threads
    print("| blocks | threads | check mode (s) | race findings |")
    print("|---|---|---|---|")
    for nb in (int(b) for b in args.blocks.split(",")):
        g, bins, out = np.zeros(1, np.int32), np.zeros(nt, np.int32), np.zeros(nb * nt, np.int32)
        t0 = time.perf_counter()
        la = k((nb,), (nt,), (g, bins, out), check=True, stats=False)
        dt = time.perf_counter() - t0
        races = sorted({(f.line, f.other_line) for f in la.findings if f.kind == "race"})
        print(f"| {nb:,} | {nt} | {dt:.2f} | {races} |")


if __name__ == "__main__":
    main()
