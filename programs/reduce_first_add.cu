// reduce_first_add: per-block sum that adds two elements while loading
// (Harris, "Optimizing Parallel Reduction in CUDA", kernel 4).
// Half as many blocks as reduce_sequential for the same data: each thread
// loads two values and adds them before the shared-memory tree, so no thread
// is idle in the first step.
#define BLOCK 256

extern "C" __global__ void reduce_first_add(const float *idata, float *odata)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + tid;
    sdata[tid] = idata[i] + idata[i + blockDim.x];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        odata[blockIdx.x] = sdata[0];
}
