"""A run's trace batches charged by the native passes, their arguments kept.

MemorySystem.prepare and apply charge a batch through the passes' wrappers
(native_banks.shared_pass, native_coalescer.coalesce_pass,
native_cache_walk.cache_walk, native_cycle_sums.cycle_sums,
launch_sums.LaunchSums.fold), each of which builds its argument list,
allocates its outputs and checks its inputs: about a tenth of a
millisecond of Python a batch, more than the warps of a launch of a
thousand threads cost. A batch charged at once on the launching thread
(LaunchRun._charge_records) takes this path instead: the records are
copied into the run's columns (trace_columns.py, counting the requests
per space), and each pass is called through its trampoline
(packed_call.entry) with an argument array built once for the run, where
only the batch's length and the trace's address (and the caches' row
arrays, which grow) are set per batch. The batch's table is folded into
the launch's sums and cleared for the next batch natively; the counters
come from the launch's sums at its end (MemorySystem.settle), as on the
other path, so every counter, kept request, cycle and cache state is what
prepare and apply give (tests/test_native_batch.py).

It applies where the passes serve the whole batch: the native passes on
(MemorySystem.native), global and local requests through
native_coalescer and native_cache_walk (MemorySystem._global_native), the
kernel's shared requests all native, no host memory in use and no
constant request in the batch; else `charge` returns False and the
caller takes prepare and apply.
"""
from __future__ import annotations

import numpy as np

from gpuemu.host.buffers import host_memory_in_use
from gpuemu.jit import abi, packed_call
from gpuemu.jit.engine import address

from . import launch_sums, native_banks, native_cache_walk, native_coalescer, native_cycle_sums, request_table
from .request_table import BATCH_ARGS, NSP
from .sector_store import SectorStore
from .trace import SPACE_CODES
from .trace_columns import TraceColumns

GLOBAL, SHARED, LOCAL, CONST = (SPACE_CODES[k] for k in ("global", "shared", "local", "constant"))
_ADDR_OFFSET = abi.TRACE_DTYPE.fields["addr"][1]
WARP = 32


class _Pass:
    """One native pass: its trampoline and address, its argument array (by
    name; every argument given, those set per batch as 0)."""

    def __init__(self, symbol: str, build_ir, names: tuple, values: dict) -> None:
        missing = [name for name in names if name not in values]
        if missing:
            raise ValueError(f"native_batch: no value for {symbol}'s {', '.join(missing)}")
        self.tramp, self.fn = packed_call.entry(symbol, build_ir, len(names))
        self.at = {name: k for k, name in enumerate(names)}
        self.argv = np.array([values[name] for name in names], dtype=np.int64)
        self.argv_at = address(self.argv)

    def __call__(self) -> int:
        return self.tramp(self.fn, self.argv_at)


class NativeBatch:
    """The passes of one run's memory system `ms` for a kernel of `instrs`,
    on batches of up to `capacity` records (grown when one is larger)."""

    def __init__(self, ms, instrs, capacity: int) -> None:
        self.cols = TraceColumns(capacity)
        self.capacity = 0
        self._sectors = SectorStore()     # the coalescer's output (_coalesce)
        self.bind(ms, instrs)

    def bind(self, ms, instrs) -> None:
        """Serve `ms` charging `instrs` (a run's new memory system: the
        buffers are kept; the passes' arguments are made again, or where
        `ms` has the rules of the one before, only its own arrays' set)."""
        old = self.__dict__.get("ms")
        ms._tables(instrs)
        if (old is not None and instrs is self.instrs and self.capacity == self.cols.capacity
                and ms.mem is old.mem and ms.preset is old.preset and ms.native == old.native
                and (ms.l1_global_loads, ms.l1_present, ms.readonly_path)
                == (old.l1_global_loads, old.l1_present, old.readonly_path)
                and ms._row_kind is old._row_kind and ms._op is old._op):
            return self._rebind(ms, old)
        self.ms, self.instrs = ms, instrs
        if getattr(self, "table", None) is None or self.table.shape[0] != request_table.NSP * max(len(ms._op), 1):
            self.table = request_table.new_table(len(ms._op))      # the batch's, cleared by the fold
        self.sm_cycles = ms.sm_cycles
        self.global_native = ms._global_native()
        self.shared_native = bool(ms._shared_all_native)
        self._build(self.cols.capacity)

    def _rebind(self, ms, old) -> None:
        """bind to `ms`, whose rules, kernel tables and cache geometry are `old`'s."""
        self.ms, self.sm_cycles = ms, ms.sm_cycles
        for p in self._batch_passes:
            for name, value in (("skip_t", address(ms._skip)), ("sm_cycles", address(ms.sm_cycles))):
                k = p.at.get(name)
                if k is not None:
                    p.argv[k] = value
        if self.global_native:
            self._bind_caches(ms)
        sums = self.__dict__.get("_fold_into")
        if ms._sums is None and sums is not None and not sums.batches:
            ms._sums = sums                # the launch's sums (settled, clear) serve the new one

    def _bind_caches(self, ms) -> None:
        """The walk's cache arguments: `ms`'s L1 (if any) and L2, their states made now."""
        self._cache_slots = [(cc, self.walk.at[f"{name}_row_of"]) for name, cc in (("l1", ms.l1), ("l2", ms.l2))
                             if cc is not None]
        self._ptrs = [None] * len(self._cache_slots)
        for cc, slot in self._cache_slots:
            args = native_cache_walk._cache_args(cc, 0)
            self.walk.argv[slot:slot + len(args)] = args

    def serves(self, ms, instrs) -> bool:
        """Whether this serves `ms` charging `instrs` (the run's memory system may be new)."""
        return (ms is self.ms and instrs is self.instrs and ms._tables_for is instrs
                and ms.sm_cycles is self.sm_cycles)

    @property
    def nbytes(self) -> int:
        """Bytes of its buffers and of the launch sums it folds into (a kept
        run's budget counts them; it keeps those sums when its memory system goes)."""
        sums = self.__dict__.get("_fold_into")
        return (self.cols.nbytes + sum(a.nbytes for a in (self._cl, self.start, self._ks, self.table))
                + (sums.nbytes if sums is not None else 0) + self._sectors.nbytes)

    def _build(self, capacity: int) -> None:
        """The buffers for batches of `capacity` records (kept if they are
        that size) and the passes' argument arrays."""
        ms, m = self.ms, self.ms.mem
        if capacity != self.capacity:
            self.capacity = capacity
            self._cl = np.zeros((2, capacity), dtype=np.int64)     # cycles, latency: zeroed together
            self.cycles, self.latency = self._cl
            self.start = np.zeros(capacity + 1, dtype=np.int64)
            self._ks = np.zeros((2, capacity), dtype=np.int64)     # warp runs' keys, sums: copied together
            self.keys, self.sums = self._ks
        a = self.cols.addrs
        common = dict(n=0, addr=0, instr=a["instr"], space=a["space"], mask=a["mask"], sm=a["sm"], block=a["block"],
                      warp=a["warp"], op_t=address(ms._op), size_t=address(ms._size), skip_t=address(ms._skip),
                      addr_stride=abi.TRACE_DTYPE.itemsize // 8, cycles=address(self.cycles),
                      latency=address(self.latency), table=address(self.table))
        self.shared = _Pass(native_banks.PASS_SYMBOL, native_banks._build_pass, native_banks.PASS_ARGS, dict(
            common, shared=SHARED, bank_shift=m.shared_bank_bytes.bit_length() - 1, banks=m.banks,
            row_shift=m.shared_row_bytes.bit_length() - 1, cycles_per_wavefront=m.cycles_per_shared_wavefront,
            cycles_per_atomic=m.cycles_per_atomic_serialization, latency0=m.shared_latency))
        passes = [self.shared]
        if self.global_native:
            self.coalesce = _Pass(native_coalescer.SYMBOL, native_coalescer._build_ir, native_coalescer.ARGS, dict(
                common, glob=GLOBAL, local=LOCAL, ib=m.local_interleave_bytes,
                ib_log=m.local_interleave_bytes.bit_length() - 1, window=m.local_bytes_per_thread_window * WARP,
                cycles_per_atomic=m.cycles_per_atomic_serialization, start=address(self.start), sec=0))
            l1 = ms.l1
            self.clock = np.zeros(2, dtype=np.int64)
            self.walk = _Pass(native_cache_walk.SYMBOL, native_cache_walk._build_ir, native_cache_walk.ARGS, dict(
                common, glob=GLOBAL, local=LOCAL, start=address(self.start), kind=address(ms._row_kind),
                nsm=ms.preset.num_sms,
                k1_log=(m.l1_sector_bytes // 32 if l1 is not None else 1).bit_length() - 1,
                spl1_log=(m.l1_line_bytes // m.l1_sector_bytes if l1 is not None else 1).bit_length() - 1,
                spl2_log=ms.l2.sectors_per_line.bit_length() - 1,
                cl1=m.cycles_per_l1_sector, cl2=m.cycles_per_l2_sector, cdram=m.cycles_per_dram_sector,
                lat1=m.l1_hit_latency, lat2=m.l2_hit_latency, latdram=m.dram_latency, clock=address(self.clock),
                sec=0, **{f"{c}_{a}": 0 for c in ("l1", "l2") for a in native_cache_walk.CACHE_ARGS}))
            passes += [self.coalesce, self.walk]
            self._coalesce_sec, self._walk_sec = self.coalesce.at["sec"], self.walk.at["sec"]
            self._bind_caches(ms)
        self.cycle_sums = _Pass(native_cycle_sums.SYMBOL, native_cycle_sums._build_ir, native_cycle_sums.ARGS,
                                dict(common, nsm=self.sm_cycles.size, sm_cycles=address(self.sm_cycles),
                                     keys=address(self.keys), sums=address(self.sums)))
        passes.append(self.cycle_sums)
        self._fold = None
        self._batch_passes = passes
        # their argument arrays as the rows of one, whose BATCH_ARGS n and addr are set per batch at once
        rows = np.zeros((len(passes), max(p.argv.size for p in passes)), dtype=np.int64)
        for p, row in zip(passes, rows):
            row[:p.argv.size] = p.argv
            p.argv, p.argv_at = row, address(row)
        self._argvs = rows
        self._n_at, self._addr_at = BATCH_ARGS.index("n"), BATCH_ARGS.index("addr")

    def _folder(self, sums: launch_sums.LaunchSums) -> _Pass:
        """The fold of the batch's table into `sums` (the memory system's, kept until it changes)."""
        if self._fold is None or self._fold_into is not sums:
            names = launch_sums.ARGS
            self._fold = _Pass(launch_sums.SYMBOL, launch_sums._build_ir, names,
                               dict(zip(names, sums.fold_args(self.table)), mask=self.cols.addrs["mask"],
                                    addr_stride=abi.TRACE_DTYPE.itemsize // 8))
            self._fold_into = sums
        return self._fold

    def charge(self, records: np.ndarray) -> bool:
        """Charge trace records (abi.TRACE_DTYPE, the next in issue order) to
        the memory system, as prepare and apply would; False (nothing
        charged) where this path does not serve the batch (module docstring)."""
        if not self.prepare(records):
            return False
        self.apply()
        return True

    def prepare(self, records: np.ndarray) -> bool:
        """The part of `charge` that no earlier batch changes (the columns,
        the bank and coalescing passes), into this object's buffers: block
        workers prepare their batches in parallel, each in its own
        NativeBatch, and `apply` them in issue order. False: this path does
        not serve the batch (the caller prepares and applies it the
        MemorySystem way). The records stay in use until `apply`."""
        ms = self.ms
        if not ms.native:
            return False
        n = records.shape[0]
        records = self.cols.fill(records)
        if self.cols.capacity != self.capacity:    # grown: new columns, larger buffers
            self._build(self.cols.capacity)
        counts = self.cols.counts.tolist()
        traced = counts[GLOBAL] + counts[LOCAL]
        if (counts[CONST] or (counts[SHARED] and not self.shared_native)
                or (traced and (not self.global_native or (counts[GLOBAL] and host_memory_in_use())))):
            return False
        self._n, self._traced, self._records = n, traced, records
        if n == 0:
            return True
        addr = self._addr = self.cols.records_at + _ADDR_OFFSET
        argvs = self._argvs
        argvs[:, self._n_at] = n
        argvs[:, self._addr_at] = addr
        self._cl[:, :n] = 0
        if counts[SHARED]:
            self.shared()
        if traced:
            self._coalesce(traced)
        return True

    def apply(self) -> None:
        """The rest of `charge` for the batch `prepare` took, the next in issue
        order: the caches, the cycles per SM and warp, the fold into the
        launch's sums."""
        n, ms = self._n, self.ms
        self._records = None
        if n == 0:
            return
        if self._traced:
            self._walk(n)
        runs = self.cycle_sums()
        keys, sums = self._ks[:, :runs].copy()
        ms._warp_parts.append((keys, sums))
        sums = ms.launch_sums()
        fold = self._folder(sums)
        fold.argv[fold.at["number"]] = sums.batches
        fold.argv[fold.at["addr"]] = self._addr
        fold()
        sums.batches += 1

    def _coalesce(self, traced: int) -> None:
        """The coalescer for the batch's `traced` global and local requests
        (as native_coalescer.coalesce_pass, with the run's arrays)."""
        store = self._sectors          # kept: its pages mapped as written (sector_store.py)
        sec = self._sec = store.for_batch(self.capacity * 2 * WARP * max(1, self.ms._max_words))   # the bound
        at = address(sec)
        self.coalesce.argv[self._coalesce_sec] = at
        self.coalesce()
        store.wrote(int(self.start[self._n]))
        self.walk.argv[self._walk_sec] = at

    def _walk(self, n: int) -> None:
        """The caches for the coalesced requests (as native_cache_walk.cache_walk)."""
        ms = self.ms
        m = int(self.start[n])
        w = self.walk.argv
        before = []
        for k, (cc, slot) in enumerate(self._cache_slots):
            st = cc._state
            st.reserve(m)                  # room for m more rows: its planes may move
            if st._ptrs is not self._ptrs[k]:
                w[slot + 1:slot + 4] = st._ptrs
                self._ptrs[k] = st._ptrs
            before.append(st.meta[1:3].tolist())
        l1, l2 = ms.l1, ms.l2
        self.clock[:] = (l1._t if l1 is not None else 0, l2._t)
        self.walk()
        self._sec = None                   # (its sectors: read by the walk, now done)
        for (cc, _), (h0, a0), t in zip(self._cache_slots, before, self.clock.tolist()[2 - len(before):]):
            h1, a1 = cc._state.meta[1:3].tolist()
            cc.hits += h1 - h0
            cc.misses += a1 - a0 - (h1 - h0)
            cc._t = t
