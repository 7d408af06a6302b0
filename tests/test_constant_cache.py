"""Constant memory: serialised by distinct addresses, cached per SM."""
import numpy as np

from gpuemu.arch import get_preset
from gpuemu.memory.constant_cache import (ConstantCache, constant_wavefronts_batch,
                                          constant_wavefronts_reference)

T = np.arange(32)


def test_uniform_address_is_one_wavefront():
    assert constant_wavefronts_reference([16] * 32, 0xFFFFFFFF) == 1


def test_distinct_addresses_serialise():
    assert constant_wavefronts_reference(list(4 * T), 0xFFFFFFFF) == 32
    assert constant_wavefronts_reference(list(4 * (T % 4)), 0xFFFFFFFF) == 4


def test_inactive_lanes_are_not_counted():
    assert constant_wavefronts_reference(list(4 * T), 0b101) == 2


def test_batch_matches_reference():
    rng = np.random.default_rng(1)
    addr = rng.integers(0, 8, (50, 32)) * 4
    active = rng.random((50, 32)) < 0.7
    wf, rows, a = constant_wavefronts_batch(addr, active)
    for i in range(50):
        mask = int(sum(1 << l for l in range(32) if active[i, l]))
        assert wf[i] == constant_wavefronts_reference(list(addr[i]), mask)
    assert rows.size == wf.sum()


def test_second_read_of_a_line_hits_on_same_sm_only():
    c = ConstantCache(get_preset("sm_90").mem)
    assert c.access(np.array([0]), np.array([0])) == (0, 1)
    assert c.access(np.array([0]), np.array([4])) == (1, 0)     # same 64-byte line
    assert c.access(np.array([1]), np.array([0])) == (0, 1)     # another SM's cache
