"""sm_80 (Ampere GA100: A100 SXM4, 108 SMs).

Limits: CUDA C Programming Guide, "Compute Capabilities" table (8.0 column):
164 KB shared per SM, 163 KB per block with opt-in, 1 KB reserved per block.
Memory rules: Guide "Compute Capability 8.x": as 7.x; 192 KB unified
L1/shared per SM; A100 whitepaper: 40 MB L2.
Latencies: approximate figures from published A100 microbenchmarks (Luo et al. 2024 compare A100/H100).
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    shared_phase_lanes=_phases(s8=16, s16=16),
    coalescing="sectors",
    l1_caches_global_loads=True,
    l1_bytes=(192 - 48) * 1024, l1_line_bytes=128, l1_assoc=4,
    l2_bytes=40 * 1024 * 1024, l2_line_bytes=128, l2_assoc=16,
    constant_cache_bytes=2 * 1024,
    shared_latency=23, l1_hit_latency=33, l2_hit_latency=200, dram_latency=466,
    constant_latency=24,
)

PRESET = Preset(
    name="sm_80", compute_capability=(8, 0),
    description="Ampere sm_80 (A100): 32x4-byte banks, L1-cached 32-byte sectors",
    num_sms=108,
    max_threads_per_sm=2048, max_blocks_per_sm=32, max_warps_per_sm=64,
    registers_per_sm=65536, max_registers_per_thread=255, register_alloc_unit=256,
    warp_schedulers_per_sm=4, independent_thread_scheduling=True,
    shared_per_sm=164 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=163 * 1024, shared_reserved_per_block=1024,
    max_param_bytes=32764,         # Guide, "Function Parameters": Volta+ with CUDA 12.1+
    memory=MEM.as_dict(), mem=MEM,
)
