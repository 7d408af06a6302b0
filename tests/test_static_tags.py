"""Static tags (gpuemu/machine/static_tags.py): runs of kernels whose
__shared__ arrays share tags never see one another's bounds, and hold or
wait for nothing."""
import ctypes
import threading

import numpy as np
import pytest
import gpuemu
from gpuemu.jit import abi
from gpuemu.machine import static_tags

WIDE = r"""
extern "C" __global__ void wide(float *out, int reps) {
    __shared__ float a[256];
    __shared__ float b[256];
    float acc = 0.0f;
    for (int r = 0; r < reps; r++) {
        a[threadIdx.x] = r;
        b[255 - threadIdx.x] = r;
        __syncthreads();
        acc += a[(threadIdx.x + r) % 256] + b[(threadIdx.x * 7 + r) % 256];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}"""

NARROW = r"""
extern "C" __global__ void narrow(float *out, int reps) {
    __shared__ float c[32];
    float acc = 0.0f;
    for (int r = 0; r < reps; r++) {
        c[threadIdx.x] = r;
        __syncwarp();
        acc += c[(threadIdx.x + r) % 32];
        __syncwarp();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}"""

DYNAMIC = r"""
extern "C" __global__ void rotate(float *out, int reps) {
    extern __shared__ float d[];
    float acc = 0.0f;
    for (int r = 0; r < reps; r++) {
        d[threadIdx.x] = r;
        __syncthreads();
        acc += d[(threadIdx.x + r) % blockDim.x];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}"""

REPS = 40
SUM = float(sum(range(REPS)))


def _in_threads(jobs: list) -> list:
    """Run each (kernel, grid, block, shared_mem, want) 30 times on its own
    thread, all at once; what went wrong (wrong values, kernel errors)."""
    failures = []

    def go(k, grid, block, shared, want):
        out = gpuemu.zeros(grid * block, dtype=np.float32)
        try:
            for r in range(30):
                k((grid,), (block,), (out, np.int32(REPS)), shared, stats=r % 3 == 0)
                if not np.array_equal(out.get(), np.full(grid * block, want, np.float32)):
                    failures.append((k.name, "wrong values"))
        except gpuemu.KernelError as e:
            failures.append(str(e).splitlines()[0])

    threads = [threading.Thread(target=go, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def test_two_kernels_launched_at_once_from_two_threads_each_see_their_own_shared_arrays():
    # both kernels' first __shared__ array has the first static tag, 1 KB in one, 128 bytes in the other
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    assert _in_threads([(wide, 16, 256, 0, 2 * SUM), (narrow, 16, 32, 0, SUM)]) == []


def test_one_kernel_at_two_dynamic_shared_sizes_at_once_sees_each_launch_s_own_size():
    k = gpuemu.RawModule(code=DYNAMIC).get_function("rotate")
    assert _in_threads([(k, 16, 256, 256 * 4, SUM), (k, 16, 32, 32 * 4, SUM)]) == []


OVER = r"""
extern "C" __global__ void over(float *out, int k) {
    __shared__ float c[32];
    c[threadIdx.x + k] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = c[threadIdx.x];
}"""

FORGED = r"""
extern "C" __global__ void forged(float *out, unsigned long long step) {
    __shared__ float a[32];
    a[threadIdx.x] = 1.0f;
    float *p = (float *)((unsigned long long)a + (step << 48));
    out[threadIdx.x] = p[threadIdx.x];
}"""


def test_an_overrun_names_its_own_kernel_s_array_while_another_kernel_runs():
    """`over` writes one past its 128-byte array while `wide`, whose first
    array (the same tag) is 1 KB, runs on another thread: every launch
    faults, naming `over`'s array and bounds, checked or not."""
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    over = gpuemu.RawModule(code=OVER).get_function("over")
    stop, errors = threading.Event(), []

    def keep_wide_running():
        x = gpuemu.zeros(16 * 256, dtype=np.float32)
        while not stop.is_set():
            wide((16,), (256,), (x, np.int32(REPS)), stats=False)
    t = threading.Thread(target=keep_wide_running)
    t.start()
    try:
        out = gpuemu.zeros(32, dtype=np.float32)
        for r in range(30):
            try:
                over((1,), (32,), (out, np.int32(1)), stats=r % 3 == 0, check=r % 5 == 0)
                errors.append("no fault")
            except gpuemu.KernelError as e:
                errors.append(str(e).split(": ", 1)[1])
    finally:
        stop.set()
        t.join()
    assert errors == ["write of 4 bytes at shared address 0x80 outside the shared array 'c' [0, 128)"] * 30


def _meta(meta_objects: list, dynamic_offset: int = 0):
    class Meta:
        objects = meta_objects
    Meta.dynamic_offset = dynamic_offset
    return Meta


def test_a_run_s_table_holds_its_static_tags_entries_in_tag_order_reached_from_ctx():
    first = abi.FIRST_STATIC_TAG
    e = static_tags.Entries(_meta([(first, "a", "shared", 0, 1024, False),
                                   (first + 1, "t", "local", 0, 8, False)]), 0)
    ctx = np.zeros(abi.CTX_FIELDS, dtype=np.int64)
    e.bind(ctx)
    assert ctx[abi.C_STATIC_TAGS] == 2
    size = abi.BOUNDS_DTYPE.itemsize
    for tag, row in ((first, (0, 1024, 1)), (first + 1, (0, 8, 2))):   # (lo, hi, space code)
        at = int(ctx[abi.C_STATIC_BOUNDS]) + tag * size            # as the jitted lookup finds it
        i = (at - e.table.ctypes.data) // size
        assert (e.table["lo"][i], e.table["hi"][i], e.table["space"][i]) == row


def test_the_dynamic_shared_entry_spans_this_launch_s_dynamic_size():
    first = abi.FIRST_STATIC_TAG
    objects = [(first, "s", "shared", 0, 100, False), (first + 1, "extern shared", "shared", 112, 112, True)]
    small, large = static_tags.Entries(_meta(objects, 112), 64), static_tags.Entries(_meta(objects, 112), 4096)
    assert (small.table["lo"][1], small.table["hi"][1]) == (112, 112 + 64)
    assert (large.table["lo"][1], large.table["hi"][1]) == (112, 112 + 4096)
    assert small.dyn_ptr == abi.tagged(first + 1, 112)


def _bounds_at(ctx: np.ndarray, tag: int) -> tuple:
    """(lo, hi, space code) of `tag` read from memory where the jitted lookup reads it through ctx."""
    size = abi.BOUNDS_DTYPE.itemsize
    at = int(ctx[abi.C_STATIC_BOUNDS]) + tag * size
    row = np.frombuffer((ctypes.c_char * size).from_address(at), dtype=abi.BOUNDS_DTYPE)[0]
    return int(row["lo"]), int(row["hi"]), int(row["space"])


def test_two_kernels_runs_give_one_static_tag_each_its_own_bounds():
    # through each run's ctx the lookup of the same tag finds that run's array (binding the
    # other run's table, in either order, changes nothing of what the first run's ctx reaches)
    first = abi.FIRST_STATIC_TAG
    wide = static_tags.Entries(_meta([(first, "a", "shared", 0, 1024, False)]), 0)
    narrow = static_tags.Entries(_meta([(first, "c", "shared", 0, 128, False)]), 0)
    wide_ctx, narrow_ctx = np.zeros(abi.CTX_FIELDS, dtype=np.int64), np.zeros(abi.CTX_FIELDS, dtype=np.int64)
    wide.bind(wide_ctx)
    assert _bounds_at(wide_ctx, first) == (0, 1024, 1)
    narrow.bind(narrow_ctx)
    assert _bounds_at(narrow_ctx, first) == (0, 128, 1)
    assert _bounds_at(wide_ctx, first) == (0, 1024, 1)


def test_a_static_tag_the_kernel_does_not_have_names_nothing():
    """Tag FIRST_STATIC_TAG + 1 lies beyond this kernel's table (it has one
    array): the lookup finds the device table's free row, an out_of_bounds
    fault naming no object."""
    k = gpuemu.RawModule(code=FORGED).get_function("forged")
    out = gpuemu.zeros(32, dtype=np.float32)
    k((1,), (32,), (out, np.uint64(0)))
    assert np.array_equal(out.get(), np.ones(32, np.float32))
    with pytest.raises(gpuemu.KernelError, match="out_of_bounds") as err:
        k((1,), (32,), (out, np.uint64(1)))
    assert "points to no object" in str(err.value) and "'a'" not in str(err.value)


def test_a_launch_of_another_kernel_from_a_running_launch_s_progress_callback_completes():
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    small, calls = gpuemu.zeros(32, dtype=np.float32), []

    def progress(blocks):
        narrow((1,), (32,), (small, np.int32(REPS)))
        calls.append(small.get().copy())
    x = gpuemu.zeros(512, dtype=np.float32)
    wide((2,), (256,), (x, np.int32(REPS)), progress=progress, workers=1)
    assert calls and all(np.array_equal(c, np.full(32, SUM, np.float32)) for c in calls)
    assert np.array_equal(x.get(), np.full(512, 2 * SUM, np.float32))


def test_a_launch_of_another_kernel_that_a_progress_callback_waits_for_on_another_thread_completes():
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    small, got = gpuemu.zeros(32, dtype=np.float32), []

    def progress(blocks):
        t = threading.Thread(target=lambda: narrow((1,), (32,), (small, np.int32(REPS))), daemon=True)
        t.start()
        t.join(60)
        got.append((t.is_alive(), small.get().copy()))
    x = gpuemu.zeros(512, dtype=np.float32)
    wide((2,), (256,), (x, np.int32(REPS)), progress=progress, workers=1)
    assert got and all(not alive and np.array_equal(c, np.full(32, SUM, np.float32)) for alive, c in got)
    assert np.array_equal(x.get(), np.full(512, 2 * SUM, np.float32))


def test_a_kept_launch_from_a_progress_callback_runs_on_its_kept_run_and_keeps_it():
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    small = gpuemu.zeros(32, dtype=np.float32)
    for _ in range(2):
        narrow((1,), (32,), (small, np.int32(1)), stats=False, workers=1)

    def idle() -> int:                  # kept runs: idle, or the launch gate's (machine/launch_gate.py)
        gate = narrow.__dict__.get("_gate_state")
        return sum(len(g.idle) + (gate is not None and gate.got is g)
                   for g in narrow.__dict__.get("_kept_launches", {}).values())
    before, seen = idle(), []

    def progress(blocks):
        narrow((1,), (32,), (small, np.int32(REPS)), stats=False, workers=1)
        seen.append(small.get().copy())
    x = gpuemu.zeros(512, dtype=np.float32)
    wide((2,), (256,), (x, np.int32(REPS)), progress=progress, workers=1)
    assert before >= 1 and idle() == before
    assert seen and all(np.array_equal(c, np.full(32, SUM, np.float32)) for c in seen)
