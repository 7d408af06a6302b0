"""Turn what a stopped warp left in ctx and its frame into a Finding."""
from __future__ import annotations

import numpy as np

from gpuemu.errors import Finding
from gpuemu.jit import abi
from gpuemu.memory.trace import SPACE_NAMES


def thread_of(lane_linear: int, block_dim: tuple) -> tuple:
    """(x, y, z) of the thread with linear index lane_linear in its block."""
    bx, by, _ = block_dim
    return (lane_linear % bx, (lane_linear // bx) % by, lane_linear // (bx * by))


def fault_finding(ctx: np.ndarray, meta, block_idx: tuple, warp: int, block_dim: tuple,
                  describe_tag) -> Finding:
    kind = abi.FAULT_KINDS.get(int(ctx[abi.C_FAULT_KIND]), "out_of_bounds")
    lane = int(ctx[abi.C_FAULT_LANE])
    addr = int(ctx[abi.C_FAULT_ADDR])
    code = int(ctx[abi.C_FAULT_SPACE])
    tag = int(ctx[abi.C_FAULT_TAG])
    iid = int(ctx[abi.C_FAULT_INSTR])
    line, file, _ = meta.where(int(ctx[abi.C_FAULT_LINE]))
    instr = meta.instrs[iid] if 0 <= iid < len(meta.instrs) else None
    op = {"ld": "read", "st": "write", "atom": "atomic", "red": "atomic"}.get(
        getattr(instr, "op", ""), "access")
    size = getattr(instr, "size", 0)
    if code >= 0:
        space = SPACE_NAMES.get(code, "generic")
    else:
        space = getattr(instr, "space", "generic")
    if kind == "assert":
        return Finding(kind=kind, message="assertion failed (assert in the kernel)", kernel=meta.name, line=line,
                       block=block_idx, thread=thread_of(warp * abi.WARP + lane, block_dim),
                       extra={"file": file})
    obj = describe_tag(tag)
    if code < 0:
        what = (f"{op} of {size} bytes through a pointer that points to no object "
                f"(address {addr:#x}, tag {tag})")
    elif kind == "misaligned_access":
        what = f"misaligned {op} of {size} bytes at {space} address {addr:#x}"
    else:
        what = f"{op} of {size} bytes at {space} address {addr:#x} outside {obj}"
    return Finding(kind=kind, message=what, kernel=meta.name, line=line, block=block_idx,
                   thread=thread_of(warp * abi.WARP + lane, block_dim), space=space,
                   address=addr, extra={"object": obj, "instr": iid, "size": size, "file": file})


def timeout_finding(meta, block_idx, warp: int, frame: np.ndarray, block_dim, budget: int) -> Finding:
    i32 = frame.view(np.int32)
    line, file, label = meta.where(int(i32[abi.F_EVENT_LINE // 4]))
    cur = int(np.uint32(i32[abi.F_CUR // 4]))
    lane = (cur & -cur).bit_length() - 1 if cur else 0
    return Finding(kind="timeout", kernel=meta.name, line=line, block=block_idx,
                   thread=thread_of(warp * abi.WARP + lane, block_dim),
                   message=f"the loop at {label} ran past the watchdog budget of "
                           f"{budget} loop iterations per warp (launch option budget=)",
                   extra={"budget": budget, "file": file})


def deadlock_finding(meta, block_idx, waiting: list, exited_threads: list, block_dim) -> Finding:
    """waiting: [(warp, barrier's counter row)] of the warps stuck at barriers."""
    waiting = [(w, meta.where(row)) for w, row in waiting]
    lines = sorted({ln for _, (ln, _, _) in waiting})
    desc = ", ".join(f"warp {w} at {label}" for w, (_, _, label) in waiting)
    msg = (f"no warp can move: warps wait at different __syncthreads() barriers "
           f"(lines {', '.join(map(str, lines))}): {desc}")
    if exited_threads:
        msg += f"; {len(exited_threads)} threads have exited"
    w0, (l0, f0, _) = waiting[0]
    return Finding(kind="deadlock", message=msg, kernel=meta.name, line=l0, block=block_idx,
                   thread=thread_of(w0 * abi.WARP, block_dim),
                   extra={"waiting": [{"warp": w, "line": ln, "file": f} for w, (ln, f, _) in waiting],
                          "file": f0,
                          "barrier_lines": lines, "exited_threads": exited_threads})


def barrier_divergence_finding(meta, block_idx, warp: int, lane: int, line: int, active: int,
                               block_dim) -> Finding:
    """Warp `warp` reached the barrier at `line` with only `active` lanes;
    `lane` is the first live lane that did not."""
    line, file, label = meta.where(line)
    return Finding(kind="barrier_divergence", kernel=meta.name, line=line, block=block_idx,
                   thread=thread_of(warp * 32 + lane, block_dim),
                   message=f"__syncthreads() at {label} reached by only part of warp {warp} "
                           f"(active lanes {active:#010x}); thread {thread_of(warp * 32 + lane, block_dim)} "
                           f"did not reach it with them (undefined behaviour in CUDA)",
                   extra={"warp": warp, "active_mask": active, "file": file})
