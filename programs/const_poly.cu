// const_poly: y = c0 + c1 x + ... + c7 x^7 with the coefficients in
// __constant__ memory, evaluated by Horner's rule.
// Every lane of a warp reads the same coefficient at the same time: one
// constant-cache access per request (a broadcast), the pattern constant
// memory is built for.
#define DEGREE 7

__constant__ float coeffs[DEGREE + 1];

extern "C" __global__ void const_poly(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float xi = x[i];
    float acc = coeffs[DEGREE];
    for (int k = DEGREE - 1; k >= 0; k--)
        acc = acc * xi + coeffs[k];
    y[i] = acc;
}
