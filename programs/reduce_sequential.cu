// reduce_sequential: per-block sum with sequential addressing (Harris,
// "Optimizing Parallel Reduction in CUDA", kernel 3).
// The active threads are contiguous (tid < s), so whole warps drop out instead
// of diverging, and consecutive lanes read consecutive words: no bank conflicts.
#define BLOCK 256

extern "C" __global__ void reduce_sequential(const float *idata, float *odata)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    sdata[tid] = idata[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        odata[blockIdx.x] = sdata[0];
}
