"""Occupancy as the CUDA occupancy calculator computes it.

The rules are those of the CUDA Occupancy Calculator and of cuda_occupancy.h
(cudaOccMaxActiveBlocksPerMultiprocessor), which the CUDA C Programming Guide's
"Occupancy Calculator" section points to:

  warps per block     = ceil(threads / warp size)
  warps limit         = floor(max_warps_per_sm / warps per block)    ('warps')
  blocks limit        = max_blocks_per_sm                            ('blocks')
  registers (cc2.x+, allocated per warp):
      regs per warp   = roundup(regs per thread x 32, register_alloc_unit)
      warps that fit  = floor(registers_per_sm / sub-partitions / regs per warp)
                        x sub-partitions
      limit           = floor(warps that fit / warps per block)      ('registers')
      (0 when one block's registers exceed the per-block register file)
  registers (cc1.x, allocated per block):
      regs per block  = roundup(roundup(warps per block, 2) x 32 x regs, unit)
      limit           = floor(registers_per_sm / regs per block)
  shared memory:
      per block       = roundup(static + dynamic + reserved (1 KB on sm_80+),
                                shared allocation unit)
      per SM          = the carve-out: on sm_70+ the preferred carve-out
                        (cudaFuncAttributePreferredSharedMemoryCarveout, percent
                        of the maximum, or cudaFuncSetCacheConfig's preference)
                        rounded up to a shared-memory size the GPU supports; if
                        one block does not fit the preference the driver picks
                        the smallest size that fits. Fermi/Kepler: 48 KB, or
                        16 KB with PreferL1 (32 KB PreferEqual on Kepler).
      limit           = floor(per SM / per block)                    ('shared_memory')
  active blocks       = min of the four; active warps = blocks x warps per block;
  occupancy           = active warps / max_warps_per_sm.

Per-generation constants the Preset does not hold (sub-partitions = warp
allocation granularity, shared allocation unit, supported carve-out sizes) are in
`_ARCH` below, keyed by compute capability major; a preset may override any of
them with a field of the same name.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Optional

KB = 1024

# major -> calculator constants (CUDA Occupancy Calculator "GPU data";
# cuda_occupancy.h cudaOccSubPartitionsPerMultiprocessor,
# cudaOccSMemAllocationGranularity, cudaOccAlignUpShmemSizeVoltaPlus)
_ARCH = {
    1: dict(register_granularity="block", warp_alloc_granularity=2, shared_alloc_unit=512,
            shared_carveout_sizes=None),
    2: dict(register_granularity="warp", warp_alloc_granularity=2, shared_alloc_unit=128,
            shared_carveout_sizes=None),
    3: dict(register_granularity="warp", warp_alloc_granularity=4, shared_alloc_unit=256,
            shared_carveout_sizes=None),
    5: dict(register_granularity="warp", warp_alloc_granularity=4, shared_alloc_unit=256,
            shared_carveout_sizes=None),
    6: dict(register_granularity="warp", warp_alloc_granularity=None, shared_alloc_unit=256,
            shared_carveout_sizes=None),   # sub-partitions: 2 on sm_60, 4 on sm_61/62
    7: dict(register_granularity="warp", warp_alloc_granularity=4, shared_alloc_unit=256,
            shared_carveout_sizes=(0, 8, 16, 32, 64, 96)),   # Volta; Turing: (32, 64)
    8: dict(register_granularity="warp", warp_alloc_granularity=4, shared_alloc_unit=128,
            shared_carveout_sizes=(0, 8, 16, 32, 64, 100, 132, 164)),  # sm_86/89: up to 100
    9: dict(register_granularity="warp", warp_alloc_granularity=4, shared_alloc_unit=128,
            shared_carveout_sizes=(0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
}

CACHE_CONFIGS = {"prefer_none": None, "prefer_shared": 100, "prefer_l1": 0, "prefer_equal": 50}


def _arch(preset, name):
    v = getattr(preset, name, None)
    if v is not None:
        return v
    major, minor = tuple(preset.compute_capability)[:2]
    d = _ARCH.get(major, _ARCH[9])
    v = d[name]
    if name == "warp_alloc_granularity" and v is None:
        v = 2 if minor == 0 else 4
    if name == "shared_carveout_sizes" and v is not None:
        if major == 7 and minor == 5:
            v = (32, 64)
        elif major == 8 and minor not in (0, 7):
            v = (0, 8, 16, 32, 64, 100)
    return v


def _roundup(x: int, unit: int) -> int:
    return -(-x // unit) * unit if unit > 0 else x


def warps_per_block(preset, threads: int) -> int:
    return -(-threads // preset.warp_size)


def blocks_limited_by_registers(preset, threads: int, regs: int) -> int:
    """Blocks of `threads` threads using `regs` registers per thread that fit on one SM."""
    wpb = warps_per_block(preset, threads)
    unit = int(preset.register_alloc_unit)
    gran = int(_arch(preset, "warp_alloc_granularity"))
    per_block_max = int(getattr(preset, "registers_per_block", None) or preset.registers_per_sm)
    if regs <= 0:
        return 1 << 30
    if regs > preset.max_registers_per_thread:
        return 0
    if _arch(preset, "register_granularity") == "block":
        per_block = _roundup(_roundup(wpb, gran) * preset.warp_size * regs, unit)
        if per_block > per_block_max:
            return 0
        return preset.registers_per_sm // per_block
    per_warp = _roundup(regs * preset.warp_size, unit)
    # the hardware check assumes the warps spread over all sub-partitions
    if per_warp * wpb > per_block_max or regs * preset.warp_size * _roundup(wpb, gran) > per_block_max:
        return 0
    warps_fit = (preset.registers_per_sm // gran // per_warp) * gran
    return warps_fit // wpb


def carveout_bytes(preset, carveout=None) -> int:
    """The shared memory per SM the carve-out preference asks for.

    carveout: None / -1 / 'prefer_none' (the default: the maximum), an int
    percent 0..100 of the maximum (cudaFuncAttributePreferredSharedMemoryCarveout),
    or a cudaFuncSetCacheConfig preference 'prefer_shared' | 'prefer_l1' |
    'prefer_equal'."""
    maxb = int(preset.shared_per_sm)
    major, minor = tuple(preset.compute_capability)[:2]
    if isinstance(carveout, str):
        key = carveout.lower().replace("cudafunccacheprefer", "prefer_")
        if key not in CACHE_CONFIGS:
            raise ValueError(f"unknown carve-out {carveout!r}; use a percent 0..100 or one of "
                             f"{', '.join(CACHE_CONFIGS)}")
        carveout = CACHE_CONFIGS[key]
    if carveout is not None and carveout != -1:
        if not isinstance(carveout, numbers.Integral) or not 0 <= carveout <= 100:
            raise ValueError(f"carve-out must be a percent 0..100 (or -1 for the default), got {carveout!r}")
    sizes = _arch(preset, "shared_carveout_sizes")
    if major in (2, 3):        # Fermi / Kepler: 16 or 48 KB (Kepler also 32 KB)
        if carveout is None or carveout == -1 or carveout > 50:
            return maxb
        if carveout == 50 and major == 3:
            return 32 * KB
        return 16 * KB
    if sizes is None or carveout is None or carveout == -1:
        return maxb                 # dedicated shared memory, or the default (max)
    want = carveout * maxb // 100
    return _align_carveout(want, sizes, maxb)


def _align_carveout(nbytes: int, sizes, maxb: int) -> int:
    for kb in sizes:
        if nbytes <= kb * KB:
            return min(kb * KB, maxb)
    return maxb


@dataclass(frozen=True)
class Occupancy:
    arch: str
    threads_per_block: int
    registers_per_thread: int
    shared_per_block: int            # static + dynamic (what the kernel asked for)
    shared_allocated_per_block: int  # + reserved, rounded to the allocation unit
    shared_per_sm: int               # the carve-out used
    warps_per_block: int
    active_blocks_per_sm: int
    active_warps_per_sm: int
    max_warps_per_sm: int
    occupancy: float                 # active warps / max warps, 0..1
    limited_by: str                  # 'warps' | 'blocks' | 'registers' | 'shared_memory'
    limiters: tuple                  # every resource at the minimum
    limits: dict = field(default_factory=dict)   # resource -> blocks per SM it allows
    registers_per_block: int = 0     # allocated
    notes: tuple = ()

    @property
    def active_threads_per_sm(self) -> int:
        return self.active_blocks_per_sm * self.threads_per_block


ORDER = ("warps", "blocks", "registers", "shared_memory")


def compute_occupancy(preset, threads_per_block: int, registers_per_thread: int,
                      shared_per_block: int = 0, carveout=None) -> Occupancy:
    """The calculator's answer for one block size, register count and shared
    memory per block (static + dynamic bytes) on `preset` (a Preset or a name)."""
    from gpuemu.arch import get_preset
    preset = get_preset(preset)
    t = int(threads_per_block)
    if t < 1:
        raise ValueError(f"threads per block must be at least 1, got {t}")
    regs, smem = int(registers_per_thread), int(shared_per_block)
    notes = []
    wpb = warps_per_block(preset, t)
    limits = {}
    limits["warps"] = 0 if t > preset.max_threads_per_block else preset.max_warps_per_sm // wpb
    # also the thread limit (equal to the warp limit whenever threads/SM = 32 x warps/SM)
    limits["warps"] = min(limits["warps"], preset.max_threads_per_sm // (wpb * preset.warp_size))
    limits["blocks"] = int(preset.max_blocks_per_sm)
    limits["registers"] = blocks_limited_by_registers(preset, t, regs)
    # shared memory
    reserved = int(getattr(preset, "shared_reserved_per_block", 0) or 0)
    unit = int(_arch(preset, "shared_alloc_unit"))
    alloc = _roundup(smem + reserved, unit)
    per_block_limit = int(preset.max_shared_per_block)
    if smem > per_block_limit:
        per_block_limit = int(preset.max_shared_per_block_optin)
        if smem <= per_block_limit:
            notes.append("needs the opt-in shared memory limit "
                         "(cudaFuncAttributeMaxDynamicSharedMemorySize)")
    pref = carveout_bytes(preset, carveout)
    major = tuple(preset.compute_capability)[0]
    if alloc > per_block_limit + reserved or alloc > preset.shared_per_sm:
        limits["shared_memory"] = 0
        per_sm = pref
    else:
        if pref >= alloc:
            per_sm = pref
        elif major >= 7:
            per_sm = _align_carveout(alloc, _arch(preset, "shared_carveout_sizes") or (),
                                     int(preset.shared_per_sm))
            notes.append(f"the carve-out of {pref} bytes is too small for one block; "
                         f"the driver uses {per_sm}")
        else:
            per_sm = int(preset.shared_per_sm)
        limits["shared_memory"] = per_sm // alloc if alloc else 1 << 30
    blocks = max(0, min(limits.values()))
    limiters = tuple(k for k in ORDER if limits[k] == blocks)
    warps = blocks * wpb
    reg_block = (_roundup(regs * preset.warp_size, preset.register_alloc_unit) * wpb
                 if _arch(preset, "register_granularity") == "warp" else
                 _roundup(_roundup(wpb, _arch(preset, "warp_alloc_granularity")) * 32 * regs,
                          preset.register_alloc_unit))
    return Occupancy(arch=preset.name, threads_per_block=t, registers_per_thread=regs,
                     shared_per_block=smem, shared_allocated_per_block=alloc, shared_per_sm=per_sm,
                     warps_per_block=wpb, active_blocks_per_sm=blocks, active_warps_per_sm=warps,
                     max_warps_per_sm=int(preset.max_warps_per_sm),
                     occupancy=warps / preset.max_warps_per_sm, limited_by=limiters[0],
                     limiters=limiters, limits=dict(limits), registers_per_block=reg_block,
                     notes=tuple(notes))


_LABELS = {"warps": "warps / threads per SM", "blocks": "blocks per SM",
           "registers": "registers", "shared_memory": "shared memory"}


def occupancy_report(occ: Occupancy) -> str:
    """A plain-text table in the occupancy calculator's terms."""
    def fmt(n):
        return "unlimited" if n >= 1 << 30 else str(n)
    rows = [
        ("arch", occ.arch),
        ("threads per block", occ.threads_per_block),
        ("warps per block", occ.warps_per_block),
        ("registers per thread", occ.registers_per_thread),
        ("registers per block (allocated)", occ.registers_per_block),
        ("shared memory per block", f"{occ.shared_per_block} B "
                                    f"({occ.shared_allocated_per_block} B allocated)"),
        ("shared memory per SM (carve-out)", f"{occ.shared_per_sm} B"),
    ]
    w = max(len(r[0]) for r in rows)
    out = [f"{k:<{w}}  {v}" for k, v in rows]
    out.append("")
    out.append(f"{'limit':<24} {'blocks/SM':>10} {'warps/SM':>9}")
    for k in ORDER:
        b = occ.limits[k]
        mark = "  <- limiting" if k in occ.limiters else ""
        warps = fmt(b * occ.warps_per_block) if b < 1 << 30 else "unlimited"
        out.append(f"{_LABELS[k]:<24} {fmt(b):>10} {warps:>9}{mark}")
    out.append("")
    out.append(f"active blocks per SM: {occ.active_blocks_per_sm}")
    out.append(f"active warps per SM:  {occ.active_warps_per_sm} of {occ.max_warps_per_sm}")
    out.append(f"occupancy:            {occ.occupancy * 100:.1f}%  "
               f"(limited by {', '.join(_LABELS[k] for k in occ.limiters)})")
    for n in occ.notes:
        out.append(f"note: {n}")
    return "\n".join(out)


def kernel_occupancy(preset, threads_per_block: int, registers_per_thread: int,
                     static_shared: int, dynamic_shared: int = 0, carveout=None,
                     launch_bounds: Optional[tuple] = None) -> Occupancy:
    """Occupancy of a compiled kernel: checks the block against __launch_bounds__."""
    if launch_bounds and launch_bounds[0] and threads_per_block > launch_bounds[0]:
        raise ValueError(f"block of {threads_per_block} threads exceeds the kernel's "
                         f"__launch_bounds__ of {launch_bounds[0]} threads")
    return compute_occupancy(preset, threads_per_block, registers_per_thread,
                             int(static_shared) + int(dynamic_shared), carveout)
