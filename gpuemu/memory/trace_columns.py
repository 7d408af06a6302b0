"""A run's trace records as the memory model's batch, in columns kept for the run.

The machine records warp requests as abi.TRACE_DTYPE records; the memory
model reads a batch as columns (trace.AccessBatch) and its native passes
read them through request_table.batch_arrays (contiguous columns of fixed
types, their addresses). A batch charged at once, before the trace buffer
is written again (LaunchRun._charge_records: one worker, or the last drain
of a launch), needs no columns of its own: they are copied into buffers
kept for the run, whose addresses are known, and the addresses are the
trace's own, so the batch costs a few copies, not a dozen numpy
conversions and address look-ups (a launch of a thousand threads charges
one such batch). The batch and its arrays are those batch_arrays makes of
the same records (tests/test_trace_columns.py).
"""
from __future__ import annotations

import numpy as np

from gpuemu.jit import abi
from gpuemu.jit.engine import address

from . import request_table
from .trace import AccessBatch

# AccessBatch columns other than addr, in request_table.batch_arrays' order and types
_COLUMNS = (("instr", np.int32), ("space", np.int8), ("mask", np.uint32), ("sm", np.int32),
            ("block", np.int32), ("warp", np.int32))
_ADDR_OFFSET = abi.TRACE_DTYPE.fields["addr"][1]


class TraceColumns:
    """Column buffers of `capacity` requests (grown when a batch is larger)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = 0
        self._grow(capacity)
        self._tables = None              # (op_t, size_t, skip_t, their addresses): the last ones given

    def _grow(self, capacity: int) -> None:
        self.capacity = capacity
        self.cols = {name: np.empty(capacity, dtype=t) for name, t in _COLUMNS}
        self.addrs = {name: address(a) for name, a in self.cols.items()}

    @property
    def nbytes(self) -> int:
        """Bytes of the column buffers."""
        return sum(a.nbytes for a in self.cols.values())

    def batch(self, records: np.ndarray, op_t: np.ndarray, size_t: np.ndarray,
              skip_t: np.ndarray) -> AccessBatch:
        """The AccessBatch of `records` (abi.TRACE_DTYPE, C-contiguous), its
        columns views of the kept buffers (valid until the next call), with
        `arrays` set: what request_table.batch_arrays(batch, op_t, size_t,
        skip_t) gives. The tables are the memory system's (MemorySystem._tables)."""
        n = records.shape[0]
        if n > self.capacity:
            self._grow(max(n, 2 * self.capacity))
        if records.dtype != abi.TRACE_DTYPE or not records.flags.c_contiguous:
            records = np.ascontiguousarray(records, dtype=abi.TRACE_DTYPE)
        cols = {}
        for name, _t in _COLUMNS:
            c = cols[name] = self.cols[name][:n]
            np.copyto(c, records[name], casting="unsafe")   # space: int32 codes 0..7 into int8
        addr = records["addr"]
        batch = AccessBatch(addr=addr, **cols)
        a = self.addrs
        t = self._tables
        if t is None or t[0] is not op_t or t[1] is not size_t or t[2] is not skip_t:
            t = self._tables = (op_t, size_t, skip_t, address(op_t), address(size_t), address(skip_t))
        out = request_table.Batch((cols["instr"], cols["space"], cols["mask"], addr, cols["sm"],
                                   cols["block"], cols["warp"], op_t, size_t, skip_t))
        out.args = (n, a["instr"], a["space"], a["mask"], address(records) + _ADDR_OFFSET, a["sm"],
                    a["block"], a["warp"], *t[3:], abi.TRACE_DTYPE.itemsize // 8)
        batch.arrays = out
        return batch
