"""The launch gate: a kept launch checked and run in one native call, built there without counters.

A kept launch (machine/launch_cache.py) of a thousand threads runs its
blocks natively in about 3 us; the Python around it (RawKernel.__call__'s
identity tests, launch_cache.launch's argument test, the timeline, the
Launch) cost as much again, so a 1K launch took over twice the time per
thread of a large one (issue 6: within 2x from 1K to 16M). The gate moves
that Python into one native function (jit/gate_codegen.py), per kernel:

- launch_cache.launch arms it after a kept launch on one block worker
  that ended clean (no findings, no numpy argument copied): it holds that
  run, out of the KeptLaunch's idle list, and the words the native function
  compares a call with (the key's grid, block, shared memory, budget,
  counters on or off and options; each argument as the run's parameter
  buffer holds it, launch_plan.write_args' record);
- RawKernel.__call__ calls it first. A call it does not match (another
  shape, a new argument, counters on where it was armed without them or
  the other way round, a stream, GPUEMU_WORKERS set, a new device memory,
  another thread launching it) gets None and takes the Python path, which
  takes the armed run back (`take`) when it needs it and arms the gate
  again after;
- without counters it places the launch on the timeline and builds its
  Launch itself; with counters it renews the run first (LaunchRun.renew_kept,
  called back) and hands every launch's end back to Python (`finish`:
  LaunchRun.finish_kept and RawKernel._launch_of), as it hands back a launch
  whose block needs Python (an event, a fault). Only the checks and the
  bookkeeping around the run are saved there: about 1-2 us of a 1K launch's
  22 us on ours.

The Python path stays the definition: tests/test_launch_gate.py holds the
gate's results, timeline, findings and errors to it. Where the gate cannot
be built (no CPython C API, perf_counter not clock_gettime), nothing arms it.
"""
from __future__ import annotations

import ctypes
import struct
import sys
import threading
import time
import weakref

from gpuemu.errors import KernelError
from gpuemu.jit import direct_call, gate_codegen
from gpuemu.jit.gate_codegen import (IDLE, KIND_OBJECT, KIND_WEAK, LAUNCHING, OPTIONS_NONE,
                                     OPTIONS_ONE_WORKER, UNARMED, W, WORDS)

from gpuemu.host import streams

from . import block_runner, block_workers
from .launch_plan import RUNS_PER_PLAN, keep_memory_system

_lock = threading.Lock()        # the Python side's changes of a gate (the native side changes busy
                                # with the GIL held: IDLE -> LAUNCHING before it calls renew_kept)
_method: list = []              # [the gate's direct_call.MethodDef, or None], once built
_objects: dict = {}             # what the module's constants point at: kept for the process
_DEBUG = False                  # tests: raise what stopped the gate's build
_ARMED = struct.Struct(f"<{len(WORDS) - W['target']}q")      # the words from target on


class Gate(bytearray):
    """A kernel's gate: its state words (the bytearray, the native function's
    self), the builtin function `call`, the run it holds and what the words
    point at (`refs`: alive while armed)."""
    __slots__ = ("words", "call", "run", "got", "refs", "armed", "armed_key", "held", "hits_seen",
                 "misses", "declined")

    def let_go(self) -> None:
        """Hold no run and nothing of one (the words stay, unread while not IDLE)."""
        self.run = self.got = self.armed = None
        self.refs, self.held = [], ()


def _perf_counter_clock():
    """The clock_gettime clock id time.perf_counter reads, or None."""
    info = time.get_clock_info("perf_counter").implementation
    if info == "clock_gettime(CLOCK_MONOTONIC)":
        return time.CLOCK_MONOTONIC
    return None


def _build():
    """The gate's MethodDef, or None where it cannot be made here."""
    from gpuemu import api

    from . import launch_cache
    clock_id = _perf_counter_clock()
    # (its state changes are atomic because it holds the GIL throughout: none without one)
    if (clock_id is None or block_workers._ENV is None or sys.implementation.name != "cpython"
            or not getattr(sys, "_is_gil_enabled", lambda: True)() or not gate_codegen.layout_ok()):
        return None
    try:
        clock = ctypes.cast(ctypes.CDLL(None).clock_gettime, ctypes.c_void_p).value
    except (AttributeError, OSError):
        return None
    s = sys.intern
    _objects.update({
        "None": None, "False": False, "True": True, "one": 1, "zero": 0, "zero_float": 0.0,
        "functional": "functional", "tuple": tuple, "float": float, "int": int, "dict": dict,
        "list": list, "workers": s("workers"),
        "memory_globals": vars(launch_cache._memories),
        "device_memory_name": s("_device_memory"),
        "runner_globals": vars(block_runner), "range_function_name": s("_range_function"),
        "range_function": launch_cache._RANGE_FUNCTION,
        "os_globals": vars(sys.modules["os"]), "environ_name": s("environ"),
        "environ": block_workers._ENVIRON, "environ_data": block_workers._ENV,
        "environ_key": block_workers._ENV_KEY,
        "timeline": streams.timeline(), "compute": streams.COMPUTE,
        "launch_type": api.Launch, "op_type": streams.Op,
        "timeline_key": s("timeline"), "seconds_key": s("seconds"), "name_attr": s("name"),
        "dict_attr": s("__dict__"),
    })
    for name in ("streams", "default_ready", "engine_free", "host_time", "ops", "max_ops", "start",
                 "end", "seconds", "stream"):
        _objects[name] = s(name)
    for name in ("name", "engine", "stream", "start", "end", "nbytes"):
        _objects["op_" + name] = s(name)
    try:
        ir = gate_codegen.build_ir(_objects, block_runner.DONE, clock, clock_id)
        return direct_call.loaded(gate_codegen.SYMBOL, ir, direct_call.METH_FASTCALL)
    except Exception:           # noqa: BLE001 (no C API, or the module failed to build: no gate)
        if _DEBUG:
            raise
        return None


def method():
    """The gate's MethodDef (built once per process), or None."""
    if not _method:
        with _lock:
            if not _method:
                _method.append(_build())
    return _method[0]


def _new_gate(kernel, nargs: int) -> Gate:
    g = Gate(8 * (len(WORDS) + 2 * nargs))
    g.words = memoryview(g).cast("q")
    g.words[W["busy"]] = UNARMED
    g.call = direct_call.bind(method(), g)
    g.let_go()
    g.hits_seen, g.misses, g.declined, g.armed_key = -1, 0, False, None
    kernel._gate_state = g
    return g


# a gate re-armed this many times in a row without a launch between is armed only
# every RETRY-th time after (the arguments change from call to call: arming would cost
# each call more than the gate saves); a gate that launched since it was last armed
# stays armed for its key (a kernel called with two keys in turn: one of them is gated,
# and the gate is not armed back and forth)
MISSES, RETRY = 2, 32


def arm(kernel, key, got, run) -> bool:
    """Let the gate launch `run` (a kept run of `key` that just ended clean
    on one worker, its KeptLaunch `got`) for the next call like this one;
    False where it does not (the caller keeps the run idle)."""
    g = kernel.__dict__.get("_gate_state")
    if g is not None:                   # (an estimate: threads may count a launch twice)
        hits = g.words[W["hits"]]
        used = hits != g.hits_seen
        g.hits_seen = hits
        if used and g.run is not None and g.armed_key is not key:
            g.misses, g.declined = 0, True
            return False                # it launched its own key since: it stays armed for that
        # (the try after a decline is not a miss: a kernel that changes key every few
        # launches, benchmarks/scale.py's sizes in turn, is gated from a turn's second)
        g.misses = 0 if used or g.declined else g.misses + 1
        g.declined = False
        if g.misses >= MISSES and g.misses % RETRY:
            return False
    if method() is None or not _may_match(key):
        return False
    back = None
    with _lock:
        g = kernel.__dict__.get("_gate_state")
        nargs = len(run._args_written)
        if g is None or len(g) != 8 * (len(WORDS) + 2 * nargs) or not (
                g.words[W["busy"]] == UNARMED or g.call()):
            g = _new_gate(kernel, nargs)        # (another thread is launching the old one)
        if g.run is not None and g.run is not run:
            back = (g.got, g.run)
            g.let_go()
        armed = _write(g, kernel, key, got, run)
        kernel._gate = g.call if armed else None
    if back is not None:                # the run it held before, idle again
        _give_back(kernel, *back)
    return armed


def _may_match(key) -> bool:
    """Whether a call could match a gate armed for `key` now: the gate takes
    none while a stream has been seen, nor without options while
    GPUEMU_WORKERS is set (arming then would cost each call for nothing)."""
    if streams.timeline().streams:
        return False
    return bool(key[-1]) or not block_workers.workers_in_environment()


def _write(g: Gate, kernel, key, got, run) -> bool:
    """Arm the (unarmed) gate g for `run`: its words, then busy = IDLE."""
    if g.armed is not run or g.armed_key is not key:      # the words of the run and key
        opts = key[-1]
        options = (OPTIONS_NONE if not opts else
                   OPTIONS_ONE_WORKER if opts == (("workers", int, 1),) else None)
        counted = bool(run.want_stats)
        fixed = run.__dict__.get("_launch_fields")
        # with counters the caller ends the launch (finish); without, the gate builds the
        # Launch from the run's fixed fields, for a run without a memory model
        if options is None or not counted and (fixed is None or run.memsys is not None):
            return False
        before = run.renew_kept if counted else None
        _ARMED.pack_into(g, 8 * W["target"], _range_address(), run._kept_range.address.value,
                         id(fixed), id(kernel), id(run.memory), id(key[0]), id(key[1]),
                         id(key[2]), id(key[4]), options, int(counted), id(before),
                         len(run._args_written))
        g.armed, g.armed_key = run, key
        g.held = (run, key, fixed, run._kept_range, kernel, run.memory, before)
    refs = list(g.held)
    pairs = []
    for entry in run._args_written:     # launch_plan.write_args' record: weak, or the value
        if type(entry) is weakref.ref:
            if entry() is None:
                g.armed = None
                return False
            pairs += (KIND_WEAK, id(entry))
        else:
            value = entry()
            pairs += (KIND_OBJECT, id(value))
            refs.append(value)
        refs.append(entry)
    struct.pack_into(f"<{len(pairs)}q", g, 8 * len(WORDS), *pairs)
    g.run, g.got, g.refs = run, got, refs
    g.words[W["busy"]] = IDLE
    return True


_range: list = []


def _range_address() -> int:
    if not _range:
        _range.append(block_runner.packed_range_address())
    return _range[0]


def _kept(kernel, got) -> bool:
    """Whether `got` is still one of the kernel's KeptLaunches (keep_idle drops old keys)."""
    pool = kernel._kept_launches
    return pool is not None and any(e is got for e in pool.values())


def _give_back(kernel, got, run) -> None:
    if _kept(kernel, got) and len(got.idle) < RUNS_PER_PLAN:
        got.idle.append(run)


def take(kernel, got):
    """The run the gate holds for `got` (it is then not armed), or None
    (none, another's, or another thread is launching it)."""
    g = kernel.__dict__.get("_gate_state")
    if g is None or g.got is not got:
        return None
    with _lock:
        if g.got is not got or not g.call():
            return None
        run = g.run
        g.let_go()                      # (nothing of the run kept: the caller may drop it)
        kernel._gate = None
    return run


def forget(kernel) -> None:
    """Not armed any more, its run dropped (its KeptLaunch is gone, or the
    kernel changed what its calls mean)."""
    kernel._gate = None
    g = kernel.__dict__.get("_gate_state")
    if g is not None:
        with _lock:
            if g.words[W["busy"]] == UNARMED or g.call():
                g.let_go()


def forget_dropped(kernel) -> None:
    """forget, where the KeptLaunch the gate's run came from is no longer kept."""
    g = kernel.__dict__.get("_gate_state")
    if g is not None and g.got is not None and not _kept(kernel, g.got):
        forget(kernel)


def dead(kernel, gate) -> None:
    """A gate launch that raised (a fault, or a failure in the native call):
    the gate stays LAUNCHING, never used again, and lets go of its run."""
    g = gate.__self__
    with _lock:
        g.let_go()
        if kernel._gate is gate:
            kernel._gate = None


def finish(kernel, gate, handed: tuple):
    """The Launch of a gate's launch that handed back (code, t0): the blocks
    from the one that stopped, and with counters the launch's end (every
    launch with counters ends here), as launch_cache.launch ends a kept launch."""
    code, t0 = handed
    g = gate.__self__
    run, got = g.run, g.got
    try:
        try:
            counts = run.end_kept(code, got.blocks)
        except KernelError as err:
            raise kernel._worded(err) from None
        seconds = time.perf_counter() - t0
        result = kernel._launch_of(run, counts, run.findings, run.shape, seconds, None, ())
        if counts is not None:          # what only the finished launch needed
            run.stats = None
            keep_memory_system(run)
    except BaseException:               # (a fault, an interrupt): the run is not reused
        dead(kernel, gate)
        raise
    if run.findings:                    # the next launch starts without them: the Python path
        with _lock:
            g.let_go()
            g.words[W["busy"]] = UNARMED
            if kernel._gate is gate:
                kernel._gate = None
        _give_back(kernel, got, run)
    else:
        g.words[W["busy"]] = IDLE
    return result


__all__ = ["Gate", "arm", "take", "forget", "forget_dropped", "finish", "dead", "method", "LAUNCHING"]
