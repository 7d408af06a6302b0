"""Bank arbiter: the CUDA guide's worked examples, the H100's measured
wavefronts (../shared/conformance/smem_*.json), and the numpy batch path
agreeing with the plain-Python reference on random requests."""
from math import gcd

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from gpuemu.arch import PRESETS, get_preset
from gpuemu.memory.bank_arbiter import (shared_request_reference, shared_requests_batch,
                                        same_address_multiplicity)

FULL = 0xFFFFFFFF
T = np.arange(32)
SM90 = get_preset("sm_90").mem
CC1 = get_preset("cc1x").mem
CC2 = get_preset("cc2x").mem
CC3 = get_preset("cc3x").mem


def wf(addrs, size=4, mem=SM90, mask=FULL):
    return shared_request_reference(list(addrs), mask, size, mem)


@pytest.mark.parametrize("preset", ["cc2x", "sm_52", "sm_70", "sm_90"])
@pytest.mark.parametrize("s", [1, 2, 3, 4, 5, 8, 16, 32, 33])
def test_stride_s_gives_gcd_s_32_way_conflict_on_32_banks(preset, s):
    # Guide 5.x "Shared Memory": 32-bit strided access, s-word stride
    c = wf(4 * s * T, mem=get_preset(preset).mem)
    assert c.wavefronts == gcd(s, 32)
    assert c.conflicts == gcd(s, 32) - 1


@pytest.mark.parametrize("s", [1, 3, 5, 7, 9, 15, 17, 31])
def test_odd_stride_is_conflict_free_on_cc1x_half_warps(s):
    # Guide 1.x: 16 banks, each half-warp served separately: odd s -> 1 pass per half
    assert wf(4 * s * T, mem=CC1).wavefronts == 2
    assert wf(4 * s * T, mem=CC1).conflicts == 0


def test_even_stride_conflicts_within_a_cc1x_half_warp():
    assert wf(4 * 2 * T, mem=CC1).wavefronts == 4      # 2-way per half-warp


def test_half_warps_never_conflict_with_each_other_on_cc1x():
    # lane i and lane i+16 read different words of one bank: separate requests
    addrs = np.where(T < 16, 4 * T, 4 * T + 64 * 8)
    assert wf(addrs, mem=CC1).wavefronts == 2


def test_single_word_broadcast_to_whole_warp():
    for mem in (CC1, CC2, CC3, SM90):
        c = wf(np.zeros(32, dtype=int), mem=mem)
        assert c.conflicts == 0


def test_several_words_broadcast_on_cc2x_and_later():
    # conformance smem_ld_multiword_broadcast: 8 words, 4 lanes each -> 1 wavefront
    assert wf(4 * (T // 4)).wavefronts == 1
    assert wf(4 * (T // 4), mem=CC2).wavefronts == 1


def test_two_words_of_one_bank_conflict_despite_broadcast():
    # conformance smem_ld_same_bank_two_words: 256 wavefronts / 128 requests
    c = wf(np.where(T < 16, 0, 128))
    assert (c.wavefronts, c.conflicts) == (2, 1)


def test_cc1x_broadcasts_one_word_per_step_only():
    # lanes 0-7 read word 0, lanes 8-15 read word 16 (same bank): 2 steps per half
    addrs = np.where(T % 16 < 8, 0, 64)
    assert wf(addrs, mem=CC1).wavefronts == 4
    # the same word for a half-warp is one step
    assert wf(np.zeros(32, int), mem=CC1).wavefronts == 2


def test_char_by_tid_conflicts_on_cc1x_not_cc2x():
    # Guide 1.x "8-Bit and 16-Bit Access": char shared[32]; shared[tid] -> 4-way
    assert wf(T, 1, CC1).wavefronts == 2 * 4
    assert wf(T, 1, CC1).ways == 4
    assert wf(T, 1, CC2).wavefronts == 1
    assert wf(T, 1, SM90).wavefronts == 1          # conformance smem_ld_char_tid


def test_char_by_4tid_is_conflict_free():
    assert wf(4 * T, 1, CC1).wavefronts == 2       # one pass per half-warp
    assert wf(4 * T, 1, CC2).wavefronts == 1
    assert wf(4 * T, 1, SM90).wavefronts == 1      # conformance smem_ld_char_4tid


def test_short_by_tid_one_wavefront_on_sm90():
    assert wf(2 * T, 2).wavefronts == 1            # conformance smem_ld_short_tid


def test_tile32_column_read_is_32_way_and_tile33_free():
    tx = T
    col32 = 4 * (tx * 32 + 5)     # tile[tx][5] in float tile[32][32]
    col33 = 4 * (tx * 33 + 5)     # tile[tx][5] in float tile[32][33]
    assert wf(col32).wavefronts == 32 and wf(col32).ways == 32
    assert wf(col33).wavefronts == 1


def test_double_stride1_takes_two_wavefronts_without_conflict_on_sm90():
    c = wf(8 * T, 8)               # conformance smem_ld_double_stride1: 256/128
    assert (c.wavefronts, c.ideal, c.conflicts) == (2, 2, 0)


def test_double_stride16_takes_32_wavefronts_on_sm90():
    c = wf(8 * 16 * T, 8)          # smem_ld_double_stride16: 4096/128, 3840 conflicts
    assert (c.wavefronts, c.conflicts) == (32, 30)


def test_float4_stride1_takes_four_wavefronts_on_sm90():
    c = wf(16 * T, 16)             # smem_ld_float4_stride1: 512/128
    assert (c.wavefronts, c.conflicts) == (4, 0)


def test_float4_one_address_per_half_warp_takes_two_on_sm90():
    # matmul_tiled16's LDS.128 of As[ty][k..k+3]: 786432 wavefronts for
    # 524288 LDS + 131072 LDS.128 requests -> 2 per LDS.128
    assert wf(np.where(T < 16, 0, 64), 16).wavefronts == 2


def test_float2_stride1_two_wavefronts_on_sm90():
    assert wf(8 * T, 8).wavefronts == 2           # smem_ld_float2_stride1


def test_double_stride1_on_cc1x_is_two_way_per_half_warp():
    # Guide 1.x "Larger Than 32-Bit Access": double shared[]; shared[tid] -> 2-way
    assert wf(8 * T, 8, CC1).wavefronts == 2 * 2


def test_cc3x_8_byte_mode_serves_a_warp_of_doubles_in_one_pass():
    m8 = CC3.with_bank_mode(8)
    assert wf(8 * T, 8, m8).wavefronts == 1
    # 8-byte mode: two floats of one 64-bit word never conflict
    assert wf(4 * T, 4, m8).wavefronts == 1
    # float stride 2 touches 8-byte words 0..31: one pass in 8-byte mode
    assert wf(8 * T, 4, m8).wavefronts == 1
    # float stride 64 (one bank, different 64-bit rows): 32 passes in either mode
    assert wf(4 * 64 * T, 4, m8).wavefronts == 32
    assert wf(4 * 64 * T, 4, CC3).wavefronts == 32


def test_cc3x_4_byte_mode_words_i_and_i_plus_32_share_a_row():
    # Guide 3.x 32-bit mode: words i and i+32 in one 64-word segment don't conflict
    addrs = np.where(T < 16, 4 * T, 4 * (T - 16 + 32))
    assert wf(addrs, 4, CC3).wavefronts == 1
    assert wf(addrs, 4, SM90).wavefronts == 2


def test_inactive_lanes_do_not_conflict():
    c = wf(4 * 32 * T, 4, SM90, mask=0x1)
    assert c.wavefronts == 1
    assert wf(4 * 32 * T, 4, SM90, mask=0).wavefronts == 0


def test_inactive_half_warp_costs_nothing_for_8_byte_access():
    assert wf(8 * T, 8, SM90, mask=0x0000FFFF).wavefronts == 1


def test_same_address_multiplicity_counts_the_largest_group():
    addrs = np.where(T < 20, 0, 4 * T)[None]
    assert same_address_multiplicity(addrs, np.array([FULL], np.uint32))[0] == 20
    assert same_address_multiplicity(addrs, np.array([0], np.uint32))[0] == 0


# ------------------------------------------------- batch path == reference

@st.composite
def requests(draw):
    size = draw(st.sampled_from([1, 2, 4, 8, 16]))
    n = draw(st.integers(1, 6))
    span = draw(st.sampled_from([4, 32, 64, 300, 4096]))
    reqs = []
    for _ in range(n):
        idx = draw(st.lists(st.integers(0, span), min_size=32, max_size=32))
        mask = draw(st.one_of(st.just(FULL), st.integers(0, FULL)))
        reqs.append((np.asarray(idx, dtype=np.int64) * size, mask))
    return size, reqs


@pytest.mark.parametrize("preset", list(PRESETS) + ["cc3x-8"])
@settings(max_examples=60, deadline=None)
@given(data=requests())
def test_batch_path_agrees_with_reference(preset, data):
    mem = CC3.with_bank_mode(8) if preset == "cc3x-8" else get_preset(preset).mem
    size, reqs = data
    addr = np.stack([a for a, _ in reqs])
    mask = np.array([m for _, m in reqs], dtype=np.uint32)
    wfs, ideal, ways = shared_requests_batch(addr, mask, size, mem)
    for i, (a, m) in enumerate(reqs):
        ref = shared_request_reference(list(a), m, size, mem)
        assert (wfs[i], ideal[i], ways[i]) == (ref.wavefronts, ref.ideal, ref.ways)


def test_batch_path_handles_mixed_sizes():
    addr = np.stack([4 * 2 * T, 8 * 16 * T, 16 * T])
    mask = np.full(3, FULL, dtype=np.uint32)
    w, ideal, _ = shared_requests_batch(addr, mask, np.array([4, 8, 16]), SM90)
    assert w.tolist() == [2, 32, 4] and ideal.tolist() == [1, 2, 4]


def test_random_permutation_of_words_is_conflict_free():
    # Guide 5.x figure "Irregular Shared Memory Accesses", left: a permutation
    perm = np.random.default_rng(5).permutation(32)
    assert wf(4 * perm).wavefronts == 1


def test_lanes_sharing_a_word_in_one_bank_are_conflict_free():
    # Guide 5.x figure "Irregular Shared Memory Accesses", middle: threads
    # 3, 4, 6, 7 and 9 read the same word of bank 5, the others distinct banks
    idx = np.arange(32)
    idx[[3, 4, 6, 7, 9]] = 5
    assert wf(4 * idx).wavefronts == 1


def test_struct_of_three_floats_is_conflict_free_by_member():
    # Guide: struct {float x, y, z;} s[32]; s[tid].x -> stride 3 words
    assert wf(12 * T).wavefronts == 1


def test_cc2x_double_by_tid_has_no_conflict_beyond_its_two_half_warps():
    # Guide 2.x "64-Bit Accesses": unlike 1.x, no bank conflict for double shared[tid]
    c = wf(8 * T, 8, CC2)
    assert (c.wavefronts, c.conflicts) == (2, 0)


def test_cc2x_float4_by_tid_takes_two_passes_per_half_warp():
    # Guide 2.x "128-Bit Accesses": most 128-bit accesses cause 2-way conflicts
    assert wf(16 * T, 16, CC2).wavefronts == 4
