"""Which SM runs which block.

Functional mode runs blocks to completion one after another; the SM a block
is given matters for per-SM state (L1, cycles). Policies are small classes
with one method so timing mode can add occupancy-limited ones.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np


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

    def schedule_array(self, grid: tuple, start: int, stop: int) -> np.ndarray:
        """Blocks start..stop-1 of `schedule(grid)` as an int32 array of rows
        (linear, bx, by, bz, sm): the same order, no Python per block."""
        gx, gy, _ = grid
        lin = np.arange(start, stop, dtype=np.int64)
        return np.stack([lin, lin % gx, (lin // gx) % gy, lin // (gx * gy),
                         lin % self.num_sms], axis=1).astype(np.int32)


class BlockBatch:
    """A batch of scheduled blocks held as one array (rows: linear, bx, by, bz,
    sm); indexing and iteration give the (linear, (bx, by, bz), sm) tuples of
    `schedule`, so code written for a list of them reads it unchanged."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, j: int) -> tuple:
        lin, x, y, z, sm = (int(v) for v in self.rows[j])
        return lin, (x, y, z), sm

    def __iter__(self) -> Iterator[tuple]:
        return (self[j] for j in range(len(self.rows)))
