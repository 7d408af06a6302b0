"""A Report as one self-contained HTML page: inline CSS, the counter tables,
the annotated source (hot lines shaded by their share of the cost) and the
pictures embedded as base64 PNG, so the file can be mailed or attached to
an issue as it is (no scripts, no external files)."""
from __future__ import annotations

import base64
import html

from .source_view import why
from .terminal import COLUMNS, _fmt

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { padding: 1px 8px; text-align: right; white-space: nowrap; }
th { border-bottom: 1px solid #999; background: #f0f0f0; }
td.src { text-align: left; font-family: ui-monospace, monospace; white-space: pre; }
td.why { text-align: left; color: #a33; }
td.ln { color: #888; }
tr.hot td { font-weight: bold; }
.groups { display: flex; flex-wrap: wrap; gap: 2em; }
.groups td:first-child { text-align: left; color: #246; }
figure { display: inline-block; margin: 0 2em 1em 0; vertical-align: top; }
figcaption { font-size: 0.85em; color: #555; }
"""


def _e(v) -> str:
    return html.escape(str(v))


def _counters(rep) -> str:
    from .launch_report import GROUPS
    parts = []
    for title, names in GROUPS:
        cells = [f"<tr><td>{_e(n)}</td><td>{_e(_fmt(rep.stats.get(n, 0)))}</td></tr>"
                 for n in names if rep.stats.get(n, 0) or n == "cycles"]
        if cells:
            parts.append(f"<table><tr><th colspan=2>{_e(title)}</th></tr>{''.join(cells)}</table>")
    return f"<div class=groups>{''.join(parts)}</div>"


def _source(rep) -> str:
    cols = [(h, f) for h, f in COLUMNS if any(f(r) for r in rep.rows)]
    head = "".join(f"<th>{_e(h)}</th>" for h in ["", "line", "source"] + [h for h, _ in cols] + ["why"])
    body = []
    for r in rep.rows:
        shade = ""
        if r.cost_share:      # red, stronger for a larger share of the cost
            shade = f' style="background: rgba(220, 40, 30, {min(0.08 + 0.8 * r.cost_share, 0.85):.2f})"'
        cells = [f"<td>{'#' + str(r.hot) if r.hot else ''}</td>", f"<td class=ln>{_e(r.key)}</td>",
                 f"<td class=src>{_e(r.text.rstrip())}</td>"]
        cells += [f"<td>{_e(f(r))}</td>" for _, f in cols]
        cells.append(f"<td class=why>{_e(why(r))}</td>")
        body.append(f"<tr{' class=hot' if r.hot else ''}{shade}>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def page(rep, pictures: dict) -> str:
    """The whole page; `pictures` maps a caption to PNG bytes."""
    title = f"gpuemu report: {rep.kernel}"
    figs = "".join(
        f"<figure><img alt=\"{_e(cap)}\" src=\"data:image/png;base64,"
        f"{base64.b64encode(png).decode('ascii')}\"><figcaption>{_e(cap)}</figcaption></figure>"
        for cap, png in pictures.items())
    findings = "".join(f"<li>{_e(f)}</li>" for f in rep.findings)
    hot = "".join(f"<li>line {_e(r.key)} ({100 * r.cost_share:.1f}% of cost): <code>{_e(r.text.strip())}</code>"
                  f"{' &mdash; ' + _e(why(r)) if why(r) else ''}</li>" for r in rep.hot)
    return (f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{_e(title)}</title>"
            f"<style>{CSS}</style></head><body>"
            f"<h1>{_e(title)}</h1><p>grid {_e(tuple(rep.grid))}, block {_e(tuple(rep.block))}, "
            f"dynamic shared {_e(rep.shared_mem)} B, arch {_e(rep.arch)}"
            f"{', source ' + _e(rep.filename) if rep.filename else ''}</p>"
            f"<h2>costliest lines</h2><ol>{hot or '<li>none</li>'}</ol>"
            + (f"<h2>findings</h2><ul>{findings}</ul>" if findings else "")
            + f"<h2>counters</h2>{_counters(rep)}"
            f"<h2>source view</h2><p>cost = issue cycles (one per warp instruction) + memory "
            f"cycles{' + stall cycles' if any(r.stall_cycles for r in rep.rows) else ''}; "
            f"lines shaded by their share of it.</p>{_source(rep)}"
            + (f"<h2>pictures</h2>{figs}" if figs else "")
            + "</body></html>\n")
