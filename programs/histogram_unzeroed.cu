// histogram_unzeroed: a shared-memory histogram that forgets to zero its
// bins. Shared memory is not initialised on a GPU (the emulator's happens to
// be zero, so the result looks right); initcheck reports the atomicAdd's
// read of bins nothing wrote: `gpuemu check programs/histogram_unzeroed.json`.
#define BINS 16
extern "C" __global__ void histogram_unzeroed(const int *in, int *hist)
{
    __shared__ int h[BINS];
    int t = threadIdx.x;
    atomicAdd(&h[in[blockIdx.x * blockDim.x + t] % BINS], 1);
    __syncthreads();
    if (t < BINS)
        atomicAdd(&hist[t], h[t]);
}
