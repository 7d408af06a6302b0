"""TimingReport: the numbers timing mode gives a launch (`launch.timing`).

cycles (until the last SM finishes) and sm_cycles; ipc (warp instructions
per cycle of the whole GPU and per SM); issue_slot_use (issued instructions
over the issue slots of the busy SMs: cycles x schedulers); stall cycles by
reason in total, per warp and per source line; active warps per cycle (the
mean over the busy SMs' cycles); the warp timeline (timeline.py).
"""
from __future__ import annotations

import numpy as np

from .sm_engine import REASONS, TimingResult
from .warp_trace import WarpPrograms


class TimingReport:
    def __init__(self, tr: TimingResult, progs: WarpPrograms, policy_name: str,
                 functional_cycles: int = 0) -> None:
        self.result = tr
        self.programs = progs
        self.policy = policy_name
        self.functional_cycles = functional_cycles
        self.cycles = tr.cycles
        self.sm_cycles = tr.sm_cycles
        used = tr.sm_cycles > 0
        self.instructions = int(tr.issued.sum())
        self.ipc = self.instructions / tr.cycles if tr.cycles else 0.0
        self.ipc_per_sm = np.where(used, tr.issued / np.maximum(tr.sm_cycles, 1), 0.0)
        slots = int((tr.sm_cycles[used]).sum()) * tr.schedulers_per_sm
        self.issue_slot_use = self.instructions / slots if slots else 0.0
        self.stalls = {r: int(tr.stalls[:, i].sum()) for i, r in enumerate(REASONS)}
        self.idle_scheduler_cycles = int(tr.idle.sum())
        busy = int(tr.sm_cycles[used].sum())
        self.active_warps_per_cycle = int(tr.active_warp_cycles.sum()) / busy if busy else 0.0
        self.blocks_per_sm = tr.blocks_per_sm

    def stalls_per_warp(self) -> dict:
        """{(block, warp): {reason: cycles}}."""
        nw = self.programs.warps_per_block
        return {(g // nw, g % nw): dict(zip(REASONS, row.tolist()))
                for g, row in enumerate(self.result.stalls)}

    def stalls_by_row(self) -> dict:
        """{counter row: {stall_<reason>: cycles}} for rows with stalls."""
        out = {}
        a = self.result.stalls_by_row
        for row in np.flatnonzero(a.any(axis=1)).tolist():
            out[row] = {f"stall_{r}": int(v) for r, v in zip(REASONS, a[row]) if v}
        return out

    def add_to(self, stats) -> None:
        """Timing counters into a Stats: cycles (timing), stall_* per line."""
        stats.totals["functional_cycles"] = stats.totals.get("cycles", 0)
        stats.totals["cycles"] = self.cycles
        for row, d in self.stalls_by_row().items():
            for k, v in d.items():
                stats.add(k, v, line=row)

    def summary(self) -> dict:
        """The scalar results, JSON-ready."""
        return {"policy": self.policy, "cycles": self.cycles, "ipc": round(self.ipc, 4),
                "issue_slot_use": round(self.issue_slot_use, 4),
                "active_warps_per_cycle": round(self.active_warps_per_cycle, 3),
                "blocks_per_sm": self.blocks_per_sm, "sms_used": self.result.num_sms_used,
                "idle_scheduler_cycles": self.idle_scheduler_cycles,
                **{f"stall_{k}": v for k, v in self.stalls.items()}}

    def chrome_trace(self, path=None) -> dict:
        """The warp timeline as Chrome trace JSON (opens in Perfetto); written to path if given."""
        from .timeline import chrome_trace
        return chrome_trace(self, path)

    def timeline_png(self, path, max_sms: int = 4) -> None:
        """The warp timeline of the first `max_sms` SMs as a PNG picture."""
        from .timeline import timeline_png
        timeline_png(self, path, max_sms)
