"""Pinned, mapped (zero-copy) and managed host memory (gpuemu/host/buffers.py)."""
import numpy as np

import gpuemu
from gpuemu.host.pcie import copy_seconds, link_for

SCALE = r'''extern "C" __global__ void scale(float *o, const float *a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) o[i] = 2.0f * a[i]; }'''
N = 1 << 15


def kernel():
    return gpuemu.RawModule(code=SCALE).get_function("scale")


def test_pinned_arrays_are_numpy_arrays_marked_pinned():
    p = gpuemu.alloc_pinned((4, 8), np.float32)
    assert isinstance(p, np.ndarray) and p.shape == (4, 8) and p.pinned and not p.any()


def test_a_pinned_copy_is_charged_as_pinned_a_numpy_one_as_pageable():
    tl = gpuemu.timeline().reset("sm_90")
    d = gpuemu.empty(N, np.float32)
    d.set(np.ones(N, np.float32))
    t_pageable = tl.host_time
    tl.reset()
    d.set(gpuemu.alloc_pinned(N, np.float32))
    assert tl.host_time == copy_seconds(4 * N, "h2d", True, link_for("sm_90"))
    assert t_pageable == copy_seconds(4 * N, "h2d", False, link_for("sm_90"))
    assert tl.counters["pcie_h2d_bytes"] == 4 * N


def test_get_into_a_pinned_array_fills_it():
    d = gpuemu.asarray(np.arange(N, dtype=np.float32))
    out = gpuemu.alloc_pinned(N, np.float32)
    assert gpuemu.memcpy_dtoh(out, d) is out and np.array_equal(out, np.arange(N))


def test_a_kernel_reads_mapped_memory_across_pcie():
    mp = gpuemu.alloc_mapped(N, np.float32)
    mp.host[...] = np.arange(N)
    o = gpuemu.empty(N, np.float32)
    launch = kernel()((N // 256,), (256,), (o, mp, np.int32(N)))
    assert np.array_equal(o.get(), 2 * np.arange(N, dtype=np.float32))
    st = launch.stats
    # one request per warp, its 128 bytes as 4 sectors over the link
    assert st["zero_copy_requests"] == N // 32
    assert st["pcie_read_bytes"] == 4 * N


# Mapped memory as an H100 counts it: benchmarks/mapped_counters_h100.py, whose
# results (benchmarks/results/mapped_counters_h100.json) these tests follow.
TWICE = r'''extern "C" __global__ void twice(float *o, const float *a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    if (x < 0.0f) o[0] = 0.0f;
    __syncthreads();
    o[i] = x + a[i ^ 1];
}'''


def test_mapped_loads_are_global_requests_and_sectors_like_device_loads():
    mp = gpuemu.alloc_mapped(N, np.float32)
    st = kernel()((N // 256,), (256,), (gpuemu.empty(N, np.float32), mp, np.int32(N))).stats
    assert st["global_load_requests"] == N // 32 and st["global_load_sectors"] == N // 8
    assert st["l1_misses"] == N // 8


def test_mapped_sectors_reach_l2_but_not_dram():
    mp = gpuemu.alloc_mapped(N, np.float32)
    st = kernel()((N // 256,), (256,), (gpuemu.empty(N, np.float32), mp, np.int32(N))).stats
    assert st["l2_read_sectors"] == N // 8 and st["l2_misses"] == N // 8
    assert st["dram_read_sectors"] == 0


def test_a_mapped_sector_read_again_hits_l1_and_crosses_pcie_once():
    mp = gpuemu.alloc_mapped(N, np.float32)
    mp.host[...] = np.arange(N)
    o = gpuemu.empty(N, np.float32)
    st = gpuemu.RawModule(code=TWICE).get_function("twice")((N // 256,), (256,), (o, mp, np.int32(N))).stats
    assert np.array_equal(o.get(), np.arange(N) + (np.arange(N) ^ 1))
    assert st["global_load_sectors"] == 2 * (N // 8)
    assert st["l1_hits"] == N // 8 and st["l1_misses"] == N // 8
    assert st["pcie_read_bytes"] == 4 * N


def test_l2_does_not_keep_mapped_sectors():
    src = r'''extern "C" __global__ void same(float *o, const float *a)
    { o[blockIdx.x * blockDim.x + threadIdx.x] = a[threadIdx.x]; }'''
    k = gpuemu.RawModule(code=src).get_function("same")
    mp = gpuemu.alloc_mapped(256, np.float32)
    dev = gpuemu.asarray(np.zeros(256, np.float32))
    # eight blocks on eight SMs read the same 1 KB: the device's from L2 after the first
    dv = k((8,), (256,), (gpuemu.empty(8 * 256, np.float32), dev)).stats
    zc = k((8,), (256,), (gpuemu.empty(8 * 256, np.float32), mp)).stats
    assert dv["l2_hits"] > 0 and dv["dram_read_sectors"] == 32
    assert zc["l2_hits"] == 0 and zc["l2_read_sectors"] == dv["l2_read_sectors"]
    assert zc["pcie_read_bytes"] == 32 * zc["l2_read_sectors"] == 8 * 1024


def test_zero_copy_costs_more_cycles_than_device_memory():
    mp = gpuemu.alloc_mapped(N, np.float32)
    dev = gpuemu.asarray(np.zeros(N, np.float32))
    o = gpuemu.empty(N, np.float32)
    k = kernel()
    zc = k((N // 256,), (256,), (o, mp, np.int32(N)))
    dv = k((N // 256,), (256,), (o, dev, np.int32(N)))
    assert zc.stats["cycles"] > dv.stats["cycles"]
    assert zc.timeline["seconds"] > dv.timeline["seconds"]


def test_a_request_with_mapped_and_device_lanes_charges_each_sector_as_its_memorys():
    src = r'''extern "C" __global__ void mix(float *o, const float *a, const float *b)
    { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = ((i >> 3) & 1 ? a : b)[i]; }'''
    k = gpuemu.RawModule(code=src).get_function("mix")
    mp = gpuemu.alloc_mapped(N, np.float32)
    mp.host[...] = np.arange(N)
    dev = gpuemu.asarray(np.arange(N, dtype=np.float32))
    o = gpuemu.empty(N, np.float32)
    # lanes 8-15 and 24-31 of each warp read mapped memory: two of a warp's four sectors
    st = k((N // 256,), (256,), (o, mp, dev)).stats
    assert np.array_equal(o.get(), np.arange(N, dtype=np.float32))
    assert st["zero_copy_requests"] == N // 32 and st["global_load_sectors"] == N // 8
    assert st["pcie_read_bytes"] == 2 * N == 32 * st["dram_read_sectors"]


def test_a_store_with_mapped_and_device_lanes_writes_only_the_mapped_sectors_across_pcie():
    src = r'''extern "C" __global__ void mix(float *a, float *b)
    { int i = blockIdx.x * blockDim.x + threadIdx.x; ((i >> 3) & 1 ? a : b)[i] = 1.0f; }'''
    k = gpuemu.RawModule(code=src).get_function("mix")
    mp = gpuemu.alloc_mapped(N, np.float32)
    dev = gpuemu.asarray(np.zeros(N, np.float32))
    st = k((N // 256,), (256,), (mp, dev)).stats
    assert st["global_store_sectors"] == N // 8
    assert st["pcie_write_bytes"] == 2 * N


def test_managed_lanes_beside_mapped_lanes_fault_on_first_touch():
    src = r'''extern "C" __global__ void mix(float *o, const float *a, const float *b)
    { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = ((i >> 3) & 1 ? a : b)[i]; }'''
    k = gpuemu.RawModule(code=src).get_function("mix")
    mp, mg = gpuemu.alloc_mapped(N, np.float32), gpuemu.alloc_managed(N, np.float32)
    mg[:] = np.arange(N)
    o = gpuemu.empty(N, np.float32)
    st = k((N // 256,), (256,), (o, mp, mg)).stats
    idx = np.arange(N)
    assert np.array_equal(o.get(), np.where((idx >> 3) & 1, 0, idx).astype(np.float32))
    assert st["page_faults"] == -(-4 * N // link_for("sm_90").migrate_bytes)


def test_kernel_writes_to_mapped_memory_are_seen_by_the_host():
    mp = gpuemu.alloc_mapped(N, np.float32)
    launch = kernel()((N // 256,), (256,), (mp, np.ones(N, np.float32), np.int32(N)))
    assert np.array_equal(mp.host, np.full(N, 2, np.float32))
    assert launch.stats["pcie_write_bytes"] == 4 * N
    assert launch.stats["global_store_sectors"] == N // 8 == launch.stats["l2_write_sectors"]


def test_managed_memory_faults_on_first_touch_only():
    link = link_for("sm_90")
    mg = gpuemu.alloc_managed(N, np.float32)
    mg[:] = np.arange(N)
    o = gpuemu.empty(N, np.float32)
    k = kernel()
    first = k((N // 256,), (256,), (o, mg, np.int32(N)))
    second = k((N // 256,), (256,), (o, mg, np.int32(N)))
    assert np.array_equal(o.get(), 2 * np.arange(N, dtype=np.float32))
    blocks = -(-4 * N // link.migrate_bytes)
    assert first.stats["page_faults"] == blocks
    assert first.stats["managed_migrated_bytes"] == blocks * link.migrate_bytes
    assert second.stats["page_faults"] == 0


def test_host_access_sends_managed_pages_back():
    mg = gpuemu.alloc_managed(N, np.float32)
    o = gpuemu.empty(N, np.float32)
    k = kernel()
    k((N // 256,), (256,), (o, mg, np.int32(N)))
    tl = gpuemu.timeline().reset()
    assert mg[3] == 0
    assert tl.counters["host_page_faults"] > 0
    again = k((N // 256,), (256,), (o, mg, np.int32(N)))
    assert again.stats["page_faults"] > 0


def test_zero_copy_reads_are_the_coalescers_sectors_that_miss_l1():
    src = r'''extern "C" __global__ void gather(float *o, const float *a, int stride)
    { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = a[stride * i + (i & 3)]; }'''
    k = gpuemu.RawModule(code=src).get_function("gather")
    n = 1024
    mp = gpuemu.alloc_mapped(3 * n + 4, np.float32)
    dev = gpuemu.asarray(np.zeros(3 * n + 4, np.float32))
    zc = k((n // 256,), (256,), (gpuemu.empty(n, np.float32), mp, np.int32(3)))
    dv = k((n // 256,), (256,), (gpuemu.empty(n, np.float32), dev, np.int32(3)))
    # the same 32-byte sectors the coalescer counts for device memory; those L1 holds
    # already (a neighbouring warp's) do not cross the link again
    assert zc.stats["global_load_sectors"] == dv.stats["global_load_sectors"]
    assert zc.stats["pcie_read_bytes"] == 32 * zc.stats["l1_misses"] > 4 * n
    assert zc.stats["l1_misses"] == dv.stats["l1_misses"] < zc.stats["global_load_sectors"]
