// gmem_offset: a copy whose reads start `offset` floats into the array.
// With offset 0 a warp reads 128 aligned bytes: 4 sectors. Offset 1 shifts
// the 128 bytes across a sector boundary: 5 sectors per request, 25% more
// traffic for the same data (Best Practices Guide, "Misaligned Accesses").
// Writes stay aligned: 4 sectors.
extern "C" __global__ void gmem_offset(float *out, const float *in, int offset)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i + offset];
}
