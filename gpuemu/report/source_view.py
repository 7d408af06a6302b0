"""The kernel source annotated line by line, as a profiler's source view.

For each source line, from the launch's per-line counters:

  executions       warp_instructions: IR operations of the line a warp ran
                   with at least one lane active
  lanes            thread_instructions / warp_instructions: active lanes
                   per execution (32 = no divergence or idle lanes)
  shared           requests, wavefronts per request, bank conflicts
                   (wavefronts beyond the ideal, as Nsight Compute counts
                   them) and the worst n-way degree seen (shared_conflict_ways_N)
  global           requests (loads, stores, atomics, reductions) and 32-byte
                   sectors per load/store request
  divergent        divergent_branches: branches where a warp's lanes split
  stall cycles     timing mode only: every per-line counter named stall*
  cost             issue cycles (one per warp instruction, DESIGN section 6)
                   + memory_cycles the memory model charged the line's
                   requests + stall cycles: what the line adds to the
                   busiest SM's cycles, summed over SMs

The lines with the highest cost are the "hot" ones a report highlights.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional


@dataclass
class LineRow:
    """What one source line cost (see the module docstring for each field)."""
    key: object                  # stats_by_line key: int line, or "file:line"
    text: str
    executions: int = 0
    thread_instructions: int = 0
    shared_requests: int = 0
    shared_wavefronts: int = 0
    bank_conflicts: int = 0
    conflict_ways: int = 0
    global_requests: int = 0
    global_ldst_requests: int = 0
    global_sectors: int = 0
    divergent_branches: int = 0
    stall_cycles: int = 0
    memory_cycles: int = 0
    ideal_sectors: int = 0       # sectors the line's worst global request would need, coalesced
    cost: int = 0
    cost_share: float = 0.0
    hot: int = 0                 # 1 = costliest line, 2 = next, ...; 0 = not hot
    counters: dict = field(default_factory=dict)

    @property
    def lanes(self) -> float:
        """Active lanes per execution (thread / warp instructions)."""
        return self.thread_instructions / self.executions if self.executions else 0.0

    @property
    def wavefronts_per_request(self) -> float:
        """Shared wavefronts per shared load/store request (1 = conflict-free 4-byte access)."""
        return self.shared_wavefronts / self.shared_requests if self.shared_requests else 0.0

    @property
    def sectors_per_request(self) -> float:
        """32-byte sectors per global load/store request."""
        return self.global_sectors / self.global_ldst_requests if self.global_ldst_requests else 0.0

    @property
    def has_counters(self) -> bool:
        """Whether any counter of the line is non-zero."""
        return any(v for v in self.counters.values())

    def as_dict(self) -> dict:
        """JSON-ready fields plus the derived ratios."""
        d = asdict(self)
        d["key"] = self.key
        d.update(lanes=round(self.lanes, 3),
                 wavefronts_per_request=round(self.wavefronts_per_request, 3),
                 sectors_per_request=round(self.sectors_per_request, 3))
        return d


def conflict_ways(counters: dict) -> int:
    """The highest n of the shared_conflict_ways_n counters present (0: none)."""
    ways = [int(k.rsplit("_", 1)[1]) for k, v in counters.items()
            if k.startswith("shared_conflict_ways_") and v and k.rsplit("_", 1)[1].isdigit()]
    return max(ways, default=0)


def line_row(key, text: str, c: dict) -> LineRow:
    """One LineRow from a line's counters (missing counters count 0)."""
    g = lambda *names: sum(int(c.get(n, 0)) for n in names)
    stalls = sum(int(v) for k, v in c.items() if k.startswith("stall"))
    row = LineRow(
        key=key, text=text, executions=g("warp_instructions"),
        thread_instructions=g("thread_instructions"),
        shared_requests=g("shared_load_requests", "shared_store_requests"),
        shared_wavefronts=g("shared_load_wavefronts", "shared_store_wavefronts"),
        bank_conflicts=g("shared_bank_conflicts"), conflict_ways=conflict_ways(c),
        global_requests=g("global_load_requests", "global_store_requests",
                          "global_atomic_requests", "global_reduction_requests"),
        global_ldst_requests=g("global_load_requests", "global_store_requests"),
        global_sectors=g("global_load_sectors", "global_store_sectors"),
        divergent_branches=g("divergent_branches"), stall_cycles=stalls,
        memory_cycles=g("memory_cycles"), counters=dict(c))
    row.cost = row.executions + row.memory_cycles + row.stall_cycles
    return row


def source_view(source: str, stats_by_line: dict, top: int = 3,
                include_text: Optional[dict] = None) -> list:
    """Every line of `source` (1-based) with its LineRow, then rows for the
    `"file:line"` keys of #include'd files (text from include_text, if given).
    The `top` costliest lines get hot = 1..top; cost_share is the line's
    fraction of the summed cost."""
    lines = source.splitlines()
    int_keys = [k for k in stats_by_line if isinstance(k, int)]
    n = max([len(lines)] + int_keys) if (lines or int_keys) else 0
    rows = [line_row(i, lines[i - 1] if i <= len(lines) else "", stats_by_line.get(i, {}))
            for i in range(1, n + 1)]
    if stats_by_line.get(0):     # counted at no source line (e.g. timing mode's warp start)
        rows.insert(0, line_row(0, "(no source line)", stats_by_line[0]))
    for k in sorted((k for k in stats_by_line if not isinstance(k, int)), key=str):
        rows.append(line_row(k, (include_text or {}).get(k, ""), stats_by_line[k]))
    total = sum(r.cost for r in rows)
    for r in rows:
        r.cost_share = r.cost / total if total else 0.0
    ranked = sorted((r for r in rows if r.cost > 0), key=lambda r: (-r.cost, str(r.key)))
    for i, r in enumerate(ranked[:max(top, 0)], start=1):
        r.hot = i
    return rows


def why(row: LineRow) -> str:
    """A short reason the line costs what it does, in the profiler's words."""
    parts = []
    if row.conflict_ways >= 2:
        parts.append(f"{row.conflict_ways}-way bank conflicts")
    elif row.bank_conflicts:
        parts.append(f"{row.bank_conflicts} bank conflicts")
    if row.global_ldst_requests and row.sectors_per_request > (row.ideal_sectors or 4) + 1e-9:
        parts.append(f"{row.sectors_per_request:.1f} sectors/request"
                     + (f" (ideal {row.ideal_sectors})" if row.ideal_sectors else ""))
    if row.divergent_branches:
        parts.append("divergent branch")
    if row.executions and row.lanes < 32 and not row.divergent_branches and row.lanes < 16:
        parts.append(f"{row.lanes:.1f} lanes active")
    if row.stall_cycles:
        stalls = {k[len("stall_"):]: int(v) for k, v in row.counters.items()
                  if k.startswith("stall_") and v}
        top = max(stalls, key=stalls.get) if stalls else ""
        share = f" ({100 * stalls[top] // row.stall_cycles}% {top})" if top else ""
        parts.append(f"{row.stall_cycles:,} stall cycles{share}")
    return ", ".join(parts)
