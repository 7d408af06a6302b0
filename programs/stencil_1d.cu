// stencil_1d: odata[i] = sum of idata[i-R .. i+R] (R = 3), zero outside the array.
// Shows the shared-memory halo pattern: each block stages its 256 elements
// plus R on each side in shared memory once, then every thread reads 2R+1
// neighbours from shared memory instead of global memory.
#define RADIUS 3
#define BLOCK 256

__device__ float load_or_zero(const float *in, int i, int n)
{
    return (i >= 0 && i < n) ? in[i] : 0.0f;
}

extern "C" __global__ void stencil_1d(const float *idata, float *odata, int n)
{
    __shared__ float temp[BLOCK + 2 * RADIUS];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int s = threadIdx.x + RADIUS;
    temp[s] = load_or_zero(idata, g, n);
    if (threadIdx.x < RADIUS) {
        temp[s - RADIUS] = load_or_zero(idata, g - RADIUS, n);
        temp[s + BLOCK] = load_or_zero(idata, g + BLOCK, n);
    }
    __syncthreads();
    if (g >= n)
        return;
    float acc = 0.0f;
    for (int k = -RADIUS; k <= RADIUS; k++)
        acc += temp[s + k];
    odata[g] = acc;
}
