"""Ranges of blocks for the block workers (block_workers.py).

The grid's linear block indices are cut into consecutive ranges, handed
out in order; each is one native call (block_runner.run_range) on the
worker that takes it, and at most 2^20 threads, so a progress bar moves.

Guided self-scheduling (C. D. Polychronopoulos and D. J. Kuck, "Guided
self-scheduling", IEEE Trans. Computers 36(12), 1987): each range is
1/(2N) of the blocks not yet handed out to N workers, at least 1/(64N) of
the grid, so the ranges shrink toward the end and the workers, each taking
the next range when it finishes one, finish together (one waits for the
other at most about the last range: 1/128 of a two-worker launch; a range
costs one native call, some microseconds, so the few more ranges cost
nothing that shows). With counters on, a
range's trace goes to the memory model in batches of at most a trace
buffer, and each batch has a fixed cost besides its requests (its Python,
the native chain's set-up), while a range's last batch is seldom full: once a finished
range has told the records per block, `GuidedRanges.in_units` makes every
range one worker batch of records (worker_copy.WORKER_TRACE_RECORDS), so
the launch charges about as many batches as it has ranges, and a batch
drains only at its range's end, not in the middle of a block (which
Python then finishes): vecadd 4M with counters on two workers went from
1.60x to 1.75x when ranges of three batches became ranges of one.

With counters on, one thread charges every batch in block order (the
caches: block_workers.py), between ranges of its own: that ordered chain
can only go as fast as the batches reach it in order, so there the ranges
are even (`even=True`: every range 1/(16N) of the grid), not guided: a large
first range would hold back the chain while the other workers run ahead
(a model of two workers whose ordered step is 44% of the work: 1.96x with
even ranges of 1/32 of the grid, 1.60x with guided ones).

`block_ranges` is the plain rule, the ranges `GuidedRanges` hands out when
nothing raises the smallest (tests/test_block_ranges.py).
"""
from __future__ import annotations

import functools
import threading
from typing import Optional

MOST_THREADS = 1 << 20      # per range: a progress bar hears of every range
GUIDED_PARTS = 64           # guided ranges: at least 1/(GUIDED_PARTS * N) of the grid
EVEN_PARTS = 16             # even ranges: 1/(EVEN_PARTS * N) of the grid (before in_units)


def blocks_per_batch(capacity: int, blocks: int, records: int) -> int:
    """Blocks whose trace fills a batch of `capacity` records, where `blocks`
    blocks wrote `records` (2% spare: blocks differ a little), the unit
    `GuidedRanges.in_units` takes."""
    return int(0.98 * capacity * blocks / records)


def _most(threads_per_block: int) -> int:
    return max(1, MOST_THREADS // max(threads_per_block, 1))


def _guided(left: int, nworkers: int, least: int, most: int) -> int:
    """The next range's size: 1/(2N) of what is left, within [least, most]."""
    return min(max(-(-left // (2 * nworkers)), least), most)


@functools.lru_cache(maxsize=64)
def block_ranges(total: int, nworkers: int, threads_per_block: int) -> tuple:
    """The grid's blocks 0..total-1 as consecutive ranges: about 4 for one
    worker; guided self-scheduling for several. Worked out once per launch
    shape (a tuple, kept: the next launch of the shape takes it as it is)."""
    most = _most(threads_per_block)
    if nworkers <= 1:
        per = max(1, min(-(-total // 4), most))
        return tuple(range(lo, min(lo + per, total)) for lo in range(0, total, per))
    least = max(1, -(-total // (GUIDED_PARTS * nworkers)))
    out, lo = [], 0
    while lo < total:
        per = _guided(total - lo, nworkers, least, most)
        out.append(range(lo, min(lo + per, total)))
        lo += per
    return tuple(out)


class GuidedRanges:
    """Hands out the ranges of blocks lo..hi-1 in order, to several threads:
    `take` gives (sequence number, range) or None when none is left. `even`:
    every range the same size (1/(16N) of the grid, or one unit once
    `in_units` sets it); else guided, at least 1/(64N) of the grid."""

    def __init__(self, lo: int, hi: int, nworkers: int, threads_per_block: int,
                 even: bool = False) -> None:
        self._lo, self._hi = lo, hi
        self._even = even
        self._n = max(nworkers, 1)
        self._most = _most(threads_per_block)
        parts = EVEN_PARTS if even else GUIDED_PARTS
        self._least = max(1, -(-(hi - lo) // (parts * self._n)))
        self._unit = 0          # in_units: even ranges are this many blocks
        self._seq = 0
        self._closed = False
        self._lock = threading.Lock()

    @property
    def handed(self) -> int:
        """Ranges handed out so far."""
        return self._seq

    def take(self) -> Optional[tuple]:
        """The next (sequence number, range), or None: all handed out, or closed."""
        with self._lock:
            if self._closed or self._lo >= self._hi:
                self._closed = True
                return None
            if self._even:
                per = min(self._unit or self._least, self._most)
            else:
                per = _guided(self._hi - self._lo, self._n, self._least, self._most)
            r = range(self._lo, min(self._lo + per, self._hi))
            self._lo = r.stop
            self._seq += 1
            return self._seq - 1, r

    def in_units(self, blocks: int) -> None:
        """Even ranges from now on are `blocks` long (those that fill a
        worker's batch), at most the largest a range may be."""
        with self._lock:
            self._unit = max(1, int(blocks))

    def close(self) -> None:
        """Hand out nothing more (a batch failed: the rest need not run)."""
        with self._lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        """Whether `take` will give nothing more (set by the take that found none)."""
        return self._closed
