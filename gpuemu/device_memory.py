"""Emulated device memory: allocations with device addresses and fat-pointer tags.

Every allocation (a global buffer, a `__device__` or `__constant__` symbol)
gets a tag (bits 48-63 of a pointer) and an entry in the bounds table that
native code checks on every access. A kernel's static tags (FIRST_STATIC_TAG
and up: its shared arrays and local objects) are looked up in its run's own
table instead (gpuemu/machine/static_tags.py); their rows here stay free
(space -1), so a static tag beyond the run's table names nothing. Global allocations are 256-byte aligned
in a 47-bit device address range starting at 0x7f0000000000, as
cudaMalloc and CuPy's pool align them; the coalescer's counts depend on it.
Addresses are handed out in order from the range's start (a program's
addresses do not depend on what it freed); once the range's end is reached,
freed ranges are used again (first fit, coalesced), and where live
allocations fill it, allocating raises MemoryError as cudaMalloc fails with
cudaErrorMemoryAllocation.
Constant symbols live in a per-module 64 KB bank (CUDA C Programming Guide,
"Device Memory Spaces": 64 KB of constant memory) and are addressed by their
offset in it.
"""
from __future__ import annotations

import threading
import weakref
from typing import Optional

import numpy as np

from gpuemu import aligned_memory
from gpuemu.jit import abi

GLOBAL_BASE = 0x7F00_0000_0000
GLOBAL_ALIGN = 256        # cudaMalloc / CuPy memory pool alignment
GLOBAL_END = 1 << abi.ADDR_BITS   # every address below it (the tag lies above)
SPACE_CODE = {"global": 0, "shared": 1, "local": 2, "constant": 3}


class Allocation:
    """One object of device memory. `host` is the numpy bytes behind it."""

    def __init__(self, memory: "DeviceMemory", tag: int, address: int, host: np.ndarray,
                 space: str, name: str = ""):
        self.memory = memory
        self.tag = tag
        self.address = address
        self.host = host
        self.space = space
        self.name = name
        self.nbytes = host.nbytes
        self.pointer = abi.tagged(tag, address)    # the fat pointer a kernel receives


class DeviceMemory:
    """The device's allocations and the bounds table of their tags that native code reads."""

    def __init__(self) -> None:
        self.bounds = np.zeros(abi.N_TAGS, dtype=abi.BOUNDS_DTYPE)
        self.bounds["space"] = -1
        self._next_addr = GLOBAL_BASE
        self._free_tags: list = []
        self._next_tag = abi.FIRST_ALLOC_TAG
        # re-entrant: a garbage collection inside allocate() may run _release
        self._lock = threading.RLock()
        self.by_tag: dict = {}

    def _new_tag(self) -> int:
        if self._free_tags:
            return self._free_tags.pop()
        if self._next_tag > abi.LAST_ALLOC_TAG:
            raise MemoryError("too many live device allocations (tag space exhausted)")
        t = self._next_tag
        self._next_tag += 1
        return t

    def allocate(self, nbytes: int, space: str = "global", name: str = "",
                 address: Optional[int] = None, host: Optional[np.ndarray] = None) -> Allocation:
        """A new zeroed allocation (or one over `host` bytes)."""
        with self._lock:
            tag = self._new_tag()
            if host is None:
                try:
                    # host bytes on a GLOBAL_ALIGN boundary, as the device address is: a
                    # warp's 128-byte access then touches the host cache lines it would
                    # on the GPU (numpy's own start 16 bytes past one: three 64-byte lines
                    # for two), and two allocations never share one
                    host = aligned_memory.zeros(int(nbytes), np.uint8, GLOBAL_ALIGN)
                except (MemoryError, ValueError):    # (ValueError: beyond what numpy can index)
                    self._free_tags.append(tag)
                    raise MemoryError(f"out of memory allocating {int(nbytes):,} bytes of "
                                      f"{space} memory (the emulator holds it in host memory)") from None
            if address is None:
                try:
                    address = self._new_address(nbytes)
                except MemoryError:
                    self._free_tags.append(tag)
                    raise
            e = self.bounds[tag]
            e["lo"], e["hi"] = address, address + int(nbytes)
            e["host"] = host.ctypes.data if host.size else 0
            e["space"] = SPACE_CODE[space]
            alloc = Allocation(self, tag, address, host, space, name)
            self.by_tag[tag] = weakref.ref(alloc)
            weakref.finalize(alloc, self._release, tag, host)
        return alloc

    def _new_address(self, nbytes: int) -> int:
        """The next address in order while the range lasts, then the first
        gap between live allocations large enough (under _lock)."""
        size = span(nbytes)
        if self._next_addr + size <= GLOBAL_END:
            address = self._next_addr
            self._next_addr += size
            return address
        lo = GLOBAL_BASE            # the first gap large enough between the live allocations
        for start, end in self._taken():
            if start - lo >= size:
                return lo
            lo = max(lo, end)
        if GLOBAL_END - lo >= size:
            return lo
        raise MemoryError(f"out of device memory: no free range of {size} bytes left in the "
                          f"device address space ({GLOBAL_BASE:#x} to {GLOBAL_END:#x}) "
                          "beside the live allocations")

    def _taken(self) -> list:
        """(start, end) of the live allocations' addresses in the range, sorted
        (once the range is spent; the free ranges are what lies between)."""
        spans = []
        for tag, ref in self.by_tag.items():
            lo, hi = int(self.bounds[tag]["lo"]), int(self.bounds[tag]["hi"])
            if ref() is not None and GLOBAL_BASE <= lo < GLOBAL_END:
                spans.append((lo, lo + span(hi - lo)))
        return sorted(spans)

    def _release(self, tag: int, host) -> None:
        with self._lock:
            self.bounds[tag]["space"] = -1
            self.by_tag.pop(tag, None)
            self._free_tags.append(tag)

    def live_allocations(self, space: Optional[str] = None) -> list:
        """The allocations alive now (those of `space` if given), by device
        address. The table is read under the lock: a garbage collection may
        free an allocation meanwhile."""
        with self._lock:
            refs = list(self.by_tag.values())
        allocs = [a for a in (r() for r in refs) if a is not None and (space is None or a.space == space)]
        allocs.sort(key=lambda a: a.address)
        return allocs

    def describe(self, tag: int) -> str:
        ref = self.by_tag.get(tag)
        a = ref() if ref else None
        if a is None:
            return ""
        return a.name or f"allocation at {a.address:#x} ({a.nbytes} bytes)"


def span(nbytes: int) -> int:
    """The addresses an allocation of nbytes takes: whole GLOBAL_ALIGN units, at least one."""
    return (max(int(nbytes), 1) + GLOBAL_ALIGN - 1) // GLOBAL_ALIGN * GLOBAL_ALIGN


_device_memory: Optional[DeviceMemory] = None


def device_memory() -> DeviceMemory:
    """The process's one emulated device memory."""
    global _device_memory
    if _device_memory is None:
        _device_memory = DeviceMemory()
    return _device_memory
