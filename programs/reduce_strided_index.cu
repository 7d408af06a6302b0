// reduce_strided_index: per-block sum, interleaved addressing with a strided
// index (Harris, "Optimizing Parallel Reduction in CUDA", kernel 2).
// index = 2 * s * tid keeps the working threads contiguous, so warps no
// longer diverge; but lanes now read words 2s apart: 2-way bank conflicts at
// s = 1, 4-way at s = 2, 8-way from s = 4 on (then fewer than 32 lanes work),
// the cost kernel 3 removes.
#define BLOCK 256

extern "C" __global__ void reduce_strided_index(const int *idata, int *odata)
{
    __shared__ int sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    sdata[tid] = idata[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x)
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0)
        odata[blockIdx.x] = sdata[0];
}
