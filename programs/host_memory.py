"""Host memory and transfers, modelled: pageable vs pinned copies, zero-copy
vs copy-then-compute, managed memory, and a copy overlapping a kernel.

    python programs/host_memory.py [--arch sm_90] [--n 4194304]

Prints the modelled GPU time of each way (gpuemu/host/: the PCIe model of
the preset, the kernel's cycles at the SM clock) and its counters.
"""
import argparse
from pathlib import Path

import numpy as np

import gpuemu

SRC = Path(__file__).with_name("zero_copy_scale.cu")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--n", type=int, default=1 << 22)
    ns = ap.parse_args()
    n = ns.n
    k = gpuemu.RawModule(path=str(SRC), arch=ns.arch).get_function("zero_copy_scale")
    grid, block = ((n + 255) // 256,), (256,)
    data = np.random.default_rng(0).random(n, dtype=np.float32)
    tl = gpuemu.timeline()
    out = gpuemu.empty(n, np.float32)
    rows = []

    def timed(label, fn):
        tl.reset(ns.arch)
        e0 = gpuemu.Event()
        e0.record()
        extra = fn()
        e1 = gpuemu.Event()
        e1.record()
        tl.synchronize()
        assert np.array_equal(out.get(), 2 * data), label
        rows.append((label, gpuemu.elapsed_time(e0, e1), extra))

    def copy_then_compute(host):
        d = gpuemu.empty(n, np.float32)
        gpuemu.memcpy_htod(d, host)
        return k(grid, block, (out, d, np.int32(n))).stats

    pinned = gpuemu.alloc_pinned(n, np.float32)
    pinned[...] = data
    timed("pageable copy, then kernel", lambda: copy_then_compute(data))
    timed("pinned copy, then kernel", lambda: copy_then_compute(pinned))
    mapped = gpuemu.alloc_mapped(n, np.float32)
    mapped.host[...] = data
    timed("zero-copy: kernel reads mapped host memory",
          lambda: k(grid, block, (out, mapped, np.int32(n))).stats)
    managed = gpuemu.alloc_managed(n, np.float32)
    managed[:] = data
    timed("managed: pages migrate on first touch",
          lambda: k(grid, block, (out, managed, np.int32(n))).stats)
    timed("managed, second launch (pages resident)",
          lambda: k(grid, block, (out, managed, np.int32(n))).stats)

    half = n // 2
    d = gpuemu.empty(n, np.float32)
    s = [gpuemu.Stream(), gpuemu.Stream()]

    def two_streams():
        # halves: copy half 1 while the kernel works on half 0
        for j in range(2):
            lo = j * half
            view = gpuemu.DeviceArray(d._alloc, (half,), np.float32, offset=4 * lo)
            oview = gpuemu.DeviceArray(out._alloc, (half,), np.float32, offset=4 * lo)
            hview = pinned[lo:lo + half].view(type(pinned))
            gpuemu.memcpy_htod(view, hview, stream=s[j])
            k(((half + 255) // 256,), block, (oview, view, np.int32(half)), stream=s[j])
        return {}

    timed("pinned, two streams: copy overlaps kernel", two_streams)
    print(f"{ns.arch}, n = {n} floats ({4 * n >> 20} MB)")
    for label, ms, st in rows:
        keys = {x: st[x] for x in ("pcie_read_bytes", "page_faults") if st and st.get(x)}
        print(f"  {label:<45} {ms:8.3f} ms  {keys if keys else ''}")


if __name__ == "__main__":
    main()
