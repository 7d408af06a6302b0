// reduce_shfl_atomic: a whole-array sum with no second pass.
// Each warp folds its 32 values with the butterfly __shfl_xor_sync (after
// which every lane holds the warp's total), then lane 0 adds it to the single
// result with one atomicAdd: one global atomic request per warp, none per
// element, and no shared memory at all.
extern "C" __global__ void reduce_shfl_atomic(const int *idata, int *total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? idata[i] : 0;
    for (int mask = 16; mask > 0; mask /= 2)
        v += __shfl_xor_sync(0xffffffff, v, mask);
    if ((threadIdx.x & 31) == 0)
        atomicAdd(total, v);
}
