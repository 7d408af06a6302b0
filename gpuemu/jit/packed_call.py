"""Calling a native helper with its int64 arguments in one array.

A ctypes call converts every Python int it is given (about a quarter of a
microsecond each): a memory-model pass of 45 arguments paid some 12 us per
batch before its first instruction, more than a small launch's threads cost.
Here a trampoline per argument count, `gpuemu_packed_call_N(fn, argv)`, loads
argv[0..N-1] and calls the function at address `fn` with them (the same
int64(int64 x N) signature, native_ir.prototype's): one ctypes call of two
arguments, the array built in one step (array.array('q'), which takes ints
only: a float is refused, not cut). The result is the
function's, bit for bit (tests/test_jit_packed_call.py).

    call = packed_call.native(SYMBOL, build_ir, nargs)   # engine.native_function's helper, made once
    call(args)       # == engine.native_function(SYMBOL, build_ir, native_ir.prototype(nargs))(*args)

Each call builds its own argument array (block workers call the passes on
their own threads); ctypes releases the GIL for the call.
"""
from __future__ import annotations

import ctypes
from array import array as _int64s

import llvmlite.ir as ll

from . import engine

_I64 = ll.IntType(64)
_TRAMPOLINE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)


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


def trampoline(nargs: int):
    """The ctypes trampoline of nargs arguments: trampoline(fn address, argv address)."""
    return engine.native_function(f"gpuemu_packed_call_{nargs}", lambda: _build_ir(nargs), _TRAMPOLINE)


def entry(symbol: str, build_ir, nargs: int) -> tuple:
    """(trampoline, address) of engine.native_function's helper `symbol`
    of nargs int64 arguments, for a caller that keeps its own argument
    array: trampoline(address, argv address) calls it with argv[0..nargs-1]."""
    fn = engine.native_function(symbol, build_ir, ctypes.CFUNCTYPE(ctypes.c_int64, *([ctypes.c_int64] * nargs)))
    return trampoline(nargs), ctypes.cast(fn, ctypes.c_void_p).value


def caller(fn, nargs: int):
    """A callable taking the argument sequence (len nargs, ints) of `fn`, a
    ctypes function of nargs int64 arguments returning int64, that calls it
    through the trampoline and returns its result. The callable holds `fn`
    (its address alone would not keep it alive); a wrong count of arguments
    or one that is not an int (a float would be cut to an int) is refused
    with TypeError, before the call."""
    argtypes = tuple(getattr(fn, "argtypes", None) or ())
    if (len(argtypes) != nargs or any(t is not ctypes.c_int64 for t in argtypes)
            or getattr(fn, "restype", None) is not ctypes.c_int64):
        raise TypeError(f"packed_call.caller needs a ctypes function of {nargs} int64 arguments "
                        f"returning int64, got one of {len(argtypes)} arguments")
    tramp = trampoline(nargs)
    address = ctypes.cast(fn, ctypes.c_void_p).value

    def call(args) -> int:
        if len(args) != nargs:
            raise TypeError(f"this native function takes {nargs} arguments, got {len(args)}")
        try:
            argv = _int64s("q", args)       # this call's own array: threads may call at once
        except TypeError:
            raise TypeError(_not_int(args)) from None
        return tramp(address, argv.buffer_info()[0])
    call.fn = fn
    return call


def _not_int(args) -> str:
    """What is wrong with arguments array('q') refused: the first that is not an int."""
    for i, a in enumerate(args):
        try:
            _int64s("q", (a,))
        except TypeError:
            return (f"native function argument {i} must be an int, got {type(a).__name__} {a!r}"
                    " (a float is not cut to an int)")
    return "native function arguments must be ints"
