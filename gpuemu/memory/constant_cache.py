"""The constant cache: a warp's __constant__ read is serialised by the number
of distinct addresses its active lanes read (CUDA C Programming Guide,
"Device Memory Accesses, Constant Memory": "requests ... split into as many
separate requests as there are different memory addresses"), each served
from a small per-SM cache (`constant_cache_bytes`, `constant_line_bytes`).

`constant_wavefronts_reference` is the rule for one request,
`constant_wavefronts_batch` the numpy path; `ConstantCache` counts hits.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from gpuemu.arch.memory_config import MemoryConfig
from gpuemu.memory.cache import SectoredCache


def constant_wavefronts_reference(addrs: Sequence[int], mask: int) -> int:
    """Distinct addresses read by the active lanes of one request."""
    return len({int(addrs[i]) for i in range(len(addrs)) if (mask >> i) & 1})


def constant_wavefronts_batch(addr: np.ndarray, active: np.ndarray):
    """int64[N,32] addresses, bool[N,32] -> (distinct count[N], row idx[M], address[M])."""
    big = np.iinfo(np.int64).max
    k = np.sort(np.where(active, addr, big), axis=1)
    first = k != big
    first[:, 1:] &= k[:, 1:] != k[:, :-1]
    rows, cols = np.nonzero(first)
    return first.sum(axis=1).astype(np.int64), rows, k[rows, cols]


class ConstantCache:
    """One constant cache per SM, created on first use."""

    def __init__(self, mem: MemoryConfig) -> None:
        self.mem = mem
        self._per_sm: dict = {}

    def access(self, sm: np.ndarray, addr: np.ndarray) -> tuple:
        """Distinct addresses (in issue order) read by SMs -> (hits, misses)."""
        hits = misses = 0
        line = self.mem.constant_line_bytes
        for s in np.unique(sm).tolist():
            sel = sm == s
            c = self._per_sm.get(s)
            if c is None:
                c = self._per_sm[s] = SectoredCache(self.mem.constant_cache_bytes, line, line,
                                                    self.mem.constant_cache_assoc, f"const{s}")
            lines = np.asarray(addr[sel], dtype=np.int64) // line
            h = c.access(lines, np.ones(lines.size, dtype=np.int64))
            nh = int((h != 0).sum())
            hits += nh
            misses += lines.size - nh
        return hits, misses
