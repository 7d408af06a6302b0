"""Which bytes of fresh global allocations have been written (initcheck).

cudaMalloc'd memory holds whatever was there (CUDA Runtime API,
cudaMalloc: "The memory is not cleared"); gpuemu.empty / empty_like model
it: their allocation gets a shadow, one bool per byte, False until the host
(DeviceArray.set, item assignment: only the elements the index selects)
or a kernel writes the byte. Allocations
without a shadow (asarray, zeros, symbols) count as written. A launch that
runs without initcheck cannot see which bytes it wrote, so it marks whole
argument allocations written (no false report later, and no report of what
it left unwritten); an allocation it writes through a pointer it did not
take as an argument keeps its shadow (README, check mode).
"""
from __future__ import annotations

import numpy as np

from .accesses import distinct


def mark_fresh(arr):
    """Give a new device array's allocation a shadow of unwritten bytes."""
    arr._alloc.shadow = np.zeros(arr._alloc.nbytes, dtype=bool)
    return arr


def mark_written(alloc, offset: int, nbytes: int) -> None:
    """Host wrote [offset, offset+nbytes) of alloc."""
    sh = getattr(alloc, "shadow", None)
    if sh is not None:
        sh[offset:offset + nbytes] = True
        if sh.all():
            alloc.shadow = None


def mark_elements_written(alloc, offset: int, shape: tuple, itemsize: int, key) -> None:
    """Host assigned `view[key] = ...` to the array of `shape` at byte
    `offset` of alloc: only the elements numpy's indexing selects (slices,
    steps, integer and boolean arrays) are written, each all its bytes."""
    sh = getattr(alloc, "shadow", None)
    if sh is None:
        return
    hit = np.zeros(shape, dtype=bool)
    hit[key] = True
    region = sh[offset:offset + hit.size * itemsize].reshape(hit.size, itemsize)
    region[hit.reshape(-1)] = True
    if sh.all():
        alloc.shadow = None


def forget(alloc) -> None:
    """A launch without initcheck took `alloc` as an argument: it counts as
    written (it cannot see which bytes the launch wrote)."""
    if getattr(alloc, "shadow", None) is not None:
        alloc.shadow = None


def forget_args(args) -> None:
    """A launch without initcheck: its pointer arguments count as written."""
    for a in args if isinstance(args, (tuple, list)) else ():
        alloc = getattr(a, "_alloc", None)
        if alloc is not None:
            forget(alloc)


class GlobalShadow:
    """The launch's view of fresh allocations: device address -> shadow."""

    def __init__(self, memory) -> None:
        allocs = [a for a in memory.live_allocations() if getattr(a, "shadow", None) is not None]
        self.allocs = allocs
        self.starts = np.array([a.address for a in allocs], dtype=np.int64)
        self.ends = np.array([a.address + a.nbytes for a in allocs], dtype=np.int64)

    def __bool__(self) -> bool:
        return bool(self.allocs)

    def locate(self, addr: np.ndarray) -> tuple:
        """(allocation index or -1, byte offset) of device addresses."""
        i = np.searchsorted(self.starts, addr, side="right") - 1
        ok = (i >= 0) & (addr < self.ends[np.maximum(i, 0)])
        i = np.where(ok, i, -1)
        return i, addr - self.starts[np.maximum(i, 0)]

    def written(self, idx: np.ndarray, off: np.ndarray) -> np.ndarray:
        """Was byte `off` of allocation `idx` written (True where idx < 0)?"""
        out = np.ones(len(idx), dtype=bool)
        for k in distinct(idx[idx >= 0]):
            sh = self.allocs[k].shadow
            sel = idx == k
            out[sel] = sh[off[sel]] if sh is not None else True
        return out

    def mark(self, idx: np.ndarray, off: np.ndarray, width: int) -> None:
        for k in distinct(idx[idx >= 0]):
            a = self.allocs[k]
            if a.shadow is None:
                continue
            o = off[idx == k]
            a.shadow[(o[:, None] + np.arange(width)[None, :]).ravel()] = True

    def finish(self) -> None:
        for a in self.allocs:
            if a.shadow is not None and a.shadow.all():
                a.shadow = None

