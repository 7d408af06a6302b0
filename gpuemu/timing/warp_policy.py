"""The interface of a warp scheduling policy (timing mode).

Each cycle, each warp scheduler of each SM issues one instruction from one
of its ready warps (CUDA C Programming Guide, "Hardware Multithreading": the
warp schedulers of an SM each select a warp that is ready to execute its
next instruction). A policy decides which. Two entry points, the same rule:

    class MyPolicy(WarpPolicy):
        name = "mine"
        def pick(self, ready, sched):             # required: the rule, plain Python
            return min(ready, key=lambda w: w.age)
        def priority(self, view):                 # optional: the same rule, vectorised
            return -view.age                      # higher issues first

- `pick(ready, sched) -> WarpInfo`: `ready` lists the scheduler's warps that
  can issue this cycle (WarpInfo below), `sched` describes the scheduler
  (SchedulerInfo). The plain-Python reference engine calls it, and so does
  the fast engine for policies without `priority` (slower, still correct).
- `priority(view) -> ndarray[N]`: one number per warp slot of every
  scheduler of every SM (IssueView below); the engine issues, per
  scheduler, the ready slot with the highest number (the lowest slot
  position on ties). Must choose exactly what `pick` chooses (tests check
  the built-in policies against the reference).
- `reset(groups, slots_per_group)`: called once per launch; keep state here.

Launch with `kernel(..., mode="timing", scheduler=MyPolicy)` (a class, an
instance, or a built-in name: 'lrr', 'gto', 'two_level', 'random').
The engine records after each issue which slot position each scheduler
issued from (`last`), which is all the built-in policies remember.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class WarpInfo:
    """One resident warp of a scheduler, as `pick` sees it."""
    slot: int            # global slot index (the engines number them alike)
    k: int               # position within its scheduler, 0..K-1
    age: int             # dispatch order: smaller = older
    block: int           # linear block index
    warp: int            # warp index within the block
    waiting_memory: bool  # stalled on a load's value this cycle
    at_barrier: bool
    ready: bool


@dataclass
class SchedulerInfo:
    """One warp scheduler at one cycle, as `pick` sees it."""
    cycle: int
    sm: int
    index: int           # scheduler within the SM
    group: int           # sm * schedulers_per_sm + index
    last: int            # slot position issued last (-1: none yet)
    slots: int           # K, slot positions per scheduler
    resident: list       # WarpInfo of every resident warp (ready or not)
    seed: int


@dataclass
class IssueView:
    """Every scheduler at one cycle, as `priority` sees it (arrays over slots,
    slot = group * K + k; group = sm * schedulers_per_sm + scheduler)."""
    cycle: int
    k: np.ndarray          # int64[N] position within the scheduler
    group: np.ndarray      # int64[N]
    age: np.ndarray        # int64[N]
    occupied: np.ndarray   # bool[N]
    ready: np.ndarray      # bool[N]
    waiting_memory: np.ndarray  # bool[N]
    at_barrier: np.ndarray  # bool[N]
    last: np.ndarray       # int64[G] position issued last per scheduler (-1: none)
    slots: int             # K
    seed: int


class WarpPolicy:
    """Base class of warp scheduling policies (see the module docstring)."""
    name = "policy"

    def reset(self, groups: int, slots: int) -> None:
        """Called once per launch before the first cycle."""

    def pick(self, ready: list, sched: SchedulerInfo) -> WarpInfo:
        raise NotImplementedError

    priority = None     # a method (view) -> ndarray when the policy has a fast path


def resolve_policy(policy, known: dict, default: type, what: str):
    """An instance from a name in `known`, a class, an instance or None (default)."""
    if policy is None:
        return default()
    if isinstance(policy, str):
        if policy not in known:
            raise ValueError(f"unknown {what} {policy!r}; known: {', '.join(known)}")
        return known[policy]()
    return policy() if isinstance(policy, type) else policy
