"""A set-associative, LRU, sectored cache: the model of L1 (one per SM) and L2.

Tags are lines (`line_bytes`), validity is per sector (`sector_bytes`): a
miss allocates the line's tag and fills only the sectors asked for, as
NVIDIA's sectored L1/L2 do (a line of 128 bytes holds four 32-byte
sectors). An access hits a sector when the line's tag is resident and that
sector is valid. Replacement is least-recently-used within a set; the set
of a line is `line % sets`.

`access` takes a whole batch (numpy arrays, issue order) and returns, per
entry, the mask of sectors that hit (exact LRU: vectorised while no set
overflows, a plain-Python walk otherwise).
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np


class SectoredCache:
    """partitions: independent copies of the cache in one object (one L1 per
    SM): entry keys are line * partitions + partition."""

    def __init__(self, size_bytes: int, line_bytes: int, sector_bytes: int, assoc: int,
                 name: str = "cache", partitions: int = 1) -> None:
        if size_bytes <= 0:
            raise ValueError(f"{name}: size must be positive, got {size_bytes}")
        if line_bytes % sector_bytes:
            raise ValueError(f"{name}: line {line_bytes} B is not a multiple of sector {sector_bytes} B")
        self.name = name
        self.line_bytes = line_bytes
        self.sector_bytes = sector_bytes
        self.sectors_per_line = line_bytes // sector_bytes
        self.assoc = assoc
        self.num_sets = max(1, size_bytes // (line_bytes * assoc))
        self.partitions = max(1, int(partitions))
        self._lines: dict = {}             # resident key -> (valid sector bits, last use)
        self._members = defaultdict(list)  # set -> resident keys
        self._count = np.zeros(self.num_sets * self.partitions, dtype=np.int64)
        self._t = 0                        # access clock (LRU order)
        self.hits = 0                      # sectors
        self.misses = 0

    def split(self, sector_ids: np.ndarray):
        """Sector ids (addr // sector_bytes) -> (line ids, sector bit in the line)."""
        s = np.asarray(sector_ids, dtype=np.int64)
        return s // self.sectors_per_line, (np.int64(1) << (s % self.sectors_per_line))

    def _set_of(self, keys: np.ndarray) -> np.ndarray:
        P = self.partitions
        if P == 1:
            return keys % self.num_sets
        return ((keys // P) % self.num_sets) * P + keys % P

    def access(self, lines: np.ndarray, bits: np.ndarray, allocate=True,
               partition: np.ndarray | None = None) -> np.ndarray:
        """Look up each (line, sector-bits) entry in order; returns the hit bits.

        allocate: bool or bool[M]; False for entries that must not fill the
        cache on a miss. partition: int[M] (e.g. the SM), with `partitions` > 1.

        Exact LRU. Entries of sets that cannot overflow in this call (they
        keep at most `assoc` lines) evict nothing, so their hits follow from
        the lines' earlier contents and the earlier entries of the call:
        computed with numpy. Entries of the other sets are walked one by one."""
        keys = np.asarray(lines, dtype=np.int64)
        if partition is not None:
            keys = keys * self.partitions + np.asarray(partition, dtype=np.int64)
        bits = np.asarray(bits, dtype=np.int64)
        m = keys.size
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        alloc = np.broadcast_to(np.asarray(allocate, dtype=bool), (m,))
        t0 = self._t
        self._t += m
        sets = self._set_of(keys)
        out = np.zeros(m, dtype=np.int64)
        if alloc.all():
            walk = self._vectorised(keys, bits, sets, t0, out)
        else:
            walk = np.arange(m)
        if walk.size:
            out[walk] = self._access_walk(keys[walk], bits[walk], alloc[walk], sets[walk],
                                          t0 + walk)
        nh = int(popcount(out).sum())
        self.hits += nh
        self.misses += int(popcount(bits).sum()) - nh
        return out

    def _vectorised(self, keys, bits, sets, t0, out) -> np.ndarray:
        """Serve the entries of sets that cannot overflow; return the others' indices."""
        uniq, first_idx, inv = np.unique(keys, return_index=True, return_inverse=True)
        ul = uniq.tolist()
        get = self._lines.get
        prev = [get(x) for x in ul]
        present = np.fromiter((p is not None for p in prev), dtype=bool, count=len(ul))
        sets_u = sets[first_idx]
        new_sets = sets_u[~present]
        walk = np.zeros(0, dtype=np.int64)
        if new_sets.size:
            add = np.bincount(new_sets, minlength=self._count.size)
            over = self._count + add > self.assoc
            if over.any():
                bad_u = over[sets_u]
                walk = np.flatnonzero(bad_u[inv])
                add[over] = 0
                keep_u = ~bad_u
                if not keep_u.any():
                    return walk
                # restrict to the entries / lines of sets that fit
                sel = np.flatnonzero(keep_u[inv])
                remap = np.cumsum(keep_u) - 1
                inv_k = remap[inv[sel]]
                uniq, present, sets_u = uniq[keep_u], present[keep_u], sets_u[keep_u]
                prev = [p for p, k in zip(prev, keep_u.tolist()) if k]
                ul = uniq.tolist()
                new_sets = sets_u[~present]
                self._serve(sel, inv_k, bits[sel], prev, present, ul, uniq, new_sets, add, t0, out)
                return walk
        self._serve(None, inv, bits, prev, present, ul, uniq, new_sets,
                    add if new_sets.size else None, t0, out)
        return walk

    def _serve(self, sel, inv, bits, prev, present, ul, uniq, new_sets, add, t0, out):
        prev_bits = np.fromiter((p[0] if p is not None else 0 for p in prev), dtype=np.int64,
                                count=len(ul))
        m = bits.size
        order = np.argsort(inv, kind="stable")
        g = inv[order]
        b = bits[order]
        is_start = np.ones(m, dtype=bool)
        is_start[1:] = g[1:] != g[:-1]
        starts = np.flatnonzero(is_start)
        seg_len = np.diff(np.append(starts, m))
        pb = prev_bits[g]
        hit_sorted = np.zeros(m, dtype=np.int64)
        for k in range(self.sectors_per_line):
            bk = (b >> k) & 1
            if not bk.any():
                continue
            cs = np.cumsum(bk)
            before = cs - bk - np.repeat(cs[starts] - bk[starts], seg_len)
            seen = (before > 0) | (((pb >> k) & 1) == 1)
            hit_sorted |= (bk & seen) << k
        pos = order if sel is None else sel[order]
        out[pos] = hit_sorted
        final = prev_bits | np.bitwise_or.reduceat(b, starts)
        last = t0 + pos[np.append(starts[1:], m) - 1]
        self._lines.update(zip(ul, zip(final.tolist(), last.tolist())))
        if new_sets.size:
            members = self._members
            for key, st in zip(uniq[~present].tolist(), new_sets.tolist()):
                members[st].append(key)
            self._count += add

    def _access_walk(self, keys, bits, alloc, sets, times) -> np.ndarray:
        d, members, assoc = self._lines, self._members, self.assoc
        out = [0] * keys.size
        touched = set()
        for i, (key, b, al, s, t) in enumerate(zip(keys.tolist(), bits.tolist(), alloc.tolist(),
                                                  sets.tolist(), times.tolist())):
            v = d.get(key)
            if v is not None:
                out[i] = v[0] & b
                d[key] = ((v[0] | b) if al else v[0], t)
            elif al:
                lst = members[s]
                if len(lst) >= assoc:
                    victim = min(lst, key=lambda x: d[x][1])
                    lst.remove(victim)
                    del d[victim]
                lst.append(key)
                d[key] = (b, t)
                touched.add(s)
        for s in touched:
            self._count[s] = len(members[s])
        return np.asarray(out, dtype=np.int64)

    def access_sectors(self, req: np.ndarray, sector_ids: np.ndarray, allocate=True,
                       partition: np.ndarray | None = None) -> np.ndarray:
        """Sector ids grouped by request (ascending within one) -> hit bool per sector.

        Adjacent sectors of one request in one line become one line access."""
        req = np.asarray(req, dtype=np.int64)
        lines, bits = self.split(sector_ids)
        if lines.size == 0:
            return np.zeros(0, dtype=bool)
        new = np.ones(lines.size, dtype=bool)
        new[1:] = (lines[1:] != lines[:-1]) | (req[1:] != req[:-1])
        gid = np.cumsum(new) - 1
        gbits = np.bincount(gid, weights=bits).astype(np.int64)
        part = None if partition is None else np.asarray(partition)[new]
        hit = self.access(lines[new], gbits, allocate, part)
        return (hit[gid] & bits) != 0

    def invalidate(self, lines: np.ndarray, partition: np.ndarray | None = None) -> None:
        """Drop these lines (e.g. L1 lines a store wrote around)."""
        keys = np.asarray(lines, dtype=np.int64)
        if partition is not None:
            keys = keys * self.partitions + np.asarray(partition, dtype=np.int64)
        for key, s in zip(keys.tolist(), self._set_of(keys).tolist()):
            if self._lines.pop(key, None) is not None:
                self._members[s].remove(key)
                self._count[s] -= 1


_POP16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.int64)


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each value (lines hold at most 16 sectors)."""
    return _POP16[np.asarray(x, dtype=np.int64) & 0xFFFF]


def lru_reference(lines, bits, num_sets: int, assoc: int) -> list:
    """The readable rule: a list of per-set LRU lists, one access at a time.

    Returns the hit bits of each (line, bits) access (all allocate)."""
    sets = [[] for _ in range(num_sets)]       # most recent last: [line, valid bits]
    out = []
    for line, b in zip(lines, bits):
        ways = sets[line % num_sets]
        entry = next((e for e in ways if e[0] == line), None)
        if entry is None:
            out.append(0)
            if len(ways) == assoc:
                ways.pop(0)                   # least recently used
            ways.append([line, b])
        else:
            out.append(entry[1] & b)
            ways.remove(entry)
            ways.append([line, entry[1] | b])
    return out
