"""The smallest memory model: one request per trace record, by op and space.

Used only when gpuemu.memory's MemorySystem cannot be built; it charges no
cycles and no sectors or wavefronts."""
from __future__ import annotations

import numpy as np

from gpuemu.memory.trace import SPACE_NAMES

_NAMES = {("ld", "global"): "global_load_requests", ("st", "global"): "global_store_requests",
          ("atom", "global"): "global_atomic_requests", ("red", "global"): "global_reduction_requests",
          ("ld", "shared"): "shared_load_requests", ("st", "shared"): "shared_store_requests",
          ("atom", "shared"): "shared_atomic_requests", ("red", "shared"): "shared_atomic_requests",
          ("ld", "local"): "local_load_requests", ("st", "local"): "local_store_requests",
          ("ld", "constant"): "constant_requests"}


class RequestCounter:
    def charge(self, batch, instrs, stats) -> None:
        ops = np.array([i.op for i in instrs] or ["ld"])
        lines = np.array([i.line for i in instrs] or [0])
        for code, space in SPACE_NAMES.items():
            sel = batch.space == code
            if not sel.any():
                continue
            ids = batch.instr[sel]
            for op in ("ld", "st", "atom", "red"):
                pick = ids[ops[ids] == op]
                name = _NAMES.get((op, space))
                if name and pick.size:
                    stats.add_lines(name, lines[pick], np.ones(pick.size, dtype=np.int64))

    def finish(self, stats, issue_cycles_per_sm=None) -> None:
        if issue_cycles_per_sm is not None and len(issue_cycles_per_sm):
            stats.add("cycles", int(np.max(issue_cycles_per_sm)))
