"""On a GPU with CuPy: how long a block waits for another's flag (README,
"Blocks run one at a time ... parked"). Block 0's thread 0 spins on a
volatile flag that block 1 sets after a __threadfence; each block's thread
0 writes clock64() from its start to its end. gpuemu runs block 0 until it
is parked (16384 loop iterations and more), so its counted cycles stand far
above these.

    python benchmarks/handshake_h100.py      # H100, 2026-11-24: block 0 1,182-1,289 cycles, block 1 754-761
"""
import cupy as cp

SRC = r'''
extern "C" __global__ void k(volatile int *flag, long long *t) {
  long long t0 = clock64();
  if (blockIdx.x == 0) { if (threadIdx.x == 0) { while (flag[0] == 0) { } } __syncthreads(); }
  else if (threadIdx.x == 0) { __threadfence(); flag[0] = 1; }
  if (threadIdx.x == 0) t[blockIdx.x] = clock64() - t0;
}'''


def main() -> None:
    k = cp.RawKernel(SRC, "k")
    for _ in range(5):
        flag, t = cp.zeros(1, cp.int32), cp.zeros(2, cp.int64)
        k((2,), (32,), (flag, t))
        cp.cuda.Device().synchronize()
        print(f"block 0: {int(t[0])} cycles, block 1: {int(t[1])} cycles")


if __name__ == "__main__":
    main()
