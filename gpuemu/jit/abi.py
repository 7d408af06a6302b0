"""The binary contract between native warp functions and the machine.

A compiled warp function is ``i32 warp_fn(i8* frame, i8* ctx)``. ``frame`` is
the warp's private state (header below, then one 32-lane slot per register
variable and mask, then the 32 lanes' local memory windows); ``ctx`` is one
int64 array per launch (fields below). The return value is an event code.
Everything here is plain data so the machine (Python, numpy) and the code
generator (llvmlite) read the same numbers.
"""
from __future__ import annotations

import numpy as np

WARP = 32
ADDR_BITS = 48                       # low 48 bits: device address
ADDR_MASK = (1 << ADDR_BITS) - 1     # bits 48..63: allocation tag

# ---------------------------------------------------------------- events
EV_EXIT = 0          # every lane of the warp has returned
EV_BARRIER = 1       # waits at __syncthreads (frame.event_line = its line)
EV_TRACE_FULL = 2    # trace buffer has no room: drain it, then call again
EV_FAULT = 3         # bad memory access: ctx fault fields say what
EV_TIMEOUT = 4       # watchdog: back-edge budget spent (frame.event_line)
EV_SPLIT = 5         # independent thread scheduling: lanes F_SPLIT_MASK, parked after
                     # a spinning loop, become a fragment resuming at F_SPLIT_RESUME
EV_YIELD = 6         # a loop ran YIELD_EVERY back edges: let other warps run (a warp
                     # that spins on another's flag must not starve it)
YIELD_EVERY = 1024   # a power of two
EVENT_NAMES = {EV_EXIT: "exit", EV_BARRIER: "barrier", EV_TRACE_FULL: "trace_full",
               EV_FAULT: "fault", EV_TIMEOUT: "timeout", EV_SPLIT: "split", EV_YIELD: "yield"}

# ------------------------------------------------------ frame header (bytes)
F_RESUME = 0         # i32 resume point (0 = start)
F_VALID = 4          # i32 lanes that exist (partial last warp)
F_WARP = 8           # i32 warp index within the block
F_BLOCK = 12         # i32 linear block index
F_CTAID = 16         # i32 x3 blockIdx
F_SM = 28            # i32 SM the block runs on
F_SHARED = 32        # i64 host address of the block's shared memory
F_BACKEDGES = 40     # i64 loop back-edges taken (watchdog)
F_EXITED = 48        # i32 lanes that returned from the kernel
F_EVENT_LINE = 52    # i32 source line of the last barrier / timeout
F_ICOUNT = 56        # i64 warp instructions this warp has executed (timing mode; a warp
                     # fragment's has its id in bits 32-63: machine/thread_scheduling.py)
F_TID = 64           # <32 x i32> x3: threadIdx.x, .y, .z per lane
F_CUR = 448          # i32 current active mask
F_SPLIT_MASK = 452   # i32 lanes that leave with EV_SPLIT
F_SPLIT_RESUME = 456 # i32 resume point of those lanes
F_EPOCH = 464        # i32 __syncthreads passed (barrier interval; check tools)
F_WSYNC = 468        # i32 __syncwarp passed (warp-sync interval; check tools)
HEADER_BYTES = 512   # register/mask slots start here

# ------------------------------------------------------ ctx fields (int64 index)
C_BOUNDS = 0         # host address of the device's bounds table (allocation tags)
C_TRACE = 1          # host address of the trace buffer (0: no tracing)
C_TRACE_LEN = 2      # records in the trace buffer
C_TRACE_CAP = 3      # capacity in records
C_PARAMS = 4         # host address of the packed kernel parameters
C_SYMBOLS = 5        # host address of int64[] tagged pointers of module symbols
C_COUNTERS = 6       # host address of int64[nlines][N_LINE_COUNTERS]
C_BUDGET = 7         # back-edge budget per warp
C_NTID = 8           # blockDim x, y, z (8, 9, 10)
C_NCTAID = 11        # gridDim x, y, z (11, 12, 13)
C_FAULT_KIND = 14    # 1 out_of_bounds, 2 misaligned_access, 3 assert, 4 constant_write
C_FAULT_LANE = 15
C_FAULT_ADDR = 16    # device address (tag cleared)
C_FAULT_SPACE = 17   # space code, -1 when the tag names nothing
C_FAULT_INSTR = 18   # MemInstr id
C_FAULT_LINE = 19
C_FAULT_TAG = 20
C_NLINES = 21        # rows of the counter array (lines beyond are clamped)
C_LOCAL_OFF = 22     # frame offset of lane 0's local window
C_LOCAL_STRIDE = 23  # bytes between two lanes' local windows
C_DYN_SHARED = 24    # tagged pointer to the dynamic (extern) shared region
C_STORE_ORDER = 25   # host address of u8[32]: the order plain stores visit lanes
C_CHECK = 26         # nonzero: record warp-sync operations in the trace (check mode)
C_WARP_COUNTS = 27   # host address of a memory.warp_bank_counts state (0: none): shared
                     # loads and stores are counted there by its function, not traced
C_LANE_MOVES = 28    # loads and stores moved lane by lane, not as one whole-warp gather or scatter
                     # (jit/memory_access.py; tests read it)
C_PRINTF = 29        # host address of the printf buffer (int64 words; 0: none)
C_PRINTF_LEN = 30    # words written (entries: nwords, block, thread, format id, args...)
C_PRINTF_CAP = 31    # capacity in words
C_LANE_CHECKS = 32   # requests the vector checks did not pass, checked lane by lane (jit/memory_access.py;
                     # tests read it)
C_STATIC_BOUNDS = 33 # host address of the run's static table (its static tags' entries, in tag
                     # order) minus FIRST_STATIC_TAG entries: + tag * entry size = a static tag's entry
C_STATIC_TAGS = 34   # entries of that table: tags FIRST_STATIC_TAG up to FIRST_STATIC_TAG + this
                     # are looked up there, every other tag in C_BOUNDS's (jit/memory_access.py)
CTX_FIELDS = 35

FAULT_KINDS = {1: "out_of_bounds", 2: "misaligned_access", 3: "assert", 4: "constant_write"}

# Per-line counters kept natively, in this column order.
LINE_COUNTERS = ("warp_instructions", "thread_instructions", "divergent_branches",
                 "barriers", "fences")
N_LINE_COUNTERS = len(LINE_COUNTERS)

# ------------------------------------------------------------- bounds table
# One entry per tag: [lo, hi) device addresses the tag may touch, the host
# address of `lo` (global/constant), and the space code (-1: no object).
# Allocation tags index the device's table (gpuemu/device_memory.py); a
# kernel's static tags (its shared arrays, local objects and parameters,
# numbered per kernel from FIRST_STATIC_TAG) index its run's own small table
# (gpuemu/machine/static_tags.py), so kernels never share them; a static tag
# beyond the run's table finds the device table's entry, which names nothing.
BOUNDS_DTYPE = np.dtype([("lo", "<i8"), ("hi", "<i8"), ("host", "<i8"),
                         ("space", "<i4"), ("pad", "<i4")])
N_TAGS = 1 << 16
FIRST_ALLOC_TAG = 1            # global allocations and module symbols
LAST_ALLOC_TAG = 0xEFFF
FIRST_STATIC_TAG = 0xF000      # a kernel's shared arrays and local objects (its run's table)

# ------------------------------------------------------------- trace records
TRACE_DTYPE = np.dtype([("instr", "<i4"), ("mask", "<u4"), ("space", "<i4"),
                        ("block", "<i4"), ("warp", "<i4"), ("sm", "<i4"),
                        ("icount", "<i8"), ("addr", "<i8", (WARP,)), ("epoch", "<i8")])
# icount: the issuing warp's F_ICOUNT when the request was made (its position
# in the warp's instruction stream, which timing mode replays)
TRACE_RECORD_BYTES = TRACE_DTYPE.itemsize  # 296
# A record's `epoch` holds the warp's F_EPOCH (low 32 bits) and F_WSYNC (high
# 32 bits) when it was issued: the barrier and warp-sync intervals racecheck
# judges by. In check mode warp-sync operations (__syncwarp, shuffles, votes)
# are recorded too, with space SYNC_SPACE and, per lane, the operation's mask
# argument in bits 32-63 of addr and the source lane of a shuffle (-1: none)
# in bits 0-31.
TRACE_EPOCH_OFFSET = TRACE_DTYPE.fields["epoch"][1]
SYNC_SPACE = 5


def tagged(tag: int, address: int) -> int:
    """A fat pointer: allocation tag in bits 48-63, device address below."""
    return (tag << ADDR_BITS) | (address & ADDR_MASK)


def as_int64(v: int) -> int:
    """The same 64 bits as a signed value (for int64 numpy fields)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v
