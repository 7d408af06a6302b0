// occupancy_study: one kernel whose occupancy the launch decides.
// Each block stages its slice of the input through dynamic shared memory,
// reversed; how many blocks fit on an SM then depends on the block size and
// the shared bytes per block. Compare (sm_90: 2048 threads, 32 blocks and
// 228 KB of shared memory per SM):
//   gpuemu occupancy programs/occupancy_study.cu --block 256 --shared 1024
//   gpuemu occupancy programs/occupancy_study.cu --block 256 --shared 49152
//   gpuemu occupancy programs/occupancy_study.cu --block 32 --shared 128
extern "C" __global__ void occupancy_study(const float *in, float *out)
{
    extern __shared__ float stage[];
    int tid = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    stage[tid] = in[base + tid];
    __syncthreads();
    out[base + tid] = stage[blockDim.x - 1 - tid];
}
