"""Launch shapes and the limits a GPU checks before it runs a kernel.

Limits come from the preset (CUDA C Programming Guide, "Compute
Capabilities", Table "Technical Specifications per Compute Capability"):
threads per block, block and grid dimensions, shared memory per block.
A violated limit is a LaunchError naming the limit and the value.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

from gpuemu.errors import LaunchError


@dataclass(frozen=True)
class LaunchShape:
    grid: tuple
    block: tuple
    shared_static: int
    shared_dynamic: int

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def warps_per_block(self) -> int:
        return (self.threads_per_block + 31) // 32

    @property
    def shared_total(self) -> int:
        return self.shared_static + self.shared_dynamic


def dim3(value, what: str) -> tuple:
    """An int or a tuple of 1-3 ints -> (x, y, z)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        vals = [int(value)]
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3 and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        vals = [int(v) for v in value]
    else:
        raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    vals += [1] * (3 - len(vals))
    for axis, v in zip("xyz", vals):
        if v < 1:
            raise LaunchError(f"{what}.{axis} must be at least 1, got {v}")
    return tuple(vals)


def check_launch(preset, grid, block, shared_static: int, shared_dynamic: int,
                 launch_bounds=None, max_dynamic_shared: int | None = None) -> LaunchShape:
    """Normalise grid/block and check them against the preset's limits.

    Shared memory per block may exceed the preset's 48 KB default only up to
    the opt-in limit, and only for a kernel whose max_dynamic_shared (CUDA's
    cudaFuncAttributeMaxDynamicSharedMemorySize) allows it (CUDA C
    Programming Guide, "Shared Memory" of compute capability 7.x+)."""
    g, b = dim3(grid, "grid"), dim3(block, "block")
    if not isinstance(shared_dynamic, numbers.Integral) or shared_dynamic < 0:
        raise LaunchError(f"shared_mem must be a non-negative int, got {shared_dynamic!r}")
    shape = LaunchShape(g, b, int(shared_static), int(shared_dynamic))
    t = shape.threads_per_block
    if t > preset.max_threads_per_block:
        raise LaunchError(f"block of {t} threads exceeds the limit of "
                          f"{preset.max_threads_per_block} threads per block on {preset.name}")
    if launch_bounds and launch_bounds[0] and t > launch_bounds[0]:
        raise LaunchError(f"block of {t} threads exceeds the kernel's __launch_bounds__ "
                          f"of {launch_bounds[0]} threads")
    for axis, v, lim in zip("xyz", b, preset.max_block_dim):
        if v > lim:
            raise LaunchError(f"block.{axis} = {v} exceeds the limit of {lim} on {preset.name}")
    for axis, v, lim in zip("xyz", g, preset.max_grid_dim):
        if v > lim:
            raise LaunchError(f"grid.{axis} = {v} exceeds the limit of {lim} on {preset.name}")
    if max_dynamic_shared is not None:
        if shape.shared_dynamic > max_dynamic_shared:
            raise LaunchError(
                f"dynamic shared memory of {shape.shared_dynamic} bytes exceeds the kernel's "
                f"max_dynamic_shared_size_bytes of {max_dynamic_shared}")
        if shape.shared_total > preset.max_shared_per_block_optin:
            raise LaunchError(
                f"shared memory per block of {shape.shared_total} bytes exceeds the opt-in "
                f"limit of {preset.max_shared_per_block_optin} bytes on {preset.name}")
    elif shape.shared_total > preset.max_shared_per_block:
        raise LaunchError(
            f"shared memory per block of {shape.shared_total} bytes ({shape.shared_static} static"
            f" + {shape.shared_dynamic} dynamic) exceeds the limit of "
            f"{preset.max_shared_per_block} bytes on {preset.name}")
    return shape
