"""IRWriter: what every hand-written native pass needs from llvmlite, once.

The native passes (the memory model's, gpuemu/memory/native_*.py; the
timing engine, gpuemu/timing/native_engine.py; the check walk,
gpuemu/check/block_scan.py) are llvmlite functions written from Python.
Each needs local variables (allocas in the entry block, so LLVM's mem2reg
turns them into registers) and structured loops; this is that part, and
each pass's writer adds its own loads, stores and shorthands on top.
"""
from __future__ import annotations

from contextlib import contextmanager

import llvmlite.ir as ll

I64 = ll.IntType(64)


def signed64(v: int) -> int:
    """`v` wrapped to a signed 64-bit integer (as C casts it)."""
    v = int(v) & ((1 << 64) - 1)
    return v - (1 << 64) if v >= 1 << 63 else v


def c(v: int) -> ll.Constant:
    """An int64 constant (wrapped to signed)."""
    return ll.Constant(I64, signed64(v))


def _v(x):
    """A value as is, a Python int as an int64 constant (wrapped to signed)."""
    return x if isinstance(x, ll.Value) else c(x)


class IRWriter:
    """An IRBuilder over `fn`, positioned in its body block; `close_entry()`
    (from the writer's finish) branches the entry block to the body."""

    def __init__(self, fn: ll.Function) -> None:
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        self.body = fn.append_basic_block("body")
        self.b = ll.IRBuilder(self.body)

    def var(self, init=None, ty=I64):
        """A local of type `ty` (an alloca in the entry block), set to `init` here."""
        v = ll.IRBuilder(self.entry).alloca(ty)
        if init is not None:
            self.b.store(_v(init), v)
        return v

    def close_entry(self) -> None:
        ll.IRBuilder(self.entry).branch(self.body)

    @contextmanager
    def loop_blocks(self, lo, hi):
        """for i in range(lo, hi) (hi read once): yields (i, continue block,
        break block); a body that ends in a branch of its own is left so."""
        b = self.b
        iv = self.var(lo)
        hi = _v(hi)
        head, body, step, end = (self.fn.append_basic_block(n) for n in ("for", "for_body", "for_step", "for_end"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(iv)
        b.cbranch(b.icmp_signed("<", i, hi), body, end)
        b.position_at_end(body)
        yield i, step, end
        if not b.block.is_terminated:
            b.branch(step)
        b.position_at_end(step)
        b.store(b.add(b.load(iv), ll.Constant(I64, 1)), iv)
        b.branch(head)
        b.position_at_end(end)

    @contextmanager
    def loop(self, lo, hi):
        """for i in range(lo, hi): yields i."""
        with self.loop_blocks(lo, hi) as (i, _step, _end):
            yield i

    @contextmanager
    def while_blocks(self, cond_fn):
        """while cond_fn(): (cond_fn emits the test in the loop's head) yields
        (head block, block after the loop)."""
        b = self.b
        head, body, end = (self.fn.append_basic_block(n) for n in ("while", "while_body", "while_end"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(cond_fn(), body, end)
        b.position_at_end(body)
        yield head, end
        if not b.block.is_terminated:
            b.branch(head)
        b.position_at_end(end)

    @contextmanager
    def while_(self, cond_fn):
        """while cond_fn(): ..."""
        with self.while_blocks(cond_fn):
            yield

    # int64 arithmetic (Python ints become constants)
    def cmp(self, op: str, x, y):
        """x op y, signed ("<", "<=", ">", ">=", "==", "!=")."""
        return self.b.icmp_signed(op, _v(x), _v(y))

    def max(self, x, y):
        x, y = _v(x), _v(y)
        return self.b.select(self.b.icmp_signed(">", x, y), x, y)

    def min(self, x, y):
        x, y = _v(x), _v(y)
        return self.b.select(self.b.icmp_signed("<", x, y), x, y)

    def popcount(self, x):
        """The number of set bits of x."""
        m = self.fn.module
        fn = m.globals.get("llvm.ctpop.i64") or m.declare_intrinsic("llvm.ctpop", [I64])
        return self.b.call(fn, [_v(x)])
