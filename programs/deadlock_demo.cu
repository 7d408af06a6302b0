// deadlock_demo: a spin-wait that a barrier turns into a deadlock.
// Thread 0 spins until thread 32 sets a flag; but thread 32 sets it only
// after __syncthreads(), which cannot release while thread 0 spins: on a GPU
// the block hangs forever (the Guide's "Synchronization Functions": a barrier
// must be reached by every thread of the block). The emulator's watchdog
// stops the spinning warp after the manifest's budget of loop iterations;
// since warp 1 waits at the barrier for it, that is a 'deadlock' finding
// naming the loop's line and the barrier's; the manifest expects that
// finding instead of outputs.
extern "C" __global__ void deadlock_demo(volatile int *flag, int *out)
{
    int tid = threadIdx.x;
    if (tid == 0)
        while (flag[0] == 0)
            ;
    __syncthreads();
    if (tid == 32)
        flag[0] = 1;
    out[tid] = tid;
}
