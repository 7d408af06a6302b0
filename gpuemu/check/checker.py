"""One launch's check tools: trace batches in, Findings out.

The executor hands every drained trace batch to `consume` (records in issue
order) and calls `finish` at the end. Blocks run one after another, so the
records of every block but the last one of a batch are complete: shared and
local memory are judged per complete block, by one native walk over their
records (block_scan), or the numpy way (decode, racecheck.find_races,
initcheck.uninitialized) where that walk declines. A block parked while
others run (machine/resident_blocks.py) is held: its shared and local
records wait until it finishes (hold_block, block_done). Global accesses are
judged in chunks of about CHUNK thread accesses (a race between accesses
further apart in the run is not seen).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from gpuemu.errors import Finding
from gpuemu.jit import abi
from gpuemu.machine.findings import object_at, thread_of
from gpuemu.memory.trace import SPACE_CODES, sync_op
from isa import ir

from . import accesses, block_scan, initcheck, racecheck, synccheck
from .accesses import InstrTables, Rows, decode, distinct, granule, row_count
from .message_passing import (Acquired, Places, Threads, fence_keys, fence_releasing, first_fence_after,
                              last_fence_before, released)

from .shadow_memory import GlobalShadow

CHUNK = 1 << 21
BLOCK_SPACES = ("shared", "local")
MAX_LINES = 256


class Checker:
    def __init__(self, tools: frozenset, meta, preset, shape, memory, params=None) -> None:
        self.tools, self.meta, self.shape = tools, meta, shape
        self.memory, self.params = memory, params
        self.its = bool(getattr(preset, "independent_thread_scheduling", True))
        self.tables = InstrTables.of(meta.instrs)
        # atomics and volatile loads and stores are strong, in global and in
        # shared memory (PTX ISA, "volatile Operation": a volatile operation is
        # a relaxed one of system scope), `atomic` in these Rows: two strong
        # accesses never race
        vol = np.zeros(len(self.tables.line), bool)
        vol[[i.id for i in meta.instrs if i.volatile]] = True
        t = self.tables
        self.strong_tables = InstrTables(t.line, t.write, t.read, t.atomic | vol, t.size)
        self.unit = {s: granule(meta.instrs, s) for s in ("shared", "local", "global")}
        self.tpb = shape.threads_per_block
        self.seq = 0
        # shared and local memory are judged per block: which tool, on which space
        self.block_tools = {}
        if self.tools & {"race", "initcheck"}:
            self.block_tools["shared"] = ("race" in tools, "initcheck" in tools)
        if "initcheck" in tools:
            self.block_tools["local"] = (False, True)
        self.block_codes = [SPACE_CODES[s] for s in self.block_tools]
        self.carry: list = []       # (records, seq) of the shared and local records of a block going on
        self.carry_block = -1
        self.carry_spaces: set = set()
        # blocks parked while others ran (machine/resident_blocks.py): block ->
        # ([(records, seq)], spaces) of its shared and local records, judged at block_done
        self.held: dict = {}
        n = len(self.tables.line)
        self.sync_op = np.full(n, "", dtype=object)     # per MemInstr id: "shfl", "threadfence", ...
        for i in meta.instrs:
            if sync_op(i.op) is not None:
                self.sync_op[i.id] = sync_op(i.op)
        ops = self.sync_op.astype(str)
        # a device-wide fence orders global accesses across blocks; a fence of any
        # scope (__threadfence_block too) orders a warp's shared accesses for its block
        self.is_fence = np.isin(ops, ("threadfence", "threadfence_system"))
        self.is_any_fence = np.char.startswith(ops, "threadfence")
        st = self.strong_tables
        # message passing between a block's warps through shared memory (a fence,
        # then a strong shared write) is judged on the numpy path (_shared_ordering)
        self.shared_mp = bool("race" in tools and self.is_any_fence.any() and any(
            i.space in ("shared", "generic") and st.write[i.id] and st.atomic[i.id] for i in meta.instrs))
        self.warp_fences: list = []     # (blocks, warps, seqs) of the fence records so far (shared_mp)
        self.scan = self._scanners(meta, shape)
        self.global_recs: list = []     # (global records, their seq) of the chunk
        self.global_n = 0               # ... and their rows
        self.fences: list = []          # (blocks, seqs, warps, lanes, intervals, warp-sync intervals) of the __threadfence records so far
        self.gshadow = GlobalShadow(memory) if "initcheck" in tools else None
        self.races: dict = {}
        self.uninit_wait: list = []     # Rows of global uninitialised reads the chunk's races may explain
        self.uninit: dict = {}
        self.warp_sync: dict = {}
        self.is_shuffle = np.isin(ops, list(synccheck.SHUFFLES))
        self.is_syncwarp = ops == "syncwarp"
        self.syncs = racecheck.WarpSyncs() if "race" in tools else None

    def _scanners(self, meta, shape) -> dict:
        """{space: (block_scan tables, shadow)} of the spaces
        block_scan judges (none where the kernel has too many lines)."""
        if len(np.unique(self.tables.line)) > MAX_LINES:
            return {}
        out = {}
        for space, (race, _) in self.block_tools.items():
            if space == "shared" and self.shared_mp:
                continue
            unit = self.unit[space]
            t = self._tables_of(space)
            tab = block_scan.tables(t.line, t.write, t.read, t.atomic, t.size, unit)
            if space == "shared":
                nbytes = max(getattr(meta, "dynamic_offset", 0) + getattr(shape, "shared_dynamic", 0),
                             getattr(meta, "static_shared", 0), 16)
                out[space] = (tab, block_scan.Shadow(-(-nbytes // unit), race))
            else:
                upt = max(-(-getattr(meta, "local_stride", 0) // unit), 1)
                nslots = shape.warps_per_block * abi.WARP * upt
                out[space] = (tab, block_scan.Shadow(nslots, False, upt))
        return out

    # ------------------------------------------------------------- batches
    def consume(self, rec: np.ndarray) -> None:
        rec = np.ascontiguousarray(rec)
        seq0 = self.seq
        self.seq += len(rec)
        space = rec["space"]
        sync = np.flatnonzero(space == abi.SYNC_SPACE)
        if len(sync):
            self._sync_records(rec[sync], sync + seq0)
        if self.block_tools:
            self._block_records(rec, seq0)
        if self.tools & {"race", "initcheck"}:
            gsel = np.flatnonzero(space == SPACE_CODES["global"])
            if len(gsel):
                self._global_records(rec[gsel], seq0 + gsel)

    def _block_records(self, rec: np.ndarray, seq0: int) -> None:
        """Judge the shared and local records of the blocks this batch
        completes. Blocks run one after another: only the batch's last block
        may go on, its records (from a suffix of the batch) wait in the carry;
        a held block's records wait for its block_done."""
        blocks, space = rec["block"], rec["space"]
        mine = {code: space == code for code in self.block_codes}
        free = None                     # the records of blocks not held (None: all)
        if self.held:
            held = np.isin(blocks, list(self.held))
            if held.any():
                self._hold_records(rec, seq0, held, mine)
                free = np.flatnonzero(~held)
                if not len(free):
                    return
                mine = {code: m & ~held for code, m in mine.items()}
        last = blocks[-1] if free is None else blocks[free[-1]]
        other = np.flatnonzero(blocks != last) if free is None else free[blocks[free] != last]
        cut = int(other[-1]) + 1 if len(other) else 0      # where the last block starts
        present = {code for code, m in mine.items() if m.any()}
        if not present and not self.carry:
            return
        sel = np.flatnonzero(np.logical_or.reduce(list(mine.values())))
        at = int(np.searchsorted(sel, cut))
        self.carry_spaces |= present
        if cut == 0 and self.carry_block == last:
            self.carry.append((rec[sel], seq0 + sel))       # one block goes on
            return
        self._judge_records(self.carry + [(rec, sel[:at], seq0)], self.carry_spaces)
        self.carry = [(rec[sel[at:]], seq0 + sel[at:])]
        self.carry_spaces = set(present)
        self.carry_block = int(last)

    def hold_block(self, block: int) -> None:
        """Block `block` (linear index) is parked while other blocks run
        (machine/resident_blocks.py): its shared and local records so far
        and those to come are judged together, as one block, at block_done."""
        if block in self.held:
            return
        parts, spaces = [], set()
        if self.carry_block == block:
            parts, spaces = self.carry, self.carry_spaces
            self.carry, self.carry_spaces, self.carry_block = [], set(), -1
        self.held[block] = (parts, spaces)

    def block_done(self, block: int) -> None:
        """A held block (hold_block) finished: judge its shared and local
        records. Blocks judged since its first ran later in the launch, so
        the scan's shadow is forgotten around it (block_scan assumes blocks
        come in launch order)."""
        entry = self.held.pop(block, None)
        if entry is None or not entry[0]:
            return
        for _, shadow in self.scan.values():
            shadow.reset()
        self._judge_records(*entry)
        for _, shadow in self.scan.values():
            shadow.reset()

    def _hold_records(self, rec: np.ndarray, seq0: int, held: np.ndarray, mine: dict) -> None:
        """The shared and local records of held blocks (`held`) to their parts."""
        ours = held & np.logical_or.reduce(list(mine.values()))
        for b in np.unique(rec["block"][ours]).tolist():
            sel = np.flatnonzero(ours & (rec["block"] == b))
            parts, spaces = self.held[b]
            parts.append((rec[sel], seq0 + sel))
            spaces |= {code for code, m in mine.items() if m[sel].any()}

    def _judge_records(self, parts: list, spaces: set) -> None:
        """Judge complete blocks' shared and local records: parts (records,
        launch-wide seq) or (batch, indices, seq of its first record);
        `spaces`: the codes of the spaces they hold (at least)."""
        ptr, seq = [], []
        for part in parts:
            recs, idx = part[0], (part[1] if len(part) == 3 else np.arange(len(part[0])))
            ptr.append(recs.ctypes.data + idx.astype(np.int64) * recs.itemsize)
            seq.append(part[2] + idx if len(part) == 3 else part[1])
        ptr, seq = np.concatenate(ptr), np.concatenate(seq)
        if not len(ptr):
            return
        for space, (race, init) in self.block_tools.items():
            code = SPACE_CODES[space]
            if code not in spaces:
                continue
            if space in self.scan:
                tab, shadow = self.scan[space]
                status, races, uninit = block_scan.scan(ptr, seq, code, tab, self.unit[space], shadow,
                                                        self.its, race, init, self._sync_tables(parts))
                if status == block_scan.OK:
                    # an uninitialised read may be a race's symptom: which
                    # ones, only the rows tell (rare: a kernel with both)
                    both = race and (races[..., 0] > 0).any() and (uninit[:, 0] > 0).any()
                    self._merge_scan(space, tab, races, None if both else uninit)
                    if not both:
                        continue
                    rows = self._rows_of(parts, seq, space)
                    if rows is not None:
                        self._add_uninit(self._uninit_shared(rows), rows, space)
                    continue
            rows = self._rows_of(parts, seq, space)
            if rows is not None:
                self._judge_blocks(space, rows)

    def _sync_tables(self, parts: list):
        """block_scan's tables of the partial __syncwarp calls of the blocks
        of `parts` (None: none)."""
        if self.syncs is None or not len(self.syncs.partial):
            return None
        blocks = np.concatenate([(p[0] if len(p) == 2 else p[0][p[1]])["block"] for p in parts])
        return self.syncs.tables(blocks, self.shape.warps_per_block) if len(blocks) else None

    def _rows_of(self, parts: list, seq: np.ndarray, space: str):
        """The Rows of `space` in _judge_records' parts (None: no access)."""
        recs = np.concatenate([p[0] if len(p) == 2 else p[0][p[1]] for p in parts])
        mine = np.flatnonzero(recs["space"] == SPACE_CODES[space])
        return decode(recs[mine], seq[mine], self._tables_of(space), {space: self.unit[space]}).get(space)

    def _tables_of(self, space: str) -> InstrTables:
        """The instruction tables `space`'s records are judged by: volatile
        accesses strong in shared memory (local memory has no other thread)."""
        return self.strong_tables if space == "shared" else self.tables

    def _global_records(self, grec: np.ndarray, seq: np.ndarray) -> None:
        """A batch's global records: initcheck now, races per chunk."""
        unit = self.unit["global"]
        if self.gshadow:
            g = decode(grec, seq, self.strong_tables, {"global": unit}).get("global")
            if g is not None:
                self._global_init(g)
        if "race" in self.tools:
            self.global_recs.append((grec, seq))
            self.global_n += row_count(grec, self.tables, unit)
            if self.global_n >= CHUNK:
                self._global_races()

    def finish(self) -> list:
        if self.carry:
            done, self.carry = self.carry, []
            self._judge_records(done, self.carry_spaces)
        for block in list(self.held):      # blocks still parked when the launch stopped
            self.block_done(block)
        if self.global_recs:
            self._global_races()
        if self.gshadow:
            self.gshadow.finish()
        self._pending_uninit()
        # a read that only looks uninitialised because it raced with a
        # write is the race's symptom, reported once, as the race: those
        # reads are left out where they are found (initcheck.race_symptoms)
        out = [f for _, f in sorted(self.races.items())]
        out += [f for _, f in sorted(self.uninit.items())]
        out += [f for _, f in sorted(self.warp_sync.items())]
        self.races, self.uninit, self.warp_sync = {}, {}, {}
        return out

    # ---------------------------------------------------------------- tools
    def _judge_blocks(self, space: str, rows: Rows) -> None:
        race, init = self.block_tools[space]
        if space == "shared":
            release, acquire = (self._shared_ordering(rows) if self.shared_mp else None) or (None, None)
            if race:
                found = racecheck.find_races(rows, (rows.block, rows.epoch, rows.unit), self.tpb, self.its,
                                             release, acquire, syncs=self.syncs)
                self._add_found_races(found, rows, space, acquire)
            if init:
                self._add_uninit(self._uninit_shared(rows, release, acquire), rows, space)
        else:
            bad = initcheck.uninitialized(rows, (rows.block, rows.warp, rows.lane, rows.unit))
            self._add_uninit(bad, rows, space)

    def _uninit_shared(self, rows: Rows, release=None, acquire=None) -> np.ndarray:
        """Uninitialised shared reads of complete blocks' rows, less those
        that are a race's symptom where racecheck is on (release, acquire:
        _shared_ordering's)."""
        keys = (rows.block, rows.unit)
        bad = initcheck.uninitialized(rows, keys)
        if self.block_tools["shared"][0] and len(bad):
            bad = bad[~initcheck.race_symptoms(rows, bad, keys, self.tpb, self.its, release, acquire)]
        return bad

    def _shared_ordering(self, rows: Rows):
        """(release, acquire) of complete blocks' shared rows, or None where
        nothing orders them: message passing (message_passing.py) between
        the warps of a block, a warp the agent. An access is ordered before
        another warp's when its warp then issued a fence of any scope and
        after it a strong write of a flag in shared memory (`release`), and
        the other's warp, after that write and before its access, a strong
        read of the flag (`acquire`, an Acquired)."""
        strong_w = np.flatnonzero(rows.atomic & rows.write)
        if not self.warp_fences or not len(strong_w):
            return None
        fb, fw, fs = (np.concatenate([f[k] for f in self.warp_fences]).astype(np.int64) for k in range(3))
        nw = int(max(rows.warp.max(), fw.max())) + 1
        fkey, span = fence_keys(fb * nw + fw, fs, rows.seq)
        agent = rows.block.astype(np.int64) * nw + rows.warp
        agents, of = np.unique(agent, return_inverse=True)
        pub, release = released(of, agents, strong_w, rows.seq, fkey, span)
        if not pub.any():
            return None
        flag = rows.block.astype(np.int64) << 32 | rows.unit.astype(np.int64)   # a block's location
        w, r = strong_w[pub], np.flatnonzero(rows.atomic & rows.read)
        after = first_fence_after(fkey, span, agent, rows.seq.astype(np.int64))
        return release, Acquired(agent, rows.seq, after, agent[w], flag[w], rows.seq[w],
                                 agent[r], flag[r], rows.seq[r])

    def _merge_scan(self, space: str, tab, races: np.ndarray, uninit) -> None:
        """Add block_scan's aggregated tables to the findings (uninit: None
        leaves them out)."""
        for kind, li, lo in np.argwhere(races[..., 0] > 0).tolist():
            count, b, t, ob, ot, unit = races[kind, li, lo].tolist()
            self._add_race(racecheck.KINDS[kind], int(tab.lines[li]), int(tab.lines[lo]), count,
                           (b, t), (ob, ot), unit, space)
        for li in (np.flatnonzero(uninit[:, 0] > 0).tolist() if uninit is not None else ()):
            count, b, t, unit = uninit[li].tolist()
            self._add_uninit_line(int(tab.lines[li]), space, count, b, t, unit)

    def _global_races(self) -> None:
        recs = np.concatenate([r for r, _ in self.global_recs])
        seq = np.concatenate([s for _, s in self.global_recs])
        self.global_recs, self.global_n = [], 0
        if not self.uninit_wait and self.strong_tables.atomic[recs["instr"]].all():
            return      # strong accesses only (a spin on a flag): two of them never race
        # a location nothing wrote in the chunk races with nothing: only
        # rows of written units take part (whole groups go, the rest is as
        # before), and records that touch none of them are not decoded
        unit = self.unit["global"]
        wr = np.flatnonzero(self.tables.write[recs["instr"]])
        w = decode(recs[wr], seq[wr], self.strong_tables, {"global": unit}).get("global")
        if w is None:
            self._pending_uninit()
            return
        wu = distinct(w.unit)
        lo, hi = accesses.unit_span(recs, self.tables, unit)
        near = np.flatnonzero((hi >= wu[0]) & (lo <= wu[-1]))
        rows = decode(recs[near], seq[near], self.strong_tables, {"global": unit}).get("global")
        if rows is None:
            self._pending_uninit()
            return
        keep = (rows.unit >= wu[0]) & (rows.unit <= wu[-1])
        span = int(wu[-1] - wu[0])
        keep[keep] = np.isin(rows.unit[keep], wu, kind="table" if span < 1 << 26 else None)
        rows = rows.take(keep)
        if self.uninit_wait:
            self._pending_uninit(rows)
        release, acquire = self._ordering(rows) or (None, None)
        found = racecheck.find_races(rows, (rows.unit,), self.tpb, self.its, release, acquire,
                                     observed=True, syncs=self.syncs)
        self._add_found_races(found, rows, "global", acquire)

    def _pending_uninit(self, rows=None) -> None:
        """Add the waiting global uninitialised reads but those a later
        write of the chunk's `rows` (written units) races with."""
        if not self.uninit_wait:
            return
        pend = Rows.concat(self.uninit_wait)
        self.uninit_wait = []
        bad = np.arange(len(pend))
        if rows is not None:
            both = Rows.concat([pend, rows])
            release, acquire = self._ordering(both) or (None, None)
            bad = bad[~initcheck.race_symptoms(both, bad, (both.unit,), self.tpb, self.its, release, acquire)]
        self._add_uninit(bad, pend, "global")

    def _ordering(self, rows: Rows):
        """(release, acquire) of a chunk's global rows for racecheck.find_races,
        or None where nothing orders them: message passing (message_passing.py),
        a block the agent. An access is ordered before another when a
        __threadfence that orders it (its thread's, or its warp's or block's
        after a __syncwarp or __syncthreads: fence_releasing) is followed by a
        strong write (atomic or volatile store) of its block (`release`), and
        the other access's thread sees a strong read (atomic or volatile
        load) of a flag the first block so wrote after that fence (`acquire`,
        an Acquired with the threads). A fence or an atomic alone orders
        nothing."""
        if not self.fences:
            return None
        strong_w = np.flatnonzero(rows.atomic & rows.write)
        if not len(strong_w):
            return None
        fences = tuple(np.concatenate([f[k] for f in self.fences]).astype(np.int64) for k in range(6))
        fkey, span = fence_keys(fences[0], fences[1], rows.seq)
        block, seq = rows.block.astype(np.int64), rows.seq.astype(np.int64)
        # a strong write after a fence of its block publishes its location
        pub = last_fence_before(fkey, span, block[strong_w], seq[strong_w]) >= 0
        if not pub.any():
            return None
        # an access is released by the first fence that orders it (fence_releasing), where a
        # strong write of its block follows that fence
        after = fence_releasing(fences, block, rows.warp, rows.lane, rows.epoch, rows.wsync, seq, self.its)
        last_w = np.full(int(block.max()) + 1, -1, np.int64)
        np.maximum.at(last_w, block[strong_w], seq[strong_w])
        release = after < last_w[block]
        w, r = strong_w[pub], np.flatnonzero(rows.atomic & rows.read)
        places = Places(rows.warp, rows.lane, rows.epoch, rows.wsync)
        threads = Threads(places, places.at(r), self.its)
        return release, Acquired(block, rows.seq, after, block[w], rows.unit[w], rows.seq[w],
                                 block[r], rows.unit[r], rows.seq[r], threads)

    def _global_init(self, g: Rows) -> None:
        unit = self.unit["global"]
        idx, off = self.gshadow.locate(g.unit * unit)
        sel = np.flatnonzero(idx >= 0)
        if not len(sel):
            return
        sub = g.take(sel)
        bad = initcheck.uninitialized(sub, (sub.unit,), self.gshadow.written(idx[sel], off[sel]))
        if "race" in self.tools and len(bad):
            self.uninit_wait.append(sub.take(bad))     # judged with the chunk's races
        else:
            self._add_uninit(bad, sub, "global")
        w = sub.write
        self.gshadow.mark(idx[sel][w], off[sel][w], unit)

    # ------------------------------------------------------------- findings
    def _block(self, linear: int) -> tuple:
        gx, gy, _ = self.shape.grid
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def _thread(self, in_block: int) -> tuple:
        return thread_of(int(in_block), self.shape.block)

    def _where(self, line: int) -> tuple:
        return self.meta.where(line)

    def _object(self, space: str, addr: int) -> tuple:
        """(description, byte offset in it) of the object holding `addr`: a
        shared array or local object (as out-of-bounds findings name them),
        the kernel argument pointing into a global allocation, a __device__
        variable, or the allocation; (None, None) where none does."""
        if space != "global":
            obj = object_at(self.meta, getattr(self.shape, "shared_dynamic", 0), space, addr)
            return (obj[0], addr - obj[1]) if obj else (None, None)
        alloc = next((a for a in self.memory.live_allocations()
                      if a.address <= addr < a.address + a.nbytes), None)
        if alloc is None:
            return None, None
        best = None
        for name, ty, off in self.meta.params if self.params is not None else ():
            if not isinstance(ty, ir.PointerType) or off + 8 > len(self.params):
                continue
            ptr = int(self.params[off:off + 8].view(np.int64)[0])
            start = ptr & abi.ADDR_MASK
            if (ptr >> abi.ADDR_BITS) & 0xFFFF == alloc.tag and start <= addr and (best is None or start > best[1]):
                best = (f"argument '{name}'", start)
        if best is not None:
            return best[0], addr - best[1]
        return (alloc.name or f"allocation at {alloc.address:#x} ({alloc.nbytes} bytes)"), addr - alloc.address

    def _named(self, space: str, addr: int, extra: dict) -> str:
        """' (byte N of <object>)' for a message; the object and offset go into extra."""
        obj, off = self._object(space, addr)
        if obj is None:
            return ""
        extra.update(object=obj, offset=off)
        return f" (byte {off} of {obj})"

    def _add_found_races(self, found: dict, rows: Rows, space: str, acquire=None) -> None:
        """Add racecheck.find_races' {(kind, line, other): [count, row, other row]}
        (acquire: the message passing it judged by, to say where the later
        access's block or warp read a flag, but not one the earlier's published)."""
        def who(i):
            return int(rows.block[i]), int(rows.warp[i]) * abi.WARP + int(rows.lane[i])
        for (hz, line, other), (count, i, j) in found.items():
            x, y = (i, j) if rows.seq[i] <= rows.seq[j] else (j, i)
            other_flag = isinstance(acquire, Acquired) and bool(acquire.any[y])
            self._add_race(hz, line, other, count, who(i), who(j), int(rows.unit[i]), space,
                           (who(y), who(x)) if other_flag else None)

    def _add_race(self, hz: str, line: int, other: int, count: int, first: tuple, second: tuple,
                  unit: int, space: str, other_flag: Optional[tuple] = None) -> None:
        """One race finding per (line, other line, hazard, space); `first` and
        `second`: (linear block, thread in block) of a pair that races;
        `other_flag`: (later, earlier) of them where the later one's block
        (warp) had read a flag, but none the earlier one's published after it."""
        key = (line, other, hz, space)
        f = self.races.get(key)
        if f is not None:
            f.extra["count"] += count
            return
        ln, file, label = self._where(line)
        oln, _, olabel = self._where(other)
        t, ot = self._thread(first[1]), self._thread(second[1])
        b, ob = self._block(first[0]), self._block(second[0])
        addr = unit * self.unit[space]
        # what orders such a pair (a fence alone orders nothing: PTX memory model)
        between, fix = (
            ("different blocks", "blocks are ordered only by a __threadfence() then an atomic or "
                                 "volatile flag store that the other block reads before its access "
                                 "(a flag a third block published orders nothing of this one), "
                                 "or by separate launches") if b != ob else
            ("one barrier interval", "add a __syncthreads() between them" + (
                ", or a __threadfence_block() then a volatile or atomic flag store that the "
                "other warp reads before its access (a flag a third warp published orders "
                "nothing of this one)" if space == "shared" else ""))
            if first[1] // abi.WARP != second[1] // abi.WARP else
            ("one warp with no __syncwarp between them (independent thread scheduling)",
             "add a __syncwarp() between them"))
        if other_flag is not None:
            (rb, rt), (wb, wt) = other_flag

            def agent(blk: int, t: int) -> str:     # who message passing is judged for
                return (f"block {self._block(blk)}" if space == "global"
                        else f"warp {t // abi.WARP} of block {self._block(blk)}")
            if agent(rb, rt) != agent(wb, wt):
                fix += (f"; here {agent(rb, rt)} read a flag before its access, but none that "
                        f"{agent(wb, wt)} published after its access and a fence")
        extra = {"hazard": hz, "count": count, "other_block": ob, "file": file}
        msg = (f"{hz} hazard on {space} memory at {addr:#x}{self._named(space, addr, extra)}: "
               f"{label} (thread {t} of block {b}) "
               f"and {olabel} (thread {ot} of block {ob}) are not ordered ({between}); {fix}")
        self.races[key] = Finding(kind="race", message=msg, kernel=self.meta.name, line=ln,
                                  block=b, thread=t, space=space, address=addr, other_line=oln,
                                  other_thread=ot, extra=extra)

    def _add_uninit(self, bad: np.ndarray, rows: Rows, space: str) -> None:
        """Add the uninitialised reads at rows `bad` (in emulation order)."""
        if not len(bad):
            return
        lines, first, counts = np.unique(rows.line[bad], return_index=True, return_counts=True)
        for line, i, count in zip(lines.tolist(), bad[first].tolist(), counts.tolist()):
            self._add_uninit_line(line, space, count, int(rows.block[i]),
                                  int(rows.warp[i]) * abi.WARP + int(rows.lane[i]), int(rows.unit[i]))

    def _add_uninit_line(self, line: int, space: str, count: int, block: int, in_block: int,
                         unit: int) -> None:
        """One finding per (line, space); the first read seen stands for all `count`."""
        key = (line, space)
        f = self.uninit.get(key)
        if f is not None:
            f.extra["count"] += count
            return
        ln, file, label = self._where(line)
        addr = unit * self.unit[space]
        what = {"shared": "shared memory", "local": "a local variable or array",
                "global": "a fresh global allocation (gpuemu.empty)"}[space]
        extra = {"count": count, "file": file}
        named = self._named(space, addr, extra)
        self.uninit[key] = Finding(
            kind="uninitialized_read", kernel=self.meta.name, line=ln,
            block=self._block(block), thread=self._thread(in_block), space=space,
            address=addr,
            message=f"{label} reads {what} at {space} address {addr:#x}{named} that nothing "
                    f"wrote before (the emulator gives 0; a GPU gives whatever was there)",
            extra=extra)

    def _sync_records(self, rec: np.ndarray, seq: np.ndarray) -> None:
        instr = rec["instr"]
        fence = self.is_fence[instr]
        if fence.any():
            ep = rec["epoch"][fence]
            self.fences.append((rec["block"][fence], seq[fence], rec["warp"][fence], rec["mask"][fence],
                                ep & 0xFFFFFFFF, ep >> 32))
        any_fence = self.is_any_fence[instr]
        if self.shared_mp and any_fence.any():
            self.warp_fences.append((rec["block"][any_fence], rec["warp"][any_fence], seq[any_fence]))
        sw = self.is_syncwarp[instr]
        if self.syncs is not None and sw.any():
            n = np.clip(self.tpb - rec["warp"][sw].astype(np.int64) * abi.WARP, 0, abi.WARP)
            self.syncs.add(rec["block"][sw], rec["warp"][sw], rec["epoch"][sw] >> 32, rec["mask"][sw],
                           np.ascontiguousarray(rec["addr"][sw]).view(np.uint32)[:, 1::2],
                           (np.int64(1) << n) - 1)
        if "synccheck" not in self.tools:
            return
        sel = np.flatnonzero(~any_fence)     # (synccheck judges no fence)
        if not len(sel):
            return
        rec = rec[sel]
        # lanes beyond the block's last thread do not exist
        n = np.clip(self.tpb - rec["warp"].astype(np.int64) * abi.WARP, 0, abi.WARP)
        existing = (np.int64(1) << n) - 1
        # the common case, a whole warp naming the whole warp: nothing to report
        full = 0xFFFFFFFF
        mask_args = np.ascontiguousarray(rec["addr"]).view(np.uint32)[:, 1::2]   # bits 32-63 (x86)
        whole = (rec["mask"] == full) & (existing == full) & (mask_args == full).all(axis=1)
        if whole.all():
            return
        rec, existing = rec[~whole], existing[~whole]
        instr = rec["instr"]
        r, lane, missing, bad_src = synccheck.lane_problems(rec["mask"], rec["addr"], existing,
                                                            self.is_shuffle[instr])
        for k in range(len(r)):
            i = int(r[k])
            line = int(self.tables.line[instr[i]])
            op = str(self.sync_op[instr[i]])
            kind = "invalid_shuffle" if op in synccheck.SHUFFLES else "barrier_divergence"
            key = (line, kind)
            if key in self.warp_sync:
                self.warp_sync[key].extra["count"] += 1
                continue
            ln, file, label = self._where(line)
            w = int(rec["warp"][i])
            t = thread_of(w * abi.WARP + int(lane[k]), self.shape.block)
            name = "__syncwarp" if op == "syncwarp" else f"__{op}_sync"
            why = synccheck.why(int(lane[k]), int(missing[k]), int(rec["addr"][i][int(lane[k])]) >> 32,
                                int(rec["mask"][i]), int(bad_src[k]))
            self.warp_sync[key] = Finding(
                kind=kind, kernel=self.meta.name, line=ln, block=self._block(int(rec["block"][i])),
                thread=t, message=f"{name}() at {label} {why}",
                extra={"count": 1, "warp": w, "active_mask": int(rec["mask"][i]),
                       "missing_lanes": int(missing[k]), "source_lane": int(bad_src[k]),
                       "file": file})
