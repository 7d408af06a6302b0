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

`ordered` applies both sides to pairs of rows (an `Acquired`, or a bool per
row where every published flag orders every released access: the unit
tests' random orders); `ordered_one` is the same rule for one pair in plain
Python, for the reference finders.
"""
from __future__ import annotations

from typing import Optional, Union

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
                 read_flag: np.ndarray, read_seq: np.ndarray) -> None:
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
        on = (self._flags[f] == read_flag) if nf else np.zeros(len(read_flag), bool)
        ra = np.asarray(read_agent)[on].astype(np.int64)
        rf, rs = f[on], np.asarray(read_seq)[on].astype(np.int64)
        self._readers = distinct(ra)
        rk = np.searchsorted(self._readers, ra) * nf + rf
        self._rpairs = distinct(rk)
        self._times = distinct(rs)
        self._width = len(self._times) + 1
        self._rkeys = np.sort(np.searchsorted(self._rpairs, rk) * self._width
                              + np.searchsorted(self._times, rs))
        # `any`: a read of a flag after its first publication by any agent (an
        # upper bound of the pairs: `pairs` is true only for rows it marks)
        seen = rs > first_any[rf]
        obs = np.full(len(self._readers), big, np.int64)
        np.minimum.at(obs, np.searchsorted(self._readers, ra[seen]), rs[seen])
        self.any = np.zeros(len(self.agent), bool)
        if len(self._readers):
            at = np.minimum(np.searchsorted(self._readers, self.agent), len(self._readers) - 1)
            self.any = (self._readers[at] == self.agent) & (obs[at] < self.seq)

    def pair_reference(self, x: int, y: int) -> bool:
        """`pairs` of one pair, in plain Python: a read by y's agent before y
        of a flag that x's agent published after x's fence and before that read."""
        wa, ra, sy, ax = int(self.agent[x]), int(self.agent[y]), int(self.seq[y]), int(self.after[x])
        pubs = list(zip(*(np.asarray(a).tolist() for a in self.published)))
        return any(a == ra and s < sy and any(pa == wa and pf == f and ax < ps < s for pa, pf, ps in pubs)
                   for a, f, s in zip(*(np.asarray(a).tolist() for a in self.reads)))

    def publication_after(self, agents: np.ndarray, flag: np.ndarray, after: np.ndarray) -> np.ndarray:
        """Per k: the seq of agents[k]'s first publication of flag[k] (a dense
        number, `latest_reads`') after seq after[k]; none: the largest int64."""
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
        flag x's agent published after x's fence?"""
        out = np.zeros(len(x), bool)
        ask = np.flatnonzero(self.any[y] & (self.after[x] < self.seq[y]))
        nf = len(self._flags)
        if not len(ask) or not nf:
            return out
        wa, ra, sy = self.agent[x[ask]], self.agent[y[ask]], self.seq[y[ask]]
        # x's agent's flags: the distinct keys of its publications
        keys = self._pkeys
        lo = np.searchsorted(keys, wa * nf)
        hi = np.searchsorted(keys, (wa + 1) * nf)
        at, origin = spread(lo, hi - lo)
        flag = keys[at] % nf
        pub = self.publication_after(wa[origin], flag, self.after[x[ask]][origin])
        # y's agent's first read of that flag after that publication, before y
        rdr = np.minimum(np.searchsorted(self._readers, ra[origin]), len(self._readers) - 1)
        rk = rdr * nf + flag
        pr = np.minimum(np.searchsorted(self._rpairs, rk), len(self._rpairs) - 1)
        known = (self._readers[rdr] == ra[origin]) & (self._rpairs[pr] == rk)
        known &= pub < np.iinfo(np.int64).max
        k = np.searchsorted(self._rkeys, pr * self._width + np.searchsorted(self._times, pub, "right"))
        known &= k < len(self._rkeys)
        k = np.minimum(k, len(self._rkeys) - 1)
        hit = known & (self._rkeys[k] // self._width == pr)
        hit &= self._times[np.minimum(self._rkeys[k] % self._width, len(self._times) - 1)] < sy[origin]
        got = np.zeros(len(ask), bool)
        np.logical_or.at(got, origin[hit], True)
        out[ask] = got
        return out

    def latest_reads(self, y: np.ndarray) -> tuple:
        """(k, flag, seq): for each row y[k], each flag its agent read before
        it, the latest such read (flags as dense numbers, `publication_after`'s).
        Row y's agent acquires from an agent a exactly where, for some of these,
        a published the flag before that read."""
        nf = len(self._flags)
        ra, sy = self.agent[y], self.seq[y]
        known = np.zeros(len(y), bool)
        rdr = np.zeros(len(y), np.int64)
        if len(self._readers) and nf:
            rdr = np.minimum(np.searchsorted(self._readers, ra), len(self._readers) - 1)
            known = self._readers[rdr] == ra
        q = np.flatnonzero(known)
        lo = np.searchsorted(self._rpairs, rdr[q] * nf)
        hi = np.searchsorted(self._rpairs, (rdr[q] + 1) * nf)
        pr, origin = spread(lo, hi - lo)
        k = np.searchsorted(self._rkeys, pr * self._width + np.searchsorted(self._times, sy[q][origin])) - 1
        ok = (k >= 0) & (self._rkeys[np.maximum(k, 0)] // self._width == pr)
        seq = self._times[np.minimum(self._rkeys[np.maximum(k, 0)] % self._width, len(self._times) - 1)]
        return q[origin][ok], (self._rpairs[pr] % nf)[ok], seq[ok]


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
