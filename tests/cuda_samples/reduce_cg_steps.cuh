// Shared by the reduction kernels: the last warp of a block reduced with a
// cooperative-groups tile, as in NVIDIA's reduction sample.
#pragma once
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <class T>
__device__ __forceinline__ T warpReduceSum(cg::thread_block_tile<32> tile, T mySum)
{
    for (int offset = tile.size() / 2; offset > 0; offset /= 2)
        mySum += tile.shfl_down(mySum, offset);
    return mySum;
}

// The end of steps 4 to 6: the last 64 partial sums reduced by the first
// warp with tile shuffles; thread 0 writes the block's sum.
template <class T, unsigned int blockSize>
__device__ void lastWarpSum(cg::thread_block cta, const T *sdata, T mySum, T *blockOut)
{
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    if (cta.thread_rank() < 32) {
        if (blockSize >= 64) mySum += sdata[cta.thread_rank() + 32];
        mySum = warpReduceSum<T>(tile32, mySum);
    }
    if (cta.thread_rank() == 0) *blockOut = mySum;
}

// Steps 5 and 6: the shared-memory tree completely unrolled by the block size.
template <class T, unsigned int blockSize>
__device__ void unrolledBlockSum(cg::thread_block cta, T *sdata, T mySum, T *blockOut)
{
    unsigned int tid = cta.thread_rank();
    sdata[tid] = mySum;
    cg::sync(cta);
    if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
    cg::sync(cta);
    if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
    cg::sync(cta);
    if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
    cg::sync(cta);
    lastWarpSum<T, blockSize>(cta, sdata, mySum, blockOut);
}
