"""3D grids of 3D blocks, partial last warps, block-to-SM assignment."""
from __future__ import annotations

import numpy as np

from gpuemu.machine import RoundRobinBlockScheduler
from kernel_launch import launch

IDS = r"""
extern "C" __global__ void k(int* out) {
    int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    int block = bx + gridDim.x * (by + gridDim.y * bz);
    int nthreads = blockDim.x * blockDim.y * blockDim.z;
    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int g = block * nthreads + t;
    out[4 * g + 0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    out[4 * g + 1] = bx + 10 * by + 100 * bz;
    out[4 * g + 2] = blockDim.x + 10 * blockDim.y + 100 * blockDim.z;
    out[4 * g + 3] = gridDim.x + 10 * gridDim.y + 100 * gridDim.z;
}
"""


def test_3d_grid_of_3d_blocks_gives_every_thread_its_indices():
    grid, block = (3, 2, 2), (5, 3, 2)   # 30 threads per block: one partial warp
    nb, nt = 12, 30
    out = np.full(4 * nb * nt, -1, np.int32)
    launch(IDS, "k", grid, block, out)
    o = out.reshape(2, 2, 3, 2, 3, 5, 4)  # bz, by, bx, tz, ty, tx, field
    bz, by, bx, tz, ty, tx = np.indices((2, 2, 3, 2, 3, 5))
    np.testing.assert_array_equal(o[..., 0], tx + 10 * ty + 100 * tz)
    np.testing.assert_array_equal(o[..., 1], bx + 10 * by + 100 * bz)
    assert (o[..., 2] == 5 + 30 + 200).all()
    assert (o[..., 3] == 3 + 20 + 200).all()


def test_blocks_whose_first_row_spans_whole_warps_give_every_thread_its_indices():
    # (40, 3): warp 0 lies in row 0 (threadIdx.x is its lane), the others
    # straddle rows; (64,): every warp in the one row; (16, 4): none does
    for grid, block in (((2, 1, 1), (40, 3, 1)), ((3, 1, 1), (64, 1, 1)), ((1, 2, 1), (16, 4, 1))):
        nb, nt = grid[0] * grid[1], block[0] * block[1]
        out = np.full(4 * nb * nt, -1, np.int32)
        launch(IDS, "k", grid, block, out)
        o = out.reshape(grid[1], grid[0], block[1], block[0], 4)   # by, bx, ty, tx, field
        _, _, ty, tx = np.indices((grid[1], grid[0], block[1], block[0]))
        np.testing.assert_array_equal(o[..., 0], tx + 10 * ty)


def test_partial_last_warp_runs_only_existing_threads():
    src = r"""
    extern "C" __global__ void k(int* out, int* count) {
        out[threadIdx.x] = 1;
        atomicAdd(count, 1);
    }"""
    out = np.zeros(64, np.int32)
    count = np.zeros(1, np.int32)
    la = launch(src, "k", 1, 37, out, count)
    assert out.sum() == 37 and out[:37].all()
    assert count[0] == 37
    assert la.stats["global_store_requests"] == 2


def test_blocks_go_round_robin_over_sms():
    got = list(RoundRobinBlockScheduler(4).schedule((3, 2, 1)))
    assert [(i, sm) for i, _, sm in got] == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 0), (5, 1)]
    assert got[4][1] == (1, 1, 0)


def test_block_batches_in_numpy_are_the_schedule_in_order():
    from gpuemu.machine.block_scheduler import BlockBatch, RoundRobinBlockScheduler
    sched = RoundRobinBlockScheduler(7)
    grid = (5, 3, 4)
    want = list(sched.schedule(grid))
    got = []
    for start in range(0, 60, 16):
        got.extend(BlockBatch(sched.schedule_array(grid, start, min(start + 16, 60))))
    assert got == want
