"""Global-memory counters of loads and stores to mapped (zero-copy) and managed
memory on a real GPU, beside device memory, by Nsight Compute.

Run on a machine with CuPy, a GPU and ncu:
    python benchmarks/mapped_counters_h100.py [--out FILE.json]
It profiles itself (`ncu ... python THIS --inner`): a kernel,
o[i] = 2 * a[i] over 65,536 floats in blocks of 256, launched with `a` in
device memory, in mapped pinned host memory and in managed memory, and with
`o` in mapped memory; and one that reads each sector of `a` again after a
barrier (device and mapped), to see whether L1 keeps host memory. It prints one JSON object: per launch, the Nsight
Compute metrics below and, where gpuemu imports, gpuemu's counters of the
same launch under the names the conformance README maps to those metrics.
It settles whether requests to host memory count as global requests and
sectors (l1tex) and pass through L2 (lts).
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys

import numpy as np

N = 1 << 16
# scale reads each sector once; twice reads it again after a barrier (an L1 hit where L1 keeps it)
SOURCE = r'''extern "C" __global__ void scale(float *o, const float *a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 2.0f * a[i]; }
extern "C" __global__ void twice(float *o, const float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    if (x < 0.0f) o[0] = 0.0f;     // x is used before the barrier: its load is done
    __syncthreads();
    o[i] = x + a[i ^ 1];
}'''
# (kernel, a's memory, o's memory), in launch order
LAUNCHES = (("scale", "device", "device"), ("scale", "mapped", "device"), ("scale", "device", "mapped"),
            ("scale", "managed", "device"), ("twice", "device", "device"), ("twice", "mapped", "device"))
METRICS = {
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global_load_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "global_load_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global_store_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "global_store_sectors",
    "lts__t_sectors_op_read.sum": "l2_read_sectors",
    "lts__t_sectors_op_write.sum": "l2_write_sectors",
    "lts__t_sectors_aperture_sysmem_op_read.sum": None,
    "lts__t_sectors_aperture_sysmem_op_write.sum": None,
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum": "l1_hits",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum": "l1_misses",
    # gpuemu's l2_hits and l2_misses count the reads of both apertures: device
    # memory's lookups and mapped host memory's (sysmem), which all miss
    "lts__t_sectors_aperture_sysmem_op_read_lookup_hit.sum": None,
    "lts__t_sectors_aperture_sysmem_op_read_lookup_miss.sum": None,
    "lts__t_sectors_aperture_device_op_read_lookup_hit.sum": None,
    "lts__t_sectors_aperture_device_op_read_lookup_miss.sum": None,
    "dram__sectors_read.sum": "dram_read_sectors",
    "dram__sectors_write.sum": None,
}
# gpuemu's counters shown besides those the metrics name
OURS_ALSO = ("l2_hits", "l2_misses", "zero_copy_requests", "pcie_read_bytes", "pcie_write_bytes")


def _inner() -> None:
    """The launches ncu profiles (CuPy)."""
    import cupy as cp
    mod = cp.RawModule(code=SOURCE)
    held = []

    def buffer(kind: str, fill: float):
        if kind == "device":
            return cp.full(N, fill, dtype=cp.float32)
        if kind == "mapped":            # UVA: pinned host memory is mapped at its own address
            mem = cp.cuda.alloc_pinned_memory(N * 4)
            np.frombuffer(mem, dtype=np.float32, count=N)[...] = fill
            um = cp.cuda.UnownedMemory(mem.ptr, N * 4, mem)
            held.append(mem)
            return cp.ndarray((N,), cp.float32, cp.cuda.MemoryPointer(um, 0))
        mem = cp.cuda.malloc_managed(N * 4)       # written by the host: first touch migrates
        held.append(mem)
        host = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * N).from_address(mem.ptr))
        host[...] = fill
        return cp.ndarray((N,), cp.float32, mem)

    for name, a_kind, o_kind in LAUNCHES:
        a, o = buffer(a_kind, 1.5), buffer(o_kind, 0.0)
        cp.cuda.Device().synchronize()
        mod.get_function(name)(((N + 255) // 256,), (256,), (o, a, np.int32(N)))
        cp.cuda.Device().synchronize()
        assert float(o[:4].get().sum()) == 12.0


def _ours() -> list:
    """gpuemu's counters of the same launches (None where gpuemu does not import)."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import gpuemu
    except ImportError as e:
        print(f"(gpuemu's counters left out: {e})", file=sys.stderr)
        return [None] * len(LAUNCHES)
    mod = gpuemu.RawModule(code=SOURCE)

    def buffer(kind: str, fill: float):
        host = np.full(N, fill, np.float32)
        if kind == "device":
            return gpuemu.asarray(host)
        b = gpuemu.alloc_mapped(N, np.float32) if kind == "mapped" else gpuemu.alloc_managed(N, np.float32)
        b.set(host)
        return b

    rows = []
    for name, a_kind, o_kind in LAUNCHES:
        a, o = buffer(a_kind, 1.5), buffer(o_kind, 0.0)
        s = mod.get_function(name)(((N + 255) // 256,), (256,), (o, a, np.int32(N))).stats
        rows.append({name: int(s.get(name, 0)) for name in METRICS.values() if name}
                    | {name: int(s.get(name, 0)) for name in OURS_ALSO})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inner", action="store_true", help="(run by ncu) make the launches")
    ap.add_argument("--out", help="also write the JSON here")
    a = ap.parse_args()
    if a.inner:
        _inner()
        return
    cmd = ["ncu", "--csv", "--page", "raw", "--clock-control", "none", "--kernel-name", "regex:^(scale|twice)$",
           "--metrics", ",".join(METRICS), sys.executable, os.path.abspath(__file__), "--inner"]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        sys.exit(f"ncu failed ({got.returncode}):\n{got.stdout[-3000:]}\n{got.stderr[-3000:]}")
    lines = [ln for ln in got.stdout.splitlines() if ln.startswith('"')]
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    head, rows = table[0], [r for r in table[2:] if len(r) == len(table[0])]   # row 1: units
    ours = _ours()
    out = {"n": N, "launches": []}
    for (name, a_kind, o_kind), row, mine in zip(LAUNCHES, rows, ours):
        rec = dict(zip(head, row))
        gpu = {m: float(rec[m].replace(",", "")) for m in METRICS if m in rec}
        out["launches"].append({"kernel": name, "a": a_kind, "o": o_kind, "h100": gpu, "gpuemu": mine})
    text = json.dumps(out, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
