// Block-wide inclusive scan: a shuffle scan in each warp tile, the warps'
// totals scanned by the first warp, then added back (as the shfl_scan sample).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <int blockSize>
__global__ void shfl_scan(int *data, int *partial_sums)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    __shared__ int sums[blockSize / 32];
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = tile.thread_rank();
    int warp_id = tile.meta_group_rank();
    int value = data[id];
    for (int i = 1; i <= 16; i *= 2) {
        int n = tile.shfl_up(value, i);
        if (lane >= i) value += n;
    }
    if (lane == 31) sums[warp_id] = value;
    block.sync();
    if (warp_id == 0 && lane < blockSize / 32) {
        int warp_sum = sums[lane];
        int mask = (1 << (blockSize / 32)) - 1;
        for (int i = 1; i <= (blockSize / 32); i *= 2) {
            int n = __shfl_up_sync(mask, warp_sum, i, blockSize / 32);
            if (lane >= i) warp_sum += n;
        }
        sums[lane] = warp_sum;
    }
    block.sync();
    if (warp_id > 0) value += sums[warp_id - 1];
    data[id] = value;
    if (threadIdx.x == blockDim.x - 1) partial_sums[blockIdx.x] = value;
}

template __global__ void shfl_scan<256>(int *, int *);
