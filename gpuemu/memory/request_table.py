"""A batch's counters per (instruction, space), as the native passes sum them.

The memory model's native passes (native_banks.shared_pass,
native_coalescer, native_cache_walk) add each request into one row of a
small int64 table: row = instruction id * NSP + space code. Everything a
counter needs besides these sums is static per row (the instruction's line,
op, size, read-only / spill / texture flags, the space), so the counters of
a table come from a plan worked out once per kernel and rules
(`CounterPlan`; launch_sums.py's native settle reads it), not numpy passes
per request. They are the counters and kept requests the numpy path
(MemorySystem._charge_shared / _prepare_global / _apply_global) gives:
tests/request_table_reference.py writes the rule row by row, and
tests/test_request_table.py and tests/test_memory_system.py check the
paths agree on random and real traces.

Columns: requests; cost (wavefronts of a shared request, sectors of a
global or local one); conflicts (wavefronts - ideal); lanes (active lanes);
best, best_at (the highest cost of the row and the batch index of its first
request); l1_hits, l1_misses, l2_read, l2_hits, dram (sectors of loads, by
the caches, in issue order); ways_0 .. ways_32 (requests by conflict degree).
"""
from __future__ import annotations

import numpy as np

from gpuemu.jit.engine import address

NSP = 8                    # rows per instruction: one per space code (trace.SPACE_CODES, sync)
MAX_WAYS = 32              # one word per lane: at most 32 distinct rows in one bank
COLS = ("requests", "cost", "conflicts", "lanes", "best", "best_at",
        "l1_hits", "l1_misses", "l2_read", "l2_hits", "dram", "seen", "cycles") + tuple(
            f"ways_{w}" for w in range(MAX_WAYS + 1))
COL = {name: i for i, name in enumerate(COLS)}
NC = len(COLS)
OPS = ("ld", "st", "atom", "red")


# The batch as every native pass reads it (AccessBatch's arrays, and the
# kernel's per-MemInstr tables): a request's row is instr * NSP + space.
BATCH_ARGS = ("n", "instr", "space", "mask", "addr", "sm", "block", "warp", "op_t", "size_t", "skip_t",
              "addr_stride")
# the batch's columns among them, with the types the passes read (trace_columns.py fills them too)
BATCH_COLUMNS = (("instr", np.int32), ("space", np.int8), ("mask", np.uint32), ("addr", np.int64),
                 ("sm", np.int32), ("block", np.int32), ("warp", np.int32))


def _rows_of_32(addr) -> bool:
    """Whether addr is int64[N, 32] with each request's lanes side by side
    (rows may lie apart: e.g. the field of a trace record array)."""
    return (isinstance(addr, np.ndarray) and addr.dtype == np.int64 and addr.ndim == 2
            and addr.shape[1] == 32 and addr.strides[1] == 8 and addr.strides[0] % 8 == 0
            and addr.strides[0] >= 8 * 32)


def batch_arrays(batch, op_t: np.ndarray, size_t: np.ndarray, skip_t: np.ndarray) -> tuple:
    """The arrays behind BATCH_ARGS (C-contiguous, of the types the passes
    read: instr int32, space int8, mask uint32, addr int64[N, 32] (its rows
    may lie apart, addr_stride int64s from one to the next: no copy of the
    trace's addresses), sm, block, warp int32; op_t int8, size_t int64,
    skip_t int8 per MemInstr id; skip: a texture header, charged by the
    texture unit, not as a global request). Keep them alive while their
    addresses are in use."""
    cols = [batch.addr if f == "addr" and _rows_of_32(batch.addr)
            else np.ascontiguousarray(getattr(batch, f), dtype=t)
            for f, t in BATCH_COLUMNS]
    for a, t in ((op_t, np.int8), (size_t, np.int64), (skip_t, np.int8)):
        if a.dtype != t or not a.flags.c_contiguous:
            raise ValueError("kernel tables must be C-contiguous int8/int64/int8")
    out = _Batch(tuple(cols) + (op_t, size_t, skip_t))
    out.args = (out[0].size,) + tuple(address(a) for a in out) + (out[3].strides[0] // 8,)
    return out


class _Batch(tuple):
    """batch_arrays' arrays, with BATCH_ARGS' values (`args`) worked out once
    for the batch's passes (numpy's .ctypes.data costs microseconds)."""
    args: tuple


Batch = _Batch      # also made by trace_columns.TraceColumns.batch (a run's kept columns)


def emit_request(f, i) -> dict:
    """In a native pass (native_ir.Fn with BATCH_ARGS): request i's fields
    as int64 values: instr, space, row, op, size, skip, mask."""
    from .native_ir import I8, I32, c
    b = f.b
    ins = f.ld(f.ptr("instr", I32), i)
    sp = f.ld(f.ptr("space", I8), i)
    return dict(instr=ins, space=sp, row=b.add(b.mul(ins, c(NSP)), sp), op=f.ld(f.ptr("op_t", I8), ins),
                size=f.ld(f.ptr("size_t"), ins), skip=f.ld(f.ptr("skip_t", I8), ins),
                mask=f.ldu(f.ptr("mask", I32), i))


def batch_addresses(arrays: tuple) -> tuple:
    """BATCH_ARGS' values: n, the arrays' addresses, the addresses' row stride."""
    return arrays.args


def new_table(n_instrs: int) -> np.ndarray:
    """A zero table for a kernel of n_instrs memory instructions (best = -1: none yet)."""
    t = np.zeros((max(n_instrs, 1) * NSP, NC), dtype=np.int64)
    t[:, COL["best"]] = -1
    return t


NAMES = ("load", "store", "atomic", "reduction")
ENTRY_FIELDS = 9         # CounterPlan.entries' columns


class CounterPlan:
    """The counters of one kernel's request tables under one memory
    system's rules, worked out per row once: `counters_of(used)` gives what
    the row-by-row rule (tests/request_table_reference.py: shared, global
    and local, cache and cycle counters) gives of a table's used rows, in
    that order, without working out per row which counters it has
    (MemorySystem.settle, add_warp_counts; tests/test_request_table.py
    checks the two agree).

    Per section (shared, global and local, caches) and row, the row's
    entries: (counter, line, col, scale, minus, gate, L1 only): the value
    v[col] * scale - v[minus] (minus: readonly and texture misses, else -1),
    added when the row made a request and, for a conflict degree, v[gate] is
    not 0 (else gate is -1); an L1 count only when some request went
    through L1 (the cost of a row of `via_l1`). memory_cycles: per row seen."""

    def __init__(self, t: dict, spaces: tuple, ro_on: bool, l1_present: bool, kind: np.ndarray,
                 readonly_path: str) -> None:
        shared, glob, local = spaces
        op, line = t["op"], t["line"]
        n = len(op)
        req, cost, conf, w0 = COL["requests"], COL["cost"], COL["conflicts"], COL["ways_0"]
        self.sections: tuple = ({}, {}, {})

        def add(section, row, name, ln, col, scale=1, minus=-1, gate=-1, l1=False):
            self.sections[section].setdefault(row, []).append((name, ln, col, scale, minus, gate, l1))

        for i in range(n):
            ln, code = int(line[i]), int(op[i])
            name = NAMES[code]
            row = i * NSP + shared                   # as the reference's shared_counters (tests/)
            if code >= 2:
                add(0, row, "shared_atomic_requests", ln, req)
            else:
                add(0, row, f"shared_{name}_requests", ln, req)
                add(0, row, f"shared_{name}_wavefronts", ln, cost)
                add(0, row, f"shared_{name}_bank_conflicts", ln, conf)
                add(0, row, "shared_bank_conflicts", ln, conf)
                for w in range(2, MAX_WAYS + 1):
                    add(0, row, f"shared_conflict_ways_{w}", ln, w0 + w, gate=w0 + w)
            for sp in sorted((glob, local)):        # global_counters'
                row, prefix = i * NSP + sp, "global" if sp == glob else "local"
                if sp == glob and ro_on and code == 0 and t["ro"][i]:
                    add(1, row, "readonly_load_requests", ln, req)
                    add(1, row, "readonly_load_sectors", ln, cost)
                    if t["tex"][i]:
                        add(1, row, "texture_requests", ln, req)
                        add(1, row, "texture_sectors", ln, cost)
                if sp == local and t["spill"][i]:
                    add(1, row, f"spill_{name}_requests", ln, req)
                    add(1, row, "spill_bytes", ln, COL["lanes"], scale=int(t["size"][i]))
                add(1, row, f"{prefix}_{name}_requests", ln, req)
                add(1, row, f"{prefix}_{name}_sectors", ln, cost)
                if code <= 1:
                    add(1, row, f"{prefix}_{name}_transactions", ln, cost)
                if code == 1 and not (sp == local and l1_present):
                    add(1, row, "l2_write_sectors", ln, cost)
                if code != 0:                        # cache_counters': loads
                    continue
                hits = COL["l1_hits"]
                add(2, row, "l1_hits", ln, hits, l1=True)
                add(2, row, "l1_misses", ln, COL["l1_misses"], l1=True)
                add(2, row, "l2_read_sectors", ln, COL["l2_read"])
                add(2, row, "l2_hits", ln, COL["l2_hits"])
                add(2, row, "l2_misses", ln, COL["dram"])
                add(2, row, "dram_read_sectors", ln, COL["dram"])
                if sp == glob and readonly_path != "none" and t["ro"][i]:
                    on_l1 = readonly_path == "l1"
                    for h, m in [("readonly_hits", "readonly_misses")] + (
                            [("texture_hits", "texture_misses")] if t["tex"][i] else []):
                        add(2, row, h, ln, hits, scale=int(on_l1))
                        add(2, row, m, ln, cost, minus=hits if on_l1 else -1)
        self.sections = tuple({r: tuple(es) for r, es in sorted(sec.items())} for sec in self.sections)
        self.line_of_row = [int(line[min(r // NSP, n - 1)]) if n else 0 for r in range(max(n, 1) * NSP)]
        # the rows whose cost says a request went through L1 (cache_counters' via_l1)
        self.via_l1 = frozenset(r for r in range(n * NSP) if r % NSP in (glob, local) and kind[r] in (0, 3))
        # the same entries as one array, in counters_of's order (launch_sums' native settle):
        # row, col, scale, minus, gate, L1 only, name id, line, the column that says the row is used
        self.names = []
        ids: dict = {}
        rows = [(row, e, req) for sec in self.sections for row, es in sec.items() for e in es] + [
            (row, ("memory_cycles", self.line_of_row[row], COL["cycles"], 1, -1, -1, False), COL["seen"])
            for row in range(max(n, 1) * NSP)]
        ent = []
        for row, (name, ln, col, scale, minus, gate, l1), used in rows:
            if name not in ids:
                ids[name] = len(self.names)
                self.names.append(name)
            ent.append((row, col, scale, minus, gate, int(l1), ids[name], ln, used))
        self.entries = np.array(ent, dtype=np.int64).reshape(-1, ENTRY_FIELDS)
        self.name_set = frozenset(self.names)     # (Stats.get looks counters up in it)
        self.via_rows = np.array(sorted(self.via_l1), dtype=np.int64)
        # the order of a line's global requests when they cost as much (MemorySystem._prepare_global's
        # groups: access size, then load, read-only load, store, atomic, reduction)
        self.rank = np.array([int(t["size"][i]) * 8 + int(op[i]) * 2 + int(ro_on and op[i] == 0 and bool(t["ro"][i]))
                              for i in range(n)], dtype=np.int64)
        self.line = np.ascontiguousarray(line, dtype=np.int64)
        for a in (self.entries, self.via_rows, self.rank, self.line):
            a.setflags(write=False)

    def counters(self, table: np.ndarray) -> list:
        """(counter, line, value) of `table` (this kernel's rows)."""
        return self.counters_of(used_or_seen(table))

    def counters_of(self, used: list) -> list:
        """(counter, line, value) of the rows `used_or_seen` gives of a table."""
        req, cost, seen, cyc = COL["requests"], COL["cost"], COL["seen"], COL["cycles"]
        via = self.via_l1
        via_l1 = any(v[cost] for row, v in used if row in via)
        out = []
        for section in self.sections:
            for row, v in used:
                es = section.get(row)
                if es is None or not v[req]:
                    continue
                for name, ln, col, scale, minus, gate, l1 in es:
                    if (gate >= 0 and not v[gate]) or (l1 and not via_l1):
                        continue
                    out.append((name, ln, v[col] * scale - v[minus] if minus >= 0 else v[col] * scale))
        lines = self.line_of_row
        out += [("memory_cycles", lines[row], v[cyc]) for row, v in used if v[seen]]
        return out


def used_or_seen(table: np.ndarray) -> list:
    """The rows that counted a request or were seen by native_cycle_sums:
    (row, its sums as a list), rows ascending."""
    rows = np.flatnonzero(table[:, COL["requests"]] | table[:, COL["seen"]])
    return list(zip(rows.tolist(), table[rows].tolist()))
