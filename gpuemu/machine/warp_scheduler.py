"""Which ready warp of a block runs next (functional mode).

A scheduler only orders warps; running a warp means calling its native
function until it reports an event (barrier, exit, ...). Policies are small
classes with `order(ready) -> iterable of warp indices`.
"""
from __future__ import annotations

from typing import Iterable


class LooseRoundRobin:
    """Each ready warp in index order, each until its next event, then round
    again: every warp reaches the barrier before any passes it."""

    name = "lrr"

    def order(self, ready: list) -> Iterable[int]:
        return ready


SCHEDULERS = {"lrr": LooseRoundRobin}


def get_warp_scheduler(policy=None):
    """A scheduler instance from a name, a class, an instance or None (lrr)."""
    if policy is None:
        return LooseRoundRobin()
    if isinstance(policy, str):
        try:
            return SCHEDULERS[policy]()
        except KeyError:
            raise ValueError(f"unknown warp scheduler {policy!r}; known: {', '.join(SCHEDULERS)}")
    if isinstance(policy, type):
        return policy()
    return policy
