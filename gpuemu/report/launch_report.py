"""Report: everything a person reads about one launch, in one object.

    rep = launch.report()          # or Report.from_launch(launch)
    print(rep)                     # counter tables and the annotated source (rich)
    rep.to_dict()                  # the same for machines (gpuemu run --json --report)
    rep.save_html("k.html")        # one self-contained page with the pictures

The annotated source is gpuemu/report/source_view.py; the pictures
gpuemu/report/pictures.py; the page gpuemu/report/html_page.py.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .source_view import LineRow, source_view, why

# Counter groups of the totals table: (title, counters).
GROUPS = (
    ("instructions", ("cycles", "warp_instructions", "thread_instructions",
                      "active_lanes_per_instruction", "divergent_branches", "barriers", "fences")),
    ("shared memory", ("shared_load_requests", "shared_load_wavefronts", "shared_store_requests",
                       "shared_store_wavefronts", "shared_bank_conflicts", "shared_atomic_requests")),
    ("global memory", ("global_load_requests", "global_load_sectors", "global_store_requests",
                       "global_store_sectors", "global_atomic_requests", "global_reduction_requests",
                       "l1_hits", "l1_misses", "l2_hits", "l2_misses", "l2_read_sectors",
                       "l2_write_sectors", "dram_read_sectors")),
    ("local and constant", ("local_load_requests", "local_load_sectors", "local_store_requests",
                            "local_store_sectors", "constant_requests", "constant_wavefronts")),
)


@dataclass
class Report:
    """One launch's counters, its annotated source and the worst requests."""
    kernel: str
    arch: str
    grid: tuple
    block: tuple
    shared_mem: int
    stats: dict
    rows: list                                   # LineRow per source line
    findings: list = field(default_factory=list)
    worst_requests: dict = field(default_factory=dict)
    memory_config: Any = None
    filename: str = ""
    timing: Any = None                           # a timing-mode launch's TimingReport, if any

    @classmethod
    def from_launch(cls, launch, top: int = 3, source: Optional[str] = None) -> "Report":
        """Build from a gpuemu Launch (`source` overrides the launch's own text);
        `top`: how many of the costliest lines to highlight, an int >= 0."""
        if isinstance(top, bool) or not isinstance(top, numbers.Integral):
            raise TypeError(f"report: top is how many lines to highlight (an int), got {top!r}")
        if top < 0:
            raise ValueError(f"report: top must be 0 or more, got {top}")
        text = source if source is not None else getattr(launch, "source", "") or ""
        by_line = getattr(launch, "stats_by_line", {}) or {}
        worst = getattr(launch, "worst_requests", {}) or {}
        rows = source_view(text, by_line, top=top, include_text=_include_text(by_line, launch))
        from .pictures import ideal_sectors
        for r in rows:
            w = worst.get(("global", r.key))
            if w is not None:
                r.ideal_sectors = ideal_sectors(w)
        return cls(kernel=launch.kernel, arch=getattr(launch, "arch", ""), grid=tuple(launch.grid),
                   block=tuple(launch.block), shared_mem=getattr(launch, "shared_mem", 0),
                   stats=dict(launch.stats), rows=rows, findings=list(launch.findings),
                   worst_requests=dict(worst), memory_config=getattr(launch, "memory_config", None),
                   filename=getattr(launch, "filename", "") or "",
                   timing=getattr(launch, "timing", None))

    # ------------------------------------------------------------ queries
    @property
    def hot(self) -> list:
        """The highlighted lines, costliest first."""
        return sorted((r for r in self.rows if r.hot), key=lambda r: r.hot)

    def row(self, key) -> LineRow:
        """The LineRow of one line (its stats_by_line key); KeyError if none."""
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(key)

    def worst_shared(self):
        """(LineRow, WorstRequest) of the shared line with the most bank
        conflicts (ties: most wavefronts), or None without shared requests."""
        cands = [(r, self.worst_requests.get(("shared", r.key))) for r in self.rows]
        cands = [(r, w) for r, w in cands if w is not None]
        if not cands:
            return None
        return max(cands, key=lambda rw: (rw[0].bank_conflicts, rw[1].cost, -_order(rw[0].key)))

    def coalescing_rows(self) -> list:
        """(label, sectors per request, ideal sectors) per global load/store line."""
        out = []
        for r in self.rows:
            if r.global_ldst_requests:
                label = f"{r.key}: {r.text.strip()[:40]}"
                out.append((label, r.sectors_per_request, r.ideal_sectors))
        return out

    # ------------------------------------------------------------ output
    def to_dict(self) -> dict:
        """A JSON-ready dict: launch, totals, lines with counters, hot lines."""
        return {
            "kernel": self.kernel, "arch": self.arch, "grid": list(self.grid),
            "block": list(self.block), "dynamic_shared_bytes": self.shared_mem,
            "stats": dict(self.stats),
            "lines": [dict(r.as_dict(), why=why(r)) for r in self.rows if r.has_counters],
            "hot": [r.key for r in self.hot],
            "worst_requests": {f"{sp}:{k}": w.as_dict() for (sp, k), w in self.worst_requests.items()},
            "findings": [str(f) for f in self.findings],
        }

    def render(self, console=None, counters: bool = True, findings: bool = True) -> None:
        """Print the tables and the annotated source on a rich Console."""
        from .terminal import render
        render(self, console, counters=counters, findings=findings)

    def __str__(self) -> str:
        from .terminal import render_text
        return render_text(self)

    def pictures(self) -> dict:
        """PNG bytes by title: bank heat map, coalescing, timeline (those that
        apply). Drawn here, when asked (the HTML page), not when the report is built."""
        from .pictures import bank_heatmap_png, coalescing_png
        out = {}
        ws = self.worst_shared()
        if ws is not None and self.memory_config is not None:
            r, w = ws
            ways = f", {r.conflict_ways}-way" if r.conflict_ways >= 2 else ""
            title = (f"line {r.key}: {r.text.strip()[:50]}\nworst request: {w.op} of {w.size} B, "
                     f"{w.cost} wavefronts{ways}")
            out[f"bank heat map, line {r.key}"] = bank_heatmap_png(w, self.memory_config, title)
        rows = self.coalescing_rows()
        if rows:
            out["coalescing per line"] = coalescing_png(rows)
        timeline = _timeline_png(self.timing)
        if timeline:
            out["warp timeline"] = timeline
        return out

    def to_html(self, pictures: bool = True) -> str:
        """The self-contained HTML page (gpuemu/report/html_page.py)."""
        from .html_page import page
        return page(self, self.pictures() if pictures else {})

    def save_html(self, path: str | Path, pictures: bool = True) -> Path:
        """Write the HTML page to `path`; returns the path."""
        p = Path(path)
        p.write_text(self.to_html(pictures), encoding="utf-8")
        return p

    def _repr_html_(self) -> str:       # Jupyter
        return self.to_html()


def _order(key) -> int:
    return key if isinstance(key, int) else 1 << 30


def _include_text(by_line: dict, launch) -> dict:
    """Text of '#include'd file lines ("file:line" keys), where the file is readable."""
    out = {}
    base = Path(getattr(launch, "filename", "") or ".").parent
    for k in by_line:
        if isinstance(k, str) and ":" in k:
            f, _, ln = k.rpartition(":")
            for cand in (Path(f), base / f):
                try:
                    out[k] = cand.read_text().splitlines()[int(ln) - 1]
                    break
                except (OSError, ValueError, IndexError):
                    continue
    return out


def _timeline_png(timing) -> Optional[bytes]:
    """The warp timeline PNG of a timing-mode launch's `timing` (drawn by
    gpuemu/timing/timeline.py), or None for a functional launch."""
    if timing is None or not hasattr(timing, "timeline_png"):
        return None
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "timeline.png"
        timing.timeline_png(path)
        return path.read_bytes()
