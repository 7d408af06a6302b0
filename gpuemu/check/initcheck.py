"""initcheck: reads of memory that nothing wrote.

Shared memory (per block) and local memory (per thread) start undefined in
CUDA (CUDA C Programming Guide, "Variable Memory Space Specifiers": shared
and local variables are not initialised); global memory from cudaMalloc is
undefined until written (gpuemu.empty / empty_like model it; see
shadow_memory). A read of a location is uninitialised when no write to it
came before it in the run (atomics read before they write). The emulator's
memory is zero, so such a read silently gives 0: the bug hides.

`uninitialized_reference` is the rule in plain Python; `uninitialized` the
numpy fast path, tested against it.
"""
from __future__ import annotations

import numpy as np

from .accesses import Rows, group_order, spread
from .message_passing import ordered, ordered_one
from .racecheck import concurrent, hazard


def uninitialized_reference(rows: Rows, keys: tuple, written_before=None) -> np.ndarray:
    """Indices of rows that read a location (equal keys) before any write
    to it; written_before[i]: row i's location was written earlier still."""
    first_write: dict = {}
    for i in range(len(rows)):
        if rows.write[i]:
            k = tuple(int(c[i]) for c in keys)
            first_write[k] = min(first_write.get(k, 1 << 62), int(rows.seq[i]))
    bad = []
    for i in range(len(rows)):
        if not rows.read[i] or (written_before is not None and written_before[i]):
            continue
        if first_write.get(tuple(int(c[i]) for c in keys), 1 << 62) >= rows.seq[i]:
            bad.append(i)
    return np.array(bad, dtype=np.int64)


def uninitialized(rows: Rows, keys: tuple, written_before=None) -> np.ndarray:
    """uninitialized_reference, vectorised."""
    n = len(rows)
    if n == 0:
        return np.zeros(0, np.int64)
    order, starts = group_order(keys)
    change = np.zeros(n, bool)
    change[starts] = True
    grp = np.cumsum(change) - 1
    wseq = np.where(rows.write[order], rows.seq[order], 1 << 62)
    first_w = np.minimum.reduceat(wseq, starts)[grp]
    r = rows.read[order] & (first_w >= rows.seq[order])
    if written_before is not None:
        r &= ~written_before[order]
    return np.sort(order[r])


def race_symptoms_reference(rows: Rows, bad: np.ndarray, keys: tuple, tpb: int, its: bool,
                            release=None, acquire=None) -> np.ndarray:
    """Which of the uninitialised reads at rows `bad` are a race's symptom
    (bool per entry): another thread wrote the location (equal keys) later
    in the run and nothing ordered the read before that write
    (racecheck.concurrent; release/acquire as racecheck's). On a GPU that
    write may come first: the read is the race, reported as such. A read
    that a barrier or a fence orders before every later write really reads
    what nothing wrote."""
    tid = rows.thread(tpb)
    key = [tuple(int(k[i]) for k in keys) for i in range(len(rows))]
    out = np.zeros(len(bad), bool)
    for n, r in enumerate(np.asarray(bad).tolist()):
        for w in range(len(rows)):
            if (not rows.write[w] or key[w] != key[r] or rows.seq[w] <= rows.seq[r]
                    or tid[w] == tid[r] or hazard(rows.write[r], rows.atomic[r], True, rows.atomic[w]) is None):
                continue
            rel = ordered_one(release, acquire, r, w)
            if concurrent(rows.block[r], rows.epoch[r], rows.warp[r], rows.wsync[r], rows.seq[r],
                          rows.block[w], rows.epoch[w], rows.warp[w], rows.wsync[w], rows.seq[w], its, rel):
                out[n] = True
                break
    return out


def race_symptoms(rows: Rows, bad: np.ndarray, keys: tuple, tpb: int, its: bool,
                  release=None, acquire=None) -> np.ndarray:
    """race_symptoms_reference, vectorised: each read is paired with the
    later writes of its location."""
    out = np.zeros(len(bad), bool)
    w = np.flatnonzero(rows.write)
    if not len(bad) or not len(w):
        return out
    order, starts = group_order(keys)
    grp = np.empty(len(rows), np.int64)
    grp[order] = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(rows))))
    span = int(rows.seq.max()) + 1
    wkey = grp[w] * span + rows.seq[w]
    w = w[np.argsort(wkey, kind="stable")]
    wkey = np.sort(wkey)
    lo = np.searchsorted(wkey, grp[bad] * span + rows.seq[bad], "right")
    hi = np.searchsorted(wkey, (grp[bad] + 1) * span, "left")
    at, origin = spread(lo, np.maximum(hi - lo, 0))
    r, x = bad[origin], w[at]
    tid = rows.thread(tpb)
    ok = (tid[r] != tid[x]) & ~(rows.atomic[r] & rows.atomic[x])
    inblock = ((rows.epoch[r] == rows.epoch[x])
               & ((rows.warp[r] != rows.warp[x])
                  | (its & (rows.seq[r] != rows.seq[x]) & (rows.wsync[r] == rows.wsync[x]))))
    ok &= np.where(rows.block[r] == rows.block[x], inblock, True)
    if release is not None:
        ok &= ~ordered(release, acquire, r, x)
    out[origin[ok]] = True
    return out
