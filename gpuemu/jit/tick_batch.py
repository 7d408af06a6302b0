"""The per-line instruction counts of a straight-line run, added once where it ends.

warp_codegen.tick counts every operation: its line's warp_instructions (+n
when any lane is active), thread_instructions (+n per active lane) and the
frame's F_ICOUNT. Emitted one by one that is about 20 lines of IR per
operation, most of a long kernel's IR and of LLVM's time on it (1000
statements 'a[j] += 1;': 240,000 lines, 18 s). A TickBuilder keeps the
counts of a run, by mask, and adds each counter's sum where the run ends
(one load and store per counter, an add per mask, a multiply where n > 1):
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


def _add_n(by_mask: dict, key: int, n: int) -> None:
    by_mask[key] = by_mask.get(key, 0) + n


class TickBuilder(AlignedBuilder):
    """An AlignedBuilder that adds the per-line counts of a run at its end.

    `counters` (the i64 counter array) and `icount` (a function making a
    pointer to the frame's F_ICOUNT where it is called: one pointer made in
    the entry block and used everywhere doubled the register allocator's
    time on 1000 statements) are set by the code generator before the first
    tick. BATCH off adds each tick where it is made (the plain reference the
    batched counts are tested against)."""

    BATCH = True

    def __init__(self, block):
        self._masks: dict = {}          # id(mask) -> mask, of the run's ticks
        self._warp: dict = {}           # counter index -> {id(mask): n}: +n when any lane is active
        self._thread: dict = {}         # counter index -> {id(mask): n}: +n per active lane
        self._icount: dict = {}         # {id(mask): n} of F_ICOUNT, as warp
        self.counters = None
        self.icount = None
        super().__init__(block)

    def tick(self, m, row: int, column: int, n: int) -> None:
        """Count n operations of counter row `row` (column 0: warp and thread
        instructions and F_ICOUNT; another column: that counter alone) under mask m."""
        key = id(m)
        self._masks[key] = m
        base = row * abi.N_LINE_COUNTERS
        _add_n(self._warp.setdefault(base + column, {}), key, n)
        if column == 0:
            _add_n(self._thread.setdefault(base + 1, {}), key, n)
            _add_n(self._icount, key, n)
        if not self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Add the kept counts here (the run ends): each counter loaded and
        stored once, its masks' weights times their n added between."""
        if not self._masks:
            return
        masks, warp, thread, icount = self._masks, self._warp, self._thread, self._icount
        self._masks, self._warp, self._thread, self._icount = {}, {}, {}, {}
        ctpop = intrinsic(self.module, "llvm.ctpop.i32", I32, [I32])
        nz = {k: self.zext(self.icmp_unsigned("!=", m, ll.Constant(I32, 0)), I64)
              for k, m in masks.items() if k in icount or any(k in by for by in warp.values())}
        self._add_all(warp, nz)
        if thread:
            self._add_all(thread, {k: self.zext(self.call(ctpop, [m]), I64) for k, m in masks.items()
                                   if any(k in by for by in thread.values())})
        if icount:
            self._add(self.icount(), icount, nz)

    def _add_all(self, by_index: dict, weight: dict) -> None:
        for index, by_mask in by_index.items():
            self._add(self.gep(self.counters, [ll.Constant(I64, index)]), by_mask, weight)

    def _add(self, p, by_mask: dict, weight: dict) -> None:
        """*p += the sum of weight[mask] * n."""
        v = self.load(p)
        for k, n in by_mask.items():
            v = self.add(v, weight[k] if n == 1 else self.mul(weight[k], ll.Constant(I64, n)))
        self.store(v, p)

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
