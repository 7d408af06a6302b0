"""Warp scheduling policies are small classes with one method."""
from __future__ import annotations

import numpy as np
import pytest

from gpuemu.machine import LooseRoundRobin, get_warp_scheduler
from kernel_launch import launch

SRC = r"""
extern "C" __global__ void k(int* order, int* counter) {
    __shared__ int s[128];
    int t = threadIdx.x;
    if (t % 32 == 0) order[t / 32] = atomicAdd(counter, 1);
    s[t] = t;
    __syncthreads();
    order[4 + t] = s[127 - t];
}
"""


class Reverse:
    """Runs the highest ready warp first."""

    def __init__(self):
        self.calls = 0

    def order(self, ready):
        self.calls += 1
        return list(reversed(ready))


def test_loose_round_robin_runs_warps_in_index_order():
    order, counter = np.zeros(132, np.int32), np.zeros(1, np.int32)
    launch(SRC, "k", 1, 128, order, counter)
    np.testing.assert_array_equal(order[:4], [0, 1, 2, 3])
    np.testing.assert_array_equal(order[4:], 127 - np.arange(128))


def test_a_custom_policy_changes_the_order_not_the_result():
    pol = Reverse()
    order, counter = np.zeros(132, np.int32), np.zeros(1, np.int32)
    launch(SRC, "k", 1, 128, order, counter, scheduler=pol)
    np.testing.assert_array_equal(order[:4], [3, 2, 1, 0])
    np.testing.assert_array_equal(order[4:], 127 - np.arange(128))
    assert pol.calls == 2     # before and after the barrier


def test_scheduler_lookup_by_name_class_or_instance():
    assert isinstance(get_warp_scheduler(None), LooseRoundRobin)
    assert isinstance(get_warp_scheduler("lrr"), LooseRoundRobin)
    assert isinstance(get_warp_scheduler(Reverse), Reverse)
    with pytest.raises(ValueError, match="known: lrr"):
        get_warp_scheduler("gto")
