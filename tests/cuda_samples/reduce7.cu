// Reduction step 7: cg::reduce inside each warp tile, then across the warps'
// partial sums (cooperative_groups/reduce.h).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

template <typename T, int blockSize>
__global__ void reduce7(const T *__restrict__ g_idata, T *__restrict__ g_odata, unsigned int n)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
    constexpr int numWarps = blockSize / 32;
    __shared__ T warpSums[numWarps];
    T mySum = 0;
    for (unsigned int i = blockIdx.x * blockSize + threadIdx.x; i < n; i += blockSize * gridDim.x)
        mySum += g_idata[i];
    mySum = cg::reduce(tile, mySum, cg::plus<T>());
    if (tile.thread_rank() == 0) warpSums[tile.meta_group_rank()] = mySum;
    block.sync();
    if (tile.meta_group_rank() == 0) {
        T v = tile.thread_rank() < numWarps ? warpSums[tile.thread_rank()] : static_cast<T>(0);
        v = cg::reduce(tile, v, cg::plus<T>());
        if (tile.thread_rank() == 0) g_odata[blockIdx.x] = v;
    }
}

template __global__ void reduce7<float, 256>(const float *, float *, unsigned int);
template __global__ void reduce7<unsigned int, 1024>(const unsigned int *, unsigned int *, unsigned int);
