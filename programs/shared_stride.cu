// shared_stride: every lane reads shared memory `stride` words apart.
// Lane i reads word i * stride: with 32 banks of 4 bytes, stride 1 touches
// all 32 banks once (1 wavefront), stride 2 puts two lanes in each bank it
// uses (2-way), stride 4 is 4-way, stride 32 puts every lane in bank 0
// (32-way). Odd strides are conflict-free (CUDA C Programming Guide,
// "Shared Memory", strided access). Run with another stride:
//   gpuemu run programs/shared_stride.cu --kernel shared_stride --block 256 \
//     --arg out:float32[256] --arg i32:3
#define WORDS 8192

extern "C" __global__ void shared_stride(float *out, int stride)
{
    __shared__ float s[WORDS];
    int tid = threadIdx.x;
    for (int i = tid; i < WORDS; i += blockDim.x)
        s[i] = (float)i;
    __syncthreads();
    out[tid] = s[(tid * stride) % WORDS];
}
