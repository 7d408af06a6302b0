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
    # one request per warp, its 128 bytes as 4 sectors over the link, none in the caches
    assert st["zero_copy_requests"] == N // 32
    assert st["pcie_read_bytes"] == 4 * N
    assert st["l2_read_sectors"] == 0 and st["global_load_requests"] == 0


def test_zero_copy_costs_more_cycles_than_device_memory():
    mp = gpuemu.alloc_mapped(N, np.float32)
    dev = gpuemu.asarray(np.zeros(N, np.float32))
    o = gpuemu.empty(N, np.float32)
    k = kernel()
    zc = k((N // 256,), (256,), (o, mp, np.int32(N)))
    dv = k((N // 256,), (256,), (o, dev, np.int32(N)))
    assert zc.stats["cycles"] > dv.stats["cycles"]
    assert zc.timeline["seconds"] > dv.timeline["seconds"]


def test_kernel_writes_to_mapped_memory_are_seen_by_the_host():
    mp = gpuemu.alloc_mapped(N, np.float32)
    launch = kernel()((N // 256,), (256,), (mp, np.ones(N, np.float32), np.int32(N)))
    assert np.array_equal(mp.host, np.full(N, 2, np.float32))
    assert launch.stats["pcie_write_bytes"] == 4 * N


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


def test_zero_copy_sectors_are_the_coalescers_sectors():
    src = r'''extern "C" __global__ void gather(float *o, const float *a, int stride)
    { int i = blockIdx.x * blockDim.x + threadIdx.x; o[i] = a[stride * i + (i & 3)]; }'''
    k = gpuemu.RawModule(code=src).get_function("gather")
    n = 1024
    mp = gpuemu.alloc_mapped(3 * n + 4, np.float32)
    dev = gpuemu.asarray(np.zeros(3 * n + 4, np.float32))
    zc = k((n // 256,), (256,), (gpuemu.empty(n, np.float32), mp, np.int32(3)))
    dv = k((n // 256,), (256,), (gpuemu.empty(n, np.float32), dev, np.int32(3)))
    # one load per warp over the link: the same 32-byte sectors the coalescer counts
    assert zc.stats["pcie_read_bytes"] == 32 * dv.stats["global_load_sectors"] > 4 * n
