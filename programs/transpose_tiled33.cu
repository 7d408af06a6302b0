// transpose_tiled33: the same transpose through a padded tile[32][33].
// The extra column shifts each row by one bank, so a column read touches 32
// different banks: no bank conflicts (1 wavefront per request), same result.
extern "C" __global__ void transpose_tiled33(float *odata, const float *idata, int width)
{
    __shared__ float tile[32][33];
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
