// gmem_stride: a copy that reads every `stride`-th float.
// A warp's 32 reads span 32 * stride * 4 bytes: stride 1 is 4 sectors per
// request, stride 2 is 8, stride 8 or more is 32 (a sector per lane, seven
// eighths of each sector wasted) (Best Practices Guide, "Strided Accesses").
extern "C" __global__ void gmem_stride(float *out, const float *in, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i * stride];
}
