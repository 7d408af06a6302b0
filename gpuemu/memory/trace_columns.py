"""A run's trace records as the memory model's batch, in columns kept for the run.

The machine records warp requests as abi.TRACE_DTYPE records; the memory
model reads a batch as columns (trace.AccessBatch) and its native passes
read them through request_table.batch_arrays (contiguous columns of fixed
types, their addresses). A batch charged at once, before the trace buffer
is written again (LaunchRun._charge_records: one worker, or the last drain
of a launch), needs no columns of its own: they are copied into buffers
kept for the run, whose addresses are known, and the addresses are the
trace's own, so the batch costs one native copy (`fill`, which also counts
the requests per space), not a dozen numpy conversions and address
look-ups (a launch of a thousand threads charges one such batch). The
batch and its arrays are those batch_arrays makes of the same records
(tests/test_trace_columns.py).
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import abi, packed_call
from gpuemu.jit.engine import address

from . import request_table
from .native_ir import I8, I32, Fn, c
from .trace import AccessBatch

# AccessBatch columns other than addr, in request_table.batch_arrays' order and types
_COLUMNS = tuple((name, t) for name, t in request_table.BATCH_COLUMNS if name != "addr")
_ADDR_OFFSET = abi.TRACE_DTYPE.fields["addr"][1]
SYMBOL = "gpuemu_trace_columns"
ARGS = ("n", "records", "counts") + tuple(name for name, _ in _COLUMNS)


def _build_ir() -> str:
    """columns(n, records, counts, instr, space, ...): each record's fields
    into the columns (space truncated to int8, as numpy's unsafe cast), the
    requests per space code (< request_table.NSP) into counts int64[NSP]."""
    m = ll.Module(name="trace_columns")
    f = Fn(m, SYMBOL, ARGS)
    A, b = f.arg, f.b
    words = abi.TRACE_DTYPE.itemsize // 4
    rec, counts = f.ptr("records", I32), f.ptr("counts")
    with f.loop(0, request_table.NSP) as k:
        f.st(counts, k, 0)
    with f.loop(0, A["n"]) as i:
        base = b.mul(i, c(words))
        for name, t in _COLUMNS:
            v = f.ld(rec, b.add(base, c(abi.TRACE_DTYPE.fields[name][1] // 4)))
            f.st(f.ptr(name, I8 if t == np.int8 else I32), i, v)
            if name == "space":
                with f.if_(b.icmp_unsigned("<", v, c(request_table.NSP))):
                    f.add_to(counts, v, 1)
    f.finish()
    return str(m)


class TraceColumns:
    """Column buffers of `capacity` requests (grown when a batch is larger)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = 0
        self.counts = np.zeros(request_table.NSP, dtype=np.int64)   # requests per space code (`fill`)
        self.records_at = 0              # the address of the records `fill` read last
        self.holds = None                # the records array they were given as (`batch(filled=)`)
        self._grow(capacity)

    def _grow(self, capacity: int) -> None:
        self.capacity = capacity
        self.cols = {name: np.empty(capacity, dtype=t) for name, t in _COLUMNS}
        self.addrs = {name: address(a) for name, a in self.cols.items()}
        self.call = packed_call.PackedCall(SYMBOL, _build_ir, ARGS, dict(self.addrs, n=0, records=0,
                                                                         counts=address(self.counts)))

    @property
    def nbytes(self) -> int:
        """Bytes of the column buffers."""
        return sum(a.nbytes for a in self.cols.values())

    def fill(self, records: np.ndarray) -> np.ndarray:
        """Copy `records` (abi.TRACE_DTYPE) into the columns' first rows and
        count them per space code (`counts`); returns the records as read
        (C-contiguous: their address, `records_at`, is the batch's addresses' base)."""
        n = records.shape[0]
        if n > self.capacity:
            self._grow(max(n, 2 * self.capacity))
        given = records
        if records.dtype != abi.TRACE_DTYPE or not records.flags.c_contiguous:
            records = np.ascontiguousarray(records, dtype=abi.TRACE_DTYPE)
        call = self.call
        call["n"] = n
        call["records"] = self.records_at = address(records)
        call()
        self.holds = given
        return records

    def batch(self, records: np.ndarray, op_t: np.ndarray, size_t: np.ndarray,
              skip_t: np.ndarray, filled: bool = False) -> AccessBatch:
        """The AccessBatch of `records` (abi.TRACE_DTYPE, C-contiguous), its
        columns views of the kept buffers (valid until the next call), with
        `arrays` set: what request_table.batch_arrays(batch, op_t, size_t,
        skip_t) gives. The tables are the memory system's (MemorySystem._tables).
        filled: the columns may hold these records already (a batch
        native_batch did not serve): they are not copied again where they
        do (`holds`: the records the columns were last given)."""
        if not (filled and self.holds is records):
            records = self.fill(records)
        elif records.dtype != abi.TRACE_DTYPE or not records.flags.c_contiguous:
            records = np.ascontiguousarray(records, dtype=abi.TRACE_DTYPE)
        n = records.shape[0]
        cols = {name: self.cols[name][:n] for name, _t in _COLUMNS}
        addr = records["addr"]
        batch = AccessBatch(addr=addr, **cols)
        a = self.addrs
        out = request_table.Batch((cols["instr"], cols["space"], cols["mask"], addr, cols["sm"],
                                   cols["block"], cols["warp"], op_t, size_t, skip_t))
        out.args = (n, a["instr"], a["space"], a["mask"], address(records) + _ADDR_OFFSET, a["sm"],
                    a["block"], a["warp"], address(op_t), address(size_t), address(skip_t),
                    abi.TRACE_DTYPE.itemsize // 8)
        batch.arrays = out
        return batch
