"""The counters-on memory model alone: compare.py's kernels' trace batches
replayed through MemorySystem, native passes against the numpy path.

    python benchmarks/memory_model.py [--quick] [--kernels K,..] [--repeats N] [--no-numpy]

Each kernel is launched once with counters on while its trace batches are
recorded (every request traced: the launch counts no shared request in its
warps, MemorySystem.count_shared_in_warps = False, so the replay charges
what a timing-mode launch would; compare.py measures whole launches); then
a fresh MemorySystem charges them, in order, --repeats times
(default 5) with the native passes (MemorySystem.native = True) and with the
numpy path (False, the reference they are tested against). Printed: requests,
batches, the minimum CPU seconds of this thread per replay and ns per request,
and the speed-up; every counter of the two paths is checked equal. CPU time,
so the numbers hold on a shared machine. Sizes as compare.py (--quick: its
quick sizes).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def record(bench, size: int) -> list:
    """(batch, instrs, preset) of every batch one counters-on launch charges."""
    import numpy as np
    import compare
    from gpuemu.memory import memory_system as msm
    from gpuemu.memory.trace import AccessBatch
    got = []
    prepare = msm.MemorySystem.prepare

    def keep(self, batch, instrs):
        got.append((AccessBatch(*(np.array(getattr(batch, f)) for f in
                                  ("instr", "mask", "addr", "space", "sm", "block", "warp"))),
                    instrs, self.preset))
        return prepare(self, batch, instrs)

    from gpuemu.memory.native_batch import NativeBatch
    k, _, _ = compare.compile_kernel(bench)
    msm.MemorySystem.prepare = keep
    in_warps, msm.MemorySystem.count_shared_in_warps = msm.MemorySystem.count_shared_in_warps, False
    charge, NativeBatch.charge = NativeBatch.charge, lambda self, records, at=None: False   # every batch prepared
    try:
        compare.gpuemu_launch(bench, k, bench.make_inputs(size), True, 1)
    finally:
        msm.MemorySystem.prepare = prepare
        msm.MemorySystem.count_shared_in_warps = in_warps
        NativeBatch.charge = charge
    return got


def replay(batches: list, native: bool, repeats: int) -> tuple:
    """(minimum CPU seconds of a replay, the last replay's counters and lines)."""
    from gpuemu.memory.memory_system import MemorySystem
    from gpuemu.stats import Stats
    best, st = None, None
    for _ in range(repeats):
        ms = MemorySystem(batches[0][2])
        ms.native = native
        st = Stats()
        t0 = time.thread_time()
        for batch, instrs, _ in batches:
            ms.charge(batch, instrs, st)
        st.totals
        dt = time.thread_time() - t0
        best = dt if best is None else min(best, dt)
    return best, (st.as_dict(), st.lines_dict())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="compare.py's quick sizes")
    ap.add_argument("--size", type=int, default=0, help="one size for every kernel (a test's small launch)")
    ap.add_argument("--kernels", default="", help="comma-separated (default: all of compare.py's)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-numpy", action="store_true", help="time the native passes only")
    a = ap.parse_args(argv)
    import compare
    names = a.kernels.split(",") if a.kernels else list(compare.BENCHES)
    print(f"{'kernel':14s} {'size':>8s} {'requests':>9s} {'batches':>7s} {'native s':>9s} {'ns/req':>7s}"
          f" {'numpy s':>8s} {'ns/req':>7s} {'speed-up':>8s}")
    for name in names:
        bench = compare.BENCHES[name]
        size = a.size or (bench.quick if a.quick else bench.full)
        batches = record(bench, size)
        nreq = sum(len(b) for b, _, _ in batches)
        t_nat, c_nat = replay(batches, True, a.repeats)
        row = f"{name:14s} {size:>8d} {nreq:>9d} {len(batches):>7d} {t_nat:9.4f} {t_nat / nreq * 1e9:7.0f}"
        if not a.no_numpy:
            t_np, c_np = replay(batches, False, a.repeats)
            assert c_np == c_nat, f"{name}: the native passes and the numpy path count differently"
            row += f" {t_np:8.4f} {t_np / nreq * 1e9:7.0f} {t_np / t_nat:7.1f}x"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
