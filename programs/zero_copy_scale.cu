// zero_copy_scale: out = 2 * in, one coalesced read and write per thread.
// Run with `python programs/host_memory.py`, it compares the ways to get the
// input to the GPU: a pageable copy, a pinned copy, zero-copy (the kernel
// reads mapped host memory over PCIe) and managed memory (pages migrate on
// the first touch), and a copy that overlaps the kernel in another stream.

extern "C" __global__ void zero_copy_scale(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i];
}
