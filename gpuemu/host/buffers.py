"""Host buffers: pinned, mapped (zero-copy) and managed memory.

- `alloc_pinned(shape, dtype)`: a page-locked host array (numpy, as
  cupyx.empty_pinned gives); copies from/to it skip the staging copy.
- `alloc_mapped(shape, dtype)`: pinned host memory mapped into the device
  address space (cudaHostAlloc(..., cudaHostAllocMapped)): a kernel reads
  and writes it directly (no copy): what misses L1 crosses PCIe, and L2
  does not keep it (memory_system._apply_global). Its device addresses lie
  in MAPPED range.
- `alloc_managed(shape, dtype)`: managed memory (cudaMallocManaged): one
  address for host and device; pages start on the host and migrate to the
  device on the first kernel touch (a GPU page fault per migration block of
  `PcieLink.migrate_bytes`, Guide "Unified Memory Programming", on-demand
  page migration on sm_60+), and back to the host when the host touches
  them. We model this on-demand migration on every preset (before sm_60
  the driver copies whole allocations at launch instead: not modelled).

The memory system classifies a request by its address: `kind_of_addresses`.
"""
from __future__ import annotations

import weakref

import numpy as np

from gpuemu.device_array import DeviceArray, _device_dtype, _shape
from gpuemu.device_memory import device_memory, span

MAPPED_BASE = 0x7D00_0000_0000
MANAGED_BASE = 0x7E00_0000_0000
RANGE = 1 << 40

_next = {"mapped": MAPPED_BASE, "managed": MANAGED_BASE}
_live = [0]          # mapped and managed allocations alive now (host_memory_in_use)
# managed migration blocks now on the device: block id -> allocation
_device_resident: set = set()


class PinnedArray(np.ndarray):
    """A numpy array in page-locked host memory."""
    pinned = True


def alloc_pinned(shape, dtype=np.float64) -> PinnedArray:
    """Page-locked host memory (cudaMallocHost / cupyx.empty_pinned), zeroed."""
    shape, dtype = _shape(shape), _device_dtype(dtype)
    try:
        return np.zeros(shape, dtype=dtype).view(PinnedArray)
    except (MemoryError, ValueError):       # (ValueError: beyond what numpy can index)
        n = int(np.prod([int(d) for d in shape], dtype=object)) * dtype.itemsize
        raise MemoryError(f"out of memory allocating {n:,} bytes of pinned host memory") from None


def is_pinned(a) -> bool:
    return bool(getattr(a, "pinned", False))


def _place(kind: str, nbytes: int) -> int:
    addr = _next[kind]
    _next[kind] += span(nbytes)
    return addr


class MappedArray(DeviceArray):
    """Mapped pinned host memory: the kernel's accesses cross PCIe.

    `.host` is the numpy view the host reads and writes (no copy)."""
    kind = "mapped"

    @property
    def host(self) -> np.ndarray:
        """The host's numpy view of the buffer (no copy)."""
        return self._view()

    def get(self, stream=None, out=None) -> np.ndarray:
        """The data, read by the host where it lives: no copy is charged."""
        if out is not None:
            out[...] = self._view().reshape(out.shape)
            return out
        return self._view().copy()

    def set(self, arr, stream=None) -> None:
        """Write the data where it lives, on the host: no copy is charged."""
        self._view()[...] = self._source(arr).reshape(self.shape)


class ManagedArray(DeviceArray):
    """Managed memory. Host access (get, set, [], host) migrates the
    touched pages back to the host; see the module docstring."""
    kind = "managed"

    def _blocks(self, block_bytes: int) -> range:
        lo = (self.device_address - MANAGED_BASE) // block_bytes
        hi = (self.device_address + max(self.nbytes, 1) - 1 - MANAGED_BASE) // block_bytes
        return range(lo, hi + 1)

    def _to_host(self) -> None:
        from .streams import timeline
        tl = timeline()
        blocks = [b for b in self._blocks(tl.link.migrate_bytes) if b in _device_resident]
        for b in blocks:
            _device_resident.discard(b)
        if blocks:
            tl.host_faults(len(blocks), len(blocks) * tl.link.migrate_bytes)

    @property
    def host(self) -> np.ndarray:
        """The host's view; the pages on the device come back first."""
        self._to_host()
        return self._view()

    def get(self, stream=None, out=None) -> np.ndarray:
        """The data (pages on the device come back first)."""
        self._to_host()
        if out is not None:
            out[...] = self._view().reshape(out.shape)
            return out
        return self._view().copy()

    def set(self, arr, stream=None) -> None:
        """Write the data on the host (pages on the device come back first)."""
        a = self._source(arr)
        self._to_host()
        self._view()[...] = a.reshape(self.shape)

    def __setitem__(self, key, value) -> None:
        self._to_host()
        self._view()[key] = value

    def __getitem__(self, key):
        self._to_host()
        return self._view()[key].copy()


def _new(cls, kind: str, shape, dtype):
    shape, dtype = _shape(shape), _device_dtype(dtype)     # (numpy's errors, in gpuemu's words)
    n = int(np.prod([int(d) for d in shape], dtype=object)) * dtype.itemsize
    alloc = device_memory().allocate(n, "global", name=f"{kind} host memory",
                                     address=_place(kind, n))
    _live[0] += 1
    weakref.finalize(alloc, _freed)
    return cls(alloc, shape, dtype)


def _freed() -> None:
    """A mapped or managed allocation died (its addresses fault from now on)."""
    _live[0] -= 1


def alloc_mapped(shape, dtype=np.float64) -> MappedArray:
    """Mapped pinned host memory a kernel reads over PCIe (zero-copy), zeroed."""
    return _new(MappedArray, "mapped", shape, dtype)


def alloc_managed(shape, dtype=np.float64) -> ManagedArray:
    """Managed memory (cudaMallocManaged), zeroed, resident on the host."""
    return _new(ManagedArray, "managed", shape, dtype)


def host_memory_in_use() -> bool:
    """Whether a mapped or managed buffer is alive (else no request can reach
    host memory: a freed one's addresses fault, and the memory system skips
    the address check)."""
    return _live[0] > 0


def kind_of_addresses(addr: np.ndarray) -> np.ndarray:
    """0 device, 1 mapped host (zero-copy), 2 managed, per address."""
    a = np.asarray(addr, dtype=np.int64)
    out = np.zeros(a.shape, dtype=np.int8)
    out[(a >= MAPPED_BASE) & (a < MAPPED_BASE + RANGE)] = 1
    out[(a >= MANAGED_BASE) & (a < MANAGED_BASE + RANGE)] = 2
    return out


def touch_managed(addr: np.ndarray, block_bytes: int) -> np.ndarray:
    """Device touches of managed addresses (flat array): the migration
    blocks that were not on the device, now made resident (first-touch
    faults), as an array of block ids."""
    blocks = np.unique((np.asarray(addr, dtype=np.int64) - MANAGED_BASE) // block_bytes)
    new = [b for b in blocks.tolist() if b not in _device_resident]
    _device_resident.update(new)
    return np.asarray(new, dtype=np.int64)


def managed_blocks_of(arr: ManagedArray, block_bytes: int) -> list:
    return list(arr._blocks(block_bytes))
