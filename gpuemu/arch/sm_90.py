"""sm_90 (Hopper GH100: H100 SXM5, 132 SMs) -- the preset checked against
the H100 counters in ../shared/conformance/.

Limits: CUDA C Programming Guide, "Compute Capabilities" table (9.0 column):
2048 threads, 32 blocks, 64 warps and 64 K registers per SM; 228 KB shared
per SM, 227 KB per block with opt-in, 1 KB reserved per block.
Memory rules (MemoryConfig defaults are this GPU; see memory_config.py):
- shared: 32 banks x 4 bytes (Guide "Compute Capability 9.0" -> 8.x -> 5.x
  "Shared Memory"); 4-byte stride s costs gcd(s,32) wavefronts
  (conformance smem_ld_stride{1,2,4,16,32}); 8- and 16-byte accesses are
  served per half-warp (smem_ld_double_stride1: 2 wavefronts, float4_stride1:
  4, double_stride16: 32; matmul_tiled16's LDS.128 with one address per
  half-warp: 2).
- global: 32-byte sectors per request (gmem_ld_offset0: 4, offset1: 5,
  stride32: 32, float4: 16); loads cached in L1 (128-byte lines), stores
  write through to L2 without allocating in L1.
- L2: 50 MB (H100 SXM5), 128-byte lines of 32-byte sectors.
Latencies: Luo et al. 2024 (see memory_config.py); cycles_per_* are model parameters.
"""
from gpuemu.arch.memory_config import MemoryConfig
from gpuemu.arch.preset import Preset

MEM = MemoryConfig()   # the defaults describe the H100

PRESET = Preset(
    name="sm_90", compute_capability=(9, 0),
    description="Hopper sm_90 (H100 SXM5): 32x4-byte banks, L1-cached 32-byte sectors",
    num_sms=132,
    max_threads_per_sm=2048, max_blocks_per_sm=32, max_warps_per_sm=64,
    registers_per_sm=65536, max_registers_per_thread=255, register_alloc_unit=256,
    warp_schedulers_per_sm=4, independent_thread_scheduling=True,
    shared_per_sm=228 * 1024, max_shared_per_block=48 * 1024,
    max_shared_per_block_optin=227 * 1024, shared_reserved_per_block=1024,
    max_param_bytes=32764,         # Guide, "Function Parameters": Volta+ with CUDA 12.1+
    memory=MEM.as_dict(), mem=MEM,
)
