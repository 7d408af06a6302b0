"""Which SM runs which block.

Functional mode runs blocks to completion one after another; the SM a block
is given matters for per-SM state (L1, cycles). Policies are small classes
with one method so timing mode can add occupancy-limited ones.
"""
from __future__ import annotations

from typing import Iterator


class RoundRobinBlockScheduler:
    """Blocks in linear order (x fastest, then y, then z, as the hardware
    numbers them), block i on SM i mod num_sms."""

    def __init__(self, num_sms: int) -> None:
        self.num_sms = max(int(num_sms), 1)

    def schedule(self, grid: tuple) -> Iterator[tuple]:
        """Yield (linear block index, (bx, by, bz), sm)."""
        gx, gy, gz = grid
        i = 0
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    yield i, (x, y, z), i % self.num_sms
                    i += 1
