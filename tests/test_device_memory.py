"""Emulated device memory: allocations, their addresses and the live table."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from gpuemu.device_memory import GLOBAL_ALIGN, GLOBAL_BASE, GLOBAL_END, DeviceMemory

HUGE = 1 << 44        # 16 TiB of addresses: 8 fill the device address range


def _huge(mem: DeviceMemory):
    """An allocation of HUGE addresses over no host bytes."""
    return mem.allocate(HUGE, host=np.zeros(0, np.uint8))


def test_live_allocations_are_listed_by_address_and_a_freed_one_is_gone():
    mem = DeviceMemory()
    a = mem.allocate(100)
    b = mem.allocate(8, space="constant", address=64)
    c = mem.allocate(300)
    assert mem.live_allocations() == [b, a, c]
    assert c.address - a.address == GLOBAL_ALIGN        # 100 bytes, 256-byte aligned
    del a
    gc.collect()
    assert mem.live_allocations() == [b, c]
    assert mem.live_allocations("global") == [c]


def test_addresses_are_handed_out_in_order_though_earlier_ones_were_freed():
    mem = DeviceMemory()
    a = mem.allocate(100)
    del a
    gc.collect()
    assert [mem.allocate(300).address, mem.allocate(1).address] == [GLOBAL_BASE + GLOBAL_ALIGN,
                                                                    GLOBAL_BASE + 3 * GLOBAL_ALIGN]


def test_freed_addresses_are_used_again_once_the_address_range_is_spent():
    # were they not, addresses ran past bit 48 into the tag: valid launches faulted
    mem = DeviceMemory()
    for _ in range(40):
        a = _huge(mem)
        assert GLOBAL_BASE <= a.address and a.address + HUGE < GLOBAL_END
        del a


def test_allocating_past_what_live_allocations_leave_raises_memory_error():
    mem = DeviceMemory()
    live = [_huge(mem) for _ in range(8)]
    with pytest.raises(MemoryError, match="out of device memory"):
        _huge(mem)
    assert len(live) == 8


def test_adjacent_freed_ranges_are_merged_into_one():
    mem = DeviceMemory()
    live = [_huge(mem) for _ in range(8)]
    first = live[2].address
    del live[2:4]
    gc.collect()
    both = mem.allocate(2 * HUGE, host=np.zeros(0, np.uint8))
    assert both.address == first


def test_an_allocation_may_end_exactly_at_the_end_of_the_address_range():
    mem = DeviceMemory()
    mem._next_addr = GLOBAL_END - GLOBAL_ALIGN       # one 256-byte unit left, nothing freed
    assert mem.allocate(GLOBAL_ALIGN, host=np.zeros(0, np.uint8)).address == GLOBAL_END - GLOBAL_ALIGN


def test_an_allocation_s_host_bytes_start_on_the_device_alignment():
    # a warp's 128-byte access then touches the host cache lines it would on the GPU
    from gpuemu.device_memory import GLOBAL_ALIGN, DeviceMemory
    mem = DeviceMemory()
    for n in (1, 100, 4096, 1 << 20):
        a = mem.allocate(n)
        assert a.host.ctypes.data % GLOBAL_ALIGN == 0 and a.host.nbytes == n and not a.host.any()
