"""Where the coalescer writes a batch's sectors: kept, its pages mapped as written.

native_coalescer's pass writes each global or local request's distinct
32-byte sectors into one array, which must hold the batch's bound: two
sectors a lane and interleaved word, 64 a request, 4 MB for a trace buffer
of 8,192 requests, where a coalesced batch writes a sixteenth of that (four
sectors a request of 32 floats). Made per batch with np.empty, its written
pages were fresh memory whenever malloc had handed the last one's back to
the system: a page fault each (3 us here), most of the faults of a
two-worker launch with counters on. Kept at its bound with each trace
buffer's NativeBatch, a kept run of two workers went over launch_plan's
byte budget and lost its worker copies.

So the array is an anonymous mapping, kept by its NativeBatch: a page is
mapped when the pass first writes it, and the store holds the pages up to
the most sectors a batch wrote (`nbytes`, what a kept run's budget counts),
not its bound. Huge pages are declined where the system would give them
(one 2 MB page for a 4-KB write).
"""
from __future__ import annotations

import mmap

import numpy as np

PAGE = mmap.PAGESIZE


class SectorStore:
    """A batch's sector array, reused from batch to batch (`for_batch`); the
    caller reports how many it wrote (`wrote`)."""
    __slots__ = ("array", "most", "_map")

    def __init__(self) -> None:
        self.array: np.ndarray | None = None
        self.most = 0            # the most int64 sectors a batch wrote (pages mapped up to there)
        self._map = None

    def for_batch(self, bound: int) -> np.ndarray:
        """An int64 array of at least `bound` entries (its pages mapped only as written)."""
        a = self.array
        if a is None or a.size < bound:
            size = max(bound, 1) * 8
            m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if hasattr(m, "madvise") and hasattr(mmap, "MADV_NOHUGEPAGE"):
                m.madvise(mmap.MADV_NOHUGEPAGE)
            a = self.array = np.frombuffer(m, dtype=np.int64)
            self._map, self.most = m, 0
        return a

    def wrote(self, sectors: int) -> None:
        """A batch wrote `sectors` entries from the start."""
        if sectors > self.most:
            self.most = sectors

    @property
    def nbytes(self) -> int:
        """Bytes of the pages it holds: those written, up to the most a batch wrote."""
        return -(-self.most * 8 // PAGE) * PAGE
