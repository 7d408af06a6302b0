"""The pictures' data: the lanes x banks matrix follows the bank rule, and
the PNGs are real images."""
from __future__ import annotations

import numpy as np
import pytest

from gpuemu.arch import get_preset
from gpuemu.memory.bank_arbiter import phase_lanes, shared_request_reference
from gpuemu.memory.worst_requests import WorstRequest
from gpuemu.report.pictures import bank_heatmap_png, bank_matrix, coalescing_png, ideal_sectors

MEM = get_preset("sm_90").mem
LANES = np.arange(32)
FULL = 0xFFFFFFFF


def req(addrs, size=4, mask=FULL, cost=1):
    return WorstRequest("shared", 1, "ld", size, cost, mask, tuple(int(a) for a in addrs))


def test_consecutive_words_touch_one_bank_each_once():
    assert np.array_equal(bank_matrix(req(LANES * 4), MEM), np.eye(32, dtype=np.int64))


def test_a_column_of_tile_32_by_32_is_a_32_way_conflict_in_bank_0():
    m = bank_matrix(req(LANES * 32 * 4), MEM)
    assert (m[:, 0] == 32).all() and m[:, 1:].sum() == 0


def test_a_column_of_tile_32_by_33_spreads_over_all_banks():
    # lane i reads word 33 i: bank (33 i) % 32 = i
    assert np.array_equal(bank_matrix(req(LANES * 33 * 4), MEM), np.eye(32, dtype=np.int64))


def test_lanes_reading_one_word_are_served_together():
    m = bank_matrix(req(np.zeros(32)), MEM)
    assert (m[:, 0] == 1).all() and m[:, 1:].sum() == 0


def test_stride_two_words_is_two_way():
    m = bank_matrix(req(LANES * 8), MEM)
    assert set(np.unique(m[m > 0]).tolist()) == {2}
    assert m[0, 0] == 2 and m[16, 0] == 2


def test_inactive_lanes_leave_their_row_empty():
    m = bank_matrix(req(LANES * 4, mask=0x0000FFFF), MEM)
    assert m[16:].sum() == 0 and m[:16].sum() == 16


def test_eight_byte_accesses_touch_two_banks_per_lane_per_half_warp():
    m = bank_matrix(req(LANES * 8, size=8), MEM)
    assert (m.sum(axis=1) == 2).all()           # two words each, no conflict in a half-warp


def test_ideal_sectors_is_active_bytes_over_32():
    assert ideal_sectors(req(LANES * 4)) == 4
    assert ideal_sectors(req(LANES * 16, size=16)) == 16
    assert ideal_sectors(req(LANES * 4, mask=1)) == 1


def test_pictures_are_png_images():
    png = bank_heatmap_png(req(LANES * 128, cost=32), MEM)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert coalescing_png([("11: a[i]", 4.0, 4), ("12: b[32 * i]", 32.0, 4)])[:4] == b"\x89PNG"


def test_cc1x_one_word_broadcast_serves_two_bytes_of_another_word_in_two_steps():
    # Guide 1.x: a step serves the broadcast word (lane 0's, bank 0) and one
    # address per other bank: lanes 1 and 2 read two bytes of one bank-1 word
    cc1 = get_preset("cc1.3").mem
    addrs = [0, 4, 5] + [0] * 29
    r = req(addrs, size=1, mask=0b111)
    assert shared_request_reference(addrs, 0b111, 1, cc1).wavefronts == 2
    m = bank_matrix(r, cc1)
    assert m[0, 0] == 1 and m[1, 1] == 2 and m[2, 1] == 2 and m.sum() == 5


@pytest.mark.parametrize("arch", ["cc1.3", "cc2.0", "cc3.5", "sm_52", "sm_90"])
@pytest.mark.parametrize("size", [1, 4, 8, 16])
def test_the_heat_map_agrees_with_the_bank_arbiter(arch, size):
    mem = get_preset(arch).mem
    phase = phase_lanes(mem, size)
    rng = np.random.default_rng(size)
    for _ in range(40):
        addrs = rng.integers(0, 64, 32) * size * rng.choice([1, 2, 17, 32])
        mask = int(rng.integers(1, 1 << 32))
        m = bank_matrix(req(addrs, size, mask), mem)
        per_phase = [m[p:p + phase].max() for p in range(0, 32, phase)]
        assert sum(per_phase) == shared_request_reference(addrs, mask, size, mem).wavefronts
