// Stream compaction with warp-aggregated atomics: the active threads of a
// warp form a coalesced group whose leader reserves room for all of them.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ int atomicAggInc(int *counter)
{
    cg::coalesced_group active = cg::coalesced_threads();
    int prev;
    if (active.thread_rank() == 0) prev = atomicAdd(counter, active.size());
    prev = active.shfl(prev, 0);
    return prev + active.thread_rank();
}

__global__ void filter_positive(int *dst, int *nres, const int *src, int n)
{
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n && src[i] > 0)
        dst[atomicAggInc(nres)] = src[i];
}
