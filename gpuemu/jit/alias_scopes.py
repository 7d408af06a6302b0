"""Tell LLVM that a warp function's frame and its per-line counters never overlap.

Every counted operation adds to its line's counters (ctx C_COUNTERS, a numpy
array of its own) and to the frame's F_ICOUNT (warp_codegen.tick): three
read-modify-writes of memory. The frame is passed on to the helpers, so LLVM
cannot tell the counters (a pointer read from ctx) from the frame, and every
add stays a load and a store waiting on the one before (store-to-load
forwarding, several cycles each). Scoped no-alias metadata (LLVM LangRef,
"Scoped-noalias metadata") on every access of the frame (through pointers
computed from the function's frame argument) and of the counters puts them in
two scopes that do not alias, so LLVM adds the counts of a block's
operations in registers and stores them once.
"""
from __future__ import annotations

import llvmlite.ir as ll

_ADDRESS_OPS = ("getelementptr", "bitcast")


def _derived(fn: ll.Function, root) -> set:
    """Ids of the values computed from `root` by pointer arithmetic and casts only."""
    seen = {id(root)}
    for block in fn.blocks:
        for ins in block.instructions:
            if ins.opname in _ADDRESS_OPS and ins.operands and id(ins.operands[0]) in seen:
                seen.add(id(ins))
    return seen


def tag(fn: ll.Function, frame, counters) -> None:
    """Put fn's loads and stores through `frame` (its frame argument) and
    through `counters` (the counter array's pointer) in two scopes that do
    not alias each other."""
    m = fn.module
    domain = m.add_metadata([ll.MetaDataString(m, "gpuemu warp function")])
    scopes = {name: m.add_metadata([ll.MetaDataString(m, name), domain]) for name in ("frame", "counters")}
    own = {name: m.add_metadata([s]) for name, s in scopes.items()}
    by_pointer = {"frame": _derived(fn, frame), "counters": _derived(fn, counters)}
    other = {"frame": "counters", "counters": "frame"}
    for block in fn.blocks:
        for ins in block.instructions:
            if ins.opname == "load":
                ptr = ins.operands[0]
            elif ins.opname == "store":
                ptr = ins.operands[1]
            else:
                continue
            for name, ids in by_pointer.items():
                if id(ptr) in ids:
                    ins.set_metadata("alias.scope", own[name])
                    ins.set_metadata("noalias", own[other[name]])
