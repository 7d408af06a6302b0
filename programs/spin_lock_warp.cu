// spin_lock_warp: every thread takes one global lock in turn. Inside one warp
// this needs independent thread scheduling: on sm_70 and later the thread that
// won the lock runs on while its warp-mates spin, so the kernel completes; on
// sm_60 and earlier the warp reconverges after the loop (SIMT stack), the
// winner never gets to unlock and the warp deadlocks:
// `gpuemu check programs/spin_lock_warp.json --arch sm_60 --budget 20000`.
extern "C" __global__ void spin_lock_warp(int *lock, int *counter)
{
    while (atomicCAS(lock, 0, 1) != 0)
        ;
    counter[0] = counter[0] + 1;
    __threadfence();
    atomicExch(lock, 0);
}
