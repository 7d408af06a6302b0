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
readable rule), so the counters are those of the trace path; MemorySystem
.add_warp_counts turns the state into them (request_table.shared_counters,
cycle_counters), tests/test_warp_bank_counts.py checks launches against the
numpy path (every counter, per line, worst requests, per-SM and per-warp
cycles, one and two block workers).

It applies (`applies`) when every instruction that may touch shared
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
    mask = A["mask"]
    wf, ideal, ways = native_banks._emit_banks(f, f.ptr("addr"), c(0), mask, f.ld(st, BANK_SHIFT),
                                               f.ld(st, BANKS), f.ld(st, ROW_SHIFT), rows, cnt)
    ptr = lambda field: b.inttoptr(f.ld(st, field), ll.IntType(64).as_pointer())  # noqa: E731
    table = ptr(TABLE)
    base = b.mul(b.add(b.mul(A["instr"], c(NSP)), c(SHARED)), c(NC))
    at = lambda col: b.add(base, c(COL[col]))  # noqa: E731
    f.add_to(table, at("requests"), 1)
    f.add_to(table, at("cost"), wf)
    f.add_to(table, at("conflicts"), b.sub(wf, ideal))
    f.add_to(table, b.add(at("ways_0"), ways), 1)
    seq = f.ld(st, SEQ)
    f.st(st, SEQ, b.add(seq, c(1)))
    frame = f.ptr("frame", I32)
    block = f.ld(frame, abi.F_BLOCK // 4)
    with f.if_(f.cmp(">", wf, f.ld(table, at("best")))):
        f.st(table, at("best"), wf)
        f.st(table, at("best_at"), seq)
        best, addr = ptr(BEST), f.ptr("addr")
        row = b.mul(A["instr"], c(BEST_W))
        f.st(best, row, mask)
        f.st(best, b.add(row, c(1)), block)
        with f.loop(0, WARP) as lane:
            f.st(best, b.add(row, b.add(lane, c(2))), f.ld(addr, lane))
    f.add_to(ptr(SM_WAVEFRONTS), f.mod(f.ld(frame, abi.F_SM // 4), f.ld(st, NSM)), wf)
    w = b.add(b.mul(block, f.ld(st, WPB)), f.ld(frame, abi.F_WARP // 4))
    with f.if_(b.and_(f.cmp(">=", w, 0), f.cmp("<", w, f.ld(st, NWARPS)))):
        f.add_to(ptr(WARP_WAVEFRONTS), w, wf)
    f.finish()
    return str(m)


def function_address() -> int:
    """The native counting function's address (compiled once per process)."""
    from .native_ir import prototype
    fn = engine.native_function(SYMBOL, _build_ir, prototype(5))
    return ctypes.cast(fn, ctypes.c_void_p).value


def applies(mem, instrs) -> bool:
    """Whether every instruction that may touch shared memory is a load or
    store the bank pass serves under `mem`'s rules (else shared requests
    are traced, all of them, as before)."""
    for i in instrs:
        if sync_op(i.op) is not None or i.space not in ("shared", "generic"):
            continue
        if i.op not in ("ld", "st") or not native_banks.applies(mem, int(i.size)):
            return False
    return True


_RULES: dict = {}     # (id(instrs), id(mem)) -> (instrs, mem, whether the warps count)


def _counted(mem, instrs) -> bool:
    """Whether a kernel of `instrs` has shared-capable instructions and
    `applies` (worked out once per kernel and rules: a launch asks again)."""
    got = _RULES.get((id(instrs), id(mem)))
    if got is not None and got[0] is instrs and got[1] is mem:
        return got[2]
    may = any(sync_op(i.op) is None and i.space in ("shared", "generic") for i in instrs)
    out = may and applies(mem, instrs)
    if len(_RULES) >= 256:
        _RULES.clear()
    _RULES[(id(instrs), id(mem))] = (instrs, mem, out)
    return out


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

    def _order(self, i: int) -> tuple:
        """Where instruction i's row's costliest request came, in issue order."""
        at = int(self.table[i * NSP + SHARED, COL["best_at"]])
        return (int(self.best[i, 1]), at) if self.by_block else (at,)

    def merge(self, other: "WarpBankCounts") -> None:
        """Add another worker's counts (its blocks are others than this one's)."""
        if not other.state[SEQ]:
            return
        best, at = COL["best"], COL["best_at"]
        for i in range(self.n_instrs):
            r = i * NSP + SHARED
            theirs = int(other.table[r, best])
            if theirs < 0:
                continue
            mine = int(self.table[r, best])
            keep = (self.table[r, [best, at]].copy(), self.best[i].copy())
            if theirs > mine or (theirs == mine and (int(other.best[i, 1]), int(other.table[r, at]))
                                 < (int(self.best[i, 1]), int(self.table[r, at]))):
                keep = (other.table[r, [best, at]], other.best[i])
            self.table[r] += other.table[r]
            self.table[r, [best, at]], self.best[i] = keep
        self.sm_wavefronts += other.sm_wavefronts
        self.warp_wavefronts += other.warp_wavefronts
        self.state[SEQ] += other.state[SEQ]
        self.by_block = True

    def worst(self, op: np.ndarray, size: np.ndarray, line: np.ndarray, worst) -> None:
        """Keep in `worst` (WorstRequests) each line's costliest shared
        request: the highest cost, then the first (as the trace path)."""
        from .worst_requests import WorstRequest
        kept: dict = {}
        for i in range(self.n_instrs):
            cost = int(self.table[i * NSP + SHARED, COL["best"]])
            if cost < 0:
                continue
            ln = int(line[i])
            key = (-cost, self._order(i))
            if ln not in kept or key < kept[ln][0]:
                kept[ln] = (key, i)
        for ln, ((cost, _), i) in kept.items():
            worst.by_line[("shared", ln)] = WorstRequest(
                space="shared", row=ln, op=request_table.OPS[int(op[i])], size=int(size[i]), cost=-cost,
                mask=int(self.best[i, 0]), addrs=tuple(self.best[i, 2:].tolist()))

    @property
    def sm_cycles(self) -> np.ndarray:
        """Memory cycles per SM."""
        return self.sm_wavefronts * self.state[CPW]

    def row_cycles(self) -> np.ndarray:
        """The table with each row's seen (= requests) and cycles (request_table.cycle_counters reads them)."""
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
    from .memory_system import MemorySystem
    ms = run.memsys
    counts = None if fresh else run.__dict__.get("warp_counts")
    on = (ms is not None and ms.native and MemorySystem.count_shared_in_warps
          and getattr(run, "recorder", None) is None and getattr(run, "checker", None) is None
          and getattr(run, "weak", None) is None and not run._weak_mode()
          and _counted(ms.mem, run.meta.instrs))
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
    return counts
