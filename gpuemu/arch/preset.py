"""What an architecture preset is: plain data, one file per GPU family.

The machine (launch limits, occupancy, divergence model) and the memory
system (bank and coalescing rules, caches) read only these fields, so a
researcher changes a GPU by editing its preset file. Each preset module
builds one `Preset` and cites where its numbers come from.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gpuemu.arch.memory_config import MemoryConfig


@dataclass(frozen=True)
class Preset:
    name: str                      # 'sm_90'
    compute_capability: tuple      # (9, 0)
    description: str               # one line: the GPU and its memory rules in brief
    # --- execution resources (CUDA C Programming Guide, "Compute Capabilities" table)
    num_sms: int
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_block_dim: tuple = (1024, 1024, 64)
    max_grid_dim: tuple = (2**31 - 1, 65535, 65535)
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    max_warps_per_sm: int = 64
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    register_alloc_unit: int = 256
    warp_schedulers_per_sm: int = 4
    # Volta and later schedule threads of a warp independently; earlier
    # GPUs reconverge with a SIMT stack (Guide, "Independent Thread Scheduling").
    independent_thread_scheduling: bool = True
    # --- shared memory
    shared_per_sm: int = 228 * 1024
    max_shared_per_block: int = 48 * 1024          # without opt-in
    max_shared_per_block_optin: int = 227 * 1024
    shared_reserved_per_block: int = 1024
    shared_banks: int = 32
    shared_bank_width: int = 4
    # --- local memory
    # the most a thread's local frame may hold (Guide, "Features and Technical
    # Specifications": 512 KB per thread from cc 2.0)
    max_local_bytes: int = 512 * 1024
    # --- constant memory
    constant_bytes: int = 64 * 1024
    # a kernel's parameters together, passed in constant memory (Guide, "Function
    # Parameters": 4 KB before Volta; 32,764 bytes on Volta and later with CUDA 12.1+)
    max_param_bytes: int = 4096
    # --- memory-model parameters beyond these live in `memory`, a dict the
    # memory system reads (bank mode, L1/L2 sizes, line/sector sizes, latencies)
    memory: dict = field(default_factory=dict)
    # --- the typed memory rules (bank arbiter, coalescer, caches, costs);
    # `memory` above holds the same values as a plain dict (mem.as_dict())
    mem: MemoryConfig = field(default_factory=MemoryConfig)
