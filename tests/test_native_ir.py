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
