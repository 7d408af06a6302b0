"""direct_call: a native function of one int64 argument called as a builtin function of none."""
from __future__ import annotations

import ctypes
import threading

import llvmlite.ir as ll

from gpuemu.jit import direct_call, engine

I32, I64 = ll.IntType(32), ll.IntType(64)


def _target(symbol: str, returns: ll.IntType, body) -> int:
    """The address of a native `symbol`(int64 x) -> returns, body(builder, x) its value."""
    m = ll.Module(name=symbol)
    f = ll.Function(m, ll.FunctionType(returns, [I64]), symbol)
    b = ll.IRBuilder(f.append_basic_block("entry"))
    b.ret(body(b, f.args[0]))
    fn = engine.native_function(symbol, lambda: str(m), ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64))
    return ctypes.cast(fn, ctypes.c_void_p).value


def test_a_bound_function_calls_its_target_with_its_argument():
    target = _target("gpuemu_test_direct_affine", I64, lambda b, x: b.add(b.mul(x, ll.Constant(I64, 3)),
                                                                             ll.Constant(I64, 1)))
    ml = direct_call.method("gpuemu_test_direct_affine_call", target)
    assert direct_call.bind(ml, 5)() == 16
    assert direct_call.bind(ml, -(1 << 40))() == -3 * (1 << 40) + 1


def test_a_32_bit_result_comes_back_with_its_sign():
    target = _target("gpuemu_test_direct_neg", I32, lambda b, x: b.sub(ll.Constant(I32, 0), b.trunc(x, I32)))
    ml = direct_call.method("gpuemu_test_direct_neg_call", target, I32)
    assert direct_call.bind(ml, 7)() == -7


def test_other_threads_run_while_a_bound_function_runs():
    # the GIL is let go around the call, as a ctypes call lets it go: the target spins until
    # a flag that only another Python thread sets
    flag = (ctypes.c_int64 * 1)()
    target = _target("gpuemu_test_direct_spin", I64, _spin)
    ml = direct_call.method("gpuemu_test_direct_spin_call", target)
    setter = threading.Timer(0.05, flag.__setitem__, (0, 9))
    setter.start()
    got = direct_call.bind(ml, ctypes.addressof(flag))()
    setter.join()
    assert got == 9


def _spin(b: ll.IRBuilder, x):
    """*(int64 *)x once it is not 0 (an atomic load: another thread writes it)."""
    p = b.inttoptr(x, I64.as_pointer())
    loop = b.append_basic_block("spin")
    done = b.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    v = b.load_atomic(p, "monotonic", 8)
    b.cbranch(b.icmp_signed("!=", v, ll.Constant(I64, 0)), done, loop)
    b.position_at_end(done)
    return v
