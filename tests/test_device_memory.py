"""Emulated device memory: allocations, their addresses and the live table."""
from __future__ import annotations

import gc

from gpuemu.device_memory import GLOBAL_ALIGN, DeviceMemory


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
