"""Timing-mode speed on the 1024x1024 tiled transpose (grid (32,32), block
(32,8), tile[32][33]): thread-instructions per second of the whole launch
(functional run with counters, recording, and the cycle-level replay),
per warp scheduling policy. Goal: at least 10 million per second on one core.
The launch runs on one thread; besides wall-clock seconds it prints the
process's CPU seconds (time.process_time), the one-core figure when other
work shares the machine.

    python benchmarks/bench_timing.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpuemu  # noqa: E402

SRC = (Path(__file__).resolve().parents[1] / "programs" / "transpose_tiled33.cu").read_text()


def main() -> None:
    n = 1024
    k = gpuemu.RawModule(code=SRC, arch="sm_90").get_function("transpose_tiled33")
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    x, y = gpuemu.asarray(a), gpuemu.zeros((n, n), dtype=np.float32)
    for policy in ("gto", "lrr", "two_level", "random"):
        t0, c0 = time.perf_counter(), time.process_time()
        launch = k((n // 32, n // 32), (32, 8), (y, x, np.int32(n)), mode="timing", scheduler=policy)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert np.array_equal(y.get(), a.T), "wrong result"
        ti = launch.stats["thread_instructions"]
        print(f"{policy:10s} wall {dt:.2f} s ({ti / dt / 1e6:.1f} M thread-instructions/s)  "
              f"cpu {cpu:.2f} s ({ti / cpu / 1e6:.1f} M/s)  {launch.timing.cycles} cycles")


if __name__ == "__main__":
    main()
