"""Compute capability 3.x (Kepler, GK110 / cc3.5: Tesla K20X, 14 SMs).

Limits: CUDA C Programming Guide, "Compute Capabilities" table.
Memory rules: Guide section "Compute Capability 3.x", "Shared Memory": 32
banks with two addressing modes (cudaDeviceSetSharedMemConfig):
- 64-bit mode: successive 64-bit words map to successive banks; no conflict
  between threads accessing sub-words of one 64-bit word;
- 32-bit mode: successive 32-bit words map to successive banks; no conflict
  for words i and i+32 inside one 64-word aligned segment.
Both say a bank row is 8 bytes wide: row = addr // 256. Global loads are
not cached in L1 by default on cc3.5 (L2 only, 32-byte segments).
Latencies: approximate figures from Mei & Chu, "Dissecting GPU Memory Hierarchy through Microbenchmarking" (IEEE TPDS 2017, Kepler).
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    readonly_path="separate", readonly_cache_bytes=48 * 1024,   # GK110 whitepaper: 48 KB read-only cache
    banks=32,
    shared_bank_bytes=4, shared_row_bytes=256,        # 32-bit mode (default)
    shared_bank_modes={4: (4, 256), 8: (8, 256)},     # Guide 3.x: 32-bit / 64-bit mode
    shared_phase_lanes=_phases(),                     # whole-warp requests
    shared_broadcast="any",
    coalescing="lines",
    l1_present=True, l1_caches_global_loads=False,    # Guide 3.x "Global Memory": L2 only by default
    l1_bytes=16 * 1024, l1_line_bytes=128, l1_sector_bytes=128, l1_assoc=4, l1_write_allocate=False,
    l2_bytes=1536 * 1024, l2_line_bytes=128, l2_assoc=16,   # GK110 whitepaper
    constant_cache_bytes=8 * 1024,
    cycles_per_shared_wavefront=1,
    cycles_per_l1_sector=1, cycles_per_l2_sector=4, cycles_per_dram_sector=8,
    shared_latency=47, l1_hit_latency=30, l2_hit_latency=200, dram_latency=300,
    constant_latency=30,
)

PRESET = Preset(
    name="cc3x", compute_capability=(3, 5),
    description="Kepler cc3.5 (K20X): 32 banks, 4- or 8-byte bank mode",
    num_sms=14,
    max_threads_per_block=1024, max_block_dim=(1024, 1024, 64),
    max_grid_dim=(2**31 - 1, 65535, 65535),
    max_threads_per_sm=2048, max_blocks_per_sm=16, max_warps_per_sm=64,
    registers_per_sm=65536, max_registers_per_thread=255, register_alloc_unit=256,
    warp_schedulers_per_sm=4, independent_thread_scheduling=False,
    shared_per_sm=48 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=48 * 1024, shared_reserved_per_block=0,
    shared_banks=32, shared_bank_width=4,
    constant_bytes=64 * 1024,
    memory=MEM.as_dict(), mem=MEM,
)
