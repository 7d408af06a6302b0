"""The warp timeline of a timed launch: Chrome trace JSON and a PNG.

Chrome trace (the JSON Array/Object format that chrome://tracing and
https://ui.perfetto.dev open): one process per SM, one thread per warp slot;
a complete event ("ph": "X") per warp from its dispatch to its exit, named
"block B warp W", and one per barrier wait. Times are cycles, written as
microseconds (1 cycle = 1 us on the time axis).

PNG (matplotlib): the first SMs' warp slots as horizontal bars, coloured by
block, barrier waits hatched.
"""
from __future__ import annotations

import json


def chrome_trace(report, path=None) -> dict:
    """The trace as a dict; written to `path` as JSON when given."""
    warps, bars = report.result.timeline_rows()
    events = []
    sms = sorted({w[2] for w in warps})
    for sm in sms:
        events.append({"name": "process_name", "ph": "M", "pid": sm, "tid": 0,
                       "args": {"name": f"SM {sm}"}})
    for b, w, sm, slot, start, end in warps:
        events.append({"name": f"block {b} warp {w}", "cat": "warp", "ph": "X", "pid": sm,
                       "tid": slot, "ts": start, "dur": max(end - start, 1),
                       "args": {"block": b, "warp": w}})
    for b, w, sm, slot, start, end in bars:
        events.append({"name": "barrier wait", "cat": "barrier", "ph": "X", "pid": sm,
                       "tid": slot, "ts": start, "dur": max(end - start, 1),
                       "args": {"block": b, "warp": w}})
    doc = {"traceEvents": events, "displayTimeUnit": "ns",
           "otherData": {"time_unit": "1 us on the axis = 1 SM cycle", **report.summary()}}
    if path is not None:
        with open(path, "w") as f:
            json.dump(doc, f)
    return doc


def timeline_png(report, path, max_sms: int = 4) -> None:
    """Bars per warp slot for the first `max_sms` SMs that ran blocks."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    warps, bars = report.result.timeline_rows()
    sms = sorted({w[2] for w in warps})[:max_sms]
    rows = sorted({(w[2], w[3]) for w in warps if w[2] in sms})
    y = {r: i for i, r in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(10, max(2.0, 0.12 * len(rows) + 1)))
    cmap = plt.get_cmap("tab20")
    for b, w, sm, slot, start, end in warps:
        if (sm, slot) in y:
            ax.barh(y[(sm, slot)], end - start, left=start, height=0.8, color=cmap(b % 20))
    for b, w, sm, slot, start, end in bars:
        if (sm, slot) in y:
            ax.barh(y[(sm, slot)], end - start, left=start, height=0.8, color="none",
                    edgecolor="black", hatch="///", linewidth=0.3)
    per_sm = max(len(rows) // max(len(sms), 1), 1)
    marks = [r for i, r in enumerate(rows) if i % 8 == 0] or rows[:1]
    ax.set_yticks([y[r] for r in marks])
    ax.set_yticklabels([f"SM{r[0]} slot {y[r] % per_sm}" for r in marks], fontsize=6)
    ax.set_xlabel("cycle")
    ax.set_title(f"warps per SM slot ({report.policy}, {report.cycles} cycles; hatched: barrier wait)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
