"""The static tags of a device's bounds table: held by one kernel's runs at a time.

A kernel's `__shared__` arrays, local objects and parameters are tagged
FIRST_STATIC_TAG and up, numbered per kernel (gpuemu/jit/storage.py), and
the tags are compiled into its warp functions; their bounds are entries of
the device's one bounds table (gpuemu/device_memory.py), which every access
is checked against. So two kernels give one tag different bounds (and one
kernel at two dynamic shared sizes gives its dynamic array two), and a run
whose entries are not in the table meanwhile would find its arrays with
the other kernel's bounds: a spurious out_of_bounds error, or a missed one.

A run therefore holds the static tags while its warps run
(`Entries.hold`, then `Entries.let_go`): runs whose entries are the same
(one kernel and shape: block workers, concurrent launches of one kernel)
hold them together; a run with other entries waits until no run holds
them, then writes its own and frees the other static tags. Launches of two
kernels from two Python threads so take turns, each with its own arrays'
bounds. A launch of another kernel from a running launch's progress
callback would wait for that launch, on its own thread: it raises
LaunchError instead (`in_callback` marks the callback); made on another
thread that the callback waits for, it raises LaunchError once every
holder has been in its callback for CALLBACK_WAIT_S.

A hold is a lock taken twice, a few hundred nanoseconds: a small launch
with counters off costs some 18 us here (gpuemu/machine/launch_cache.py).
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from gpuemu.errors import LaunchError
from gpuemu.jit import abi

if TYPE_CHECKING:
    from gpuemu.device_memory import DeviceMemory
    from gpuemu.jit.compiler import KernelMeta

_SPACE = {"shared": 1, "local": 2, "param": 4}
# A run waiting for the tags gives up (LaunchError) once every holder has
# been inside its progress callback this long: a callback waiting for a
# launch of another kernel on another thread would otherwise wait forever
# (a progress callback reports and returns; it does not take seconds).
CALLBACK_WAIT_S = 2.0
_POLL_S = 0.05
_made = threading.Lock()        # makes a device memory's StaticTags once
_local = threading.local()      # .callback: inside how many running launches' progress callbacks


class StaticTags:
    """Who holds a device memory's static tags: the key of the entries in the
    table, how many runs hold them, how many runs wait for other entries."""

    def __init__(self, bounds: np.ndarray) -> None:
        self.bounds = bounds
        self.lock = threading.Lock()
        self.turn = threading.Condition(self.lock)
        self.key = None          # the entries the table holds now
        self.users = 0           # runs holding them
        self.waiting = 0         # runs waiting for the holders to let go
        self.calling = 0         # holders now inside their launch's progress callback


def of(memory: "DeviceMemory") -> StaticTags:
    """The StaticTags of a device memory (made on first use)."""
    st = memory.__dict__.get("_static_tags")
    if st is None:
        with _made:
            st = memory.__dict__.get("_static_tags")
            if st is None:
                st = memory._static_tags = StaticTags(memory.bounds)
    return st


class Entries:
    """A run's static entries: its tags, their bounds rows, the dynamic shared
    pointer, the mask of the other static tags (freed when it binds), the
    key that runs which may hold the tags together share, and the device
    memory's StaticTags (`table`)."""
    __slots__ = ("tags", "rows", "dyn_ptr", "others", "key", "table")

    def __init__(self, meta: "KernelMeta", shared_dynamic: int, memory: "DeviceMemory") -> None:
        tags, rows, self.dyn_ptr = [], [], 0
        for tag, _name, space, lo, hi, dynamic in meta.objects:
            if dynamic:
                lo, hi = meta.dynamic_offset, meta.dynamic_offset + shared_dynamic
                self.dyn_ptr = abi.tagged(tag, lo)
            tags.append(tag)
            rows.append((lo, hi, 0, _SPACE[space], 0))
        self.tags = np.array(tags, dtype=np.int64)
        self.rows = np.array(rows, dtype=abi.BOUNDS_DTYPE)
        self.others = np.ones(abi.N_TAGS - abi.FIRST_STATIC_TAG, dtype=bool)
        self.others[self.tags - abi.FIRST_STATIC_TAG] = False
        self.key = (self.tags.tobytes(), self.rows.tobytes())
        self.table = of(memory)

    def write(self, bounds: np.ndarray) -> None:
        """Into the table: these entries, and every other static tag freed."""
        bounds[self.tags] = self.rows
        bounds["space"][abi.FIRST_STATIC_TAG:][self.others] = -1

    def hold(self) -> "Entries":
        """Hold the static tags with these entries in the table (waiting for
        runs with others to let go; one with these waits too while a run with
        others waits, so that one is not starved)."""
        t, key = self.table, self.key
        t.lock.acquire()
        try:
            if t.users and (t.key is not key or t.waiting):
                self._wait(t)
            if t.key is not key:
                if t.key != key:
                    self.write(t.bounds)
                t.key = key
            t.users += 1
        finally:
            t.lock.release()
        return self

    def _wait(self, t: StaticTags) -> None:
        """hold's slow path (t.lock held): wait until these entries may be held."""
        same = t.key == self.key
        if getattr(_local, "callback", 0):      # this thread's own launch holds the tags
            if same:
                return
            raise LaunchError("a launch of another kernel (or shape) from a running launch's progress "
                              "callback: it would wait for that launch to end")
        if same and not t.waiting:
            return
        t.waiting += 1
        try:
            since = None
            while t.users:
                t.turn.wait(_POLL_S)
                if not (t.users and t.calling >= t.users):
                    since = None
                elif since is None:
                    since = time.monotonic()
                elif time.monotonic() - since > CALLBACK_WAIT_S:
                    raise LaunchError(
                        f"the device's static tags are held by a launch whose progress callback has run "
                        f"for over {CALLBACK_WAIT_S:g} s: a launch of another kernel (or shape) that this "
                        f"callback waits for, on another thread, would never start")
        finally:
            t.waiting -= 1

    def __enter__(self) -> "Entries":
        return self                      # (`with entries.hold():` held until the block ends)

    def __exit__(self, *exc) -> None:
        self.let_go()

    def let_go(self) -> None:
        """The run that held the tags has stopped running warps."""
        t = self.table
        t.lock.acquire()
        t.users -= 1
        if t.waiting and not t.users:
            t.turn.notify_all()
        t.lock.release()


def in_callback(progress: Optional[Callable[[int], None]],
                table: StaticTags) -> Optional[Callable[[int], None]]:
    """A running launch's progress callback, marked while it runs: a launch
    it makes on its own thread must not wait for the tags its own launch
    holds, and one it waits for on another thread waits at most
    CALLBACK_WAIT_S while every holder of `table` is in its callback."""
    if progress is None:
        return None

    def marked(blocks: int) -> None:
        _local.callback = getattr(_local, "callback", 0) + 1
        with table.lock:
            table.calling += 1
        try:
            progress(blocks)
        finally:
            _local.callback -= 1
            with table.lock:
                table.calling -= 1
    return marked
