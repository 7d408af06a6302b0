"""sm_52 (Maxwell GM200: GeForce GTX Titan X, 24 SMs).

Limits: CUDA C Programming Guide, "Compute Capabilities" table (5.2 column).
Memory rules: Guide "Compute Capability 5.x": 32 banks of 32-bit words, any
number of words broadcast; 64/128-bit accesses in half-warp phases (as
measured on H100, conformance smem_ld_double_*/float4_*, and the Guide's
2.x description those architectures keep); global accesses in 32-byte
sectors; "L1 caching of global loads is disabled by default" on 5.2
(Guide 5.x, "Global Memory"; -dlcm=ca turns it on).
Latencies: approximate figures from Mei & Chu (IEEE TPDS 2017, Maxwell) and Jia et al. 2018.
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    shared_phase_lanes=_phases(s8=16, s16=16),
    coalescing="sectors",
    l1_caches_global_loads=False,
    l1_bytes=24 * 1024, l1_line_bytes=128, l1_assoc=4,    # unified L1/texture, 24 KB per SMM half
    l2_bytes=3 * 1024 * 1024, l2_line_bytes=128, l2_assoc=16,   # GM200: 3 MB
    constant_cache_bytes=2 * 1024,
    shared_latency=28, l1_hit_latency=82, l2_hit_latency=214, dram_latency=350,
    constant_latency=28,
)

PRESET = Preset(
    name="sm_52", compute_capability=(5, 2),
    description="Maxwell sm_52 (GTX Titan X): 32x4-byte banks, 32-byte sectors, L1 off for globals",
    num_sms=24,
    max_threads_per_sm=2048, max_blocks_per_sm=32, max_warps_per_sm=64,
    registers_per_sm=65536, max_registers_per_thread=255, register_alloc_unit=256,
    warp_schedulers_per_sm=4, independent_thread_scheduling=False,
    shared_per_sm=96 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=48 * 1024, shared_reserved_per_block=0,
    memory=MEM.as_dict(), mem=MEM,
)
