"""Calling a native helper with its int64 arguments in one array.

A ctypes call converts every Python int it is given (about a quarter of a
microsecond each): a memory-model pass of 45 arguments paid some 12 us per
batch before its first instruction, more than a small launch's threads cost.
Here a trampoline per argument count, `gpuemu_packed_call_N(fn, argv)`, loads
argv[0..N-1] and calls the function at address `fn` with them (the same
int64(int64 x N) signature, native_ir.prototype's): one ctypes call of two
arguments, the array filled by numpy in one step. The result is the
function's, bit for bit (tests/test_jit_packed_call.py).

    call = packed_call.native(SYMBOL, build_ir, nargs)   # engine.native_function's helper, made once
    call(args)       # == engine.native_function(SYMBOL, build_ir, native_ir.prototype(nargs))(*args)

Each thread fills its own argument array (block workers call the passes
on their own threads); ctypes releases the GIL for the call.
"""
from __future__ import annotations

import ctypes
import threading

import llvmlite.ir as ll
import numpy as np

from . import engine

_I64 = ll.IntType(64)
_TRAMPOLINE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_local = threading.local()


def _build_ir(nargs: int) -> str:
    """gpuemu_packed_call_N(fn, argv) = fn(argv[0], ..., argv[N-1])."""
    m = ll.Module(name=f"packed_call_{nargs}")
    f = ll.Function(m, ll.FunctionType(_I64, [_I64, _I64]), f"gpuemu_packed_call_{nargs}")
    b = ll.IRBuilder(f.append_basic_block("entry"))
    fn, argv = f.args
    p = b.inttoptr(argv, _I64.as_pointer())
    args = [b.load(b.gep(p, [ll.Constant(_I64, i)])) for i in range(nargs)]
    target = b.inttoptr(fn, ll.FunctionType(_I64, [_I64] * nargs).as_pointer())
    b.ret(b.call(target, args))
    return str(m)


def _argv(nargs: int) -> tuple:
    """This thread's argument array of at least nargs int64, and its address."""
    got = getattr(_local, "argv", None)
    if got is None or got[0].size < nargs:
        a = np.zeros(max(nargs, 64), dtype=np.int64)
        got = _local.argv = (a, a.ctypes.data)
    return got


_callers: dict = {}


def native(symbol: str, build_ir, nargs: int):
    """The packed caller (`caller`) of engine.native_function's helper
    `symbol` of nargs int64 arguments, made once per process."""
    call = _callers.get(symbol)
    if call is None:
        fn = engine.native_function(symbol, build_ir, ctypes.CFUNCTYPE(ctypes.c_int64,
                                                                         *([ctypes.c_int64] * nargs)))
        call = _callers[symbol] = caller(fn, nargs)
    return call


def caller(fn, nargs: int):
    """A callable taking the argument sequence (len nargs, ints) of `fn`, a
    ctypes function of nargs int64 arguments returning int64, that calls it
    through the trampoline and returns its result."""
    tramp = engine.native_function(f"gpuemu_packed_call_{nargs}", lambda: _build_ir(nargs), _TRAMPOLINE)
    address = ctypes.cast(fn, ctypes.c_void_p).value

    def call(args) -> int:
        if len(args) != nargs:
            raise TypeError(f"this native function takes {nargs} arguments, got {len(args)}")
        a, p = _argv(nargs)
        a[:nargs] = args
        return tramp(address, p)
    return call
