"""A set-associative, LRU, sectored cache: the model of L1 (one per SM) and L2.

Tags are lines (`line_bytes`), validity is per sector (`sector_bytes`): a
miss allocates the line's tag and fills only the sectors asked for, as
NVIDIA's sectored L1/L2 do (a line of 128 bytes holds four 32-byte
sectors). An access hits a sector when the line's tag is resident and that
sector is valid. Replacement is least-recently-used within a set; the set
of a line is `line % sets`.

`access` takes a whole batch (numpy arrays, issue order) and returns, per
entry, the mask of sectors that hit: exact LRU, walked entry by entry in
native code (native_lru.py); `lru_reference` below is the readable rule the
native walk is tested against (tests/test_cache.py).
"""
from __future__ import annotations

import numpy as np

import llvmlite.ir as ll

from gpuemu.jit import packed_call

from . import native_lru
from .native_ir import I32, Fn, c

RESET_SYMBOL = "gpuemu_cache_reset"
RESET_ARGS = ("tags", "assoc", "row_of", "meta", "sets")


def _build_reset_ir() -> str:
    """reset: forget the sets of the rows in use (row_of[tags[r][0] % sets]
    = 0; every set when a row's first way is empty), then meta = 0
    (SectoredCache.reset's rule, one native call)."""
    m = ll.Module(name="cache_reset")
    f = Fn(m, RESET_SYMBOL, RESET_ARGS)
    A, b = f.arg, f.b
    meta, row_of, tags = f.ptr("meta"), f.ptr("row_of", I32), f.ptr("tags")
    full = f.var(0)
    with f.loop(0, f.ld(meta, 0)) as r:
        key = f.ld(tags, b.mul(r, A["assoc"]))
        with f.if_else(f.cmp("<", key, 0)) as (empty, used):
            with empty:
                f.set(full, 1)
            with used:
                f.st(row_of, b.srem(key, A["sets"]), 0)
    with f.if_(f.cmp("!=", f.get(full), 0)):
        with f.loop(0, A["sets"]) as s:
            f.st(row_of, s, 0)
    for k in range(3):
        f.st(meta, c(k), 0)
    f.finish()
    return str(m)


def _kept_count(name: str, doc: str) -> property:
    """SectoredCache's counter `name`, brought up to date first where a
    native batch walked the cache last (SectoredCache.counted_in)."""
    def get(self):
        if self._counted_in is not None:
            self._sync()
        return self.__dict__[name]

    def put(self, value) -> None:
        if self._counted_in is not None:
            self._sync()
        self.__dict__[name] = value
    get.__doc__ = doc
    return property(get, put)


class SectoredCache:
    """partitions: independent copies of the cache in one object (one L1 per
    SM): entry keys are line * partitions + partition."""

    hits = _kept_count("hits", "Sectors looked up that hit (since the last reset).")
    misses = _kept_count("misses", "Sectors looked up that missed (since the last reset).")
    _t = _kept_count("_t", "The access clock (LRU order): accesses since the last reset.")
    _counted_in = None       # (clock array, index): a native batch's walk counted last (counted_in)

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
        # one row of `assoc` ways per set (gpuemu/memory/native_lru.py), made
        # when the set is first looked up: a launch that touches few lines
        # pays for those sets, not for all of L2 and every SM's L1
        self._state = None
        self._t = 0                        # access clock (LRU order)
        self.hits = 0                      # sectors
        self.misses = 0

    def counted_in(self, clock: np.ndarray, i: int) -> None:
        """A native walk (native_batch.py) looked this cache up last: its
        hits and misses are the state's counts (meta: sectors hit, asked;
        every lookup adds to both, a reset zeroes them with these) and its
        clock is clock[i]; they are read from there when next used, not
        after every batch."""
        self._counted_in = (clock, i)

    def _sync(self) -> None:
        clock, i = self._counted_in
        self._counted_in = None
        h, asked = self._state.meta[1:3].tolist()
        d = self.__dict__
        d["hits"], d["misses"], d["_t"] = h, asked - h, int(clock[i])

    def split(self, sector_ids: np.ndarray):
        """Sector ids (addr // sector_bytes) -> (line ids, sector bit in the line)."""
        s = np.asarray(sector_ids, dtype=np.int64)
        return s // self.sectors_per_line, (np.int64(1) << (s % self.sectors_per_line))

    def _set_of(self, keys: np.ndarray) -> np.ndarray:
        P = self.partitions
        if P == 1:
            return keys % self.num_sets
        return ((keys // P) % self.num_sets) * P + keys % P

    @property
    def sets_in_use(self) -> int:
        """Sets (of all partitions) that hold state: those looked up so far."""
        return self._state.rows if self._state is not None else 0

    def lru_state(self) -> native_lru.LruState:
        """The cache's state, the native LRU walk's (made on first use):
        callers that walk it natively or share it between threads
        (MemorySystem.share, native_cache_walk) take it from here."""
        if self._state is None:
            self._state = native_lru.LruState(self.num_sets * self.partitions, self.assoc)
        return self._state

    def reset(self) -> None:
        """Empty the cache, as a new one of its geometry is (a renewed
        launch starts from cold caches: MemorySystem.reset). The state's
        arrays are kept for the next launch; only the sets in use are
        forgotten, found from the line each row holds in its first way (a
        miss fills the first empty way); where a row's first way is empty,
        which only a non-allocating miss (or a test's invalidation,
        tests/test_cache.py) leaves, every set is forgotten."""
        st = self._state
        if st is not None and st.meta[0]:    # _set_of(key) is key % (sets * partitions) for a key line * P + p
            self.reset_call()()
        self.reset_fields()

    def release_state(self) -> None:
        """Empty the cache as `reset` does and give its state's planes back to
        record_pool (native_lru.LruState.release): a kept memory system
        whose caches grew large holds only their sets' row numbers between
        launches; the next launch's lookups take planes again."""
        st = self._state
        if st is not None:
            st.release()
            self.reset_fields()

    def reset_call(self) -> packed_call.PackedCall:
        """The native half of `reset` (this cache's state made first), its
        arguments set: a caller may chain it with others (MemorySystem.reset)
        and then call reset_fields. (Measured against the numpy lines it
        replaced, the caches of a vecadd of 1K threads: 6 against 17 us of
        thread CPU for both, on our loaded machine; in MemorySystem.reset's
        chain it adds no call of its own.)"""
        st = self.lru_state()
        call = self.__dict__.get("_reset_call")
        if call is None:                     # its arguments, kept: only the rows' address moves
            call = self._reset_call = packed_call.PackedCall(RESET_SYMBOL, _build_reset_ir, RESET_ARGS, dict(
                tags=0, assoc=self.assoc, row_of=st._fixed[0], meta=st._fixed[1],
                sets=self.num_sets * self.partitions))
        call["tags"] = st._ptrs[0] if st._ptrs is not None else 0
        return call

    def reset_fields(self) -> None:
        """The Python half of `reset`: no counts, the clock at 0."""
        self._counted_in = None
        d = self.__dict__
        d["_t"] = d["hits"] = d["misses"] = 0

    def access(self, lines: np.ndarray, bits: np.ndarray, allocate=True,
               partition: np.ndarray | None = None) -> np.ndarray:
        """Look up each (line, sector-bits) entry in order; returns the hit bits.

        allocate: bool or bool[M]; False for entries that must not fill the
        cache on a miss. partition: int[M] (e.g. the SM), with `partitions` > 1.
        Exact LRU, one entry after the other, in native code (native_lru)."""
        keys, sets = self.keys_and_sets(lines, partition)
        return self.access_keys(keys, sets, bits, allocate)

    def keys_and_sets(self, lines: np.ndarray, partition: np.ndarray | None = None) -> tuple:
        """Entry keys and their sets (no cache state read: they can be worked
        out ahead, on another thread, and handed to `access_keys`)."""
        keys = np.asarray(lines, dtype=np.int64)
        if partition is not None:
            keys = keys * self.partitions + np.asarray(partition, dtype=np.int64)
        return keys, self._set_of(keys)

    def access_keys(self, keys: np.ndarray, sets: np.ndarray, bits: np.ndarray,
                    allocate=True) -> np.ndarray:
        """`access` with the keys and sets of `keys_and_sets`."""
        bits = np.asarray(bits, dtype=np.int64)
        m = keys.size
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        if np.ndim(allocate) == 0:
            alloc = np.full(m, bool(allocate), dtype=np.uint8)
        else:
            alloc = np.asarray(allocate, dtype=bool)
        st = self.lru_state()
        h0, a0 = int(st.meta[1]), int(st.meta[2])
        out = native_lru.lru_walk(st, keys, bits, alloc, sets, self._t)
        self._t += m
        nh = int(st.meta[1]) - h0
        self.hits += nh
        self.misses += int(st.meta[2]) - a0 - nh
        return out

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


_POP16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.int64)


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each value (lines hold at most 16 sectors)."""
    return _POP16[np.asarray(x, dtype=np.int64) & 0xFFFF]


def lru_reference(lines, bits, num_sets: int, assoc: int, allocate=None) -> list:
    """The readable rule: a list of per-set LRU lists, one access at a time.

    Returns the hit bits of each (line, bits) access; allocate[i] False: a
    miss of access i leaves the cache as it is (all allocate by default)."""
    sets = [[] for _ in range(num_sets)]       # most recent last: [line, valid bits]
    out = []
    allocate = [True] * len(lines) if allocate is None else allocate
    for line, b, al in zip(lines, bits, allocate):
        ways = sets[line % num_sets]
        entry = next((e for e in ways if e[0] == line), None)
        if entry is None:
            out.append(0)
            if not al:
                continue
            if len(ways) == assoc:
                ways.pop(0)                   # least recently used
            ways.append([line, b])
        else:
            out.append(entry[1] & b)
            ways.remove(entry)
            ways.append([line, entry[1] | b if al else entry[1]])
    return out
