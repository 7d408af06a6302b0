"""A run's trace batches charged by the native passes, their arguments kept.

MemorySystem.prepare and apply charge a batch through the passes' wrappers
(native_banks.shared_pass, native_coalescer.coalesce_pass,
native_cache_walk.cache_walk, native_cycle_sums.cycle_sums,
launch_sums.LaunchSums.fold), each of which builds its argument list,
allocates its outputs and checks its inputs: about a tenth of a
millisecond of Python a batch, more than the warps of a launch of a
thousand threads cost. A batch charged at once on the launching thread
(LaunchRun._charge_records) takes this path instead, in one native call:
a packed_call.Chain of the steps, each a packed_call.PackedCall whose
argument array is built once for the run (the caches' row arrays set
again before a walk where they grew, by this path or another:
`_follow_planes`). The chain copies the records into the run's
columns (trace_columns.py, counting the requests per space), asks a
guard whether the passes serve the batch (below; it also skips the
passes the batch has no request for), zeroes the batch's cycles, runs
the bank pass and the coalescer, asks a second guard whether the caches'
rows hold the walk's lookups (if not, it stops: `_make_room` grows them
and the chain goes on from the walk), walks the caches, sums the cycles
and folds the batch's table into the launch's sums, clearing it for the
next batch. Per batch only its length, its records' address, whether
host memory is in use and its number among the launch's batches are set
(the chain's link values, copied into every step that reads them). The
counters come from the launch's sums at its end (MemorySystem.settle),
as on the other path, so every counter, kept request, cycle and cache
state is what prepare and apply give (tests/test_native_batch.py).
Block workers prepare a batch (the steps up to the second guard) on
their own threads and apply it (the rest) in issue order; what the rest
reads of the records (the fold's costliest requests) is kept apart
(`keep_records`), so a worker writes its next batch over them meanwhile.

A launch's last batch (LaunchRun.finish) goes with the launch's end in
the same native call (`charge_last`): the chain's steps, then the settle
of the launch's sums (MemorySystem.settle's), the busiest SM's cycles
(MemorySystem.finish's) and, for a run renewed next (launch_cache's kept
runs), the native half of MemorySystem.reset: the caches' resets and the
SMs' cycles and the caches' clocks zeroed. Where nothing it depends on
changed since its last call, it sets only the batch's values and calls.

It applies where the passes serve the whole batch: the native passes on
(MemorySystem.native), global and local requests through
native_coalescer and native_cache_walk (MemorySystem._global_native), the
kernel's shared requests all native, no global request with an active
lane in host memory (looked for only while a mapped or managed buffer is
alive: buffers.host_memory_in_use) and no constant request in the batch;
else `charge` returns False (the columns hold the records) and the
caller takes prepare and apply.
"""
from __future__ import annotations

import mmap

import numpy as np

from gpuemu.host.buffers import MANAGED_BASE, MAPPED_BASE, host_memory_in_use
from gpuemu.host.buffers import RANGE as HOST_RANGE
import llvmlite.ir as ll

from gpuemu.jit import abi
from gpuemu.jit.engine import address
from gpuemu.jit.packed_call import CALL, SKIP, Chain, PackedCall
from gpuemu.jit.packed_call import GUARD as GUARD_MODE

from . import launch_sums, native_banks, native_cache_walk, native_coalescer, native_cycle_sums, request_table
from .native_ir import I1, I8, I32, Fn, c
from .sector_store import SectorStore
from .trace import SPACE_CODES
from .trace_columns import TraceColumns

GLOBAL, SHARED, LOCAL, CONST = (SPACE_CODES[k] for k in ("global", "shared", "local", "constant"))
_ADDR_OFFSET = abi.TRACE_DTYPE.fields["addr"][1]
WARP = 32
LINE_COUNTER_SET = frozenset(abi.LINE_COUNTERS)     # the machine's per-line counters (Stats.get looks them up)


ZERO_SYMBOL, ZERO_ARGS = "gpuemu_batch_zero", ("p", "n", "rows", "stride")
GUARD_SYMBOL = "gpuemu_batch_guard"
GUARD_ARGS = ("counts", "shared_native", "global_native", "host", "no_shared", "no_traced", "n", "space", "mask",
              "addr", "addr_stride")
ROOM_SYMBOL = "gpuemu_batch_room"
ROOM_ARGS = ("start", "n") + tuple(f"{c}_{a}" for c in ("l1", "l2") for a in ("meta", "cap", "sets"))


def _build_zero_ir() -> str:
    """zero(p, n, rows, stride): p[r * stride + i] = 0 for r < rows, i < n
    (a batch's cycles and latency, before the passes add to them)."""
    m = ll.Module(name="batch_zero")
    f = Fn(m, ZERO_SYMBOL, ZERO_ARGS)
    A, b = f.arg, f.b
    with f.loop(0, A["rows"]) as r:
        base = b.mul(r, A["stride"])
        with f.loop(0, A["n"]) as i:
            f.st(f.ptr("p"), b.add(base, i), 0)
    f.finish()
    return str(m)


def _build_guard_ir() -> str:
    """guard(counts, ...): -1 where the passes do not serve the batch (a
    constant request; shared requests not all native; global or local
    requests not served natively, or, with host memory in use, a global
    request with an active lane's address in host memory: buffers.
    kind_of_addresses' ranges), else the chain steps to skip: no_shared
    without shared requests, plus no_traced without global and local
    requests."""
    m = ll.Module(name="batch_guard")
    f = Fn(m, GUARD_SYMBOL, GUARD_ARGS)
    A, b = f.arg, f.b
    counts = f.ptr("counts")
    shared, glob, const = (f.ld(counts, c(k)) for k in (SHARED, GLOBAL, CONST))
    traced = b.add(glob, f.ld(counts, c(LOCAL)))
    some = lambda v: f.cmp("!=", v, 0)  # noqa: E731
    refuse = b.or_(some(const), b.and_(some(shared), f.cmp("==", A["shared_native"], 0)))
    refuse = b.or_(refuse, b.and_(some(traced), f.cmp("==", A["global_native"], 0)))
    with f.if_(refuse):
        f.ret(-1)
    with f.if_(b.and_(some(glob), some(A["host"]))):      # the global requests' lanes, in host memory?
        space, mask, addr = f.ptr("space", I8), f.ptr("mask", I32), f.ptr("addr")
        with f.loop(0, A["n"]) as i:
            with f.if_(f.cmp("==", f.ld(space, i), c(GLOBAL))):
                lanes, row = f.ldu(mask, i), b.mul(i, A["addr_stride"])
                with f.loop(0, WARP) as lane:
                    a = f.ld(addr, b.add(row, lane))
                    host = b.or_(b.icmp_unsigned("<", b.sub(a, c(MAPPED_BASE)), c(HOST_RANGE)),
                                 b.icmp_unsigned("<", b.sub(a, c(MANAGED_BASE)), c(HOST_RANGE)))
                    with f.if_(b.and_(host, b.trunc(b.lshr(lanes, lane), I1))):
                        f.ret(-1)
    skip = b.select(some(shared), c(0), A["no_shared"])
    f.ret(b.or_(skip, b.select(some(traced), c(0), A["no_traced"])))
    f.finish()
    return str(m)


def _build_room_ir() -> str:
    """room(start, n, caches): -1 where a cache's rows might not hold the
    walk's start[n] lookups (native_lru.LruState.reserve would grow them:
    min(rows in use + start[n], sets) > rows it holds), else 0. A cache
    whose meta is 0 is absent."""
    m = ll.Module(name="batch_room")
    f = Fn(m, ROOM_SYMBOL, ROOM_ARGS)
    A, b = f.arg, f.b
    asked = f.ld(f.ptr("start"), A["n"])
    for cache in ("l1", "l2"):
        with f.if_(f.cmp("!=", A[f"{cache}_meta"], 0)):
            need = f.min(b.add(f.ld(f.ptr(f"{cache}_meta"), c(0)), asked), A[f"{cache}_sets"])
            with f.if_(f.cmp(">", need, A[f"{cache}_cap"])):
                f.ret(-1)
    f.ret(0)
    f.finish()
    return str(m)


_BEST, _BEST_AT = request_table.COL["best"], request_table.COL["best_at"]


# private anonymous memory: pages given back read as zero (Linux; elsewhere they are kept)
_PRIVATE = dict(flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) if hasattr(mmap, "MAP_PRIVATE") else {}
_GIVE_BACK = getattr(mmap, "MADV_DONTNEED", None)


class KeptRecords:
    """Room for `capacity` trace records in anonymous memory, mapped as it is
    written, holding only some of them (NativeBatch.keep_records: a batch's
    costliest requests, at their own places, where the fold reads them).
    Once the copies since its pages were last given back would have mapped
    more than PAGES distinct pages, they are given back (the room reads as
    zero again) before the next copy: it holds at most that many pages and
    those of one batch's copy.

    Distinct pages, not pages touched: a batch's costliest requests are
    mostly at the same few places (the first request of each instruction:
    page 0 of every batch of vecadd and the transpose), and counted per
    touch the room was given back every third copy, two MADV_DONTNEED a
    launch of two workers. Each flushes the TLB of every core running the
    process (an interrupt to the other worker's core). Two workers' vecadd
    1M with counters, paired ratio, before and after in turns on our 2-core
    machine: 1.46x/1.61x, 1.57x/1.63x, 1.54x/1.58x, 1.48x/1.58x."""
    PAGES = 16

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._map = mmap.mmap(-1, max(capacity, 1) * abi.TRACE_DTYPE.itemsize, **_PRIVATE)
        self.records = np.frombuffer(self._map, dtype=abi.TRACE_DTYPE)
        self.at = address(self.records)
        self.mapped: set = set()          # pages the copies since the last give-back wrote

    def copy(self, records: np.ndarray, at: np.ndarray) -> np.ndarray:
        """records[at] copied to the same places here (the last copy's are
        kept until the next); the room, as records."""
        pages = _pages_of(at.tolist())
        mapped = self.mapped
        if mapped and not pages <= mapped and len(mapped | pages) > self.PAGES and _GIVE_BACK is not None:
            self._map.madvise(_GIVE_BACK)
            mapped.clear()
        self.records[at] = records[at]
        mapped |= pages
        return self.records

    @property
    def nbytes(self) -> int:
        """Bytes of its pages in use at most."""
        return min(len(self.mapped) * mmap.PAGESIZE, len(self._map))


def _pages_of(at: list) -> set:
    """The pages records at these places lie on (a record may straddle two)."""
    size, page = abi.TRACE_DTYPE.itemsize, mmap.PAGESIZE
    return {p for a in at for p in (a * size // page, ((a + 1) * size - 1) // page)}


def _rules(ms) -> tuple:
    """What a NativeBatch's passes take from a memory system beside its own
    arrays: two with equal rules differ only in those (NativeBatch._rebind)."""
    return (ms.mem, ms.preset, ms._row_kind, ms._op, ms.native, ms.l1_global_loads, ms.l1_present,
            ms.readonly_path)


def _same_rules(a: tuple, b: tuple) -> bool:
    """_rules(...) of two memory systems alike: the same objects, equal flags."""
    return all(x is y for x, y in zip(a[:4], b[:4])) and a[4:] == b[4:]


def zero_call(p: int, n: int, rows: int = 1, stride: int = 0) -> PackedCall:
    """The native zeroing of `rows` rows of n int64 at address p, `stride`
    int64 apart (a batch's cycles and latency; a memory system's cycles per
    SM, MemorySystem.reset), its arguments kept: call it to zero them."""
    return PackedCall(ZERO_SYMBOL, _build_zero_ir, ZERO_ARGS, dict(p=p, n=n, rows=rows, stride=stride))


# the chain's steps (NativeBatch._chain), in order; prepare runs them up to ROOM, apply from ROOM
FILL, GUARD, ZERO, SHARED_PASS, COALESCE, ROOM, WALK, CYCLES, FOLD = range(9)
# and after them in the chain of a launch's last batch (NativeBatch.charge_last), then the
# caller's per-line counters and issue counts zeroed for its next launch (ZEROED), then the
# memory system's reset: the caches' (L1's first, where there is one), the cycles
SETTLE, BUSIEST, ZEROED = FOLD + 1, FOLD + 2, FOLD + 3
RESET = ZEROED + 2


class Steady:
    """What charge_last set its arguments and chain up for, so that a next
    call where none of it changed only sets the batch's values: the memory
    system, its sums, their kernel and settle call, whether the chain holds
    the resets, the busiest SM call's arguments then (MemorySystem.
    busiest_args, (issue counts, divisor): a finish in between re-points
    them) and the caller's per-line counters (a reset zeroes them)."""
    __slots__ = ("ms", "sums", "kernel", "settle", "resets", "busiest", "counters", "lines")

    def __init__(self, ms, sums, resets: bool, counters: np.ndarray | None) -> None:
        self.ms, self.sums, self.kernel, self.settle = ms, sums, sums.kernel, sums._settle
        self.resets, self.busiest, self.counters = resets, ms.busiest_args, counters
        self.lines = memoryview(counters) if counters is not None else None     # (copied as bytes)


class NativeBatch:
    """The passes of one run's memory system `ms` for a kernel of `instrs`,
    on batches of up to `capacity` records (grown when one is larger)."""

    def __init__(self, ms, instrs, capacity: int) -> None:
        self.cols = TraceColumns(capacity)
        self.capacity = 0
        self._sectors = SectorStore()     # the coalescer's output (_build)
        self.bind(ms, instrs)

    def bind(self, ms, instrs) -> None:
        """Serve `ms` charging `instrs` (a run's new memory system: the
        buffers are kept; the passes' arguments are made again, or where
        `ms` has the rules of the one before, only its own arrays' set)."""
        old = self.__dict__.get("ms")
        ms._tables(instrs)
        rules = self.__dict__.get("_rules") if old is None else _rules(old)
        if (rules is not None and instrs is self.instrs and self.capacity == self.cols.capacity
                and _same_rules(_rules(ms), rules)):
            return self._rebind(ms)
        self.ms, self.instrs = ms, instrs
        if getattr(self, "table", None) is None or self.table.shape[0] != request_table.NSP * max(len(ms._op), 1):
            self.table = request_table.new_table(len(ms._op))      # the batch's, cleared by the fold
        self.sm_cycles = ms.sm_cycles
        self.global_native = ms._global_native()
        self.shared_native = bool(ms._shared_all_native)
        self._build(self.cols.capacity)

    def let_go(self) -> None:
        """Idle (a block worker's kept NativeBatch between launches): drop the
        memory system it served, so its caches' states (megabytes of
        record_pool storage) go back to the pool when the launch's memory
        system dies and the next launch's caches take them, already
        mapped; kept, they made the next launch's states fresh memory (a
        burst of page faults, about one launch of two workers in four).
        `bind` then rebinds as to a memory system of the same rules."""
        ms = self.__dict__.get("ms")
        if ms is None:
            return
        self._rules = _rules(ms)
        self.ms = self.sm_cycles = None
        self._states, self._ptrs, self._cache_slots, self._counted_slots = [], [], [], []
        self._forget_last()                # (its resets, cycles and settle were the old one's)

    def _rebind(self, ms) -> None:
        """bind to `ms`, whose rules, kernel tables and cache geometry are
        those of the memory system served before."""
        self.ms, self.sm_cycles = ms, ms.sm_cycles
        self._forget_last()                # (its cycles and settle were the old one's)
        skip, cycles = address(ms._skip), address(ms.sm_cycles)
        for argv, k, of_cycles in self._ms_arrays:
            argv[k] = cycles if of_cycles else skip
        if self.global_native:
            self._use_clock(ms)
            self.walk["clock"] = address(self.clock)
            self._bind_caches(ms)
        sums = self.__dict__.get("_fold_into")
        if sums is not None:
            ms.adopt_sums(sums)            # the launch's sums (settled, clear) serve the new one

    def _use_clock(self, ms) -> None:
        """The walk counts the caches' clocks (L1's, L2's) in `ms`'s one array
        (MemorySystem.walk_clock), shared by every NativeBatch serving it: where
        block workers' NativeBatches take turns, the caches were counted in
        the other's clock, so each apply read them back (SectoredCache._sync,
        `_before_apply`) and pointed them at its own again (`_after`)."""
        self.clock = clock = ms.walk_clock
        self._clock_m = memoryview(clock)

    def _bind_caches(self, ms) -> None:
        """The walk's cache arguments: `ms`'s L1 (if any) and L2, their states
        made now; the room guard's."""
        self._cache_slots = []
        self.room["l1_meta"] = 0
        for name, cc in (("l1", ms.l1), ("l2", ms.l2)):
            if cc is None:
                continue
            slot = self.walk.at[f"{name}_row_of"]
            args = native_cache_walk._cache_args(cc, 0)
            self.walk.argv[slot:slot + len(args)] = args
            st = cc._state
            self.room[f"{name}_meta"], self.room[f"{name}_sets"] = st._fixed[1], st.num_sets
            self.room[f"{name}_cap"] = st.planes.shape[1]
            self._cache_slots.append((cc, slot, name))
        self._states = [cc._state for cc, _, _ in self._cache_slots]
        # (cache, k: its clock's index in clock, its state, i: the state's index in _states)
        self._counted_slots = [(cc, 0 if name == "l1" else 1, cc._state, i)
                               for i, (cc, _, name) in enumerate(self._cache_slots)]
        self._forget_last()                # (its resets are those of these caches)
        self._ptrs = [st._ptrs for st in self._states]

    def serves(self, ms, instrs) -> bool:
        """Whether this serves `ms` charging `instrs` (the run's memory system may be new)."""
        return (ms is self.ms and instrs is self.instrs and ms.tables_for is instrs
                and ms.sm_cycles is self.sm_cycles)

    @property
    def nbytes(self) -> int:
        """Bytes of its buffers and of the launch sums it folds into (a kept
        run's budget counts them; it keeps those sums when its memory system goes)."""
        sums = self.folds_into
        return self.buffer_nbytes + (sums.nbytes if sums is not None else 0)

    @property
    def folds_into(self):
        """The launch sums its fold adds to (kept with it), or None: several
        NativeBatches may share them (worker_copy.kept_bytes counts them once)."""
        return self.__dict__.get("_fold_into")

    @property
    def buffer_nbytes(self) -> int:
        """Bytes of its own buffers (its batch columns, tables and sector store)."""
        d = self.__dict__
        own = d.get("_own_bytes")
        if own is None or self.cols.capacity != self.capacity:    # (set once per _build)
            own = self.cols.nbytes + sum(a.nbytes for a in (self._cl, self.start, self._ks, self.table))
            d["_own_bytes"] = own if self.cols.capacity == self.capacity else None
        kept = self._kept
        return own + self._sectors.nbytes + (kept.nbytes if kept is not None else 0)

    def _build(self, capacity: int) -> None:
        """The buffers for batches of `capacity` records (kept if they are
        that size), the passes' argument arrays and their chain."""
        ms, m = self.ms, self.ms.mem
        self._own_bytes = None             # (nbytes: its buffers may change here)
        if capacity != self.capacity:
            self.capacity = capacity
            self._cl = np.zeros((2, capacity), dtype=np.int64)     # cycles, latency: zeroed together
            self.cycles, self.latency = self._cl
            self.start = np.zeros(capacity + 1, dtype=np.int64)
            self._start_m = memoryview(self.start)
            self._ks = np.zeros((2, capacity), dtype=np.int64)     # warp runs' keys, sums: copied together
            self.keys, self.sums = self._ks
        a = self.cols.addrs
        common = dict(n=0, addr=0, instr=a["instr"], space=a["space"], mask=a["mask"], sm=a["sm"], block=a["block"],
                      warp=a["warp"], op_t=address(ms._op), size_t=address(ms._size), skip_t=address(ms._skip),
                      addr_stride=abi.TRACE_DTYPE.itemsize // 8, cycles=address(self.cycles),
                      latency=address(self.latency), table=address(self.table))
        self.shared = PackedCall(native_banks.PASS_SYMBOL, native_banks._build_pass, native_banks.PASS_ARGS, dict(
            common, shared=SHARED, bank_shift=m.shared_bank_bytes.bit_length() - 1, banks=m.banks,
            row_shift=m.shared_row_bytes.bit_length() - 1, cycles_per_wavefront=m.cycles_per_shared_wavefront,
            cycles_per_atomic=m.cycles_per_atomic_serialization, latency0=m.shared_latency))
        passes = [self.shared]
        self.zero = zero_call(address(self._cl), 0, rows=2, stride=capacity)
        self.room = PackedCall(ROOM_SYMBOL, _build_room_ir, ROOM_ARGS, dict(
            {f"{c}_{a}": 0 for c in ("l1", "l2") for a in ("meta", "cap", "sets")}, start=address(self.start), n=0))
        if self.global_native:
            self.coalesce = PackedCall(native_coalescer.SYMBOL, native_coalescer._build_ir, native_coalescer.ARGS, dict(
                common, glob=GLOBAL, local=LOCAL, ib=m.local_interleave_bytes,
                ib_log=m.local_interleave_bytes.bit_length() - 1, window=m.local_bytes_per_thread_window * WARP,
                cycles_per_atomic=m.cycles_per_atomic_serialization, start=address(self.start), sec=0))
            l1 = ms.l1
            self._use_clock(ms)
            self.walk = PackedCall(native_cache_walk.SYMBOL, native_cache_walk._build_ir, native_cache_walk.ARGS, dict(
                common, glob=GLOBAL, local=LOCAL, start=address(self.start), kind=address(ms._row_kind),
                nsm=ms.preset.num_sms,
                k1_log=(m.l1_sector_bytes // 32 if l1 is not None else 1).bit_length() - 1,
                spl1_log=(m.l1_line_bytes // m.l1_sector_bytes if l1 is not None else 1).bit_length() - 1,
                spl2_log=ms.l2.sectors_per_line.bit_length() - 1,
                cl1=m.cycles_per_l1_sector, cl2=m.cycles_per_l2_sector, cdram=m.cycles_per_dram_sector,
                lat1=m.l1_hit_latency, lat2=m.l2_hit_latency, latdram=m.dram_latency, clock=address(self.clock),
                sec=0, **{f"{c}_{a}": 0 for c in ("l1", "l2") for a in native_cache_walk.CACHE_ARGS}))
            passes += [self.coalesce, self.walk]
            # kept: its pages mapped as written (sector_store.py); its bound, the batch's
            sec = self._sectors.for_batch(capacity * 2 * WARP * max(1, ms._max_words))
            self.coalesce["sec"] = self.walk["sec"] = address(sec)
            self._bind_caches(ms)
        self.cycle_sums = PackedCall(native_cycle_sums.SYMBOL, native_cycle_sums._build_ir, native_cycle_sums.ARGS,
                                     dict(common, nsm=self.sm_cycles.size, sm_cycles=address(self.sm_cycles),
                                          keys=address(self.keys), sums=address(self.sums)))
        passes.append(self.cycle_sums)
        # where the passes take the memory system's own arrays (_rebind sets them)
        self._ms_arrays = [(p.argv, p.at[name], name == "sm_cycles") for p in passes
                           for name in ("skip_t", "sm_cycles") if name in p.at]
        self.guard = PackedCall(GUARD_SYMBOL, _build_guard_ir, GUARD_ARGS, dict(
            counts=address(self.cols.counts), shared_native=int(self.shared_native),
            global_native=int(self.global_native), host=0, n=0, space=a["space"], mask=a["mask"], addr=0,
            addr_stride=abi.TRACE_DTYPE.itemsize // 8,
            no_shared=1 << (SHARED_PASS - GUARD - 1),
            no_traced=sum(1 << (k - GUARD - 1) for k in (COALESCE, ROOM, WALK))))
        self._fold = None
        # one native call a batch: the steps a batch without shared, or
        # global and local, requests skips (the guard's no_shared,
        # no_traced), and those without a pass here, are not called; the
        # fold is set per batch (_folder: the memory system's launch sums)
        stand_in = PackedCall(launch_sums.SYMBOL, launch_sums._build_ir, launch_sums.ARGS,
                              dict.fromkeys(launch_sums.ARGS, 0))
        g = self.global_native
        steps = [self.cols.call, self.guard, self.zero, self.shared, self.coalesce if g else self.shared,
                 self.room, self.walk if g else self.shared, self.cycle_sums, stand_in]
        modes = [CALL, GUARD_MODE, CALL, CALL, CALL if g else SKIP, GUARD_MODE if g else SKIP,
                 CALL if g else SKIP, CALL, SKIP]
        # per batch: its length and records' address (into every step that reads them), host
        # memory in use (the guard's), the batch's number among the launch's (the fold's)
        passes = (SHARED_PASS, COALESCE, WALK, CYCLES)
        self._links = dict(
            n=[(k, "n", 0) for k in (FILL, GUARD, ZERO, ROOM) + passes],
            records=[(FILL, "records", 0)] + [(k, "addr", _ADDR_OFFSET) for k in (GUARD,) + passes + (FOLD,)],
            host=[(GUARD, "host", 0)], number=[(FOLD, "number", 0)])
        self._chain = chain = Chain(steps, modes, links=self._links)
        self._modes = modes
        self._forget_last()
        self._values = memoryview(chain.values)    # (set as Python ints: no numpy scalar)
        self._n_at, self._records_at, self._host_at, self._number_at = (
            chain.slot(name) for name in ("n", "records", "host", "number"))

    _fold_into = None                      # the launch sums the fold adds to (`_folder`)
    _last = _steady = None                 # the chain of a launch's last batch (charge_last), its Steady

    def _forget_last(self) -> None:
        """The chain of a launch's last batch and what charge_last set it up
        for made again at the next call (its steps or their arguments change)."""
        self._last = self._steady = None

    def _folder(self, sums: launch_sums.LaunchSums) -> PackedCall:
        """The fold of the batch's table into `sums` (the memory system's,
        kept until it changes), the chain's last step."""
        if self._fold is None or self._fold_into is not sums:
            names = launch_sums.ARGS
            self._fold = PackedCall(launch_sums.SYMBOL, launch_sums._build_ir, names,
                                    dict(zip(names, sums.fold_args(self.table)), mask=self.cols.addrs["mask"],
                                         addr_stride=abi.TRACE_DTYPE.itemsize // 8))
            self._fold_into = sums
            self._modes[FOLD] = CALL
            for chain in (self._chain, self._last):
                if chain is not None:
                    chain.set_step(FOLD, self._fold, CALL)
        return self._fold

    def charge(self, records: np.ndarray, at: int | None = None) -> bool:
        """Charge trace records (abi.TRACE_DTYPE, the next in issue order) to
        the memory system, as prepare and apply would (in one native call);
        False (nothing charged; the columns hold the records) where this
        path does not serve the batch (module docstring). at: the records'
        address where the caller knows it (a trace buffer's: numpy takes
        microseconds to tell that of a structured array)."""
        if not self._start(records, at):
            return False
        if self._n == 0:
            return True
        self._before_apply()
        stopped = self._chain()
        if stopped == GUARD + 1:
            return False
        self._after(stopped)
        return True

    def charge_last(self, ms, instrs, n: int, at: int, stats, issue: np.ndarray, schedulers: int,
                    reset: bool = False, counters: np.ndarray | None = None, ended: bool = False):
        """The launch's last batch, n > 0 trace records (abi.TRACE_DTYPE) at
        address `at`, charged as `charge` charges it, then what the end of
        the launch adds, as MemorySystem.settle and finish do: the launch's
        sums settled into `stats` and the memory system's worst requests,
        and the cycles (returned, not added: max over SMs of the memory
        cycles + issue // schedulers, MemorySystem.busiest_call's), in one
        native call. counters: the machine's per-line counters (int64
        [lines, abi.N_LINE_COUNTERS], C-contiguous), copied first, deferred
        into `stats` after the settled sums and followed by the cycles,
        added (Stats.defer_end: a launch's end in one call). reset: then
        those counters and `issue` zeroed (a kept run's, for its next
        launch), and the native half of MemorySystem.reset too (cold caches,
        no cycles: the run is renewed for a next launch, whose reset does
        the rest) where the walk's caches are all the memory system has.
        None (nothing charged or settled) where this path does not serve
        the batch (or does not serve `ms` charging `instrs`, `serves`): the
        caller charges it as before. (What it set before the guard stopped
        it only makes later calls do more: the memory system's next reset
        whole, `charging`; the clocks reread; the columns' records
        forgotten; the next call not steady.) Where nothing it depends on
        changed since its last call (`Steady`) it only sets the batch's
        values and calls. ended: the launch's end is returned instead, as
        a launch_sums.Ended (deferred into `stats` and the worst requests
        when first read: a kept launch's counters, RawKernel._launch_of)."""
        steady = self._steady
        sums = ms.sums
        if (steady is None or steady.ms is not ms or steady.sums is not sums or sums.kernel is not steady.kernel
                or steady.counters is not counters or sums._settle is not steady.settle
                or ms.busiest_args is not steady.busiest or steady.busiest[0] is not issue     # (a finish
                or steady.busiest[1] != schedulers        # re-points it; 0 schedulers, divisor 1: set up again)
                or instrs is not self.instrs or ms.tables_for is not instrs or not ms.native
                or n > self.capacity or self.cols.capacity != self.capacity):
            steady = self._steady = self._ready_last(ms, instrs, n, issue, schedulers, counters)
            if steady is None:
                return None
            sums = steady.sums
        self.cols.holds = None             # (the columns will hold records no array is known as)
        self._set_batch(n, at)
        placed = self._before_apply(sums)
        chain = self._last
        stop = (None if steady.resets else RESET) if reset else ZEROED
        table = steady.lines.tobytes() if counters is not None else None    # (before the chain zeroes them)
        stopped = chain(0, stop)
        if stopped == GUARD + 1:
            self._steady = None            # (the next call looks everything up again)
            return None
        if stopped or stop is not None or not placed:
            self._after(stopped, chain, stop, stop is not None)
        else:                              # (_after's part where the caches count in this one's clock
            self._records = None           # already; the settle below leaves no batch folded)
            if self.global_native and not chain.skipped(WALK):
                self._sectors.wrote(self._start_m[n])
        kernel = steady.kernel
        results = chain.results
        cycles = results[BUSIEST]
        end = sums.ended(results[SETTLE], stats, ms.worst, kernel[1], kernel[2],    # (no batch left folded)
                         None if table is None else ((abi.LINE_COUNTERS, table, LINE_COUNTER_SET), ("cycles", cycles)))
        if stop is None:
            ms.reset_native_done(self.clock)
        if ended:
            return end
        end.made()
        return cycles

    def _ready_last(self, ms, instrs, n: int, issue: np.ndarray, schedulers: int,
                    counters: np.ndarray | None) -> Steady | None:
        """charge_last's arguments and chain set up for `ms` charging
        `instrs`, batches of n records, the busiest SM's call of `issue`
        and `schedulers` and the per-line `counters` (a reset zeroes them
        and `issue`), and what they depend on (a Steady); None where this
        path does not serve them."""
        self._steady = None
        if not ms.native or not self.serves(ms, instrs):
            return None
        zero = (counters, issue) if counters is not None else ()
        self._fit(n)
        sums = ms.launch_sums()
        self._folder(sums)
        settle, busiest = ms.settle_call(), ms.busiest_call(issue, schedulers)
        chain = self._last
        if chain is None:
            chain = self._last_chain(settle, busiest)
        steps = chain.steps
        if steps[SETTLE] is not settle:
            chain.set_step(SETTLE, settle)
        if steps[BUSIEST] is not busiest:
            chain.set_step(BUSIEST, busiest)
        for k in range(RESET - ZEROED):    # (unused: zeroes nothing)
            a = zero[k] if k < len(zero) else None
            if a is not None and (a.dtype != np.int64 or not a.flags.c_contiguous):
                raise ValueError("charge_last zeroes C-contiguous int64 arrays")
            steps[ZEROED + k]["p"], steps[ZEROED + k]["n"] = (address(a), a.size) if a is not None else (0, 0)
        return Steady(ms, sums, len(steps) > RESET, counters)

    def _last_chain(self, settle: PackedCall, busiest: PackedCall) -> Chain:
        """The chain of charge_last: the batch's steps, the settle, the
        busiest SM's cycles, the caller's arrays' zeroing and (where the
        walk's caches are all the memory system holds) the caches' resets,
        fed the rows' address the walk reads, and the zeroing of the SMs'
        cycles and the caches' clocks."""
        ms = self.ms
        steps = self._chain.steps + [settle, busiest] + [zero_call(0, 0) for _ in range(RESET - ZEROED)]
        modes, copies = self._modes + [CALL] * (RESET - SETTLE), []
        if self.global_native and ms.ro_cache is None:
            copies += [(len(steps) + k, "tags", WALK, f"{name}_tags") for k, (_, _, name) in enumerate(self._cache_slots)]
            steps += ms.reset_steps(tuple(cc for cc, _, _ in self._cache_slots)) + [zero_call(address(self.clock), 2)]
            modes += [CALL] * (len(steps) - len(modes))
        self._last = Chain(steps, modes, links=self._links, values=self._chain.values, copies=copies)
        return self._last

    def prepare(self, records: np.ndarray) -> bool:
        """The part of `charge` that no earlier batch changes (the columns,
        the bank and coalescing passes), into this object's buffers: block
        workers prepare their batches in parallel, each in its own
        NativeBatch, and `apply` them in issue order. False: this path does
        not serve the batch (the caller prepares and applies it the
        MemorySystem way; the columns hold the records). The records stay
        in use until `apply`."""
        if not self._start(records):
            return False
        if self._n == 0:
            return True
        return self._chain(0, ROOM) != GUARD + 1

    _kept = None                           # keep_records' copy of the records apply reads

    def keep_records(self) -> None:
        """After `prepare`: what `apply` reads of the batch's records (the
        fold's: each table row's costliest request, at its best_at) copied
        into this object's own room for a batch, so the records may be
        written over before `apply` (a block worker writes its next batch
        into the same trace buffer, which its core's caches hold, where it
        held each batch's buffer until the ordered step charged it: 2 to
        6 buffers a worker). The room is mapped lazily: a few pages, those
        of the records copied (`KeptRecords`)."""
        records = self._records
        if records is None or not self._n:
            return
        t = self.table
        at = t[t[:, _BEST] >= 0, _BEST_AT]
        kept = self._kept
        if kept is None or kept.capacity < self.capacity:
            kept = self._kept = KeptRecords(self.capacity)
        self._records = kept.copy(records, at)
        self._values[self._records_at] = self.cols.records_at = kept.at
        self.cols.holds = None

    def _start(self, records: np.ndarray, at: int | None = None) -> bool:
        """Set the chain's arguments for a batch of `records` at address
        `at` (None: not known) (False: the native passes are off)."""
        ms, cols = self.ms, self.cols
        if not ms.native:
            cols.fill(records)             # (the caller's batch reads them there)
            return False
        n = records.shape[0]
        cols.holds = records               # (the chain's first step copies them into the columns)
        if records.dtype != abi.TRACE_DTYPE or not records.flags.c_contiguous:
            records, at = np.ascontiguousarray(records, dtype=abi.TRACE_DTYPE), None
        self._fit(n)
        self._n, self._records = n, records
        if at is None:
            at = address(records)
        if n == 0:
            cols.records_at = at
            cols.call["n"], cols.call["records"] = n, at
            cols.call()                    # (counts: zero)
            return True
        self._set_batch(n, at)
        return True

    def _fit(self, n: int) -> None:
        """Columns and buffers for a batch of n records."""
        cols = self.cols
        if n > cols.capacity:              # grown: new columns, larger buffers, a new chain
            cols._grow(max(n, 2 * cols.capacity))
        if cols.capacity != self.capacity:  # (or grown by a batch charged the other way)
            self._build(cols.capacity)

    def _set_batch(self, n: int, at: int) -> None:
        """The chain's values of a batch of n records at address `at` (it
        copies them into its steps' arguments): its length, the records'
        address, whether host memory is in use (the guard's)."""
        v = self._values
        v[self._n_at] = self._n = n
        v[self._records_at] = self.cols.records_at = at
        v[self._host_at] = host_memory_in_use()

    def _before_apply(self, sums: launch_sums.LaunchSums | None = None) -> bool:
        """The arguments of the apply steps: the caches' planes and clocks,
        the fold's (sums: the memory system's launch sums, the fold's
        already, where the caller knows them). Whether every cache counted
        in this one's clock already (`_after` need not point them at it)."""
        ms = self.ms
        ms.charging()                      # (a batch after MemorySystem.reset_native_done: reset does all)
        placed = True
        if self.global_native:
            ptrs, clock, own = self._ptrs, self._clock_m, self.clock
            for cc, k, st, i in self._counted_slots:
                if st._ptrs is not ptrs[i]:     # (moved: _follow_planes, once)
                    self._follow_planes()
                counted = cc._counted_in        # each cache on its own: a batch charged the other
                if counted is None or counted[0] is not own:     # way may have looked up L1 alone
                    clock[k] = cc._t            # (mapped loads); else clock holds its
                    placed = False
        if sums is None:
            sums = ms.launch_sums()
            self._folder(sums)
        self._values[self._number_at] = sums.batches
        return placed

    def apply(self) -> None:
        """The rest of `charge` for the batch `prepare` took, the next in issue
        order: the caches, the cycles per SM and warp, the fold into the
        launch's sums."""
        if self._n == 0:
            self._records = None
            return
        self._before_apply()
        self._after(self._chain(ROOM))

    def _after(self, stopped: int, chain: Chain | None = None, stop: int | None = None,
               parts: bool = True) -> None:
        """After the chain (the batch's, or `chain` up to `stop`) ran up to
        its end or to the room guard (`stopped`): the caches grown and the
        rest run; the caches' counts, the warps' cycles (unless not
        `parts`: the chain reset the memory system's), the batch counted
        as folded."""
        chain, ms = chain or self._chain, self.ms
        if stopped == ROOM + 1:
            self._make_room(self._start_m[self._n])
            chain(WALK, stop)
        self._records = None
        if self.global_native and not chain.skipped(WALK):     # the walk ran: its caches' counts
            self._sectors.wrote(self._start_m[self._n])
            clock = self.clock
            for cc, k, _, _ in self._counted_slots:
                if cc._counted_in is None or cc._counted_in[0] is not clock:
                    cc.counted_in(clock, k)
        if parts:
            ms.add_warp_runs(self._ks[:, :chain.result(CYCLES)].copy())     # (keys, sums) of the warps' runs
        self._fold_into.batches += 1

    def _make_room(self, m: int) -> None:
        """Room in the caches' rows for m more lookups (their planes may move)."""
        for st in self._states:
            st.reserve(m)
        self._follow_planes()

    def _follow_planes(self) -> None:
        """The walk's plane pointers and the room guard's capacities made the
        caches' own again where their planes moved: grown by this object's
        `_make_room`, or by a batch charged another way since (prepare and
        apply: a __constant__ request, host memory in use; another
        NativeBatch on the same memory system: block workers), which gave the
        old planes back to record_pool."""
        k, ptrs = 0, self._ptrs            # (a loop of no calls: it runs before every walk)
        for st in self._states:
            if st._ptrs is not ptrs[k]:
                _, slot, name = self._cache_slots[k]
                ptrs[k] = st._ptrs             # (None: released, launch_plan.keep_memory_system)
                self.walk.argv[slot + 1:slot + 4] = st._ptrs or (0, 0, 0)
                self.room[f"{name}_cap"] = st.planes.shape[1]
            k += 1
