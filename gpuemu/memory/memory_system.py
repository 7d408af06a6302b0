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

import numpy as np

from gpuemu.arch import get_preset
from gpuemu.memory import bank_arbiter, coalescer, constant_cache
from gpuemu.memory.cache import SectoredCache
from gpuemu.memory.trace import SPACE_CODES, AccessBatch
from gpuemu.memory.worst_requests import WorstRequests
from gpuemu.host.buffers import host_memory_in_use, kind_of_addresses, touch_managed
from gpuemu.host.pcie import cycles_per_pcie_sector, link_for

_OPS = {"ld": 0, "st": 1, "atom": 2, "red": 3}
SHARED, GLOBAL, LOCAL, CONST = (SPACE_CODES[k] for k in ("shared", "global", "local", "constant"))
SECTOR = 32


@dataclass
class ChargeResult:
    cycles: np.ndarray     # int64[N] throughput cycles charged per request
    latency: np.ndarray    # int64[N] cycles until the request's data is ready


class MemorySystem:
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
        self.sm_cycles = np.zeros(self.preset.num_sms, dtype=np.int64)
        self.warp_cycles: dict = {}
        self._tables_for = None
        self.worst = WorstRequests()      # per line, the costliest request (for reports)

    # ------------------------------------------------------------ helpers
    def _tables(self, instrs):
        if self._tables_for is not instrs or len(self._op) != len(instrs):
            n = max((i.id for i in instrs), default=-1) + 1
            self._op = np.zeros(n, dtype=np.int8)
            self._size = np.full(n, 4, dtype=np.int64)
            self._line = np.zeros(n, dtype=np.int64)
            self._ro = np.zeros(n, dtype=bool)
            self._spill = np.zeros(n, dtype=bool)
            self._tex = np.zeros(n, dtype=bool)
            for i in instrs:
                self._ro[i.id] = getattr(i, "readonly", False)
                self._spill[i.id] = getattr(i, "spill", False)
                self._tex[i.id] = getattr(i, "texture", False)
                self._op[i.id] = _OPS.get(i.op, 2 if i.op.startswith("atom") else 0)
                self._size[i.id] = i.size
                self._line[i.id] = i.line
            self._tables_for = instrs
        return self._op, self._size, self._line

    # ------------------------------------------------------------ caches
    def _through_l1(self, req, sec, sm_of_req, allocate: bool, n: int, cache=None,
                    line_bytes: int = 0, sector_bytes: int = 0):
        """Look up 32-byte sectors (req-ordered) in the SMs' L1s (or in another
        per-SM cache, e.g. Kepler's read-only cache, given with its geometry).

        Returns (hit per sector bool[M], sectors sent to L2: (req, sector))."""
        m = self.mem
        cache = cache or self.l1
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
        lsm = sm_of_req[lreq] % self.preset.num_sms
        hitbits = cache.access(lline, lbits, allocate, lsm)
        ehit = ((hitbits[lid] & ebit) != 0)
        hit = ehit[eid]
        # L2 traffic: every 32-byte sector of each missed L1 sector
        miss_req, miss_l1 = ereq[~ehit], esec[~ehit]
        if k == 1:
            return hit, miss_req, miss_l1
        return hit, np.repeat(miss_req, k), (np.repeat(miss_l1 * k, k) + np.tile(np.arange(k), miss_l1.size))

    # ------------------------------------------------------------ charging
    def charge(self, batch: AccessBatch, instrs, stats) -> ChargeResult:
        n = len(batch)
        cycles = np.zeros(n, dtype=np.int64)
        latency = np.zeros(n, dtype=np.int64)
        if n == 0:
            return ChargeResult(cycles, latency)
        op_t, size_t, line_t = self._tables(instrs)
        instr = np.asarray(batch.instr, dtype=np.int64)
        op, size, line = op_t[instr], size_t[instr], line_t[instr]
        space = np.asarray(batch.space)
        addr = np.asarray(batch.addr, dtype=np.int64)
        mask = np.asarray(batch.mask, dtype=np.uint32)
        sm = np.asarray(batch.sm, dtype=np.int64)
        m = self.mem

        sel = np.flatnonzero(space == SHARED)
        if sel.size:
            self._charge_shared(sel, op, size, line, addr, mask, stats, cycles, latency)
        glob = space == GLOBAL
        glob &= ~(self._tex[instr] & ~self._ro[instr])   # texture headers: in the texture unit
        if glob.any() and host_memory_in_use():
            glob &= ~self._charge_host_memory(np.flatnonzero(glob), op, size, line, addr, mask,
                                              stats, cycles, latency)
        sel = np.flatnonzero(glob | (space == LOCAL))
        if sel.size:
            self._charge_global(sel, space, op, size, line, addr, mask, sm, batch,
                                stats, cycles, latency)
        sel = np.flatnonzero(space == CONST)
        if sel.size:
            active = bank_arbiter._lane_bits(mask[sel])
            wf, rows, caddr = constant_cache.constant_wavefronts_batch(addr[sel], active)
            ln = line[sel]
            stats.add_lines("constant_requests", ln, np.ones(sel.size, dtype=np.int64))
            stats.add_lines("constant_wavefronts", ln, wf)
            hits, misses = self.const.access(sm[sel][rows], caddr)
            stats.add("constant_cache_hits", hits)
            stats.add("constant_cache_misses", misses)
            cycles[sel] = wf * m.cycles_per_constant_wavefront
            latency[sel] = m.constant_latency + np.maximum(wf - 1, 0)

        # accumulate per SM, per warp, per line
        np.add.at(self.sm_cycles, sm % self.preset.num_sms, cycles)
        key = np.asarray(batch.block, dtype=np.int64) * 4096 + np.asarray(batch.warp, dtype=np.int64)
        uk, inv = np.unique(key, return_inverse=True)
        sums = np.bincount(inv, weights=cycles).astype(np.int64)
        wc = self.warp_cycles
        for kk, v in zip(uk.tolist(), sums.tolist()):
            t = (kk // 4096, kk % 4096)
            wc[t] = wc.get(t, 0) + v
        stats.add_lines("memory_cycles", line, cycles)
        return ChargeResult(cycles, latency)

    def _charge_host_memory(self, sel, op, size, line, addr, mask, stats, cycles, latency):
        """Requests to host memory (gpuemu/host/buffers.py). Mapped (zero-copy)
        requests cross PCIe sector by sector, uncached: counted as
        zero_copy_requests, pcie_read_bytes / pcie_write_bytes, charged
        cycles_per_pcie_sector each; returns the mask of those (they skip
        the caches). Managed requests fault on the first touch of each
        migration block (page_faults, managed_migrated_bytes) and then go
        on as device accesses."""
        active = bank_arbiter._lane_bits(mask[sel])
        kinds = np.where(active, kind_of_addresses(addr[sel]), 0)
        mapped = (kinds == 1).any(axis=1)
        out = np.zeros(op.size, dtype=bool)
        if mapped.any():
            link = link_for(self.preset)
            rq = sel[mapped]
            ln = line[rq]
            lane_bytes = np.repeat(size[rq][:, None], 32, axis=1)
            a = addr[rq]
            first = (a // SECTOR)
            last = (a + lane_bytes - 1) // SECTOR
            act = active[mapped]
            both = np.sort(np.where(np.concatenate([act, act], axis=1),
                                    np.concatenate([first, last], axis=1), -1), axis=1)
            sectors = ((both[:, 1:] != both[:, :-1]) & (both[:, 1:] >= 0)).sum(axis=1) + (both[:, 0] >= 0)
            stats.add_lines("zero_copy_requests", ln, np.ones(rq.size, dtype=np.int64))
            rd = op[rq] == 0
            stats.add_lines("pcie_read_bytes", ln[rd], sectors[rd] * SECTOR)
            stats.add_lines("pcie_write_bytes", ln[~rd], sectors[~rd] * SECTOR)
            cycles[rq] += sectors * cycles_per_pcie_sector(self.preset, link)
            latency[rq] += int(round(1e-6 * link.sm_clock_hz))     # about 1 us across PCIe and back
            out[rq] = True
        managed = (kinds == 2).any(axis=1) & ~mapped
        if managed.any():
            link = link_for(self.preset)
            rq = sel[managed]
            for r, k in zip(rq.tolist(), np.flatnonzero(managed).tolist()):
                lanes = active[k] & (kinds[k] == 2)
                new = touch_managed(addr[r][lanes], link.migrate_bytes)
                if new.size:
                    stats.add("page_faults", int(new.size), int(line[r]))
                    stats.add("managed_migrated_bytes", int(new.size) * link.migrate_bytes, int(line[r]))
        return out

    def _charge_shared(self, sel, op, size, line, addr, mask, stats, cycles, latency):
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
        self.worst.note("shared", ln, np.array(list(_OPS))[o], s, wf, mk, a)
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

    def _charge_global(self, sel, space, op, size, line, addr, mask, sm, batch, stats, cycles, latency):
        """Global and local requests: counts by group, caches in issue order."""
        m = self.mem
        n_all = op.size
        instr_of = np.asarray(batch.instr, dtype=np.int64)
        ent_req, ent_sec, ent_kind = [], [], []
        groups = [(prefix, sel[(space[sel] == code) & (size[sel] == s)], s)
                  for code, prefix in ((GLOBAL, "global"), (LOCAL, "local"))
                  for s in np.unique(size[sel][space[sel] == code]).tolist()]
        for prefix, sub, s in groups:
            o, ln = op[sub], line[sub]
            active = bank_arbiter._lane_bits(mask[sub])
            a = addr[sub]
            unit = s
            if prefix == "local":
                wid = (np.asarray(batch.block, dtype=np.int64)[sub] * 64
                       + np.asarray(batch.warp, dtype=np.int64)[sub])
                a, active, unit = coalescer.interleave_local(a, active, s, wid, m)
            ro_here = self._ro[instr_of[sub]] & (prefix == "global" and self.readonly_path != "none") & (o == 0)
            sp_here = self._spill[instr_of[sub]] & (prefix == "local")
            for code, name, ro_part in ((0, "load", False), (0, "load", True), (1, "store", False),
                                        (2, "atomic", False), (3, "reduction", False)):
                k = np.flatnonzero((o == code) & (ro_here == ro_part))
                if k.size == 0:
                    continue
                via_l1 = code == 0 and (self.l1_global_loads if prefix == "global" else self.l1_present)
                if ro_part:     # __ldg / const __restrict__: the read-only data path
                    via_l1 = self.readonly_path == "l1"
                cb = coalescer.global_requests_batch(a[k], active[k], unit, m, l1_cached=via_l1)
                kl = ln[k]
                if prefix == "global":
                    self.worst.note("global", kl, np.full(k.size, list(_OPS)[code]),
                                    np.full(k.size, s), cb.sectors, mask[sub][k], addr[sub][k])
                if ro_part:
                    stats.add_lines("readonly_load_requests", kl, np.ones(k.size, dtype=np.int64))
                    stats.add_lines("readonly_load_sectors", kl, cb.sectors)
                    tx = self._tex[instr_of[sub][k]]
                    if tx.any():    # texel fetches (isa/texture_fetch.py), a part of the read-only loads
                        stats.add_lines("texture_requests", kl[tx], np.ones(int(tx.sum()), dtype=np.int64))
                        stats.add_lines("texture_sectors", kl[tx], cb.sectors[tx])
                sp = sp_here[k]
                if sp.any():    # register spills: local traffic counted also on its own
                    stats.add_lines(f"spill_{name}_requests", kl[sp], np.ones(int(sp.sum()), dtype=np.int64))
                    nbytes = bank_arbiter._lane_bits(mask[sub][k][sp]).sum(axis=1) * s
                    stats.add_lines("spill_bytes", kl[sp], nbytes)
                stats.add_lines(f"{prefix}_{name}_requests", kl, np.ones(k.size, dtype=np.int64))
                stats.add_lines(f"{prefix}_{name}_sectors", kl, cb.sectors)
                if code <= 1:
                    stats.add_lines(f"{prefix}_{name}_transactions", kl, cb.transactions)
                write_back = prefix == "local" and code == 1 and self.l1_present
                if code == 1 and self.l2 is not None and not write_back:
                    stats.add_lines("l2_write_sectors", kl, cb.sectors)
                if code >= 2:
                    mult = bank_arbiter.same_address_multiplicity(addr[sub][k], mask[sub][k])
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
            return
        req = np.concatenate(ent_req)
        sec = np.concatenate(ent_sec)
        kind = np.concatenate(ent_kind)
        order = np.argsort(req, kind="stable")
        req, sec, kind = req[order], sec[order], kind[order]
        is_load = np.zeros(n_all, dtype=bool)
        is_load[sel] = op[sel] == 0
        # ---- L1, in issue order (loads that go through it, local stores)
        l1_hit = np.zeros(n_all, dtype=np.int64)
        is_ro = np.zeros(n_all, dtype=bool)
        if self.readonly_path != "none":
            is_ro[sel] = self._ro[instr_of[sel]] & (space[sel] == GLOBAL) & (op[sel] == 0)
        l1_sel = (kind == 0) | (kind == 3)
        l2_parts = [(req[(kind == 1) | (kind == 2)], sec[(kind == 1) | (kind == 2)])]
        ro_hit = np.zeros(n_all, dtype=np.int64)
        if (kind == 4).any():
            r4, s4 = req[kind == 4], sec[kind == 4]
            hit4, mreq4, msec4 = self._through_l1(r4, s4, sm, True, n_all, self.ro_cache,
                                                  m.readonly_line_bytes, m.readonly_sector_bytes)
            ro_hit = np.bincount(r4, weights=hit4, minlength=n_all).astype(np.int64)
            l2_parts.append((mreq4, msec4))
        if l1_sel.any():
            r1, s1, k1 = req[l1_sel], sec[l1_sel], kind[l1_sel]
            hit, mreq, msec = self._through_l1(r1, s1, sm, True, n_all)
            ld = k1 == 0
            l1_hit = np.bincount(r1[ld], weights=hit[ld], minlength=n_all).astype(np.int64)
            l1_miss = np.bincount(r1[ld], weights=~hit[ld], minlength=n_all).astype(np.int64)
            mine = sel[is_load[sel]]
            stats.add_lines("l1_hits", line[mine], l1_hit[mine])
            stats.add_lines("l1_misses", line[mine], l1_miss[mine])
            if self.readonly_path == "l1":
                ro_hit = np.where(is_ro, l1_hit, ro_hit)
            keep = is_load[mreq]               # local-store misses do not read L2
            l2_parts.append((mreq[keep], msec[keep]))
        l2req = np.concatenate([p[0] for p in l2_parts])
        l2sec = np.concatenate([p[1] for p in l2_parts])
        order = np.argsort(l2req, kind="stable")
        l2req, l2sec = l2req[order], l2sec[order]
        # ---- L2, in issue order
        l2_read = np.bincount(l2req[is_load[l2req]], minlength=n_all).astype(np.int64)
        l2_hit = np.zeros(n_all, dtype=np.int64)
        if self.l2 is not None and l2sec.size:
            h = self.l2.access_sectors(l2req, l2sec, True)
            rd = is_load[l2req]
            l2_hit = np.bincount(l2req[rd], weights=h[rd], minlength=n_all).astype(np.int64)
        loads = sel[is_load[sel]]
        ro_req = sel[is_ro[sel]]
        if ro_req.size:
            ro_sectors = np.bincount(req[np.isin(req, ro_req)], minlength=n_all).astype(np.int64)
            stats.add_lines("readonly_hits", line[ro_req], ro_hit[ro_req])
            stats.add_lines("readonly_misses", line[ro_req], (ro_sectors - ro_hit)[ro_req])
            tex_req = ro_req[self._tex[instr_of[ro_req]]]
            if tex_req.size:
                stats.add_lines("texture_hits", line[tex_req], ro_hit[tex_req])
                stats.add_lines("texture_misses", line[tex_req], (ro_sectors - ro_hit)[tex_req])
            if self.readonly_path == "separate":
                l1_hit = l1_hit + ro_hit      # served by the read-only cache at L1 cost
        if self.l2 is not None:
            stats.add_lines("l2_read_sectors", line[loads], l2_read[loads])
            stats.add_lines("l2_hits", line[loads], l2_hit[loads])
            stats.add_lines("l2_misses", line[loads], (l2_read - l2_hit)[loads])
            dram = l2_read - l2_hit
        else:
            dram = l2_read
        stats.add_lines("dram_read_sectors", line[loads], dram[loads])
        # ---- cycles: loads by the level that served each sector; writes at L2
        written = np.bincount(req[kind == 2], minlength=n_all).astype(np.int64)
        in_l1 = np.bincount(req[kind == 3], minlength=n_all).astype(np.int64)
        c = (l1_hit * m.cycles_per_l1_sector + l2_hit * m.cycles_per_l2_sector
             + dram * m.cycles_per_dram_sector + written * m.cycles_per_l2_sector
             + in_l1 * m.cycles_per_l1_sector)
        lat = np.where(dram > 0, m.dram_latency,
                       np.where(l2_hit > 0, m.l2_hit_latency, m.l1_hit_latency))
        lat = np.where(is_load, lat, np.where(in_l1 > 0, m.l1_hit_latency, m.l2_hit_latency))
        cycles[sel] += c[sel]
        latency[sel] += lat[sel]

    def cycles_for(self, batch: AccessBatch, instrs, stats=None) -> ChargeResult:
        """Alias of `charge` for callers that want the per-request cycles."""
        from gpuemu.stats import Stats
        return self.charge(batch, instrs, stats if stats is not None else Stats())

    def finish(self, stats, issue_cycles_per_sm=None) -> None:
        """End of launch: stats['cycles'] = max over SMs of issue + memory cycles."""
        total = self.sm_cycles.copy()
        if issue_cycles_per_sm is not None:
            issue = np.asarray(issue_cycles_per_sm, dtype=np.int64)
            total[: issue.size] += issue[: total.size]
        stats.add("cycles", int(total.max()) if total.size else 0)
