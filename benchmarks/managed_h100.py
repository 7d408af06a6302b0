"""Managed memory on a real GPU (CuPy): a kernel reading 256 MB of cudaMallocManaged
memory that the host just wrote (pages migrate on first touch), then again
(resident). Run on the GPU machine; results in benchmarks/results/managed_h100.json."""
import cupy as cp, numpy as np, time, json
n = 64 << 20
k = cp.RawKernel(r'''extern "C" __global__ void s(float *o, const float *a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 2.0f * a[i]; }''', "s")
m = cp.cuda.malloc_managed(n * 4)
a = cp.ndarray((n,), cp.float32, m)
o = cp.empty(n, cp.float32)
g = ((n + 255) // 256,)
r = {}
for rep in range(3):
    h = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * n).from_address(m.ptr))
    h[...] = 1
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter(); k(g, (256,), (o, a, np.int32(n))); cp.cuda.Device().synchronize()
    t1 = time.perf_counter(); k(g, (256,), (o, a, np.int32(n))); cp.cuda.Device().synchronize()
    t2 = time.perf_counter()
    r[rep] = {"first_touch_s": t1 - t0, "resident_s": t2 - t1}
print(json.dumps({"bytes": n * 4, "runs": r}))
