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

A caller that calls a helper again and again keeps its arguments instead
(`PackedCall`: the argument array by name, set where they change), and a
caller of several helpers in a row calls them in one native call (`Chain`:
each helper, unless skipped, then the next; a guard step may stop the
chain, which is resumed later from a given step, or skip later steps),
itself called as a builtin function bound to its table (direct_call.py:
a quarter of a ctypes call's cost), where that can be made.
"""
from __future__ import annotations

import ctypes
import threading
from array import array as _int64s

import llvmlite.ir as ll
import numpy as np

from . import direct_call, engine

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


def _function(symbol: str, build_ir, nargs: int):
    """engine.native_function's helper `symbol` of nargs int64 arguments returning int64."""
    return engine.native_function(symbol, build_ir, ctypes.CFUNCTYPE(ctypes.c_int64, *([ctypes.c_int64] * nargs)))


def native(symbol: str, build_ir, nargs: int):
    """The packed caller (`caller`) of engine.native_function's helper
    `symbol` of nargs int64 arguments, made once per process."""
    call = _callers.get(symbol)
    if call is None:
        call = _callers[symbol] = caller(_function(symbol, build_ir, nargs), nargs)
    return call


def trampoline(nargs: int):
    """The ctypes trampoline of nargs arguments: trampoline(fn address, argv address)."""
    return engine.native_function(f"gpuemu_packed_call_{nargs}", lambda: _build_ir(nargs), _TRAMPOLINE)


def entry(symbol: str, build_ir, nargs: int) -> tuple:
    """(trampoline, address) of engine.native_function's helper `symbol`
    of nargs int64 arguments, for a caller that keeps its own argument
    array: trampoline(address, argv address) calls it with argv[0..nargs-1]."""
    return trampoline(nargs), ctypes.cast(_function(symbol, build_ir, nargs), ctypes.c_void_p).value


class PackedCall:
    """A native helper `symbol` (engine.native_function's, of the int64
    arguments `names`) with its argument array kept: set an argument by
    name (`call["n"] = 5`) where it changes, call it with `call()`. Every
    argument must be given a value (`values`, by name) when it is made."""

    def __init__(self, symbol: str, build_ir, names: tuple, values: dict) -> None:
        missing = [name for name in names if name not in values]
        if missing:
            raise ValueError(f"{symbol}: no value for {', '.join(missing)}")
        self.symbol, self.names = symbol, tuple(names)
        self.tramp, self.fn = entry(symbol, build_ir, len(names))
        self.at = {name: k for k, name in enumerate(names)}
        self.argv = np.array([values[name] for name in names], dtype=np.int64)
        self.argv_at = self.argv.ctypes.data
        self._am = memoryview(self.argv)   # (set and read as Python ints: no numpy scalar)

    def __setitem__(self, name: str, value: int) -> None:
        self._am[self.at[name]] = value

    def __getitem__(self, name: str) -> int:
        return self._am[self.at[name]]

    def __call__(self) -> int:
        return self.tramp(self.fn, self.argv_at)


# Chain step modes
SKIP, CALL, GUARD = 0, 1, 2
_CHAIN = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)


def _build_chain_ir(symbol: str, arities: tuple) -> str:
    """chain(table) calls steps first..stop-1 (table[0], table[1]) in order:
    step k (fn, argv, mode at table[3 + 3k..]; its result at
    table[3 + 3K + k]) unless its mode is SKIP or bit k of table[2] (the
    skipped steps) is set. A GUARD step's result r < 0 stops the chain:
    it returns k + 1; r >= 0 sets table[2] |= r << (k + 1) (it skips later
    steps). Returns 0 when every step ran. table[2] is cleared when the
    chain starts at step 0. First, the links: table[3 + 4K] of them at
    table[4 + 4K], each (destination, source, add): *destination =
    *source + add (a value set once, copied into the steps' arguments)."""
    i64 = _I64
    m = ll.Module(name=symbol)
    f = ll.Function(m, ll.FunctionType(i64, [i64]), symbol)
    entry = f.append_basic_block("entry")
    b = ll.IRBuilder(entry)
    t = b.inttoptr(f.args[0], i64.as_pointer())
    slot = lambda k: b.gep(t, [ll.Constant(i64, k)])  # noqa: E731
    n = len(arities)
    count = b.load(slot(3 + 4 * n))
    links = b.inttoptr(b.load(slot(4 + 4 * n)), i64.as_pointer())
    i = b.alloca(i64)
    b.store(ll.Constant(i64, 0), i)
    head, body, done = (f.append_basic_block(name) for name in ("links", "link", "steps"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(b.icmp_signed("<", b.load(i), count), body, done)
    b.position_at_end(body)
    at = b.mul(b.load(i), ll.Constant(i64, 3))
    field = lambda q: b.load(b.gep(links, [b.add(at, ll.Constant(i64, q))]))  # noqa: E731
    dest, src, add = (b.inttoptr(field(0), i64.as_pointer()), b.inttoptr(field(1), i64.as_pointer()), field(2))
    b.store(b.add(b.load(src), add), dest)
    b.store(b.add(b.load(i), ll.Constant(i64, 1)), i)
    b.branch(head)
    b.position_at_end(done)
    first, stop = b.load(slot(0)), b.load(slot(1))
    with b.if_then(b.icmp_signed("==", first, ll.Constant(i64, 0))):
        b.store(ll.Constant(i64, 0), slot(2))
    for k, nargs in enumerate(arities):
        base = 3 + 3 * k
        mode = b.load(slot(base + 2))
        skipped = b.and_(b.lshr(b.load(slot(2)), ll.Constant(i64, k)), ll.Constant(i64, 1))
        run = b.and_(b.and_(b.icmp_signed("<=", first, ll.Constant(i64, k)),
                            b.icmp_signed(">", stop, ll.Constant(i64, k))),
                     b.and_(b.icmp_signed("!=", mode, ll.Constant(i64, SKIP)),
                            b.icmp_signed("==", skipped, ll.Constant(i64, 0))))
        with b.if_then(run):
            argv = b.inttoptr(b.load(slot(base + 1)), i64.as_pointer())
            args = [b.load(b.gep(argv, [ll.Constant(i64, i)])) for i in range(nargs)]
            target = b.inttoptr(b.load(slot(base)), ll.FunctionType(i64, [i64] * nargs).as_pointer())
            r = b.call(target, args)
            b.store(r, slot(3 + 3 * n + k))
            with b.if_then(b.icmp_signed("==", mode, ll.Constant(i64, GUARD))):
                with b.if_then(b.icmp_signed("<", r, ll.Constant(i64, 0))):
                    b.ret(ll.Constant(i64, k + 1))
                b.store(b.or_(b.load(slot(2)), b.shl(r, ll.Constant(i64, k + 1))), slot(2))
    b.ret(ll.Constant(i64, 0))
    return str(m)


class Chain:
    """PackedCalls called one after the other in one native call (the
    module docstring): `chain()` runs them all, `chain(first, stop)` steps
    first..stop-1; the result is 0, or k + 1 where guard step k stopped
    it. `result(k)`: what step k returned (when it ran).

    links: {value name: [(step, argument name, add), ...]}: the value,
    `values[slot(name)]`, set once per call, is copied (plus `add`) into
    each of those arguments at the start of every call (a batch's length
    and address go to every pass this way: one numpy store, not one a pass).
    copies: [(step, argument name, from step, its argument name), ...]:
    also copied at the start of every call, after the links (an address
    one step's arguments keep up to date, that another step reads too)."""

    def __init__(self, steps: list, modes: list | None = None, links: dict | None = None,
                 values: np.ndarray | None = None, copies: list | None = None) -> None:
        """values: the link values of another chain of the same links, shared
        (a value set once serves both)."""
        self.steps = list(steps)
        arities = tuple(len(s.names) for s in self.steps)
        symbol = "gpuemu_packed_chain_" + "_".join(map(str, arities))
        self._fn = engine.native_function(symbol, lambda: _build_chain_ir(symbol, arities), _CHAIN)
        k = len(self.steps)
        self.table = np.zeros(5 + 4 * k, dtype=np.int64)
        # the chain on its table as a builtin function of no arguments, else (None) the ctypes call
        ml = _direct_method(symbol, self._fn)
        self._direct = direct_call.bind(ml, self.table.ctypes.data) if ml is not None else None
        self._results = 3 + 3 * k          # where step results start in the table
        self._tm = memoryview(self.table)  # (its items read and set as Python ints: no numpy scalar)
        self.results = self._tm[self._results:self._results + k]    # results[k]: result(k), without its call
        self._nsteps = k
        self._at = self.table.ctypes.data
        self._links = [(name, step, arg, add) for name, targets in (links or {}).items()
                       for step, arg, add in targets]
        self._slots = {name: i for i, name in enumerate(links or {})}
        self._copies = list(copies or ())
        if values is None:
            values = np.zeros(max(len(self._slots), 1), dtype=np.int64)
        elif values.dtype != np.int64 or values.size < len(self._slots):
            raise ValueError("chain values: int64, one per link value")
        self.values = values
        for i, (step, mode) in enumerate(zip(self.steps, modes or [CALL] * k)):
            self._put(i, step, mode)
        self._relink()

    def slot(self, name: str) -> int:
        """The index in `values` of the link value `name`."""
        return self._slots[name]

    def set_step(self, k: int, step: PackedCall, mode: int | None = None) -> None:
        """Step k is `step` (of the same number of arguments as the one it replaces) from now on."""
        if len(step.names) != len(self.steps[k].names):
            raise ValueError(f"chain step {k} takes {len(self.steps[k].names)} arguments, "
                             f"{step.symbol} {len(step.names)}")
        self._put(k, step, mode)
        if any(j == k for _, j, _, _ in self._links) or any(k in (j, i) for j, _, i, _ in self._copies):
            self._relink()                 # its links point into (or out of) the step's arguments

    def _put(self, k: int, step: PackedCall, mode: int | None) -> None:
        self.steps[k] = step
        t = self.table
        t[3 + 3 * k], t[4 + 3 * k] = step.fn, step.argv_at
        if mode is not None:
            t[5 + 3 * k] = mode

    def _relink(self) -> None:
        """The link rows, from the steps' argument arrays (made once, and when a linked step changes)."""
        base = self.values.ctypes.data
        links = [(s.argv_at + 8 * s.at[arg], base + 8 * self._slots[name], add)
                 for name, s, arg, add in ((name, self.steps[j], arg, add) for name, j, arg, add in self._links)
                 if arg in s.at]
        links += [(self.steps[j].argv_at + 8 * self.steps[j].at[arg], self.steps[i].argv_at + 8 * self.steps[i].at[src], 0)
                  for j, arg, i, src in self._copies]
        self._link_rows = np.array(links, dtype=np.int64).reshape(-1, 3)      # (kept: the chain reads it)
        n = len(self.steps)
        t = self.table
        t[3 + 4 * n], t[4 + 4 * n] = len(links), self._link_rows.ctypes.data

    def result(self, k: int) -> int:
        return self._tm[self._results + k]

    def skipped(self, k: int) -> bool:
        """Whether the last call skipped step k (a guard's skip bits)."""
        return bool(self._tm[2] >> k & 1)

    def __call__(self, first: int = 0, stop: int | None = None) -> int:
        t = self._tm
        t[0] = first
        t[1] = self._nsteps if stop is None else stop
        direct = self._direct
        return direct() if direct is not None else self._fn(self._at)


_direct_methods: dict = {}     # chain symbol -> its direct_call.MethodDef, or None where it could not be made
_direct_lock = threading.Lock()


def _direct_method(symbol: str, fn) -> direct_call.MethodDef | None:
    """The direct_call wrapper of the chain function `fn` (`symbol`'s), made
    once per process; None where it cannot be made (the chain keeps its
    ctypes call)."""
    got = _direct_methods.get(symbol, _direct_methods)
    if got is _direct_methods:
        with _direct_lock:
            got = _direct_methods.get(symbol, _direct_methods)
            if got is _direct_methods:
                try:
                    got = direct_call.method("gpuemu_direct_" + symbol, ctypes.cast(fn, ctypes.c_void_p).value)
                except Exception:          # (no CPython C API, no object code: the ctypes call)
                    got = None
                _direct_methods[symbol] = got
    return got


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
