// Exclusive and inclusive scans of 16-thread tiles with cg::exclusive_scan /
// cg::inclusive_scan (cooperative_groups/scan.h).
#include <cooperative_groups.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

__global__ void tile_scans(const unsigned int *in, unsigned int *inclusive, unsigned int *exclusive)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int v = in[i];
    inclusive[i] = cg::inclusive_scan(tile, v);
    exclusive[i] = cg::exclusive_scan(tile, v);
}
