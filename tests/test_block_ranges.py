"""Ranges of blocks for the block workers: the grid in order, shrinking toward its end."""
from __future__ import annotations

import threading

import pytest

from gpuemu.machine.block_ranges import GuidedRanges, block_ranges, blocks_per_batch


@pytest.mark.parametrize("total,workers,tpb", [(4096, 2, 256), (1024, 2, 256), (1000, 3, 64),
                                               (3, 2, 32), (1, 4, 1024), (100000, 2, 1024),
                                               (4096, 1, 256)])
def test_block_ranges_cover_the_grid_in_order(total, workers, tpb):
    ranges = block_ranges(total, workers, tpb)
    assert [i for r in ranges for i in r] == list(range(total))
    assert all(len(r) * tpb <= max(1 << 20, tpb) for r in ranges)   # a progress bar moves


def test_block_ranges_shrink_toward_the_end_for_several_workers():
    # guided self-scheduling: 1/(2N) of what is left, at least 1/(64N) of the grid
    sizes = [len(r) for r in block_ranges(4096, 2, 256)]
    assert sizes[:4] == [1024, 768, 576, 432]
    assert sizes == sorted(sizes, reverse=True)
    assert min(sizes[:-1]) == 4096 // 128


def test_block_ranges_of_one_worker_are_about_four():
    assert [len(r) for r in block_ranges(4096, 1, 256)] == [1024] * 4


def test_block_ranges_of_a_launch_shape_are_worked_out_once():
    assert block_ranges(4096, 2, 256) is block_ranges(4096, 2, 256)
    assert block_ranges(4096, 3, 256) != block_ranges(4096, 2, 256)


def _all(source) -> list:
    out = []
    while (got := source.take()) is not None:
        out.append(got)
    return out


@pytest.mark.parametrize("total,workers,tpb", [(4096, 2, 256), (1000, 3, 64), (100000, 2, 1024)])
def test_guided_ranges_hand_out_the_rule_s_ranges_numbered_in_order(total, workers, tpb):
    got = _all(GuidedRanges(0, total, workers, tpb))
    assert [seq for seq, _ in got] == list(range(len(got)))
    assert [r for _, r in got] == list(block_ranges(total, workers, tpb))


def test_a_closed_source_hands_out_nothing_more():
    g = GuidedRanges(10, 20, 2, 32)
    assert g.take() == (0, range(10, 13))
    g.close()
    assert g.take() is None and g.handed == 1 and g.closed


def test_threads_taking_at_once_get_every_block_once():
    g = GuidedRanges(0, 50000, 4, 32)
    got: list = []

    def take():
        while (x := g.take()) is not None:
            got.append(x)
    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got.sort()
    assert [seq for seq, _ in got] == list(range(g.handed))
    assert [i for _, r in got for i in r] == list(range(50000))


def test_even_ranges_are_all_the_smallest_size_but_the_last():
    # counters on: the ordered step gets batches at a steady pace
    sizes = [len(r) for _, r in _all(GuidedRanges(0, 4100, 2, 256, even=True))]
    assert sizes == [129] * 31 + [4100 - 129 * 31]


@pytest.mark.parametrize("unit,size", [(341, 341), (100, 100), (60, 60), (40, 40), (5000, 4096)])
def test_even_ranges_in_units_are_one_unit(unit, size):
    # one batch a range, however far from 1/32 of the grid (128 of 4096 blocks) it is;
    # a unit beyond the grid -> the grid
    g = GuidedRanges(0, 4096, 2, 256, even=True)
    g.in_units(unit)
    assert len(g.take()[1]) == size


def test_blocks_per_batch_fill_a_batch_with_two_percent_to_spare():
    # 167 blocks wrote 4008 records (24 each): 4096 records hold 0.98 * 4096 / 24 = 167.2 blocks
    assert blocks_per_batch(4096, 167, 4008) == 167
    assert blocks_per_batch(8192, 100, 1000) == 802
