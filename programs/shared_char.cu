// shared_char: bytes in shared memory.
// Lane i reads char i: four consecutive lanes share one 4-byte bank word, and
// bytes of one word never conflict, so a warp needs one wavefront. Reading
// char 4*i (one lane per word, still one word per bank) is conflict-free
// too; the conflict only appears when lanes read different rows of a bank
// (Guide, "Shared Memory", 8-bit and 16-bit access).
extern "C" __global__ void shared_char(const unsigned char *in, unsigned char *by_tid,
                                       unsigned char *by_4tid)
{
    __shared__ unsigned char s[1024];
    int tid = threadIdx.x;
    for (int i = tid; i < 1024; i += blockDim.x)
        s[i] = in[blockIdx.x * 1024 + i];
    __syncthreads();
    by_tid[blockIdx.x * blockDim.x + tid] = s[tid];
    by_4tid[blockIdx.x * blockDim.x + tid] = s[(4 * tid) % 1024];
}
