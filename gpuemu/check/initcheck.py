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

from .accesses import Rows, group_order


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
