"""CPython's C API, called from LLVM IR built in this process.

A native function that Python calls as a builtin (jit/direct_call.py, the
launch gate of machine/launch_gate.py) calls back into the interpreter:
to let go of the GIL, read its arguments, build its result. Its IR calls
each C API function at that function's address in this process (ctypes
finds it in the interpreter: ctypes.pythonapi), so the module is built and
compiled once per process, never cached on disk.

SIGNATURES holds each function's type as the C headers declare it, in
letters: p a pointer (PyObject *, char *, ...), q a 64-bit integer
(Py_ssize_t, long long), i a 32-bit int, d a double, v void.
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ll

I32, I64, F64 = ll.IntType(32), ll.IntType(64), ll.DoubleType()
PTR = ll.IntType(8).as_pointer()
_TYPES = {"p": PTR, "q": I64, "i": I32, "d": F64, "v": ll.VoidType()}

# name: (result, arguments[, "..." for a C variadic])
SIGNATURES = {
    "PyEval_SaveThread": ("p", ""),
    "PyEval_RestoreThread": ("v", "p"),
    "PyLong_AsLongLong": ("q", "p"),
    "PyLong_FromLongLong": ("p", "q"),
    "PyFloat_FromDouble": ("p", "d"),
    "PyFloat_AsDouble": ("d", "p"),
    "PyTuple_Size": ("q", "p"),
    "PyTuple_GetItem": ("p", "pq"),         # borrowed
    "PyTuple_Pack": ("p", "q..."),
    "PyList_Size": ("q", "p"),
    "PyList_Append": ("i", "pp"),
    "PyDict_New": ("p", ""),
    "PyDict_Copy": ("p", "p"),
    "PyDict_Size": ("q", "p"),
    "PyDict_GetItem": ("p", "pp"),          # borrowed, no error set
    "PyDict_SetItem": ("i", "ppp"),
    "PyDict_Contains": ("i", "pp"),
    "PyByteArray_AsString": ("p", "p"),
    "PyWeakref_GetObject": ("p", "p"),      # borrowed; None when the referent is gone
    "PyObject_GetAttr": ("p", "pp"),
    "PyObject_SetAttr": ("i", "ppp"),
    "PyObject_GenericSetDict": ("i", "ppp"),
    "PyObject_RichCompareBool": ("i", "ppi"),
    "PyObject_CallNoArgs": ("p", "p"),
    "PyType_GenericNew": ("p", "ppp"),
    "PyErr_Clear": ("v", ""),
    "Py_IncRef": ("v", "p"),
    "Py_DecRef": ("v", "p"),
}


def addresses(names) -> dict:
    """Each named C API function's address in this process (AttributeError
    where the interpreter has no such function)."""
    api = ctypes.pythonapi
    return {n: ctypes.cast(getattr(api, n), ctypes.c_void_p).value for n in names}


def function_type(name: str) -> ll.FunctionType:
    """The IR type of the C API function `name` (SIGNATURES)."""
    ret, args = SIGNATURES[name]
    var = args.endswith("...")
    return ll.FunctionType(_TYPES[ret], [_TYPES[a] for a in args.removesuffix("...")], var_arg=var)


class Caller:
    """Emits calls of C API functions (and other native functions by address)
    into one IRBuilder; the addresses are looked up once, as first called."""

    def __init__(self, builder: ll.IRBuilder) -> None:
        self.b = builder
        self._at: dict = {}

    def __call__(self, name: str, *args):
        """A call of the C API function `name` with IR values `args`."""
        if name not in self._at:
            self._at[name] = addresses([name])[name]
        return self.at(self._at[name], function_type(name), *args)

    def at(self, address: int, ftype: ll.FunctionType, *args):
        """A call of the native function at `address`, of type `ftype`."""
        return self.b.call(self.b.inttoptr(ll.Constant(I64, address), ftype.as_pointer()), list(args))
