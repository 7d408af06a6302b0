// reduce_unroll_last_warp: per-block sum with the last six steps unrolled
// inside one warp (Harris, "Optimizing Parallel Reduction in CUDA", kernel 5).
// Once s <= 32 only warp 0 works, so __syncthreads() is not needed; since
// Volta the lanes of a warp need not run in lockstep, so each step reads
// into a register and __syncwarp() orders the reads before the writes
// (CUDA C Programming Guide, "Independent Thread Scheduling").
#define BLOCK 256

extern "C" __global__ void reduce_unroll_last_warp(const float *idata, float *odata)
{
    __shared__ float sdata[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + tid;
    sdata[tid] = idata[i] + idata[i + blockDim.x];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        float v = sdata[tid];
        for (unsigned int s = 32; s > 0; s >>= 1) {
            v += sdata[tid + s];
            __syncwarp();
            sdata[tid] = v;
            __syncwarp();
        }
    }
    if (tid == 0)
        odata[blockIdx.x] = sdata[0];
}
