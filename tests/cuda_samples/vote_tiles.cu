// Counting with tile votes: per 8-thread tile, how many elements pass,
// whether any / all of them do (ballot, any, all of cg::thread_block_tile).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void tile_votes(const float *x, float threshold, int *count, int *any, int *all)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(block);
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool pass = x[i] > threshold;
    unsigned int bits = tile.ballot(pass);
    int a = tile.any(pass), l = tile.all(pass);
    if (tile.thread_rank() == 0) {
        unsigned int t = i / 8;
        count[t] = __popc(bits);
        any[t] = a;
        all[t] = l;
    }
}
