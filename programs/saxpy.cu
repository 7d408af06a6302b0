// saxpy: y = a * x + y (single precision), with a grid-stride loop.
// Shows a scalar kernel parameter and a grid smaller than the data: each
// thread handles elements i, i + gridDim.x * blockDim.x, ...
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
