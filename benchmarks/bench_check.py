"""Check mode against functional mode on the 1024x1024 tiled transpose.

Functional mode: stats=False (no trace). Check mode: check=True (racecheck,
initcheck, synccheck, memcheck; stats off). The issue's budget: check mode at
most 10x functional. Run: python benchmarks/bench_check.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import gpuemu  # noqa: E402

SRC = (Path(__file__).resolve().parents[1] / "programs" / "transpose_tiled33.cu").read_text()


def best_of(fn, repeat: int = 3) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main() -> None:
    n = 1024
    k = gpuemu.RawModule(code=SRC, arch="sm_90").get_function("transpose_tiled33")
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    x = gpuemu.asarray(a)
    y = gpuemu.empty((n, n), dtype=np.float32)
    shape = ((n // 32, n // 32), (32, 8))
    k(*shape, (y, x, np.int32(n)), stats=False)           # warm the JIT cache
    found = []

    def functional():
        k(*shape, (y, x, np.int32(n)), stats=False)

    def checked():
        found[:] = k(*shape, (y, x, np.int32(n)), stats=False, check=True).findings

    def counters():
        k(*shape, (y, x, np.int32(n)))

    tf, tc, ts = best_of(functional), best_of(checked), best_of(counters)
    assert np.array_equal(y.get(), a.T) and not found, (found[:3], "wrong result or findings")
    print(f"functional (stats=False): {tf:.3f} s")
    print(f"counters   (stats=True):  {ts:.3f} s  ({ts / tf:.1f}x functional)")
    print(f"check=True (stats=False): {tc:.3f} s  ({tc / tf:.1f}x functional; budget 10x)")


if __name__ == "__main__":
    main()
