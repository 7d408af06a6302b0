// Reduction step 3: the first add during the global load (half the blocks).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <class T>
__global__ void reduce3(const T *g_idata, T *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ unsigned char smem[];
    T *sdata = reinterpret_cast<T *>(smem);
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    T mySum = (i < n) ? g_idata[i] : static_cast<T>(0);
    if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];
    sdata[tid] = mySum;
    cg::sync(cta);
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
        cg::sync(cta);
    }
    if (tid == 0) g_odata[blockIdx.x] = mySum;
}

template __global__ void reduce3<float>(const float *, float *, unsigned int);
