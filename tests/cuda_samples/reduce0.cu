// Reduction step 0: interleaved addressing, divergent branching (tid % (2*s)).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <class T>
__global__ void reduce0(const T *g_idata, T *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ unsigned char smem[];
    T *sdata = reinterpret_cast<T *>(smem);
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_idata[i] : static_cast<T>(0);
    cg::sync(cta);
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if ((tid % (2 * s)) == 0)
            sdata[tid] += sdata[tid + s];
        cg::sync(cta);
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

template __global__ void reduce0<float>(const float *, float *, unsigned int);
template __global__ void reduce0<int>(const int *, int *, unsigned int);
