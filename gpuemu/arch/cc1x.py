"""Compute capability 1.x (Tesla, GT200 / cc1.3: GeForce GTX 280, 30 SMs).

Limits: CUDA C Programming Guide (3.x-era editions), Appendix "Compute
Capabilities", table "Technical Specifications per Compute Capability".
Memory rules: same appendix, section "Compute Capability 1.x": shared memory
has 16 banks; a warp's request is split into two half-warp requests that do
not conflict with each other; one 32-bit word is broadcast per step (the
step-by-step procedure in "Shared Memory, 32-Bit Strided Access/Broadcast");
global accesses are coalesced per half-warp into 32/64/128-byte segments
(section "Global Memory", cc1.2 and 1.3 rules).
Latencies: approximate figures from Wong et al., "Demystifying GPU Microarchitecture through Microbenchmarking" (ISPASS 2010, GT200).
Cycle costs (cycles_per_*) are model parameters, not measurements.
"""
from gpuemu.arch.memory_config import MemoryConfig, _phases
from gpuemu.arch.preset import Preset

MEM = MemoryConfig(
    readonly_path="none",              # no LDG before cc3.5
    banks=16,                      # Guide 1.x: "16 banks"
    shared_bank_bytes=4,           # successive 32-bit words in successive banks
    shared_row_bytes=64,           # 16 banks x 4 bytes
    shared_phase_lanes=_phases(s1=16, s2=16, s4=16, s8=16, s16=16),  # half-warps
    shared_broadcast="one_word",   # Guide 1.x broadcast procedure
    coalescing="half_warp_segments",   # Guide 1.x "Global Memory" cc1.2/1.3
    l1_present=False,              # no L1 / L2 for global memory on cc1.x
    l1_caches_global_loads=False,
    l1_bytes=0,
    l2_bytes=0,
    constant_cache_bytes=8 * 1024,  # Guide table: "cache working set for constant memory per SM: 8 KB"
    cycles_per_shared_wavefront=2,  # a half-warp request is served in 2 clocks of the 8-wide SM
    cycles_per_l2_sector=0,
    cycles_per_dram_sector=4,
    shared_latency=38, l1_hit_latency=0, l2_hit_latency=0, dram_latency=440,
    constant_latency=20,
)

PRESET = Preset(
    name="cc1x", compute_capability=(1, 3),
    description="Tesla cc1.3 (GTX 280): 16 banks, half-warp requests, segment coalescing",
    num_sms=30,
    max_threads_per_block=512, max_block_dim=(512, 512, 64),
    max_grid_dim=(65535, 65535, 1),
    max_threads_per_sm=1024, max_blocks_per_sm=8, max_warps_per_sm=32,
    registers_per_sm=16384, max_registers_per_thread=124, register_alloc_unit=512,
    warp_schedulers_per_sm=1, independent_thread_scheduling=False,
    shared_per_sm=16 * 1024, max_shared_per_block=16 * 1024,
    max_shared_per_block_optin=16 * 1024, shared_reserved_per_block=0,
    shared_banks=16, shared_bank_width=4,
    constant_bytes=64 * 1024,
    max_local_bytes=16 * 1024,     # Guide, cc 1.x: 16 KB of local memory per thread
    max_param_bytes=256,           # Guide, cc 1.x: parameters in shared memory, 256 bytes
    memory=MEM.as_dict(), mem=MEM,
)
