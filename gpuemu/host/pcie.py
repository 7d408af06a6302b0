"""The PCIe link between host and GPU, as data per preset, and the time of a copy.

    t = copy_seconds(nbytes, "h2d", pinned=True, link=link_for("sm_90"))

Rule (the usual latency-bandwidth model, CUDA C Best Practices Guide,
"Data Transfer Between Host and Device"):

    pinned:   latency + bytes / bandwidth
    pageable: latency + bytes / bandwidth + bytes / staging_bandwidth

A pageable copy goes through the driver's pinned staging buffer: the CPU
copies the data there first (Guide, "Page-Locked Host Memory"), which we
charge as one more pass at `staging` bandwidth (no overlap with the DMA).
Zero-copy (mapped pinned memory read by a kernel) moves every accessed
32-byte sector over the link at `zero_copy` bandwidth.

sm_90's numbers are measured on an H100 80GB HBM3 (PCIe 5.0 x16) with CuPy
(benchmarks/pcie_h100.py, results in benchmarks/results/pcie_h100.json):
pinned 55.0 GB/s both ways at 256 MB, pageable 7.8 GB/s host-to-device and
11.0 GB/s device-to-host (so staging 9.1 and 13.8 GB/s), a 4-byte copy
12 us (CuPy call included), a zero-copy read kernel 50 GB/s; a kernel's
first touch of 256 MB of managed memory the host wrote takes 37-44 ms
(benchmarks/managed_h100.py), 9.8 us per 64 KB block, of which 1.2 us is
the transfer: page_fault = 8.5 us. The other
presets' links are model parameters from their generations' nominal PCIe
rates (gen2 x16 8 GB/s, gen3 16 GB/s, gen4 32 GB/s raw, of which pinned
copies reach about 3/4); their host copies are not measured.
"""
from __future__ import annotations

from dataclasses import dataclass

from gpuemu.arch import get_preset

GB = 1e9


@dataclass(frozen=True)
class PcieLink:
    name: str
    h2d: float            # pinned host-to-device bytes/s
    d2h: float            # pinned device-to-host bytes/s
    latency: float        # seconds per copy (call + DMA setup)
    staging_h2d: float    # CPU copy into the staging buffer, bytes/s (pageable only)
    staging_d2h: float
    zero_copy: float      # bytes/s of kernel reads/writes of mapped host memory
    page_fault: float     # seconds per managed-memory fault group (GPU fault handling)
    migrate_bytes: int    # managed memory migrates in blocks of this size on a fault
    sm_clock_hz: float    # to turn cycles into seconds on the timeline


_GEN3 = dict(h2d=12 * GB, d2h=12 * GB, latency=10e-6, staging_h2d=6 * GB, staging_d2h=6 * GB,
             zero_copy=11 * GB, page_fault=25e-6, migrate_bytes=64 * 1024)
LINKS = {
    "sm_90": PcieLink("PCIe 5.0 x16 (measured, H100 80GB HBM3)", h2d=55.0 * GB, d2h=55.0 * GB,
                      latency=12e-6, staging_h2d=9.1 * GB, staging_d2h=13.8 * GB,
                      zero_copy=50 * GB, page_fault=8.5e-6, migrate_bytes=64 * 1024,
                      sm_clock_hz=1.98e9),
    "sm_80": PcieLink("PCIe 4.0 x16", h2d=24 * GB, d2h=24 * GB, latency=10e-6,
                      staging_h2d=8 * GB, staging_d2h=10 * GB, zero_copy=22 * GB,
                      page_fault=25e-6, migrate_bytes=64 * 1024, sm_clock_hz=1.41e9),
    "sm_70": PcieLink("PCIe 3.0 x16", sm_clock_hz=1.53e9, **_GEN3),
    "sm_60": PcieLink("PCIe 3.0 x16", sm_clock_hz=1.48e9, **_GEN3),
    "sm_52": PcieLink("PCIe 3.0 x16", sm_clock_hz=1.08e9, **_GEN3),
    "cc3x": PcieLink("PCIe 2.0 x16", h2d=6 * GB, d2h=6 * GB, latency=10e-6,
                     staging_h2d=4 * GB, staging_d2h=4 * GB, zero_copy=5.5 * GB,
                     page_fault=0.0, migrate_bytes=64 * 1024, sm_clock_hz=0.73e9),
    "cc2x": PcieLink("PCIe 2.0 x16", h2d=6 * GB, d2h=6 * GB, latency=10e-6,
                     staging_h2d=4 * GB, staging_d2h=4 * GB, zero_copy=5.5 * GB,
                     page_fault=0.0, migrate_bytes=64 * 1024, sm_clock_hz=1.15e9),
    "cc1x": PcieLink("PCIe 2.0 x16", h2d=5 * GB, d2h=5 * GB, latency=10e-6,
                     staging_h2d=3 * GB, staging_d2h=3 * GB, zero_copy=4 * GB,
                     page_fault=0.0, migrate_bytes=64 * 1024, sm_clock_hz=1.30e9),
}


def link_for(preset) -> PcieLink:
    """The link of a preset (object or name)."""
    return LINKS[get_preset(preset).name]


def copy_seconds(nbytes: int, direction: str, pinned: bool, link: PcieLink) -> float:
    """Seconds one host<->device copy of `nbytes` takes (see the module rule)."""
    if direction not in ("h2d", "d2h"):
        raise ValueError(f"direction must be 'h2d' or 'd2h', got {direction!r}")
    if nbytes <= 0:
        return 0.0
    bw = link.h2d if direction == "h2d" else link.d2h
    t = link.latency + nbytes / bw
    if not pinned:
        t += nbytes / (link.staging_h2d if direction == "h2d" else link.staging_d2h)
    return t


def zero_copy_seconds(nbytes: int, link: PcieLink) -> float:
    """Seconds the link needs for a kernel's mapped-memory traffic."""
    return nbytes / link.zero_copy if nbytes > 0 else 0.0


def cycles_per_pcie_sector(preset, link: PcieLink) -> int:
    """Issue cost of one 32-byte zero-copy sector for one SM when all SMs
    share the link: num_sms x clock x 32 / zero_copy bandwidth."""
    return max(1, round(preset.num_sms * link.sm_clock_hz * 32 / link.zero_copy))
