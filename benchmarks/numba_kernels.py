"""Numba CUDA-simulator versions of the kernels in benchmarks/compare.py.

The same algorithms and launch shapes as the CUDA C sources in compare.py
(same block sizes, same tiles, same per-thread work), written for
``numba.cuda`` and run by its simulator (``NUMBA_ENABLE_CUDASIM=1``, which
this module sets before importing numba: import it before anything else
imports numba). The simulator has no warp shuffles or votes, so the shuffle
reduction has no version here.

``LAUNCHES[name](inputs)`` launches one kernel on the numpy inputs of
compare.py and returns its output array; compare.py times it and checks the
result against numpy. Run as a script (``python benchmarks/numba_kernels.py
NAME SIZE FULL_SIZE REPEATS``) it does one warm-up launch and REPEATS timed ones and
prints one JSON line: this is how compare.py drives a numba installed in
another interpreter (``--numba-python``).
"""
from __future__ import annotations

import os

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402
from numba import cuda, float32, uint32  # noqa: E402

TILE_DIM, BLOCK_ROWS = 32, 8      # transpose: tile[32][33], block (32, 8)
RBLOCK = 256                      # reductions and histogram: 256 threads per block
MTILE = 16                        # matmul: 16 x 16 tiles and blocks
BINS = 256


@cuda.jit
def vecadd(a, b, c, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        c[i] = a[i] + b[i]


@cuda.jit
def transpose(odata, idata, width):
    tile = cuda.shared.array((TILE_DIM, TILE_DIM + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE_DIM + tx
    y = cuda.blockIdx.y * TILE_DIM + ty
    for j in range(0, TILE_DIM, BLOCK_ROWS):
        tile[ty + j, tx] = idata[(y + j) * width + x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE_DIM + tx
    y = cuda.blockIdx.x * TILE_DIM + ty
    for j in range(0, TILE_DIM, BLOCK_ROWS):
        odata[(y + j) * width + x] = tile[tx, ty + j]


@cuda.jit
def reduce_shared(idata, odata):
    sdata = cuda.shared.array(RBLOCK, float32)
    tid = cuda.threadIdx.x
    sdata[tid] = idata[cuda.blockIdx.x * cuda.blockDim.x + tid]
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s >>= 1
    if tid == 0:
        odata[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def matmul(A, B, C, M, N, K):
    As = cuda.shared.array((MTILE, MTILE), float32)
    Bs = cuda.shared.array((MTILE, MTILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * MTILE + ty
    col = cuda.blockIdx.x * MTILE + tx
    acc = float32(0.0)
    for t in range((K + MTILE - 1) // MTILE):
        ak = t * MTILE + tx
        bk = t * MTILE + ty
        As[ty, tx] = A[row * K + ak] if (row < M and ak < K) else float32(0.0)
        Bs[ty, tx] = B[bk * N + col] if (bk < K and col < N) else float32(0.0)
        cuda.syncthreads()
        for k in range(MTILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    if row < M and col < N:
        C[row * N + col] = acc


@cuda.jit
def histogram(data, hist, n):
    local = cuda.shared.array(BINS, uint32)
    tid = cuda.threadIdx.x
    for b in range(tid, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    stride = cuda.gridDim.x * cuda.blockDim.x
    while i < n:
        cuda.atomic.add(local, data[i] & (BINS - 1), 1)
        i += stride
    cuda.syncthreads()
    for b in range(tid, BINS, cuda.blockDim.x):
        cuda.atomic.add(hist, b, local[b])


# ---- launches: the same grids and blocks as compare.py's gpuemu launches ----

def launch_vecadd(inp):
    a, b = inp["a"], inp["b"]
    n = a.size
    c = np.zeros_like(a)
    vecadd[(n + 255) // 256, 256](a, b, c, np.int32(n))
    return c


def launch_transpose(inp):
    a = inp["a"]
    n = a.shape[0]
    out = np.zeros(n * n, dtype=np.float32)
    transpose[(n // TILE_DIM, n // TILE_DIM), (TILE_DIM, BLOCK_ROWS)](out, a.reshape(-1), np.int32(n))
    return out.reshape(n, n)


def launch_reduce_shared(inp):
    x = inp["x"]
    out = np.zeros(x.size // RBLOCK, dtype=np.float32)
    reduce_shared[x.size // RBLOCK, RBLOCK](x, out)
    return out


def launch_matmul(inp):
    A, B = inp["A"], inp["B"]
    M, K = A.shape
    N = B.shape[1]
    C = np.zeros(M * N, dtype=np.float32)
    grid = ((N + MTILE - 1) // MTILE, (M + MTILE - 1) // MTILE)
    matmul[grid, (MTILE, MTILE)](A.reshape(-1), B.reshape(-1), C, np.int32(M), np.int32(N), np.int32(K))
    return C.reshape(M, N)


def launch_histogram(inp):
    data, grid = inp["data"], inp["grid"]
    hist = np.zeros(BINS, dtype=np.uint32)
    histogram[grid, RBLOCK](data, hist, np.int32(data.size))
    return hist


LAUNCHES = {
    "vecadd": launch_vecadd,
    "transpose": launch_transpose,
    "reduce_shared": launch_reduce_shared,
    "matmul": launch_matmul,
    "histogram": launch_histogram,
}


def time_launches(bench, size: int, full: int, repeats: int) -> list:
    """Warm up once on bench's small inputs, then time REPEATS launches of
    the Numba version at SIZE, checking every result (compare.Bench)."""
    import time
    launch = LAUNCHES[bench.name]
    warm = bench.make_inputs(bench.warm_size)
    bench.check(launch(warm), warm, "numba warm-up")
    inp = bench.small_inputs(size, full)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = launch(inp)
        times.append(time.perf_counter() - t0)
        bench.check(out, inp, "numba")
    return times


def _main(argv) -> None:
    """NAME SIZE FULL_SIZE REPEATS: time_launches, printed as one JSON line."""
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import compare  # the inputs, warm-up sizes and checks live there

    name, size, full, repeats = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    print(json.dumps({"times": time_launches(compare.BENCHES[name], size, full, repeats)}))


if __name__ == "__main__":
    import sys

    _main(sys.argv[1:])
