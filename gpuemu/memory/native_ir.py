"""A small writing aid for the memory model's native passes (llvmlite IR).

Every native pass of gpuemu/memory takes int64 arguments only (array
addresses come as integers, from numpy's `.ctypes.data`) and returns an
int64; `Fn` names the arguments, turns an address into a typed pointer once
(in the entry block) and gives loops and branches as context managers, so
a pass reads close to the plain-Python rule it implements. Built through
engine.native_function (compiled once per process; ctypes releases the GIL).
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.ir as ll

from gpuemu.jit.ir_writer import IRWriter, _v, c  # noqa: F401 (c: the passes' constants)
from gpuemu.jit.c_semantics import vector_reduce

I1, I8, I32, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(32), ll.IntType(64)


@functools.lru_cache(maxsize=None)
def prototype(nargs: int):
    """The ctypes type of a pass with `nargs` int64 arguments."""
    return ctypes.CFUNCTYPE(ctypes.c_int64, *([ctypes.c_int64] * nargs))


class Fn(IRWriter):
    """One function of int64 arguments `params`, returning int64 (its
    locals and loops: IRWriter)."""

    def __init__(self, module: ll.Module, name: str, params, internal: bool = False) -> None:
        fn = ll.Function(module, ll.FunctionType(I64, [I64] * len(params)), name)
        if internal:
            fn.linkage = "internal"
        super().__init__(fn)
        self.module = module
        self.arg = dict(zip(params, fn.args))
        self._ptrs: dict = {}

    def ptr(self, name: str, ty=I64):
        """Argument `name` (an address) as a pointer to `ty`."""
        if (name, ty) not in self._ptrs:
            self._ptrs[name, ty] = ll.IRBuilder(self.entry).inttoptr(self.arg[name], ty.as_pointer())
        return self._ptrs[name, ty]

    def array(self, n: int, ty=I64):
        """A local array of n values (its element pointer)."""
        eb = ll.IRBuilder(self.entry)
        return eb.gep(eb.alloca(ll.ArrayType(ty, n)), [c(0), c(0)])

    # memory
    def ld(self, p, i, ty=I64):
        """p[i], widened to int64 (signed, or unsigned for 32-bit masks: see ldu)."""
        v = self.b.load(self.b.gep(p, [_v(i)]))
        return v if v.type == I64 else self.b.sext(v, I64)

    def ldu(self, p, i):
        v = self.b.load(self.b.gep(p, [_v(i)]))
        return v if v.type == I64 else self.b.zext(v, I64)

    def st(self, p, i, v) -> None:
        ty = p.type.pointee
        v = _v(v)
        if ty != I64:
            v = self.b.trunc(v, ty)
        self.b.store(v, self.b.gep(p, [_v(i)]))

    def add_to(self, p, i, v) -> None:
        q = self.b.gep(p, [_v(i)])
        self.b.store(self.b.add(self.b.load(q), _v(v)), q)

    def get(self, var):
        return self.b.load(var)

    def set(self, var, v) -> None:
        self.b.store(_v(v), var)

    def inc(self, var, v=1) -> None:
        self.b.store(self.b.add(self.b.load(var), _v(v)), var)

    # control flow (loop, while_: IRWriter)
    def if_(self, cond):
        return self.b.if_then(cond)

    def if_else(self, cond):
        return self.b.if_else(cond)

    def ret(self, v=0) -> None:
        self.b.ret(_v(v))

    def finish(self) -> None:
        """Close the function (falls through to `return 0`)."""
        if not self.b.block.is_terminated:
            self.b.ret(c(0))
        self.close_entry()

    # arithmetic (cmp, max, min, popcount: IRWriter)
    def mod(self, x, n):
        """x mod n for x >= 0, n > 0, dividing only when x >= n (an SM
        number below the SM count, a set below the set count: most often)."""
        out = self.var(x)
        with self.if_(self.b.icmp_unsigned(">=", _v(x), _v(n))):
            self.set(out, self.b.urem(_v(x), _v(n)))
        return self.get(out)

    def reduce(self, op: str, v):
        """llvm.vector.reduce.OP ('or', 'umin', 'smax', ...) of an integer
        vector v: one value of its element type."""
        return vector_reduce(self.b, op, v)

    def call(self, other: "Fn", *args):
        return self.b.call(other.fn, [_v(a) for a in args])
