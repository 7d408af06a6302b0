// histogram_shared_atomics: a 256-bin histogram of (value & 255).
// Each block counts into its own shared-memory histogram with atomicAdd
// (cheap, on-chip), then adds its bins to the global histogram once: 256
// global atomics per block instead of one per element.
#define BINS 256

extern "C" __global__ void histogram_shared_atomics(const int *data, unsigned int *hist, int n)
{
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i] & (BINS - 1)], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        atomicAdd(&hist[b], local[b]);
}
