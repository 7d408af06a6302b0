// Row softmax with warp shuffles, fast-math intrinsics and FLT_MAX.
#include <float.h>
#include <math.h>

__device__ float warp_max(float v)
{
    for (int o = warpSize / 2; o > 0; o /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_sum(float v)
{
    for (int o = 16; o; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o, 32);
    return __shfl_sync(0xffffffffu, v, 0);
}

__global__ void softmax(const float *in, float *out, int cols)
{
    const float *row = in + (size_t)blockIdx.x * cols;
    float *orow = out + (size_t)blockIdx.x * cols;
    int lane = threadIdx.x & 31;
    float m = -FLT_MAX;
    for (int c = lane; c < cols; c += 32)
        m = max(m, row[c]);
    m = warp_max(m);
    float s = 0.0f;
    for (int c = lane; c < cols; c += 32)
        s += __expf(row[c] - m);
    s = warp_sum(s);
    float inv = __fdividef(1.0f, s);
    for (int c = lane; c < cols; c += 32)
        orow[c] = __saturatef(__expf(row[c] - m) * inv);
    if (lane == 0 && isnan(s))
        orow[0] = NAN;
}
