"""A kernel's resource usage, as `nvcc -Xptxas -v` reports it.

    res = kernel_resources(raw_kernel)
    print(ptxas_lines(res))

    ptxas info    : Compiling entry function 'wide_capped' for 'sm_90'
    ptxas info    : Function properties for wide_capped
        36 bytes stack frame, 36 bytes spill stores, 204 bytes spill loads
    ptxas info    : Used 32 registers, 0 bytes smem, 392 bytes cmem[0]

Fields and where they come from:
- registers: isa/register_estimate.py (live values in the IR), capped by
  the preset's limit, -maxrregcount and __launch_bounds__;
- spill stores / loads: static bytes of the spill instructions the
  spiller inserts (isa/register_spill.py), as ptxas counts them;
- stack frame: the thread's local memory (local arrays, address-taken
  variables, spill slots), 8-byte aligned;
- smem: static __shared__ bytes;
- cmem[0]: the kernel's parameters after the driver's reserved bytes of
  constant bank 0 (CMEM0_RESERVED: 0x160 measured with CUDA 13 ptxas on
  sm_75 and sm_80, e.g. vecadd's 28 parameter bytes give "380 bytes
  cmem[0]"; CUDA 13 prints no cmem[0] for sm_90, we keep the sm_8x figure;
  0x140 on Kepler to Pascal and 0x20 on Fermi are where their SASS reads
  the first parameter, c[0x0][0x140] / c[0x0][0x20]; cc1.x passes
  parameters in shared memory: none); user __constant__ data is reported
  as cmem[3] (cmem[2] before sm_70), module-wide.
"""
from __future__ import annotations

from dataclasses import dataclass

# constant bank 0 bytes ptxas reserves before the parameters (by cc major)
CMEM0_RESERVED = {1: 0, 2: 0x20, 3: 0x140, 5: 0x140, 6: 0x140, 7: 0x160, 8: 0x160, 9: 0x160}


@dataclass(frozen=True)
class KernelResources:
    name: str
    arch: str
    registers: int
    register_demand: int
    register_cap: int
    cap_reason: str
    spill_store_bytes: int
    spill_load_bytes: int
    stack_frame_bytes: int
    shared_bytes: int
    param_bytes: int
    cmem0_bytes: int
    user_constant_bytes: int
    user_constant_bank: int


def kernel_resources(kernel) -> KernelResources:
    """Resources of a gpuemu RawKernel on its module's preset."""
    from isa.register_spill import apply_register_cap
    mod = kernel.module
    preset = mod.preset
    _, est, plan = apply_register_cap(kernel.kernel_ir, preset, mod.options)
    meta = kernel.meta
    stack = 0
    for _tag, _name, space, _lo, hi, _dyn in meta.objects:
        if space == "local":
            stack = max(stack, hi)
    stack = (stack + 7) // 8 * 8
    major = tuple(preset.compute_capability)[0]
    reserved = CMEM0_RESERVED.get(major, CMEM0_RESERVED[9])
    user_const = sum(int(g.type.size) for g in mod.module.globals if g.space == "constant")
    return KernelResources(
        name=kernel.name, arch=preset.name, registers=est.count, register_demand=est.demand,
        register_cap=est.cap, cap_reason=est.cap_reason,
        spill_store_bytes=plan.store_bytes, spill_load_bytes=plan.load_bytes,
        stack_frame_bytes=stack, shared_bytes=int(meta.static_shared),
        param_bytes=int(meta.param_bytes),
        cmem0_bytes=(reserved + int(meta.param_bytes)) if major > 1 else 0,
        user_constant_bytes=user_const, user_constant_bank=3 if major >= 7 else 2)


def ptxas_lines(r: KernelResources) -> str:
    """The resource report of one kernel in ptxas -v's words."""
    cmem = f"{r.cmem0_bytes} bytes cmem[0]"
    if r.user_constant_bytes:
        cmem += f", {r.user_constant_bytes} bytes cmem[{r.user_constant_bank}]"
    return "\n".join([
        f"ptxas info    : Compiling entry function '{r.name}' for '{r.arch}'",
        f"ptxas info    : Function properties for {r.name}",
        f"    {r.stack_frame_bytes} bytes stack frame, {r.spill_store_bytes} bytes spill stores, "
        f"{r.spill_load_bytes} bytes spill loads",
        f"ptxas info    : Used {r.registers} registers, {r.shared_bytes} bytes smem, {cmem}",
    ])


def cap_note(r: KernelResources) -> str:
    """One line on the register cap, when it bites (gpuemu's addition)."""
    if r.register_demand <= r.register_cap:
        return ""
    why = {"arch": "the architecture's limit", "maxrregcount": "-maxrregcount",
           "__launch_bounds__": "__launch_bounds__"}.get(r.cap_reason, r.cap_reason)
    return (f"gpuemu note   : '{r.name}' wants {r.register_demand} registers; {why} caps it at "
            f"{r.register_cap}, the rest spill to local memory")
