"""The per-line instruction counts of a straight-line run, added once where it ends.

warp_codegen.tick counts every operation: its line's warp_instructions (+n
when any lane is active), thread_instructions (+n per active lane) and the
frame's F_ICOUNT. Emitted one by one that is about 20 lines of IR per
operation, most of a long kernel's IR and of LLVM's time on it (1000
statements 'a[j] += 1;': 240,000 lines, 18 s). A TickBuilder keeps the
counts of a run, by mask, and adds each counter's sum where the run ends:
before a terminator (a branch, a return at an event or a fault), before a
call of anything but an LLVM intrinsic (a memory helper may read F_ICOUNT
or stop the warp), and before the builder moves to another place. Nothing in
between reads the counters or F_ICOUNT, and the adds are of integers, so
every counter reads exactly as if each operation had added its own.
"""
from __future__ import annotations

import llvmlite.ir as ll

from . import abi
from .c_semantics import intrinsic
from .lane_types import I32, I64, AlignedBuilder


class _Run:
    """The counts kept for one mask value: n per counter index, per kind."""
    __slots__ = ("mask", "warp", "thread", "icount")

    def __init__(self, mask):
        self.mask = mask
        self.warp: dict = {}      # counter index -> n, added when any lane of mask is active
        self.thread: dict = {}    # counter index -> n, added per active lane
        self.icount = 0           # F_ICOUNT's n, added when any lane is active


class TickBuilder(AlignedBuilder):
    """An AlignedBuilder that adds the per-line counts of a run at its end.

    `counters` (the i64 counter array) and `icount` (a function giving a
    pointer to the frame's F_ICOUNT) are set by the code generator before
    the first tick. BATCH off adds each tick where it is made (the plain
    reference the batched counts are tested against)."""

    BATCH = True

    def __init__(self, block):
        self._runs: dict = {}           # id(mask) -> _Run, in order of first tick
        self.counters = None
        self.icount = None
        super().__init__(block)

    def tick(self, m, row: int, column: int, n: int) -> None:
        """Count n operations of counter row `row` (column 0: warp and thread
        instructions and F_ICOUNT; another column: that counter alone) under mask m."""
        run = self._runs.get(id(m))
        if run is None:
            run = self._runs[id(m)] = _Run(m)
        base = row * abi.N_LINE_COUNTERS
        run.warp[base + column] = run.warp.get(base + column, 0) + n
        if column == 0:
            run.thread[base + 1] = run.thread.get(base + 1, 0) + n
            run.icount += n
        if not self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Add the kept counts here (the run ends)."""
        if not self._runs:
            return
        runs, self._runs = self._runs, {}
        for run in runs.values():
            self._add_run(run)

    def _add_run(self, run: _Run) -> None:
        m = run.mask
        nz = self.zext(self.icmp_unsigned("!=", m, ll.Constant(I32, 0)), I64)
        self._add_all(run.warp, nz)
        if run.thread:
            pc = self.call(intrinsic(self.module, "llvm.ctpop.i32", I32, [I32]), [m])
            self._add_all(run.thread, self.zext(pc, I64))
        if run.icount:
            self._add(self.icount(), nz, run.icount)

    def _add_all(self, by_index: dict, weight) -> None:
        for index, n in by_index.items():
            self._add(self.gep(self.counters, [ll.Constant(I64, index)]), weight, n)

    def _add(self, p, weight, n: int) -> None:
        self.store(self.add(self.load(p), self.mul(weight, ll.Constant(I64, n))), p)

    @property
    def module(self) -> ll.Module:
        return self.function.module

    # the places a run ends
    def _set_terminator(self, term):
        self.flush()
        return super()._set_terminator(term)

    def call(self, fn, args, *a, **kw):
        if not getattr(fn, "name", "").startswith("llvm."):
            self.flush()
        return super().call(fn, args, *a, **kw)

    def position_at_end(self, block):
        self.flush()
        super().position_at_end(block)

    def position_at_start(self, block):
        self.flush()
        super().position_at_start(block)

    def position_before(self, instr):
        self.flush()
        super().position_before(instr)

    def position_after(self, instr):
        self.flush()
        super().position_after(instr)
