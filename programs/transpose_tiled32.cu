// transpose_tiled32: transpose through a shared tile[32][32].
// Global reads and writes are now both coalesced, but the tile is read down a
// column: the 32 lanes of a warp hit addresses 32 words apart, all in one bank,
// so every shared load is a 32-way bank conflict (32 wavefronts per request).
extern "C" __global__ void transpose_tiled32(float *odata, const float *idata, int width)
{
    __shared__ float tile[32][32];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        odata[(y + j) * width + x] = tile[threadIdx.x][threadIdx.y + j];
}
