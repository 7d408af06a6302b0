"""Zeroed numpy arrays whose data starts on a chosen boundary.

numpy's arrays start 16 bytes into their block (malloc's header): a large
one 16 bytes past a page, so a warp's 128-byte access to it spans three
64-byte cache lines instead of two, and two threads' arrays may share a
line. `zeros` over-allocates by one boundary and starts the view on one;
the view keeps its block alive (numpy's base).
"""
from __future__ import annotations

import numpy as np


def zeros(shape, dtype, align: int, pad: bool = False, offset: int = 0) -> np.ndarray:
    """np.zeros(shape, dtype) starting `offset` bytes past an `align`-byte
    boundary; `pad`: the `align`-byte units it touches hold nothing else (a
    separate allocation padded to whole units)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    size = -(-(offset + max(n, 1)) // align) * align if pad else offset + max(n, 1)
    raw = np.zeros(size + align, np.uint8)
    off = -raw.ctypes.data % align + offset
    return raw[off:off + n].view(dtype).reshape(shape)
