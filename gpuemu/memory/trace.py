"""The contract between the machine and the memory model.

The native warp functions do not decide what an access costs. They record
every warp-level memory request (which instruction, which lanes, the 32
device addresses) into a trace buffer; the machine hands full buffers to the
memory system as an `AccessBatch`, and the memory system charges them by the
preset's rules into a `Stats`. Requests of a batch are in issue order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Space codes used in AccessBatch.space and by the native code.
SPACE_CODES = {"global": 0, "shared": 1, "local": 2, "constant": 3, "param": 4}
SPACE_NAMES = {v: k for k, v in SPACE_CODES.items()}
SYNC_PREFIX = "sync_"    # MemInstr.op of a recorded warp-level operation or fence ("sync_shfl")


def sync_op(op: str):
    """The operation a sync pseudo-instruction records ("shfl", "syncwarp",
    "threadfence", ...), or None for a memory access."""
    return op[len(SYNC_PREFIX):] if op.startswith(SYNC_PREFIX) else None


@dataclass(frozen=True)
class MemInstr:
    """One memory instruction of a compiled kernel (static)."""
    id: int
    op: str        # 'ld' | 'st' | 'atom' (result used) | 'red' (atomic, result unused)
    size: int      # bytes per lane: 1, 2, 4, 8 or 16
    line: int      # 1-based source line
    space: str     # statically known space, or 'generic' (then see batch.space)
    # warp instructions between issuing a load (or an atomic whose result
    # is used) and the first instruction that reads its value, in the order
    # the warp executes them (gpuemu/jit/use_distance.py): timing mode waits
    # for the value there, not at issue
    use_distance: int = 0
    readonly: bool = False   # a load through the read-only data cache (isa/readonly_path.py)
    spill: bool = False      # a register spill load/store (isa/register_spill.py)
    texture: bool = False    # a texel fetch (isa/texture_fetch.py), also `readonly`
    volatile: bool = False   # ld/st.volatile: a relaxed sys-scope access in the PTX memory model


@dataclass
class AccessBatch:
    """N warp-level requests, in the order they were issued.

    instr  int32[N]    MemInstr.id
    mask   uint32[N]   lanes that took part (bit i = lane i)
    addr   int64[N,32] byte address per lane (meaningless where the lane's
                       mask bit is 0): the device address (tag bits cleared)
                       for global; the byte offset inside the block's shared
                       memory for shared (static arrays first, in declaration
                       order, then the dynamic region), inside the thread's
                       local window for local, inside the constant bank for
                       constant
    space  int8[N]     SPACE_CODES of the request (resolved at run time)
    sm     int32[N]    SM the issuing block runs on (for L1)
    block  int32[N]    linear block index
    warp   int32[N]    warp index within the block
    """
    instr: np.ndarray
    mask: np.ndarray
    addr: np.ndarray
    space: np.ndarray
    sm: np.ndarray
    block: np.ndarray
    warp: np.ndarray

    def __len__(self) -> int:
        return int(self.instr.shape[0])
