"""native_ir: the writing aid of the memory model's native passes builds
functions whose loops and branches do what they say."""
import llvmlite.ir as ll
import numpy as np

from gpuemu.jit import engine
from gpuemu.memory.native_ir import Fn, prototype


def _build() -> str:
    m = ll.Module(name="native_ir_test")
    f = Fn(m, "gpuemu_test_native_ir", ("n", "out"))
    b, out = f.b, f.ptr("out")
    total, k = f.var(0), f.var(0)
    with f.loop(0, f.arg["n"]) as i:
        with f.if_else(f.cmp("==", b.srem(i, ll.Constant(ll.IntType(64), 2)), 0)) as (even, odd):
            with even:
                f.inc(total, i)
            with odd:
                f.st(out, i, f.popcount(i))
    with f.while_(lambda: f.cmp("<", f.get(k), 3)):
        f.inc(k)
    f.ret(b.add(f.get(total), f.max(f.get(k), f.min(1, 2))))
    f.finish()
    return str(m)


def test_loops_branches_and_helpers():
    fn = engine.native_function("gpuemu_test_native_ir", _build, prototype(2))
    out = np.zeros(10, dtype=np.int64)
    assert fn(10, out.ctypes.data) == (0 + 2 + 4 + 6 + 8) + 3
    assert out.tolist() == [0, 1, 0, 2, 0, 2, 0, 3, 0, 2]


def _build_vector() -> str:
    m = ll.Module(name="native_ir_vector_test")
    f = Fn(m, "gpuemu_test_native_ir_vector", ("a", "out"))
    b, out = f.b, f.ptr("out")
    v = b.load(b.bitcast(f.ptr("a"), ll.VectorType(ll.IntType(64), 8).as_pointer()), align=8)
    for k, op in enumerate(("smin", "smax", "umax", "or")):
        f.st(out, k, f.reduce(op, v))
    f.finish()
    return str(m)


def test_vector_reductions():
    fn = engine.native_function("gpuemu_test_native_ir_vector", _build_vector, prototype(2))
    a = np.array([12, -3, 40, 8, 4, 96, 0, 20], dtype=np.int64)
    out = np.zeros(4, dtype=np.int64)
    fn(a.ctypes.data, out.ctypes.data)
    want_or = int(np.bitwise_or.reduce(a))
    assert out.tolist() == [-3, 96, -3, want_or]
