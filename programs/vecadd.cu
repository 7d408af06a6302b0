// vecadd: c[i] = a[i] + b[i], one thread per element.
// Shows the simplest coalesced kernel: consecutive threads touch consecutive
// floats (4 sectors per warp request on sm_90), and the bounds guard that
// switches off the lanes of the last, partial block (n = 5000, 5120 threads).
extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
