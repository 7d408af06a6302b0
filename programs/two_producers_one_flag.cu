// two_producers_one_flag: blocks 0 and 1 each write their partial sum, fence
// and raise a flag of their own; block 2 waits for block 0's flag only, then
// adds both partials. Block 0's partial is ordered before block 2's read (the
// flag it published after its fence), block 1's is not: on a GPU block 2 may
// read it before block 1 wrote it. racecheck reports the race between block
// 1's store and block 2's load: `gpuemu check programs/two_producers_one_flag.json`.
// Waiting for both flags (`while (flag[0] == 0 || flag[1] == 0)`) makes the
// check clean.
extern "C" __global__ void two_producers_one_flag(const int *in, int *partial,
                                                  volatile int *flag, int *out)
{
    if (blockIdx.x < 2) {
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = in[blockIdx.x] * 10;
            __threadfence();
            flag[blockIdx.x] = 1;
        }
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        __threadfence();
        out[0] = partial[0] + partial[1];
    }
}
