"""The JIT: structured SIMT IR (isa.ir) -> native, resumable warp functions.

    ck = compile_kernel(ir_module, "transpose", arch="sm_90", options=())
    ck.fn(frame_address, ctx_address) -> event code      (see abi.py)
    ck.meta: KernelMeta (params layout, frame size, shared/local layout,
             MemInstr list for the memory model, number of source lines)

Modules: abi (frame/ctx/trace layout shared with the machine), call_hoisting
(calls and barriers to statement level), lane_types and c_semantics (C
operators on 32-lane vectors), memory_access (checked, traced warp-wide
loads/stores/atomics), storage (frame slots, shared and local layout),
warp_codegen and intrinsics_codegen (IR -> LLVM), engine (llvmlite),
kernel_cache (memory and disk cache), compiler (the entry point).
"""
from .compiler import CompiledKernel, KernelMeta, compile_kernel  # noqa: F401
