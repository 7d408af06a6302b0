"""Static tags (gpuemu/machine/static_tags.py): runs of kernels whose
__shared__ arrays share tags never see one another's bounds."""
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


class _Memory:
    """A device memory's bounds table alone."""
    def __init__(self) -> None:
        self.bounds = np.zeros(abi.N_TAGS, dtype=abi.BOUNDS_DTYPE)


def _entries(memory: _Memory, meta_objects: list) -> static_tags.Entries:
    class Meta:
        objects = meta_objects
        dynamic_offset = 0
    return static_tags.Entries(Meta, 0, memory)


def test_a_run_with_other_entries_waits_until_the_holders_let_go_then_writes_its_own():
    first = abi.FIRST_STATIC_TAG
    memory = _Memory()
    table = memory.bounds
    one = _entries(memory, [(first, "a", "shared", 0, 1024, False), (first + 1, "b", "shared", 1024, 2048, False)])
    other = _entries(memory, [(first, "c", "shared", 0, 128, False)])
    one.hold()
    assert (table["hi"][first], table["hi"][first + 1]) == (1024, 2048)
    got = []
    t = threading.Thread(target=lambda: got.append(other.hold()))
    t.start()
    t.join(0.2)
    assert t.is_alive() and got == []          # waits: `one` is held
    assert table["hi"][first] == 1024
    one.let_go()
    t.join(5)
    assert got == [other]
    assert table["hi"][first] == 128 and table["space"][first + 1] == -1   # `one`'s second array freed


def test_runs_with_the_same_entries_hold_the_tags_together():
    memory = _Memory()
    objects = [(abi.FIRST_STATIC_TAG, "a", "shared", 0, 1024, False)]
    one, again = _entries(memory, objects), _entries(memory, objects)
    one.hold()
    done = []
    t = threading.Thread(target=lambda: done.append(again.hold()))
    t.start()
    t.join(5)
    assert done == [again] and static_tags.of(memory).users == 2


def test_a_launch_of_another_kernel_from_a_running_launch_s_progress_callback_raises_not_hangs():
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    out = gpuemu.zeros(32, dtype=np.float32)

    def progress(blocks):
        narrow((1,), (32,), (out, np.int32(1)))
    with pytest.raises(gpuemu.LaunchError, match="another kernel"):
        wide((2,), (256,), (gpuemu.zeros(512, dtype=np.float32), np.int32(1)), progress=progress)


def test_a_launch_of_another_kernel_that_a_progress_callback_waits_for_on_another_thread_raises_not_hangs(
        monkeypatch):
    """The callback holds its launch's tags while it waits; the launch it
    waits for gives up with LaunchError once every holder has been in its
    callback for CALLBACK_WAIT_S, and the callback's own launch ends."""
    monkeypatch.setattr(static_tags, "CALLBACK_WAIT_S", 0.2)
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    out = gpuemu.zeros(32, dtype=np.float32)
    got = []

    def launch_narrow():
        try:
            narrow((1,), (32,), (out, np.int32(1)))
        except gpuemu.LaunchError as err:
            got.append(err)

    def progress(blocks):
        t = threading.Thread(target=launch_narrow, daemon=True)
        t.start()
        t.join(30)
        got.append(t.is_alive())
    x = gpuemu.zeros(512, dtype=np.float32)
    wide((2,), (256,), (x, np.int32(1)), progress=progress, workers=1)
    errors, alive = got[0::2], got[1::2]          # each call of the callback: its thread's error, alive?
    assert errors and alive == [False] * len(errors)
    assert all("progress callback" in str(e) for e in errors)
    narrow((1,), (32,), (out, np.int32(1)))           # the tags are free again


def test_a_kept_run_stays_kept_when_its_launch_is_refused_the_static_tags():
    wide = gpuemu.RawModule(code=WIDE).get_function("wide")
    narrow = gpuemu.RawModule(code=NARROW).get_function("narrow")
    out = gpuemu.zeros(32, dtype=np.float32)
    for _ in range(2):
        narrow((1,), (32,), (out, np.int32(1)), stats=False, workers=1)

    def idle() -> int:
        return sum(len(g.idle) for g in narrow.__dict__.get("_kept_launches", {}).values())
    before = idle()

    def progress(blocks):
        narrow((1,), (32,), (out, np.int32(1)), stats=False, workers=1)
    with pytest.raises(gpuemu.LaunchError, match="another kernel"):
        wide((2,), (256,), (gpuemu.zeros(512, dtype=np.float32), np.int32(1)), progress=progress, workers=1)
    assert before >= 1 and idle() == before
