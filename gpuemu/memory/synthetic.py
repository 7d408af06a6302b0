"""Build AccessBatches by hand: the address traces of a kernel written as
numpy, for tests, benchmarks and fidelity checks before the JIT runs them.

`warp_requests(instr, addrs, space, block, warp, sm, mask)` makes one batch
from per-request lane addresses; `concat` joins batches in issue order.
"""
from __future__ import annotations

import numpy as np

from gpuemu.memory.trace import SPACE_CODES, AccessBatch

FULL = 0xFFFFFFFF


def warp_requests(instr: int, addrs, space: str = "shared", block=0, warp=0, sm=0,
                  mask=FULL) -> AccessBatch:
    """addrs: int[N,32] (or int[32]) lane addresses of N requests of one instruction."""
    a = np.asarray(addrs, dtype=np.int64).reshape(-1, 32)
    n = a.shape[0]
    full = lambda v, dt: np.broadcast_to(np.asarray(v, dtype=dt), (n,)).copy()
    return AccessBatch(instr=full(instr, np.int32), mask=full(mask, np.uint32), addr=a,
                       space=full(SPACE_CODES[space], np.int8), sm=full(sm, np.int32),
                       block=full(block, np.int32), warp=full(warp, np.int32))


def concat(batches) -> AccessBatch:
    bs = list(batches)
    return AccessBatch(*(np.concatenate([getattr(b, f) for b in bs])
                         for f in ("instr", "mask", "addr", "space", "sm", "block", "warp")))


def lanes_mask(active) -> np.ndarray:
    """bool[N,32] -> uint32[N] masks."""
    a = np.asarray(active, dtype=np.uint64).reshape(-1, 32)
    return (a << np.arange(32, dtype=np.uint64)).sum(axis=1).astype(np.uint32)
