"""Host<->device copy bandwidth and latency on a real GPU (CuPy), pinned vs pageable.

Run on a machine with CuPy and a GPU:  python benchmarks/pcie_h100.py
Prints one JSON object: per size, H2D/D2H seconds for pageable (numpy) and
pinned (cupyx.empty_pinned) host buffers, and a zero-copy read kernel's
bandwidth. The PCIe model's parameters in gpuemu/host/pcie.py cite these.
"""
import json
import time

import cupy as cp
import cupyx
import numpy as np


def timeit(fn, reps=10):
    fn()
    cp.cuda.Device().synchronize()
    best = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    out = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sizes": []}
    for n in (4, 4096, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20):
        page = np.ones(n, dtype=np.uint8)
        pin = cupyx.empty_pinned((n,), dtype=np.uint8)
        pin[...] = 1
        d = cp.empty(n, dtype=np.uint8)
        row = {"bytes": n}
        row["h2d_pageable_s"] = timeit(lambda: d.set(page))
        row["h2d_pinned_s"] = timeit(lambda: d.set(pin))
        row["d2h_pageable_s"] = timeit(lambda: d.get(out=page))
        row["d2h_pinned_s"] = timeit(lambda: d.get(out=pin))
        out["sizes"].append(row)
    # zero-copy: a kernel reads mapped pinned host memory
    n = 64 << 20
    mem = cp.cuda.alloc_pinned_memory(n)
    hp = np.frombuffer(mem, dtype=np.float32, count=n // 4)
    hp[...] = 1
    dptr = mem.ptr   # UVA: pinned host memory is mapped at the same address
    um = cp.cuda.UnownedMemory(dptr, n, mem)
    mapped = cp.ndarray((n // 4,), dtype=np.float32, memptr=cp.cuda.MemoryPointer(um, 0))
    dev = cp.ones(n // 4, dtype=np.float32)
    outd = cp.empty(n // 4, dtype=np.float32)
    k = cp.RawKernel(r'''extern "C" __global__ void scale(float *o, const float *a, int n)
    { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 2.0f * a[i]; }''', "scale")
    g = ((n // 4 + 255) // 256,)
    out["zero_copy_read_s"] = timeit(lambda: k(g, (256,), (outd, mapped, np.int32(n // 4))))
    out["device_read_s"] = timeit(lambda: k(g, (256,), (outd, dev, np.int32(n // 4))))
    out["zero_copy_bytes"] = n
    # streams: copy and kernel overlap
    s1, s2 = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    pin = cupyx.empty_pinned((n,), dtype=np.uint8)
    d = cp.empty(n, dtype=np.uint8)
    def serial():
        d.set(pin, stream=s1)
        k(g, (256,), (outd, dev, np.int32(n // 4)), stream=s1)
    def overlap():
        d.set(pin, stream=s1)
        k(g, (256,), (outd, dev, np.int32(n // 4)), stream=s2)
    out["copy_then_kernel_one_stream_s"] = timeit(serial)
    out["copy_and_kernel_two_streams_s"] = timeit(overlap)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
