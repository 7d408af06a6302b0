"""Message passing: the accesses a release pattern and an acquire pattern order.

The PTX memory model ("Memory Consistency Model": a release pattern, a fence
then a strong write of a flag M, synchronises with an acquire pattern, a
strong read of M that observes that write) as racecheck judges it. An agent
is what issues the patterns: a block for global memory, a block's warp for
shared memory. An access is ordered before another agent's access when

- its agent then issued a fence and after it a strong write (atomic or
  volatile store) of a flag (`released`: the release side, per access), and
- the other agent, before its access, made a strong read of a flag that
  the first agent had so written after that fence (`Acquired`: the acquire
  side, per pair of accesses). A flag another agent published orders
  nothing of this one: of two producers with a flag each, a consumer that
  waited for one flag is ordered after that producer's writes only; nor
  does a flag the agent published before the access was fenced.

Within a block (global memory, `threads` given) a flag read orders only
what the reading thread sees: its own later accesses, its warp's after a
__syncwarp (any lane's, in lock-step before sm_70), its block's after a
__syncthreads; and a fence releases only what its thread sees likewise
(`fence_releasing`).

Happens-before is transitive: a flag handed on (a lock passed from block
to block, a value handed down a chain behind each block's flag) orders the
first holder's accesses before the last one's. A reader of a flag that a
relay published (an agent that had itself read another agent's flag) is
taken as ordered after every released access (`Acquired.handed`), as every
reader was before flags were told apart: a race may be missed there, none
is made up.

`ordered` applies both sides to pairs of rows (an `Acquired`, or a bool per
row where every published flag orders every released access: the unit
tests' random orders); `ordered_one` is the same rule for one pair in plain
Python, for the reference finders.
"""
from __future__ import annotations

from functools import cached_property
from typing import NamedTuple, Optional, Union

import numpy as np

from .accesses import distinct, spread


def fence_keys(agents: np.ndarray, seqs: np.ndarray, row_seq: np.ndarray) -> tuple:
    """(sorted keys, span) of fence records, one per fence: its agent's key
    (a block, or a block's warp) * span + its seq, for last_fence_before."""
    span = max(int(row_seq.max()), int(seqs.max())) + 2
    return np.sort(agents * span + seqs), span


def last_fence_before(fkey: np.ndarray, span: int, agent: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Per (agent key, seq): the seq of the agent's last fence before seq (-1: none)."""
    k = np.searchsorted(fkey, agent * span + seq) - 1
    at = fkey[np.maximum(k, 0)]
    return np.where((k >= 0) & (at // span == agent), at % span, -1)


def first_fence_after(fkey: np.ndarray, span: int, agent: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Per (agent key, seq): the seq of the agent's first fence after seq
    (none: the largest int64)."""
    k = np.searchsorted(fkey, agent * span + seq, "right")
    at = fkey[np.minimum(k, len(fkey) - 1)]
    return np.where((k < len(fkey)) & (at // span == agent), at % span, np.iinfo(np.int64).max)


def _first_in_group(gkeys: np.ndarray, gseqs: np.ndarray, key: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Per k: the first of gseqs after seq[k] among the entries whose group key
    is key[k] (gkeys, gseqs: sorted by key, then seq); none: the largest int64."""
    none = np.iinfo(np.int64).max
    out = np.full(len(key), none, np.int64)
    if not len(gkeys):
        return out
    groups = distinct(gkeys)
    rank = np.searchsorted(groups, gkeys)
    span = int(gseqs.max()) + 2
    comp = rank * span + gseqs                       # sorted
    at = np.minimum(np.searchsorted(groups, key), len(groups) - 1)
    ok = (groups[at] == key) & (seq < span - 1)     # (a seq past every entry: none)
    i = np.searchsorted(comp, at[ok] * span + np.maximum(seq[ok], -1), "right")
    inside = (i < len(comp))
    inside[inside] = comp[i[inside]] // span == at[ok][inside]
    vals = np.full(int(ok.sum()), none, np.int64)
    vals[inside] = gseqs[i[inside]]
    out[ok] = vals
    return out


def fence_releasing(fences: tuple, block: np.ndarray, warp: np.ndarray, lane: np.ndarray,
                    epoch: np.ndarray, wsync: np.ndarray, seq: np.ndarray, its: bool) -> np.ndarray:
    """Per access (block, warp, lane, barrier interval, warp-sync interval,
    seq): the seq of the first __threadfence after it that orders it (none:
    the largest int64). A fence orders the accesses of the thread that made
    it; a barrier makes the accesses before it observed by every thread of
    the block, so a fence in a later barrier interval orders them too
    (cumulativity, PTX memory model), and so does one of the warp's lanes
    after a __syncwarp since the access, or any lane of a warp that runs in
    lock-step (before sm_70). fences: (block, seq, warp, active lanes,
    barrier interval, warp-sync interval) per fence record; a block's
    barrier intervals and a warp's warp-sync intervals grow with the seq, as
    in a trace (fence_releasing_reference is the rule for one access)."""
    fb, fs, fw, fm, fe, fws = (np.asarray(a).astype(np.int64) for a in fences)
    block, warp, lane, epoch, wsync, seq = (np.asarray(a).astype(np.int64) for a in (block, warp, lane, epoch, wsync, seq))
    ne = int(max(fe.max(initial=0), epoch.max(initial=0))) + 2
    nw = int(max(fw.max(initial=0), warp.max(initial=0))) + 1
    # (a) the block's first fence in a later barrier interval: per (block, interval) the first
    o = np.lexsort((fs, fe, fb))
    gk = fb[o] * ne + fe[o]
    k = np.searchsorted(gk, block * ne + epoch + 1)
    got = fs[o][np.minimum(k, len(o) - 1)]
    later = np.where((k < len(o)) & (gk[np.minimum(k, len(o) - 1)] // ne == block), got, np.iinfo(np.int64).max)
    # (b) of the access's warp in its barrier interval: any lane after it in lock-step; a lane
    # after a __syncwarp since it under independent thread scheduling
    wk = (fb * nw + fw) * ne + fe
    rk = (block * nw + warp) * ne + epoch
    if not its:
        o = np.lexsort((fs, wk))
        warp_fence = _first_in_group(wk[o], fs[o], rk, seq)
    else:
        nws = int(max(fws.max(initial=0), wsync.max(initial=0))) + 2
        o = np.lexsort((fs, fws, wk))
        groups = distinct(wk)
        grank = np.searchsorted(groups, wk[o])
        at = np.minimum(np.searchsorted(groups, rk), max(len(groups) - 1, 0))
        known = groups[at] == rk if len(groups) else np.zeros(len(rk), bool)
        g2 = grank * nws + fws[o]
        i = np.searchsorted(g2, at * nws + wsync + 1)
        ok = known & (i < len(g2))
        ok[ok] = g2[i[ok]] // nws == at[ok]
        warp_fence = np.where(ok, fs[o][np.minimum(i, len(o) - 1)], np.iinfo(np.int64).max)
    # (c) one the access's own thread made after it
    bits = (fm[:, None] >> np.arange(32)) & 1
    rec, ln = np.nonzero(bits)
    tk = (fb[rec] * nw + fw[rec]) * 32 + ln
    o = np.lexsort((fs[rec], tk))
    own = _first_in_group(tk[o], fs[rec][o], (block * nw + warp) * 32 + lane, seq)
    return np.minimum(np.minimum(later, warp_fence), own)


def fence_releasing_reference(fences: tuple, access: tuple, its: bool) -> int:
    """fence_releasing of one access (block, warp, lane, interval, warp-sync
    interval, seq), in plain Python."""
    b, w, ln, e, ws, sq = (int(v) for v in access)
    best = np.iinfo(np.int64).max
    for fb, fs, fw, fm, fe, fws in zip(*(np.asarray(a).tolist() for a in fences)):
        if fb != b or fs <= sq:
            continue
        if (fe > e or (fw == w and fe == e and (not its or fm >> ln & 1 or fws > ws))):
            best = min(best, fs)
    return best


def released(of: np.ndarray, keys: np.ndarray, strong_w: np.ndarray, seq: np.ndarray,
             fkey: np.ndarray, span: int) -> tuple:
    """The release side: (per strong write of rows `strong_w`, whether a
    fence of its agent came before it; per row, whether it comes before its
    agent's last fence that a strong write follows). `of`: each row's agent
    (an index into `keys`, the agents' keys in `fkey`)."""
    ws = seq[strong_w].astype(np.int64)
    pub = last_fence_before(fkey, span, keys[of[strong_w]], ws) >= 0
    last_w = np.full(len(keys), -1, np.int64)
    np.maximum.at(last_w, of[strong_w], ws)
    has = np.flatnonzero(last_w >= 0)
    until = np.full(len(keys), -1, np.int64)
    until[has] = last_fence_before(fkey, span, keys[has], last_w[has])
    return pub, seq < until[of]


class Places(NamedTuple):
    """Where accesses are within their blocks: each one's warp, lane,
    barrier interval and warp-sync interval (intervals grow with the seq
    within a block, and within a warp)."""
    warp: np.ndarray
    lane: np.ndarray
    epoch: np.ndarray
    wsync: np.ndarray

    def at(self, k) -> "Places":
        """The places of rows k (an index or a mask)."""
        return Places(*(np.asarray(a)[k] for a in self))


class Threads(NamedTuple):
    """What a flag read orders within a block (Acquired): the rows' places,
    the reads' places, and whether lanes are scheduled independently (sm_70
    on; before, a warp runs in lock-step)."""
    rows: Places
    reads: Places
    its: bool


class _ReadIndex:
    """Strong reads of published flags, by reader key (a block, a warp or a
    thread) and flag, then time: the first after a time, the latest before
    one or before an interval (a barrier or warp-sync interval, which grows
    with the time within one reader)."""

    def __init__(self, key: np.ndarray, flag: np.ndarray, seq: np.ndarray, nf: int,
                 interval: Optional[np.ndarray] = None) -> None:
        self.nf = nf
        self.readers = distinct(key)
        rk = np.searchsorted(self.readers, key) * nf + flag
        self.rpairs = distinct(rk)
        self.times = distinct(seq)
        self.width = len(self.times) + 1
        pr, tr = np.searchsorted(self.rpairs, rk), np.searchsorted(self.times, seq)
        o = np.lexsort((tr, pr))
        self.rkeys = pr[o] * self.width + tr[o]
        self.interval = np.zeros(len(self.times), np.int64)   # each time's (one record's) interval
        if interval is not None:
            self.interval[tr] = interval
            self.nint = int(interval.max(initial=0)) + 2
            self.ikeys = pr[o] * self.nint + interval[o]      # sorted: intervals grow with the time

    def pair(self, reader: np.ndarray, flag: np.ndarray) -> tuple:
        """(pair rank, known) of (reader, flag): known where it read the flag."""
        if not len(self.readers):
            return np.zeros(len(reader), np.int64), np.zeros(len(reader), bool)
        rdr = np.minimum(np.searchsorted(self.readers, reader), len(self.readers) - 1)
        rk = rdr * self.nf + flag
        pr = np.minimum(np.searchsorted(self.rpairs, rk), len(self.rpairs) - 1)
        return pr, (self.readers[rdr] == reader) & (self.rpairs[pr] == rk)

    def first_after(self, reader: np.ndarray, flag: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The time of reader's first read of flag after t (none: the largest int64)."""
        none = np.iinfo(np.int64).max
        pr, known = self.pair(reader, flag)
        k = np.searchsorted(self.rkeys, pr * self.width + np.searchsorted(self.times, t, "right"))
        known &= (t < none) & (k < len(self.rkeys))
        known[known] = self.rkeys[k[known]] // self.width == pr[known]
        got = np.full(len(reader), none, np.int64)
        got[known] = self.times[self.rkeys[k[known]] % self.width]
        return got

    @cached_property
    def by_reader(self) -> tuple:
        """(reader key, time) of every read, sorted."""
        pr = self.rkeys // self.width
        reader, time = self.readers[self.rpairs[pr] // self.nf], self.times[self.rkeys % self.width]
        o = np.lexsort((time, reader))
        return reader[o], time[o]

    def latest_before(self, reader: np.ndarray, flag: np.ndarray, t: np.ndarray) -> np.ndarray:
        """The time of reader's latest read of flag before t (none: -1)."""
        pr, known = self.pair(reader, flag)
        k = np.searchsorted(self.rkeys, pr * self.width + np.searchsorted(self.times, t)) - 1
        known &= k >= 0
        known[known] = self.rkeys[k[known]] // self.width == pr[known]
        got = np.full(len(reader), -1, np.int64)
        got[known] = self.times[self.rkeys[k[known]] % self.width]
        return got

    def latest_below(self, reader: np.ndarray, flag: np.ndarray, iv: np.ndarray) -> np.ndarray:
        """The time of reader's latest read of flag in an interval below iv (none: -1)."""
        pr, known = self.pair(reader, flag)
        k = np.searchsorted(self.ikeys, pr * self.nint + np.minimum(iv, self.nint - 1)) - 1
        known &= k >= 0
        known[known] = self.ikeys[k[known]] // self.nint == pr[known]
        got = np.full(len(reader), -1, np.int64)
        got[known] = self.times[self.rkeys[k[known]] % self.width]
        return got


class Acquired:
    """The acquire side of a set of rows, per pair: has row y's agent, before
    y, read a flag that row x's agent published after x (a strong write
    after a fence after x: after `after[x]`) and before that read?

    agent, seq, after: per row (after: the seq of its agent's first fence
    after it, `first_fence_after`; none: the largest int64). pub_*: the
    fenced strong writes (agent, flag, seq); read_*: the strong reads
    (agent, flag, seq). Flags are ints (a location's unit, or a block and
    unit for shared memory)."""

    def __init__(self, agent: np.ndarray, seq: np.ndarray, after: np.ndarray, pub_agent: np.ndarray,
                 pub_flag: np.ndarray, pub_seq: np.ndarray, read_agent: np.ndarray,
                 read_flag: np.ndarray, read_seq: np.ndarray, threads: Optional[Threads] = None) -> None:
        """threads: where the rows and the reads are in their blocks, where a
        read orders only what its thread sees (`visible`); None: every read
        of an agent orders all its later accesses."""
        self.threads = threads
        self.agent = np.asarray(agent).astype(np.int64)
        self.seq = np.asarray(seq).astype(np.int64)
        self.after = np.asarray(after).astype(np.int64)
        self.published = (pub_agent, pub_flag, pub_seq)      # (for pair_reference)
        self.reads = (read_agent, read_flag, read_seq)
        big = np.iinfo(np.int64).max
        # flags as dense numbers; publications by (agent, flag), then seq
        self._flags = distinct(np.asarray(pub_flag))
        nf = len(self._flags)
        pk = np.asarray(pub_agent).astype(np.int64) * nf + np.searchsorted(self._flags, pub_flag)
        ps = np.asarray(pub_seq).astype(np.int64)
        o = np.lexsort((ps, pk))
        self._pk, self._ps = pk[o], ps[o]
        self._pkeys = distinct(self._pk)                # the (agent, flag) keys published
        self._pspan = int(self._ps.max()) + 2 if len(self._ps) else 2
        self._pcomp = np.searchsorted(self._pkeys, self._pk) * self._pspan + self._ps   # sorted
        first_any = np.full(nf, big, np.int64)       # per flag, its first publication by anyone
        np.minimum.at(first_any, self._pk % max(nf, 1), self._ps)
        # the reads of published flags, by (reader, flag), then seq
        read_flag = np.asarray(read_flag)
        f = np.minimum(np.searchsorted(self._flags, read_flag), max(nf - 1, 0))
        read_on = (self._flags[f] == read_flag) if nf else np.zeros(len(read_flag), bool)
        ra = np.asarray(read_agent)[read_on].astype(np.int64)
        rf, rs = f[read_on], np.asarray(read_seq)[read_on].astype(np.int64)
        re_ = None
        if threads is not None:
            # the reads by block (its barrier intervals), by warp (its warp-sync intervals), by thread
            rw, rl, re_, rws = (np.asarray(a)[read_on].astype(np.int64) for a in threads.reads)
            self._nw = int(max(rw.max(initial=0), np.asarray(threads.rows.warp).max(initial=0))) + 1
            self._by_warp = _ReadIndex(ra * self._nw + rw, rf, rs, nf, rws)
            self._by_thread = _ReadIndex((ra * self._nw + rw) * 32 + rl, rf, rs, nf)
        self._reads = _ReadIndex(ra, rf, rs, nf, re_)
        self._readers = self._reads.readers
        # `any`: a read of a flag after its first publication by any agent (an
        # upper bound of the pairs: `pairs` is true only for rows it marks)
        seen = rs > first_any[rf]
        obs = np.full(len(self._readers), big, np.int64)
        np.minimum.at(obs, np.searchsorted(self._readers, ra[seen]), rs[seen])
        # `handed`: a read, before the row, of a flag that an agent which had read
        # one itself (at any time: more than a chain needs) had published before:
        # happens-before is transitive (a lock or a flag handed down a chain of
        # blocks orders the first holder's accesses before the last one's), so
        # such a row is taken as ordered after every released access, as
        # before flags were told apart (a race may be missed, none made up)
        pa, pf = self._pk // max(nf, 1), self._pk % max(nf, 1)
        other = _by_another(pa, pf, self._ps, nf, ra, rf) < rs      # a read of another agent's flag
        relays = distinct(ra[other])
        on = np.isin(pa, relays)
        handed = _by_another(pa[on], pf[on], self._ps[on], nf, ra, rf) < rs
        hand = np.full(len(self._readers), big, np.int64)
        np.minimum.at(hand, np.searchsorted(self._readers, ra[handed]), rs[handed])
        self.any = np.zeros(len(self.agent), bool)
        self.handed = np.zeros(len(self.agent), bool)
        if len(self._readers):
            at = np.minimum(np.searchsorted(self._readers, self.agent), len(self._readers) - 1)
            mine = self._readers[at] == self.agent
            self.any = mine & (obs[at] < self.seq)
            self.handed = mine & (hand[at] < self.seq)

    def pair_reference(self, x: int, y: int) -> bool:
        """`pairs` of one pair, in plain Python: a read by y's agent before y
        of a flag that x's agent published after x's fence and before that
        read; or of a flag that an agent which had itself read a published
        flag (a relay) published before that read (`handed`)."""
        wa, ra, sy, ax = int(self.agent[x]), int(self.agent[y]), int(self.seq[y]), int(self.after[x])
        pubs = list(zip(*(np.asarray(a).tolist() for a in self.published)))
        reads = list(zip(*(np.asarray(a).tolist() for a in self.reads)))
        relays = {a for a, f, s in reads if any(pa != a and pf == f and ps < s for pa, pf, ps in pubs)}
        if any(a == ra and s < sy and any(pa in relays and pa != a and pf == f and ps < s for pa, pf, ps in pubs)
               for a, f, s in reads):
            return True
        seen = [True] * len(reads)
        if self.threads is not None:
            wy, ly, ey, wsy = (int(np.asarray(a)[y]) for a in self.threads.rows)
            its = self.threads.its
            seen = [e < ey or (w == wy and (not its or ln == ly or ws < wsy))
                    for w, ln, e, ws in zip(*(np.asarray(a).tolist() for a in self.threads.reads))]
        return any(a == ra and s < sy and v and any(pa == wa and pf == f and ax < ps < s for pa, pf, ps in pubs)
                   for (a, f, s), v in zip(reads, seen))

    def publication_after(self, agents: np.ndarray, flag: np.ndarray, after: np.ndarray) -> np.ndarray:
        """Per k: the seq of agents[k]'s first publication of flag[k] (a dense
        number, `reads_before`') after seq after[k]; none: the largest int64."""
        nf = len(self._flags)
        out = np.full(len(agents), np.iinfo(np.int64).max, np.int64)
        if not nf:
            return out
        key = np.asarray(agents).astype(np.int64) * nf + flag
        krank = np.minimum(np.searchsorted(self._pkeys, key), len(self._pkeys) - 1)
        # the first of the key's run of publications with seq > after
        i = np.searchsorted(self._pcomp, krank * self._pspan
                            + np.minimum(after, self._pspan - 2), "right")
        ok = (self._pkeys[krank] == key) & (i < len(self._pcomp))
        ok[ok] = self._pcomp[i[ok]] // self._pspan == krank[ok]
        out[ok] = self._ps[i[ok]]
        return out

    def pairs(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Per pair (x[k], y[k]) of rows: does y's agent acquire, before y, a
        flag x's agent published after x's fence? The first read of such a
        flag after its publication (`first_read_after`) by y's agent must
        come before y; with `threads`, one that y's thread sees (`_visible`)."""
        out = self.handed[y].copy()
        ask = np.flatnonzero(self.any[y] & ~out & (self.after[x] < self.seq[y]))
        if not len(ask) or not len(self._flags):
            return out
        x, y = x[ask], y[ask]
        if self.threads is None:
            out[ask] = self.first_read_after(self._reads, x, self.agent[y]) < self.seq[y]
        else:
            out[ask] = self._visible(x, y)
        return out

    def _visible(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """pairs with `threads`: y's thread sees a read of a flag x's agent
        published after x's fence, where the read came before y and was
        made by y's own thread, or by a lane of its warp before a __syncwarp
        since (any lane, in lock-step), or by its block before a __syncthreads
        since (the first such read after the publication, per reader)."""
        wy, ly, ey, wsy = (np.asarray(a)[y].astype(np.int64) for a in self.threads.rows)
        its, sy = self.threads.its, self.seq[y]
        block = self.agent[y]
        warp = block * self._nw + wy
        out = np.zeros(len(x), bool)
        for index, reader, ok in ((self._reads, block, lambda t, i: i < ey),
                                  (self._by_warp, warp, (lambda t, i: i < wsy) if its else (lambda t, i: t < sy)),
                                  (self._by_thread, warp * 32 + ly, lambda t, i: t < sy)):
            first = self.first_read_after(index, x, reader)
            seen = first < np.iinfo(np.int64).max
            iv = index.interval[np.minimum(np.searchsorted(index.times, first), max(len(index.times) - 1, 0))]
            out |= seen & ok(first, iv)
        return out

    def first_read_after(self, index: _ReadIndex, x: np.ndarray, reader: np.ndarray) -> np.ndarray:
        """Per k: the time of reader[k]'s (index's key) first read of a flag
        that row x[k]'s agent published after x[k]'s fence, after that
        publication (none: the largest int64). Worked out once per (x's
        agent, x's fence, reader): every flag of the agent is asked, unless
        that would take more than FLAGS_AT_ONCE lookups
        (`_first_read_after_any_flag`)."""
        wa, after, reader, which = _distinct_keys(self.agent[x], self.after[x], reader)
        nf = len(self._flags)
        out = np.full(len(wa), np.iinfo(np.int64).max, np.int64)
        if not nf or not len(index.readers):
            return out[which]
        lo = np.searchsorted(self._pkeys, wa * nf)
        hi = np.searchsorted(self._pkeys, (wa + 1) * nf)
        if int((hi - lo).sum()) > FLAGS_AT_ONCE:
            return self._first_read_after_any_flag(index, wa, after, reader)[which]
        at, origin = spread(lo, hi - lo)
        flag = self._pkeys[at] % nf
        pub = self.publication_after(wa[origin], flag, after[origin])
        np.minimum.at(out, origin, index.first_after(reader[origin], flag, pub))
        return out[which]

    def _first_read_after_any_flag(self, index: _ReadIndex, wa: np.ndarray, after: np.ndarray,
                                   reader: np.ndarray) -> np.ndarray:
        """first_read_after where asking it flag by flag would take more than
        FLAGS_AT_ONCE (agents that each published hundreds of flags): the
        reader's first read of any published flag after wa's first
        publication after `after`, no later than the flag-by-flag answer (it
        may order what that would not: a race missed, none made up)."""
        agents, seqs = self._publications_by_agent
        pub = _first_in_group(agents, seqs, wa, after)
        return _first_in_group(*index.by_reader, reader, pub)

    @cached_property
    def _publications_by_agent(self) -> tuple:
        """(agent, seq) of every publication, sorted."""
        agent = self._pk // max(len(self._flags), 1)
        o = np.lexsort((self._ps, agent))
        return agent[o], self._ps[o]

    def reads_before(self, y: np.ndarray) -> tuple:
        """(count, flag, latest) per row y: how many published flags its agent
        read before it; where one, that flag (a dense number,
        `publication_after`'s) and the agent's latest read of it before y.
        Row y's agent acquires from an agent a exactly where a published
        one of these flags after the access and before that latest read."""
        nf, n, reads = len(self._flags), len(y), self._reads
        count, flag, latest = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
        if not nf or not len(reads.readers):
            return count, flag, latest
        firsts, first_flag = self._first_reads
        ra, sy = self.agent[y], self.seq[y]
        rdr = np.minimum(np.searchsorted(reads.readers, ra), len(reads.readers) - 1)
        q = np.flatnonzero(reads.readers[rdr] == ra)
        w, before = reads.width, np.searchsorted(reads.times, sy[q])     # read times < sy: ranks < before
        lo = np.searchsorted(firsts, rdr[q] * w)
        count[q] = np.searchsorted(firsts, rdr[q] * w + before) - lo
        one = q[count[q] == 1]
        if len(one):
            f = flag[one] = first_flag[np.searchsorted(firsts, rdr[one] * w)]
            latest[one] = (reads.latest_before(ra[one], f, sy[one]) if self.threads is None
                           else self._latest_visible(y[one], f))    # the latest y's thread sees (-1: none)
        return count, flag, latest

    def _latest_visible(self, y: np.ndarray, flag: np.ndarray) -> np.ndarray:
        """Per row y: the latest read of `flag` that y's thread sees (`_visible`'s
        rule) before y (none: -1)."""
        wy, ly, ey, wsy = (np.asarray(a)[y].astype(np.int64) for a in self.threads.rows)
        its, sy, block = self.threads.its, self.seq[y], self.agent[y]
        warp = block * self._nw + wy
        got = self._reads.latest_below(block, flag, ey)
        got = np.maximum(got, self._by_warp.latest_below(warp, flag, wsy) if its
                         else self._by_warp.latest_before(warp, flag, sy))
        got = np.maximum(got, self._by_thread.latest_before(warp * 32 + ly, flag, sy))
        return got

    @cached_property
    def _first_reads(self) -> tuple:
        """(keys, flags): per (reader, flag) read, its first read as reader
        rank * width + time rank, sorted, and the flag of each."""
        reads, nf = self._reads, len(self._flags)
        w = reads.width
        pair = reads.rkeys // w
        head = np.ones(len(pair), bool)
        head[1:] = pair[1:] != pair[:-1]          # the first read of each (reader, flag)
        rp = reads.rpairs[pair[head]]
        keys = (rp // nf) * w + reads.rkeys[head] % w
        o = np.argsort(keys, kind="stable")
        return keys[o], (rp % nf)[o]


def _by_another(pa: np.ndarray, pf: np.ndarray, ps: np.ndarray, nf: int, ra: np.ndarray,
                rf: np.ndarray) -> np.ndarray:
    """Per read (agent ra, flag rf): the first publication of its flag by an
    agent other than ra (publications: agent pa, flag pf, seq ps; none: the
    largest int64): per flag the first publication and the first by another
    agent than that one's."""
    big = np.iinfo(np.int64).max
    first, who, second = np.full(nf, big, np.int64), np.full(nf, -1, np.int64), np.full(nf, big, np.int64)
    if len(ps):
        o = np.lexsort((ps, pf))
        f, a, t = pf[o], pa[o], ps[o]
        head = np.ones(len(f), bool)
        head[1:] = f[1:] != f[:-1]
        first[f[head]], who[f[head]] = t[head], a[head]
        later = a != who[f]                      # by another agent than the flag's first publisher
        np.minimum.at(second, f[later], t[later])
    return np.where(who[rf] != ra, first[rf], second[rf])


KEY_BITS = 62           # pairs' (agent, agent, fence) keys as one int64 while they fit

# first_read_after's (agent, flag) lookups at most per call, beyond which it
# asks for any flag (the flag-by-flag way took 60 s of a 256-block check where
# every block published 256 atomic bins after its fence and read them)
FLAGS_AT_ONCE = 1 << 22


def _distinct_keys(wa: np.ndarray, after: np.ndarray, reader: np.ndarray) -> tuple:
    """(the distinct (wa, after, reader) triples as three arrays, and each
    input's index among them): one int64 key per triple where it fits."""
    cols = [np.asarray(c).astype(np.int64) for c in (wa, after, reader)]
    vals = [distinct(c) for c in cols]
    sizes = [len(v) for v in vals]
    if sizes[0] * sizes[1] * sizes[2] < 1 << KEY_BITS:
        r = [np.searchsorted(v, c) for v, c in zip(vals, cols)]
        uniq, which = np.unique((r[0] * sizes[1] + r[1]) * sizes[2] + r[2], return_inverse=True)
        got = (vals[0][uniq // sizes[2] // sizes[1]], vals[1][uniq // sizes[2] % sizes[1]], vals[2][uniq % sizes[2]])
    else:
        uniq, which = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        got = tuple(uniq.T)
    return got + (which.ravel(),)


Acquire = Union[Acquired, np.ndarray]


def ordered(release: Optional[np.ndarray], acquire: Optional[Acquire], x: np.ndarray,
            y: np.ndarray) -> np.ndarray:
    """Per pair (x[k] before y[k]): does message passing order them?"""
    if release is None:
        return np.zeros(len(x), bool)
    rel = release[x]
    if not isinstance(acquire, Acquired):
        return rel & acquire[y]
    out = np.zeros(len(x), bool)
    sel = np.flatnonzero(rel)
    out[sel] = acquire.pairs(x[sel], y[sel])
    return out


def ordered_one(release: Optional[np.ndarray], acquire: Optional[Acquire], x: int, y: int) -> bool:
    """`ordered` of one pair, in plain Python."""
    if release is None or not release[x]:
        return False
    if not isinstance(acquire, Acquired):
        return bool(acquire[y])
    return acquire.pair_reference(x, y)
