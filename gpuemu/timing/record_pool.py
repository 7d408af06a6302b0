"""Storage for timing mode's stop-point records, reused from launch to launch.

A timing launch writes every stop point twice: packed as its trace batches
drain (the recorder's arena, warp_trace.TraceRecorder) and sorted by warp
(WarpPrograms.items, what the engine walks): 32 bytes each, 10 M points
(some 640 MB) for the 512x512 matmul. Fresh memory costs a page fault and
the kernel's zeroing per page on its first write (that launch on our 2-core
machine: 1.0-1.4 s of system time in 7-8 CPU seconds; 0.5 s with the pool), so the
storage goes back to this pool once nothing refers to it any more (the
arena when the programs are made, the items when the launch's report is
dropped) and the next launch writes into memory already mapped.

The pool keeps at most POOL_BYTES of free storage (`$GPUEMU_RECORD_POOL_BYTES`
sets another cap, 0 keeps none; the largest blocks go first when it would
hold more); `clear()` lets it all go. A request takes the smallest free block
that holds it, and only one at most FIT times its size: a small request
must not pin storage a next large one would have reused. A block is handed
out as a numpy view whose owner returns it when the last view of it dies
(weakref.finalize), so storage still in use is never handed out twice.
"""
from __future__ import annotations

import collections
import os
import threading
import weakref

import numpy as np

POOL_BYTES = 1 << 30          # free storage kept at most (unless $GPUEMU_RECORD_POOL_BYTES)
FIT = 4                       # a free block serves a request of at least 1/FIT its size
ALIGN = 64                    # a record never straddles two cache lines

_lock = threading.Lock()
_free: list = []              # free raw uint8 blocks, smallest first
# Blocks given back, not yet in _free. A finalizer may run inside a garbage
# collection that starts while this thread holds _lock, so it must not take
# the lock: it only appends here (deque appends are atomic); the lock's
# holders move these into _free.
_returned: collections.deque = collections.deque()


class _Lease:
    """The owner of a handed-out block's views (numpy's base for them)."""
    __slots__ = ("__array_interface__", "__weakref__")


def _give_back(raw: np.ndarray) -> None:
    _returned.append(raw)
    if _lock.acquire(blocking=False):     # (not inside a collection under the lock: later)
        try:
            _take_returned()              # the cap holds now, not at the next request
        except ValueError:                # a bad $GPUEMU_RECORD_POOL_BYTES: the next request says so
            pass
        finally:
            _lock.release()


if hasattr(os, "register_at_fork"):
    # a fork waits for the pool's lock: a lock held by a parent's thread stays
    # held in the child, whose next request would hang
    os.register_at_fork(before=_lock.acquire, after_in_parent=_lock.release,
                        after_in_child=_lock.release)


def cap_bytes() -> int:
    """The free storage the pool may keep: $GPUEMU_RECORD_POOL_BYTES (bytes, 0 keeps
    none), else POOL_BYTES."""
    text = os.environ.get("GPUEMU_RECORD_POOL_BYTES")
    if text is None:
        return POOL_BYTES
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"GPUEMU_RECORD_POOL_BYTES={text!r}: expected a whole number of bytes") from None
    if value < 0:
        raise ValueError(f"GPUEMU_RECORD_POOL_BYTES={text!r}: must be 0 or more")
    return value


def _take_returned() -> None:
    """Move the blocks given back into _free, keeping at most cap_bytes() (under _lock)."""
    if not _returned:
        return
    while _returned:
        _free.append(_returned.popleft())
    _free.sort(key=len)
    cap = cap_bytes()
    total = sum(len(r) for r in _free)
    while _free and total > cap:
        total -= len(_free.pop())             # the largest goes


def records(n: int, width: int, dtype=np.int32) -> np.ndarray:
    """A [n, width] array of `dtype`, its first element ALIGN-byte aligned, its contents
    undefined (the caller writes every record): the smallest free block of the pool
    large enough, when it is at most FIT times the size asked, else fresh memory."""
    n, width = max(int(n), 0), int(width)
    dt = np.dtype(dtype)
    need = n * width * dt.itemsize + ALIGN
    raw = None
    with _lock:
        _take_returned()
        for i, r in enumerate(_free):
            if len(r) >= need:
                if len(r) <= FIT * need:
                    raw = _free.pop(i)
                break
    if raw is None:
        raw = np.empty(need, np.uint8)
    lease = _Lease()
    start = raw.ctypes.data + (-raw.ctypes.data % ALIGN)
    lease.__array_interface__ = {"shape": (n, width), "typestr": dt.str, "data": (start, False),
                                 "version": 3}
    weakref.finalize(lease, _give_back, raw).atexit = False
    return np.asarray(lease)


def free_bytes() -> int:
    """Bytes of free storage the pool holds now."""
    with _lock:
        _take_returned()
        return sum(len(r) for r in _free)


def clear() -> None:
    """Let every free block go (storage in use returns to an empty pool later)."""
    with _lock:
        _returned.clear()
        _free.clear()
