"""The memory-model half of a preset: every rule the memory system reads, as data.

One frozen `MemoryConfig` per preset (field `Preset.mem`). The memory units
(gpuemu/memory/) contain no per-GPU `if`s: they read these fields, so a
researcher changes a rule by editing the preset's file. Defaults describe an
sm_90 (H100); each preset file overrides what differs and cites why.

Shared memory (bank arbiter) is described by four numbers per preset:
  bank = (addr // shared_bank_bytes) % banks   (which bank serves a byte)
  row  = addr // shared_row_bytes              (which bank-row: two different
                                                rows of one bank conflict)
  shared_phase_lanes[size]: a warp request of `size`-byte accesses is served
      in phases of that many consecutive lanes that never conflict with each
      other (cc1.x half-warps; 64/128-bit accesses on Fermi and sm_5x+)
  shared_broadcast: 'any' (every word read by several lanes is broadcast,
      cc2.x+) or 'one_word' (the cc1.x procedure: one broadcast word per
      step, one address per other bank)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


def _phases(**kw: int) -> dict:
    return {1: kw.get("s1", 32), 2: kw.get("s2", 32), 4: kw.get("s4", 32),
            8: kw.get("s8", 32), 16: kw.get("s16", 32)}


@dataclass(frozen=True)
class MemoryConfig:
    # ---------------------------------------------------------- shared memory
    banks: int = 32
    shared_bank_bytes: int = 4          # bank index granularity (8 in cc3.x 8-byte mode)
    shared_row_bytes: int = 128         # one conflict-free row across all banks
    # H100 measurements (conformance smem_ld_double_stride1: 2 wavefronts,
    # smem_ld_float4_stride1: 4, matmul_tiled16's LDS.128 of 2 distinct 16-byte
    # addresses, one per half-warp: 2): 8- and 16-byte accesses are served per
    # half-warp; 1/2/4-byte accesses by the whole warp.
    shared_phase_lanes: dict = field(default_factory=lambda: _phases(s8=16, s16=16))
    shared_broadcast: str = "any"
    # cc3.x only: bank modes the device offers (cudaDeviceSetSharedMemConfig);
    # maps mode bytes -> (shared_bank_bytes, shared_row_bytes)
    shared_bank_modes: dict = field(default_factory=dict)
    # ---------------------------------------------------------- global memory
    # 'half_warp_segments' (cc1.2/1.3 rules), 'lines' (cc2.x: 128-byte L1 lines
    # when L1 caches global loads, 32-byte segments otherwise), 'sectors'
    # (sm_5x+: 32-byte sectors per request).
    coalescing: str = "sectors"
    sector_bytes: int = 32
    # --- L1 (per SM)
    l1_present: bool = True
    l1_caches_global_loads: bool = True   # default of the -dlcm switch
    # H100: 256 KB of unified L1/shared per SM (Hopper Tuning Guide); we assume
    # the carve-out leaves 208 KB to L1 (the rest for up to 48 KB of shared).
    l1_bytes: int = 208 * 1024
    l1_line_bytes: int = 128
    l1_sector_bytes: int = 32         # sectored L1 (Volta+); Fermi/Kepler fill whole 128-byte lines
    l1_assoc: int = 4
    # Volta+ L1 is write-through, stores do not allocate (Guide, "Compute
    # Capability 7.x": L1 is write-through for global memory).
    l1_write_allocate: bool = False
    # --- L2 (shared by all SMs)
    l2_bytes: int = 50 * 1024 * 1024
    l2_line_bytes: int = 128
    l2_assoc: int = 16
    # --- constant cache (per SM)
    constant_cache_bytes: int = 2 * 1024
    constant_line_bytes: int = 64
    constant_cache_assoc: int = 4
    # --- read-only data path: loads by __ldg or through `const T *__restrict__`
    # kernel parameters (LDG.E.CONSTANT / ld.global.nc; isa/readonly_path.py).
    # 'l1': served by the unified L1/texture cache even where plain global
    # loads bypass L1 (Maxwell and later: Guide "Compute Capability 5.x",
    # "Global Memory"); 'separate': a per-SM read-only cache of its own
    # (Kepler GK110 whitepaper: 48 KB read-only data cache); 'none': plain
    # global loads (cc < 3.5 has no LDG).
    readonly_path: str = "l1"
    readonly_cache_bytes: int = 0
    readonly_line_bytes: int = 128
    readonly_sector_bytes: int = 32
    readonly_cache_assoc: int = 4
    # --- local memory: interleaved per 4-byte word across the lanes of a warp
    # (hardware layout; an access of the same offset by a warp is coalesced)
    local_interleave_bytes: int = 4
    local_bytes_per_thread_window: int = 16 * 1024   # address-space layout only
    # ---------------------------------------------------------- costs (cycles)
    # Throughput costs summed in functional mode: one shared wavefront per
    # cycle per SM (32 banks x 4 B/clk), per sector at each level.
    cycles_per_shared_wavefront: int = 1
    cycles_per_constant_wavefront: int = 1
    cycles_per_l1_sector: int = 1
    cycles_per_l2_sector: int = 2
    cycles_per_dram_sector: int = 4
    cycles_per_atomic_serialization: int = 2
    # Latencies (timing mode; microbenchmark figures for H100 from
    # "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture",
    # Luo et al. 2024, rounded).
    shared_latency: int = 29
    l1_hit_latency: int = 33
    l2_hit_latency: int = 262
    dram_latency: int = 478
    constant_latency: int = 24

    def as_dict(self) -> dict:
        return asdict(self)

    def with_bank_mode(self, mode: int | None) -> "MemoryConfig":
        """This config with cc3.x's 4- or 8-byte bank mode applied (None: as is)."""
        from dataclasses import replace
        if mode is None:
            return self
        if mode not in self.shared_bank_modes:
            known = sorted(self.shared_bank_modes) or "none (fixed 4-byte banks)"
            raise ValueError(f"bank mode {mode} bytes is not offered by this preset; "
                             f"modes: {known}")
        bank_bytes, row_bytes = self.shared_bank_modes[mode]
        return replace(self, shared_bank_bytes=bank_bytes, shared_row_bytes=row_bytes)
