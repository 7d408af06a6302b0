"""MemorySystem: wires the memory units from a preset and charges every
warp-level request the machine records (gpuemu/memory/trace.py).

    ms = MemorySystem(preset, l1_enabled=True, bank_mode=None, seed=None)
    res = ms.charge(batch, instrs, stats)   # many times per launch, in issue order
    ms.finish(stats, issue_cycles_per_sm=None)

The builder (`__init__`) takes every rule from `preset.mem`; each unit is one
small module (bank_arbiter, coalescer, cache, constant_cache), so a
researcher swaps a rule by editing one file.

Spaces:
- shared: bank_arbiter -> shared_{load,store}_{requests,wavefronts},
  shared_bank_conflicts (wavefronts beyond the ideal, loads + stores, as
  Nsight Compute sums them), shared_conflict_ways_N (requests whose conflict
  degree is N >= 2), shared_atomic_requests (atomics are not counted in the
  load/store wavefronts, as on the H100: conformance smem_atomic_hist).
- global: coalescer -> global_{load,store}_{requests,sectors,transactions},
  global_atomic_requests, global_reduction_requests; loads through L1 (per
  SM, when the preset caches global loads and l1_enabled) then L2; stores
  write through to L2 without allocating in L1 (they leave L1 as it is:
  Fermi's invalidate-on-store is not modelled); atomics and reductions are
  performed at L2; l1_hits/l1_misses and
  l2_hits/l2_misses count 32-byte sectors of reads; l2_read_sectors,
  l2_write_sectors, dram_read_sectors.
- local: offsets interleaved per 4-byte word across the warp (coalescer.
  interleave_local), then as global through L1; local stores allocate in
  L1 and stay there (local data is private, L1 is write-back for it; dirty
  evictions are not modelled) -> local_{load,store}_{requests,sectors}.
- constant: constant_requests, constant_wavefronts (distinct addresses),
  constant_cache_hits/misses.
- param: not charged (kernel parameters live in the constant bank and are
  not counted by the H100 counters we compare with).

Caches are exact set-associative LRU, looked up in issue order within and
across batches (splitting a trace into batches changes no counter).

Native passes. Where their rules apply, a batch is charged by native
passes that add each request into a small table of sums per (instruction,
space) (request_table.py turns it into the counters): the bank arbiter
(native_banks.shared_pass), the coalescer (native_coalescer, the 'sectors'
rule), the caches in issue order (native_cache_walk) and the cycles per SM,
warp and line (native_cycle_sums). The numpy path below is the reference
they are tested against (`MemorySystem.native = False`;
tests/test_request_table.py: every counter, per line, the kept requests,
cycles and cache state, equal on random traces and the gallery's kernels);
it also serves what they do not (cc1.x/cc2.x/cc3.x coalescing and bank
rules, Kepler's separate read-only cache, host memory).

Cycles. `charge` returns a ChargeResult with, per request, `cycles` (the
throughput cost charged to the issuing warp: wavefronts x
cycles_per_shared_wavefront; sectors x cycles per L1/L2/DRAM sector by the
level that served them; distinct constant addresses x
cycles_per_constant_wavefront; atomics add same-address serialisation) and
`latency` (when the value is ready, for timing mode: the level's latency
plus one cycle per extra wavefront). Cycles accumulate per SM
(`sm_cycles`) and per warp (`warp_cycles`, keyed (block, warp)), and per
line as the counter `memory_cycles`. `finish` sets stats["cycles"] =
max over SMs of (issue cycles the machine passes + memory cycles): the
busiest SM's sum, the definition of functional-mode cycles.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from gpuemu.arch import get_preset
from gpuemu.jit import packed_call
from gpuemu.jit.engine import address
from gpuemu.memory import (bank_arbiter, coalescer, constant_cache, launch_sums, native_banks, native_batch,
                           native_cache_walk, native_coalescer, native_cycle_sums, request_table,
                           warp_bank_counts)
from gpuemu.memory.cache import SectoredCache
from gpuemu.memory.trace import SPACE_CODES, AccessBatch
from gpuemu.memory.worst_requests import WorstRequests
from gpuemu.stats import Stats
from gpuemu.host.buffers import host_memory_in_use, kind_of_addresses, touch_managed
from gpuemu.host.pcie import cycles_per_pcie_sector, link_for

_OPS = {"ld": 0, "st": 1, "atom": 2, "red": 3}
SHARED, GLOBAL, LOCAL, CONST = (SPACE_CODES[k] for k in ("shared", "global", "local", "constant"))
SECTOR = 32
_SIZES = 1 << 20      # access sizes are below this (group keys: space * _SIZES + size)
_WORST_SPACES = {SHARED: "shared", GLOBAL: "global"}    # the spaces whose costliest requests are kept


_TABLES: dict = {}      # id(instrs) -> (instrs, tables): a kernel's are built once


def _instr_tables(instrs) -> tuple:
    """Per MemInstr id: op code, size, line, read-only, spill, texture arrays."""
    got = _TABLES.get(id(instrs))
    if got is not None and got[0] is instrs and len(got[1][0]) == len(instrs):
        return got[1]
    n = max((i.id for i in instrs), default=-1) + 1
    op = np.zeros(n, dtype=np.int8)
    size = np.full(n, 4, dtype=np.int64)
    line = np.zeros(n, dtype=np.int64)
    ro = np.zeros(n, dtype=bool)
    spill = np.zeros(n, dtype=bool)
    tex = np.zeros(n, dtype=bool)
    for i in instrs:
        ro[i.id] = getattr(i, "readonly", False)
        spill[i.id] = getattr(i, "spill", False)
        tex[i.id] = getattr(i, "texture", False)
        op[i.id] = _OPS.get(i.op, 2 if i.op.startswith("atom") else 0)
        size[i.id] = i.size
        line[i.id] = i.line
    tables = (op, size, line, ro, spill, tex)
    for a in tables:
        a.setflags(write=False)
    if len(_TABLES) >= 256:
        _TABLES.clear()
    _TABLES[id(instrs)] = (instrs, tables)
    return tables


_RULE_TABLES: dict = {}  # (id(instrs), memory rules, L1 use) -> (instrs, tables): a launch's are
                        # those of the last launch of its kernel with the same rules


def _rule_tables(ms: "MemorySystem", instrs) -> tuple:
    """Per MemInstr id, under `ms`'s rules: whether its shared requests go
    native (native_banks.applies), and how its global and local requests
    meet the caches (MemorySystem._row_kinds), read-only; and the counters
    of its request tables (request_table.CounterPlan). Built once per
    kernel and rules (a preset's own memory config; a launch with a bank
    mode builds its own)."""
    key = (id(instrs), ms.l1_global_loads, ms.l1_present, ms.readonly_path)
    cached = ms.mem is ms.preset.mem
    got = _RULE_TABLES.get(key) if cached else None
    if got is not None and got[0] is instrs and got[1] is ms.mem:
        return got[2]
    tables = (np.array([native_banks.applies(ms.mem, int(s)) for s in ms._size], dtype=bool),
              ms._row_kinds())
    for a in tables:
        a.setflags(write=False)
    ro_on = ms.readonly_path != "none" and bool(ms._ro.any())
    tables += (request_table.CounterPlan(ms._by_name, (SHARED, GLOBAL, LOCAL), ro_on, ms.l1_present, tables[1],
                                         ms.readonly_path),)
    if cached:
        if len(_RULE_TABLES) >= 256:
            _RULE_TABLES.clear()
        _RULE_TABLES[key] = (instrs, ms.mem, tables)
    return tables


def _mapped_sectors(sectors: np.ndarray) -> np.ndarray:
    """Which 32-byte sectors (address // 32) lie in mapped host memory."""
    return kind_of_addresses(sectors * SECTOR) == 1


def _per_line(lines: tuple, values: np.ndarray) -> tuple:
    """(distinct lines, the sum of `values` of each) from np.unique's (lines,
    index of each request's line): Stats.add_lines gets a few sums, not one
    entry per request (per-batch sums are far below 2^53: exact in float64)."""
    keys, of = lines
    return keys, np.bincount(of, weights=values, minlength=keys.size).astype(np.int64)


@dataclass
class ChargeResult:
    cycles: np.ndarray     # int64[N] throughput cycles charged per request
    latency: np.ndarray    # int64[N] cycles until the request's data is ready


@dataclass
class GlobalPlan:
    """A batch's global and local requests as the caches will see them
    (MemorySystem._prepare_global): nothing here depends on cache state."""
    sel: np.ndarray          # the requests (indices into the batch)
    is_load: np.ndarray      # bool[N]: a load among them
    is_ro: np.ndarray        # bool[N]: a load through the read-only path
    loads: np.ndarray        # indices of the loads
    load_lines: tuple        # (their distinct lines, each load's index among them)
    l2: tuple | None         # MemorySystem._l2_candidates: what may reach L2
    ro_entries: tuple | None   # (request per sector, _l1_entries) of the separate read-only cache
    l1_entries: tuple | None   # (request per sector, is a load, _l1_entries) of L1
    ro_req: np.ndarray       # read-only loads
    ro_sectors: np.ndarray | None  # int64[N]: sectors per read-only load
    written: np.ndarray      # int64[N]: sectors written at L2
    in_l1: np.ndarray        # int64[N]: local-store sectors kept in L1
    written_host: np.ndarray | None = None   # int64[N]: of `written`, those in mapped host memory


@dataclass
class PreparedBatch:
    """A batch with what no earlier batch changes worked out (MemorySystem.prepare)."""
    batch: AccessBatch
    n: int
    space: np.ndarray
    addr: np.ndarray
    mask: np.ndarray
    cycles: np.ndarray     # so far: shared wavefronts, atomics' serialisation
    latency: np.ndarray
    stats: Stats           # the batch's order-free counters
    worst: WorstRequests   # its costliest requests per line
    counts: np.ndarray | None = None       # requests per space code
    instr: np.ndarray | None = None        # per request, for the numpy path (MemorySystem._gather):
    op: np.ndarray | None = None           # MemInstr id, op code, bytes per lane, line, SM
    size: np.ndarray | None = None
    line: np.ndarray | None = None
    sm: np.ndarray | None = None
    global_entries: GlobalPlan | None = None    # MemorySystem._prepare_global's result
    host_global: np.ndarray | None = None  # host memory in use: global requests, charged in order
    warp_keys: np.ndarray | None = None    # the batch's warps (block * 4096 + warp), ascending
    warp_of: np.ndarray | None = None      # per request: its warp's index in warp_keys
    lines: tuple | None = None             # (distinct lines, each request's index among them)
    arrays: tuple | None = None            # the batch as the native passes read it (request_table)
    table: np.ndarray | None = None        # the native passes' sums per row (request_table)
    native_global: tuple | None = None     # (sectors, starts): native_coalescer's


def issue_divisor(schedulers: int) -> int:
    """The divisor of an SM's issue cycles: its warp schedulers, at least
    one (a preset or caller giving 0 counts as one scheduler, in the numpy
    and the native path alike, rather than dividing by zero)."""
    return max(int(schedulers), 1)


class MemorySystem:
    # the native passes (native_banks.shared_pass, ...) where they apply; False:
    # the numpy path everywhere (the tests compare the two)
    native = True
    # with `native`: shared loads and stores counted by the warp functions
    # where the launch allows it (warp_bank_counts.py), not traced
    count_shared_in_warps = True

    def __init__(self, preset, l1_enabled: bool = True, bank_mode: int | None = None,
                 seed: int | None = None, cache_global_loads: bool | None = None) -> None:
        """preset: Preset or name. l1_enabled=False bypasses L1 for global loads
        (nvcc -Xptxas -dlcm=cg); cache_global_loads=True forces them into L1
        (-dlcm=ca) on presets whose default is off. bank_mode: 4 or 8 on cc3.x
        (cudaDeviceSetSharedMemConfig). seed: the launch's seed, kept for
        seeded-random choices (the machine itself picks which lane's
        same-address store lands)."""
        self.preset = get_preset(preset)
        self.mem = self.preset.mem.with_bank_mode(bank_mode)
        self.seed = seed
        m = self.mem
        caches_loads = m.l1_caches_global_loads if cache_global_loads is None else cache_global_loads
        self.l1_present = m.l1_present and m.l1_bytes > 0
        self.l1_global_loads = bool(self.l1_present and l1_enabled and caches_loads)
        # one L1 per SM, kept as the partitions of one cache object
        self.l1 = (SectoredCache(m.l1_bytes, m.l1_line_bytes, m.l1_sector_bytes, m.l1_assoc,
                                 "L1", partitions=self.preset.num_sms)
                   if self.l1_present else None)
        self.l2 = (SectoredCache(m.l2_bytes, m.l2_line_bytes, SECTOR, m.l2_assoc, "L2")
                   if m.l2_bytes > 0 else None)
        self.const = constant_cache.ConstantCache(m)
        # the read-only data path (__ldg, const __restrict__): through L1 ('l1'),
        # a cache of its own ('separate', Kepler) or plain global loads ('none')
        self.readonly_path = m.readonly_path if m.readonly_path != "l1" or self.l1_present else "none"
        self.ro_cache = (SectoredCache(m.readonly_cache_bytes, m.readonly_line_bytes,
                                       m.readonly_sector_bytes, m.readonly_cache_assoc, "read-only",
                                       partitions=self.preset.num_sms)
                         if self.readonly_path == "separate" else None)
        self._caches = tuple(c for c in (self.l1, self.l2, self.ro_cache) if c is not None)
        self.sm_cycles = np.zeros(self.preset.num_sms, dtype=np.int64)
        # L1's and L2's clocks as the native walks count them (every NativeBatch serving this)
        self.walk_clock = np.zeros(2, dtype=np.int64)
        self._warp_parts: list = []     # per batch: (block * 4096 + warp keys, their cycles), or int64[2, N] of them
        self.tables_for = None         # the instructions (a kernel's MemInstr list) `_tables` built for
        self.sums = None               # the folded native sums not settled yet (launch_sums.py)
        self._reset_clock = None       # reset's native half ran (reset_native_done): the clock it zeroed
        self._shared_native = None     # per MemInstr id: its shared requests go native
        self.worst = WorstRequests()      # per line, the costliest request (for reports)

    def reset(self) -> None:
        """The state of a new MemorySystem of the same rules: cold caches, no
        memory cycles, no kept requests (a renewed launch reuses its memory
        system this way: gpuemu/machine/executor.py LaunchRun.renew). What
        depends only on the kernel and the rules (`_tables`) is kept.
        In two phases where a kept run ends its launch natively (native_batch.
        NativeBatch.charge_last with reset): its native half (the caches'
        states, the SMs' cycles, the clocks) ran then (`reset_native_done`),
        and this call does only the Python half, unless a batch was charged
        in between (`charging`: then it resets all)."""
        clock = self._reset_clock
        if clock is None:
            self._reset_native()
            for c in self._caches:
                c.reset_fields()
        else:                              # its native half ran at the end of the last launch
            self._reset_clock = None
            for c in self._caches:
                counted = c._counted_in    # (where it is the zeroed clock, its counts are read
                if counted is None or counted[0] is not clock:     # from there and the state)
                    c.reset_fields()
        if self.const._per_sm:
            self.const = constant_cache.ConstantCache(self.mem)
        if self._warp_parts:               # (no new empty list every launch)
            self._warp_parts = []
        self.worst = WorstRequests.empty()
        sums = self.sums
        if sums is not None and sums.batches:
            sums.clear()

    def _reset_native(self) -> None:
        """The native half of `reset`: the resets of the caches that hold a
        state (a cache never looked up holds none) and the cycles' zeroing,
        in one native call."""
        caches = tuple(c for c in self._caches if c._state is not None)
        got = self.__dict__.get("_reset_chain")
        if got is None or got[0] != caches:
            got = self._reset_chain = (caches, packed_call.Chain(self.reset_steps(caches)))
        for c in caches:
            c.reset_call()                 # (its rows' address set)
        got[1]()

    def reset_steps(self, caches: tuple) -> list:
        """The native half of `reset` as the steps of a packed_call.Chain:
        the resets of `caches` (theirs, in that order), then the SMs'
        cycles zeroed (this one's `_reset_native`; native_batch's chain of a
        launch's last batch ends with them too)."""
        return [c.reset_call() for c in caches] + [native_batch.zero_call(address(self.sm_cycles), self.sm_cycles.size)]

    def charging(self) -> None:
        """A batch is charged: whatever reset's native half did before it is
        undone, so the next `reset` does all (the two-phase rule of `reset`)."""
        self._reset_clock = None

    def add_warp_runs(self, parts: np.ndarray) -> None:
        """(keys, sums) of a batch's warp runs, counted natively, folded into
        warp_cycles when read."""
        self._warp_parts.append(parts)

    def reset_native_done(self, clock: np.ndarray) -> None:
        """The native half of `reset` ran, at the end of a launch whose run is
        renewed next (native_batch.NativeBatch.charge_last): the caches'
        states are cold, the SMs' cycles zero, and `clock` (where the caches
        that a native walk counted last read their clocks, SectoredCache.
        counted_in) zero; the next `reset` does the rest, unless a batch is
        charged before it (then it resets all). The warps' cycles go now,
        with the SMs'."""
        self._reset_clock = clock
        if self._warp_parts:
            self._warp_parts = []

    def state_bytes(self) -> int:
        """Bytes the caches' state holds (kept between launches by `reset`)."""
        n = 0
        for cache in self._caches:
            st = cache._state
            if st is not None:
                n += st.nbytes
        return n

    def release_states(self) -> None:
        """Cold caches whose states hold only their sets' row numbers (the
        planes back to record_pool: SectoredCache.release_state), so a kept
        memory system holds little between launches (launch_plan.keep_memory_system)."""
        for cache in self._caches:
            cache.release_state()

    # ------------------------------------------------------------ helpers
    def _tables(self, instrs):
        if self.tables_for is not instrs or len(self._op) != len(instrs):
            (self._op, self._size, self._line, self._ro, self._spill,
             self._tex) = _instr_tables(instrs)
            self._by_name = dict(op=self._op, size=self._size, line=self._line, ro=self._ro,
                                 spill=self._spill, tex=self._tex)
            self._shared_native, self._row_kind, self._counter_plan = _rule_tables(self, instrs)
            may = [i for i in instrs if i.space not in ("global", "constant", "local", "param")]
            self._shared_all_native = all(self._shared_native[i.id] for i in may)
            self._shared_in_warps = warp_bank_counts.applies(self._shared_native, instrs)
            self._skip = (self._tex & ~self._ro).astype(np.int8)   # texture headers
            ib = self.mem.local_interleave_bytes
            self._max_words = max([max(1, i.size // ib) for i in instrs
                                   if i.space in ("local", "generic")], default=1)
            self.tables_for = instrs        # last: a thread that sees it sees every table
        return self._op, self._size, self._line

    def _gather(self, p: "PreparedBatch") -> "PreparedBatch":
        """Fill in the per-request arrays the numpy path reads (the native
        passes read the batch and the kernel's tables themselves)."""
        if p.instr is None:
            instr = np.asarray(p.batch.instr, dtype=np.int64)
            p.instr, p.op, p.size, p.line = instr, self._op[instr], self._size[instr], self._line[instr]
            p.sm = np.asarray(p.batch.sm, dtype=np.int64)
        return p

    def _arrays(self, p: "PreparedBatch") -> tuple:
        """The batch as the native passes read it (request_table.batch_arrays)."""
        if p.arrays is None:
            p.arrays = request_table.batch_arrays(p.batch, self._op, self._size, self._skip)
        return p.arrays

    def _row_kinds(self) -> np.ndarray:
        """Per request_table row: how a global or local request of that
        instruction meets the caches (native_cache_walk's kinds 0-3, as
        _prepare_global decides them; 4: the separate read-only cache)."""
        kinds = np.full(len(self._op) * request_table.NSP, -1, dtype=np.int8)
        ro_on = self.readonly_path != "none" and bool(self._ro.any())
        for i, code in enumerate(self._op.tolist()):
            for sp in (GLOBAL, LOCAL):
                ro_part = sp == GLOBAL and ro_on and code == 0 and bool(self._ro[i])
                via_l1 = code == 0 and (self.l1_global_loads if sp == GLOBAL else self.l1_present)
                if ro_part:
                    via_l1 = self.readonly_path == "l1"
                write_back = sp == LOCAL and code == 1 and self.l1_present
                kind = 0 if via_l1 else (1 if code == 0 else (3 if write_back else 2))
                if ro_part and self.readonly_path == "separate":
                    kind = 4
                kinds[i * request_table.NSP + sp] = kind
        return kinds

    def _global_native(self) -> bool:
        """Whether native_coalescer and native_cache_walk serve global and local requests."""
        return (self.native and native_coalescer.applies(self.mem) and native_cache_walk.applies(self.mem, self.l2)
                and self.ro_cache is None)

    # ------------------------------------------------------------ caches
    def _l1_entries(self, req, sec, sm_of_req, cache=None, line_bytes: int = 0,
                    sector_bytes: int = 0):
        """Sectors (32-byte ids, req-ordered) as the accesses they make of a
        per-SM cache (L1, or Kepler's read-only cache given with its
        geometry): one access per (request, line) with its sector bits. No
        cache state is read: block workers prepare these in parallel."""
        m = self.mem
        line_bytes = line_bytes or m.l1_line_bytes
        sector_bytes = sector_bytes or m.l1_sector_bytes
        k = sector_bytes // SECTOR
        l1sec = sec // k
        # one L1 entry per (request, L1 sector): sectors are ascending per request
        new = np.ones(sec.size, dtype=bool)
        new[1:] = (l1sec[1:] != l1sec[:-1]) | (req[1:] != req[:-1])
        eid = np.cumsum(new) - 1
        ereq, esec = req[new], l1sec[new]
        spl = line_bytes // sector_bytes
        eline, ebit = esec // spl, np.int64(1) << (esec % spl)
        # merge entries of one (request, line) into one access with several bits
        newl = np.ones(eline.size, dtype=bool)
        newl[1:] = (eline[1:] != eline[:-1]) | (ereq[1:] != ereq[:-1])
        lid = np.cumsum(newl) - 1
        lbits = np.bincount(lid, weights=ebit).astype(np.int64) if lid.size else np.zeros(0, np.int64)
        lline, lreq = eline[newl], ereq[newl]
        keys, sets = (cache or self.l1).keys_and_sets(lline, sm_of_req[lreq] % self.preset.num_sms)
        return k, eid, ereq, esec, ebit, lid, keys, sets, lbits

    def _through_l1(self, entries, allocate: bool, cache=None):
        """Look up prepared accesses (`_l1_entries`) in the SMs' L1s (or in
        `cache`), in order. Returns (hit per sector bool[M], hit per L1 sector
        entry: a missed one sends its 32-byte sectors to L2)."""
        k, eid, ereq, esec, ebit, lid, keys, sets, lbits = entries
        hitbits = (cache or self.l1).access_keys(keys, sets, lbits, allocate)
        ehit = ((hitbits[lid] & ebit) != 0)
        return ehit[eid], ehit

    def _l2_candidates(self, req, sec, kind, is_load, ro_entries, l1_entries):
        """Every 32-byte sector a batch may send to L2, in the order L2 sees
        them (by request; per request as the cache would be asked): sectors
        sent straight there, and each L1 (or read-only cache) sector's
        sectors, sent only if it misses (only loads' misses read L2). Adjacent
        sectors of one request in one line form one access (group). Returns
        (request, source: -1 always sent, else the L1 entry whose miss sends
        it; which cache: 0 straight, 1 read-only, 2 L1), group of each, the
        groups' cache keys and sets, sector bit of each, the sector) or None."""
        parts = [(req[(kind == 1) | (kind == 2)], sec[(kind == 1) | (kind == 2)], None, 0)]
        for code, ent in ((1, ro_entries), (2, l1_entries)):
            if ent is None:
                continue
            k, _, ereq, esec = ent[-1][:4]
            creq = np.repeat(ereq, k)
            csec = np.repeat(esec * k, k) + np.tile(np.arange(k), esec.size)
            src = np.repeat(np.arange(esec.size), k)
            keep = is_load[creq] if code == 2 else slice(None)   # local-store misses stay out
            parts.append((creq[keep], csec[keep], src[keep], code))
        creq = np.concatenate([q[0] for q in parts])
        if creq.size == 0:
            return None
        csec = np.concatenate([q[1] for q in parts])
        src = np.concatenate([np.full(q[0].size, -1) if q[2] is None else q[2] for q in parts])
        which = np.concatenate([np.full(q[0].size, q[3], dtype=np.int8) for q in parts])
        order = np.argsort(creq, kind="stable")
        creq, csec, src, which = creq[order], csec[order], src[order], which[order]
        if self.l2 is None:                # no L2: they are counted, then go to DRAM
            return creq, src, which, None, None, None, None, csec
        lines, bits = self.l2.split(csec)
        new = np.ones(lines.size, dtype=bool)
        new[1:] = (lines[1:] != lines[:-1]) | (creq[1:] != creq[:-1])
        gid = np.cumsum(new) - 1
        keys, sets = self.l2.keys_and_sets(lines[new])
        return creq, src, which, gid, keys, sets, bits, csec

    # ------------------------------------------------------------ charging
    def charge(self, batch: AccessBatch, instrs, stats) -> ChargeResult:
        """Charge a batch (the next requests in issue order) into `stats`
        (its counters settled: `stats` and `worst` have them at once)."""
        res = self.apply(self.prepare(batch, instrs), stats)
        self.settle(stats)
        return res

    def prepare(self, batch: AccessBatch, instrs) -> "PreparedBatch":
        """The part of `charge` that no earlier batch changes (bank conflicts,
        coalescing, request and sector counts), into the result's own Stats:
        block workers prepare their batches in parallel, `apply` then
        charges them in issue order. Reads only the rules and tables (call
        `_tables(instrs)` once before preparing on several threads)."""
        n = len(batch)
        op_t = self._tables(instrs)[0]
        space = np.asarray(batch.space)
        p = PreparedBatch(batch=batch, n=n, space=space, addr=np.asarray(batch.addr, dtype=np.int64),
                          mask=np.asarray(batch.mask, dtype=np.uint32),
                          cycles=np.zeros(n, dtype=np.int64), latency=np.zeros(n, dtype=np.int64),
                          stats=Stats(), worst=WorstRequests(),
                          arrays=getattr(batch, "arrays", None))   # trace_columns.py made them
        if n == 0:
            return self._gather(p)
        if not self.native:      # the numpy form of native_cycle_sums (apply)
            self._gather(p)
            key = np.asarray(batch.block, dtype=np.int64) * 4096 + np.asarray(batch.warp, dtype=np.int64)
            p.warp_keys, p.warp_of = np.unique(key, return_inverse=True)
            p.lines = np.unique(p.line, return_inverse=True)
        p.table = request_table.new_table(len(op_t))
        p.counts = np.bincount(space, minlength=request_table.NSP)
        if p.counts[SHARED]:
            if self.native and (self._shared_all_native
                                or self._shared_native[np.asarray(batch.instr)[space == SHARED]].all()):
                native_banks.shared_pass(self._arrays(p), SHARED, self.mem, p.cycles, p.latency, p.table)
            else:
                self._gather(p)
                self._charge_shared(np.flatnonzero(space == SHARED), p.op, p.size, p.line, p.addr, p.mask,
                                    p.stats, p.cycles, p.latency, p.worst)
        if p.counts[GLOBAL] and host_memory_in_use():
            self._gather(p)
            glob = space == GLOBAL
            glob &= ~self._skip[p.instr].astype(bool)       # texture headers: in the texture unit
            if glob.any():
                p.host_global = glob      # which of them cross PCIe is decided in order
        if p.host_global is None and (p.counts[GLOBAL] or p.counts[LOCAL]):   # else: in order (apply)
            if self._global_native():
                p.native_global = native_coalescer.coalesce_pass(
                    self._arrays(p), (GLOBAL, LOCAL), self.mem, self._max_words, p.cycles, p.latency,
                    p.table, int(p.counts[GLOBAL] + p.counts[LOCAL]))
            else:
                self._gather(p)
                glob = (space == GLOBAL) & ~self._skip[p.instr].astype(bool)
                p.global_entries = self._prepare_global(np.flatnonzero(glob | (space == LOCAL)), p,
                                                        p.stats, p.worst)
        p.stats.flush()                   # summed here, on the preparing thread
        return p

    def apply(self, p: "PreparedBatch", stats) -> ChargeResult:
        """Charge a prepared batch, the next in issue order: its counters, then
        what depends on earlier batches (caches, host memory, cycles). What
        the native passes counted is folded into the launch's sums
        (launch_sums.py), turned into counters by `settle`."""
        self.charging()
        cycles, latency = p.cycles, p.latency
        if p.n == 0:
            return ChargeResult(cycles, latency)
        if p.worst.by_line or p.host_global is not None:
            self.settle(stats)            # the kept requests of earlier batches first (issue order)
        if not p.stats.empty:
            stats.merge(p.stats)
        self.worst.merge(p.worst)
        entries = p.global_entries
        if p.host_global is not None:
            self._gather(p)
            mapped = self._charge_host_memory(np.flatnonzero(p.host_global), p.line, p.addr, p.mask, stats)
            entries = self._prepare_global(np.flatnonzero(p.host_global | (p.space == LOCAL)), p,
                                           stats, self.worst, host=mapped)
        if entries is not None:
            self._apply_global(entries, p, stats)
        if p.native_global is not None:
            sec, start = p.native_global
            native_cache_walk.cache_walk(p.arrays, (GLOBAL, LOCAL), start, sec, self._row_kind, self.mem,
                                         self.preset.num_sms, self.l1, self.l2, cycles, latency, p.table)
        m = self.mem
        if p.counts is None or p.counts[CONST]:
            self._gather(p)
            line, sm = p.line, p.sm
        sel = np.flatnonzero(p.space == CONST) if p.counts is None or p.counts[CONST] else ()
        if len(sel):
            active = bank_arbiter._lane_bits(p.mask[sel])
            wf, rows, caddr = constant_cache.constant_wavefronts_batch(p.addr[sel], active)
            ln = line[sel]
            stats.add_lines("constant_requests", ln, np.ones(sel.size, dtype=np.int64))
            stats.add_lines("constant_wavefronts", ln, wf)
            hits, misses = self.const.access(sm[sel][rows], caddr)
            stats.add("constant_cache_hits", hits)
            stats.add("constant_cache_misses", misses)
            cycles[sel] = wf * m.cycles_per_constant_wavefront
            latency[sel] = m.constant_latency + np.maximum(wf - 1, 0)

        # accumulate per SM, per warp, per line
        if p.warp_keys is None:
            self._warp_parts.append(native_cycle_sums.cycle_sums(self._arrays(p), cycles, self.sm_cycles,
                                                                 p.table))
            self.launch_sums(stats).fold(p.table, p.arrays)
            return ChargeResult(cycles, latency)
        sm = p.sm
        nsm = self.preset.num_sms
        self.sm_cycles += np.bincount(sm % nsm, weights=cycles, minlength=nsm).astype(np.int64)
        self._warp_parts.append((p.warp_keys, np.bincount(p.warp_of, weights=cycles,
                                                          minlength=p.warp_keys.size)))
        stats.add_lines("memory_cycles", *_per_line(p.lines, cycles))
        return ChargeResult(cycles, latency)

    def adopt_sums(self, sums: launch_sums.LaunchSums) -> None:
        """Fold into `sums` (an earlier launch's, settled and clear: a kept
        NativeBatch's fold adds to them already) where there are none yet."""
        if self.sums is None and not sums.batches and sums.rows == request_table.NSP * max(len(self._op), 1):
            self.sums = sums

    def launch_sums(self, stats: Optional[Stats] = None) -> launch_sums.LaunchSums:
        """The sums the batches of this kernel (`_tables`) are folded into
        until `settle`. Sums of another kernel's batches (a direct user of
        prepare and apply) are settled into `stats` first, under that
        kernel's counter plan: two kernels' batches are never summed
        together (without `stats`, ValueError)."""
        sums = self.sums
        if sums is not None:
            kernel = sums.kernel           # (this kernel's, as the last batch left them: as they are)
            if kernel is not None and kernel[0] is self._counter_plan and kernel[1] is self._op and kernel[2] is self._size:
                return sums
        if sums is not None and sums.batches and sums.kernel[0] is not self._counter_plan:
            if stats is None:
                raise ValueError("settle a kernel's sums before charging another's")
            self.settle(stats)
        if sums is None or sums.rows != request_table.NSP * max(len(self._op), 1):
            sums = self.sums = launch_sums.LaunchSums(len(self._op))
        if not sums.batches:
            sums.kernel = (self._counter_plan, self._op, self._size)
        return sums

    def share(self, instrs, sums: Optional[launch_sums.LaunchSums] = None, rows: tuple = ()) -> tuple:
        """Ready to be charged from several threads (block workers prepare
        batches of `instrs` on theirs and apply them in order on any): what
        two threads must not make at once made now, on this one: the
        kernel's tables, the launch's sums (`sums`, an earlier launch's
        settled ones where they fit: the workers' NativeBatches fold into
        them already, so they keep their fold) and the caches' states, with
        room for `rows` (per state, the rows an earlier launch used: taken
        from record_pool now, before the workers take their trace buffers,
        and not grown on the ordered step). Returns the states (L1, L2,
        read-only cache, those present; native_lru.LruState)."""
        self._tables(instrs)
        if sums is not None:
            self.adopt_sums(sums)
        self.launch_sums()
        states = tuple(c.lru_state() for c in self._caches)
        # the largest first: record_pool hands out the smallest free block that holds
        # a request, so a smaller state first could take the block a larger one needs
        for m, st in sorted(zip(rows, states), key=lambda p: -p[0] * p[1].assoc):
            st.reserve(m)
        return states

    def settle(self, stats) -> None:
        """The counters and kept requests of the batches folded since the last
        settle (launch_sums.py) into `stats` and `worst`, as adding each
        batch's would: request_table's counters of the summed rows (under
        their kernel's plan), in the order a batch adds them (shared, global
        and local, caches, cycles). A direct user of prepare and apply calls
        it before reading `stats` (charge, finish and the machine do)."""
        sums = self.sums
        if sums is None or not sums.batches:
            return
        plan, op, size = sums.kernel
        sums.settle(plan, stats, self.worst, op, size, _WORST_SPACES)

    def settle_call(self) -> packed_call.PackedCall:
        """The native pass of `settle` of the sums folded so far (at least
        one batch: launch_sums.LaunchSums.settle_call), for a caller that
        runs it after its last fold (native_batch.NativeBatch.charge_last)
        and hands its result to `settled`."""
        sums = self.sums
        return sums.settle_call(sums.kernel[0], _WORST_SPACES)

    def add_warp_counts(self, counts, instrs, stats) -> None:
        """Charge the shared requests the warps counted themselves
        (warp_bank_counts.WarpBankCounts) into `stats`, the worst requests
        and the SM and warp cycles, as `charge` would have from their trace."""
        self.settle(stats)                # the traced requests' kept requests first
        self.charging()
        if not counts.requests:            # no shared request counted
            return
        op_t, size_t, line_t = self._tables(instrs)
        stats.add_sums(self._counter_plan.counters(counts.row_cycles()))   # shared rows: theirs, cycles
        counts.worst(op_t, size_t, line_t, self.worst)
        self.sm_cycles += counts.sm_cycles
        self._warp_parts.append(counts.warp_sums())

    @property
    def warp_cycles(self) -> dict:
        """Memory cycles per warp so far, keyed (linear block, warp in block)."""
        if not self._warp_parts:
            return {}
        keys = np.concatenate([k for k, _ in self._warp_parts])
        uk, inv = np.unique(keys, return_inverse=True)
        sums = np.bincount(inv, weights=np.concatenate([c for _, c in self._warp_parts]))
        self._warp_parts = [(uk, sums)]
        return {(k // 4096, k % 4096): int(v) for k, v in zip(uk.tolist(), sums.tolist())}

    def _charge_host_memory(self, sel, line, addr, mask, stats) -> bool:
        """Requests `sel` to host memory (gpuemu/host/buffers.py); whether any
        has a lane in mapped (zero-copy) memory. Those are counted as
        zero_copy_requests and go on as global requests (_apply_global sends
        their sectors that miss L1 across PCIe).
        Managed requests fault on the first touch of each migration block
        (page_faults, managed_migrated_bytes) and then go on as device
        accesses."""
        active = bank_arbiter._lane_bits(mask[sel])
        kinds = np.where(active, kind_of_addresses(addr[sel]), 0)
        mapped = (kinds == 1).any(axis=1)
        if mapped.any():
            rq = sel[mapped]
            stats.add_lines("zero_copy_requests", line[rq], np.ones(rq.size, dtype=np.int64))
        managed = (kinds == 2).any(axis=1)         # (its managed lanes, beside any mapped ones)
        if managed.any():
            link = link_for(self.preset)
            rq = sel[managed]
            for r, k in zip(rq.tolist(), np.flatnonzero(managed).tolist()):
                lanes = active[k] & (kinds[k] == 2)
                new = touch_managed(addr[r][lanes], link.migrate_bytes)
                if new.size:
                    stats.add("page_faults", int(new.size), int(line[r]))
                    stats.add("managed_migrated_bytes", int(new.size) * link.migrate_bytes, int(line[r]))
        return bool(mapped.any())

    def _charge_shared(self, sel, op, size, line, addr, mask, stats, cycles, latency, worst):
        m = self.mem
        o, s, ln = op[sel], size[sel], line[sel]
        a, mk = (addr, mask) if sel.size == addr.shape[0] else (addr[sel], mask[sel])
        wf, ideal, ways = bank_arbiter.shared_requests_batch(a, mk, s, m)
        ones = np.ones(sel.size, dtype=np.int64)
        for code, name in ((0, "load"), (1, "store")):
            k = o == code
            if k.any():
                stats.add_lines(f"shared_{name}_requests", ln[k], ones[k])
                stats.add_lines(f"shared_{name}_wavefronts", ln[k], wf[k])
                stats.add_lines(f"shared_{name}_bank_conflicts", ln[k], wf[k] - ideal[k])
        ldst = o <= 1
        worst.note("shared", ln, np.array(list(_OPS))[o], s, wf, mk, a)
        stats.add_lines("shared_bank_conflicts", ln[ldst], (wf - ideal)[ldst])
        for w in np.unique(ways[ldst & (ways >= 2)]).tolist():
            k = ldst & (ways == w)
            stats.add_lines(f"shared_conflict_ways_{w}", ln[k], ones[k])
        cost = wf.copy()
        at = o >= 2
        if at.any():
            stats.add_lines("shared_atomic_requests", ln[at], ones[at])
            mult = bank_arbiter.same_address_multiplicity(a[at], mk[at])
            cost[at] = np.maximum(wf[at], mult) + np.maximum(mult - 1, 0) * (m.cycles_per_atomic_serialization - 1)
        cycles[sel] = cost * m.cycles_per_shared_wavefront
        latency[sel] = m.shared_latency + np.maximum(cost - 1, 0) * m.cycles_per_shared_wavefront

    def _prepare_global(self, sel, p: "PreparedBatch", stats, worst, host: bool = False):
        """Global and local requests `sel` of a batch, the part no earlier batch
        changes: counts by group (into `stats`, `worst`), atomics' same-address
        cycles, and the sectors each request asks of L1 or L2: (sel, req,
        sector, kind) in issue order, or None. host: some request has a lane
        in mapped host memory (the plan counts its stores' sectors there)."""
        if sel.size == 0:
            return None
        m = self.mem
        space, op, size, line, addr, mask = p.space, p.op, p.size, p.line, p.addr, p.mask
        batch, cycles, latency = p.batch, p.cycles, p.latency
        instr_of = p.instr
        ent_req, ent_sec, ent_kind = [], [], []
        # groups of one space and access size: global first, then local, sizes ascending
        gkey = space[sel].astype(np.int64) * _SIZES + size[sel]
        gvals = np.unique(gkey).tolist()
        groups = [("global" if g // _SIZES == GLOBAL else "local",
                   sel if len(gvals) == 1 else sel[gkey == g], g % _SIZES) for g in gvals]
        for prefix, sub, s in groups:
            o, ln = op[sub], line[sub]
            mk = mask[sub]
            active = bank_arbiter._lane_bits(mk)
            a = a_in = addr[sub]
            unit = s
            if prefix == "local":
                wid = (np.asarray(batch.block, dtype=np.int64)[sub] * 64
                       + np.asarray(batch.warp, dtype=np.int64)[sub])
                a, active, unit = coalescer.interleave_local(a, active, s, wid, m)
            if prefix == "global" and self.readonly_path != "none" and self._ro.any():
                ro_here = self._ro[instr_of[sub]] & (o == 0)
            else:
                ro_here = False
            sp_here = self._spill[instr_of[sub]] if prefix == "local" else None
            # the kinds of request present, in the order (ld, ld read-only, st, atom, red)
            kinds = o.astype(np.int64) * 2 + ro_here
            present = np.unique(kinds).tolist()
            for code, name, ro_part in ((0, "load", False), (0, "load", True), (1, "store", False),
                                        (2, "atomic", False), (3, "reduction", False)):
                if code * 2 + ro_part not in present:
                    continue
                k = np.flatnonzero(kinds == code * 2 + ro_part) if len(present) > 1 else np.arange(o.size)
                via_l1 = code == 0 and (self.l1_global_loads if prefix == "global" else self.l1_present)
                if ro_part:     # __ldg / const __restrict__: the read-only data path
                    via_l1 = self.readonly_path == "l1"
                whole = k.size == o.size
                cb = coalescer.global_requests_batch(a if whole else a[k], active if whole else active[k],
                                                     unit, m, l1_cached=via_l1)
                kl = ln[k]
                if prefix == "global":
                    worst.note("global", kl, np.full(k.size, list(_OPS)[code]),
                               np.full(k.size, s), cb.sectors, mk[k], a_in if whole else a_in[k])
                if ro_part:
                    stats.add_lines("readonly_load_requests", kl, np.ones(k.size, dtype=np.int64))
                    stats.add_lines("readonly_load_sectors", kl, cb.sectors)
                    tx = self._tex[instr_of[sub][k]]
                    if tx.any():    # texel fetches (isa/texture_fetch.py), a part of the read-only loads
                        stats.add_lines("texture_requests", kl[tx], np.ones(int(tx.sum()), dtype=np.int64))
                        stats.add_lines("texture_sectors", kl[tx], cb.sectors[tx])
                sp = sp_here[k] if sp_here is not None else None
                if sp is not None and sp.any():    # register spills: local traffic counted also on its own
                    stats.add_lines(f"spill_{name}_requests", kl[sp], np.ones(int(sp.sum()), dtype=np.int64))
                    nbytes = bank_arbiter._lane_bits(mk[k][sp]).sum(axis=1) * s
                    stats.add_lines("spill_bytes", kl[sp], nbytes)
                stats.add_lines(f"{prefix}_{name}_requests", kl, np.ones(k.size, dtype=np.int64))
                stats.add_lines(f"{prefix}_{name}_sectors", kl, cb.sectors)
                if code <= 1:
                    stats.add_lines(f"{prefix}_{name}_transactions", kl, cb.transactions)
                write_back = prefix == "local" and code == 1 and self.l1_present
                if code == 1 and self.l2 is not None and not write_back:
                    stats.add_lines("l2_write_sectors", kl, cb.sectors)
                if code >= 2:
                    mult = bank_arbiter.same_address_multiplicity(a_in[k], mk[k])
                    cycles[sub[k]] += np.maximum(mult - 1, 0) * m.cycles_per_atomic_serialization
                    latency[sub[k]] += np.maximum(mult - 1, 0) * m.cycles_per_atomic_serialization
                # kind 0: load via L1, 1: load to L2, 2: write at L2, 3: local store
                # into L1 (local data is private: L1 is write-back for it; dirty
                # evictions to L2 are not modelled)
                kind = 0 if via_l1 else (1 if code == 0 else (3 if write_back else 2))
                if ro_part and self.readonly_path == "separate":
                    kind = 4    # 4: load via the separate read-only cache (Kepler)
                ent_req.append(sub[k][cb.req])
                ent_sec.append(cb.sector_id)
                ent_kind.append(np.full(cb.req.size, kind, dtype=np.int8))
        if not ent_req:
            return None
        if len(ent_req) == 1:          # one group and kind: already in request order
            req, sec, kind = ent_req[0], ent_sec[0], ent_kind[0]
        else:
            req = np.concatenate(ent_req)
            sec = np.concatenate(ent_sec)
            kind = np.concatenate(ent_kind)
            order = np.argsort(req, kind="stable")
            req, sec, kind = req[order], sec[order], kind[order]
        # what the caches will be asked, worked out before they are
        n_all = p.n
        is_load = np.zeros(n_all, dtype=bool)
        is_load[sel] = op[sel] == 0
        is_ro = np.zeros(n_all, dtype=bool)
        if self.readonly_path != "none":
            is_ro[sel] = self._ro[instr_of[sel]] & (space[sel] == GLOBAL) & (op[sel] == 0)
        ro_entries = None
        if (kind == 4).any():
            r4 = req[kind == 4]
            ro_entries = r4, self._l1_entries(r4, sec[kind == 4], p.sm, self.ro_cache,
                                              m.readonly_line_bytes, m.readonly_sector_bytes)
        l1_entries = None
        l1_sel = (kind == 0) | (kind == 3)
        if l1_sel.any():
            r1 = req[l1_sel]
            l1_entries = r1, kind[l1_sel] == 0, self._l1_entries(r1, sec[l1_sel], p.sm)
        ro_req = sel[is_ro[sel]]
        ro_sectors = (np.bincount(req[np.isin(req, ro_req)], minlength=n_all).astype(np.int64)
                      if ro_req.size else None)
        loads = sel[is_load[sel]]
        return GlobalPlan(sel=sel, is_load=is_load, is_ro=is_ro, loads=loads,
                          load_lines=np.unique(line[loads], return_inverse=True),
                          l2=self._l2_candidates(req, sec, kind, is_load, ro_entries, l1_entries),
                          ro_entries=ro_entries,
                          l1_entries=l1_entries, ro_req=ro_req, ro_sectors=ro_sectors,
                          written=np.bincount(req[kind == 2], minlength=n_all).astype(np.int64),
                          in_l1=np.bincount(req[kind == 3], minlength=n_all).astype(np.int64),
                          written_host=np.bincount(req[(kind == 2) & _mapped_sectors(sec)], minlength=n_all)
                          .astype(np.int64) if host else None)

    def _apply_global(self, g: "GlobalPlan", p: "PreparedBatch", stats) -> None:
        """The caches, in issue order, for prepared global and local requests:
        hits and misses, L2 and DRAM sectors, and their cycles.

        Sectors in mapped host memory (where some request has a lane there:
        _prepare_global set g.written_host), as an H100 counts them
        (benchmarks/mapped_counters_h100.py, results in
        benchmarks/results/mapped_counters_h100.json), are global
        requests' sectors like any; L1 keeps them (a second read hits); those
        that miss L1, and stores, reach L2 (l2_read_sectors, l2_write_sectors;
        l2_misses, as the H100's sysmem-aperture lookups all miss) but L2 does
        not keep them, and they cross PCIe instead of reading DRAM:
        pcie_read_bytes and pcie_write_bytes, cycles_per_pcie_sector each,
        about a microsecond of latency."""
        m = self.mem
        line = p.line
        n_all = p.n
        sel, is_load, is_ro, loads = g.sel, g.is_load, g.is_ro, g.loads
        def per_load_line(values):        # (lines, sums): few lines, not one entry per load
            return _per_line(g.load_lines, values)
        # ---- L1, in issue order (loads that go through it, local stores)
        l1_hit = np.zeros(n_all, dtype=np.int64)
        missed = {}                        # per cache: its entries that missed
        ro_hit = np.zeros(n_all, dtype=np.int64)
        if g.ro_entries is not None:
            r4, entries = g.ro_entries
            hit4, ehit4 = self._through_l1(entries, True, self.ro_cache)
            ro_hit = np.bincount(r4, weights=hit4, minlength=n_all).astype(np.int64)
            missed[1] = ~ehit4
        if g.l1_entries is not None:
            r1, ld, entries = g.l1_entries
            hit, ehit = self._through_l1(entries, True)
            l1_hit = np.bincount(r1[ld], weights=hit[ld], minlength=n_all).astype(np.int64)
            l1_miss = np.bincount(r1[ld], weights=~hit[ld], minlength=n_all).astype(np.int64)
            stats.add_lines("l1_hits", *per_load_line(l1_hit[loads]))
            stats.add_lines("l1_misses", *per_load_line(l1_miss[loads]))
            if self.readonly_path == "l1":
                ro_hit = np.where(is_ro, l1_hit, ro_hit)
            missed[2] = ~ehit
        # ---- L2, in issue order: the sectors sent there (straight, or missed above)
        l2_read = np.zeros(n_all, dtype=np.int64)
        l2_hit = np.zeros(n_all, dtype=np.int64)
        host_read = None                   # per request: its sectors read across PCIe
        if g.l2 is not None:
            creq, src, which, gid, keys, sets, bits, csec = g.l2
            sent = which == 0
            for code, miss in missed.items():
                w = which == code
                sent[w] = miss[src[w]]
            rd = sent & is_load[creq]
            l2_read = np.bincount(creq[rd], minlength=n_all).astype(np.int64)
            if g.written_host is not None:
                host = _mapped_sectors(csec)
                host_read = np.bincount(creq[rd & host], minlength=n_all).astype(np.int64)
                sent = sent & ~host        # not kept in L2
            if keys is not None:
                gbits = np.bincount(gid[sent], weights=bits[sent],
                                    minlength=keys.size).astype(np.int64)
                asked = gbits != 0
                ghit = np.zeros(keys.size, dtype=np.int64)
                ghit[asked] = self.l2.access_keys(keys[asked], sets[asked], gbits[asked], True)
                l2_hit = np.bincount(creq[rd], weights=(ghit[gid[rd]] & bits[rd]) != 0,
                                     minlength=n_all).astype(np.int64)
        ro_req = g.ro_req
        if ro_req.size:
            ro_sectors = g.ro_sectors
            stats.add_lines("readonly_hits", line[ro_req], ro_hit[ro_req])
            stats.add_lines("readonly_misses", line[ro_req], (ro_sectors - ro_hit)[ro_req])
            tex_req = ro_req[self._tex[p.instr[ro_req]]]
            if tex_req.size:
                stats.add_lines("texture_hits", line[tex_req], ro_hit[tex_req])
                stats.add_lines("texture_misses", line[tex_req], (ro_sectors - ro_hit)[tex_req])
            if self.readonly_path == "separate":
                l1_hit = l1_hit + ro_hit      # served by the read-only cache at L1 cost
        if self.l2 is not None:
            dram = l2_read - l2_hit
            stats.add_lines("l2_read_sectors", *per_load_line(l2_read[loads]))
            stats.add_lines("l2_hits", *per_load_line(l2_hit[loads]))
            stats.add_lines("l2_misses", *per_load_line(dram[loads]))
        else:
            dram = l2_read
        written, in_l1 = g.written, g.in_l1
        host_written = g.written_host
        if host_written is not None:       # across PCIe, not from DRAM
            host_read = host_read if host_read is not None else np.zeros(n_all, dtype=np.int64)
            dram = dram - host_read
            written = written - host_written
            stats.add_lines("pcie_read_bytes", *per_load_line(SECTOR * host_read[loads]))
            stores = sel[~is_load[sel] & (host_written[sel] > 0)]
            stats.add_lines("pcie_write_bytes", line[stores], SECTOR * host_written[stores])
        stats.add_lines("dram_read_sectors", *per_load_line(dram[loads]))
        # ---- cycles: loads by the level that served each sector; writes at L2
        c = (l1_hit * m.cycles_per_l1_sector + l2_hit * m.cycles_per_l2_sector
             + dram * m.cycles_per_dram_sector + written * m.cycles_per_l2_sector
             + in_l1 * m.cycles_per_l1_sector)
        lat = np.where(dram > 0, m.dram_latency,
                       np.where(l2_hit > 0, m.l2_hit_latency, m.l1_hit_latency))
        lat = np.where(is_load, lat, np.where(in_l1 > 0, m.l1_hit_latency, m.l2_hit_latency))
        if host_written is not None:
            link = link_for(self.preset)
            crossing = host_read + host_written
            c += crossing * cycles_per_pcie_sector(self.preset, link)
            lat = np.where(crossing > 0, int(round(1e-6 * link.sm_clock_hz)), lat)   # about 1 us there and back
        p.cycles[sel] += c[sel]
        p.latency[sel] += lat[sel]

    def cycles_for(self, batch: AccessBatch, instrs, stats=None) -> ChargeResult:
        """Alias of `charge` for callers that want the per-request cycles."""
        return self.charge(batch, instrs, stats if stats is not None else Stats())

    def finish(self, stats, issue_cycles_per_sm=None, schedulers: int = 1) -> None:
        """End of launch: the counters not settled yet, and stats['cycles'] =
        max over SMs of issue + memory cycles (an SM's issue cycles: its warp
        instructions, `issue_cycles_per_sm`, over its `schedulers` warp
        schedulers, rounded down)."""
        self.settle(stats)
        total = self.sm_cycles
        if issue_cycles_per_sm is not None:
            issue = np.asarray(issue_cycles_per_sm, dtype=np.int64)   # (an int64 array as is)
            if issue.size == total.size and total.size and issue.flags.c_contiguous:
                stats.add("cycles", self.busiest_call(issue, schedulers)())
                return
            total = total.copy()
            total[: issue.size] += issue[: total.size] // issue_divisor(schedulers)
        stats.add("cycles", int(total.max()) if total.size else 0)

    def busiest_call(self, issue: np.ndarray, schedulers: int = 1) -> packed_call.PackedCall:
        """The native call that gives max over SMs of sm_cycles + issue //
        schedulers (issue: int64, one per SM, C-contiguous), its arguments
        set (kept: a run hands the same array every launch). busiest_args:
        (issue, divisor) the call now reads, a new tuple each time they
        change (a caller that kept the call can tell it was re-pointed)."""
        call = self.__dict__.get("_busiest_call")
        if call is None:
            call = self._busiest_call = packed_call.PackedCall(
                native_cycle_sums.BUSIEST_SYMBOL, native_cycle_sums._build_busiest_ir, native_cycle_sums.BUSIEST_ARGS,
                dict(sm_cycles=address(self.sm_cycles), issue=0, n=self.sm_cycles.size, div=1))
        args, div = self.busiest_args, issue_divisor(schedulers)
        if args[0] is not issue or args[1] != div:
            call["issue"], call["div"] = address(issue), div
            self.busiest_args = (issue, div)
        return call

    busiest_args: tuple = (None, 1)
