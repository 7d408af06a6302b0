// last_block_no_fence: the one-launch sum of last_block_sum without its
// __threadfence(). The last block to take a ticket reads the other blocks'
// partial sums, but nothing orders their stores before the ticket: on a GPU
// it may read stale partials. racecheck reports the global race between the
// partial's store and the last block's read:
// `gpuemu check programs/last_block_no_fence.json`.
extern "C" __global__ void last_block_no_fence(const int *in, int *partial,
                                               unsigned int *count, int *out)
{
    __shared__ int sum;
    int t = threadIdx.x;
    if (t == 0)
        sum = 0;
    __syncthreads();
    atomicAdd(&sum, in[blockIdx.x * blockDim.x + t]);
    __syncthreads();
    if (t == 0) {
        partial[blockIdx.x] = sum;
        unsigned int ticket = atomicAdd(count, 1u);
        if (ticket == gridDim.x - 1) {
            int total = 0;
            for (int b = 0; b < gridDim.x; b++)
                total += partial[b];
            out[0] = total;
        }
    }
}
