"""A Report on the terminal: rich tables of the counters and the source view.

The source view has one row per source line; blank cells mean zero. The
costliest lines (Report.hot) are drawn in bold red with their rank, as a
profiler's source view marks its hot spots; `why` says in words what makes
them costly.
"""
from __future__ import annotations

import io
from typing import Any

from .source_view import why

# (header, cell text from a LineRow); a column appears when some line has a value
COLUMNS = (
    ("exec", lambda r: _n(r.executions)),
    ("lanes", lambda r: f"{r.lanes:.1f}" if r.executions else ""),
    ("shared req", lambda r: _n(r.shared_requests)),
    ("wf/req", lambda r: f"{r.wavefronts_per_request:.1f}" if r.shared_requests else ""),
    ("conflicts", lambda r: (_n(r.bank_conflicts) + (f" ({r.conflict_ways}-way)" if r.conflict_ways >= 2
                                                      else "")) if r.bank_conflicts else ""),
    ("global req", lambda r: _n(r.global_requests)),
    ("sect/req", lambda r: f"{r.sectors_per_request:.1f}" if r.global_ldst_requests else ""),
    ("divergent", lambda r: _n(r.divergent_branches)),
    ("stall cyc", lambda r: _n(r.stall_cycles)),
    ("cost", lambda r: f"{100 * r.cost_share:.1f}%" if r.cost else ""),
)


def _n(v: int) -> str:
    return f"{v:,}" if v else ""


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def counter_tables(rep) -> list:
    """One rich Table per counter group, non-zero counters only (cycles always)."""
    from rich.table import Table
    from .launch_report import GROUPS
    out, seen = [], set()
    for title, names in GROUPS:
        t = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
        t.add_column("counter", style="cyan")
        t.add_column("value", justify="right")
        for n in names:
            seen.add(n)
            v = rep.stats.get(n, 0)
            if v or n == "cycles":
                t.add_row(n, _fmt(v))
        if t.row_count:
            out.append(t)
    return out


def source_table(rep, all_lines: bool = True, width: int = 160):
    """The annotated source: every line, counters beside it, hot lines marked;
    the source column gets what the counters leave of `width`."""
    from rich.table import Table
    rows = [r for r in rep.rows if all_lines or r.has_counters]
    cols = [(h, f) for h, f in COLUMNS if any(f(r) for r in rows)]
    where = rep.filename or rep.kernel
    t = Table(title=f"source view: {where} (hot lines in red; cost = issue + memory"
                    f"{' + stall' if any(r.stall_cycles for r in rows) else ''} cycles)",
              title_justify="left", box=None, pad_edge=False, show_edge=False)
    from rich.text import Text
    cells = [[f(r) for _, f in cols] for r in rows]
    wide = lambda i, h: max([len(h)] + [len(c[i]) for c in cells])
    t.add_column("", justify="right", no_wrap=True, min_width=2)
    t.add_column("line", justify="right", style="dim", no_wrap=True,
                 min_width=max([4] + [len(str(r.key)) for r in rows]))
    used = 2 + 4 + sum(wide(i, h) for i, (h, _) in enumerate(cols)) + 2 * (len(cols) + 2)
    src_w = max(16, min(64, width - used, max([6] + [len(r.text.rstrip()) for r in rows])))
    t.add_column("source", no_wrap=True, overflow="ellipsis", width=src_w)
    for i, (h, _) in enumerate(cols):
        t.add_column(h, justify="right", no_wrap=True, min_width=wide(i, h))
    for r, c in zip(rows, cells):
        style = "bold red" if r.hot else None
        # Text, not markup: kernel source is full of [brackets]
        t.add_row(f"#{r.hot}" if r.hot else "", str(r.key), Text(r.text.rstrip()),
                  *c, style=style)
    return t


def hot_summary(rep) -> list:
    """'#1 line 16 (62.0% of cost): 32-way bank conflicts' lines."""
    out = []
    for r in rep.hot:
        reason = why(r)
        out.append(f"#{r.hot} line {r.key} ({100 * r.cost_share:.1f}% of cost): "
                   f"{r.text.strip()}" + (f"  <- {reason}" if reason else ""))
    return out


def render(rep, console=None, counters: bool = True, findings: bool = True) -> None:
    """Print the report on `console` (default: stdout, 160 columns off a terminal)."""
    from rich.columns import Columns
    if console is None:
        import sys
        from rich.console import Console
        console = Console(width=None if sys.stdout.isatty() else 160, highlight=False)
    console.print(f"[bold]{rep.kernel}[/bold]  grid {tuple(rep.grid)}  block {tuple(rep.block)}  "
                  f"dynamic shared {rep.shared_mem} B  arch {rep.arch}")
    if counters:
        console.print(Columns(counter_tables(rep), padding=(0, 4)))
    console.print(source_table(rep, width=console.width))
    lines = hot_summary(rep)
    if lines:
        console.print("[bold]costliest lines[/bold]")
        for text in lines:
            console.print("  " + text, markup=False, highlight=False)
    for f in rep.findings if findings else ():
        console.print(f"finding: {f}", markup=False)


def render_text(rep, width: int = 160) -> str:
    """The report as plain text (no colours), e.g. for print(launch.report())."""
    from rich.console import Console
    buf = io.StringIO()
    render(rep, Console(file=buf, width=width, color_system=None, highlight=False,
                        force_terminal=False))
    return buf.getvalue()
