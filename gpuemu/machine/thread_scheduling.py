"""Independent thread scheduling (sm_70+): warps that split into fragments.

CUDA C Programming Guide, "Independent Thread Scheduling": from Volta on,
each thread has its own program counter, so lanes that left a loop can run
on while other lanes of their warp still spin in it (an intra-warp spin lock
completes). Before Volta a diverged warp runs one path at a time and meets
again after the loop (SIMT stack), so the same lock never ends.

The JIT (warp_codegen.spin_split, ITS presets only) returns EV_SPLIT when a
loop has spun SPIN_LIMIT back edges in a row while lanes wait after it. The
machine then copies the warp's frame into a fragment: the fragment owns the
waiting lanes (F_VALID) and resumes after the loop; the original keeps the
spinning lanes. Every mask a frame restores is limited to its own lanes, so
the two never run the same lane. Fragments are scheduled like warps (they
meet again at __syncthreads and at exit; they are not merged back into one
frame, so a later warp-wide shuffle sees each fragment's lanes only).
"""
from __future__ import annotations

import numpy as np

from gpuemu.jit import abi

ALIGN = 64
# A fragment's F_ICOUNT: its id (the lanes it got at the split: unique in its
# warp, as fragments' lanes are nested or disjoint) in bits 32-63, the count
# in bits 0-31, going on from the split; the original frame's id is 0.
# Timing mode tells the fragments' points apart by it (gpuemu/timing/warp_fragments.py).
FRAGMENT_ID_SHIFT = 32
FRAGMENT_COUNT_MASK = (1 << 32) - 1


def split_warp(row: np.ndarray, frame_bytes: int, recorder=None) -> np.ndarray:
    """Split the frame `row` (int32 view) after EV_SPLIT; return the new
    fragment's frame (uint8, 64-byte aligned), owning F_SPLIT_MASK's lanes.
    A timing-mode `recorder` hears of the split first (recorder.split(row))."""
    if recorder is not None:
        recorder.split(row)
    buf = np.zeros(frame_bytes + ALIGN, dtype=np.uint8)
    off = (-buf.ctypes.data) % ALIGN
    frag = buf[off:off + frame_bytes]
    frag[:] = row.view(np.uint8)[:frame_bytes]
    moved = int(row[abi.F_SPLIT_MASK // 4])
    icount = frag[abi.F_ICOUNT:abi.F_ICOUNT + 8].view(np.int64)
    icount[0] = abi.as_int64((moved & 0xFFFFFFFF) << FRAGMENT_ID_SHIFT
                             | int(icount[0]) & FRAGMENT_COUNT_MASK)
    f32 = frag.view(np.int32)
    f32[abi.F_VALID // 4] = moved
    f32[abi.F_CUR // 4] = moved
    f32[abi.F_RESUME // 4] = row[abi.F_SPLIT_RESUME // 4]
    row[abi.F_VALID // 4] = np.int32(np.uint32(np.int64(row[abi.F_VALID // 4]) & ~moved & 0xFFFFFFFF))
    return frag
