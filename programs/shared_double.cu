// shared_double: 8-byte values in shared memory, and the 8-byte bank mode.
// A warp reading 32 consecutive doubles asks for 256 bytes: with 32 banks of
// 4 bytes (sm_5x and later) that is two wavefronts, the ideal, not a
// conflict. Kepler (cc3.x) can make each bank 8 bytes wide
// (cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte)), and then
// the same read is one wavefront; compare
//   gpuemu run programs/shared_double.json
//   gpuemu run programs/shared_double.json --arch cc3x --bank-mode 8
extern "C" __global__ void shared_double(const double *in, double *out)
{
    __shared__ double s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = in[i];
    __syncthreads();
    out[i] = 2.0 * s[255 - tid];
}
