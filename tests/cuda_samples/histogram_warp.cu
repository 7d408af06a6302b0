// 64-bin histogram with one sub-histogram per warp in shared memory (as the
// histogram64 sample), merged into the global histogram with atomics.
#include <cooperative_groups.h>
#include <stdint.h>
namespace cg = cooperative_groups;

#define BINS 64
#define WARPS 4

__global__ void histogram64(unsigned int *d_hist, const uint8_t *d_data, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cta);
    __shared__ unsigned int s_hist[WARPS][BINS];
    for (unsigned int i = cta.thread_rank(); i < WARPS * BINS; i += cta.size())
        s_hist[i / BINS][i % BINS] = 0;
    cta.sync();
    unsigned int *myHist = s_hist[warp.meta_group_rank()];
    for (unsigned int pos = blockIdx.x * blockDim.x + threadIdx.x; pos < n; pos += blockDim.x * gridDim.x)
        atomicAdd(&myHist[d_data[pos] >> 2], 1u);
    cta.sync();
    for (unsigned int bin = cta.thread_rank(); bin < BINS; bin += cta.size()) {
        unsigned int sum = 0;
        for (int w = 0; w < WARPS; ++w) sum += s_hist[w][bin];
        atomicAdd(&d_hist[bin], sum);
    }
}
