"""Shared requests counted by the warp function that makes them, not traced.

With counters on, every warp-level memory request used to be written to the
trace (a 296-byte record: gpuemu/jit/abi.py TRACE_DTYPE) and charged later
by the memory model's passes. A shared-memory load or store needs nothing
that another request changes (no cache: the bank arbiter's rule reads only
its own 32 addresses), so where the launch allows it the warp's load/store
helper (gpuemu/jit/memory_access.py) calls this module's native function
instead of writing a record: the request is counted at once, from the
addresses the helper just checked, into a small per-run state:

- a request_table of sums per (instruction, space) row: requests,
  wavefronts (cost), conflicts, conflict degrees (ways_N), and the row's
  first costliest request (best, best_at = its sequence number among this
  state's counted requests), whose mask, block and 32 addresses are kept
  beside (`best`);
- wavefronts per SM and per warp (linear block * warps per block + warp).
A request's cycles are its wavefronts x cycles_per_shared_wavefront (no
atomics here), so cycles per row, SM and warp are worked out from the
wavefronts when the counts are charged (`row_cycles`, `sm_cycles`,
`warp_sums`); every counted request has at least one wavefront (a helper
records no request without active lanes), so a warp with wavefronts is a
warp that made one.

The rule is native_banks._emit_banks, the same code as the trace pass
(native_banks.shared_pass; bank_arbiter.shared_request_reference is the
readable rule), so the counters are those of the trace path. The common
request, all of whose words lie in one row (`one_row`, or `one_row_spread`
for a whole warp: then no bank holds two of them, one wavefront), is counted inline in the helper, without a
call (`emit_charge`, the same code as this module's function). MemorySystem
.add_warp_counts turns the state into the counters (the rows of a request
table, `row_cycles`, through the kernel's request_table.CounterPlan, as a
traced batch's), tests/test_warp_bank_counts.py checks launches against the
numpy path (every counter, per line, worst requests, per-SM and per-warp
cycles, one and two block workers).

It applies (`applies`, worked out once per kernel and rules by
MemorySystem._tables) when every instruction that may touch shared
memory is a plain load or store of a size native_banks serves under the
launch's rules, and nothing needs per-request records of shared requests:
no timing recorder (it wants each request's latency), no check mode, no
weak memory model, MemorySystem.native. Block workers each count into their
own state (one per ctx); `merge` adds them, and keeps per row the costliest
request, first by (linear block, sequence): workers run consecutive block
ranges, so block order is issue order there.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from gpuemu.jit import abi, engine

from . import native_banks, request_table
from .native_ir import I32, Fn, c
from .request_table import COL, NC, NSP
from .trace import SPACE_CODES, sync_op

SYMBOL = "gpuemu_warp_bank_counts"
SHARED = SPACE_CODES["shared"]
WARP = 32
# the state's int64 fields (the warp's helper reads FN; the function the rest)
FN, BANK_SHIFT, BANKS, ROW_SHIFT, CPW, NSM, NWARPS, WPB, SEQ, TABLE, SM_WAVEFRONTS, WARP_WAVEFRONTS, \
    BEST = range(13)
NFIELDS = 13
BEST_W = 2 + WARP      # per instruction: mask, block, 32 addresses of its row's costliest request


def _build_ir() -> str:
    """count(state, addr, mask, instr, frame): one shared request of the warp
    of `frame` (its 32 lane addresses at `addr`, lanes `mask`, MemInstr id
    `instr`) into the state."""
    import llvmlite.ir as ll
    m = ll.Module(name="warp_bank_counts")
    f = Fn(m, SYMBOL, ("state", "addr", "mask", "instr", "frame"))
    A, b = f.arg, f.b
    st = f.ptr("state")
    rows, cnt = f.array(native_banks.MAX_BANKS * WARP), f.array(native_banks.MAX_BANKS)
    wf, ideal, ways = native_banks._emit_banks(f, f.ptr("addr"), c(0), A["mask"], f.ld(st, BANK_SHIFT),
                                               f.ld(st, BANKS), f.ld(st, ROW_SHIFT), rows, cnt)
    vec = ll.VectorType(ll.IntType(64), WARP).as_pointer()
    emit_charge(b, st, A["instr"], A["mask"], f.ptr("frame", I32), wf, ideal, ways,
                lambda dst: b.store(b.load(b.bitcast(f.ptr("addr"), vec), align=8),
                                    b.bitcast(dst, vec), align=8))
    f.finish()
    return str(m)


def emit_charge(b, st, instr, mask, frame, wf, ideal, ways, store_addrs) -> None:
    """Emit (llvmlite IRBuilder `b`) the counting of one shared request into
    the state `st` (an i64 pointer): its table row's sums, the row's first
    costliest request (its 32 addresses written by `store_addrs(dst)`, dst
    an i64 pointer), the sequence number, the SM's and the warp's
    wavefronts. instr, mask, wf, ideal, ways: i64 values; frame: the warp's
    frame as an i32 pointer. The warp's load/store helper emits it inline for
    a request whose words lie in one row (wf = ideal = ways = 1: `one_row`),
    this module's function for the others."""
    import llvmlite.ir as ll
    i64p = ll.IntType(64).as_pointer()

    def field(k):
        return b.load(b.gep(st, [c(k)]))

    def ptr(k):
        return b.inttoptr(field(k), i64p)

    def add(p, i, v) -> None:
        q = b.gep(p, [i])
        b.store(b.add(b.load(q), v), q)

    def frame_field(off):
        return b.sext(b.load(b.gep(frame, [ll.Constant(I32, off // 4)])), ll.IntType(64))

    table = ptr(TABLE)
    base = b.mul(b.add(b.mul(instr, c(NSP)), c(SHARED)), c(NC))
    at = lambda col: b.add(base, c(COL[col]))  # noqa: E731
    add(table, at("requests"), c(1))
    add(table, at("cost"), wf)
    add(table, at("conflicts"), b.sub(wf, ideal))
    add(table, b.add(at("ways_0"), ways), c(1))
    seq = field(SEQ)
    b.store(b.add(seq, c(1)), b.gep(st, [c(SEQ)]))
    block = frame_field(abi.F_BLOCK)
    best_q = b.gep(table, [at("best")])
    with b.if_then(b.icmp_signed(">", wf, b.load(best_q)), likely=False):
        b.store(wf, best_q)
        b.store(seq, b.gep(table, [at("best_at")]))
        best, row = ptr(BEST), b.mul(instr, c(BEST_W))
        b.store(mask, b.gep(best, [row]))
        b.store(block, b.gep(best, [b.add(row, c(1))]))
        store_addrs(b.gep(best, [b.add(row, c(2))]))
    sm, nsm = frame_field(abi.F_SM), field(NSM)
    before = b.block
    with b.if_then(b.icmp_unsigned(">=", sm, nsm), likely=False):   # an SM number is below the count
        wrapped, wrapped_at = b.urem(sm, nsm), b.block
    sm_at = b.phi(ll.IntType(64))
    sm_at.add_incoming(sm, before)
    sm_at.add_incoming(wrapped, wrapped_at)
    add(ptr(SM_WAVEFRONTS), sm_at, wf)
    w = b.add(b.mul(block, field(WPB)), frame_field(abi.F_WARP))
    with b.if_then(b.and_(b.icmp_signed(">=", w, c(0)), b.icmp_signed("<", w, field(NWARPS)))):
        add(ptr(WARP_WAVEFRONTS), w, wf)


def one_row(b, st, addrs, first, mask):
    """Emit: whether every active lane's word of a shared request lies in the
    row of its first active lane (an i1). addrs: the 32 lane addresses
    (<32 x i64>), first: the first active lane's address, mask: the lanes
    (i32). Then no bank holds two words: one wavefront, ideal one, degree 1
    (native_banks._emit_banks' first pass finds the same)."""
    import llvmlite.ir as ll
    vt = ll.VectorType(ll.IntType(64), WARP)
    shift = b.load(b.gep(st, [c(ROW_SHIFT)]))
    splat = lambda x: b.shuffle_vector(  # noqa: E731
        b.insert_element(ll.Constant(vt, ll.Undefined), x, ll.Constant(I32, 0)),
        ll.Constant(vt, ll.Undefined), ll.Constant(ll.VectorType(I32, WARP), [0] * WARP))
    same = b.icmp_unsigned("==", b.lshr(addrs, splat(shift)), splat(b.lshr(first, shift)))
    off = b.and_(b.bitcast(b.not_(same), I32), mask)
    return b.icmp_unsigned("==", off, ll.Constant(I32, 0))


def one_row_spread(b, st, spread):
    """Emit: whether a whole warp's shared request lies in one row (an i1),
    from `spread`, the OR of every lane's address xor the first lane's (the
    bits where some lane differs): none at or above the row's bits. The
    same test as one_row, read from what the warp's check worked out."""
    shift = b.load(b.gep(st, [c(ROW_SHIFT)]))
    return b.icmp_unsigned("==", b.lshr(spread, shift), c(0))


def function_address() -> int:
    """The native counting function's address (compiled once per process)."""
    from .native_ir import prototype
    fn = engine.native_function(SYMBOL, _build_ir, prototype(5))
    return ctypes.cast(fn, ctypes.c_void_p).value


def applies(native, instrs) -> bool:
    """Whether the warps can count a kernel's shared requests: it has
    instructions that may touch shared memory (shared or generic space),
    and every one is a plain load or store that the bank pass serves
    (native[i.id]: native_banks.applies under the launch's rules, as
    MemorySystem._tables gives it); else its shared requests are traced,
    all of them."""
    may = [i for i in instrs if sync_op(i.op) is None and i.space in ("shared", "generic")]
    return bool(may) and all(i.op in ("ld", "st") and bool(native[i.id]) for i in may)


def counted(ms, instrs) -> bool:
    """Whether a kernel of `instrs` has its shared requests counted by its
    warps under `ms`'s rules (MemorySystem._tables works it out once per
    kernel and rules: a launch only reads it)."""
    ms._tables(instrs)
    return ms._shared_in_warps


class WarpBankCounts:
    """One run's (or block worker's) state: the native function counts into
    its arrays; `reset` starts a launch, `merge` takes in another worker's."""

    def __init__(self, n_instrs: int, num_sms: int, warps_per_block: int, blocks: int) -> None:
        self.n_instrs = max(n_instrs, 1)
        self.table = request_table.new_table(self.n_instrs)
        self.sm_wavefronts = np.zeros(num_sms, dtype=np.int64)
        self.warp_wavefronts = np.zeros(blocks * warps_per_block, dtype=np.int64)
        self.best = np.zeros((self.n_instrs, BEST_W), dtype=np.int64)
        self.warps_per_block = warps_per_block
        self.by_block = False     # merged from several workers: order requests by (block, sequence)
        s = self.state = np.zeros(NFIELDS, dtype=np.int64)
        s[FN] = function_address()
        s[NSM], s[NWARPS], s[WPB] = num_sms, self.warp_wavefronts.size, warps_per_block
        for field, a in ((TABLE, self.table), (SM_WAVEFRONTS, self.sm_wavefronts),
                         (WARP_WAVEFRONTS, self.warp_wavefronts), (BEST, self.best)):
            s[field] = a.ctypes.data
        self.address = s.ctypes.data

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays (a kept run's budget counts them: LaunchRun.buffer_bytes)."""
        return sum(a.nbytes for a in (self.table, self.sm_wavefronts, self.warp_wavefronts,
                                      self.best, self.state))

    def fits(self, n_instrs: int, num_sms: int, warps_per_block: int, blocks: int) -> bool:
        """Whether this state serves a launch of that kernel and shape."""
        return (self.n_instrs == max(n_instrs, 1) and self.sm_wavefronts.size == num_sms
                and self.warps_per_block == warps_per_block
                and self.warp_wavefronts.size == blocks * warps_per_block)

    def reset(self, mem) -> None:
        """Start a launch under `mem`'s bank rules (zeroes what a launch counted)."""
        s = self.state
        if s[SEQ] or self.by_block:
            self.table[:] = 0
            self.table[:, COL["best"]] = -1
            for a in (self.sm_wavefronts, self.warp_wavefronts):
                a.fill(0)
            s[SEQ] = 0
            self.by_block = False
        s[BANK_SHIFT] = mem.shared_bank_bytes.bit_length() - 1
        s[BANKS] = mem.banks
        s[ROW_SHIFT] = mem.shared_row_bytes.bit_length() - 1
        s[CPW] = mem.cycles_per_shared_wavefront

    @property
    def requests(self) -> int:
        """Shared requests counted since the last reset."""
        return int(self.state[SEQ])

    def merge(self, other: "WarpBankCounts") -> None:
        """Add another worker's counts (its blocks are others than this one's);
        per row keep the costliest request, first by (linear block, sequence)."""
        if not other.state[SEQ]:
            return
        best, at = COL["best"], COL["best_at"]
        rows = np.arange(self.n_instrs) * NSP + SHARED
        mine, theirs = self.table[rows], other.table[rows]
        earlier = ((other.best[:, 1] < self.best[:, 1])
                   | ((other.best[:, 1] == self.best[:, 1]) & (theirs[:, at] < mine[:, at])))
        take = (theirs[:, best] > mine[:, best]) | ((theirs[:, best] == mine[:, best]) & earlier)
        take &= theirs[:, best] >= 0          # a row the other counted nothing in keeps this one's
        summed = mine + theirs
        summed[:, [best, at]] = np.where(take[:, None], theirs[:, [best, at]], mine[:, [best, at]])
        self.table[rows] = summed
        self.best[take] = other.best[take]
        self.sm_wavefronts += other.sm_wavefronts
        self.warp_wavefronts += other.warp_wavefronts
        self.state[SEQ] += other.state[SEQ]
        self.by_block = True

    def worst(self, op: np.ndarray, size: np.ndarray, line: np.ndarray, worst) -> None:
        """Keep in `worst` (WorstRequests) each line's costliest shared
        request: the highest cost, then the first (as the trace path)."""
        from .worst_requests import WorstRequest
        rows = np.arange(self.n_instrs) * NSP + SHARED
        cost = self.table[rows, COL["best"]]
        used = np.flatnonzero(cost >= 0)
        if not used.size:
            return
        ln, at = line[used], self.table[rows[used], COL["best_at"]]
        block = self.best[used, 1] if self.by_block else np.zeros(used.size, dtype=np.int64)
        order = np.lexsort((at, block, -cost[used], ln))     # per line: costliest, then first issued
        first = np.ones(order.size, dtype=bool)
        first[1:] = ln[order][1:] != ln[order][:-1]
        keep = used[order[first]]                            # one per line, lines ascending
        _, first_at = np.unique(ln, return_index=True)
        keep = keep[np.argsort(first_at)]                    # lines in the order of their first instruction
        for i in keep.tolist():
            worst.by_line[("shared", int(line[i]))] = WorstRequest(
                space="shared", row=int(line[i]), op=request_table.OPS[int(op[i])], size=int(size[i]),
                cost=int(cost[i]), mask=int(self.best[i, 0]), addrs=tuple(self.best[i, 2:].tolist()))

    @property
    def sm_cycles(self) -> np.ndarray:
        """Memory cycles per SM."""
        return self.sm_wavefronts * self.state[CPW]

    def row_cycles(self) -> np.ndarray:
        """The table with each row's seen (= requests) and cycles (the counter plan's memory_cycles reads them)."""
        t = self.table.copy()
        t[:, COL["seen"]] = t[:, COL["requests"]]
        t[:, COL["cycles"]] = t[:, COL["cost"]] * self.state[CPW]
        return t

    def warp_sums(self) -> tuple:
        """(warp keys block * 4096 + warp, their cycles) of the warps that made a request."""
        w = np.flatnonzero(self.warp_wavefronts)
        return ((w // self.warps_per_block) * 4096 + w % self.warps_per_block,
                self.warp_wavefronts[w] * self.state[CPW])


def for_run(run, fresh: bool = False):
    """The run's WarpBankCounts for this launch, bound to its ctx (field
    C_WARP_COUNTS, in the ctx the next launch starts from too), or None
    (unbound) where it does not apply or the kernel has no shared-capable
    instruction (nothing to count: no state, no per-warp arrays). fresh: the run has a new ctx (a
    block worker's copy): a state of its own."""
    ms = run.memsys
    counts = None if fresh else run.__dict__.get("warp_counts")
    if counts is None and not fresh:
        off = run.__dict__.get("_warp_counts_off")     # (renew asks every launch: no call made here)
        if (off is not None and off[0]() is ms
                and (ms is None or off[1] == ms.native and off[2] == ms.count_shared_in_warps)):
            return None                    # off for this memory system before: the ctxs hold 0
    # (the note holds its memory system weakly: a kept run or worker copy whose memory system
    # was dropped, launch_plan.keep_memory_system, must not keep its caches alive)
    key = (weakref.ref(ms), ms.native, ms.count_shared_in_warps) if ms is not None else (_NONE, None, None)
    on = (ms is not None and ms.native and ms.count_shared_in_warps
          and getattr(run, "recorder", None) is None and getattr(run, "checker", None) is None
          and getattr(run, "weak", None) is None and not run._weak_mode()
          and counted(ms, run.meta.instrs))
    if on:
        shape = run.shape
        blocks = shape.grid[0] * shape.grid[1] * shape.grid[2]
        dims = (len(run.meta.instrs), run.preset.num_sms, shape.warps_per_block, blocks)
        if counts is None or not counts.fits(*dims):
            counts = WarpBankCounts(*dims)
        counts.reset(ms.mem)
    else:
        counts = None
    address = counts.address if counts is not None else 0
    for ctx in (run.ctx, run.__dict__.get("_ctx_start")):
        if ctx is not None:
            ctx[abi.C_WARP_COUNTS] = address
    run.warp_counts = counts
    run._warp_counts_off = key if counts is None else None
    return counts


def _NONE() -> None:
    """The note's memory system where the run has none (a weakref's call, answering None)."""
    return None
