"""Coalescer: the guide's global-memory examples, the H100's sectors per
request (../shared/conformance/gmem_*.json), local interleaving, and the
batch path agreeing with the reference."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpuemu.arch import PRESETS, get_preset
from gpuemu.memory.bank_arbiter import _lane_bits
from gpuemu.memory.coalescer import (global_request_reference, global_requests_batch,
                                     interleave_local)

FULL = 0xFFFFFFFF
T = np.arange(32, dtype=np.int64)
BASE = 1 << 28           # a 256-byte aligned allocation
SM90 = get_preset("sm_90").mem
CC2 = get_preset("cc2x").mem
CC1 = get_preset("cc1x").mem


def cost(addrs, size=4, mem=SM90, mask=FULL, l1=False):
    return global_request_reference(list(addrs), mask, size, mem, l1_cached=l1)


def test_aligned_warp_of_floats_is_4_sectors_on_sm90():
    assert len(cost(BASE + 4 * T).sectors) == 4           # gmem_ld_offset0: 8192/2048


def test_misaligned_by_one_word_is_5_sectors_on_sm90():
    assert len(cost(BASE + 4 * (T + 1)).sectors) == 5     # gmem_ld_offset1: 10240/2048


def test_misaligned_by_16_words_is_still_4_sectors():
    assert len(cost(BASE + 4 * (T + 16)).sectors) == 4    # gmem_ld_offset16


@pytest.mark.parametrize("stride,sectors", [(2, 8), (4, 16), (8, 32), (32, 32)])
def test_strided_floats_sectors_on_sm90(stride, sectors):
    # gmem_ld_stride2: 16384/2048, stride4: 32768/2048, stride32: 65536/2048
    assert len(cost(BASE + 4 * stride * T).sectors) == sectors


def test_float4_per_lane_is_16_sectors_on_sm90():
    assert len(cost(BASE + 16 * T, 16).sectors) == 16     # gmem_ld_float4: 8192/512


def test_aligned_warp_of_floats_is_one_128_byte_line_on_cc2x():
    # Guide 2.x "Global Memory": one 128-byte transaction when cached in L1
    assert cost(BASE + 4 * T, mem=CC2, l1=True).transactions == 1
    assert cost(BASE + 4 * (T + 1), mem=CC2, l1=True).transactions == 2


def test_cc2x_without_l1_uses_32_byte_segments():
    assert cost(BASE + 4 * T, mem=CC2, l1=False).transactions == 4
    assert cost(BASE + 4 * (T + 1), mem=CC2, l1=False).transactions == 5


def test_cc1x_aligned_half_warps_take_one_64_byte_segment_each():
    # Guide 1.x (cc1.2/1.3): a half-warp of floats in one 64-byte segment
    c = cost(BASE + 4 * T, mem=CC1)
    assert (c.transactions, c.transaction_bytes) == (2, 128)


def test_cc1x_misaligned_by_one_word_takes_128_plus_64_plus_32_bytes():
    # Guide 1.x (cc1.2/1.3 procedure): half-warp 0 reads bytes 4..67 of one
    # 128-byte segment (both halves used: 128 B); half-warp 1 reads 68..127
    # (upper half: 64 B) and 128..131 (lower 32 B of the next segment)
    c = cost(BASE + 4 * (T + 1), mem=CC1)
    assert c.transactions == 3
    assert c.transaction_bytes == 128 + 64 + 32


def test_cc1x_bytes_use_32_byte_segments():
    c = cost(BASE + T, 1, mem=CC1)
    assert (c.transactions, c.transaction_bytes) == (2, 64)


def test_inactive_lanes_touch_nothing():
    assert cost(BASE + 4 * 32 * T, mask=0x3).sectors == ((BASE // 32), (BASE + 128) // 32)


def test_local_same_offset_is_coalesced_by_interleaving():
    offs = np.zeros((1, 32), dtype=np.int64)
    a, act, unit = interleave_local(offs, np.ones((1, 32), bool), 4, np.zeros(1, np.int64), SM90)
    b = global_requests_batch(a, act, unit, SM90)
    assert b.sectors.tolist() == [4]


def test_local_double_touches_two_interleaved_words():
    offs = np.full((1, 32), 8, dtype=np.int64)
    a, act, unit = interleave_local(offs, np.ones((1, 32), bool), 8, np.zeros(1, np.int64), SM90)
    assert a.shape == (1, 64) and unit == 4
    assert global_requests_batch(a, act, unit, SM90).sectors.tolist() == [8]


def test_local_windows_of_different_warps_do_not_overlap():
    offs = np.zeros((2, 32), dtype=np.int64)
    a, _, _ = interleave_local(offs, np.ones((2, 32), bool), 4, np.array([0, 1]), SM90)
    assert set(a[0].tolist()).isdisjoint(a[1].tolist())


# ------------------------------------------------- batch path == reference

@st.composite
def requests(draw):
    size = draw(st.sampled_from([1, 2, 4, 8, 16]))
    n = draw(st.integers(1, 5))
    span = draw(st.sampled_from([8, 64, 1024, 1 << 16]))
    addr = np.stack([BASE + size * np.asarray(draw(st.lists(st.integers(0, span), min_size=32,
                                                              max_size=32)), dtype=np.int64)
                     for _ in range(n)])
    masks = np.array([draw(st.one_of(st.just(FULL), st.integers(0, FULL))) for _ in range(n)],
                     dtype=np.uint32)
    return size, addr, masks


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("l1", [False, True])
@settings(max_examples=40, deadline=None)
@given(data=requests())
def test_batch_path_agrees_with_reference(preset, l1, data):
    mem = get_preset(preset).mem
    size, addr, masks = data
    b = global_requests_batch(addr, _lane_bits(masks), size, mem, l1_cached=l1)
    for i in range(addr.shape[0]):
        ref = global_request_reference(list(addr[i]), int(masks[i]), size, mem, l1_cached=l1)
        assert b.sectors[i] == len(ref.sectors)
        assert b.transactions[i] == ref.transactions
        assert tuple(b.sector_id[b.req == i].tolist()) == ref.sectors


def test_permuted_aligned_warp_still_touches_4_sectors():
    # Guide 5.x "Global Memory" example: aligned, non-sequential access
    perm = np.random.default_rng(3).permutation(32)
    assert len(cost(BASE + 4 * perm).sectors) == 4
    assert cost(BASE + 4 * perm, mem=CC2, l1=True).transactions == 1


def test_doubles_by_a_warp_are_8_sectors_and_two_lines():
    assert len(cost(BASE + 8 * T, 8).sectors) == 8
    assert cost(BASE + 8 * T, 8, mem=CC2, l1=True).transactions == 2
