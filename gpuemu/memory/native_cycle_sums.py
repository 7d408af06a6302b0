"""A charged batch's memory cycles summed per SM, per warp and per source
line in one native pass (MemorySystem.apply; its numpy form is the
bincount / np.unique path there, which tests/test_request_table.py checks
this against).

Per request i, in order: sm_cycles[sm[i] % nsm] += cycles[i]; its
request_table row counts it as seen and adds its cycles; consecutive
requests of one warp (key block * 4096 + warp) form one run with their
summed cycles. The runs come back as (keys, sums): a warp may have several
runs, MemorySystem.warp_cycles adds them up.
"""
from __future__ import annotations

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import packed_call
from gpuemu.jit.engine import address

from .native_ir import I32, Fn, c
from .request_table import BATCH_ARGS, COL, NC, batch_addresses, emit_request

SYMBOL = "gpuemu_cycle_sums"
ARGS = BATCH_ARGS + ("cycles", "nsm", "sm_cycles", "table", "keys", "sums")


def _build_ir() -> str:
    m = ll.Module(name="cycle_sums")
    f = Fn(m, SYMBOL, ARGS)
    A, b = f.arg, f.b
    keys, sums, table = f.ptr("keys"), f.ptr("sums"), f.ptr("table")
    runs = f.var(0)
    with f.loop(0, A["n"]) as i:
        cyc = f.ld(f.ptr("cycles"), i)
        f.add_to(f.ptr("sm_cycles"), f.mod(f.ld(f.ptr("sm", I32), i), A["nsm"]), cyc)
        rb = b.mul(emit_request(f, i)["row"], c(NC))
        f.add_to(table, b.add(rb, c(COL["seen"])), 1)
        f.add_to(table, b.add(rb, c(COL["cycles"])), cyc)
        key = b.add(b.mul(f.ld(f.ptr("block", I32), i), c(4096)), f.ld(f.ptr("warp", I32), i))
        r = f.get(runs)
        with f.if_(b.or_(f.cmp("==", r, 0), f.cmp("!=", key, f.ld(keys, f.max(b.sub(r, c(1)), 0))))):
            f.st(keys, r, key)
            f.st(sums, r, 0)
            f.inc(runs)
        f.add_to(sums, b.sub(f.get(runs), c(1)), cyc)
    f.ret(f.get(runs))
    f.finish()
    return str(m)


def cycle_sums(arrays: tuple, cycles: np.ndarray, sm_cycles: np.ndarray, table: np.ndarray) -> tuple:
    """Add a batch's (request_table.batch_arrays) cycles (int64[N]) into
    sm_cycles (int64[num SMs]) and `table`; returns the warp runs (keys,
    sums), int64 each."""
    n = arrays[0].size
    keys = np.empty(n, dtype=np.int64)
    sums = np.empty(n, dtype=np.int64)
    for a in (cycles, sm_cycles, table):
        if a.dtype != np.int64 or not a.flags.c_contiguous:
            raise ValueError("cycle_sums: cycles, sm_cycles and table must be C-contiguous int64")
    runs = packed_call.native(SYMBOL, _build_ir, len(ARGS))((   # one array of arguments: packed_call.py
        *batch_addresses(arrays), address(cycles), sm_cycles.size, address(sm_cycles),
        address(table), address(keys), address(sums)))
    return keys[:runs], sums[:runs]


BUSIEST_SYMBOL = "gpuemu_busiest_sm"
BUSIEST_ARGS = ("sm_cycles", "issue", "n", "div")


def _build_busiest_ir() -> str:
    """busiest(sm_cycles, issue, n, div): max over i < n of sm_cycles[i] +
    issue[i] / div (n >= 1; issue >= 0, div >= 1: floor division): a
    launch's functional-mode cycles, its issue cycles the warp instructions
    over the SM's warp schedulers (MemorySystem.finish)."""
    m = ll.Module(name="busiest_sm")
    f = Fn(m, BUSIEST_SYMBOL, BUSIEST_ARGS)
    A, b = f.arg, f.b
    at = lambda i: b.add(f.ld(f.ptr("sm_cycles"), i), b.sdiv(f.ld(f.ptr("issue"), i), A["div"]))  # noqa: E731
    best = f.var(at(c(0)))
    with f.loop(1, A["n"]) as i:
        f.set(best, f.max(f.get(best), at(i)))
    f.ret(f.get(best))
    f.finish()
    return str(m)
