// Reduction step 1: interleaved addressing with a strided index, no divergence.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <class T>
__global__ void reduce1(const T *g_idata, T *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ unsigned char smem[];
    T *sdata = reinterpret_cast<T *>(smem);
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : static_cast<T>(0);
    cta.sync();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        int index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        cta.sync();
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

template __global__ void reduce1<float>(const float *, float *, unsigned int);
