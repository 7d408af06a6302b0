// warp_handoff_no_fence: warp 0 fills a shared buffer and raises a volatile
// flag; warp 1 spins on the flag, then reads the buffer. Nothing orders the
// buffer's stores before the flag's, so on a GPU warp 1 may read stale
// values. racecheck reports the race between the buffer's store and its read:
// `gpuemu check programs/warp_handoff_no_fence.json`. With a
// __threadfence_block() between the two stores the check is clean (message
// passing: a fence, then a volatile or atomic flag store that the other warp
// reads before its access).
extern "C" __global__ void warp_handoff_no_fence(const int *src, int *out)
{
    __shared__ volatile int ready;
    __shared__ int buf[32];
    int lane = threadIdx.x % 32;
    if (threadIdx.x == 0)
        ready = 0;
    __syncthreads();
    if (threadIdx.x < 32) {
        buf[lane] = src[lane] * 2;
        if (lane == 0)
            ready = 1;
    } else {
        while (ready == 0) { }
        out[lane] = buf[lane];
    }
}
