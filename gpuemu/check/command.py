"""`gpuemu check FILE.cu|MANIFEST.json`: run a launch with the bug finders on.

Prints every finding (kind, kernel, block, thread, line, message) and exits
1 when there is one. With --seeds N it runs N schedules (seed 0..N-1: warp
and block order, which lane's store wins) and reports every seed whose
outputs differ from seed 0's, the symptom of a race or a missing fence.
With --memory-model weak every run lets unfenced global stores reach other
blocks late (gpuemu/machine/weak_memory.py).
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from gpuemu import manifest as mf

from . import TOOLS, parse_check


def add_parser(sub: Any, dim3: Any) -> None:
    from gpuemu.cli import int_at_least
    from gpuemu.machine import MAX_BUDGET
    c = sub.add_parser(
        "check", help="run a kernel with racecheck, initcheck, synccheck and memcheck on",
        description="Run one launch with the bug finders on and print every finding: races "
                    "(shared and global, judged by CUDA's barrier and warp-sync rules), reads of "
                    "uninitialised memory, barrier divergence, invalid shuffles, out-of-bounds "
                    "and misaligned accesses, deadlocks and timeouts, each with its source line. "
                    "TARGET is a manifest (FILE.json) or a kernel source (FILE.cu with --kernel, "
                    "--grid, --block and --arg as for 'gpuemu run').")
    c.add_argument("target", metavar="TARGET", help="FILE.json manifest or FILE.cu kernel source")
    c.add_argument("--kernel", metavar="NAME", help="the __global__ function to launch (.cu only)")
    c.add_argument("--grid", type=dim3, metavar="X[,Y,Z]", help="blocks in the grid")
    c.add_argument("--block", type=dim3, metavar="X[,Y,Z]", help="threads per block (.cu only)")
    c.add_argument("--shared", type=int, metavar="BYTES", help="dynamic shared memory per block")
    c.add_argument("--arg", action="append", metavar="SPEC", help="one kernel argument (see run)")
    c.add_argument("--const", action="append", metavar="SYMBOL=SPEC", help="fill a symbol (see run)")
    c.add_argument("--arch", default="sm_90", metavar="NAME", help="GPU preset (default sm_90)")
    c.add_argument("--tools", default=",".join(TOOLS), metavar="LIST",
                   help=f"comma-separated tools (default all: {','.join(TOOLS)})")
    c.add_argument("--budget", type=int_at_least(1, MAX_BUDGET, " (2**63 - 1)"), metavar="N",
                   help="watchdog: loop iterations per warp")
    c.add_argument("--seeds", type=int_at_least(1), metavar="N",
                   help="also run N seeded schedules and report seeds whose outputs differ")
    c.add_argument("--memory-model", choices=("default", "weak"), metavar="{default,weak}",
                   help="weak: global stores reach other blocks late unless fenced, so with "
                        "--seeds a missing __threadfence shows as differing outputs")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=cmd_check, expect=None, rtol=None)


def _manifest(ns) -> mf.Manifest:
    from gpuemu.cli import target_manifest
    return target_manifest(ns)[0]


def _run(m, arch, **opts) -> tuple:
    """(findings, outputs or None when the kernel stopped)."""
    from gpuemu.errors import KernelError
    try:
        res = mf.run(m, arch=arch, **opts)
    except KernelError as e:
        return list(e.findings), None
    return list(res.launch.findings), res.outputs


def differing_seeds(m, arch: str, seeds: int, **opts) -> list:
    """[(seed, names of outputs that differ from seed 0's)] over seeds 1..N-1;
    where one of the two runs stopped, one entry that says which and the
    finding that stopped it."""
    stop0, first = _run(m, arch, seed=0, **opts)
    out = []
    for s in range(1, seeds):
        stop, got = _run(m, arch, seed=s, **opts)
        if first is None or got is None:
            if got is None and first is not None:
                out.append((s, [f"<kernel stopped: {stop[0]}>"]))
            elif first is None and got is not None:
                out.append((s, [f"<ran to the end; seed 0 stopped: {stop0[0]}>"]))
            continue
        diff = [k for k in first if not np.array_equal(first[k], got[k], equal_nan=True)]
        if diff:
            out.append((s, diff))
    return out


def cmd_check(ns: argparse.Namespace) -> int:
    from gpuemu.cli import UsageError, check_arch, check_workers_environment
    check_arch(ns.arch)
    check_workers_environment()
    try:
        tools = sorted(parse_check([t for t in ns.tools.split(",") if t]))
    except ValueError as e:
        raise UsageError(str(e)) from None
    m = _manifest(ns)
    # findings need no counters: the finders run on the trace alone
    opts = {"stats": False, **({"budget": ns.budget} if ns.budget else {})}
    if ns.memory_model:
        opts["memory_model"] = ns.memory_model
    findings, _ = _run(m, ns.arch, check=tools, **opts)
    seeds = differing_seeds(m, ns.arch, ns.seeds, **opts) if ns.seeds else []
    if ns.json:
        print(json.dumps({"kernel": m.kernel, "arch": ns.arch, "tools": tools,
                          "findings": [finding_dict(f) for f in findings],
                          "seeds_run": ns.seeds or 0,
                          "differing_seeds": [{"seed": s, "outputs": d} for s, d in seeds]},
                         indent=1))
    else:
        print(f"{m.kernel} on {ns.arch}: {len(findings)} finding(s)")
        for f in findings:
            print(f"  {f}")
        if ns.seeds:
            print(f"{ns.seeds} seeds: {len(seeds)} give outputs that differ from seed 0's")
            for s, d in seeds:
                print(f"  seed {s}: {', '.join(d)}")
    return 1 if findings or seeds else 0


def finding_dict(f) -> dict:
    d = {k: getattr(f, k) for k in ("kind", "message", "kernel", "line", "block", "thread", "space",
                                    "address", "other_line", "other_thread")}
    d["count"] = f.extra.get("count", 1)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}
