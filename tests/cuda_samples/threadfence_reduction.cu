// Single-pass sum: every block writes its partial sum, the last block to
// finish (found with __threadfence and an atomic ticket) adds them up
// (as the threadFenceReduction sample).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ unsigned int retirementCount = 0;

template <unsigned int blockSize>
__device__ float blockSum(cg::thread_block cta, float *sdata, float mySum)
{
    unsigned int tid = cta.thread_rank();
    sdata[tid] = mySum;
    cg::sync(cta);
    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        cg::sync(cta);
    }
    return mySum;
}

template <unsigned int blockSize>
__global__ void reduceSinglePass(const float *g_idata, float *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ float sdata[blockSize];
    __shared__ bool amLast;
    float mySum = 0;
    for (unsigned int i = blockIdx.x * blockSize + threadIdx.x; i < n; i += blockSize * gridDim.x)
        mySum += g_idata[i];
    mySum = blockSum<blockSize>(cta, sdata, mySum);
    if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
    if (gridDim.x > 1) {
        if (cta.thread_rank() == 0) {
            __threadfence();
            unsigned int ticket = atomicInc(&retirementCount, gridDim.x);
            amLast = (ticket == gridDim.x - 1);
        }
        cg::sync(cta);
        if (amLast) {
            float total = 0;
            for (unsigned int i = cta.thread_rank(); i < gridDim.x; i += blockSize) total += g_odata[i];
            total = blockSum<blockSize>(cta, sdata, total);
            if (cta.thread_rank() == 0) {
                g_odata[0] = total;
                retirementCount = 0;
            }
        }
    }
}

template __global__ void reduceSinglePass<128>(const float *, float *, unsigned int);
