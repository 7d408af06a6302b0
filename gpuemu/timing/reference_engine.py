"""The plain-Python reference of the timing rules (sm_engine.py states them).

One cycle at a time, one warp at a time, no arrays and no skipping: slow and
readable. tests/test_timing_engine.py checks that the fast engine gives the
same cycles, issue counts and stall cycles for every built-in policy.
"""
from __future__ import annotations

import numpy as np

from .sm_engine import R_BARRIER, R_DEPENDENCY, R_MEMORY, R_NOT_SELECTED, R_PIPE, REASONS, Layout, TimingResult
from .warp_policy import SchedulerInfo, WarpInfo
from .warp_trace import EXIT, MEM, N_PIPES, WarpPrograms


class _Warp:
    def __init__(self, g: int, block: int, warp: int, items: list, age: int, t: int, slot: int,
                 k: int):
        self.g, self.block, self.warp, self.items = g, block, warp, items
        self.age, self.slot, self.k = age, slot, k
        self.i = 0                  # next item
        self.ic = 0                 # instructions issued
        self.ready = t              # earliest cycle of the next issue
        self.dep_pos, self.dep_ready, self.dep_row = 1 << 62, 0, 0
        self.at_barrier = False
        self.exited = False
        self.stalls = [0] * len(REASONS)

    def item(self):
        return self.items[self.i]


class ReferenceEngine:
    def __init__(self, progs: WarpPrograms, num_sms: int, schedulers: int, blocks_per_sm: int,
                 issue_interval: int, policy, block_policy, nrows: int, seed: int = 0,
                 timeline: bool = True) -> None:
        self.p = progs
        self.lay = Layout(max(1, min(num_sms, progs.num_blocks)), schedulers, max(1, blocks_per_sm),
                          progs.warps_per_block)
        self.num_sms, self.alu = num_sms, issue_interval
        self.policy, self.bpol = policy, block_policy
        self.nrows = max(int(nrows), int(progs.line.max(initial=0)) + 1)
        self.seed = int(seed or 0)

    def _items(self, g: int) -> list:
        P = self.p
        return [(int(P.at[j]), int(P.kind[j]), int(P.pipe[j]), int(P.cost[j]), int(P.latency[j]),
                 int(P.use[j]), int(P.line[j])) for j in range(P.start[g], P.end[g])]

    def run(self) -> TimingResult:
        lay, P = self.lay, self.p
        M, S, K = lay.M, lay.S, lay.K
        slots = {}                                  # slot -> _Warp
        blocks = {}                                 # block -> [sm, r, warps]
        free_r = [list(range(lay.B - 1, -1, -1)) for _ in range(M)]
        resident = np.zeros(M, np.int64)
        pipe_free = [[0] * N_PIPES for _ in range(M)]
        last = [-1] * lay.G
        stalls = np.zeros((P.num_warps, len(REASONS)), np.int64)
        by_row = np.zeros((self.nrows, len(REASONS)), np.int64)
        issued, idle, active = (np.zeros(M, np.int64) for _ in range(3))
        sm_end = np.zeros(self.num_sms, np.int64)
        state = {"next": 0, "seq": 0, "done": 0}
        self.policy.reset(lay.G, K)
        self.bpol.reset(M)

        def dispatch_all(t):
            while state["next"] < P.num_blocks:
                free = resident < lay.B
                if not free.any():
                    return
                sm = int(self.bpol.pick_sm(free, resident.copy()))
                b = state["next"]
                state["next"] += 1
                r = free_r[sm].pop()
                ws = []
                for w in range(lay.nw):
                    s = lay.slot(sm, r, w)
                    g = b * lay.nw + w
                    wp = _Warp(g, b, w, self._items(g), state["seq"], t, s, s % K)
                    state["seq"] += 1
                    slots[s] = wp
                    ws.append(wp)
                blocks[b] = [sm, r, ws]
                resident[sm] += 1
                for wp in ws:
                    arrive(wp, t)

        def arrive(wp, t):
            """The warp has issued every instruction before its next barrier/exit."""
            if wp.exited or wp.i >= len(wp.items):
                return
            at, kind = wp.item()[0], wp.item()[1]
            if kind == MEM or at != wp.ic or wp.at_barrier:
                return
            sm, r, ws = blocks[wp.block]
            if kind == EXIT:
                wp.exited = True
                stalls[wp.g] = wp.stalls
                del slots[wp.slot]
                if all(x.exited for x in ws):
                    sm_end[sm] = max(sm_end[sm], t + 1)
                    free_r[sm].append(r)
                    resident[sm] -= 1
                    state["done"] += 1
                    del blocks[wp.block]
                    dispatch_all(t + 1)
                    return
            else:
                wp.at_barrier = True
            live = [x for x in ws if not x.exited]
            if live and all(x.at_barrier for x in live):
                for x in live:
                    x.at_barrier = False
                    x.i += 1
                    x.ready = max(x.ready, t + 1)
                for x in live:
                    arrive(x, t + 1)

        dispatch_all(0)
        t = 0
        while state["done"] < P.num_blocks:
            # 1. what each resident warp can do at t
            why = {}
            for s, wp in slots.items():
                sm = s // (S * K)
                if wp.at_barrier:
                    why[s] = R_BARRIER
                elif wp.ic >= wp.dep_pos and wp.dep_ready > t:
                    why[s] = R_MEMORY
                elif (wp.item()[1] == MEM and wp.item()[0] == wp.ic
                      and pipe_free[sm][wp.item()[2]] > t):
                    why[s] = R_PIPE
                elif wp.ready > t:
                    why[s] = R_DEPENDENCY
                else:
                    why[s] = None            # ready
            # 2. each scheduler picks one ready warp
            chosen = []
            for grp in range(lay.G):
                res = [slots[s] for s in range(grp * K, grp * K + K) if s in slots]
                infos = [WarpInfo(w.slot, w.k, w.age, w.block, w.warp, why[w.slot] == R_MEMORY,
                                  w.at_barrier, why[w.slot] is None) for w in res]
                ready = [i for i in infos if i.ready]
                sm = grp // S
                if not ready:
                    if resident[sm] > 0:
                        idle[sm] += 1
                    continue
                info = SchedulerInfo(t, sm, grp % S, grp, last[grp], K, infos, self.seed)
                chosen.append(self.policy.pick(ready, info).slot)
            # 3. stall accounting for this cycle
            for s, wp in slots.items():
                active[s // (S * K)] += 1
                if s in chosen:
                    continue
                r = R_NOT_SELECTED if why[s] is None else why[s]
                wp.stalls[r] += 1
                row = wp.dep_row if r == R_MEMORY else wp.item()[6]
                by_row[row, r] += 1
            # 4. issue, in scheduler order
            for s in chosen:
                wp = slots[s]
                sm = s // (S * K)
                c = wp.ic
                wp.ic += 1
                wp.ready = t + self.alu
                last[s // K] = s % K
                issued[sm] += 1
                while wp.i < len(wp.items) and wp.item()[1] == MEM and wp.item()[0] == c:
                    at, kind, pipe, cost, lat, use, row = wp.item()
                    start = max(t, pipe_free[sm][pipe])
                    pipe_free[sm][pipe] = start + cost
                    if use >= 0:
                        ready_at, pos = start + lat, c + 1 + use
                        if wp.dep_ready <= t:
                            wp.dep_pos, wp.dep_ready, wp.dep_row = pos, ready_at, row
                        else:
                            wp.dep_pos = min(wp.dep_pos, pos)
                            if ready_at > wp.dep_ready:
                                wp.dep_ready, wp.dep_row = ready_at, row
                    wp.i += 1
            for s in chosen:
                if s in slots:
                    arrive(slots[s], t)
            t += 1
        full = lambda a: np.concatenate([a, np.zeros(self.num_sms - M, np.int64)])  # noqa: E731
        return TimingResult(cycles=int(sm_end.max(initial=0)), sm_cycles=sm_end, issued=full(issued),
                            schedulers_per_sm=S, stalls=stalls, stalls_by_row=by_row,
                            idle=full(idle), active_warp_cycles=full(active), blocks_per_sm=lay.B)
