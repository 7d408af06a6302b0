"""A run's static tags: its own small bounds table, shared with no other kernel.

A kernel's `__shared__` arrays, local objects and parameters are tagged
FIRST_STATIC_TAG and up, numbered per kernel (gpuemu/jit/storage.py), and
the tags are compiled into its warp functions. So two kernels give one tag
different bounds (and one kernel at two dynamic shared sizes gives its
dynamic array two). Each run (kernel and launch shape: `Entries`) therefore
has its own table of its static tags' entries, which ctx names
(abi.C_STATIC_BOUNDS, C_STATIC_TAGS); the jitted bounds lookup takes a
static tag's entry from it and any other tag's from the device's table of
allocations (gpuemu/device_memory.py; jit/memory_access.py's
_BoundsTables: one compare and one select). Launches of different kernels,
at once from several Python threads or from a running launch's progress
callback, each see their own arrays' bounds; no run holds or waits for
anything.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuemu.jit import abi

if TYPE_CHECKING:
    from gpuemu.jit.compiler import KernelMeta

_SPACE = {"shared": 1, "local": 2, "param": 4}
_STATIC_BIAS = abi.FIRST_STATIC_TAG * abi.BOUNDS_DTYPE.itemsize


class Entries:
    """A run's static entries: its table (the bounds rows of tags
    FIRST_STATIC_TAG up, in tag order; read-only once made), the ctx values
    that name it (`base`: its address biased by FIRST_STATIC_TAG entries;
    `count`: its rows) and the dynamic shared pointer."""
    __slots__ = ("table", "base", "count", "dyn_ptr")

    def __init__(self, meta: "KernelMeta", shared_dynamic: int) -> None:
        self.dyn_ptr = 0
        objects = meta.objects
        self.count = max((o[0] - abi.FIRST_STATIC_TAG + 1 for o in objects), default=0)
        self.table = np.zeros(max(self.count, 1), dtype=abi.BOUNDS_DTYPE)
        self.table["space"] = -1                    # (a tag the kernel does not use names nothing)
        for tag, _name, space, lo, hi, dynamic in objects:
            if dynamic:
                lo, hi = meta.dynamic_offset, meta.dynamic_offset + shared_dynamic
                self.dyn_ptr = abi.tagged(tag, lo)
            self.table[tag - abi.FIRST_STATIC_TAG] = (lo, hi, 0, _SPACE[space], 0)
        self.base = abi.as_int64(self.table.ctypes.data - _STATIC_BIAS)

    def bind(self, ctx: np.ndarray) -> None:
        """Name this table in a run's ctx (the run keeps these Entries alive)."""
        ctx[abi.C_STATIC_BOUNDS] = self.base
        ctx[abi.C_STATIC_TAGS] = self.count
