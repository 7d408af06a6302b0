"""The fast path of a repeated launch: the same kernel, shape and options again.

A launch of a thousand threads is microseconds of native code; the Python
around it (checks, packing, preparing the machine, building the result)
must not cost many times more. The first launch of a kind takes the full
path (gpuemu/api.py RawKernel.__call__), and when it is plain and ends
without error its prepared run (gpuemu/machine/executor.py LaunchRun) is
kept here under the launch's call key: grid, block, dynamic shared memory,
the kernel's dynamic shared limit, budget, counters on or off and the
options, each value with its type (True is not 1), so a key that is found
was checked by that first launch. A later call with the key:

- checks what can change from call to call, the arguments: a DeviceArray
  for a pointer parameter, a numpy scalar of the parameter's own type or a
  Python int in its range is written into the run's own parameter buffer
  (its address is in the run's ctx template), unless it is the very object
  the buffer holds from the run's last launch; any other argument (a numpy
  array to copy in and back, a float for an int, a wrong count) takes the
  full path, with its conversions and errors;
- makes the run's ctx anew and runs every block of the grid in one native
  call (the kept range's, block_runner.kept_range), then ends as LaunchRun.run does
  (with counters on, LaunchRun.finish_kept: it charges the rest of the trace
  and settles the counters, kept as bytes, launch_sums.Ended, that become
  the launch's Stats when first read); the run's memory system is reused,
  reset to cold caches (LaunchRun.renew_kept);
- builds the Launch as the full path does (RawKernel._launch_of, the one
  constructor of a launch's result).

A launch on several block workers (the option `workers`, else
$GPUEMU_WORKERS, read on every call) renews its kept run and runs it as
the full path does (LaunchRun.run: block_workers.run_parallel), saving
the checks, packing and the run taken and given back (a tenth of a
millisecond of the calling thread's serial time, 2% of a two-worker
vecadd 1M without counters).

A kept launch on one worker that ended clean arms the kernel's launch gate
(launch_gate.py) with its run: the next call like it is checked and run in
one native call (without counters its Launch built there too), before this
path is asked;
a call the gate does not take comes here, which takes the gate's run back
when no other is idle.

Plain: functional mode, the default warp and block schedulers, no progress
callback, no check tools, no weak memory model, no seed, no printf, and a
machine whose native range loop applies. A run that raised is dropped; a
call that finds no idle run (another thread holds it) takes the full path.
Results, counters, findings and errors are those of the full path
(tests/test_launch_cache.py checks them side by side).
"""
from __future__ import annotations

import sys
import time

from gpuemu.check.shadow_memory import forget_args
from gpuemu.device_memory import device_memory
from gpuemu.errors import KernelError, LaunchError
from gpuemu.stats import Stats

from . import block_runner, launch_gate
from .block_workers import default_workers
from .executor import grid_blocks
from .launch_plan import (RUNS_PER_PLAN, keep_idle, keep_memory_system, layout_of, new_written, pack,
                          reusable, write_args)

# options a kept launch may carry (the others need the full path every time)
PLAIN_OPTIONS = frozenset({"l1", "bank_mode", "enable_cooperative_groups", "workers"})


_ONE_WORKER = (("workers", int, 1),)     # call_key's options part of workers=1


_WORKERS_1 = {"workers": 1}


def one_worker(options: dict) -> bool:
    """Whether `options` is workers=1 alone, an int (True is not 1)."""
    return options == _WORKERS_1 and type(options["workers"]) is int


def call_key(kernel, grid, block, shared_mem, budget, stats, mode, scheduler, block_scheduler,
             options: dict):
    """The key a plain launch call of `kernel` is kept under, or None when it
    is not plain: worked out (_key) and remembered as kernel._last_call, the
    parts and the key. RawKernel.__call__ gives a call whose every part is
    the very object the last one was made of (immutable: ints, bools, tuples
    of ints) and whose options are as they were (none, or one_worker's) that
    call's key without calling this."""
    key = _key(grid, block, shared_mem, budget, stats, mode, scheduler, block_scheduler, options,
               kernel._max_dynamic)
    if key is not None and (not options or key[-1] is _ONE_WORKER):
        kernel._last_call = (grid, block, stats, shared_mem, budget, mode, kernel._max_dynamic,
                             bool(options), key)
    return key


def _key(grid, block, shared_mem, budget, stats, mode, scheduler, block_scheduler,
         options: dict, max_dynamic):
    """call_key's key, worked out."""
    if (mode != "functional" or scheduler is not None or block_scheduler is not None
            or type(stats) is not bool or type(budget) is not int or type(shared_mem) is not int):
        return None
    if type(grid) is tuple:             # (grid and block written out: a loop over both costs more)
        for v in grid:
            if type(v) is not int:
                return None
    elif type(grid) is not int:
        return None
    if type(block) is tuple:
        for v in block:
            if type(v) is not int:
                return None
    elif type(block) is not int:
        return None
    if not options:
        opts = ()
    elif len(options) == 1 and "workers" in options:    # workers=N alone (benchmarks/scale.py, bench_workers.py)
        w = options["workers"]
        if type(w) is not int or w < 1:
            return None
        opts = _ONE_WORKER if w == 1 else (("workers", int, w),)
    else:
        if not options.keys() <= PLAIN_OPTIONS:
            return None
        w = options.get("workers")
        if w is not None and (type(w) is not int or w < 1):
            return None
        opts = tuple(sorted((k, type(v), v) for k, v in options.items()))
        try:
            hash(opts)
        except TypeError:
            return None
    return grid, block, shared_mem, max_dynamic, budget, stats, opts


class KeptLaunch:
    """The prepared runs kept for one call key, and the argument layout."""

    def __init__(self, layout, blocks: int) -> None:
        self.layout = layout            # launch_plan.layout_of's
        self.idle: list = []
        self.blocks = blocks            # blocks in the grid


_clock = time.perf_counter
_memories = sys.modules[device_memory.__module__]    # its _device_memory: device_memory()'s
_RANGE_FUNCTION = block_runner._range_function      # as loaded (bench_workers may wrap it)


def launch(kernel, key, args, stream, options: dict):
    """The Launch of a call whose key has a kept run, or None (the full path
    runs it). Errors are those of the full path: an argument it cannot take
    raises launch_plan.pack's LaunchError, a faulty kernel the KernelError.

    One flat function: each call it would make (block_workers.default_workers,
    LaunchRun.renew) costs a
    small launch about a tenth of a microsecond, so what those do for a kept
    run is written out here, where it is a few lines (each says whose it is;
    tests/test_launch_cache.py holds this path to the full path's results)."""
    last = kernel._last_kept
    if last is not None and last[0] is key:     # call_key's last key again (no hashing it)
        got = last[1]
    else:
        kept = kernel._kept_launches
        got = kept.get(key) if kept is not None else None
        if got is None:
            return None
        kernel._last_kept = (key, got)
        if kept.get(key) is not got:    # another thread's keep dropped it just now (and then
            kernel._last_kept = None    # cleared _last_kept, before this set it): not remembered
    try:
        run = got.idle.pop()
    except IndexError:                  # none idle: the gate's (launch_gate), unless another thread has it
        run = launch_gate.take(kernel, got)
        if run is None:
            return None
    if run.memory is not _memories._device_memory:     # a new device memory (device_memory()'s):
        return None                                     # the run is stale
    copies = hold = ()
    # the very objects the buffer holds from the run's last launch (write_args' own test, without
    # its call: most kept launches repeat their arguments) need no writing
    written = run._args_written
    same = type(args) is tuple and len(args) == len(written)
    if same:
        i = 0
        for a in args:
            if written[i]() is not a or a is None:
                same = False
                break
            i += 1
    # pointer arguments count as written (no initcheck): write_args forgets those it writes
    if not same and not write_args(got.layout, run._params_view, args, True, written):
        run._args_written = new_written(got.layout)      # pack writes the whole buffer
        forget_args(args)               # numpy arrays, conversions, errors: the full packing
        try:
            params, copies, hold = pack(kernel, args)
        except BaseException:
            got.idle.append(run)
            raise
        run.params[:] = params
    counted = run.want_stats
    # the block workers it asks for: the option (call_key let only an int >= 1 through), else
    # block_workers.default_workers
    try:
        several = ((options and options.get("workers")) or default_workers()) > 1
    except LaunchError:                 # GPUEMU_WORKERS above block_workers.MAX_WORKERS
        got.idle.append(run)
        raise
    if several:                         # renewed as launch_plan.take_run renews a run
        run.renew(run.params, run.options)
    elif counted:
        run.renew_kept()                # (the native call makes the ctx anew)
    else:
        # LaunchRun.renew(run.params, run.options, ctx=False) without counters, for a kept
        # run: its own parameters and options (no seed, no seeded order) are given again;
        # LaunchRun.fresh_findings only where the last launch found something, as renew_kept
        # (a launch copies its findings: an empty list serves again; a barrier found divergent,
        # by the run or merged from block workers, was found with one)
        if run.findings:
            run.fresh_findings()
        if run.stats is None:
            run.stats = Stats()
    kept_range = run._kept_range
    # block_runner._range_function is looked up per call (benchmarks/bench_workers.py wraps
    # it); as loaded, the kept range's direct call makes the same native call
    call = kept_range.call if block_runner._range_function is _RANGE_FUNCTION else None
    counts = None
    t0 = _clock()
    try:
        if several:                     # as the full path runs it: block_workers.run_parallel, finish
            run.run()
            counts = run.stats if counted else None
        else:
            code = call() if call is not None else block_runner._range_function()(kept_range.address)
            # as LaunchRun.run ends (without counters a kept run, which has no check tools or
            # weak memory, has no more to do; with them the counters are collected, and the
            # memory system's caches may be reset for the next launch now)
            counts = run.end_kept(code, got.blocks)
    except KernelError as err:          # the run is not reused
        raise kernel._worded(err) from None
    seconds = _clock() - t0
    result = kernel._launch_of(run, counts, run.findings, run.shape, seconds, stream, copies)
    del hold
    if counted:                         # what only the finished launch needed
        run.stats = None
        keep_memory_system(run)
    # on one worker and clean: the gate launches it next (launch_gate), else idle
    if (several or copies or call is None or run.findings
            or not launch_gate.arm(kernel, key, got, run)) and len(got.idle) < RUNS_PER_PLAN:
        got.idle.append(run)
    return result


def keep(kernel, key, run) -> bool:
    """Keep a run that finished a plain launch without error for the next
    call with `key`; False when it is not kept here (not plain, too large,
    or enough are kept)."""
    if (key is None or not reusable(run) or run._range_runner is None
            or run.options.get("printf_buffer") is not None or run._order_rng is not None):
        return False
    run._params_view = memoryview(run.params)     # before another thread can take it
    run._args_written = new_written(layout_of(kernel))   # launch_plan.write_args(written=)
    run._kept_range = block_runner.kept_range(run, grid_blocks(run.shape))   # its native call's
    keep_memory_system(run)            # renewed (cold caches) by the next launch
    if run.want_stats:                 # what only the finished launch needed
        run.stats = None
    kept = keep_idle(kernel, "_kept_launches", key, run,
                     lambda: KeptLaunch(layout_of(kernel), grid_blocks(run.shape)), lambda got: got.idle)
    # keep_idle may have dropped the KeptLaunch that launch's last key names: found anew
    # (a launch of another thread that looked it up just before sees it gone and forgets it)
    kernel._last_kept = None
    launch_gate.forget_dropped(kernel)  # the gate's run, if keep_idle dropped its key
    return kept
