// Bitonic sort of one block in shared memory; a swap helper through pointers.
__device__ __forceinline__ void swap_if(unsigned *a, unsigned *b, bool up)
{
    if ((*a > *b) == up) {
        unsigned t = *a;
        *a = *b;
        *b = t;
    }
}

extern "C" __global__ void bitonic(unsigned *data)
{
    extern __shared__ unsigned s[];
    const unsigned tid = threadIdx.x;
    const unsigned n = blockDim.x;
    s[tid] = data[blockIdx.x * n + tid];
    __syncthreads();
    for (unsigned size = 2; size <= n; size <<= 1) {
        for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
            unsigned partner = tid ^ stride;
            if (partner > tid)
                swap_if(&s[tid], &s[partner], (tid & size) == 0);
            __syncthreads();
        }
    }
    data[blockIdx.x * n + tid] = s[tid];
}
