"""Compute capability 2.x (Fermi, GF100 / cc2.0: Tesla C2050, 14 SMs).

Limits: CUDA C Programming Guide, "Compute Capabilities" table.
Memory rules: Guide section "Compute Capability 2.x": 32 banks of 32-bit
words, whole-warp requests, any number of words broadcast, no conflict for
bytes of one 32-bit word; 64-bit accesses conflict only within a half-warp;
128-bit accesses are served per half-warp here (the Guide's quarter-warp
"+1" rule gives the same 2 wavefronts per half-warp for conflict-free
float4 reads). Global loads are cached in L1 with 128-byte lines by default;
with -dlcm=cg (l1_enabled=False) they go to L2 in 32-byte segments.
Latencies: approximate figures from Mei & Chu, "Dissecting GPU Memory Hierarchy through Microbenchmarking" (IEEE TPDS 2017, Fermi).
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    readonly_path="none",              # no LDG before cc3.5
    banks=32, shared_bank_bytes=4, shared_row_bytes=128,
    shared_phase_lanes=_phases(s8=16, s16=16),   # Guide 2.x "64-Bit Accesses"/"128-Bit Accesses"
    shared_broadcast="any",
    coalescing="lines",              # Guide 2.x "Global Memory": 128-byte L1 lines / 32-byte segments
    l1_present=True, l1_caches_global_loads=True,
    l1_bytes=16 * 1024,              # 64 KB split 48 KB shared / 16 KB L1 (default config)
    l1_line_bytes=128, l1_sector_bytes=128, l1_assoc=4,
    l1_write_allocate=False,         # Fermi: global stores invalidate L1, write to L2
    l2_bytes=768 * 1024, l2_line_bytes=128, l2_assoc=16,   # GF100 whitepaper
    constant_cache_bytes=8 * 1024,
    cycles_per_shared_wavefront=2,   # 16-wide load/store units: a warp in 2 clocks
    cycles_per_l1_sector=1, cycles_per_l2_sector=4, cycles_per_dram_sector=8,
    shared_latency=50, l1_hit_latency=45, l2_hit_latency=310, dram_latency=600,
    constant_latency=46,
)

PRESET = Preset(
    name="cc2x", compute_capability=(2, 0),
    description="Fermi cc2.0 (Tesla C2050): 32 banks, 128-byte L1 lines",
    num_sms=14,
    max_threads_per_block=1024, max_block_dim=(1024, 1024, 64),
    max_grid_dim=(65535, 65535, 65535),
    max_threads_per_sm=1536, max_blocks_per_sm=8, max_warps_per_sm=48,
    registers_per_sm=32768, max_registers_per_thread=63, register_alloc_unit=64,
    warp_schedulers_per_sm=2, independent_thread_scheduling=False,
    shared_per_sm=48 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=48 * 1024, shared_reserved_per_block=0,
    shared_banks=32, shared_bank_width=4,
    constant_bytes=64 * 1024,
    memory=MEM.as_dict(), mem=MEM,
)
