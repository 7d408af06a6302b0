"""The fast path of a repeated launch gives what the full path gives."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.api import numpy_dtype
from gpuemu.machine import launch_cache, launch_plan

VECADD = r"""
extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

CHECKED = r"""
#include <assert.h>
extern "C" __global__ void k(const int *x, int *out, int n) {
    int i = threadIdx.x;
    assert(x[i] < n);
    if (i < 16) __syncthreads();
    out[i] = x[i] + 1;
}
"""

DYNAMIC = r"""
extern "C" __global__ void k(float *out) {
    extern __shared__ float s[];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
"""


def _vecadd(n, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return a, b, (gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.asarray(np.zeros_like(a)), np.int32(n))


def _kept(k):
    """The runs kept for k's plain launches, per call key: the idle ones, then
    the one the launch gate holds (machine/launch_gate.py)."""
    gate = k.__dict__.get("_gate_state")
    return {key: list(got.idle) + ([gate.run] if gate is not None and gate.got is got else [])
            for key, got in k.__dict__.get("_kept_launches", {}).items()}


def test_a_plain_launch_leaves_its_run_for_the_next_one_like_it():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    k((4,), (256,), args, stats=False)
    [(key, [run])] = _kept(k).items()
    k((4,), (256,), args, stats=False)
    assert _kept(k) == {key: [run]}            # the same run, taken and given back



def test_a_kept_run_holds_the_argument_array_its_one_native_call_is_given():
    # the kept range holds the array whose address the kept launch's native call passes (so it cannot outlive
    # it), which names blocks 0..grid-1 and the ctx it makes anew
    from gpuemu.machine import block_runner
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    k((4,), (256,), args, stats=False)
    [(_, [run])] = _kept(k).items()
    kept = run._kept_range
    argv = kept.argv
    assert (argv[block_runner.A_LIN0], argv[block_runner.A_LIN1]) == (0, 4)
    assert (argv[block_runner.A_CTX_START], argv[block_runner.A_CTX_WORDS]) == (
        run._ctx_start.ctypes.data, len(run._ctx_start))

@pytest.mark.parametrize("stats", [False, True])
def test_a_repeated_launch_gives_what_a_fresh_one_gives(stats):
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1000)
    for _ in range(3):
        again = k((4,), (256,), args, stats=stats)
    fresh = gpuemu.RawModule(code=VECADD).get_function("vecadd")((4,), (256,), args, stats=stats)
    assert again.stats == fresh.stats and again.stats_by_line == fresh.stats_by_line
    assert again.worst_requests == fresh.worst_requests and again.findings == fresh.findings == []
    assert (again.grid, again.block, again.shared_mem) == (fresh.grid, fresh.block, fresh.shared_mem)
    assert np.array_equal(args[2].get(), a + b)


def test_counters_of_a_repeated_launch_start_from_cold_caches():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(4096)
    first, again = (k((16,), (256,), args) for _ in range(2))
    assert again.stats == first.stats and again.stats["global_load_requests"] == 256


def test_each_launch_sees_its_own_arguments():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    for seed, n in ((1, 512), (2, 300), (3, 1)):
        a, b, args = _vecadd(512, seed)
        k((2,), (256,), args[:3] + (np.int32(n),), stats=False)
        c = args[2].get()
        assert np.array_equal(c[:n], a[:n] + b[:n]) and not c[n:].any()


def test_python_ints_and_numpy_arrays_take_the_kept_run_too():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(256)
    k((1,), (256,), args, stats=False)
    k((1,), (256,), args[:3] + (100,), stats=False)        # a Python int for the int n
    assert np.array_equal(args[2].get()[:100], a[:100] + b[:100])
    out = np.zeros(256, np.float32)
    k((1,), (256,), (a, b, out, 256), stats=False)           # copied in and back
    assert np.array_equal(out, a + b)
    assert len(_kept(k)) == 1


@pytest.mark.parametrize("ctype, value", [
    ("long long", -(1 << 40) - 3), ("unsigned long long", (1 << 64) - 5), ("unsigned", (1 << 32) - 1),
    ("short", -32768), ("unsigned char", 255), ("signed char", -128), ("int", -7),
])
def test_a_python_int_is_written_as_the_parameter_type(ctype, value):
    k = gpuemu.RawModule(code=f"""
extern "C" __global__ void k({ctype} v, {ctype} *out) {{ out[0] = v; }}
""").get_function("k")
    out = gpuemu.asarray(np.zeros(1, numpy_dtype(k.meta.params[0][1])))
    for v in (0, value, value):                  # the first launch, then the kept run's
        k(1, 1, (v, out), stats=False)
        assert int(out.get()[0]) == v


@pytest.mark.parametrize("bad, message", [
    ((2.5,), "is an integer, got the float 2.5"),
    ((1 << 31,), "value 2147483648 does not fit in i32"),
    ((np.zeros(4, np.float32),), "is a scalar"),
    ((), "takes 4 arguments, got 3"),
])
def test_a_bad_argument_is_refused_as_on_a_first_launch(bad, message):
    _, _, args = _vecadd(256)
    errors = []
    for repeated in (False, True):
        k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
        if repeated:
            k((1,), (256,), args, stats=False)
        with pytest.raises(gpuemu.LaunchError, match=message) as e:
            k((1,), (256,), args[:3] + bad, stats=False)
        errors.append(str(e.value))
        k((1,), (256,), args, stats=False)                  # and runs on afterwards
    assert errors[0] == errors[1]


def test_a_value_of_another_type_is_checked_again():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(256)
    k((1,), (256,), args, stats=False, workers=1)
    with pytest.raises(gpuemu.LaunchError, match="grid"):
        k((True,), (256,), args, stats=False, workers=1)
    with pytest.raises(gpuemu.LaunchError, match="workers must be a positive int, got True"):
        k((1,), (256,), args, stats=False, workers=True)


def test_a_lower_dynamic_shared_limit_is_checked_on_the_next_launch():
    k = gpuemu.RawModule(code=DYNAMIC).get_function("k")
    out = gpuemu.asarray(np.zeros(64, np.float32))
    k(1, 64, (out,), shared_mem=256, stats=False)
    assert out.get().tolist() == [63.0 - i for i in range(64)]
    k.max_dynamic_shared_size_bytes = 128
    with pytest.raises(gpuemu.LaunchError, match="shared"):
        k(1, 64, (out,), shared_mem=256, stats=False)


def test_a_failed_assert_on_a_repeated_launch_names_its_condition_and_thread():
    k = gpuemu.RawModule(code=CHECKED).get_function("k")
    x = gpuemu.asarray(np.arange(32, dtype=np.int32))
    out = gpuemu.asarray(np.zeros(32, np.int32))
    k(1, 32, (x, out, np.int32(32)), stats=False)
    k(1, 32, (x, out, np.int32(32)), stats=False)
    before = out.get()
    with pytest.raises(gpuemu.KernelError) as e:
        k(1, 32, (x, out, np.int32(8)), stats=False)
    f = e.value.findings[0]
    assert (f.kind, f.kernel, f.block, f.thread) == ("assert", "k", (0, 0, 0), (8, 0, 0))
    assert f.message == "Assertion `x[i] < n` failed"
    assert np.array_equal(out.get(), before)        # stopped before any store
    again = k(1, 32, (x, out, np.int32(32)), stats=False)
    assert [f.kind for f in again.findings] == ["barrier_divergence"]
    assert np.array_equal(out.get(), np.arange(32) + 1)


def test_a_finding_is_reported_on_every_repeated_launch():
    k = gpuemu.RawModule(code=CHECKED).get_function("k")
    x = gpuemu.asarray(np.arange(32, dtype=np.int32))
    out = gpuemu.asarray(np.zeros(32, np.int32))
    kinds = [[f.kind for f in k(1, 32, (x, out, np.int32(32)), stats=s).findings]
             for s in (False, False, False, True, True)]
    assert kinds == [["barrier_divergence"]] * 5


SOMETIMES_DIVERGENT = r"""
extern "C" __global__ void k(int *out, int n) {
    if (threadIdx.x < n) __syncthreads();
    out[threadIdx.x] = n;
}
"""


@pytest.mark.parametrize("stats", [False, True])
def test_a_clean_repeated_launch_after_a_divergent_one_reports_no_finding(stats):
    """Each launch's findings are its own: a kept run renews them after a launch that had some."""
    k = gpuemu.RawModule(code=SOMETIMES_DIVERGENT).get_function("k")
    out = gpuemu.asarray(np.zeros(32, np.int32))
    kinds = [[f.kind for f in k(1, 32, (out, np.int32(n)), stats=stats).findings]
             for n in (16, 64, 16, 16, 64, 64)]
    assert kinds == [["barrier_divergence"], [], ["barrier_divergence"], ["barrier_divergence"], [], []]


def test_a_launch_on_two_workers_takes_its_kept_run_and_gives_what_the_full_path_gives(monkeypatch):
    from gpuemu.machine import block_workers
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # on the workers, however small
    full = []
    monkeypatch.setattr(launch_plan, "take_run", lambda *a, f=launch_plan.take_run: full.append(1) or f(*a))
    for stats in (False, True):
        k = gpuemu.RawModule(code=CHECKED).get_function("k")
        x = gpuemu.asarray(np.arange(32, dtype=np.int32))
        outs = []
        for w in (1, 2, 2, 2):
            out = gpuemu.asarray(np.zeros(32, np.int32))
            la = k(4, 32, (x, out, np.int32(32)), stats=stats, workers=w)
            outs.append((out.get().tolist(), la.stats, la.stats_by_line, la.worst_requests, la.findings))
        assert outs[1] == outs[2] == outs[3] == outs[0] and outs[0][4][0].kind == "barrier_divergence"
    assert len(full) == 4            # each kernel's first launch at 1 and at 2 workers, then kept runs
    monkeypatch.setenv("GPUEMU_WORKERS", "2")
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(4096)
    one = k((16,), (256,), args, workers=1)
    two = [k((16,), (256,), args) for _ in range(2)]
    assert two[0].stats == two[1].stats == one.stats and np.array_equal(args[2].get(), a + b)
    assert len(full) == 6


def test_a_failed_assert_on_a_kept_launch_on_two_workers_names_its_condition_and_drops_the_run(monkeypatch):
    from gpuemu.machine import block_workers
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})
    k = gpuemu.RawModule(code=CHECKED).get_function("k")
    x = gpuemu.asarray(np.arange(64, dtype=np.int32))
    out = gpuemu.asarray(np.zeros(64, np.int32))
    for _ in range(2):
        k(2, 32, (x, out, np.int32(64)), stats=False, workers=2)
    [[run]] = _kept(k).values()
    with pytest.raises(gpuemu.KernelError, match=r"x\[i\] < n"):
        k(2, 32, (x, out, np.int32(16)), stats=False, workers=2)
    assert _kept(k) == {next(iter(_kept(k))): []}       # a run that raised is not reused
    assert k(2, 32, (x, out, np.int32(64)), stats=False, workers=2).findings[0].kind == "barrier_divergence"


def test_pointer_arguments_of_a_repeated_launch_count_as_written_for_initcheck():
    mod = gpuemu.RawModule(code=r"""
extern "C" __global__ void fill(float* a) { a[threadIdx.x] = 2.0f; }
extern "C" __global__ void use(const float* a, float* out) { out[threadIdx.x] = a[threadIdx.x]; }
""")
    fill, use = mod.get_function("fill"), mod.get_function("use")
    fill(1, 32, (gpuemu.empty(32, np.float32),))
    fill(1, 32, (gpuemu.empty(32, np.float32),))
    buf = gpuemu.empty(32, np.float32)
    fill(1, 32, (buf,))                              # the kept run's launch
    la = use(1, 32, (buf, gpuemu.zeros(32, np.float32)), check=True)
    assert la.findings == []


def test_a_kept_run_holds_no_counters_and_no_arrays_of_its_launch():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    launch = k((4,), (256,), args)
    k((4,), (256,), args)
    [[kept]] = _kept(k).values()
    assert kept.stats is None
    assert kept.params.dtype == np.uint8                 # its own bytes, no argument object
    assert launch.stats["global_load_requests"] == 64


def test_few_call_keys_are_kept_per_kernel():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(64)
    for g in range(1, launch_plan.PLANS_PER_KERNEL + 5):
        k((g,), (32,), args, stats=False)
    assert len(_kept(k)) == launch_plan.PLANS_PER_KERNEL


def test_a_call_key_whose_kept_runs_were_dropped_takes_the_full_path_again(monkeypatch):
    # launch_cache.launch remembers the last key's KeptLaunch; a launch of another key (l1=True:
    # not the kernel's last call key) that drops it makes the next call find the pool anew
    monkeypatch.setattr(launch_plan, "PLANS_PER_KERNEL", 1)
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    for _ in range(2):
        k((4,), (256,), args, stats=False)
    k((4,), (256,), args, stats=False, l1=True)         # kept: the plain key's runs are dropped
    assert [opts for *_, opts in _kept(k)] == [(("l1", bool, True),)]
    k((4,), (256,), args, stats=False)                  # the full path, kept again
    assert [opts for *_, opts in _kept(k)] == [()]
    assert np.array_equal(args[2].get(), a + b)


def test_a_kept_run_keeps_its_memory_system_for_the_next_launch_unless_large(monkeypatch):
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    first = k((4,), (256,), args)
    [[kept]] = _kept(k).values()
    ms = kept.memsys
    again = k((4,), (256,), args)
    assert kept.memsys is ms and again.stats == first.stats       # reset to cold caches, reused
    monkeypatch.setattr(launch_plan, "MAX_MEMSYS_BYTES", 0)
    third = k((4,), (256,), args)
    assert kept.memsys is None and third.stats == first.stats     # dropped: a new one next time


def test_a_repeated_launch_without_counters_gives_the_launch_a_fresh_one_gives():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    launches = [k((4,), (256,), args, stats=False) for _ in range(4)]   # the full path, then kept
    fresh = gpuemu.RawModule(code=VECADD).get_function("vecadd")((4,), (256,), args, stats=False)
    per_launch = {"seconds", "timeline", "compile_seconds"}
    for got in launches:
        assert type(got) is type(fresh)
        assert ({f: v for f, v in vars(got).items() if f not in per_launch}
                == {f: v for f, v in vars(fresh).items() if f not in per_launch})
        assert got.timeline["seconds"] == fresh.timeline["seconds"]


def test_changing_a_launch_leaves_the_next_ones_alone():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    for _ in range(3):
        la = k((4,), (256,), args, stats=False)
        la.stats["cycles"] = 99
        la.stats_by_line[1] = {"cycles": 1}
        la.worst_requests["x"] = 1
        la.findings.append("x")
        la.timeline["seconds"] = 5.0
    again = k((4,), (256,), args, stats=False)
    assert again.stats["cycles"] == 0 and again.stats_by_line == {} and again.worst_requests == {}
    assert again.findings == [] and again.timeline["seconds"] == 0.0


def test_each_kept_launch_takes_its_place_on_the_host_timeline():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    tl = gpuemu.timeline().reset("sm_90")
    s = gpuemu.Stream()
    got = [k((4,), (256,), args, stats=False, stream=s if i % 2 else None) for i in range(4)]
    assert [op.name for op in tl.ops] == ["vecadd"] * 4
    assert [la.timeline["stream"] for la in got] == [0, s.id, 0, s.id]


def test_an_argument_given_again_is_kept_a_new_one_is_written():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(512)
    n = np.int32(512)
    k((2,), (256,), (*args[:3], n), stats=False)
    k((2,), (256,), (*args[:3], n), stats=False)            # kept: the same objects
    c = gpuemu.asarray(np.zeros(512, np.float32))
    k((2,), (256,), (args[0], args[1], c, n), stats=False)   # a new output array
    assert np.array_equal(c.get(), a + b)
    k((2,), (256,), (args[1], args[1], c, np.int32(5)), stats=False)   # a new first array and n
    assert np.array_equal(c.get()[:5], 2 * b[:5]) and np.array_equal(c.get()[5:], (a + b)[5:])


def test_write_args_skips_what_the_buffer_holds_and_writes_the_rest():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(64)
    layout = launch_plan.layout_of(k)
    want = np.zeros(k.meta.param_bytes, np.uint8)
    written = launch_plan.new_written(layout)
    assert launch_plan.write_args(layout, want.data, args, True, written)
    raw = np.zeros_like(want)
    assert launch_plan.write_args(layout, raw.data, args, True, written)
    assert not raw.any()                                   # all there already: nothing written
    c = gpuemu.asarray(np.zeros(64, np.float32))
    assert launch_plan.write_args(layout, raw.data, (args[0], args[1], c, np.int32(64)), True, written)
    assert not raw[:16].any()                              # a and b: there already
    assert raw[16:24].view(np.uint64)[0] == c.ptr and raw[24:28].view(np.int32)[0] == 64


def test_a_kept_run_does_not_keep_its_last_launchs_arrays_alive():
    import gc
    import weakref
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    for _ in range(3):
        k((4,), (256,), args, stats=False)
    gone = weakref.ref(args[2])
    del args
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize("value", [np.float32(-0.0), np.float32(np.inf), np.float32(1.5e-42),
                                   np.frombuffer(np.uint32(0x7FA00001).tobytes(), np.float32)[0]])
def test_a_float_argument_of_a_repeated_launch_keeps_its_bits(value):
    k = gpuemu.RawModule(code=r"""
extern "C" __global__ void k(float v, float *out) { out[0] = v; }""").get_function("k")
    out = gpuemu.asarray(np.zeros(1, np.float32))
    for _ in range(3):
        k(1, 1, (np.float32(0), out), stats=False)
        k(1, 1, (value, out), stats=False)
        assert out.get().view(np.uint32)[0] == np.float32(value).view(np.uint32)


def test_workers_is_part_of_the_key_with_its_type():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")

    def key(options):
        return launch_cache.call_key(k, (1,), (32,), 0, 10, False, "functional", None, None, options)
    assert key({"workers": 1})[-1] == (("workers", int, 1),)
    assert key({"workers": 1, "l1": True})[-1] == (("l1", bool, True), ("workers", int, 1))
    assert key({"workers": 2})[-1] == (("workers", int, 2),)
    assert key({"workers": True}) is key({"workers": 0}) is key({"workers": 1.0}) is None


def test_a_launch_asking_for_one_worker_takes_its_kept_run():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    for _ in range(3):
        k((4,), (256,), args, stats=False, workers=1)
    [(key, [run])] = _kept(k).items()
    args[2].set(np.zeros(1024, np.float32))
    k((4,), (256,), args, stats=False, workers=1)
    assert _kept(k) == {key: [run]} and np.array_equal(args[2].get(), a + b)


def test_a_kept_launch_starts_from_the_ctx_its_run_was_made_with():
    from gpuemu.jit import abi
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    for _ in range(2):
        k((4,), (256,), args, stats=False)
    [[run]] = _kept(k).values()
    nothing = np.zeros_like(run.params)              # n = 0: the kernel would store nothing
    run.ctx[abi.C_PARAMS] = nothing.ctypes.data      # as a launch may leave its ctx
    args[2].set(np.zeros(1024, np.float32))
    k((4,), (256,), args, stats=False)
    assert np.array_equal(args[2].get(), a + b)


def test_the_last_calls_key_serves_only_a_call_of_the_very_same_parts():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    grid, block = (4,), (256,)
    for _ in range(2):
        k(grid, block, args, stats=False)
    assert k(grid, block, args, stats=False, mode="timing").timing is not None
    assert k(grid, block, args, stats=True).stats["warp_instructions"] > 0
    with pytest.raises(gpuemu.LaunchError, match="budget must be a positive int"):
        k(grid, block, args, stats=False, budget=float(10 ** 6))
    with pytest.raises(gpuemu.LaunchError, match="workers must be a positive int, got True"):
        k(grid, block, args, stats=False, workers=True)


def test_a_null_pointer_where_a_dead_array_was_is_written_again():
    import gc
    errors = []
    for repeated in (False, True):
        k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
        _, _, args = _vecadd(256)
        for _ in range(3 if repeated else 0):     # kept: the buffer holds c's pointer
            k((1,), (256,), args, stats=False)
        a, b, n = args[0], args[1], args[3]
        del args
        gc.collect()                                # c is gone: its reference is dead
        with pytest.raises(gpuemu.KernelError) as e:
            k((1,), (256,), (a, b, None, n), stats=False)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


def test_gpuemu_workers_is_read_on_every_kept_launch(monkeypatch):
    from gpuemu.machine import block_workers
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    k((4,), (256,), args, stats=False)
    [key] = _kept(k)
    on_workers = []
    monkeypatch.setattr(block_workers, "run_parallel", lambda run, batches, n, progress: on_workers.append(n)
                        or run.run_batches(batches))
    ran = []
    for env in (None, "1", "2", "x", None):
        if env is None:
            monkeypatch.delenv("GPUEMU_WORKERS", raising=False)
        else:
            monkeypatch.setenv("GPUEMU_WORKERS", env)
        ran.append(launch_cache.launch(k, key, args, None, {}) is not None and len(on_workers))
    # unset, "1" and a value that is no number: one worker; "2": the kept run on two
    assert ran == [0, 0, 1, 1, 1] and on_workers == [2]


def test_a_kept_launch_calls_the_range_function_block_runner_names_then(monkeypatch):
    # benchmarks/bench_workers.py wraps block_runner._range_function to time the native calls
    from gpuemu.machine import block_runner
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    k((4,), (256,), args, stats=False)
    calls = []
    real = block_runner._range_function

    def wrapped():
        fn = real()
        return lambda *argv: calls.append(1) or fn(*argv)
    monkeypatch.setattr(block_runner, "_range_function", wrapped)
    args[2].set(np.zeros(1024, np.float32))
    k((4,), (256,), args, stats=False)
    assert calls == [1] and np.array_equal(args[2].get(), a + b)
    monkeypatch.setattr(block_runner, "_range_function", real)
    k((4,), (256,), args, stats=False)
    assert calls == [1]


SPIN = r"""
extern "C" __global__ void k(volatile int *flag, int *out) {
    while (flag[0] == 0) { }
    out[threadIdx.x] = flag[0];
}
"""


def test_other_threads_run_while_a_kept_launch_runs_its_blocks():
    # the kept launch's native call lets go of the GIL, as a ctypes call does: the
    # kernel waits for a flag that only another Python thread sets
    import threading
    k = gpuemu.RawModule(code=SPIN).get_function("k")
    flag = gpuemu.asarray(np.ones(1, np.int32))
    out = gpuemu.asarray(np.zeros(32, np.int32))
    k(1, 32, (flag, out), stats=False, budget=10**8)      # the full path (the flag is set)
    flag.set(np.zeros(1, np.int32))
    setter = threading.Timer(0.05, flag.set, (np.full(1, 7, np.int32),))
    setter.start()
    la = k(1, 32, (flag, out), stats=False, budget=10**8)  # kept: waits for the thread
    setter.join()
    assert la.findings == [] and out.get().tolist() == [7] * 32


def test_a_kept_range_calls_the_native_range_loop_directly():
    from gpuemu.machine import block_runner
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    k((4,), (256,), args, stats=False)
    [(_, [run])] = _kept(k).items()
    args[2].set(np.zeros(1024, np.float32))
    assert run._kept_range.call() == block_runner.DONE      # what the ctypes call of the range loop gives
    assert np.array_equal(args[2].get(), a + b)


def test_a_direct_call_that_cannot_be_built_leaves_the_ctypes_call(monkeypatch):
    # any failure building the direct wrapper (not only a missing C API) falls
    # back: the launch that keeps its run still returns, later ones are right
    from gpuemu.machine import block_runner

    def broken(*_):
        raise RuntimeError("no object code")
    monkeypatch.setattr(block_runner, "_direct", [])
    monkeypatch.setattr(block_runner.engine, "compile_to_object", broken)
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd(1024)
    k((4,), (256,), args, stats=False)
    [(_, [run])] = _kept(k).items()
    assert run._kept_range.call is None
    args[2].set(np.zeros(1024, np.float32))
    k((4,), (256,), args, stats=False)
    assert np.array_equal(args[2].get(), a + b)
    monkeypatch.setattr(block_runner, "_direct", [])       # the next test builds it anew


def test_a_kept_launchs_counters_read_after_later_launches_and_after_its_run_went_are_its_own():
    # each kept launch's counters, kept requests and timeline are made when first read (from what
    # its end copied out), so they are that launch's even when read after the run's later
    # launches of other lengths, and after the run itself is gone
    import gc
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    sizes = (1024, 700, 1000, 300, 1024, 513)
    launches = [k((4,), (256,), args[:3] + (np.int32(n),)) for n in sizes]
    k.__dict__["_kept_launches"].clear()
    gc.collect()
    for n, got in zip(sizes, launches):
        fresh = gpuemu.RawModule(code=VECADD).get_function("vecadd")((4,), (256,), args[:3] + (np.int32(n),))
        assert got.stats == fresh.stats and list(got.stats) == list(fresh.stats)
        assert got.stats_by_line == fresh.stats_by_line
        assert got.worst_requests == fresh.worst_requests
        assert got.timeline["seconds"] == fresh.timeline["seconds"]
    assert len({la.stats["global_load_requests"] for la in launches}) == 4


def test_a_kept_launch_adds_its_counters_up_only_when_they_are_first_read(monkeypatch):
    from gpuemu.stats import Stats
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd(1024)
    first = k((4,), (256,), args)
    ends, defer_end = [], Stats.defer_end

    def spy(self, *a):
        ends.append(self)
        return defer_end(self, *a)
    monkeypatch.setattr(Stats, "defer_end", spy)
    kept = k((4,), (256,), args)
    assert ends == [] and kept.timeline["seconds"] == first.timeline["seconds"] > 0
    assert kept.stats == first.stats and len(ends) == 1
    assert kept.stats_by_line == first.stats_by_line and kept.worst_requests == first.worst_requests
    assert len(ends) == 1


def test_a_kept_launch_that_another_thread_drops_while_it_runs_is_not_remembered(monkeypatch):
    """Thread X looks its key up; thread Y's launch of another key keeps its run and drops X's
    (one key per kernel); X must not then remember the dropped KeptLaunch for its next launches
    (its runs would be held outside the kernel's pool and its limits)."""
    from collections import OrderedDict
    monkeypatch.setattr(launch_plan, "PLANS_PER_KERNEL", 1)
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a = gpuemu.asarray(np.ones(1024, np.float32))
    c = gpuemu.asarray(np.zeros(1024, np.float32))
    args = (a, a, c, np.int32(1024))
    k((4,), (256,), args, stats=False)
    k((4,), (256,), args, stats=False)
    [key_a] = k._kept_launches
    k._last_kept = None

    class Pool(OrderedDict):
        other_thread_runs = True

        def get(self, key, default=None):
            got = OrderedDict.get(self, key, default)
            if key == key_a and Pool.other_thread_runs:
                Pool.other_thread_runs = False
                k((4,), (256,), args, stats=False, l1=True)     # Y: keeps another key, drops key_a
            return got
    k._kept_launches = Pool(k._kept_launches)
    k((4,), (256,), args, stats=False)                          # X
    assert np.array_equal(c.get(), np.full(1024, 2, np.float32))
    assert k._last_kept is None or k._last_kept[1] in k._kept_launches.values()

