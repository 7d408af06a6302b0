"""Turn what a stopped warp left in ctx and its frame into a Finding."""
from __future__ import annotations

from typing import Optional

import numpy as np

from gpuemu.errors import Finding
from gpuemu.jit import abi
from gpuemu.memory.trace import SPACE_NAMES


def thread_of(lane_linear: int, block_dim: tuple) -> tuple:
    """(x, y, z) of the thread with linear index lane_linear in its block."""
    bx, by, _ = block_dim
    return (lane_linear % bx, (lane_linear // bx) % by, lane_linear // (bx * by))


def static_object(meta, shared_dynamic: int, tag: int) -> Optional[tuple]:
    """(description, lo) of the kernel's shared array or local object of
    static `tag` ("the shared array 's' [0, 128)"), or None."""
    for t, name, space, lo, hi, dynamic in meta.objects:
        if t == tag:
            if dynamic:
                return f"the dynamic shared memory [{lo}, {lo + shared_dynamic})", lo
            return f"the {space} array '{name}' [{lo}, {hi})", lo
    return None


def object_at(meta, shared_dynamic: int, space: str, addr: int) -> Optional[tuple]:
    """(description, lo) of the shared array or local object holding byte
    `addr` of its space, or None."""
    for t, _, sp, lo, hi, dynamic in meta.objects:
        if sp == space and lo <= addr < (lo + shared_dynamic if dynamic else hi):
            return static_object(meta, shared_dynamic, t)
    return None


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
        # address: the string id of the condition's text (api.py words the message)
        return Finding(kind=kind, message="assertion failed (assert in the kernel)", kernel=meta.name, line=line,
                       block=block_idx, thread=thread_of(warp * abi.WARP + lane, block_dim),
                       extra={"file": file, "text_id": addr})
    obj = describe_tag(tag)
    below = _wrapped_below(meta, tag, addr)
    if below is not None:
        # a pointer moved below its object's address 0 borrows from the tag
        # bits: it names the tag before its own, at an address near 2^48
        back, obj = below, describe_tag(tag + 1)
        space = next(o[2] for o in meta.objects if o[0] == tag + 1)
        addr = addr - (1 << abi.ADDR_BITS)
        what = f"{op} of {size} bytes at {space} address -{-addr:#x}, {back} bytes before {obj}"
    elif code < 0:
        what = (f"{op} of {size} bytes through a pointer that points to no object "
                f"(address {addr:#x})")
    elif kind == "misaligned_access":
        what = f"misaligned {op} of {size} bytes at {space} address {addr:#x}"
    elif kind == "constant_write":
        what = (f"{op} of {size} bytes at constant address {addr:#x} in {obj}: constant memory "
                f"is read-only in device code (a pointer cast from a __constant__ object)")
    else:
        what = f"{op} of {size} bytes at {space} address {addr:#x} outside {obj}"
    return Finding(kind=kind, message=what, kernel=meta.name, line=line, block=block_idx,
                   thread=thread_of(warp * abi.WARP + lane, block_dim), space=space,
                   address=addr, extra={"object": obj, "instr": iid, "size": size, "file": file})


def _wrapped_below(meta, tag: int, addr: int):
    """Bytes below the start of the kernel's shared array or local object
    whose tag follows `tag`, where (tag, addr) is such a pointer moved below
    address 0 (an index of -1 into the first shared or local array), else None."""
    top = 1 << abi.ADDR_BITS
    for t, _, _, lo, _, _ in meta.objects:
        if t == tag + 1 and addr >= top - (1 << 32):
            return lo + top - addr
    return None


def _lanes(mask: int) -> str:
    lanes = [i for i in range(32) if mask >> i & 1]
    if lanes and lanes == list(range(lanes[0], lanes[-1] + 1)):
        return f"{lanes[0]}-{lanes[-1]}" if len(lanes) > 1 else str(lanes[0])
    return f"{mask:#010x}"


def spin_finding(meta, block_idx, warp: int, row: np.ndarray, block_dim, budget: int,
                 waiting: list, its: bool, exited_threads: list = ()) -> Finding:
    """A warp spent the watchdog budget in a loop (row: its frame as int32).

    deadlock when what it waits for can never come: other warps of the block
    wait at a barrier it has not reached, or (before sm_70, without
    independent thread scheduling) lanes of its own warp are parked outside
    the loop, which a SIMT reconvergence stack runs only after the loop ends.
    Otherwise timeout: a loop that does not end."""
    line, file, label = meta.where(int(row[abi.F_EVENT_LINE // 4]))
    cur = int(np.uint32(row[abi.F_CUR // 4]))
    live = int(np.uint32(row[abi.F_VALID // 4])) & ~int(np.uint32(row[abi.F_EXITED // 4]))
    parked = live & ~cur & 0xFFFFFFFF
    lane = (cur & -cur).bit_length() - 1 if cur else 0
    thread = thread_of(warp * abi.WARP + lane, block_dim)
    extra = {"budget": budget, "file": file, "warp": warp, "spinning_lanes": cur,
             "parked_lanes": parked, "exited_threads": list(exited_threads),
             "waiting": [{"warp": w, "line": meta.where(ln)[0]} for w, ln in waiting]}
    if waiting:
        bl = sorted({meta.where(ln)[0] for _, ln in waiting})
        ws = ", ".join(str(w) for w, _ in waiting)
        return Finding(kind="deadlock", kernel=meta.name, line=line, block=block_idx, thread=thread,
                       message=f"no warp can make progress: warp {warp} spins in the loop at {label} "
                               f"(past the watchdog budget of {budget} iterations) while warps {ws} "
                               f"wait at __syncthreads() (line {', '.join(map(str, bl))}) for it"
                               + (f"; {len(exited_threads)} threads have exited" if exited_threads else ""),
                       extra=dict(extra, barrier_lines=bl))
    if parked and not its:
        return Finding(kind="deadlock", kernel=meta.name, line=line, block=block_idx, thread=thread,
                       message=f"intra-warp deadlock: lanes {_lanes(cur)} of warp {warp} spin in the "
                               f"loop at {label} while lanes {_lanes(parked)} of the same warp, parked "
                               f"outside it, are what they wait for; before sm_70 a diverged warp runs "
                               f"one path at a time and reconverges after the loop (SIMT stack), so "
                               f"those lanes never run (independent thread scheduling on sm_70+ "
                               f"lets this complete)",
                       extra=extra)
    return Finding(kind="timeout", kernel=meta.name, line=line, block=block_idx, thread=thread,
                   message=f"the loop at {label} ran past the watchdog budget of "
                           f"{budget} loop iterations per warp (launch option budget=)",
                   extra=extra)


def resident_deadlock_finding(meta, block_idx, row: np.ndarray, block_dim, line: int, others: list,
                              waits_on, limit: int, budget: int) -> Finding:
    """Every block resident on the device spins and none can move: each ran
    again and left its warps, its shared memory and the global memory as
    they were (machine/resident_blocks.py), and then a warp of block_idx
    spent its watchdog budget. row: that warp's frame (int32), line: its
    loop's counter row; others: the other spinning blocks; waits_on: the
    next block of the launch, where it could not start for want of room on
    the device (`limit` blocks fit)."""
    ln, file, label = meta.where(line)
    warp = int(row[abi.F_WARP // 4])
    cur = int(np.uint32(row[abi.F_CUR // 4]))
    lane = (cur & -cur).bit_length() - 1 if cur else 0
    thread = thread_of(warp * abi.WARP + lane, block_dim)
    named = ", ".join(str(tuple(b)) for b in others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    also = f"; blocks {named} spin too" if others else ""
    if waits_on is not None:
        msg = (f"no resident block can make progress: block {tuple(block_idx)} spins in the loop at "
               f"{label} (past the watchdog budget of {budget} iterations) and waits on block "
               f"{tuple(waits_on)}, which is not resident alongside it: "
               f"{limit} blocks fit on the device{also}")
    else:
        msg = (f"no block can make progress: block {tuple(block_idx)} spins in the loop at {label} "
               f"(past the watchdog budget of {budget} iterations) and every other block has "
               f"finished or spins without effect{also}")
    return Finding(kind="deadlock", kernel=meta.name, line=ln, block=tuple(block_idx), thread=thread,
                   message=msg, extra={"file": file, "warp": warp, "budget": budget, "resident_blocks": limit,
                                       "spinning_blocks": [tuple(b) for b in others],
                                       "waits_on": tuple(waits_on) if waits_on is not None else None})


def barrier_mismatch_finding(meta, block_idx, waiting: list, block_dim) -> Finding:
    """waiting: [(warp, barrier's counter row)] of warps stuck at different barriers."""
    waiting = [(w, meta.where(row)) for w, row in waiting]
    lines = sorted({ln for _, (ln, _, _) in waiting})
    desc = ", ".join(f"warp {w} at {label}" for w, (_, _, label) in waiting)
    w0, (l0, f0, _) = min(waiting, key=lambda x: x[1][0])
    return Finding(kind="barrier_divergence", kernel=meta.name, line=l0, block=block_idx,
                   thread=thread_of(w0 * abi.WARP, block_dim),
                   message=f"warps of one block wait at different __syncthreads() (lines "
                           f"{', '.join(map(str, lines))}): {desc}; the condition or loop trip count "
                           f"around them is not uniform across the block (undefined in CUDA; the "
                           f"hardware barrier counts arrivals and lets them all go on)",
                   extra={"waiting": [{"warp": w, "line": ln, "file": f} for w, (ln, f, _) in waiting],
                          "file": f0, "barrier_lines": lines})


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
