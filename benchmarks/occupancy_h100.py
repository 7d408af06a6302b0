"""Our occupancy calculator against the H100's own
(cuOccupancyMaxActiveBlocksPerMultiprocessor), for every kernel of programs/.

    python benchmarks/occupancy_h100.py --measure out.json   # on a machine with CuPy and a GPU
    python benchmarks/occupancy_h100.py [measured.json]       # compare (default: the recorded
                                                              # benchmarks/occupancy_h100.json)

The measurement compiles each program with CuPy (NVRTC), records the
registers and static shared memory the compiler gave it, and asks the driver
for the resident blocks per SM at ten block sizes (32..1024 threads) with the
manifest's dynamic shared memory. The comparison feeds the same registers and
shared memory to gpuemu.machine.occupancy.compute_occupancy (the calculator
rule) and, separately, reports how often our register estimate from the IR
(k.num_regs) gives the same blocks per SM.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SIZES = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def measure(path: str) -> None:
    import cupy as cp
    from cupy.cuda import driver
    out = {}
    for j in sorted((ROOT / "programs").glob("*.json")):
        m = json.loads(j.read_text())
        cu = j.parent / (m.get("source") or j.stem + ".cu")
        try:
            mod = cp.RawModule(code=cu.read_text(), options=(f"-I{j.parent}",),
                               name_expressions=[m["kernel"]])
            f = mod.get_function(m["kernel"])
            p, s = f.kernel.ptr, m.get("dynamic_shared_bytes", 0)
            sweep = {}
            for t in SIZES:
                try:
                    sweep[t] = driver.occupancyMaxActiveBlocksPerMultiprocessor(p, t, s)
                except Exception:    # above the kernel's __launch_bounds__
                    sweep[t] = None
            out[j.stem] = dict(kernel=m["kernel"], smem=s, regs=f.num_regs,
                               static_smem=f.shared_size_bytes, sweep=sweep)
        except Exception as e:   # a program CuPy cannot compile: recorded, not fatal
            out[j.stem] = dict(error=str(e)[:300])
    Path(path).write_text(json.dumps(out, indent=1))


def compare(path: str) -> int:
    import gpuemu
    from gpuemu import manifest as mf
    from gpuemu.machine.occupancy import compute_occupancy
    data = json.loads(Path(path).read_text())
    same = total = est_same = 0
    rows = []
    for name, d in sorted(data.items()):
        if "error" in d:
            continue
        try:
            k = mf.module_for(mf.load(ROOT / "programs" / f"{name}.json"), "sm_90").get_function(d["kernel"])
            our_regs = k.num_regs
        except gpuemu.CompileError:
            our_regs = None
        for t, want in d["sweep"].items():
            if want is None:
                continue
            got = compute_occupancy("sm_90", int(t), d["regs"], d["static_smem"] + d["smem"])
            total += 1
            same += got.active_blocks_per_sm == want
            if our_regs is not None:
                est = compute_occupancy("sm_90", int(t), our_regs, d["static_smem"] + d["smem"])
                est_same += est.active_blocks_per_sm == want
            if got.active_blocks_per_sm != want:
                rows.append(f"  {name} {t} threads, {d['regs']} regs: H100 {want}, ours "
                            f"{got.active_blocks_per_sm}")
    print(f"blocks per SM, calculator with the H100's registers: {same}/{total} equal")
    print(f"blocks per SM, with our register estimate: {est_same}/{total} equal")
    print("\n".join(rows))
    return 0 if same == total else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measured", nargs="?", default=str(ROOT / "benchmarks" / "occupancy_h100.json"))
    ap.add_argument("--measure", metavar="OUT.json", help="measure on this machine's GPU (CuPy)")
    ns = ap.parse_args()
    if ns.measure:
        measure(ns.measure)
        return 0
    return compare(ns.measured)


if __name__ == "__main__":
    raise SystemExit(main())
