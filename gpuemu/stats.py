"""Per-launch counters, in total and per source line (DESIGN section 6 names)."""
from __future__ import annotations

import threading
from collections import defaultdict
from types import MappingProxyType
from typing import Any, Callable, Iterable, Sequence

import numpy as np

COUNTERS = (
    "cycles", "warp_instructions", "thread_instructions",
    "shared_load_requests", "shared_load_wavefronts",
    "shared_store_requests", "shared_store_wavefronts", "shared_bank_conflicts",
    "shared_atomic_requests",
    "global_load_requests", "global_load_sectors",
    "global_store_requests", "global_store_sectors",
    "global_atomic_requests", "global_reduction_requests",
    "local_load_requests", "local_load_sectors",
    "local_store_requests", "local_store_sectors",
    "l1_hits", "l1_misses", "l2_hits", "l2_misses", "l2_read_sectors", "l2_write_sectors",
    "constant_requests", "constant_wavefronts",
    "divergent_branches", "barriers", "fences",
    # register spills (isa/register_spill.py): local requests also counted on their own
    "spill_load_requests", "spill_store_requests", "spill_bytes",
    # the read-only data path (__ldg, const __restrict__; isa/readonly_path.py)
    "readonly_load_requests", "readonly_load_sectors", "readonly_hits", "readonly_misses",
    # texel fetches (isa/texture_fetch.py; also counted as read-only loads)
    "texture_requests", "texture_sectors", "texture_hits", "texture_misses",
    # host memory (gpuemu/host/): zero-copy traffic over PCIe, managed-memory faults
    "zero_copy_requests", "pcie_read_bytes", "pcie_write_bytes", "page_faults",
    "managed_migrated_bytes",
)


_ZEROS = dict.fromkeys(COUNTERS, 0)
_ADD, _NAMED, _TABLE = range(3)   # Stats._log entries: add(name, value), defer_named, defer_table
_PENDING_MAX = 1 << 18         # values held back before they are summed
_DENSE_MAX = 1 << 16           # (counter, line) cells summed in a dense table
_REDUCE_AT = 1024              # an add_lines batch this long is summed per line at once
_EXACT_MAX = 1 << 20           # values a float64 bincount of 32-bit halves sums exactly


def _dense_sums(keys: np.ndarray, values: np.ndarray) -> tuple:
    """(distinct keys ascending, exact int64 sum of the values of each) for
    small non-negative keys and at most _EXACT_MAX values: bincount in
    float64, the low and high 32 bits of the values summed apart so no sum
    passes 2^53."""
    seen = np.bincount(keys)
    at = np.flatnonzero(seen)
    lo = np.bincount(keys, weights=values & 0xFFFFFFFF)[at].astype(np.int64)
    hi = np.bincount(keys, weights=values >> 32)[at].astype(np.int64)
    return at, (hi << 32) + lo


_UNMADE = MappingProxyType({})     # Stats._totals and _by_line before the first sum


def _int64s(data) -> np.ndarray:
    """An int64 array, or the int64 values of its bytes (a deferred copy)."""
    return np.frombuffer(data, dtype=np.int64) if type(data) is bytes else data


def _line_counts() -> defaultdict:
    """One line's counters (Stats._by_line's values)."""
    return defaultdict(int)


class Stats:
    """Counter totals plus the same counters keyed by source line.

    `add` takes one value; `add_lines` takes numpy arrays of lines and values
    (the batch path of the memory model). Batches are held back and summed
    together when `totals` or `by_line` is read (or 256K values wait):
    a launch that charges a few requests pays one numpy reduction, not one
    per counter.

    `defer_named` holds back a launch's (counter, line, value) sums as the
    int64 array the native settle wrote (and `add`s after it, in order):
    they are added, in the order they came, only when the counters are
    read, so a launch whose counters nobody reads pays no Python per
    counter (RawKernel._launch_of builds the Launch's dicts on first read)."""

    _log_sets: tuple | list = ()         # the name sets of the deferred sums (get)
    _log_adds = MappingProxyType({})     # the deferred adds' totals by name (get)
    # the sums per counter and per line: made at the first sum (`_made`), read as empty before
    _totals: dict = _UNMADE
    _by_line: dict = _UNMADE

    # made when first added to (a kept launch makes a Stats every time, and most add no batch):
    _names = _UNMADE                     # counter name -> index in _pending keys
    _pending: tuple | list = ()          # add_lines: (name index, lines int64[M], values int64[M])
    _held = 0
    _log: tuple | list = ()              # defer_named / defer_table / add after them, in order

    def _keys(self) -> dict:
        """_names, made at the first batch held back."""
        names = self._names
        if names is _UNMADE:
            names = self._names = {}
            self._pending = []
        return names

    @property
    def empty(self) -> bool:
        """Nothing added yet (nor held back)."""
        return not (self._totals or self._by_line or self._pending or self._log)

    @property
    def totals(self) -> dict:
        self._flush()
        return self._made()[0]

    @property
    def by_line(self) -> dict:
        self._flush()
        return self._made()[1]

    def _made(self) -> tuple:
        """(_totals, _by_line), made at the first sum: a kept launch makes a
        Stats every time, and one whose counters are only deferred
        (defer_named, defer_table) and never read needs neither."""
        totals = self._totals
        if totals is _UNMADE:
            totals = self._totals = defaultdict(int)
            self._by_line = defaultdict(_line_counts)
        return totals, self._by_line

    def add(self, name: str, value: int, line: int | None = None) -> None:
        if self._log and line is None:     # after deferred sums: deferred too, in order
            value = int(value)
            self._log.append((_ADD, name, value))
            self._log_adds[name] = self._log_adds.get(name, 0) + value
            return
        self._flush()
        totals, by_line = self._made()
        totals[name] += int(value)
        if line is not None:
            by_line[int(line)][name] += int(value)

    def add_lines(self, name: str, lines: np.ndarray, values: np.ndarray) -> None:
        if self._log:
            self._replay()
        lines = np.asarray(lines, dtype=np.int64)
        if lines.size == 0:
            return
        values = np.asarray(values, dtype=np.int64)
        if (_REDUCE_AT <= lines.size <= _EXACT_MAX and lines.min() >= 0
                and lines.max() < _DENSE_MAX):
            lines, values = _dense_sums(lines, values)     # a big batch: held as per-line sums
        names = self._keys()
        self._pending.append((names.setdefault(name, len(names)), lines, values))
        self._held += lines.size
        if self._held >= _PENDING_MAX:
            self._flush()

    def add_sums(self, items) -> None:
        """(name, line, value) sums, as add_lines of those lines and values
        would add them: the total of every name given (even by 0), the line's
        count where the value is not 0 (the memory model's per-row sums,
        gpuemu/memory/request_table.py)."""
        self._add_rows(items, None)

    def add_named(self, names: Sequence[str], items: Iterable) -> None:
        """add_sums of (names[i], line, value) for each (i, line, value) of `items`."""
        self._add_rows(items, names)

    def _add_rows(self, items, names) -> None:
        if self._log:
            self._replay()
        totals, by_line = self._made()
        at, counts = None, None
        for name, line, v in items:
            if names is not None:
                name = names[name]
            totals[name] += v
            if v:
                if line != at:             # (a row's counters come together: one look-up)
                    at, counts = line, by_line[line]
                counts[name] += v

    def defer_named(self, names: Sequence[str], rows: np.ndarray, name_set: frozenset | None = None,
                    count: int | None = None) -> None:
        """add_named(names, rows.tolist()) when the counters are first read
        (rows int64[M, 3]: name index, line, value; kept as given, so the
        caller hands over its own copy; or with `count`, int64 (or its
        bytes: a copy made in a tenth of numpy's time) whose first 3 * count
        values are the rows). What was added before comes first.
        name_set: frozenset(names), where the caller keeps one (`get` reads it)."""
        self._defer((_NAMED, names, rows if count is None else (rows, count)), name_set)

    def defer_table(self, names: Sequence[str], table: np.ndarray, name_set: frozenset | None = None) -> None:
        """add_named of table int64[lines, len(names)]'s nonzero entries,
        counter by counter, line by line (the order a summed table gives
        them), when the counters are first read (`table` kept as given, or
        its bytes, C order; name_set as defer_named's)."""
        self._defer((_TABLE, names, table), name_set)

    def defer_end(self, named: tuple, table: tuple, added: tuple) -> None:
        """defer_named(*named), defer_table(*table), then add(*added), in
        one call (a launch's end: its memory counters as settled, the
        machine's per-line table and the cycles, every counted launch)."""
        if self._pending or self._log:    # (held back or deferred before: each in its turn)
            self.defer_named(*named)
            self.defer_table(*table)
            self.add(*added)
            return
        names, rows, name_set, count = named
        value = int(added[1])
        self._log = [(_NAMED, names, rows if count is None else (rows, count)), (_TABLE, table[0], table[1]),
                     (_ADD, added[0], value)]
        self._log_sets = [frozenset(names) if name_set is None else name_set,
                          frozenset(table[0]) if table[2] is None else table[2]]
        self._log_adds = {added[0]: value}

    def _defer(self, entry: tuple, name_set: frozenset | None) -> None:
        if self._pending:
            self._flush()
        if not self._log:                 # (the look-ups of a new log: get)
            self._log_sets, self._log_adds, self._log = [], {}, []
        self._log.append(entry)
        self._log_sets.append(frozenset(entry[1]) if name_set is None else name_set)

    def get(self, name: str, default: int = 0) -> int:
        """The total of one counter (as totals.get), the deferred sums
        added only if they hold that counter (streams.place_launch reads
        cycles and page faults this way, before anyone reads the rest)."""
        for names in self._log_sets:
            if name in names:
                self._replay()
                break
        later = self._log_adds.get(name)
        if later is None:
            return self._totals.get(name, default)
        return self._totals.get(name, 0) + later

    def get_each(self, names: tuple, name_set: frozenset) -> list:
        """[get(name, 0) for name in names] (name_set: frozenset(names)), the
        deferred sums added only if they hold one of them: one call where a
        caller reads a few (streams.place_launch, every counted launch)."""
        for held in self._log_sets:
            if not held.isdisjoint(name_set):
                self._replay()
                break
        totals, later, out = self._totals, self._log_adds, []
        for name in names:
            out.append(totals.get(name, 0) + later.get(name, 0))
        return out

    def _replay(self) -> None:
        """Add the deferred sums, in the order they came."""
        log, self._log = self._log, []
        del self._log_sets, self._log_adds    # (the class's empty ones)
        for kind, names, data in log:
            if kind == _ADD:
                self.add(names, data)
            elif kind == _NAMED:
                if type(data) is tuple:      # (int64 values, rows: their first 3 * rows)
                    data = _int64s(data[0])[:3 * data[1]].reshape(-1, 3)
                self.add_named(names, data.tolist())
            else:
                if type(data) is bytes:
                    data = _int64s(data).reshape(-1, len(names))
                cols, rows = np.nonzero(data.T)      # counter by counter, line by line
                self.add_named(names, zip(cols.tolist(), rows.tolist(), data[rows, cols].tolist()))

    def flush(self) -> None:
        """Sum the held-back batches now (a block worker does, on its own
        thread, before the Stats of a batch it prepared is merged)."""
        self._flush()

    def _flush(self) -> None:
        """Sum the held-back batches into totals and by_line, in one pass."""
        if self._log:                     # (never together with held-back batches)
            self._replay()
        if not self._pending:
            return
        pending = self._pending
        self._pending, self._held = [], 0
        names = list(self._names)
        # name index per value: one per add_lines batch
        ids = np.repeat(np.array([p[0] for p in pending], dtype=np.int64), [p[1].size for p in pending])
        lines = np.concatenate([p[1] for p in pending])
        values = np.concatenate([p[2] for p in pending])
        span = int(lines.max()) + 1 if lines.min() >= 0 else 0
        if 0 < span and len(names) * span <= _DENSE_MAX and lines.size <= _EXACT_MAX:
            at, sums = _dense_sums(ids * span + lines, values)
            first_ids, first_lines = np.divmod(at, span)
        else:
            order = np.lexsort((lines, ids))              # by name, then line
            ids, lines, values = ids[order], lines[order], values[order]
            new = np.empty(ids.size, dtype=bool)
            new[0] = True
            new[1:] = (ids[1:] != ids[:-1]) | (lines[1:] != lines[:-1])
            starts = np.flatnonzero(new)
            sums = np.add.reduceat(values, starts)        # exact int64 sums
            first_ids, first_lines = ids[starts], lines[starts]
        totals, by_line = self._made()
        for n, ln, v in zip(first_ids.tolist(), first_lines.tolist(), sums.tolist()):
            name = names[n]
            totals[name] += v                             # every name added gets a total
            if v:
                by_line[ln][name] += v

    def merge(self, other: "Stats") -> None:
        """Add another Stats' counters (e.g. a batch counted on another thread);
        its held-back batches join this one's, summed when read."""
        if self._log:
            self._replay()
        if other._log:
            other._replay()
        names = list(other._names)
        mine = self._keys() if other._pending else self._names
        for idx, lines, values in other._pending:
            self._pending.append((mine.setdefault(names[idx], len(mine)),
                                  lines, values))
        self._held += other._held
        if other._totals or other._by_line:          # what other had summed already
            self._flush()
            totals, by_line = self._made()
            for name, v in other._totals.items():
                totals[name] += v
            for ln, counts in other._by_line.items():
                mine = by_line[ln]
                for name, v in counts.items():
                    mine[name] += v
        if self._held >= _PENDING_MAX:
            self._flush()

    def as_dict(self) -> dict:
        out = dict(_ZEROS)
        out.update(self.totals)
        return out

    def lines_dict(self) -> dict:
        return {ln: dict(c) for ln, c in sorted(self.by_line.items())}



# One Deferred is made at a time: making one replays a Stats' log or merges
# a WorstRequests' later requests, which another thread must not see half done.
_MAKING = threading.RLock()


class Deferred:
    """A value made when first read: `make()` returns fn(*args) (a fresh
    one on every call). A launch's counter dicts are held this way until
    read (api.Launch: a launch of a thousand threads whose counters nobody
    reads pays no Python per counter)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable, *args) -> None:
        self.fn, self.args = fn, args

    def make(self) -> Any:
        with _MAKING:
            return self.fn(*self.args)

    # seen through the instance's __dict__ (vars(launch)), it compares and prints as its value
    def __eq__(self, other) -> bool:
        return self.make() == (other.make() if type(other) is Deferred else other)

    __hash__ = None

    def __repr__(self) -> str:
        return repr(self.make())


def deferred(fn: Callable, args: tuple) -> Deferred:
    """Deferred(fn, *args), made without its __init__'s call (a counted
    launch makes three: RawKernel._launch_of)."""
    d = _new(Deferred)
    d.fn, d.args = fn, args
    return d


_new = object.__new__


def deferred_field(name: str, doc: str = "") -> property:
    """A property for the instance attribute `name` whose value may be a
    Deferred: made (and kept) when first read."""
    def get(self):
        d = self.__dict__
        try:
            v = d[name]
        except KeyError:
            raise AttributeError(name) from None
        if type(v) is Deferred:
            with _MAKING:                 # made once, though two threads read it at once
                v = d[name]
                if type(v) is Deferred:
                    v = d[name] = v.make()
        return v

    def put(self, value) -> None:
        self.__dict__[name] = value

    def drop(self) -> None:
        try:
            del self.__dict__[name]
        except KeyError:
            raise AttributeError(name) from None
    get.__doc__ = doc or f"The {name} (made when first read)."
    return property(get, put, drop)


def made(obj) -> dict:
    """obj's __dict__ with every Deferred in it made and kept (what pickle
    and copy see: plain values, never a Deferred)."""
    d = obj.__dict__
    if any(type(v) is Deferred for v in d.values()):
        with _MAKING:
            for k, v in d.items():
                if type(v) is Deferred:
                    d[k] = v.make()
    return d
