// shared_broadcast: all lanes of a warp read the same shared word.
// One bank word read by many lanes is delivered to all of them in one
// wavefront (a broadcast), so there is no conflict even though every lane
// hits bank 0. Lanes that read two words of one bank in different rows do
// conflict: the second read below (lanes split between words 0 and 32) is
// 2-way (CUDA C Programming Guide, "Shared Memory": multicast).
extern "C" __global__ void shared_broadcast(float *same, float *two_rows)
{
    __shared__ float s[64];
    int tid = threadIdx.x;
    if (tid < 64)
        s[tid] = (float)(tid * 3);
    __syncthreads();
    same[blockIdx.x * blockDim.x + tid] = s[0];
    two_rows[blockIdx.x * blockDim.x + tid] = s[(tid % 2) * 32];
}
