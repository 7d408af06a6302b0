"""Which SM a waiting block goes to (timing mode).

A block is dispatched to an SM only while that SM has room for it (its
occupancy: gpuemu/machine/occupancy.py); blocks wait in linear order
(x fastest) and are handed out as blocks finish and free their resources.
A policy picks the SM among those with room:

    class MyBlockPolicy(BlockPolicy):
        def pick_sm(self, free, resident):   # bool[M], int[M] -> SM index
            ...

and is passed as `kernel(..., mode="timing", block_scheduler=MyBlockPolicy)`.
"""
from __future__ import annotations

import numpy as np

from .warp_policy import resolve_policy


class BlockPolicy:
    """Base class: `reset(num_sms)` once per launch, `pick_sm(free, resident)`."""
    name = "block_policy"

    def reset(self, num_sms: int) -> None:
        self.num_sms = num_sms

    def pick_sm(self, free: np.ndarray, resident: np.ndarray) -> int:
        raise NotImplementedError


class RoundRobinBlocks(BlockPolicy):
    """The next SM with room after the SM that got the previous block, in
    SM order: the first wave lands on SMs 0, 1, 2, ... as on the hardware."""
    name = "round_robin"

    def reset(self, num_sms: int) -> None:
        self.num_sms, self.cursor = num_sms, -1

    def pick_sm(self, free: np.ndarray, resident: np.ndarray) -> int:
        order = (np.arange(self.num_sms) + self.cursor + 1) % self.num_sms
        sm = int(order[np.argmax(free[order])])
        self.cursor = sm
        return sm


class LeastLoaded(BlockPolicy):
    """The SM with room that has the fewest resident blocks (lowest index on ties)."""
    name = "least_loaded"

    def pick_sm(self, free: np.ndarray, resident: np.ndarray) -> int:
        return int(np.argmin(np.where(free, resident, np.iinfo(np.int64).max)))


BLOCK_POLICIES = {p.name: p for p in (RoundRobinBlocks, LeastLoaded)}


def get_block_policy(policy=None) -> BlockPolicy:
    """A block policy from a name, a class, an instance or None (round robin)."""
    return resolve_policy(policy, BLOCK_POLICIES, RoundRobinBlocks, "block scheduler")
