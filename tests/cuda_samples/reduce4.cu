// Reduction step 4: the last warp reduced with tile shuffles (no __syncthreads).
#include "reduce_cg_steps.cuh"

template <class T, unsigned int blockSize>
__global__ void reduce4(const T *g_idata, T *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ T sdata[blockSize];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    T mySum = (i < n) ? g_idata[i] : static_cast<T>(0);
    if (i + blockSize < n) mySum += g_idata[i + blockSize];
    sdata[tid] = mySum;
    cg::sync(cta);
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        cg::sync(cta);
    }
    lastWarpSum<T, blockSize>(cta, sdata, mySum, &g_odata[blockIdx.x]);
}

template __global__ void reduce4<float, 128>(const float *, float *, unsigned int);
template __global__ void reduce4<float, 256>(const float *, float *, unsigned int);
