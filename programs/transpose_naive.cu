// transpose_naive: odata = idata^T for a width x width matrix, 32x32 tiles of
// work per block of 32x8 threads, read straight from global memory.
// Shows uncoalesced stores: a warp's reads are one row (4 sectors) but its
// writes go down a column, one 32-byte sector per lane (32 per request).
extern "C" __global__ void transpose_naive(float *odata, const float *idata, int width)
{
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        odata[x * width + (y + j)] = idata[(y + j) * width + x];
}
