"""Occupancy as the CUDA occupancy calculator computes it (gpuemu/machine/occupancy.py).

Every expected number is worked by hand from the calculator's rules (see the
module docstring); the launch-bounds register caps on sm_90 were also checked
against `nvcc -arch=sm_90 -Xptxas -v` (CUDA 13): (768,1)->80, (256,8)->32,
(1024)->64, (128,16)->32, (640,1)->96.
"""
import pytest

import gpuemu
from gpuemu.arch import get_preset
from gpuemu.machine.occupancy import (blocks_limited_by_registers, carveout_bytes,
                                      compute_occupancy, occupancy_report)
from isa.register_estimate import cap_registers

KB = 1024


def occ(arch, threads, regs, smem=0, carveout=None):
    return compute_occupancy(arch, threads, regs, smem, carveout)


# ------------------------------------------------------------------ sm_90

def test_sm90_full_occupancy():
    # 8 warps/block: 64/8 = 8 blocks by warps; 32 regs x 32 = 1024 per warp,
    # 16384 per sub-partition / 1024 = 16 warps x 4 = 64 warps -> 8 blocks;
    # shared: 0 + 1 KB reserved -> 228 KB / 1 KB = 228 blocks.
    o = occ("sm_90", 256, 32)
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy) == (8, 64, 1.0)
    assert o.limits == {"warps": 8, "blocks": 32, "registers": 8, "shared_memory": 228}
    assert o.limiters == ("warps", "registers") and o.limited_by == "warps"


def test_sm90_limited_by_shared_memory():
    # 48 KB + 1 KB reserved = 50176 B per block; 233472 / 50176 = 4 blocks = 32 warps
    o = occ("sm_90", 256, 32, 48 * KB)
    assert o.shared_allocated_per_block == 50176
    assert o.shared_per_sm == 228 * KB
    assert (o.active_blocks_per_sm, o.active_warps_per_sm) == (4, 32)
    assert o.occupancy == 0.5 and o.limited_by == "shared_memory" and o.limiters == ("shared_memory",)


def test_sm90_limited_by_registers():
    # 128 x 32 = 4096 per warp; 16384 / 4096 = 4 warps per sub-partition = 16 warps = 2 blocks
    o = occ("sm_90", 256, 128)
    assert (o.active_blocks_per_sm, o.active_warps_per_sm, o.occupancy) == (2, 16, 0.25)
    assert o.limited_by == "registers" and o.limits["registers"] == 2


def test_sm90_register_granularity_rounds_per_warp():
    # 33 regs: 1056 -> 1280 per warp; 16384 // 1280 = 12 warps x 4 = 48 -> 6 blocks of 8 warps
    o = occ("sm_90", 256, 33)
    assert o.limits["registers"] == 6 and o.active_warps_per_sm == 48
    assert o.registers_per_block == 1280 * 8


def test_sm90_limited_by_blocks():
    # 32 threads = 1 warp: warps allow 64 blocks, the SM 32 -> 32 warps, 50%
    o = occ("sm_90", 32, 16)
    assert o.limited_by == "blocks" and o.active_blocks_per_sm == 32 and o.occupancy == 0.5


def test_sm90_shared_allocation_unit_and_reserved():
    # 1000 B + 1024 reserved = 2024 -> 2048 (128-byte unit); 233472 / 2048 = 114
    o = occ("sm_90", 64, 16, 1000)
    assert o.shared_allocated_per_block == 2048 and o.limits["shared_memory"] == 114


def test_sm90_carveout_percent():
    # 50% of 228 KB = 116736 B -> rounded up to the 132 KB configuration;
    # 135168 / 50176 = 2 blocks
    assert carveout_bytes(get_preset("sm_90"), 50) == 132 * KB
    o = occ("sm_90", 256, 32, 48 * KB, carveout=50)
    assert o.shared_per_sm == 132 * KB and o.active_blocks_per_sm == 2
    # 0% (max L1) on a kernel without shared memory: 0 KB carve-out cannot hold the
    # reserved 1 KB, so the driver takes the smallest config that fits (8 KB): 8 blocks
    o = occ("sm_90", 256, 32, 0, carveout=0)
    assert o.shared_per_sm == 8 * KB and o.limits["shared_memory"] == 8
    assert o.active_blocks_per_sm == 8
    # a carve-out too small for one 48 KB block: the driver picks 64 KB -> 1 block
    o = occ("sm_90", 256, 32, 48 * KB, carveout="prefer_l1")
    assert o.shared_per_sm == 64 * KB and o.active_blocks_per_sm == 1 and o.notes


def test_sm90_optin_shared():
    # 100 KB needs the opt-in limit (227 KB); 101 KB + 1 KB -> 2 blocks in 228 KB
    o = occ("sm_90", 128, 32, 100 * KB)
    assert o.active_blocks_per_sm == 2 and o.notes
    # beyond the opt-in limit: nothing fits
    o = occ("sm_90", 128, 32, 228 * KB)
    assert o.active_blocks_per_sm == 0 and o.limited_by == "shared_memory"


def test_sm90_1024_threads():
    # 32 warps/block: warps allow 2 blocks; 64 regs -> 2048/warp, 8 warps/sub-partition
    # = 32 warps = 1 block
    o = occ("sm_90", 1024, 64)
    assert o.active_blocks_per_sm == 1 and o.limited_by == "registers" and o.occupancy == 0.5
    assert occ("sm_90", 1024, 65).active_blocks_per_sm == 0     # 65 regs x 1024 > 64 K


def test_odd_block_size_rounds_to_warps():
    # 100 threads = 4 warps: 16 blocks by warps
    o = occ("sm_90", 100, 16)
    assert o.warps_per_block == 4 and o.limits["warps"] == 16 and o.active_warps_per_sm == 64


# ------------------------------------------------------------------ sm_80

def test_sm80_shared():
    # 164 KB per SM, 1 KB reserved: 32 KB -> 33 KB per block: 167936 / 33792 = 4
    o = occ("sm_80", 128, 32, 32 * KB)
    assert o.limits["shared_memory"] == 4 and o.active_warps_per_sm == 16


# ------------------------------------------------------------------ older presets

def test_sm70_no_reserved_and_256_byte_unit():
    # 96 KB per SM, unit 256, nothing reserved: 12 KB -> 8 blocks; 1000 B -> 1024: 96
    o = occ("sm_70", 128, 32, 12 * KB)
    assert o.shared_allocated_per_block == 12 * KB and o.limits["shared_memory"] == 8
    assert occ("sm_70", 128, 32, 1000).limits["shared_memory"] == 96


def test_sm60_two_sub_partitions():
    # sm_60: 2 sub-partitions; 40 regs -> 1280/warp; 32768 // 1280 = 25 x 2 = 50 warps
    # -> 6 blocks of 8 warps (48 warps, 75%)
    o = occ("sm_60", 256, 40)
    assert o.limits["registers"] == 6 and o.occupancy == 0.75


def test_sm52_shared_limit():
    # 96 KB per SM, 48 KB per block: 24 KB -> 4 blocks
    o = occ("sm_52", 64, 16, 24 * KB)
    assert o.limits["shared_memory"] == 4 and o.limited_by == "shared_memory"


def test_cc3x_kepler_cache_config():
    # 48 KB shared (prefer shared, default); prefer L1: 16 KB; equal: 32 KB
    p = get_preset("cc3x")
    assert carveout_bytes(p, None) == 48 * KB
    assert carveout_bytes(p, "prefer_l1") == 16 * KB
    assert carveout_bytes(p, "prefer_equal") == 32 * KB
    # 8 KB blocks: 6 with 48 KB, 2 with 16 KB
    assert occ("cc3x", 128, 16, 8 * KB).limits["shared_memory"] == 6
    assert occ("cc3x", 128, 16, 8 * KB, carveout="prefer_l1").limits["shared_memory"] == 2
    # blocks limit 16: 64-thread blocks -> 16 blocks = 32 warps of 64
    o = occ("cc3x", 64, 16)
    assert o.limited_by == "blocks" and o.active_warps_per_sm == 32


def test_cc2x_fermi():
    # 1536 threads = 48 warps; 20 regs -> 640/warp (64 unit); 32768 // 2 // 640 = 25
    # x 2 = 50 warps -> 6 blocks of 8 warps; warps allow 6; blocks 8
    o = occ("cc2x", 256, 20)
    assert o.active_blocks_per_sm == 6 and o.active_warps_per_sm == 48 and o.occupancy == 1.0
    # 32 regs: 1024/warp -> 16 x 2 = 32 warps -> 4 blocks (32 of 48 warps)
    o = occ("cc2x", 256, 32)
    assert o.active_blocks_per_sm == 4 and o.limited_by == "registers"
    assert o.occupancy == pytest.approx(32 / 48)
    # 64 regs is over cc2.x's 63 per thread
    assert occ("cc2x", 256, 64).active_blocks_per_sm == 0
    # shared: 128-byte unit, 48 KB: 12 KB -> 4 blocks
    assert occ("cc2x", 128, 16, 12 * KB).limits["shared_memory"] == 4


def test_cc1x_block_register_allocation():
    # cc1.3: registers per block = roundup(roundup(warps, 2) x 32 x regs, 512)
    # 192 threads = 6 warps, 20 regs: 6 x 32 x 20 = 3840 -> 4096; 16384 / 4096 = 4
    o = occ("cc1x", 192, 20)
    assert o.limits["registers"] == 4 and o.registers_per_block == 4096
    # warps: 32 // 6 = 5; blocks 8 -> 4 blocks (24 of 32 warps) by registers
    assert o.active_blocks_per_sm == 4 and o.occupancy == 0.75
    # 3 warps round up to 4 for registers: 4 x 32 x 16 = 2048 -> 8 blocks
    assert occ("cc1x", 96, 16).limits["registers"] == 8
    # shared: 512-byte unit in 16 KB: 3000 B -> 3072 -> 5 blocks
    assert occ("cc1x", 64, 8, 3000).limits["shared_memory"] == 5


# ------------------------------------------------------------------ launch bounds

@pytest.mark.parametrize("bounds,cap", [((768, 1), 80), ((256, 8), 32), ((1024, None), 64),
                                        ((128, 16), 32), ((640, 1), 96), ((256, 4), 64)])
def test_launch_bounds_caps_sm90(bounds, cap):
    p = get_preset("sm_90")
    assert cap_registers(p, bounds) == (cap, "__launch_bounds__")
    threads, blocks = bounds[0], bounds[1] or 1
    assert blocks_limited_by_registers(p, threads, cap) >= blocks
    assert blocks_limited_by_registers(p, threads, cap + 1) < blocks


def test_launch_bounds_caps_cc2x():
    # Fermi: 24 warps -> 32768 / 2 / 12 = 1365 -> 1344 per warp = 42 registers
    assert cap_registers(get_preset("cc2x"), (768, 1)) == (42, "__launch_bounds__")
    assert cap_registers(get_preset("cc2x"), (128, 1)) == (63, "arch")


SRC = r"""
__global__ void __launch_bounds__(256, 8) lb(float *x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
extern "C" __global__ void big(float *x)
{
    __shared__ float t[12288];
    t[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = t[threadIdx.x + 1];
}
extern "C" __global__ void dyn(float *x)
{
    extern __shared__ float s[];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[threadIdx.x ^ 1];
}
"""


@pytest.fixture(scope="module")
def mod():
    return gpuemu.RawModule(code=SRC, arch="sm_90")


def test_api_occupancy_static_shared(mod):
    k = mod.get_function("big")
    o = k.occupancy((32, 8))
    assert o.shared_per_block == 48 * KB
    assert o.limited_by == "shared_memory" and o.active_blocks_per_sm == 4
    assert o.registers_per_thread == k.num_regs


def test_api_occupancy_dynamic_shared_and_carveout(mod):
    k = mod.get_function("dyn")
    assert k.occupancy(256).limited_by in ("warps", "registers")
    o = k.occupancy(256, shared_mem=64 * KB)     # 65 KB per block in 228 KB -> 3
    assert o.active_blocks_per_sm == 3 and o.limited_by == "shared_memory"
    o = k.occupancy(256, shared_mem=64 * KB, carveout=50)   # 132 KB -> 2
    assert o.active_blocks_per_sm == 2


def test_api_launch_bounds(mod):
    k = mod.get_function("lb")
    assert k.registers.cap == 32 and k.registers.cap_reason == "__launch_bounds__"
    assert k.num_regs <= 32
    assert k.occupancy(256).active_blocks_per_sm == 8
    with pytest.raises(ValueError, match="__launch_bounds__"):
        k.occupancy(512)


def test_api_maxrregcount():
    m = gpuemu.RawModule(code=SRC, arch="sm_90", options=("-maxrregcount=8",))
    r = m.get_function("lb").registers
    assert r.cap == 8 and r.cap_reason == "maxrregcount" and r.count == 8
    assert r.spilled == r.demand - 8


def test_report_names_the_limit():
    text = occupancy_report(occ("sm_90", 256, 32, 48 * KB))
    assert "50.0%" in text and "limited by shared memory" in text
    assert "<- limiting" in text
    for word in ("warps", "blocks per SM", "registers", "shared memory"):
        assert word in text


def test_bad_carveout():
    with pytest.raises(ValueError):
        occ("sm_90", 256, 32, carveout=150)
    with pytest.raises(ValueError):
        occ("sm_90", 256, 32, carveout="prefer_nothing")


# ------------------------------------------------------------------ the real driver
# cudaOccupancyMaxActiveBlocksPerMultiprocessor on an H100 80GB HBM3 (driver
# 580.159.04), kernels built with nvcc -arch=sm_90 (register counts from
# cudaFuncGetAttributes), the carve-out set with cudaFuncAttributePreferredSharedMemoryCarveout
# (-1: not set) and the opt-in dynamic limit raised to 227 KB. These rows are a
# sample (one per kernel x carve-out x limiting resource) of 4599 queried
# configurations, all of which compute_occupancy reproduced exactly.
H100_DRIVER = [  # (threads, regs, shared bytes, carve-out %, blocks per SM)
    (32, 80, 0, -1, 24), (32, 80, 12288, -1, 17), (100, 80, 32768, -1, 6), (32, 80, 0, 0, 8),
    (96, 80, 0, 0, 8), (100, 80, 0, 0, 6), (32, 80, 0, 10, 24), (32, 80, 1000, 10, 16),
    (100, 80, 4096, 10, 6), (32, 80, 0, 25, 24), (32, 80, 4096, 25, 12), (64, 80, 4096, 25, 12),
    (32, 80, 0, 50, 24), (32, 80, 12288, 50, 10), (192, 80, 32768, 50, 4), (32, 80, 0, 75, 24),
    (32, 80, 12288, 75, 15), (192, 80, 49152, 75, 4), (32, 80, 0, 100, 24), (32, 80, 12288, 100, 17),
    (100, 80, 32768, 100, 6), (32, 32, 0, -1, 32), (32, 32, 12288, -1, 17), (64, 32, 0, -1, 32),
    (96, 32, 0, -1, 21), (32, 32, 0, 0, 8), (256, 32, 0, 0, 8), (32, 32, 0, 10, 32),
    (32, 32, 1000, 10, 16), (64, 32, 0, 10, 32), (96, 32, 0, 10, 21), (100, 32, 1000, 10, 16),
    (32, 32, 0, 25, 32), (32, 32, 1000, 25, 32), (32, 32, 4096, 25, 12), (64, 32, 0, 25, 32),
    (64, 32, 1000, 25, 32), (96, 32, 0, 25, 21), (32, 32, 0, 50, 32), (32, 32, 4096, 50, 26),
    (64, 32, 0, 50, 32), (96, 32, 0, 50, 21), (192, 32, 12288, 50, 10), (32, 32, 0, 75, 32),
    (32, 32, 12288, 75, 15), (64, 32, 0, 75, 32), (96, 32, 0, 75, 21), (32, 32, 0, 100, 32),
    (32, 32, 12288, 100, 17), (64, 32, 0, 100, 32), (96, 32, 0, 100, 21), (32, 64, 0, -1, 32),
    (32, 64, 12288, -1, 17), (64, 64, 0, -1, 16), (256, 64, 49152, -1, 4), (32, 64, 0, 0, 8),
    (100, 64, 0, 0, 8), (192, 64, 0, 0, 5), (32, 64, 0, 10, 32), (32, 64, 1000, 10, 16),
    (64, 64, 0, 10, 16), (64, 64, 1000, 10, 16), (32, 64, 0, 25, 32), (32, 64, 1000, 25, 32),
    (32, 64, 4096, 25, 12), (64, 64, 0, 25, 16), (256, 64, 12288, 25, 4), (32, 64, 0, 50, 32),
    (32, 64, 4096, 50, 26), (64, 64, 0, 50, 16), (96, 64, 12288, 50, 10), (32, 64, 0, 75, 32),
    (32, 64, 12288, 75, 15), (64, 64, 0, 75, 16), (192, 64, 32768, 75, 5), (32, 64, 0, 100, 32),
    (32, 64, 12288, 100, 17), (64, 64, 0, 100, 16), (256, 64, 49152, 100, 4), (32, 96, 0, -1, 20),
    (32, 96, 12288, -1, 17), (96, 96, 32768, -1, 6), (32, 96, 0, 0, 8), (96, 96, 0, 0, 6),
    (384, 96, 4096, 0, 1), (32, 96, 0, 10, 20), (32, 96, 1000, 10, 16), (96, 96, 4096, 10, 6),
    (32, 96, 0, 25, 20), (32, 96, 4096, 25, 12), (384, 96, 32768, 25, 1), (32, 96, 0, 50, 20),
    (32, 96, 12288, 50, 10), (64, 96, 12288, 50, 10), (32, 96, 0, 75, 20), (32, 96, 12288, 75, 15),
    (100, 96, 32768, 75, 5), (32, 96, 0, 100, 20), (32, 96, 12288, 100, 17), (96, 96, 32768, 100, 6),
    (32, 128, 0, -1, 16), (32, 128, 32768, -1, 6), (100, 128, 49152, -1, 4), (32, 128, 0, 0, 8),
    (64, 128, 0, 0, 8), (96, 128, 0, 0, 5), (32, 128, 0, 10, 16), (32, 128, 1000, 10, 16),
    (32, 128, 4096, 10, 6), (32, 128, 0, 25, 16), (32, 128, 4096, 25, 12), (100, 128, 12288, 25, 4),
    (32, 128, 0, 50, 16), (32, 128, 12288, 50, 10), (100, 128, 32768, 50, 4), (32, 128, 0, 75, 16),
    (32, 128, 12288, 75, 15), (96, 128, 32768, 75, 5), (32, 128, 0, 100, 16), (32, 128, 32768, 100, 6),
    (100, 128, 49152, 100, 4), (32, 10, 0, -1, 32), (32, 10, 12288, -1, 17), (64, 10, 0, -1, 32),
    (96, 10, 0, -1, 21), (512, 10, 49152, -1, 4), (32, 10, 0, 0, 8), (256, 10, 0, 0, 8),
    (384, 10, 0, 0, 5), (32, 10, 0, 10, 32), (32, 10, 1000, 10, 16), (64, 10, 0, 10, 32),
    (96, 10, 0, 10, 21), (100, 10, 1000, 10, 16), (32, 10, 0, 25, 32), (32, 10, 1000, 25, 32),
    (32, 10, 4096, 25, 12), (64, 10, 0, 25, 32), (64, 10, 1000, 25, 32), (96, 10, 0, 25, 21),
    (512, 10, 12288, 25, 4), (32, 10, 0, 50, 32), (32, 10, 4096, 50, 26), (64, 10, 0, 50, 32),
    (96, 10, 0, 50, 21), (192, 10, 12288, 50, 10), (32, 10, 0, 75, 32), (32, 10, 12288, 75, 15),
    (64, 10, 0, 75, 32), (96, 10, 0, 75, 21), (384, 10, 32768, 75, 5), (32, 10, 0, 100, 32),
    (32, 10, 12288, 100, 17), (64, 10, 0, 100, 32), (96, 10, 0, 100, 21), (512, 10, 49152, 100, 4),
    (32, 10, 49152, -1, 4), (32, 10, 253952, -1, 0), (512, 10, 49152, -1, 4), (640, 10, 49152, -1, 3),
    (32, 10, 49152, 0, 1), (32, 10, 253952, 0, 0), (32, 10, 49152, 10, 1), (32, 10, 253952, 10, 0),
    (32, 10, 49152, 25, 1), (32, 10, 253952, 25, 0), (32, 10, 49152, 50, 2), (32, 10, 253952, 50, 0),
    (768, 10, 49152, 50, 2), (32, 10, 49152, 75, 4), (32, 10, 253952, 75, 0), (512, 10, 49152, 75, 4),
    (640, 10, 49152, 75, 3), (32, 10, 49152, 100, 4), (32, 10, 253952, 100, 0), (512, 10, 49152, 100, 4),
    (640, 10, 49152, 100, 3),
]


@pytest.mark.parametrize("threads,regs,smem,carve,blocks", H100_DRIVER)
def test_matches_the_h100_driver(threads, regs, smem, carve, blocks):
    o = compute_occupancy("sm_90", threads, regs, smem, None if carve == -1 else carve)
    assert o.active_blocks_per_sm == blocks
