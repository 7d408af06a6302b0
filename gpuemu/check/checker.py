"""One launch's check tools: trace batches in, Findings out.

The executor hands every drained trace batch to `consume` (records in issue
order) and calls `finish` at the end. Blocks run one after another, so the
rows of every block but the last one of a batch are complete: shared and
local memory are judged per complete block. Global accesses are judged in
chunks of about CHUNK thread accesses (a race between accesses further apart
in the run is not seen).
"""
from __future__ import annotations

import numpy as np

from gpuemu.errors import Finding
from gpuemu.jit import abi
from gpuemu.machine.findings import thread_of

from . import initcheck, racecheck, synccheck
from .accesses import InstrTables, Rows, decode, granule
from .shadow_memory import GlobalShadow

CHUNK = 1 << 21


class Checker:
    def __init__(self, tools: frozenset, meta, preset, shape, memory) -> None:
        self.tools, self.meta, self.shape = tools, meta, shape
        self.its = bool(getattr(preset, "independent_thread_scheduling", True))
        self.tables = InstrTables.of(meta.instrs)
        self.unit = {s: granule(meta.instrs, s) for s in ("shared", "local", "global")}
        self.tpb = shape.threads_per_block
        self.seq = 0
        self.carry: dict = {"shared": None, "local": None}
        self.global_rows: list = []
        self.global_n = 0
        self.last_fence: dict = {}      # block -> seq of its latest __threadfence
        self.first_atomic: dict = {}    # block -> seq of its first global atomic
        self.gshadow = GlobalShadow(memory) if "initcheck" in tools else None
        self.races: dict = {}
        self.uninit: dict = {}
        self.warp_sync: dict = {}
        self.sync_ops = {i.id: i.op[len("sync_"):] for i in meta.instrs if i.op.startswith("sync_")}

    # ------------------------------------------------------------- batches
    def consume(self, rec: np.ndarray) -> None:
        seq0 = self.seq
        self.seq += len(rec)
        sync = np.flatnonzero(rec["space"] == abi.SYNC_SPACE)
        if len(sync):
            self._sync_records(rec[sync], sync + seq0)
        last_block = int(rec["block"][-1])
        spaces = {}
        if self.tools & {"race", "initcheck"}:
            spaces = {"shared": self.unit["shared"], "global": self.unit["global"]}
            if "initcheck" in self.tools:
                spaces["local"] = self.unit["local"]
        by_space = decode(rec, seq0, self.tables, spaces) if spaces else {}
        for space in ("shared", "local"):
            rows = by_space.get(space)
            if rows is None:
                continue
            if self.carry[space] is not None:
                rows = Rows.concat([self.carry[space], rows])
            # blocks run one after another: only the last one may go on
            cut = int(np.searchsorted(rows.seq, self._last_block_seq(rec, seq0, last_block)))
            self.carry[space] = rows.take(slice(cut, None))
            if cut:
                self._judge_blocks(space, rows.take(slice(0, cut)))
        g = by_space.get("global")
        if g is not None:
            self._note_atomics(g)
            if self.gshadow:
                self._global_init(g)
            if "race" in self.tools:
                self.global_rows.append(g)
                self.global_n += len(g)
                if self.global_n >= CHUNK:
                    self._global_races()

    @staticmethod
    def _last_block_seq(rec: np.ndarray, seq0: int, last_block: int) -> int:
        """Launch-wide index of the first record of the batch's last block."""
        other = np.flatnonzero(rec["block"] != last_block)
        return seq0 + (int(other[-1]) + 1 if len(other) else 0)

    def finish(self) -> list:
        for space in ("shared", "local"):
            if self.carry[space] is not None and len(self.carry[space]):
                self._judge_blocks(space, self.carry[space])
            self.carry[space] = None
        if self.global_rows:
            self._global_races()
        if self.gshadow:
            self.gshadow.finish()
        out = [f for _, f in sorted(self.races.items())]
        # a read that only looks uninitialised because it raced with the
        # write is the race's symptom, reported once, as the race
        racy = {(f.space, ln) for f in out for ln in (f.line, f.other_line)}
        out += [f for _, f in sorted(self.uninit.items()) if (f.space, f.line) not in racy]
        out += [f for _, f in sorted(self.warp_sync.items())]
        self.races, self.uninit, self.warp_sync = {}, {}, {}
        return out

    # ---------------------------------------------------------------- tools
    def _judge_blocks(self, space: str, rows: Rows) -> None:
        if space == "shared":
            if "race" in self.tools:
                self._add_races(racecheck.find_races(rows, (rows.block, rows.epoch, rows.unit),
                                                     self.tpb, self.its), rows, space)
            if "initcheck" in self.tools:
                self._add_uninit(initcheck.uninitialized(rows, (rows.block, rows.unit)), rows, space)
        else:
            bad = initcheck.uninitialized(rows, (rows.block, rows.warp, rows.lane, rows.unit))
            self._add_uninit(bad, rows, space)

    def _note_atomics(self, g: Rows) -> None:
        at = np.flatnonzero(g.atomic)
        for b in np.unique(g.block[at]).tolist():
            self.first_atomic.setdefault(b, int(g.seq[at][g.block[at] == b].min()))

    def _global_races(self) -> None:
        rows = Rows.concat(self.global_rows)
        self.global_rows, self.global_n = [], 0
        nb = int(rows.block.max()) + 1
        fence = np.full(nb, -1, np.int64)
        atom = np.full(nb, 1 << 62, np.int64)
        for b, s in self.last_fence.items():
            if b < nb:
                fence[b] = s
        for b, s in self.first_atomic.items():
            if b < nb:
                atom[b] = s
        release = fence[rows.block] > rows.seq
        acquire = atom[rows.block] < rows.seq
        self._add_races(racecheck.find_races(rows, (rows.unit,), self.tpb, self.its, release, acquire),
                        rows, "global")

    def _global_init(self, g: Rows) -> None:
        unit = self.unit["global"]
        idx, off = self.gshadow.locate(g.unit * unit)
        sel = np.flatnonzero(idx >= 0)
        if not len(sel):
            return
        sub = g.take(sel)
        bad = initcheck.uninitialized(sub, (sub.unit,), self.gshadow.written(idx[sel], off[sel]))
        self._add_uninit(bad, sub, "global")
        w = sub.write
        self.gshadow.mark(idx[sel][w], off[sel][w], unit)

    # ------------------------------------------------------------- findings
    def _block(self, linear: int) -> tuple:
        gx, gy, _ = self.shape.grid
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def _thread(self, rows: Rows, i: int) -> tuple:
        return thread_of(int(rows.warp[i]) * abi.WARP + int(rows.lane[i]), self.shape.block)

    def _where(self, line: int) -> tuple:
        return self.meta.where(line)

    def _add_races(self, found: dict, rows: Rows, space: str) -> None:
        for (hz, line, other), (count, i, j) in found.items():
            key = (line, other, hz, space)
            f = self.races.get(key)
            if f is not None:
                f.extra["count"] += count
                continue
            ln, file, label = self._where(line)
            oln, _, olabel = self._where(other)
            t, ot = self._thread(rows, i), self._thread(rows, j)
            b, ob = self._block(int(rows.block[i])), self._block(int(rows.block[j]))
            addr = int(rows.unit[i]) * self.unit[space]
            between = ("different blocks" if b != ob else
                       "one barrier interval" if rows.warp[i] != rows.warp[j] else
                       "one warp with no __syncwarp between them (independent thread scheduling)")
            msg = (f"{hz} hazard on {space} memory at {addr:#x}: {label} (thread {t} of block {b}) "
                   f"and {olabel} (thread {ot} of block {ob}) are not ordered ({between}); "
                   f"add a __syncthreads()/__syncwarp() or a fence between them")
            self.races[key] = Finding(kind="race", message=msg, kernel=self.meta.name, line=ln,
                                      block=b, thread=t, space=space, address=addr, other_line=oln,
                                      other_thread=ot,
                                      extra={"hazard": hz, "count": count, "other_block": ob,
                                             "file": file})

    def _add_uninit(self, bad: np.ndarray, rows: Rows, space: str) -> None:
        for i in bad.tolist():
            line = int(rows.line[i])
            key = (line, space)
            f = self.uninit.get(key)
            if f is not None:
                f.extra["count"] += 1
                continue
            ln, file, label = self._where(line)
            addr = int(rows.unit[i]) * self.unit[space]
            what = {"shared": "shared memory", "local": "a local variable or array",
                    "global": "a fresh global allocation (gpuemu.empty)"}[space]
            self.uninit[key] = Finding(
                kind="uninitialized_read", kernel=self.meta.name, line=ln,
                block=self._block(int(rows.block[i])), thread=self._thread(rows, i), space=space,
                address=addr,
                message=f"{label} reads {what} at {space} address {addr:#x} that nothing wrote "
                        f"before (the emulator gives 0; a GPU gives whatever was there)",
                extra={"count": 1, "file": file})

    def _sync_records(self, rec: np.ndarray, seq: np.ndarray) -> None:
        ops = np.array([self.sync_ops.get(int(i), "") for i in rec["instr"]])
        fence = np.flatnonzero(np.char.startswith(ops, "threadfence"))
        for k in fence.tolist():
            self.last_fence[int(rec["block"][k])] = int(seq[k])
        if "synccheck" not in self.tools:
            return
        sel = np.flatnonzero(~np.char.startswith(ops, "threadfence"))
        if not len(sel):
            return
        rec, ops = rec[sel], ops[sel]
        existing = np.array([self._existing(int(w)) for w in rec["warp"]], dtype=np.int64)
        shuffle = np.isin(ops, list(synccheck.SHUFFLES))
        r, lane, missing, bad_src = synccheck.lane_problems(rec["mask"], rec["addr"], existing, shuffle)
        instr = rec["instr"]
        for k in range(len(r)):
            i = int(r[k])
            line = int(self.tables.line[instr[i]])
            op = str(ops[i])
            kind = "invalid_shuffle" if op in synccheck.SHUFFLES else "barrier_divergence"
            key = (line, kind)
            if key in self.warp_sync:
                self.warp_sync[key].extra["count"] += 1
                continue
            ln, file, label = self._where(line)
            w = int(rec["warp"][i])
            t = thread_of(w * abi.WARP + int(lane[k]), self.shape.block)
            name = "__syncwarp" if op == "syncwarp" else f"__{op}_sync"
            if int(bad_src[k]) >= 0:
                why = (f"reads lane {int(bad_src[k])}, which is not active here or not in the mask "
                       f"(its value is undefined)")
            else:
                why = (f"its mask names lanes {int(missing[k]):#010x} that do not execute it with "
                       f"this lane (active lanes {int(rec['mask'][i]):#010x})")
            self.warp_sync[key] = Finding(
                kind=kind, kernel=self.meta.name, line=ln, block=self._block(int(rec["block"][i])),
                thread=t, message=f"{name}() at {label} {why}",
                extra={"count": 1, "warp": w, "active_mask": int(rec["mask"][i]),
                       "missing_lanes": int(missing[k]), "source_lane": int(bad_src[k]),
                       "file": file})

    def _existing(self, warp: int) -> int:
        n = min(max(self.tpb - warp * abi.WARP, 0), abi.WARP)
        return (1 << n) - 1
