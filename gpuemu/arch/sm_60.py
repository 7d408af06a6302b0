"""sm_60 (Pascal GP100: Tesla P100 SXM2, 56 SMs).

Limits: CUDA C Programming Guide, "Compute Capabilities" table (6.0 column).
Memory rules: Guide "Compute Capability 6.x": shared and global memory
"behave the same way as in devices of compute capability 5.x": 32 banks of
4 bytes, 32-byte sectors, L1 caching of global loads off by default.
Latencies: approximate figures from Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (2018, P100 column).
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    shared_phase_lanes=_phases(s8=16, s16=16),
    coalescing="sectors",
    l1_caches_global_loads=False,
    l1_bytes=24 * 1024, l1_line_bytes=128, l1_assoc=4,
    l2_bytes=4 * 1024 * 1024, l2_line_bytes=128, l2_assoc=16,   # P100: 4 MB
    constant_cache_bytes=2 * 1024,
    shared_latency=24, l1_hit_latency=82, l2_hit_latency=234, dram_latency=400,
    constant_latency=28,
)

PRESET = Preset(
    name="sm_60", compute_capability=(6, 0),
    description="Pascal sm_60 (P100): 32x4-byte banks, 32-byte sectors",
    num_sms=56,
    max_threads_per_sm=2048, max_blocks_per_sm=32, max_warps_per_sm=64,
    registers_per_sm=65536, max_registers_per_thread=255, register_alloc_unit=256,
    warp_schedulers_per_sm=2, independent_thread_scheduling=False,
    shared_per_sm=64 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=48 * 1024, shared_reserved_per_block=0,
    memory=MEM.as_dict(), mem=MEM,
)
