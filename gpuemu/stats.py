"""Per-launch counters, in total and per source line (DESIGN section 6 names)."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

COUNTERS = (
    "cycles", "warp_instructions", "thread_instructions",
    "shared_load_requests", "shared_load_wavefronts",
    "shared_store_requests", "shared_store_wavefronts", "shared_bank_conflicts",
    "shared_atomic_requests",
    "global_load_requests", "global_load_sectors",
    "global_store_requests", "global_store_sectors",
    "global_atomic_requests", "global_reduction_requests",
    "local_load_requests", "local_load_sectors",
    "local_store_requests", "local_store_sectors",
    "l1_hits", "l1_misses", "l2_hits", "l2_misses", "l2_read_sectors", "l2_write_sectors",
    "constant_requests", "constant_wavefronts",
    "divergent_branches", "barriers", "fences",
    # register spills (isa/register_spill.py): local requests also counted on their own
    "spill_load_requests", "spill_store_requests", "spill_bytes",
    # the read-only data path (__ldg, const __restrict__; isa/readonly_path.py)
    "readonly_load_requests", "readonly_load_sectors", "readonly_hits", "readonly_misses",
    # texel fetches (isa/texture_fetch.py; also counted as read-only loads)
    "texture_requests", "texture_sectors", "texture_hits", "texture_misses",
    # host memory (gpuemu/host/): zero-copy traffic over PCIe, managed-memory faults
    "zero_copy_requests", "pcie_read_bytes", "pcie_write_bytes", "page_faults",
    "managed_migrated_bytes",
)


class Stats:
    """Counter totals plus the same counters keyed by source line.

    `add` takes one value; `add_lines` takes numpy arrays of lines and values
    (the batch path of the memory model)."""

    def __init__(self) -> None:
        self.totals: dict = defaultdict(int)
        self.by_line: dict = defaultdict(lambda: defaultdict(int))

    def add(self, name: str, value: int, line: int | None = None) -> None:
        self.totals[name] += int(value)
        if line is not None:
            self.by_line[int(line)][name] += int(value)

    def add_lines(self, name: str, lines: np.ndarray, values: np.ndarray) -> None:
        lines = np.asarray(lines, dtype=np.int64)
        values = np.asarray(values, dtype=np.int64)
        if lines.size == 0:
            return
        self.totals[name] += int(values.sum())
        if lines.min() >= 0 and lines.max() < 1 << 20:     # source lines: count by index
            sums = np.bincount(lines, weights=values)
            uniq = np.flatnonzero(sums)
            sums = sums[uniq]
        else:
            uniq, inv = np.unique(lines, return_inverse=True)
            sums = np.bincount(inv, weights=values, minlength=len(uniq))
        for ln, v in zip(uniq.tolist(), sums.tolist()):
            if v:
                self.by_line[ln][name] += int(v)

    def merge(self, other: "Stats") -> None:
        """Add another Stats' counters (e.g. a batch counted on another thread)."""
        for name, v in other.totals.items():
            self.totals[name] += v
        for ln, counts in other.by_line.items():
            mine = self.by_line[ln]
            for name, v in counts.items():
                mine[name] += v

    def as_dict(self) -> dict:
        out = {k: 0 for k in COUNTERS}
        out.update(self.totals)
        return out

    def lines_dict(self) -> dict:
        return {ln: dict(c) for ln, c in sorted(self.by_line.items())}
