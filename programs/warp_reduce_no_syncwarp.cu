// warp_reduce_no_syncwarp: the classic unrolled last-warp reduction without
// __syncwarp or volatile. Lanes of a warp ran in lock-step before Volta, so
// it worked; from sm_70 on lanes are scheduled independently and the reads
// of s[t + 16] may see old values: a race that hides (the emulator's result
// is right). `gpuemu check programs/warp_reduce_no_syncwarp.json` reports it on
// sm_70 and later and not with --arch sm_60.
extern "C" __global__ void warp_reduce_no_syncwarp(const int *in, int *out)
{
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[blockIdx.x * 64 + t];
    __syncthreads();
    if (t < 32) {
        s[t] += s[t + 32];
        s[t] += s[t + 16];
        s[t] += s[t + 8];
        s[t] += s[t + 4];
        s[t] += s[t + 2];
        s[t] += s[t + 1];
    }
    if (t == 0)
        out[blockIdx.x] = s[0];
}
