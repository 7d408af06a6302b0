"""Scheduling study: programs x the four warp policies x two occupancies.

Each program of programs/ runs once in timing mode on sm_90 (the functional
run and its recorded warp streams do not depend on the policy); its warps
are then replayed by the SM engine on an 8-SM slice of the H100 (so blocks
queue for room, as on a full GPU with a large grid) under each policy, at
the occupancy the CUDA calculator gives and at a quarter of it. One table:
cycles per policy, and IPC, for both occupancies.

    python benchmarks/scheduling_study.py [--sms 8] [--programs a,b,...]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROGRAMS = ("transpose_naive", "transpose_tiled32", "transpose_tiled33", "matmul_tiled",
            "reduce_sequential", "reduce_interleaved", "stencil_1d", "histogram_shared_atomics")
POLICIES = ("lrr", "gto", "two_level", "random")


def study(programs, sms: int) -> list:
    from gpuemu import manifest as mf
    from gpuemu.arch import get_preset
    from gpuemu.timing.block_policy import RoundRobinBlocks
    from gpuemu.timing.latencies import issue_rules
    from gpuemu.timing.sm_engine import SMEngine
    from gpuemu.timing.warp_policies import get_policy

    preset = get_preset("sm_90")
    rows = []
    for name in programs:
        res = mf.run(ROOT / "programs" / f"{name}.json", arch="sm_90", mode="timing")
        rep = res.launch.timing
        full = rep.blocks_per_sm
        for occ_name, bps in (("full", full), ("quarter", max(1, full // 4))):
            row = {"program": name, "occupancy": f"{occ_name} ({bps} blocks/SM)"}
            for pol in POLICIES:
                tr = SMEngine(rep.programs, sms, preset.warp_schedulers_per_sm, bps,
                              issue_rules(preset).issue_interval, get_policy(pol),
                              RoundRobinBlocks(), nrows=rep.result.stalls_by_row.shape[0]).run()
                row[pol] = tr.cycles
                row[pol + "_ipc"] = tr.issued.sum() / tr.cycles if tr.cycles else 0.0
            rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sms", type=int, default=8, help="SMs of the slice (default 8)")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ns = ap.parse_args()
    rows = study(ns.programs.split(","), ns.sms)
    print("| program | occupancy | " + " | ".join(f"{p} cycles (IPC)" for p in POLICIES) + " | best |")
    print("|---|---|" + "---:|" * len(POLICIES) + "---|")
    for r in rows:
        best = min(POLICIES, key=lambda p: r[p])
        cells = " | ".join(f"{r[p]} ({r[p + '_ipc']:.2f})" for p in POLICIES)
        print(f"| {r['program']} | {r['occupancy']} | {cells} | {best} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
