"""Timing mode: a functional run that records stop points, then the engine.

    report = time_launch(run, blocks_per_sm, scheduler, block_scheduler)

`run` is a machine LaunchRun with counters on; it executes exactly as in
functional mode (results and counters are the same), while a TraceRecorder
keeps every warp's stop points (warp_trace.py). The cycle engine then
replays the warps cycle by cycle through the preset's warp schedulers: the
native one (native_engine.py) for the built-in policies, the numpy one
(sm_engine.py) for a policy class of the user's; both follow the rules
sm_engine.py states. The memory system's per-request costs are those of the
functional run (its L1/L2 contents follow functional order).
"""
from __future__ import annotations

from gpuemu.jit import abi

from .block_policy import get_block_policy
from .latencies import issue_rules
from .report import TimingReport
from .native_engine import engine_for
from .warp_policies import get_policy
from .warp_trace import TraceRecorder


def time_launch(run, blocks_per_sm: int, scheduler=None, block_scheduler=None,
                timeline: bool = True, engine=None) -> tuple:
    """Run `run` (a LaunchRun with stats on) and time it: (RunResult, TimingReport).

    `engine`: the engine class; by default the native one when it has the
    policies' rules (built-in policies), else the numpy one (native_engine.engine_for)."""
    shape = run.shape
    nb = shape.grid[0] * shape.grid[1] * shape.grid[2]
    rec = TraceRecorder(shape.warps_per_block, nb)
    run.recorder = rec
    # one worker: the recorder follows one frame set (block_workers.py copies runs)
    run.options = {**run.options, "workers": 1}
    res = run.run()
    progs = rec.programs()
    rec.release()               # the packed batches' storage goes back to record_pool
    policy = get_policy(scheduler)
    preset = run.preset
    block_policy = get_block_policy(block_scheduler)
    engine = engine or engine_for(policy, block_policy)
    eng = engine(progs, preset.num_sms, int(preset.warp_schedulers_per_sm), blocks_per_sm,
                 issue_rules(preset).issue_interval, policy, block_policy,
                 nrows=run.meta.nlines, seed=run.options.get("seed") or 0, timeline=timeline)
    tr = eng.run()
    report = TimingReport(tr, progs, policy_name=getattr(policy, "name", type(policy).__name__),
                          functional_cycles=int(res.stats.totals.get("cycles", 0)))
    report.add_to(res.stats)
    return res, report


__all__ = ["time_launch", "abi"]
