"""IRWriter: the loops every native pass writes (memory passes, timing
engine, check walk) do what Python's would."""
import ctypes

import llvmlite.ir as ll

from gpuemu.jit import engine
from gpuemu.jit.ir_writer import I64, IRWriter

_PROTO = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)


def _build() -> str:
    """sum of i in range(n) skipping multiples of 3 and stopping at 10 (a for
    loop with continue and break), plus how often `while k < 4: k += 1` ran,
    plus -1 written through a local initialised from a wrapped constant."""
    m = ll.Module(name="ir_writer_test")
    w = IRWriter(ll.Function(m, ll.FunctionType(I64, [I64]), "gpuemu_test_ir_writer"))
    b = w.b
    total, k = w.var(0), w.var(0)
    minus_one = w.var((1 << 64) - 1)
    with w.loop_blocks(0, w.fn.args[0]) as (i, cont, brk):
        with b.if_then(b.icmp_signed("==", i, ll.Constant(I64, 10))):
            b.branch(brk)
        with b.if_then(b.icmp_signed("==", b.srem(i, ll.Constant(I64, 3)), ll.Constant(I64, 0))):
            b.branch(cont)
        b.store(b.add(b.load(total), i), total)
    with w.while_(lambda: b.icmp_signed("<", b.load(k), ll.Constant(I64, 4))):
        b.store(b.add(b.load(k), ll.Constant(I64, 1)), k)
    b.ret(b.add(b.add(b.load(total), b.load(k)), b.load(minus_one)))
    w.close_entry()
    return str(m)


def _expected(n: int) -> int:
    total = 0
    for i in range(n):
        if i == 10:
            break
        if i % 3 == 0:
            continue
        total += i
    return total + 4 - 1


def test_loops_with_break_and_continue_and_while_do_what_python_does():
    fn = engine.native_function("gpuemu_test_ir_writer", _build, _PROTO)
    for n in (0, 1, 5, 10, 25):
        assert fn(n) == _expected(n)


_PROTO2 = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)


def _build_arith() -> str:
    """min(x, y) + 2 * max(x, y) (signed) + 8 * (x < y) + 16 * popcount(x) (as bits 0-3, 4-...)."""
    m = ll.Module(name="ir_writer_arith_test")
    w = IRWriter(ll.Function(m, ll.FunctionType(I64, [I64, I64]), "gpuemu_test_ir_writer_arith"))
    b = w.b
    x, y = w.fn.args
    lt = b.zext(w.cmp("<", x, y), I64)
    out = b.add(b.add(w.min(x, y), b.mul(w.max(x, y), ll.Constant(I64, 2))),
                b.add(b.mul(lt, ll.Constant(I64, 8)), b.mul(w.popcount(x), ll.Constant(I64, 16))))
    b.ret(out)
    w.close_entry()
    return str(m)


def test_cmp_min_max_are_signed_and_popcount_counts_set_bits():
    fn = engine.native_function("gpuemu_test_ir_writer_arith", _build_arith, _PROTO2)
    for x, y in ((3, 5), (5, 3), (-1, 2), (2, -1), (-7, -7), (0, 0), (0b1011, -4)):
        ones = bin(x & ((1 << 64) - 1)).count("1")
        assert fn(x, y) == min(x, y) + 2 * max(x, y) + 8 * (x < y) + 16 * ones
