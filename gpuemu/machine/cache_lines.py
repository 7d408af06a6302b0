"""Working state on memory pages of its own.

A launch's (and each block worker's) working state (its ctx, loop state,
warp frames, shared memory, counters) is read and written by native code
all through a launch. numpy's small arrays come from malloc 16-byte aligned
and side by side, so a warp frame's vectors may straddle two lines, and two
workers' arrays may share a line, every write of one thread taking the line
from the other's core (false sharing). Measured on the lent machine's CPU
(vecadd 1M, counters off, the same process taking turns with unpadded
state, 150 rounds, six runs): lines of their own made two workers 7-9%
faster (median of pairs 1.070-1.095), one worker 4-7%.

Lines of their own are not enough: the core's L2 streamer prefetches ahead
of a run of accesses anywhere in its 4 KB page, so a worker writing the end
of its frames pulls in, for ownership, the lines of the next array in that
page, another worker's frames (the run's and a copy's frames are made one
after the other). Vecadd 1M without counters on our 2-core machine, per
pair of the run's and its copy's allocations: 18 of 34 ran two workers at
1.33-1.57x, all 18 with the two frames in one page, and the 16 at 1.71-1.87x
none; on pages of their own 36 of 36 at 1.71-1.99x, one worker's time
unchanged (benchmarks/results/own_pages_*.txt). So `zeros` gives each
array pages no other allocation uses, and starts it at the next of
PAGE // LINE offsets into its page, so that a thread's small arrays (ctx,
loop state, launch array) do not all sit in the same L1 set. An array
then takes at least two pages of address space (8 KB; a run and each of
its worker copies hold some ten such arrays).
"""
from __future__ import annotations

import itertools

import numpy as np

from gpuemu import aligned_memory

# 128: Intel's spatial prefetcher fetches 64-byte lines in aligned pairs
# (Intel 64 and IA-32 Architectures Optimization Reference Manual, "Data
# Prefetching": the L2 streamer/adjacent-line prefetcher), so a neighbour
# one line away still contends
LINE = 128
# the L2 streamer's reach: "streams ... within a 4K page" (the same manual
# and section); the smallest page on x86-64 and aarch64 Linux
PAGE = 4096

_offsets = itertools.cycle(range(0, PAGE, LINE))


def zeros(shape, dtype) -> np.ndarray:
    """np.zeros(shape, dtype) on pages of its own, starting on a line (the
    next of the staggered offsets into its first page)."""
    return aligned_memory.zeros(shape, dtype, PAGE, pad=True, offset=next(_offsets))


def pages(a: np.ndarray) -> range:
    """The numbers of the PAGE-byte pages `a`'s data touches (at least its first)."""
    start = a.ctypes.data
    return range(start // PAGE, (start + max(a.nbytes, 1) - 1) // PAGE + 1)
