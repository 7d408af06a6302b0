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

from . import c_api, engine

I32, I64 = ll.IntType(32), ll.IntType(64)
_METH_NOARGS = 0x0004
METH_FASTCALL = 0x0080
# PyCFunction_NewEx(method def, self, module), called with the GIL held
_NEW_FUNCTION = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)


class MethodDef(ctypes.Structure):
    """CPython's PyMethodDef."""
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def _build_ir(symbol: str, target: int, returns: ll.IntType) -> str:
    """symbol(self, _): the function at `target` called with the int `self`,
    the GIL released around it; its result (of type `returns`) as an int."""
    m = ll.Module(name=symbol)
    fn = ll.Function(m, ll.FunctionType(c_api.PTR, [c_api.PTR, c_api.PTR]), symbol)
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    c = c_api.Caller(b)
    argument = c("PyLong_AsLongLong", fn.args[0])
    state = c("PyEval_SaveThread")
    got = c.at(target, ll.FunctionType(returns, [I64]), argument)
    c("PyEval_RestoreThread", state)
    b.ret(c("PyLong_FromLongLong", got if returns.width == 64 else b.sext(got, I64)))
    return str(m)


def method(symbol: str, target: int, returns: ll.IntType = I64) -> MethodDef:
    """The PyMethodDef of a wrapper named `symbol` of the native function at
    `target` (one int64 argument; an int of `returns`' width back), compiled
    and loaded now; raises where it cannot be made. The caller keeps it for
    the process (every function `bind` makes of it points at it)."""
    return loaded(symbol, _build_ir(symbol, target, returns), _METH_NOARGS)


def loaded(symbol: str, llvm_ir: str, flags: int) -> MethodDef:
    """The PyMethodDef (calling convention `flags`) of the function `symbol`
    of `llvm_ir`, compiled and loaded now; raises where it cannot be made."""
    address = engine.load_object(engine.compile_to_object(llvm_ir), symbol)
    return MethodDef(symbol.encode(), address, flags, None)


_new: list = []          # PyCFunction_NewEx, once looked up


def bind(ml: MethodDef, argument):
    """The builtin function made of `ml` with `argument` as its self (for
    method's wrappers an int64: an address the caller keeps valid while it
    calls); the function holds `argument`, and `ml` must outlive it."""
    if not _new:
        _new.append(_NEW_FUNCTION(c_api.addresses(["PyCFunction_NewEx"])["PyCFunction_NewEx"]))
    return _new[0](ctypes.addressof(ml), argument, None)
