"""launch_gate: a kept launch checked and run in one native call (built there without
counters, ended by launch_gate.finish with them), held to the Python path
(launch_cache.launch) that stays its definition."""
from __future__ import annotations

import dataclasses
import gc
import sys
import threading
import tracemalloc

import numpy as np
import pytest

import gpuemu
from gpuemu.errors import KernelError
from gpuemu.machine import DEFAULT_BUDGET, launch_cache, launch_gate

VECADD = r"""
extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

# reads a[idx[i]]: out of bounds where idx says so
GATHER = r"""
extern "C" __global__ void gather(const float *a, const int *idx, float *c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[idx[i]];
}
"""

# a barrier that the threads below flag[0] reach: all of a block's, or some
SOME_SYNC = r"""
extern "C" __global__ void some_sync(float *c, const int *flag) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < flag[0]) __syncthreads();
    c[i] = 1.0f;
}
"""

pytestmark = pytest.mark.skipif(launch_gate.method() is None, reason="no CPython C API here")


@pytest.fixture(autouse=True)
def _fresh_timeline():
    """An empty timeline (no stream seen: the gate takes only the default
    stream's launches), as an earlier test may have left it."""
    gpuemu.timeline().reset()
    yield
    gpuemu.timeline().reset()


def _vecadd(n, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return a, b, (gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.asarray(np.zeros_like(a)), np.int32(n))


def _armed_vecadd(n=1024):
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(n)
    for _ in range(2):                  # the full path, then the first kept launch (it arms the gate)
        k(((n + 255) // 256,), (256,), args, stats=False)
    assert k._gate is not None
    return k, a, b, args


def _parts(grid=(4,), block=(256,), args=None, shared_mem=0, budget=DEFAULT_BUDGET, stats=False,
           mode="functional", scheduler=None, block_scheduler=None, stream=None, options=None):
    return (grid, block, args, shared_mem, budget, stats, mode, scheduler, block_scheduler, stream,
            {} if options is None else options)


def _fields(launch):
    """A Launch's fields but its wall time."""
    return {k: v for k, v in dataclasses.asdict(launch).items() if k != "seconds"}


def test_a_kept_launch_without_counters_arms_the_gate():
    k, *_ = _armed_vecadd()
    assert k._gate_state.run is not None


def test_the_gate_makes_the_launch_without_the_python_path(monkeypatch):
    k, a, b, args = _armed_vecadd()
    args[2].set(np.zeros(1024, np.float32))
    monkeypatch.setattr(launch_cache, "launch", lambda *a, **kw: pytest.fail("the Python path ran"))
    launch = k((4,), (256,), args, stats=False)
    assert np.array_equal(args[2].get(), a + b)
    assert launch.kernel == "vecadd" and launch.grid == (4, 1, 1) and launch.seconds > 0


def test_a_gate_launch_is_the_python_paths_launch():
    k, a, b, args = _armed_vecadd()
    gpuemu.timeline().reset()
    k._gate = None                      # this call: the Python path
    by_python = k((4,), (256,), args, stats=False)
    ops_python = list(gpuemu.timeline().ops)
    gpuemu.timeline().reset()
    by_gate = k((4,), (256,), args, stats=False)
    assert _fields(by_gate) == _fields(by_python)
    assert gpuemu.timeline().ops == ops_python


def test_gate_launches_follow_a_copy_on_the_timeline_as_the_python_path_places_them():
    k, a, b, args = _armed_vecadd()
    placed = []
    for python in (True, False):
        tl = gpuemu.timeline().reset()
        args[0].set(a)                  # a synchronous copy: the host's time moves on
        if python:
            k._gate = None
        first = k((4,), (256,), args, stats=False).timeline
        placed.append((first, tl.host_time, tl.default_ready, dict(tl.engine_free), list(tl.ops)))
    assert placed[0] == placed[1]
    assert placed[0][0]["start"] > 0


def _hits(k) -> int:
    """Launches k's gate has made."""
    return k._gate_state.words[launch_gate.W["hits"]]


def test_a_gate_launch_adds_no_op_past_the_timelines_limit():
    k, a, b, args = _armed_vecadd()
    tl = gpuemu.timeline().reset()
    tl.max_ops = 0
    try:
        hits = _hits(k)
        k((4,), (256,), args, stats=False)
        assert _hits(k) == hits + 1 and tl.ops == []
    finally:
        tl.reset()


def test_a_timeline_time_that_is_not_a_float_is_placed_by_python(monkeypatch):
    k, a, b, args = _armed_vecadd()
    handed = []
    finish = launch_gate.finish
    monkeypatch.setattr(launch_gate, "finish", lambda *a: handed.append(a[2]) or finish(*a))
    tl = gpuemu.timeline().reset()
    tl.host_time = 2                    # an int: the gate hands the placing back
    try:
        launch = k((4,), (256,), args, stats=False)
        assert launch.timeline["start"] == 2 and tl.ops[-1].start == 2
        assert [code for code, _ in handed] == [launch_gate.block_runner.DONE]
    finally:
        tl.reset()


def test_a_renamed_kernel_is_placed_under_its_new_name():
    k, a, b, args = _armed_vecadd()
    k.name = "renamed"
    tl = gpuemu.timeline().reset()
    assert type(k._gate(*_parts(args=args))) is gpuemu.Launch
    assert tl.ops[-1].name == "renamed"


def test_the_gate_is_not_armed_while_gpuemu_workers_is_set(monkeypatch):
    monkeypatch.setenv("GPUEMU_WORKERS", "1")
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    for _ in range(3):
        k((4,), (256,), args, stats=False)
    assert k._gate is None


def test_the_gate_is_not_armed_once_a_stream_is_seen():
    tl = gpuemu.timeline().reset()
    try:
        k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
        _, _, args = _vecadd(1024)
        k((4,), (256,), args, stats=False, stream=gpuemu.Stream())
        for _ in range(3):
            k((4,), (256,), args, stats=False)
        assert k._gate is None
    finally:
        tl.reset()


def test_options_that_are_not_a_dict_are_not_the_gates():
    k, a, b, args = _armed_vecadd()
    assert k._gate(*_parts(args=args)[:10], ()) is None


def test_a_grid_of_true_is_not_a_grid_of_one():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(256)
    for _ in range(2):
        k((1,), (256,), args, stats=False)
    assert type(k._gate(*_parts(grid=(1,), args=args))) is gpuemu.Launch
    assert k._gate(*_parts(grid=(True,), args=args)) is None
    assert k._gate(*_parts(grid=(1,), block=(256.0,), args=args)) is None


@pytest.mark.parametrize("change", [
    dict(stats=True), dict(grid=(2,)), dict(block=(128,)), dict(shared_mem=16),
    dict(budget=DEFAULT_BUDGET + 1), dict(mode="timing"), dict(scheduler="gto"),
    dict(block_scheduler="x"), dict(stream=object()), dict(options={"l1": True}),
    dict(options={"workers": 2}), dict(grid=(4.0,)), dict(grid=4), dict(shared_mem=False)])
def test_a_call_unlike_the_armed_one_is_not_the_gates(change):
    k, a, b, args = _armed_vecadd()
    assert k._gate(*_parts(args=args, **change)) is None
    assert k._gate_state.words[0] == launch_gate.IDLE       # still armed, untouched


def test_equal_launch_parts_of_other_objects_are_the_gates():
    k, a, b, args = _armed_vecadd()
    grid, block = tuple([4]), tuple([256])
    got = k._gate(*_parts(grid=grid, block=block, args=tuple(args), mode="".join("functional")))
    assert type(got) is gpuemu.Launch


def test_workers_one_given_as_the_armed_call_gave_it_is_the_gates():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    for _ in range(2):
        k((4,), (256,), args, stats=False, workers=1)
    assert type(k._gate(*_parts(args=args, options={"workers": 1}))) is gpuemu.Launch
    assert k._gate(*_parts(args=args)) is None              # no options: not the armed call's
    assert k._gate(*_parts(args=args, options={"workers": True})) is None


def test_gpuemu_workers_set_sends_a_call_to_the_python_path(monkeypatch):
    k, a, b, args = _armed_vecadd()
    monkeypatch.setenv("GPUEMU_WORKERS", "2")
    assert k._gate(*_parts(args=args)) is None
    monkeypatch.delenv("GPUEMU_WORKERS")
    assert type(k._gate(*_parts(args=args))) is gpuemu.Launch


def test_another_argument_takes_the_python_path_and_arms_the_gate_for_it():
    k, a, b, args = _armed_vecadd()
    a2, b2, args2 = _vecadd(1024, seed=1)
    assert k._gate(*_parts(args=args2)) is None
    k((4,), (256,), args2, stats=False)
    assert np.array_equal(args2[2].get(), a2 + b2)
    assert [len(runs) for runs in launch_cache_runs(k)] == [1]        # the one run, taken back
    assert type(k._gate(*_parts(args=args2))) is gpuemu.Launch
    assert k._gate(*_parts(args=args)) is None


def launch_cache_runs(k):
    gate = k._gate_state
    return [list(got.idle) + ([gate.run] if gate.got is got else []) for got in k._kept_launches.values()]


def test_a_new_array_where_a_freed_one_was_is_not_taken_for_it():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    out = args[2]
    for _ in range(2):
        k((4,), (256,), (args[0], args[1], out, args[3]), stats=False)
    del out, args
    gc.collect()
    for seed in range(5):               # new arrays, some perhaps at a freed one's address
        a, b, args = _vecadd(1024, seed)
        k((4,), (256,), args, stats=False)
        assert np.array_equal(args[2].get(), a + b)


def test_a_number_argument_is_compared_by_identity():
    k, a, b, args = _armed_vecadd()
    n = np.int32(512)
    assert k._gate(*_parts(args=args[:3] + (n,))) is None
    args[2].set(np.zeros(1024, np.float32))
    k((4,), (256,), args[:3] + (n,), stats=False)
    got = args[2].get()
    assert np.array_equal(got[:512], (a + b)[:512]) and not got[512:].any()


def test_a_new_device_memory_is_not_the_gates():
    k, a, b, args = _armed_vecadd()
    launch_cache._memories._device_memory = None
    try:
        a2, b2, args2 = _vecadd(1024)   # on a new device memory
        assert k._gate(*_parts(args=args)) is None
        k((4,), (256,), args2, stats=False)
        assert np.array_equal(args2[2].get(), a2 + b2)
    finally:
        launch_cache._memories._device_memory = None


def test_setting_the_dynamic_shared_limit_unarms_the_gate():
    k, a, b, args = _armed_vecadd()
    k.max_dynamic_shared_size_bytes = 1024
    assert k._gate is None
    k((4,), (256,), args, stats=False)
    assert np.array_equal(args[2].get(), a + b)


def _armed(code, name, grid, args, stats=False):
    k = gpuemu.RawModule(code=code).get_function(name)
    for _ in range(2):
        k(grid, (256,), args, stats=stats)
    assert k._gate is not None
    return k


@pytest.mark.parametrize("stats", [False, True])
def test_a_fault_in_a_gate_launch_is_the_python_paths_error(stats):
    src = gpuemu.asarray(np.ones(512, np.float32))
    idx, dst = gpuemu.asarray(np.arange(512, dtype=np.int32)), gpuemu.asarray(np.zeros(512, np.float32))
    errors = []
    for python in (True, False):
        idx.set(np.arange(512, dtype=np.int32))
        k = _armed(GATHER, "gather", (2,), (src, idx, dst), stats)
        idx.set(np.full(512, 1 << 20, dtype=np.int32))    # the same arguments, now out of bounds
        if python:
            k._gate = None
        with pytest.raises(KernelError) as err:
            k((2,), (256,), (src, idx, dst), stats=stats)
        errors.append(str(err.value))
        idx.set(np.arange(512, dtype=np.int32))
        k((2,), (256,), (src, idx, dst), stats=stats)     # the kernel launches on
        assert np.array_equal(dst.get(), np.ones(512, np.float32))
    assert errors[0] == errors[1] and "gather" in errors[0]


def test_findings_of_a_gate_launch_are_the_python_paths_and_the_next_starts_without():
    c, flag = gpuemu.asarray(np.zeros(512, np.float32)), gpuemu.asarray(np.array([256], np.int32))
    found = []
    for python in (True, False):
        flag.set(np.array([256], np.int32))
        k = _armed(SOME_SYNC, "some_sync", (2,), (c, flag))
        flag.set(np.array([16], np.int32))                 # now a barrier only some threads reach
        if python:
            k._gate = None
        found.append(k((2,), (256,), (c, flag), stats=False).findings)
        flag.set(np.array([256], np.int32))
        assert k((2,), (256,), (c, flag), stats=False).findings == []    # the next starts clean
    assert found[0] == found[1] and found[0]


def _growth(k, call, watched: list, warm: int, n: int) -> tuple:
    """After `warm` calls, what `n` more change: the watched objects'
    reference counts, traced memory (bytes) and the gate's launches."""
    tl = gpuemu.timeline()

    def calls(count):
        for i in range(count):
            call()
            if i % 100 == 99:
                tl.reset()
        gc.collect()
    calls(warm)
    tracemalloc.start()
    refs, mem, hits = [sys.getrefcount(o) for o in watched], tracemalloc.get_traced_memory()[0], _hits(k)
    calls(n)
    now = [sys.getrefcount(o) for o in watched]
    grown = [a - b for a, b in zip(now, refs)], tracemalloc.get_traced_memory()[0] - mem, _hits(k) - hits
    tracemalloc.stop()
    return grown


def test_gate_launches_keep_no_memory_and_no_reference():
    k, a, b, args = _armed_vecadd()
    run = k._gate_state.run
    watched = [launch_gate._objects["zero_float"], run._launch_fields, k, run, k.name, *args]
    refs, mem, hits = _growth(k, lambda: k((4,), (256,), args, stats=False), watched, 200, 2000)
    assert hits == 2000 and refs == [0] * len(watched)
    assert mem < 4096                   # a float kept per launch would be 48 KB


def test_threads_launching_one_kernel_each_get_their_own_results():
    k, a, b, args = _armed_vecadd()
    sets = [_vecadd(1024, seed) for seed in range(4)]
    bad = []

    def work(a, b, args):
        for _ in range(200):
            k((4,), (256,), args, stats=False)
            if not np.array_equal(args[2].get(), a + b):
                bad.append(1)
    threads = [threading.Thread(target=work, args=s) for s in sets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_a_run_taken_back_and_dropped_is_not_kept_alive_by_the_gate():
    import weakref
    src = gpuemu.asarray(np.ones(512, np.float32))
    idx, dst = gpuemu.asarray(np.arange(512, dtype=np.int32)), gpuemu.asarray(np.zeros(512, np.float32))
    k = _armed(GATHER, "gather", (2,), (src, idx, dst))
    run = weakref.ref(k._gate_state.run)
    bad = gpuemu.asarray(np.full(512, 1 << 20, dtype=np.int32))
    with pytest.raises(KernelError):    # new arguments: the Python path takes the run; it faults
        k((2,), (256,), (src, bad, dst), stats=False)
    gc.collect()
    assert run() is None


def _armed_counted(n=1024):
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(n)
    for _ in range(2):
        k(((n + 255) // 256,), (256,), args)
    assert k._gate is not None and k._gate_state.words[launch_gate.W["counted"]] == 1
    return k, a, b, args


def test_a_kept_launch_with_counters_arms_the_gate_and_it_makes_the_next(monkeypatch):
    k, a, b, args = _armed_counted()
    args[2].set(np.zeros(1024, np.float32))
    hits = _hits(k)
    monkeypatch.setattr(launch_cache, "launch", lambda *a, **kw: pytest.fail("the Python path ran"))
    launch = k((4,), (256,), args)
    assert _hits(k) == hits + 1
    assert np.array_equal(args[2].get(), a + b)
    assert launch.stats["global_load_requests"] > 0


def test_a_gate_launch_with_counters_is_the_python_paths_launch():
    k, a, b, args = _armed_counted()
    got = []
    for python in (True, False):
        tl = gpuemu.timeline().reset()
        hits = _hits(k)
        if python:
            k._gate = None
        launch = k((4,), (256,), args)
        assert _hits(k) == hits + (not python)
        got.append((_fields(launch), list(tl.ops)))
    assert got[0] == got[1]
    assert got[0][0]["stats"]["cycles"] > 0 and got[0][0]["stats_by_line"] and got[0][0]["worst_requests"]


def test_counters_read_after_later_gate_launches_are_each_launchs_own():
    src = gpuemu.asarray(np.ones(4096, np.float32))
    idx, dst = gpuemu.asarray(np.arange(512, dtype=np.int32)), gpuemu.asarray(np.zeros(512, np.float32))
    k = _armed(GATHER, "gather", (2,), (src, idx, dst), True)
    spreads = (1, 8, 3, 1)              # each launch its own access pattern, so its own counters
    hits = _hits(k)
    launches = []
    for spread in spreads:
        idx.set(np.arange(512, dtype=np.int32) * spread % 4096)
        launches.append(k((2,), (256,), (src, idx, dst)))
    assert _hits(k) == hits + len(spreads)
    for spread, launch in zip(spreads, launches):        # read now, after every launch ran
        idx.set(np.arange(512, dtype=np.int32) * spread % 4096)
        k._gate = None
        alone = k((2,), (256,), (src, idx, dst))
        assert (launch.stats, launch.stats_by_line) == (alone.stats, alone.stats_by_line)
    assert launches[0].stats["global_load_sectors"] != launches[1].stats["global_load_sectors"]


def test_a_call_without_counters_is_not_the_gate_armed_with_them():
    k, a, b, args = _armed_counted()
    assert k._gate(*_parts(args=args, stats=False)) is None
    handed = k._gate(*_parts(args=args, stats=True))
    assert type(handed) is tuple                                      # handed back to end
    assert launch_gate.finish(k, k._gate, handed).stats["cycles"] > 0


def test_gate_launches_with_counters_keep_no_memory_and_no_reference():
    k, a, b, args = _armed_counted()
    run = k._gate_state.run
    watched = [k, run, k.name, k._gate_state.held[-1], *args]     # held[-1]: the bound renew_kept
    refs, mem, hits = _growth(k, lambda: k((4,), (256,), args).stats, watched, 100, 500)
    assert hits == 500 and refs == [0] * len(watched)
    assert mem < 8192


def test_a_gate_launch_that_faults_lets_go_of_its_run():
    import weakref
    src = gpuemu.asarray(np.ones(512, np.float32))
    idx, dst = gpuemu.asarray(np.arange(512, dtype=np.int32)), gpuemu.asarray(np.zeros(512, np.float32))
    k = _armed(GATHER, "gather", (2,), (src, idx, dst))
    run = weakref.ref(k._gate_state.run)
    idx.set(np.full(512, 1 << 20, dtype=np.int32))      # the armed arguments, now out of bounds
    with pytest.raises(KernelError):
        k((2,), (256,), (src, idx, dst), stats=False)
    gc.collect()
    assert run() is None and k._gate is None


def test_a_failure_inside_the_gate_raises_it_and_lets_go_of_the_run(monkeypatch):
    import weakref
    k, a, b, args = _armed_vecadd()
    run = weakref.ref(k._gate_state.run)

    class Refused(Exception):
        pass

    def refuse(self, name, value):      # the gate sets the timeline's default_ready: it fails
        if name == "default_ready":
            raise Refused(name)
        object.__setattr__(self, name, value)
    monkeypatch.setattr(type(gpuemu.timeline()), "__setattr__", refuse, raising=False)
    with pytest.raises(Refused):
        k((4,), (256,), args, stats=False)
    monkeypatch.undo()
    gc.collect()
    assert run() is None and k._gate is None
    gpuemu.timeline().reset()
    args[2].set(np.zeros(1024, np.float32))
    k((4,), (256,), args, stats=False)                  # the kernel launches on
    assert np.array_equal(args[2].get(), a + b)


def test_a_kernel_called_with_two_keys_in_turn_keeps_one_gated():
    k, a, b, args = _armed_counted()
    gate = k._gate
    hits = _hits(k)
    for _ in range(6):
        k((4,), (256,), args, stats=False)               # the other key: the Python path
        k((4,), (256,), args)                            # the armed one: the gate
    assert k._gate is gate and _hits(k) == hits + 6


def test_an_interrupt_while_a_gate_launch_ends_lets_go_of_its_run(monkeypatch):
    import weakref
    k, a, b, args = _armed_counted()
    run = weakref.ref(k._gate_state.run)

    def interrupted(self):
        raise KeyboardInterrupt
    monkeypatch.setattr(type(k._gate_state.run), "finish_kept", interrupted)
    with pytest.raises(KeyboardInterrupt):
        k((4,), (256,), args)
    monkeypatch.undo()
    gc.collect()
    assert run() is None and k._gate is None
    assert k((4,), (256,), args).stats["global_load_requests"] > 0      # the kernel launches on


def test_a_kernel_launched_at_sizes_in_turn_is_gated_after_each_turns_first_launches():
    # benchmarks/scale.py's rounds: every size in turn, 20 launches of a small one, 2 of a
    # large one; a turn's first launch finds the gate armed for the size before
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    turns = [(n, 20, _vecadd(n)[2]) for n in (256, 1024, 4096)] + [(16384, 2, _vecadd(16384)[2])]
    for n, _, args in turns:
        for _ in range(2):
            k((n // 256,), (256,), args, stats=False)
    for rnd in range(4):
        gated = []
        for n, launches, args in turns:
            hits = _hits(k)
            for _ in range(launches):
                k((n // 256,), (256,), args, stats=False)
            gated.append(_hits(k) - hits)
    assert min(gated[:3]) >= 18         # the last round's small turns: two launches at most not gated
