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
are reused by the next batch). Per line, the settle then keeps what
keeping each batch's costliest request of the line (the lowest rank, then
the first, among equals) and merging them in issue order keeps
(WorstRequests.merge: a later batch's request replaces a kept one only
when it costs more): the highest cost, then the earliest batch, then the
lowest rank, then the first in its batch.
tests/test_launch_sums.py checks the fold and the kept requests against
batch-by-batch sums and a readable keeping of them; tests/test_request_table.py
checks whole launches against the numpy path.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import packed_call
from gpuemu.jit.engine import address

from .native_ir import I32, Fn, c
from .request_table import COL, ENTRY_FIELDS, NC, NSP, OPS, new_table
from .worst_requests import WorstRequest

SYMBOL = "gpuemu_fold_sums"
ARGS = ("rows", "batch", "table", "batch_of", "masks", "addrs", "number", "mask", "addr", "addr_stride", "clear",
        "by_seen")
WARP = 32
_BEST, _AT, _REQ = COL["best"], COL["best_at"], COL["requests"]


def _build_ir() -> str:
    """fold: table += batch row by row (but best, best_at); where the batch's
    best is higher, its best, best_at, the batch number and the request's
    mask and addresses (from the batch's columns) are kept; clear != 0: the
    batch's table is left as new_table makes it (a kept one is reused).
    by_seen != 0: a batch row whose `seen` is 0 is as new_table makes it,
    and is passed over (native_batch's chain: its cycle pass counts every
    request of the batch in its row's `seen`, and every pass writes only
    the rows of the batch's requests; a launch of a few instructions
    leaves most of its rows so)."""
    m = ll.Module(name="fold_sums")
    f = Fn(m, SYMBOL, ARGS)
    A, b = f.arg, f.b
    src, dst = f.ptr("batch"), f.ptr("table")
    with f.loop(0, A["rows"]) as r:
        rb = b.mul(r, c(NC))
        with f.if_(b.or_(f.cmp("==", A["by_seen"], 0), f.cmp("!=", f.ld(src, b.add(rb, c(COL["seen"]))), 0))):
            _fold_row(f, src, dst, r, rb)
    f.finish()
    return str(m)


def _fold_row(f: Fn, src, dst, r, rb) -> None:
    """fold's work on row r (at rb) of the batch's table."""
    A, b = f.arg, f.b
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


SETTLE_SYMBOL = "gpuemu_settle_sums"
SETTLE_ARGS = ("table", "entries", "n_entries", "via", "n_via", "out", "batch_of", "rank", "line", "n_instrs",
               "shared", "glob", "winners", "masks", "addrs", "rows")
WINNER_KEY = 7           # space, row, line, cost, batch, rank, index in its batch
WINNER_FIELDS = WINNER_KEY + 1 + WARP      # then the request's mask and 32 addresses


def _build_settle_ir() -> str:
    """settle: the counters of a folded table as request_table.CounterPlan.
    counters_of gives them (out: name id, line, value per counter, in
    order), and per space (shared, then global) and line the kept request
    (the highest cost, the earliest batch, the lowest rank, the first in
    its batch; winners: WINNER_FIELDS each, its mask and addresses last,
    lines in the order of their first row); then the table is left as
    new_table makes it. Returns counters + (winners << 32)."""
    m = ll.Module(name="settle_sums")
    f = Fn(m, SETTLE_SYMBOL, SETTLE_ARGS)
    A, b = f.arg, f.b
    table, ent, out, win = f.ptr("table"), f.ptr("entries"), f.ptr("out"), f.ptr("winners")
    cell = lambda row, col: f.ld(table, b.add(b.mul(row, c(NC)), col))  # noqa: E731
    via = f.var(0)
    with f.loop(0, A["n_via"]) as k:
        with f.if_(f.cmp("!=", cell(f.ld(f.ptr("via"), k), c(COL["cost"])), 0)):
            f.set(via, 1)
    n = f.var(0)
    with f.loop(0, A["n_entries"]) as e:
        row, col, scale, minus, gate, l1, name, ln, used = (f.ld(ent, b.add(b.mul(e, c(ENTRY_FIELDS)), c(k)))
                                                            for k in range(ENTRY_FIELDS))
        ok = f.cmp("!=", cell(row, used), 0)
        no_gate = f.cmp("<", gate, 0)     # (the used column read instead: every read within the row)
        ok = b.and_(ok, b.or_(no_gate, f.cmp("!=", cell(row, b.select(no_gate, used, gate)), 0)))
        ok = b.and_(ok, b.or_(f.cmp("==", l1, 0), f.cmp("!=", f.get(via), 0)))
        with f.if_(ok):
            less = b.select(f.cmp("<", minus, 0), c(0), cell(row, b.select(f.cmp("<", minus, 0), col, minus)))
            at = b.mul(f.get(n), c(3))
            f.st(out, at, name)
            f.st(out, b.add(at, c(1)), ln)
            f.st(out, b.add(at, c(2)), b.sub(b.mul(cell(row, col), scale), less))
            f.inc(n)
    w = f.var(0)
    for k, space in enumerate(("shared", "glob")):
        first = f.get(w)
        with f.loop(0, A["n_instrs"]) as i:
            row = b.add(b.mul(i, c(NSP)), A[space])
            with f.if_(f.cmp("!=", cell(row, c(_REQ)), 0)):
                ln = f.ld(f.ptr("line"), i)
                key = (cell(row, c(_BEST)), f.ld(f.ptr("batch_of"), row),
                       c(0) if k == 0 else f.ld(f.ptr("rank"), i), cell(row, c(_AT)))
                found = f.var(-1)
                with f.loop(first, f.get(w)) as j:
                    with f.if_(f.cmp("==", f.ld(win, b.add(b.mul(j, c(WINNER_FIELDS)), c(2))), ln)):
                        f.set(found, j)
                slot = f.var(-1)
                with f.if_else(f.cmp("<", f.get(found), 0)) as (new, seen):
                    with new:
                        f.set(slot, f.get(w))
                        f.inc(w)
                    with seen:
                        base = b.mul(f.get(found), c(WINNER_FIELDS))
                        cost0, batch0, rank0, at0 = (f.ld(win, b.add(base, c(3 + q))) for q in range(4))
                        # (-cost, batch, rank, at) lower: costlier, else earlier batch, rank, index
                        tie = lambda x, y: f.cmp("==", x, y)  # noqa: E731
                        better = b.or_(f.cmp(">", key[0], cost0), b.and_(tie(key[0], cost0), b.or_(
                            f.cmp("<", key[1], batch0), b.and_(tie(key[1], batch0), b.or_(
                                f.cmp("<", key[2], rank0), b.and_(tie(key[2], rank0), f.cmp("<", key[3], at0)))))))
                        with f.if_(better):
                            f.set(slot, f.get(found))
                with f.if_(f.cmp(">=", f.get(slot), 0)):
                    base = b.mul(f.get(slot), c(WINNER_FIELDS))
                    for q, v in enumerate((A[space], row, ln) + key):
                        f.st(win, b.add(base, c(q)), v)
    with f.loop(0, f.get(w)) as j:                # each kept request's mask and addresses
        base = b.mul(j, c(WINNER_FIELDS))
        row = f.ld(win, b.add(base, c(1)))
        f.st(win, b.add(base, c(WINNER_KEY)), f.ld(f.ptr("masks"), row))
        with f.loop(0, WARP) as q:
            f.st(win, b.add(base, b.add(q, c(WINNER_KEY + 1))), f.ld(f.ptr("addrs"), b.add(b.mul(row, c(WARP)), q)))
    with f.loop(0, A["rows"]) as r:               # cleared (LaunchSums.clear)
        rb = b.mul(r, c(NC))
        for col in range(NC):
            f.st(table, b.add(rb, c(col)), -1 if col == _BEST else 0)
    f.ret(b.add(f.get(n), b.shl(f.get(w), c(32))))
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
        self.kernel = None            # (counter plan, op, size tables) of the folded batches' kernel
        self._settle = None           # the native settle's plan, buffers and arguments
        self._args = [rows, 0, address(self.table), address(self.batch_of), address(self.masks),
                      address(self.addrs)]

    @property
    def rows(self) -> int:
        return self.table.shape[0]

    @property
    def nbytes(self) -> int:
        """Bytes of its tables and kept requests."""
        return sum(a.nbytes for a in (self.table, self.batch_of, self.masks, self.addrs))

    def fold(self, table: np.ndarray, arrays, clear: bool = False, by_seen: bool = False) -> None:
        """Add a batch's table (request_table.new_table's shape, this one's
        rows) of the batch `arrays` (request_table.batch_arrays: its best
        requests' masks and addresses are read there), the next in issue
        order; clear: leave `table` as new_table makes it; by_seen: pass
        over its rows whose `seen` is 0, as new_table makes them (the
        fold's by_seen)."""
        self.check(table)
        args = arrays.args                # BATCH_ARGS: n, instr, space, mask, addr, ..., addr_stride
        a = self._args
        a[1] = address(table)
        packed_call.native(SYMBOL, _build_ir, len(ARGS))((*a, self.batches, args[3], args[4], args[-1],
                                                          int(clear), int(by_seen)))
        self.batches += 1

    def check(self, table: np.ndarray) -> None:
        """Raise ValueError unless `table` can be folded into this one."""
        if table.shape != self.table.shape or table.dtype != np.int64 or not table.flags.c_contiguous:
            raise ValueError("fold: the batch's table must be C-contiguous int64 of the launch table's shape")

    def fold_args(self, table: np.ndarray) -> list:
        """ARGS for folding `table` but the batch's (number, mask, addr,
        addr_stride: set per batch), clear (1) and by_seen (1: native_batch.py
        keeps them, its chain's cycle pass runs before the fold)."""
        self.check(table)
        return [*self._args[:1], address(table), *self._args[2:], 0, 0, 0, 0, 1, 1]

    def clear(self) -> None:
        """Nothing folded (the state of a new one)."""
        if self.batches:
            self.table.fill(0)             # as new_table makes it
            self.table[:, _BEST] = -1
            self.batches = 0

    def settle(self, plan, stats, worst, op: np.ndarray, size: np.ndarray, spaces: dict) -> None:
        """Add this table's counters (`plan`: request_table.CounterPlan of its
        kernel and rules, counters_of's) into `stats` and its kept requests
        (per space and line the costliest: shared then global; spaces:
        {space code: name}) into `worst` (a WorstRequests, merged as a later
        batch's), in one native pass that also clears the table; both are
        added when first read (Stats.defer_named, WorstRequests.defer)."""
        self.settled(self.settle_call(plan, spaces)(), stats, worst, op, size)

    def settle_call(self, plan, spaces: dict) -> packed_call.PackedCall:
        """The native pass of `settle` (kept while the plan is the same): a
        caller may chain it after the launch's last fold and hand what it
        returned to `settled`."""
        got = self._settle
        if got is None or got[0] is not plan or got[4] != spaces:
            shared, glob = spaces
            # the counters' rows, then the kept requests, in one buffer (`settled` copies both at once)
            rows = max(len(plan.entries), 1) * 3
            both = np.zeros(rows + 2 * max(len(plan.line), 1) * WINNER_FIELDS, dtype=np.int64)
            out, win = both[:rows].reshape(-1, 3), both[rows:].reshape(-1, WINNER_FIELDS)
            call = packed_call.PackedCall(SETTLE_SYMBOL, _build_settle_ir, SETTLE_ARGS, dict(
                table=address(self.table), entries=address(plan.entries), n_entries=len(plan.entries),
                via=address(plan.via_rows), n_via=len(plan.via_rows), out=address(out),
                batch_of=address(self.batch_of), rank=address(plan.rank), line=address(plan.line),
                n_instrs=len(plan.line), shared=shared, glob=glob, winners=address(win),
                masks=address(self.masks), addrs=address(self.addrs), rows=self.rows))
            got = self._settle = (plan, memoryview(both), rows, call, spaces)   # (the view holds both)
        return got[3]

    def settled(self, r: int, stats, worst, op: np.ndarray, size: np.ndarray, then: tuple | None = None) -> None:
        """`settle` after its native pass (settle_call's, which returned r).
        then: (table, added), deferred and added into `stats` after the
        settled counters, in the same call (Stats.defer_end: a launch's end)."""
        self.ended(r, stats, worst, op, size, then).made()

    def ended(self, r: int, stats, worst, op: np.ndarray, size: np.ndarray, then: tuple | None = None) -> "Ended":
        """`settled` kept as
        an Ended: the settled values copied, deferred into `stats` and
        `worst` only when first read."""
        settle = self._settle
        self.batches = 0
        kept = r >> 32
        # their bytes (Stats and _keep read them as int64): a copy at a tenth of numpy's cost
        end = _new(Ended)
        end.got = settle[1][:settle[2] + kept * WINNER_FIELDS].tobytes() if kept else \
            settle[1][:3 * (r & 0xFFFFFFFF)].tobytes()
        end.base, end.worst, end.settle, end.r, end.op, end.size, end.then = stats, worst, settle, r, op, size, then
        return end


_new = object.__new__


class Ended:
    """A launch's end as the native settle left it (LaunchSums.ended): its
    counters' and kept requests' bytes, the per-line table and the cycles
    (`then`), deferred into the launch's Stats (`base`) and WorstRequests
    (`worst`) as `settled` defers them, but only when first read (`made`):
    a kept launch whose counters nobody reads pays for neither
    (launch_cache; RawKernel._launch_of reads it as it reads a Stats)."""
    __slots__ = ("base", "worst", "settle", "got", "r", "op", "size", "then", "_made")

    def made(self) -> tuple:
        """(the Stats, the WorstRequests) with this end deferred into them (once)."""
        try:
            return self._made
        except AttributeError:
            pass
        plan, _, rows, _, spaces = self.settle
        counted, kept = self.r & 0xFFFFFFFF, self.r >> 32
        got, stats = self.got, self.base
        if self.then is None:
            stats.defer_named(plan.names, got, plan.name_set, counted)
        else:
            stats.defer_end((plan.names, got, plan.name_set, counted), *self.then)
        if kept:
            self.worst.defer(_keep, got, rows, kept, spaces, self.op, self.size)
        self._made = made = (stats, self.worst)
        return made

    def get_each(self, names: tuple, name_set: frozenset) -> list:
        """Stats.get_each of the launch's counters: where none of `names` is
        among the settled or tabled ones and nothing came before, without
        making them (the cycles, added last, are known)."""
        then, base = self.then, self.base
        if (then is not None and base.empty
                and self.settle[0].name_set.isdisjoint(name_set)
                and (then[0][2] or frozenset(then[0][0])).isdisjoint(name_set)):
            added, value = then[1]
            out = []
            for name in names:
                out.append(value if name == added else 0)
            return out
        return self.made()[0].get_each(names, name_set)

    def as_dict(self) -> dict:
        return self.made()[0].as_dict()

    def lines_dict(self) -> dict:
        return self.made()[0].lines_dict()

    @property
    def by_line(self) -> dict:
        """The launch's kept requests (WorstRequests.by_line)."""
        return self.made()[1].by_line


def _keep(got, at: int, n: int, spaces: dict, op: np.ndarray, size: np.ndarray, kept: dict) -> None:
    """Merge the settle's n kept requests (from got[at:], WINNER_FIELDS
    each; got: their int64s' bytes) into `kept` (WorstRequests.by_line),
    as a later batch's: a request replaces a kept one of its line only when
    it costs more."""
    got = np.frombuffer(got, dtype=np.int64)
    for w in got[at:at + n * WINNER_FIELDS].reshape(n, WINNER_FIELDS).tolist():
        sp, row, ln, cost = w[:4]
        key = (spaces[sp], ln)
        old = kept.get(key)
        if old is None or cost > old.cost:
            i = row // NSP
            kept[key] = WorstRequest(space=key[0], row=ln, op=OPS[int(op[i])], size=int(size[i]), cost=cost,
                                     mask=w[WINNER_KEY], addrs=tuple(w[WINNER_KEY + 1:]))
