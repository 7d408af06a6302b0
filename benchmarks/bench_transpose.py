"""The 1024x1024 tiled transpose (grid (32,32), block (32,8), tile[32][33]).

Prints compile seconds, run seconds (with every counter on and with stats
off) and thread-instructions per second. Run: python benchmarks/bench_transpose.py
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
    t0 = time.perf_counter()
    mod = gpuemu.RawModule(code=SRC, arch="sm_90")
    k = mod.get_function("transpose_tiled33")
    t_compile = time.perf_counter() - t0
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    x = gpuemu.asarray(a)
    y = gpuemu.zeros((n, n), dtype=np.float32)
    for stats in (True, False):
        t0 = time.perf_counter()
        launch = k((n // 32, n // 32), (32, 8), (y, x, np.int32(n)), stats=stats)
        dt = time.perf_counter() - t0
        assert np.array_equal(y.get(), a.T), "wrong result"
        if stats:
            ti = launch.stats["thread_instructions"]
        print(f"stats={stats}: {dt:.3f} s, {ti / dt / 1e6:.1f} M thread-instructions/s")
        if stats:
            s = launch.stats
            print("  counters:", {c: s[c] for c in ("warp_instructions", "thread_instructions",
                                                   "shared_load_requests", "shared_load_wavefronts",
                                                   "global_load_requests", "global_load_sectors",
                                                   "global_store_sectors")})
    print(f"compile (front end + JIT, {k.compiled.from_cache}): {t_compile:.3f} s")


if __name__ == "__main__":
    main()
