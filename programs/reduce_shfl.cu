// reduce_shfl: per-block sum with warp shuffles.
// Each warp sums its 32 values in registers with __shfl_down_sync (no shared
// memory, no barrier); only the eight warp totals go through shared memory.
__device__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

extern "C" __global__ void reduce_shfl(const float *idata, float *odata)
{
    __shared__ float warp_totals[32];
    int tid = threadIdx.x;
    int lane = tid % warpSize;
    int warp = tid / warpSize;
    float v = warp_sum(idata[blockIdx.x * blockDim.x + tid]);
    if (lane == 0)
        warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / warpSize;
        v = lane < nwarps ? warp_totals[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0)
            odata[blockIdx.x] = v;
    }
}
