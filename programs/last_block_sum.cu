// last_block_sum: a sum in one launch with the last-block pattern
// (CUDA C Programming Guide, "Memory Fence Functions", its sum example).
// Each block writes its partial sum, then __threadfence() makes that write
// visible to every other block before the block takes a ticket with
// atomicInc; the block that draws the last ticket knows all partial sums
// are visible and adds them up.
#define BLOCK 128

__device__ unsigned int count = 0;

extern "C" __global__ void last_block_sum(const float *in, float *partial, float *result, int n)
{
    __shared__ float sdata[BLOCK];
    __shared__ bool am_last;
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = sdata[0];
        __threadfence();
        unsigned int ticket = atomicInc(&count, gridDim.x);
        am_last = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (am_last) {
        float sum = 0.0f;
        for (unsigned int b = tid; b < gridDim.x; b += blockDim.x)
            sum += ((volatile float *)partial)[b];
        sdata[tid] = sum;
        __syncthreads();
        for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (tid < s)
                sdata[tid] += sdata[tid + s];
            __syncthreads();
        }
        if (tid == 0) {
            result[0] = sdata[0];
            count = 0;
        }
    }
}
