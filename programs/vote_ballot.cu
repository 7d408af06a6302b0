// vote_ballot: the warp vote functions on a per-lane predicate
// (value % 97 < 50: true for whole warps, false for whole warps, or mixed).
// __ballot_sync gathers one bit per lane, __popc counts them, __any_sync and
// __all_sync reduce the predicate over the warp; lane 0 writes one record of
// four ints per warp.
extern "C" __global__ void vote_ballot(const int *values, unsigned int *votes)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int pred = values[i] % 97 < 50;
    unsigned int mask = __ballot_sync(0xffffffff, pred);
    int any = __any_sync(0xffffffff, pred);
    int all = __all_sync(0xffffffff, pred);
    if ((threadIdx.x & 31) == 0) {
        int w = i / 32;
        votes[4 * w + 0] = mask;
        votes[4 * w + 1] = __popc(mask);
        votes[4 * w + 2] = any;
        votes[4 * w + 3] = all;
    }
}
