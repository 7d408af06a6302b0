"""The cycle-level engine of timing mode: every SM's warp schedulers at once.

Rules (the plain-Python reference, reference_engine.py, states them one warp
at a time; this engine applies them to arrays over all warp slots of all SMs
per cycle, and jumps over cycles in which no warp anywhere can issue;
native_engine.py runs them as native code for the built-in policies, and
this engine runs policy classes of the user's):

- Residency: an SM holds at most `blocks_per_sm` blocks (the occupancy).
  Warp w of the block in residency slot r has local number L = r * nw + w;
  it belongs to scheduler L % S (S = preset.warp_schedulers_per_sm) at slot
  position L // S. Blocks are dispatched when an SM has room (the block
  policy picks the SM), at the cycle the room appears.
- A resident warp can issue at cycle t when: it is not at a barrier; its
  previous instruction issued at least `issue_interval` cycles ago
  (dependency); if it has reached the first use of a pending load, the
  load's value is there (memory); if its next instruction is a memory
  request, that request's pipe (LSU or shared) is free at t (pipe).
- Each scheduler issues one instruction per cycle from its ready warps,
  the one the policy picks. A memory request occupies its SM's pipe for its
  cost from max(t, pipe free) (two schedulers may issue to one pipe in the
  same cycle: the second waits behind the first); its value is ready
  `latency` cycles after that start. Outstanding loads of a warp share one
  scoreboard entry: the earliest first use waits for the latest value.
- A warp that has issued all instructions before a barrier waits there
  until every warp of its block that has not exited waits there too; they
  all go on the next cycle. A warp that has issued its last instruction
  exits; when a block's last warp exits, its room goes to the next block.
- Every cycle a resident warp that does not issue is counted under one
  reason, in this order: barrier, memory (waiting for a load's value), pipe,
  dependency (within its issue interval), not_selected (it was ready,
  another warp issued). A scheduler
  with no ready warp counts an idle cycle.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .warp_policy import IssueView
from .warp_trace import BARRIER, EXIT, MEM, N_PIPES, WarpPrograms

REASONS = ("memory", "pipe", "barrier", "dependency", "not_selected")
R_MEMORY, R_PIPE, R_BARRIER, R_DEPENDENCY, R_NOT_SELECTED = range(5)
_FAR = np.int64(1) << 62


@dataclass
class TimingResult:
    """What the engine measured (cycles are SM clock cycles)."""
    cycles: int                      # until the last SM finished
    sm_cycles: np.ndarray            # int64[num_sms]: each SM's last busy cycle + 1
    issued: np.ndarray               # int64[num_sms]: warp instructions issued
    schedulers_per_sm: int
    stalls: np.ndarray               # int64[num_warps, 5]: cycles per REASONS column
    stalls_by_row: np.ndarray        # int64[rows, 5]: stall cycles by counter row (source line)
    idle: np.ndarray                 # int64[num_sms]: scheduler-cycles with nothing ready
    active_warp_cycles: np.ndarray   # int64[num_sms]: sum over cycles of resident warps
    blocks_per_sm: int
    # timeline rows (block, warp, sm, slot, start, end): a list of tuples or an int64
    # array of shape (n, 6) (timeline_rows() gives the list either way)
    warps: list = field(default_factory=list)
    barrier_waits: list = field(default_factory=list)

    def timeline_rows(self) -> tuple:
        """(warps, barrier_waits) as lists of (block, warp, sm, slot, start, end) tuples."""
        rows = lambda x: [tuple(r) for r in x.tolist()] if isinstance(x, np.ndarray) else list(x)  # noqa: E731
        return rows(self.warps), rows(self.barrier_waits)

    @property
    def num_sms_used(self) -> int:
        return int(np.count_nonzero(self.sm_cycles))


class Layout:
    """Slot numbering shared by both engines."""

    def __init__(self, num_sms: int, schedulers: int, blocks_per_sm: int, warps_per_block: int):
        self.M, self.S, self.B, self.nw = num_sms, schedulers, blocks_per_sm, warps_per_block
        self.K = -(-blocks_per_sm * warps_per_block // schedulers)
        self.G = num_sms * schedulers
        self.N = self.G * self.K

    def slot(self, sm: int, r: int, w: int) -> int:
        L = r * self.nw + w
        return (sm * self.S + L % self.S) * self.K + L // self.S


class SMEngine:
    """The fast engine. `run()` returns a TimingResult."""

    def __init__(self, progs: WarpPrograms, num_sms: int, schedulers: int, blocks_per_sm: int,
                 issue_interval: int, policy, block_policy, nrows: int, seed: int = 0,
                 timeline: bool = True) -> None:
        self.p = progs
        nb = progs.num_blocks
        self.lay = Layout(max(1, min(num_sms, nb)), schedulers, max(1, blocks_per_sm),
                          progs.warps_per_block)
        self.num_sms = num_sms
        self.alu = int(issue_interval)
        self.policy, self.bpol = policy, block_policy
        self.nrows = max(int(nrows), int(progs.line.max(initial=0)) + 1)
        self.seed = int(seed or 0)
        self.timeline = timeline

    # -------------------------------------------------------------- helpers
    def _set_next(self, s: int, p: int) -> None:
        self.ptr[s] = p
        if p < self.end[s]:
            L = self.lists
            self.nat[s], self.nkind[s] = L[0][p], L[1][p]
            self.npipe[s], self.nline6[s] = L[2][p], 6 * L[6][p]
        else:                       # no item left (cannot happen: EXIT is last)
            self.nat[s], self.nkind[s] = _FAR, EXIT

    def _dispatch(self, b: int, sm: int, t: int) -> None:
        lay, P = self.lay, self.p
        r = self.free_r[sm].pop()
        slots = []
        for w in range(lay.nw):
            s = lay.slot(sm, r, w)
            g = b * lay.nw + w
            self.occ[s] = True
            self.gw[s] = g
            self.blk[s] = b
            self.ic[s] = 0
            self.end[s] = P.end[g]
            self._set_next(s, P.start[g])
            self.ready[s] = t
            self.dep_pos[s], self.dep_ready[s] = _FAR, 0
            self.atbar[s] = False
            self.age[s] = self.seq
            self.seq += 1
            self.wstart[g] = t
            slots.append(s)
        self.blocks[b] = [sm, r, slots, lay.nw, 0]   # sm, r, slots, live, at barrier
        self.resident[sm] += 1
        for s in slots:
            self._arrive(s, t)

    def _fill(self, t: int) -> None:
        """Dispatch waiting blocks while some SM has room."""
        while self.next_block < self.p.num_blocks:
            free = self.resident < self.lay.B
            if not free.any():
                return
            sm = int(self.bpol.pick_sm(free, self.resident.copy()))
            if not (0 <= sm < self.lay.M) or not free[sm]:
                raise ValueError(f"block policy chose SM {sm}, which has no room")
            b = self.next_block
            self.next_block += 1
            self._dispatch(b, sm, t)

    def _arrive(self, s: int, t: int) -> None:
        """Slot s has issued up to its next BARRIER/EXIT item: act on it (once: a warp
        already waiting at its barrier has arrived)."""
        if not self.occ[s] or self.atbar[s] or self.nkind[s] == MEM or self.nat[s] != self.ic[s]:
            return
        b = int(self.blk[s])
        info = self.blocks[b]
        if self.nkind[s] == EXIT:
            self.occ[s] = False
            g = int(self.gw[s])
            self.stalls[g] += self.acc[:, s]
            self.acc[:, s] = 0
            sm = info[0]
            if self.timeline:
                self.warps.append((b, g % self.lay.nw, sm, s, int(self.wstart[g]), t + 1))
            info[3] -= 1
            if info[3] == 0:
                self.sm_end[sm] = max(self.sm_end[sm], t + 1)
                self.free_r[sm].append(info[1])
                self.resident[sm] -= 1
                self.done += 1
                del self.blocks[b]
                self._fill(t + 1)
                return
        else:
            self.atbar[s] = True
            self.bar_since[s] = t + 1
            info[4] += 1
        if info[4] and info[4] == info[3]:
            self._release(info, t)

    def _release(self, info, t: int) -> None:
        """Every live warp of the block waits at the barrier: all go on at t + 1. The block
        may finish in the arrivals below and its slots go to a new block, whose warps its
        dispatch has already arrived: only this block's own slots arrive here."""
        info[4] = 0
        b = int(self.blk[info[2][0]])
        for s in info[2]:
            if self.occ[s] and self.atbar[s]:
                self.atbar[s] = False
                if self.timeline:
                    g = int(self.gw[s])
                    self.bar_waits.append((g // self.lay.nw, g % self.lay.nw, info[0], s,
                                           int(self.bar_since[s]), t + 1))
                self._set_next(s, self.ptr[s] + 1)
                self.ready[s] = max(self.ready[s], t + 1)
        for s in list(info[2]):
            if self.blk[s] == b:
                self._arrive(s, t + 1)

    # ------------------------------------------------------------------ run
    def run(self) -> "TimingResult":
        lay, P = self.lay, self.p
        # plain lists: per-item reads from Python are several times faster
        self.lists = [a.tolist() for a in (P.at, P.kind, P.pipe, P.cost, P.latency, P.use, P.line)]
        N, G, K, M = lay.N, lay.G, lay.K, lay.M
        i64 = np.int64
        self.occ = np.zeros(N, bool)
        self.atbar = np.zeros(N, bool)
        self.gw, self.blk, self.ic, self.ptr, self.end = (np.zeros(N, i64) for _ in range(5))
        self.nat, self.nkind, self.npipe, self.nline = (np.zeros(N, i64) for _ in range(4))
        self.ready, self.dep_pos, self.dep_ready, self.dep_line = (np.zeros(N, i64) for _ in range(4))
        self.age, self.bar_since = np.zeros(N, i64), np.zeros(N, i64)
        self.acc = np.zeros((len(REASONS), N), i64)
        self.stalls = np.zeros((P.num_warps, len(REASONS)), i64)
        self.wstart = np.zeros(P.num_warps, i64)
        self.pipe_free = np.zeros(M * N_PIPES, i64)
        self.free_r = [list(range(lay.B - 1, -1, -1)) for _ in range(M)]
        self.resident = np.zeros(M, i64)
        self.sm_end = np.zeros(self.num_sms, i64)
        self.blocks: dict = {}
        self.warps, self.bar_waits = [], []
        self.seq = self.next_block = self.done = 0
        sm_of = np.arange(N) // (lay.S * K)
        sm2 = sm_of * N_PIPES
        grp = np.arange(N) // K
        kpos = np.arange(N) % K
        last = np.full(G, -1, i64)
        issued = np.zeros(M, i64)
        idle = np.zeros(M, i64)
        active = np.zeros(M, i64)
        by_row = np.zeros(self.nrows * 6, i64)     # row * 6 + 1 + reason
        self.nline6 = nline6 = np.zeros(N, i64)     # 6 x the row of the next item
        self.dep_line6 = dep_line6 = np.zeros(N, i64)
        occ_sm = self.occ.reshape(M, -1)
        self.policy.reset(G, K)
        self.bpol.reset(M)
        fast = callable(getattr(self.policy, "priority", None))
        view = IssueView(0, kpos, grp, self.age, self.occ, None, None, self.atbar, last, K, self.seed)
        occ, atbar, ic, ready = self.occ, self.atbar, self.ic, self.ready
        nat, nkind, npipe = self.nat, self.nkind, self.npipe
        dep_pos, dep_ready, pf = self.dep_pos, self.dep_ready, self.pipe_free
        acc = self.acc
        at, kind, pipe_t, cost, lat, use, line = self.lists
        alu = self.alu
        SK = lay.S * K
        t = 0
        self._fill(0)
        nb = P.num_blocks
        while self.done < nb:
            live = occ & ~atbar
            dstall = live & (ic >= dep_pos) & (dep_ready > t)
            memnow = live & (nkind == MEM) & (nat == ic)
            pstall = memnow & (pf[sm2 + npipe] > t) & ~dstall
            rstall = live & (ready > t) & ~dstall & ~pstall
            elig = live & ~dstall & ~pstall & ~rstall
            if elig.any():
                dt = 1
                if fast:
                    view.cycle, view.ready, view.waiting_memory = t, elig, dstall
                    pr = np.asarray(self.policy.priority(view), dtype=np.float64)
                    pm = np.where(elig, pr, -np.inf).reshape(G, K)
                    kk = pm.argmax(axis=1)
                    gsel = np.flatnonzero(elig.reshape(G, K).any(axis=1))
                    iss = gsel * K + kk[gsel]
                else:
                    iss = self._pick_slow(t, elig, dstall, last, K, G)
                    gsel = iss // K
            else:
                wake = np.where(rstall, ready, 0)
                np.maximum(wake, np.where(dstall, dep_ready, 0), out=wake)
                np.maximum(wake, np.where(pstall, pf[sm2 + npipe], 0), out=wake)
                dt = int(wake[live].min()) - t
                iss = np.zeros(0, i64)
                gsel = iss
            # ---- accounting for cycles [t, t + dt)
            notsel = elig.copy()
            notsel[iss] = False
            bar = occ & atbar
            # code: 0 not stalled, 1 + reason otherwise (the masks are disjoint)
            code = dstall * (1 + R_MEMORY)
            code += pstall * (1 + R_PIPE)
            code += bar * (1 + R_BARRIER)
            code += rstall * (1 + R_DEPENDENCY)
            code += notsel * (1 + R_NOT_SELECTED)
            if dt == 1:
                acc[R_MEMORY] += dstall
                acc[R_PIPE] += pstall
                acc[R_BARRIER] += bar
                acc[R_DEPENDENCY] += rstall
                acc[R_NOT_SELECTED] += notsel
                by_row += np.bincount(np.where(dstall, dep_line6, nline6) + code,
                                      minlength=by_row.size)
                active += occ_sm.sum(axis=1)
            else:
                acc[R_MEMORY] += dstall * dt
                acc[R_PIPE] += pstall * dt
                acc[R_BARRIER] += bar * dt
                acc[R_DEPENDENCY] += rstall * dt
                acc[R_NOT_SELECTED] += notsel * dt
                by_row += np.bincount(np.where(dstall, dep_line6, nline6) + code,
                                      minlength=by_row.size) * dt
                active += occ_sm.sum(axis=1) * dt
            busy_groups = np.zeros(G, bool)
            busy_groups[gsel] = True
            idle += (~busy_groups).reshape(M, lay.S).sum(axis=1) * dt * (self.resident > 0)
            if iss.size:
                ic_b = ic[iss]
                ic[iss] = ic_b + 1
                ready[iss] = t + alu
                last[grp[iss]] = kpos[iss]
                issued += np.bincount(sm_of[iss], minlength=M)
                ms = iss[memnow[iss]]
                for s, p, c, e, dr, dp in zip(ms.tolist(), self.ptr[ms].tolist(),
                                              ic_b[memnow[iss]].tolist(), self.end[ms].tolist(),
                                              dep_ready[ms].tolist(), dep_pos[ms].tolist()):
                    sm2s = (s // SK) * N_PIPES
                    d0 = dr
                    while p < e and kind[p] == MEM and at[p] == c:
                        j = sm2s + pipe_t[p]
                        start = pf[j]
                        if start < t:
                            start = t
                        pf[j] = start + cost[p]
                        if use[p] >= 0:
                            rt, up = start + lat[p], c + 1 + use[p]
                            if d0 <= t:
                                dp, dr, d0 = up, rt, rt
                                dep_line6[s] = 6 * line[p]
                            else:
                                dp = min(dp, up)
                                if rt > dr:
                                    dr = rt
                                    dep_line6[s] = 6 * line[p]
                        p += 1
                    dep_ready[s], dep_pos[s] = dr, dp
                    self._set_next(s, p)
                arr = iss[(nkind[iss] != MEM) & (nat[iss] == ic[iss])]
                for s in arr.tolist():
                    self._arrive(s, t)
            t += dt
        sm_cycles = self.sm_end
        full = lambda a: np.concatenate([a, np.zeros(self.num_sms - M, i64)])  # noqa: E731
        return TimingResult(
            cycles=int(sm_cycles.max(initial=0)), sm_cycles=sm_cycles, issued=full(issued),
            schedulers_per_sm=lay.S, stalls=self.stalls,
            stalls_by_row=by_row.reshape(self.nrows, 6)[:, 1:], idle=full(idle),
            active_warp_cycles=full(active), blocks_per_sm=lay.B,
            warps=self.warps, barrier_waits=self.bar_waits)

    def _pick_slow(self, t, elig, dstall, last, K, G) -> np.ndarray:
        """Policies without `priority`: call pick() per scheduler with ready warps."""
        from .warp_policy import SchedulerInfo, WarpInfo
        lay = self.lay
        out = []
        eg = elig.reshape(G, K)
        for g in np.flatnonzero(eg.any(axis=1)).tolist():
            base = g * K
            res = []
            for k in range(K):
                s = base + k
                if self.occ[s]:
                    gw = int(self.gw[s])
                    res.append(WarpInfo(s, k, int(self.age[s]), gw // lay.nw, gw % lay.nw,
                                        bool(dstall[s]), bool(self.atbar[s]), bool(elig[s])))
            info = SchedulerInfo(t, g // lay.S, g % lay.S, g, int(last[g]), K, res, self.seed)
            w = self.policy.pick([x for x in res if x.ready], info)
            out.append(w.slot)
        return np.array(out, dtype=np.int64)
