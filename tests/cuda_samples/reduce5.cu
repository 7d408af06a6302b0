// Reduction step 5: completely unrolled by the template block size.
#include "reduce_cg_steps.cuh"

template <class T, unsigned int blockSize>
__global__ void reduce5(const T *g_idata, T *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    __shared__ T sdata[blockSize];
    unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    T mySum = (i < n) ? g_idata[i] : static_cast<T>(0);
    if (i + blockSize < n) mySum += g_idata[i + blockSize];
    unrolledBlockSum<T, blockSize>(cta, sdata, mySum, &g_odata[blockIdx.x]);
}

template __global__ void reduce5<int, 64>(const int *, int *, unsigned int);
template __global__ void reduce5<float, 512>(const float *, float *, unsigned int);
