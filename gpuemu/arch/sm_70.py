"""sm_70 (Volta GV100: Tesla V100 SXM2, 80 SMs).

Limits: CUDA C Programming Guide, "Compute Capabilities" table (7.0 column).
Memory rules: Guide "Compute Capability 7.x": 32 banks of 4 bytes; unified
L1/shared of 128 KB per SM (up to 96 KB shared); global loads cached in L1,
which is write-through; 32-byte sectors, 128-byte lines.
Latencies: approximate figures from Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (2018).
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    shared_phase_lanes=_phases(s8=16, s16=16),
    coalescing="sectors",
    l1_caches_global_loads=True,
    l1_bytes=(128 - 48) * 1024, l1_line_bytes=128, l1_assoc=4,
    l2_bytes=6 * 1024 * 1024, l2_line_bytes=128, l2_assoc=16,   # V100: 6 MB
    constant_cache_bytes=2 * 1024,
    shared_latency=19, l1_hit_latency=28, l2_hit_latency=193, dram_latency=400,
    constant_latency=24,
)

PRESET = Preset(
    name="sm_70", compute_capability=(7, 0),
    description="Volta sm_70 (V100): 32x4-byte banks, L1-cached 32-byte sectors",
    num_sms=80,
    max_threads_per_sm=2048, max_blocks_per_sm=32, max_warps_per_sm=64,
    registers_per_sm=65536, max_registers_per_thread=255, register_alloc_unit=256,
    warp_schedulers_per_sm=4, independent_thread_scheduling=True,
    shared_per_sm=96 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=96 * 1024, shared_reserved_per_block=0,
    max_param_bytes=32764,         # Guide, "Function Parameters": Volta+ with CUDA 12.1+
    memory=MEM.as_dict(), mem=MEM,
)
