// global_coeffs: const_poly with its coefficients in global memory.
// The same Horner loop as const_poly, but the eight coefficients come through
// a pointer to global memory: every lane reads the same address, a request
// of one sector each time (through L1) instead of one constant-cache
// broadcast. Compare the counters of the two programs: constant_requests
// here are 0, global_load_requests are 8 per warp more.
#define DEGREE 7

extern "C" __global__ void global_coeffs(const float *x, float *y, const float *coeffs, int n)
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
