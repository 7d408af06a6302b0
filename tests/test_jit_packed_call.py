"""packed_call: a native helper called with its arguments in one array
returns what a direct ctypes call returns, with the arguments in order."""
import threading

import llvmlite.ir as ll
import numpy as np
import pytest

from gpuemu.jit import engine, packed_call
from gpuemu.memory.native_ir import Fn, prototype

NARGS = 45      # as many as native_cache_walk's


def _build() -> str:
    """f(a0..a44) = sum of a_i * (i + 1), and a0 stored at the address a44."""
    m = ll.Module(name="packed_call_test")
    names = tuple(f"a{i}" for i in range(NARGS))
    f = Fn(m, "gpuemu_test_packed_call", names)
    b = f.b
    total = f.var(0)
    for i, name in enumerate(names):
        f.inc(total, b.mul(f.arg[name], ll.Constant(ll.IntType(64), i + 1)))
    f.st(f.ptr("a44"), 0, f.arg["a0"])
    f.ret(f.get(total))
    f.finish()
    return str(m)


def _args(out: np.ndarray, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [int(v) for v in rng.integers(-(1 << 40), 1 << 40, NARGS - 1)] + [out.ctypes.data]


def _expected(args) -> int:
    total = sum(a * (i + 1) for i, a in enumerate(args))
    return (total + (1 << 63)) % (1 << 64) - (1 << 63)     # int64 wrap-around


def test_a_packed_call_returns_what_a_direct_call_returns():
    direct = engine.native_function("gpuemu_test_packed_call", _build, prototype(NARGS))
    packed = packed_call.native("gpuemu_test_packed_call", _build, NARGS)
    out = np.zeros(1, dtype=np.int64)
    args = _args(out, 1)
    assert packed(args) == direct(*args) == _expected(args)
    assert out[0] == args[0]


def test_each_argument_keeps_its_place_and_sign():
    packed = packed_call.native("gpuemu_test_packed_call", _build, NARGS)
    out = np.zeros(1, dtype=np.int64)
    args = [0] * (NARGS - 1) + [out.ctypes.data]
    args[0], args[43] = -7, 5
    assert packed(args) == -7 + 5 * 44 + out.ctypes.data * 45 and out[0] == -7


def test_a_wrong_number_of_arguments_is_refused():
    packed = packed_call.native("gpuemu_test_packed_call", _build, NARGS)
    with pytest.raises(TypeError, match="takes 45 arguments, got 3"):
        packed([1, 2, 3])


def test_a_float_argument_is_refused_not_cut():
    packed = packed_call.native("gpuemu_test_packed_call", _build, NARGS)
    out = np.zeros(1, dtype=np.int64)
    args = [0] * (NARGS - 1) + [out.ctypes.data]
    args[3] = 2.75
    with pytest.raises(TypeError, match=r"argument 3 must be an int, got float 2.75"):
        packed(args)
    args[3] = np.float64(1.0)
    with pytest.raises(TypeError, match=r"argument 3 must be an int, got float64"):
        packed(args)
    assert out[0] == 0                                   # not called


def test_numpy_ints_are_taken_as_their_values():
    packed = packed_call.native("gpuemu_test_packed_call", _build, NARGS)
    out = np.zeros(1, dtype=np.int64)
    args = [np.int32(-3)] + [np.uint8(1)] * (NARGS - 2) + [out.ctypes.data]
    assert packed(args) == _expected([-3] + [1] * (NARGS - 2) + [out.ctypes.data])


def test_a_function_of_another_argument_count_is_refused():
    direct = engine.native_function("gpuemu_test_packed_call", _build, prototype(NARGS))
    with pytest.raises(TypeError, match="needs a ctypes function of 44 int64 arguments"):
        packed_call.caller(direct, NARGS - 1)


def test_the_caller_keeps_its_function_alive():
    import ctypes
    import gc
    import weakref
    direct = engine.native_function("gpuemu_test_packed_call", _build, prototype(NARGS))
    own = prototype(NARGS)(ctypes.cast(direct, ctypes.c_void_p).value)   # held by no one else
    ref = weakref.ref(own)
    packed = packed_call.caller(own, NARGS)
    del own
    gc.collect()
    assert ref() is not None
    out = np.zeros(1, dtype=np.int64)
    args = _args(out, 3)
    assert packed(args) == _expected(args)


def test_threads_calling_at_once_each_get_their_own_result():
    packed = packed_call.native("gpuemu_test_packed_call", _build, NARGS)
    got, want = {}, {}

    def work(t):
        out = np.zeros(1, dtype=np.int64)
        for r in range(200):
            args = _args(out, 1000 * t + r)
            if packed(args) != _expected(args):
                got[t] = args
                return
        want[t] = True
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert got == {} and len(want) == 4


def _build_step() -> str:
    """step(x, p, r): p[0] = p[0] * 10 + x; returns r (a chain step that leaves its mark in order)."""
    m = ll.Module(name="packed_call_step")
    f = Fn(m, "gpuemu_test_chain_step", ("x", "p", "r"))
    b = f.b
    p = f.ptr("p")
    f.st(p, 0, b.add(b.mul(f.ld(p, 0), ll.Constant(ll.IntType(64), 10)), f.arg["x"]))
    f.ret(f.arg["r"])
    f.finish()
    return str(m)


def _steps(out: np.ndarray, results) -> list:
    return [packed_call.PackedCall("gpuemu_test_chain_step", _build_step, ("x", "p", "r"),
                                   dict(x=k + 1, p=out.ctypes.data, r=r)) for k, r in enumerate(results)]


def test_a_packed_call_keeps_its_arguments_by_name():
    out = np.zeros(1, dtype=np.int64)
    call = _steps(out, [5])[0]
    assert call() == 5 and out[0] == 1
    call["x"], call["r"] = 7, -3
    assert call() == -3 and out[0] == 17 and call["x"] == 7


def test_a_packed_call_needs_a_value_for_every_argument():
    with pytest.raises(ValueError, match="no value for p"):
        packed_call.PackedCall("gpuemu_test_chain_step", _build_step, ("x", "p", "r"), dict(x=1, r=0))


def test_a_chain_calls_its_steps_in_order_in_one_call():
    out = np.zeros(1, dtype=np.int64)
    chain = packed_call.Chain(_steps(out, [0, 0, 0]))
    assert chain() == 0 and out[0] == 123
    assert [chain.result(k) for k in range(3)] == [0, 0, 0]


def test_a_chain_runs_the_steps_asked_for_and_not_skipped_ones():
    out = np.zeros(1, dtype=np.int64)
    chain = packed_call.Chain(_steps(out, [0, 0, 0, 0]), [packed_call.CALL, packed_call.SKIP,
                                                          packed_call.CALL, packed_call.CALL])
    assert chain(0, 3) == 0 and out[0] == 13
    out[0] = 0
    assert chain(2) == 0 and out[0] == 34


def test_a_guard_below_zero_stops_the_chain_and_it_goes_on_from_there():
    out = np.zeros(1, dtype=np.int64)
    g = packed_call.GUARD
    chain = packed_call.Chain(_steps(out, [0, -1, 0]), [packed_call.CALL, g, packed_call.CALL])
    assert chain() == 2 and out[0] == 12           # step 1 stopped it: step 2 not run
    assert chain.result(1) == -1
    assert chain(2) == 0 and out[0] == 123


def test_a_guards_result_skips_the_steps_it_names():
    out = np.zeros(1, dtype=np.int64)
    # step 0 (a guard) returns 0b101: the first and third steps after it are skipped
    chain = packed_call.Chain(_steps(out, [0b101, 0, 0, 0, 0]), [packed_call.GUARD] + [packed_call.CALL] * 4)
    assert chain() == 0 and out[0] == 135
    out[0] = 0
    assert chain(0) == 0 and out[0] == 135         # started again at step 0: its skips start afresh
    chain.steps[0]["r"] = 0
    out[0] = 0
    assert chain() == 0 and out[0] == 12345


def test_a_chain_step_must_take_as_many_arguments_as_the_one_it_replaces():
    out = np.zeros(1, dtype=np.int64)
    chain = packed_call.Chain(_steps(out, [0]))
    with pytest.raises(ValueError, match="takes 3 arguments"):
        chain.set_step(0, packed_call.PackedCall("gpuemu_test_packed_call", _build, tuple(f"a{i}" for i in range(NARGS)),
                                                 {f"a{i}": 0 for i in range(NARGS)}))


def test_a_chains_link_values_reach_every_argument_they_are_linked_to():
    out = np.zeros(1, dtype=np.int64)
    steps = _steps(out, [0, 0])
    chain = packed_call.Chain(steps, links={"x": [(0, "x", 0), (1, "x", 2)]})
    chain.values[chain.slot("x")] = 3
    assert chain() == 0 and out[0] == 35          # step 0 got x = 3, step 1 x = 3 + 2
    assert (steps[0]["x"], steps[1]["x"]) == (3, 5)


def test_a_chains_copies_give_a_step_another_steps_argument_at_every_call():
    out = np.zeros(1, dtype=np.int64)
    steps = _steps(out, [0, 0])
    chain = packed_call.Chain(steps, copies=[(1, "x", 0, "x")])
    steps[0]["x"] = 4
    assert chain() == 0 and out[0] == 44          # step 1's x is step 0's, copied as the chain starts
    out[0] = 0
    chain.set_step(0, _steps(out, [0])[0])        # a new step 0 (x = 1): the copy reads its arguments
    steps[0]["x"] = 9                             # (the old step's, no longer read)
    assert chain() == 0 and out[0] == 11


def test_two_chains_may_share_their_link_values():
    out = np.zeros(1, dtype=np.int64)
    links = {"x": [(0, "x", 0)]}
    first = packed_call.Chain(_steps(out, [0]), links=links)
    second = packed_call.Chain(_steps(out, [0, 0]), links=links, values=first.values)
    first.values[first.slot("x")] = 6
    assert second() == 0 and out[0] == 62         # second's step 0 got the value set through first


def test_a_chain_is_called_as_a_builtin_function_bound_to_its_table():
    # (jit/direct_call.py: no ctypes call per chain call) with what the ctypes call gives
    out = np.zeros(1, dtype=np.int64)
    g = packed_call.GUARD
    chain = packed_call.Chain(_steps(out, [0, -1, 0]), [packed_call.CALL, g, packed_call.CALL])
    assert type(chain._direct).__name__ == "builtin_function_or_method"
    assert chain() == 2 and out[0] == 12
    out[0] = 0
    assert chain._fn(chain.table.ctypes.data) == 2 and out[0] == 12


def test_a_chain_whose_direct_call_cannot_be_made_keeps_the_ctypes_call(monkeypatch):
    from gpuemu.jit import direct_call

    def broken(*_):
        raise RuntimeError("no object code")
    monkeypatch.setattr(packed_call, "_direct_methods", {})
    monkeypatch.setattr(direct_call, "method", broken)
    out = np.zeros(1, dtype=np.int64)
    chain = packed_call.Chain(_steps(out, [0, 0, 0]))
    assert chain._direct is None
    assert chain() == 0 and out[0] == 123
