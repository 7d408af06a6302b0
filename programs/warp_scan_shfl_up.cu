// warp_scan_shfl_up: inclusive prefix sum of each 256-element block.
// Each warp scans its 32 values in registers with __shfl_up_sync (lanes with
// lane < offset keep their value); warp totals go through shared memory, the
// first warp scans them the same way, and each warp adds its predecessors'.
__device__ int warp_inclusive_scan(int v, int lane)
{
    for (int offset = 1; offset < 32; offset *= 2) {
        int up = __shfl_up_sync(0xffffffff, v, offset);
        if (lane >= offset)
            v += up;
    }
    return v;
}

extern "C" __global__ void warp_scan_shfl_up(const int *idata, int *odata)
{
    __shared__ int warp_totals[32];
    int tid = threadIdx.x;
    int lane = tid & 31;
    int warp = tid >> 5;
    int i = blockIdx.x * blockDim.x + tid;
    int v = warp_inclusive_scan(idata[i], lane);
    if (lane == 31)
        warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x >> 5;
        int t = lane < nwarps ? warp_totals[lane] : 0;
        warp_totals[lane] = warp_inclusive_scan(t, lane);
    }
    __syncthreads();
    if (warp > 0)
        v += warp_totals[warp - 1];
    odata[i] = v;
}
