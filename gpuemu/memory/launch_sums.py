"""A launch's request_table sums: each batch's table folded in, read once.

The memory model's native passes (native_banks, native_coalescer,
native_cache_walk, native_cycle_sums) add a batch's requests into a
request_table of that batch. Every counter they give is a sum over
batches of a row's sums, so MemorySystem.apply folds the batch's table
into the launch's (`LaunchSums.fold`: one native pass over the rows) and
MemorySystem.settle turns the launch's table into counters and kept
requests once, at the end of the launch (or of a `charge`): a launch of
many batches pays the Python of its counters once, not per batch.

The kept requests. Folding keeps per row the first costliest request of
its batches (the highest cost; among equals the earlier batch's), with its
batch number, mask and 32 addresses copied out of the batch (its arrays
are reused by the next batch). Per line, `worst_of` then keeps what
keeping each batch's costliest request of the line (the lowest rank, then
the first, among equals) and merging them in issue order keeps
(WorstRequests.merge: a later batch's request replaces a kept one only
when it costs more): the highest cost, then the earliest batch, then the
lowest rank, then the first in its batch.
tests/test_launch_sums.py checks the fold and the kept requests against
batch-by-batch sums; tests/test_request_table.py checks whole launches
against the numpy path.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import packed_call
from gpuemu.jit.engine import address

from .native_ir import I32, Fn, c
from .request_table import COL, NC, NSP, OPS, new_table

SYMBOL = "gpuemu_fold_sums"
ARGS = ("rows", "batch", "table", "batch_of", "masks", "addrs", "number", "mask", "addr", "addr_stride", "clear")
WARP = 32
_BEST, _AT, _REQ = COL["best"], COL["best_at"], COL["requests"]


def _build_ir() -> str:
    """fold: table += batch row by row (but best, best_at); where the batch's
    best is higher, its best, best_at, the batch number and the request's
    mask and addresses (from the batch's columns) are kept; clear != 0: the
    batch's table is left as new_table makes it (a kept one is reused)."""
    m = ll.Module(name="fold_sums")
    f = Fn(m, SYMBOL, ARGS)
    A, b = f.arg, f.b
    src, dst = f.ptr("batch"), f.ptr("table")
    with f.loop(0, A["rows"]) as r:
        rb = b.mul(r, c(NC))
        for col in range(NC):
            if col not in (_BEST, _AT):
                f.add_to(dst, b.add(rb, c(col)), f.ld(src, b.add(rb, c(col))))
        cost = f.ld(src, b.add(rb, c(_BEST)))
        with f.if_(f.cmp(">", cost, f.ld(dst, b.add(rb, c(_BEST))))):
            at = f.ld(src, b.add(rb, c(_AT)))
            f.st(dst, b.add(rb, c(_BEST)), cost)
            f.st(dst, b.add(rb, c(_AT)), at)
            f.st(f.ptr("batch_of"), r, A["number"])
            f.st(f.ptr("masks"), r, f.ldu(f.ptr("mask", I32), at))
            row0, at0 = b.mul(r, c(WARP)), b.mul(at, A["addr_stride"])
            with f.loop(0, WARP) as j:
                f.st(f.ptr("addrs"), b.add(row0, j), f.ld(f.ptr("addr"), b.add(at0, j)))
        with f.if_(f.cmp("!=", A["clear"], 0)):
            for col in range(NC):
                f.st(src, b.add(rb, c(col)), -1 if col == _BEST else 0)
    f.finish()
    return str(m)


class LaunchSums:
    """The folded table of a kernel of n_instrs memory instructions, and per
    row its kept request: batch number, mask, 32 addresses."""

    def __init__(self, n_instrs: int) -> None:
        self.table = new_table(n_instrs)
        rows = self.table.shape[0]
        self.batch_of = np.zeros(rows, dtype=np.int64)
        self.masks = np.zeros(rows, dtype=np.int64)
        self.addrs = np.zeros((rows, WARP), dtype=np.int64)
        self.batches = 0              # folded since the last clear
        self._args = [rows, 0, address(self.table), address(self.batch_of), address(self.masks),
                      address(self.addrs)]

    @property
    def rows(self) -> int:
        return self.table.shape[0]

    def fold(self, table: np.ndarray, arrays, clear: bool = False) -> None:
        """Add a batch's table (request_table.new_table's shape, this one's
        rows) of the batch `arrays` (request_table.batch_arrays: its best
        requests' masks and addresses are read there), the next in issue
        order; clear: leave `table` as new_table makes it."""
        self.check(table)
        args = arrays.args                # BATCH_ARGS: n, instr, space, mask, addr, ..., addr_stride
        a = self._args
        a[1] = address(table)
        packed_call.native(SYMBOL, _build_ir, len(ARGS))((*a, self.batches, args[3], args[4], args[-1],
                                                          int(clear)))
        self.batches += 1

    def check(self, table: np.ndarray) -> None:
        """Raise ValueError unless `table` can be folded into this one."""
        if table.shape != self.table.shape or table.dtype != np.int64 or not table.flags.c_contiguous:
            raise ValueError("fold: the batch's table must be C-contiguous int64 of the launch table's shape")

    def fold_args(self, table: np.ndarray) -> list:
        """ARGS for folding `table` but the batch's (number, mask, addr,
        addr_stride: set per batch) and clear (1) (native_batch.py keeps them)."""
        self.check(table)
        return [*self._args[:1], address(table), *self._args[2:], 0, 0, 0, 0, 1]

    def clear(self) -> None:
        """Nothing folded (the state of a new one)."""
        if self.batches:
            self.table[:] = 0
            self.table[:, _BEST] = -1
            self.batches = 0

    def worst_of(self, used: list, space_code: int, space: str, rank, op: np.ndarray, size: np.ndarray,
                 line: np.ndarray, worst) -> None:
        """Keep in `worst` (a WorstRequests) each line's costliest request of
        the rows of `space_code` among `used` (request_table.used_or_seen of
        this table): the highest cost, the earliest batch, the lowest
        rank(instr), the first in its batch (module docstring)."""
        from .worst_requests import WorstRequest
        best: dict = {}
        for row, v in used:
            if row % NSP != space_code or not v[_REQ]:
                continue
            i = row // NSP
            ln = int(line[i])
            key = (-v[_BEST], int(self.batch_of[row]), rank(i), v[_AT])
            if ln not in best or key < best[ln][0]:
                best[ln] = (key, i, row)
        for ln, (key, i, row) in best.items():
            worst.by_line[(space, ln)] = WorstRequest(
                space=space, row=ln, op=OPS[int(op[i])], size=int(size[i]), cost=-key[0],
                mask=int(self.masks[row]), addrs=tuple(self.addrs[row].tolist()))
