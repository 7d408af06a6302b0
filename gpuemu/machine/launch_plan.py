"""Launch plans: what repeated launches of one kernel share, done once.

A GPU launch costs microseconds; an emulated one of a thousand threads
should not cost far more than its threads do. Three things a launch did
every time depend only on (kernel, shape, options), so they are kept per
RawKernel and reused:

- the checked launch shape (`checked_shape`): grid, block and shared memory
  checked against the preset's limits once per distinct value;
- the parameter layout (`pack`): per parameter, how a DeviceArray or a
  scalar of the parameter's own numpy type is written into the parameter
  buffer; any other argument takes RawKernel._pack's full path (and its
  errors);
- the prepared machine (`take_run` / `give_back`): a finished LaunchRun
  keeps its frames, shared memory, warp headers and trace buffer and is
  renewed (LaunchRun.renew: fresh counters, findings, cold caches) for the
  next launch with the same key.

Only plain functional launches reuse a run: no check tools, no weak memory
model, no printf, the default warp scheduler. A run that raised is not
reused. Every launch still gets its own counters, findings and memory
model state; results and errors are those of a fresh launch
(tests/test_launch_plan.py checks them side by side).
"""
from __future__ import annotations

import itertools
import struct
import threading
import weakref
from collections import OrderedDict

import numpy as np

from isa import ir

from gpuemu.check.shadow_memory import forget as shadow_forget
from gpuemu.device_array import DeviceArray

from . import worker_copy
from .executor import LaunchRun
from .launch_config import LaunchShape, check_launch

PLANS_PER_KERNEL = 8           # distinct (shape, options) kept per kernel, least recent dropped
RUNS_PER_PLAN = 2              # idle prepared runs kept per key (concurrent launches)
MAX_KEPT_BYTES = 16 << 20      # a run with larger buffers is not kept ...
MAX_KERNEL_BYTES = 64 << 20    # ... nor one that would take a kernel's kept runs past this
MAX_MEMSYS_BYTES = 2 << 20     # a memory system whose caches' state is larger is not kept

_lock = threading.Lock()


def _plain(value) -> bool:
    """An int grid/block/shared size that caches safely (bool and numpy ints
    equal to an int take the checked path every time)."""
    if type(value) is int:
        return True
    return type(value) is tuple and all(type(v) is int for v in value)


def checked_shape(kernel, grid, block, shared_mem) -> LaunchShape:
    """check_launch for this kernel, remembered per (grid, block, shared_mem,
    max_dynamic_shared_size_bytes); errors are raised every time."""
    mod, meta = kernel.module, kernel.meta
    if not (_plain(grid) and _plain(block) and type(shared_mem) is int):
        return check_launch(mod.preset, grid, block, meta.static_shared, shared_mem,
                            meta.launch_bounds, kernel._max_dynamic)
    shapes = kernel.__dict__.setdefault("_plan_shapes", {})
    key = (grid, block, shared_mem, kernel._max_dynamic)
    shape = shapes.get(key)
    if shape is None:
        shape = check_launch(mod.preset, grid, block, meta.static_shared, shared_mem,
                             meta.launch_bounds, kernel._max_dynamic)
        if len(shapes) >= 64:
            shapes.clear()
        shapes[key] = shape
    return shape


def _call_key(kernel, mode, grid, block, shared_mem, budget, options):
    """What a launch call's checks depend on, with the type of every value
    (True is not 1 to them), or None when it cannot be kept."""
    if not (_plain(grid) and _plain(block) and type(shared_mem) is int and type(budget) is int):
        return None
    opts = ()
    if options:
        opts = tuple(sorted((k, type(v), v) for k, v in options.items()))
    key = (mode, grid, block, shared_mem, kernel._max_dynamic, budget, opts)
    try:
        hash(key)
    except TypeError:          # an unhashable option value (a list of check tools)
        return None
    return key


def checked_call(kernel, mode, grid, block, shared_mem, budget, options, check) -> tuple:
    """check(mode, grid, block, shared_mem, budget, options) -- the launch's
    checks, which raise LaunchError or return what they found -- remembered
    per call key: a repeated call pays one dict lookup. Errors are raised
    every time (a call that fails is not remembered)."""
    key = _call_key(kernel, mode, grid, block, shared_mem, budget, options)
    calls = kernel.__dict__.get("_plan_calls")
    got = calls.get(key) if calls is not None and key is not None else None
    if got is None:
        got = check(mode, grid, block, shared_mem, budget, options)
        if key is not None:
            if calls is None:
                calls = kernel._plan_calls = {}
            elif len(calls) >= 64:
                calls.clear()
            calls[key] = got
    return got


# ---------------------------------------------------------------- arguments
_PTR, _NP, _INT = 0, 1, 2      # argument kinds; None: only RawKernel._pack takes it


def _layout(kernel) -> tuple:
    """Per parameter: (kind, offset, numpy scalar type, struct, lo, hi); the
    struct packs an int parameter's value, a float's raw bytes."""
    from gpuemu.api import numpy_dtype
    out = []
    for _name, t, off in kernel.meta.params:
        if isinstance(t, ir.PointerType):
            out.append((_PTR, off, None, _U64, 0, (1 << 64) - 1))
        elif isinstance(t, ir.ScalarType) and t.kind == "int":
            lo = -(1 << (t.bits - 1)) if t.signed else 0
            hi = (1 << (t.bits - 1)) - 1 if t.signed else (1 << t.bits) - 1
            code = {1: "b", 2: "h", 4: "i", 8: "q"}[t.size]    # little-endian, standard sizes
            out.append((_INT, off, numpy_dtype(t).type,
                        struct.Struct("<" + (code if t.signed else code.upper())), lo, hi))
        elif isinstance(t, ir.ScalarType):
            out.append((_NP, off, numpy_dtype(t).type, struct.Struct(f"<{t.size}s"), 0, 0))
        else:
            out.append((None, off, None, None, 0, 0))      # vectors, structs
    return tuple(out)


def layout_of(kernel) -> tuple:
    """The kernel's parameter layout (_layout), made once."""
    layout = kernel.__dict__.get("_plan_layout")
    if layout is None:
        layout = kernel._plan_layout = _layout(kernel)
    return layout


_U64 = struct.Struct("<Q")


def write_args(layout, raw, args, forget: bool = False, written: list | None = None) -> bool:
    """Write `args` into the parameter buffer `raw` (a writable buffer) when
    each is of a kind written directly: a DeviceArray for a pointer, a numpy
    scalar of the parameter's own type, a Python int in an int parameter's
    range. False (raw partly written) when one is not: RawKernel._pack's
    full path then converts it or names what is wrong. forget: each pointer
    argument written counts as written for initcheck (shadow_memory.forget;
    a launch without initcheck).

    written (a kept run's, with forget; new_written() makes one): per
    parameter, what `raw` holds, kept up to date here, as a callable that
    returns it: the number written (numbers are immutable) or a weak
    reference to the DeviceArray (its pointer never changes, its allocation
    was forgotten then; weak: a kept run does not keep its last launch's
    arrays alive; dead, it returns None). An argument that is that very
    object is not written again."""
    if type(args) is not tuple or len(args) != len(layout):
        return False
    i = -1
    for a in args:
        i += 1
        if written is not None and written[i]() is a is not None:
            continue
        kind, off, st, pk, lo, hi = layout[i]
        ta = type(a)
        if kind == _PTR:
            if ta is not DeviceArray:
                return False
            al = a._alloc
            v = al.pointer + a._offset        # DeviceArray.ptr
            if not 0 <= v <= hi:
                return False
            pk.pack_into(raw, off, v)
            if forget:
                shadow_forget(al)
            if written is not None:
                written[i] = _Ref(a)
            continue
        if ta is st and kind is not None:     # its own bytes (an int one: its value)
            pk.pack_into(raw, off, a if kind == _INT else a.tobytes())
        elif kind == _INT and ta is int and lo <= a <= hi:
            pk.pack_into(raw, off, a)
        else:
            return False
        if written is not None:
            written[i] = _held(a)
    return True


_Ref = weakref.ref


def _held(value):
    """A callable returning `value` (in C: no Python frame a call)."""
    return itertools.repeat(value).__next__


_NOTHING = _held(object())      # no argument is this object


def new_written(layout) -> list:
    """write_args' record of a parameter buffer holding nothing known."""
    return [_NOTHING] * len(layout)


def pack(kernel, args) -> tuple:
    """(parameter buffer, copies back, arrays kept alive) as RawKernel._pack
    gives them; arguments write_args takes are written directly, anything
    else goes through _pack."""
    buf = np.zeros(max(kernel.meta.param_bytes, 8), dtype=np.uint8)
    if write_args(layout_of(kernel), buf.data, args):
        return buf, [], []
    return kernel._pack(args)


# ---------------------------------------------------------------- runs
def _run_key(shape, budget, stats, scheduler, options, memory):
    """The key a prepared run is kept under, or None when it must not be kept."""
    if scheduler is not None or options.get("check") or options.get("printf_buffer") is not None:
        return None
    if options.get("memory_model") == "weak":
        return None
    key = (shape, int(budget), bool(stats), id(memory), tuple(sorted(options.items())))
    try:
        hash(key)
    except TypeError:          # an unhashable option value: not kept
        return None
    return key


def take_run(kernel, shape, params, symbols, memory, budget, stats, scheduler,
             options) -> LaunchRun:
    """A LaunchRun for this launch: a kept one renewed, else a new one."""
    key = _run_key(shape, budget, stats, scheduler, options, memory)
    run = None
    if key is not None:
        with _lock:
            plans = kernel.__dict__.get("_plan_runs")
            idle = plans.get(key) if plans is not None else None
            if idle:
                run = idle.pop()
                plans.move_to_end(key)
    if run is not None and run.memory is memory:
        run.renew(params, options)
    else:
        run = LaunchRun(kernel.compiled, kernel.module.preset, shape, params, symbols, memory,
                        budget=budget, stats=stats, scheduler=scheduler, options=options)
    run._plan_key = key
    return run


def _kept_bytes(run) -> int:
    """Bytes a kept run holds: its buffers, its memory system's caches, its worker copies."""
    ms = getattr(run, "memsys", None)
    return run.buffer_bytes() + (ms.state_bytes() if ms is not None else 0) + worker_copy.kept_bytes(run)


def keep_memory_system(run) -> None:
    """A finished run keeps its memory system for its next launch, which
    resets it (LaunchRun.renew, MemorySystem.reset: cold caches, as a new
    one). Where its caches' state is larger than MAX_MEMSYS_BYTES (a
    launch of many blocks), their planes go back to record_pool now
    (MemorySystem.release_states: cold caches that hold only their sets'
    row numbers, which the next launch's lookups fill again, as a new
    memory system's would), so the kept state stays within the budget and
    the run's NativeBatches, its worker copies' included, stay bound to
    it (a new memory system rebinds each of them: 5 to 8 a launch of two
    workers on vecadd 1M, some 45 us each). Only where even that is
    larger is it dropped: then nothing else of the run holds it (its
    NativeBatches let it go, as its worker copies' do; warp_bank_counts.
    for_run's note holds it weakly): kept, its caches' states would be
    held uncounted by the kept-run budget."""
    ms = run.memsys
    if ms is None or ms.state_bytes() <= MAX_MEMSYS_BYTES:
        return
    ms.release_states()
    if ms.state_bytes() > MAX_MEMSYS_BYTES:
        run.memsys = None
        nb = run.__dict__.get("_native_batch")
        if nb is not None:
            nb.let_go()
        worker_copy.let_go(run)


def reusable(run) -> bool:
    """Whether a finished run may be kept for a later launch: it ran without
    error (its ctx is still there) and without check tools, weak memory
    model or timing trace, whose state a renewed run would not reset."""
    return (getattr(run, "ctx", None) is not None and run.checker is None and run.weak is None
            and run.recorder is None)


def keep_idle(kernel, pool_name: str, key, run, make_entry, idle_of) -> bool:
    """Keep `run` idle under `key` in the kernel's pool `pool_name` (an
    OrderedDict of entries, `make_entry()` for a new key, `idle_of(entry)`
    its list of idle runs): the least recently used keys beyond
    PLANS_PER_KERNEL are dropped, and a run is not kept beyond RUNS_PER_PLAN
    per key, MAX_KEPT_BYTES per run or MAX_KERNEL_BYTES per pool. False:
    not kept."""
    size = run._kept_size = _kept_bytes(run)      # measured once, when kept
    if size > MAX_KEPT_BYTES:
        return False
    with _lock:
        pool = kernel.__dict__.get(pool_name)
        if pool is None:
            pool = OrderedDict()
            setattr(kernel, pool_name, pool)
        entry = pool.get(key)
        if entry is None:
            entry = pool[key] = make_entry()
        pool.move_to_end(key)
        while len(pool) > PLANS_PER_KERNEL:
            pool.popitem(last=False)
        total = sum(r._kept_size for e in pool.values() for r in idle_of(e))
        idle = idle_of(entry)
        if len(idle) >= RUNS_PER_PLAN or total + size > MAX_KERNEL_BYTES:
            return False
        idle.append(run)
    return True


def give_back(kernel, run) -> None:
    """A run that finished without error, kept for the next launch with its key."""
    key = getattr(run, "_plan_key", None)
    if key is None or not reusable(run):
        return
    keep_memory_system(run)
    # what only the finished launch needed (its counters, arguments)
    run.stats = run.findings = run.params = run.options = None
    keep_idle(kernel, "_plan_runs", key, run, list, lambda runs: runs)
