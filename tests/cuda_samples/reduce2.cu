// Reduction step 2: sequential addressing (no bank conflicts).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

template <class T>
__global__ void reduce2(const T *g_idata, T *g_odata, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ unsigned char smem[];
    T *sdata = reinterpret_cast<T *>(smem);
    unsigned int tid = cta.thread_rank();
    unsigned int i = cta.group_index().x * cta.size() + tid;
    sdata[tid] = (i < n) ? g_idata[i] : static_cast<T>(0);
    cg::sync(cta);
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        cg::sync(cta);
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

template __global__ void reduce2<float>(const float *, float *, unsigned int);
