"""The bank arbiter's common case in native code: whole-warp phases, accesses
no wider than a bank ('any' broadcast; every preset from cc2.x on, 1-, 2-
and 4-byte accesses).

The rule is bank_arbiter's (`shared_request_reference` is the readable one,
tests/test_bank_arbiter.py checks this path against it): the active lanes'
bank words are (bank, row) = ((addr // bank_bytes) % banks, addr // row_bytes);
lanes reading one word share it; wavefronts = the most distinct words any
one bank must deliver; ideal = ceil(distinct words / banks); ways =
ceil(wavefronts / ideal) (0 for an empty mask). Bank width, bank count
and row bytes are powers of two on every preset (shifts, not divisions). One call serves a whole
batch, per request a walk over its active lanes that keeps each bank's
distinct rows (O(32) without conflicts).
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import engine

I1, I32, I64 = ll.IntType(1), ll.IntType(32), ll.IntType(64)
P64 = I64.as_pointer()
SYMBOL = "gpuemu_shared_any"
MAX_BANKS = 64
WARP = 32


def _build_ir() -> str:
    m = ll.Module(name="banks")
    ft = ll.FunctionType(ll.VoidType(), [I64, P64, I32.as_pointer(), I64, I64, I64, P64, P64, P64])
    fn = ll.Function(m, ft, SYMBOL)
    n, addr, mask, bank_shift, banks, row_shift, o_wf, o_ideal, o_ways = fn.args
    c = lambda v: ll.Constant(I64, v)  # noqa: E731
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    rows = b.alloca(ll.ArrayType(I64, MAX_BANKS * WARP), name="rows")
    cnt = b.alloca(ll.ArrayType(I64, MAX_BANKS), name="cnt")
    r_v, l_v, k_v = (b.alloca(I64, name=x) for x in ("r", "lane", "k"))
    dist_v, wf_v = b.alloca(I64, name="distinct"), b.alloca(I64, name="wf")
    b.store(c(0), r_v)
    blocks = {name: fn.append_basic_block(name) for name in (
        "req", "req_body", "clear", "clear_body", "lanes", "lane_body", "lane_on", "scan",
        "scan_body", "scan_next", "add", "lane_next", "req_end", "done")}
    B = blocks
    b.branch(B["req"])

    b.position_at_end(B["req"])
    r = b.load(r_v)
    b.cbranch(b.icmp_signed("<", r, n), B["req_body"], B["done"])

    b.position_at_end(B["req_body"])
    b.store(c(0), k_v)
    b.store(c(0), dist_v)
    b.store(c(0), wf_v)
    b.branch(B["clear"])
    b.position_at_end(B["clear"])
    k = b.load(k_v)
    b.cbranch(b.icmp_signed("<", k, banks), B["clear_body"], B["lanes"])
    b.position_at_end(B["clear_body"])
    b.store(c(0), b.gep(cnt, [c(0), k]))
    b.store(b.add(k, c(1)), k_v)
    b.branch(B["clear"])

    b.position_at_end(B["lanes"])
    b.store(c(0), l_v)
    lanes_loop = fn.append_basic_block("lanes_loop")
    b.branch(lanes_loop)
    b.position_at_end(lanes_loop)
    lane = b.load(l_v)
    b.cbranch(b.icmp_signed("<", lane, c(WARP)), B["lane_body"], B["req_end"])

    b.position_at_end(B["lane_body"])
    mk = b.zext(b.load(b.gep(mask, [r])), I64)
    on = b.trunc(b.lshr(mk, lane), I1)
    b.cbranch(on, B["lane_on"], B["lane_next"])

    b.position_at_end(B["lane_on"])
    a = b.load(b.gep(addr, [b.add(b.mul(r, c(WARP)), lane)]))
    word = b.ashr(a, bank_shift)                   # sizes are powers of two (applies())
    bank = b.and_(word, b.sub(banks, c(1)))
    row = b.ashr(b.shl(word, bank_shift), row_shift)
    cnt_p = b.gep(cnt, [c(0), bank])
    have = b.load(cnt_p)
    base = b.mul(bank, c(WARP))
    b.store(c(0), k_v)
    b.branch(B["scan"])

    b.position_at_end(B["scan"])
    k = b.load(k_v)
    b.cbranch(b.icmp_signed("<", k, have), B["scan_body"], B["add"])
    b.position_at_end(B["scan_body"])
    seen = b.load(b.gep(rows, [c(0), b.add(base, k)]))
    b.cbranch(b.icmp_signed("==", seen, row), B["lane_next"], B["scan_next"])
    b.position_at_end(B["scan_next"])
    b.store(b.add(k, c(1)), k_v)
    b.branch(B["scan"])

    b.position_at_end(B["add"])                   # a new word in this bank
    b.store(row, b.gep(rows, [c(0), b.add(base, have)]))
    more = b.add(have, c(1))
    b.store(more, cnt_p)
    b.store(b.add(b.load(dist_v), c(1)), dist_v)
    wf = b.load(wf_v)
    b.store(b.select(b.icmp_signed(">", more, wf), more, wf), wf_v)
    b.branch(B["lane_next"])

    b.position_at_end(B["lane_next"])
    b.store(b.add(lane, c(1)), l_v)
    b.branch(lanes_loop)

    b.position_at_end(B["req_end"])
    wf = b.load(wf_v)
    ideal = b.sdiv(b.add(b.load(dist_v), b.sub(banks, c(1))), banks)
    safe = b.select(b.icmp_signed(">", ideal, c(0)), ideal, c(1))
    ways = b.select(b.icmp_signed(">", ideal, c(0)), b.sdiv(b.add(wf, b.sub(safe, c(1))), safe), c(0))
    b.store(wf, b.gep(o_wf, [r]))
    b.store(ideal, b.gep(o_ideal, [r]))
    b.store(ways, b.gep(o_ways, [r]))
    b.store(b.add(r, c(1)), r_v)
    b.branch(B["req"])

    b.position_at_end(B["done"])
    b.ret_void()
    return str(m)


_P, _N = ctypes.c_void_p, ctypes.c_int64
PROTOTYPE = ctypes.CFUNCTYPE(None, _N, _P, _P, _N, _N, _N, _P, _P, _P)


def applies(mem, size: int) -> bool:
    """Whether this path computes `size`-byte requests under `mem`'s rules."""
    from .bank_arbiter import phase_lanes
    pow2 = all(v > 0 and v & (v - 1) == 0
               for v in (mem.shared_bank_bytes, mem.banks, mem.shared_row_bytes))
    return (pow2 and mem.shared_broadcast != "one_word" and size <= mem.shared_bank_bytes
            and phase_lanes(mem, size) == WARP and mem.banks <= MAX_BANKS)


def shared_any(addr: np.ndarray, mask: np.ndarray, mem) -> tuple:
    """(wavefronts, ideal, ways), int64[N] each, of N requests: addr int64[N,32], mask uint32[N]."""
    addr = np.ascontiguousarray(addr, dtype=np.int64).reshape(-1, WARP)
    mask = np.ascontiguousarray(mask, dtype=np.uint32)
    n = addr.shape[0]
    wf, ideal, ways = (np.zeros(n, dtype=np.int64) for _ in range(3))
    if n:
        engine.native_function(SYMBOL, _build_ir, PROTOTYPE)(
            n, addr.ctypes.data, mask.ctypes.data, mem.shared_bank_bytes.bit_length() - 1,
            mem.banks, mem.shared_row_bytes.bit_length() - 1, wf.ctypes.data, ideal.ctypes.data, ways.ctypes.data)
    return wf, ideal, ways
