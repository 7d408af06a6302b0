"""A native function of one int64 argument, called as a builtin function of none.

A ctypes call costs about half a microsecond (its argument converted,
libffi's frame). Where Python calls one native function with the same
argument again and again (a kept launch's range loop, machine/block_runner.py;
a packed_call.Chain: every batch charged and every launch ended with
counters), a builtin function (CPython's PyCFunction, METH_NOARGS) bound
to that argument as an int makes the same call for a fraction of that:
its wrapper, compiled once per target, reads the int, lets go of the GIL
around the call (as a ctypes call does) and returns the result as an int.
A caller that cannot have one (no CPython C API at hand, or the wrapper
failed to build: `method` raises) keeps its ctypes call.
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ll

from . import engine

I32, I64 = ll.IntType(32), ll.IntType(64)
_METH_NOARGS = 0x0004
_C_API = ("PyEval_SaveThread", "PyEval_RestoreThread", "PyLong_AsLongLong", "PyLong_FromLongLong")
# PyCFunction_NewEx(method def, self, module), called with the GIL held
_NEW_FUNCTION = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)


class MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def _c_api() -> dict:
    """The addresses of the C API functions the wrapper calls, and PyCFunction_NewEx's."""
    api = ctypes.pythonapi
    return {n: ctypes.cast(getattr(api, n), ctypes.c_void_p).value for n in _C_API + ("PyCFunction_NewEx",)}


def _build_ir(symbol: str, target: int, returns: ll.IntType, c_api: dict) -> str:
    """symbol(self, _): the function at `target` called with the int `self`,
    the GIL released around it; its result (of type `returns`) as an int."""
    m = ll.Module(name=symbol)
    i8p = ll.IntType(8).as_pointer()
    fn = ll.Function(m, ll.FunctionType(i8p, [i8p, i8p]), symbol)
    b = ll.IRBuilder(fn.append_basic_block("entry"))

    def at(address, ret, *args):
        return b.inttoptr(ll.Constant(I64, address), ll.FunctionType(ret, args).as_pointer())

    def c(name, ret, *args):
        return at(c_api[name], ret, *args)
    argument = b.call(c("PyLong_AsLongLong", I64, i8p), [fn.args[0]])
    state = b.call(c("PyEval_SaveThread", i8p), [])
    got = b.call(at(target, returns, I64), [argument])
    b.call(c("PyEval_RestoreThread", ll.VoidType(), i8p), [state])
    b.ret(b.call(c("PyLong_FromLongLong", i8p, I64), [got if returns.width == 64 else b.sext(got, I64)]))
    return str(m)


def method(symbol: str, target: int, returns: ll.IntType = I64) -> MethodDef:
    """The PyMethodDef of a wrapper named `symbol` of the native function at
    `target` (one int64 argument; an int of `returns`' width back), compiled
    and loaded now; raises where it cannot be made. The caller keeps it for
    the process (every function `bind` makes of it points at it)."""
    c_api = _c_api()
    address = engine.load_object(engine.compile_to_object(_build_ir(symbol, target, returns, c_api)), symbol)
    return MethodDef(symbol.encode(), address, _METH_NOARGS, None)


_new: list = []          # PyCFunction_NewEx, once looked up


def bind(ml: MethodDef, argument: int):
    """The builtin function of no arguments that calls ml's target with
    `argument` (an int64: an address the caller keeps valid while it calls)."""
    if not _new:
        _new.append(_NEW_FUNCTION(_c_api()["PyCFunction_NewEx"]))
    return _new[0](ctypes.addressof(ml), argument, None)
