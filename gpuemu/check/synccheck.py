"""synccheck for warp-level operations: masks naming lanes that are not there.

CUDA C Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions"
and "Synchronization Functions" (__syncwarp): every lane named in `mask`
must execute the same intrinsic with the same mask, the calling lane must be
in its own mask, and a shuffle reading a lane that is inactive or outside
the mask gets an undefined value. Lanes beyond the block's last thread do
not exist and are not required.

Rules per active lane l of one warp-level operation (active mask m, the
lane's mask argument M, for shuffles the source lane j):
- missing lanes: (M & existing & ~m) != 0, or lane l not in M;
- a shuffle's source: j != l and (j not in m or j not in M).
__syncwarp and votes report `barrier_divergence`, shuffles `invalid_shuffle`.
"""
from __future__ import annotations

import numpy as np

from gpuemu.jit import abi

LANES = np.arange(abi.WARP, dtype=np.int64)
SHUFFLES = {"shfl", "shfl_up", "shfl_down", "shfl_xor"}
WARP_SYNCS = {"syncwarp", "ballot", "all", "any"}


def lane_problems_reference(m: int, masks: list, srcs: list, existing: int, shuffle: bool) -> list:
    """[(lane, missing lanes, bad source lane or -1)] of one operation (plain Python)."""
    out = []
    for lane in range(abi.WARP):
        if not m >> lane & 1:
            continue
        mk = masks[lane] & 0xFFFFFFFF
        missing = mk & existing & ~m & 0xFFFFFFFF
        if not mk >> lane & 1:
            missing |= 1 << lane
        bad_src = -1
        j = srcs[lane]
        if shuffle and j != lane and 0 <= j < abi.WARP and (not m >> j & 1 or not mk >> j & 1):
            bad_src = j
        if missing or bad_src >= 0:
            out.append((lane, missing, bad_src))
    return out


def lane_problems(mask: np.ndarray, addr: np.ndarray, existing: np.ndarray, shuffle: np.ndarray) -> tuple:
    """Vectorised over N records: (record, lane, missing, bad source) arrays."""
    m = mask.astype(np.int64)[:, None]
    mk = (addr >> 32) & 0xFFFFFFFF
    src = addr & 0xFFFFFFFF
    src = np.where(src >= abi.WARP, -1, src)
    active = (m >> LANES) & 1 == 1
    missing = mk & existing[:, None] & ~m & 0xFFFFFFFF
    missing |= np.where((mk >> LANES) & 1 == 0, 1 << LANES, 0)
    jj = np.maximum(src, 0)
    bad = (shuffle[:, None] & (src >= 0) & (src != LANES)
           & ((((m >> jj) & 1) == 0) | (((mk >> jj) & 1) == 0)))
    hit = active & ((missing != 0) | bad)
    r, lane = np.nonzero(hit)
    return r, lane, missing[r, lane], np.where(bad[r, lane], src[r, lane], -1)


def why(lane: int, missing: int, mask: int, active: int, bad_src: int) -> str:
    """The words of one lane's problem (lane_problems' columns; `mask`: the
    lane's mask argument, `active`: the operation's active lanes)."""
    if bad_src >= 0:
        return f"reads lane {bad_src}, which is not active here or not in the mask (its value is undefined)"
    out = []
    if missing >> lane & 1:
        # the Guide: "the executing thread must be in the mask"
        out.append(f"is called by lane {lane}, which is not in its own mask {mask & 0xFFFFFFFF:#010x} "
                   f"(the calling thread must be in the mask)")
    others = missing & ~(1 << lane)
    if others:
        out.append(f"its mask names lanes {others:#010x} that do not execute it with this lane "
                   f"(active lanes {active:#010x})")
    return "; ".join(out)
