"""Pictures of a launch, as PNG bytes (matplotlib, drawn off-screen).

- bank heat map: for the worst shared-memory request (the line with the most
  bank conflicts), lanes x banks; a cell is coloured by how many wavefronts
  its bank must serve in the lane's phase, so an n-way conflict
  is a column of n, a conflict-free access a permutation of 1s. The data
  comes from `bank_matrix`: the wavefronts in which each bank serves, as the
  bank arbiter (gpuemu/memory/bank_arbiter.py) schedules them, so the
  picture and the counters cannot disagree (cc1.x broadcast included).
- coalescing per line: for each global load/store line, 32-byte sectors per
  request beside the fewest the line's worst request could need
  (its active lanes' bytes / 32, rounded up).
- the warp timeline of a timing-mode launch is drawn by the timing module;
  the report embeds it when the launch carries one.
"""
from __future__ import annotations

import io

import numpy as np

from gpuemu.memory.bank_arbiter import bank_schedule
from gpuemu.memory.worst_requests import WorstRequest

WARP = 32


def bank_matrix(req: WorstRequest, mem) -> np.ndarray:
    """int[32 lanes, banks]: for each bank a lane touches, the number of
    wavefronts that bank serves in the lane's phase, by the bank arbiter's
    own rule (bank_arbiter.bank_schedule, cc1.x's one-word broadcast
    included); 0 where the lane does not touch the bank or is inactive. The
    largest number in a phase is the phase's wavefront count."""
    out = np.zeros((WARP, mem.banks), dtype=np.int64)
    sched = bank_schedule(req.addrs, req.mask, req.size, mem)
    busy: dict = {}                             # (phase, bank) -> wavefronts it serves in
    for phase, _, bank, step in sched:
        busy.setdefault((phase, bank), set()).add(step)
    for phase, lane, bank, _ in sched:
        out[lane, bank] = len(busy[phase, bank])
    return out


def ideal_sectors(req: WorstRequest) -> int:
    """The fewest 32-byte sectors the request's active lanes' bytes fit in."""
    lanes = bin(req.mask & 0xFFFFFFFF).count("1")
    return -(-lanes * req.size // 32)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return buf.getvalue()


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def bank_heatmap_png(req: WorstRequest, mem, title: str = "") -> bytes:
    """The lanes x banks heat map of one shared request (see module docstring)."""
    plt = _pyplot()
    m = bank_matrix(req, mem)
    fig, ax = plt.subplots(figsize=(7.5, 6))
    shown = np.ma.masked_equal(m, 0)
    im = ax.imshow(shown, cmap="YlOrRd", vmin=1, vmax=max(int(m.max()), 2), aspect="auto",
                   interpolation="nearest")
    ax.set_xlabel(f"bank ({mem.banks} banks x {mem.shared_bank_bytes} B)")
    ax.set_ylabel("lane")
    ax.set_xticks(range(0, mem.banks, 4))
    ax.set_yticks(range(0, WARP, 4))
    ax.set_facecolor("#f4f4f4")
    fig.colorbar(im, ax=ax, label="rows the bank serves (wavefronts)")
    ax.set_title(title or f"{req.op} of {req.size} B: {req.cost} wavefronts", fontsize=10)
    return _png(fig)


def coalescing_png(rows: list) -> bytes:
    """Bars per global line: sectors per request, and the ideal. `rows` holds
    (label, sectors per request, ideal sectors) tuples."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(rows) + 1.4))
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [r[1] for r in rows], height=0.4, color="#d9534f", label="sectors / request")
    ax.barh(y + 0.2, [r[2] for r in rows], height=0.4, color="#5cb85c", label="ideal (coalesced)")
    ax.set_yticks(y, [r[0] for r in rows], fontsize=8, family="monospace")
    ax.invert_yaxis()
    ax.set_xlabel("32-byte sectors per warp request")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("global memory coalescing per line", fontsize=10)
    return _png(fig)
