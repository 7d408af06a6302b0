// reduce_interleaved: per-block sum with interleaved addressing (Harris,
// "Optimizing Parallel Reduction in CUDA", kernel 1).
// Shows divergent branches: at step s only threads with tid % (2s) == 0 work,
// so every warp keeps running with fewer and fewer active lanes.
#define BLOCK 256

extern "C" __global__ void reduce_interleaved(const int *idata, int *odata)
{
    __shared__ int sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    sdata[tid] = idata[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        odata[blockIdx.x] = sdata[0];
}
