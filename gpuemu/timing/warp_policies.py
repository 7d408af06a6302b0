"""The built-in warp scheduling policies (interface: warp_policy.py).

Each is a few lines: `pick` states the rule, `priority` is the same rule as
array arithmetic for the fast engine.
"""
from __future__ import annotations

import numpy as np

from .warp_policy import IssueView, SchedulerInfo, WarpInfo, WarpPolicy, resolve_policy

_BIG = 1 << 40


def _rr_distance(k, last, slots):
    """How far slot position k comes after `last` in circular order (0: next)."""
    return (k - last - 1) % slots


class LooseRoundRobin(WarpPolicy):
    """Loose round robin: the first ready warp after the one issued last, in
    slot order, wrapping around (a warp that cannot issue is skipped)."""
    name = "lrr"

    def pick(self, ready: list, sched: SchedulerInfo) -> WarpInfo:
        return min(ready, key=lambda w: _rr_distance(w.k, sched.last, sched.slots))

    def priority(self, view: IssueView) -> np.ndarray:
        return -_rr_distance(view.k, view.last[view.group], view.slots)


class GreedyThenOldest(WarpPolicy):
    """Greedy-then-oldest (Rogers et al., MICRO 2012): keep issuing the warp
    issued last while it can; otherwise the oldest ready warp."""
    name = "gto"

    def pick(self, ready: list, sched: SchedulerInfo) -> WarpInfo:
        for w in ready:
            if w.k == sched.last:
                return w
        return min(ready, key=lambda w: w.age)

    def priority(self, view: IssueView) -> np.ndarray:
        return np.where(view.k == view.last[view.group], _BIG, -view.age)


class TwoLevel(WarpPolicy):
    """Two-level (Narasiman et al., MICRO 2011; Gebhart et al., ISCA 2011):
    an active set of at most `active` warps per scheduler -- the oldest
    resident warps that are neither waiting for a load's value nor at a
    barrier; the others are pending. Loose round robin among ready active
    warps; a pending warp issues only when no active warp can. A warp that
    starts waiting for memory drops to pending and the oldest pending warp
    that is not waiting takes its place."""
    name = "two_level"

    def __init__(self, active: int = 4) -> None:
        self.active = int(active)

    def _active_set(self, resident: list) -> set:
        cand = sorted((w for w in resident if not w.waiting_memory and not w.at_barrier),
                      key=lambda w: w.age)
        return {w.slot for w in cand[: self.active]}

    def pick(self, ready: list, sched: SchedulerInfo) -> WarpInfo:
        act = self._active_set(sched.resident)
        pool = [w for w in ready if w.slot in act] or ready
        return min(pool, key=lambda w: _rr_distance(w.k, sched.last, sched.slots))

    def priority(self, view: IssueView) -> np.ndarray:
        K = view.slots
        cand = view.occupied & ~view.waiting_memory & ~view.at_barrier
        key = np.where(cand, view.age, _BIG).reshape(-1, K)
        order = np.argsort(key, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(K)[None, :].repeat(key.shape[0], 0), axis=1)
        active = ((rank < self.active) & (key < _BIG)).ravel()
        return -_rr_distance(view.k, view.last[view.group], K) + np.where(active, K, 0)


_M64 = (1 << 64) - 1


def random_key(seed: int, cycle: int, slot: int) -> int:
    """A 53-bit pseudo-random number from (seed, cycle, slot): splitmix64's
    finaliser over a mix of the three (the same in both engines)."""
    x = (seed * 0x9E3779B97F4A7C15 + cycle * 0xBF58476D1CE4E5B9 + slot * 0x94D049BB133111EB) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return (x ^ (x >> 31)) >> 11


def random_keys(seed: int, cycle: int, slots: np.ndarray) -> np.ndarray:
    """random_key for an array of slots."""
    s = np.uint64
    with np.errstate(over="ignore"):
        base = s((seed * 0x9E3779B97F4A7C15 + cycle * 0xBF58476D1CE4E5B9) & _M64)
        x = base + slots.astype(np.uint64) * s(0x94D049BB133111EB)
        x = (x ^ (x >> s(30))) * s(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> s(27))) * s(0x94D049BB133111EB)
        return ((x ^ (x >> s(31))) >> s(11)).astype(np.int64)


class SeededRandom(WarpPolicy):
    """A ready warp chosen at random each cycle; the launch's seed (0 by
    default) makes the run repeatable."""
    name = "random"

    def pick(self, ready: list, sched: SchedulerInfo) -> WarpInfo:
        return max(ready, key=lambda w: (random_key(sched.seed, sched.cycle, w.slot), -w.k))

    def priority(self, view: IssueView) -> np.ndarray:
        return random_keys(view.seed, view.cycle, view.group * view.slots + view.k)


POLICIES = {p.name: p for p in (LooseRoundRobin, GreedyThenOldest, TwoLevel, SeededRandom)}


def get_policy(policy=None) -> WarpPolicy:
    """A policy instance from a name, a class, an instance or None (gto)."""
    policy = resolve_policy(policy, POLICIES, GreedyThenOldest, "warp scheduler")
    if not callable(getattr(policy, "pick", None)):
        raise ValueError(f"a warp scheduling policy needs a pick(ready, sched) method: {policy!r}")
    return policy
