"""Launch plans: a repeated launch gives what a fresh launch gives."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import gpuemu
from gpuemu.machine import block_workers, launch_plan, worker_copy

VECADD = r"""
extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""

SHARED = r"""
extern "C" __global__ void small(float *out, int m) {
    __shared__ float s[64];
    int i = threadIdx.x;
    if (i < m) s[i] = i;
    __syncthreads();
    if (i < 64) out[i] = s[i];
}
extern "C" __global__ void large(float *out) {
    __shared__ float t[256];
    t[threadIdx.x] = 2.0f * threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = t[255 - threadIdx.x];
}
"""

DIVERGE = r"""
extern "C" __global__ void k(int *out) {
    if (threadIdx.x < 16) __syncthreads();
    out[threadIdx.x] = 1;
}
"""


def _vecadd_args(n, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return a, b, (gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.asarray(np.zeros_like(a)), np.int32(n))


def test_repeated_launch_counts_what_a_fresh_launch_counts():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd_args(1000)
    first = k((4,), (256,), args)
    again = k((4,), (256,), args)
    fresh = gpuemu.RawModule(code=VECADD).get_function("vecadd")((4,), (256,), args)
    assert again.stats == first.stats == fresh.stats
    assert again.stats_by_line == fresh.stats_by_line
    assert again.stats["l1_hits"] == fresh.stats["l1_hits"]       # caches start cold again


def test_repeated_launch_sees_new_arguments():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd_args(512, seed=1)
    k((2,), (256,), args, stats=False)
    a2, b2, args2 = _vecadd_args(512, seed=2)
    k((2,), (256,), args2[:3] + (np.int32(300),), stats=False)
    c = args2[2].get()
    assert np.array_equal(c[:300], a2[:300] + b2[:300]) and not c[300:].any()


def test_a_null_pointer_after_the_last_launchs_array_died_is_written():
    # the kept run remembers its last array by weak reference; once that array
    # is gone, None (NULL) must not pass for "the same argument as last time"
    k = gpuemu.RawModule(code=r"""
    extern "C" __global__ void k(int *out, const int *p) { out[threadIdx.x] = p ? 1 : 2; }
    """).get_function("k")
    out, a = gpuemu.zeros(32, dtype=np.int32), gpuemu.zeros(32, dtype=np.int32)
    k((1,), (32,), (out, a), stats=False)
    k((1,), (32,), (out, a), stats=False)
    del a
    gc.collect()
    k((1,), (32,), (out, None), stats=False)
    assert out.get().tolist() == [2] * 32


def test_a_kept_run_of_one_kernel_keeps_its_shared_bounds_after_another_kernel_ran():
    mod = gpuemu.RawModule(code=SHARED)
    small, large = mod.get_function("small"), mod.get_function("large")
    out = gpuemu.asarray(np.zeros(256, np.float32))
    small(1, 128, (out, np.int32(64)))
    large(1, 256, (out,))
    assert out.get().tolist() == [2.0 * (255 - i) for i in range(256)]
    with pytest.raises(gpuemu.KernelError, match=r"outside the shared array .s. \[0, 256\)"):
        small(1, 128, (out, np.int32(65)))         # s[64]: one past the 64 floats
    small(1, 128, (out, np.int32(64)))
    assert out.get()[:64].tolist() == [float(i) for i in range(64)]


def test_a_finding_is_reported_on_every_launch():
    k = gpuemu.RawModule(code=DIVERGE).get_function("k")
    out = gpuemu.asarray(np.zeros(32, np.int32))
    kinds = [[f.kind for f in k(1, 32, (out,), stats=False).findings] for _ in range(3)]
    assert kinds[0] and kinds[0] == kinds[1] == kinds[2]


def test_a_finding_is_reported_on_every_launch_on_two_workers():
    k = gpuemu.RawModule(code=DIVERGE).get_function("k")
    out = gpuemu.asarray(np.zeros(64, np.int32))
    kinds = [[f.kind for f in k(4, 64, (out,), stats=False, workers=2).findings] for _ in range(3)]
    assert kinds == [["barrier_divergence"]] * 3


def test_limits_are_checked_on_every_launch():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd_args(256)
    k((1,), (256,), args, stats=False)
    with pytest.raises(gpuemu.LaunchError, match="grid"):
        k((True,), (256,), args, stats=False)
    with pytest.raises(gpuemu.LaunchError, match="1024 threads"):
        k((1,), (2048,), args, stats=False)


def test_a_scalar_of_another_type_is_converted_as_before():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd_args(256)
    k((1,), (256,), args, stats=False)
    k((1,), (256,), args[:3] + (100,), stats=False)       # a Python int for the int n
    c = args[2].get()
    assert np.array_equal(c[:100], a[:100] + b[:100])
    with pytest.raises(gpuemu.LaunchError, match="integer"):
        k((1,), (256,), args[:3] + (2.5,), stats=False)


def test_a_launch_after_a_failed_one_runs_normally():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd_args(256)
    short = gpuemu.asarray(np.zeros(8, np.float32))
    with pytest.raises(gpuemu.KernelError):
        k((1,), (256,), args[:2] + (short, np.int32(256)), stats=False)
    k((1,), (256,), args, stats=False)
    assert np.array_equal(args[2].get(), a + b)


def _progress(blocks: int) -> None:
    """A progress callback: its launches are not plain ones (gpuemu/machine/launch_cache.py)."""


def test_few_plans_are_kept_per_kernel():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd_args(64)
    for g in range(1, launch_plan.PLANS_PER_KERNEL + 5):
        k((g,), (32,), args, stats=False, progress=_progress)
    assert len(k._plan_runs) == launch_plan.PLANS_PER_KERNEL


def test_concurrent_launches_of_a_kernel_with_shared_memory_never_see_its_array_unbound():
    # each run binds the kernel's __shared__ array into the device's bounds table;
    # another thread's run of the same kernel must never find it freed meanwhile
    k = gpuemu.RawModule(code=r"""
    extern "C" __global__ void k(float *out, const float *x, float s) {
        __shared__ float sh[64];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        sh[threadIdx.x] = x[i] * s;
        __syncthreads();
        out[i] = sh[(threadIdx.x * 3) % 64];
    }""").get_function("k")
    x = np.arange(256, dtype=np.float32)
    want = x.reshape(4, 64)[:, (np.arange(64) * 3) % 64].ravel()
    dx, failures = gpuemu.asarray(x), []

    def go(t):
        out = gpuemu.zeros(256, dtype=np.float32)
        try:
            for r in range(25):
                k((4,), (64,), (out, dx, np.float32(1 + r % 3)), stats=(r + t) % 2 == 0)
                if not np.array_equal(out.get(), want * (1 + r % 3)):
                    failures.append((t, r, "wrong values"))
        except gpuemu.KernelError as e:
            failures.append((t, str(e)))

    threads = [threading.Thread(target=go, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_concurrent_launches_of_one_kernel_each_get_their_own_run():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    results = {}

    def go(t):
        a, b, args = _vecadd_args(2048, seed=t)
        for _ in range(5):
            k((8,), (256,), args, stats=False)
        results[t] = np.array_equal(args[2].get(), a + b)

    threads = [threading.Thread(target=go, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: True, 1: True, 2: True, 3: True}


def test_a_kept_run_holds_nothing_of_the_launch_it_ran():
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    _, _, args = _vecadd_args(1024)
    launch = k((4,), (256,), args, progress=_progress)
    (kept,), = k._plan_runs.values()
    assert kept.stats is None and kept.params is None
    assert launch.stats["global_load_requests"] == 64      # the launch's own counters stay


def test_a_kept_runs_bytes_count_its_warp_bank_counts_issue_and_native_batch():
    # the budget of kept runs counts every buffer a run keeps for its next launch
    src = r"""
    extern "C" __global__ void k(float *out) {
        __shared__ float s[256];
        s[threadIdx.x] = threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = s[255 - threadIdx.x];
    }"""
    k = gpuemu.RawModule(code=src).get_function("k")
    out = gpuemu.asarray(np.zeros(256, dtype=np.float32))
    k((1,), (256,), (out,))
    [run] = [r for got in k._kept_launches.values() for r in got.idle]
    parts = [run.warp_counts, run._native_batch, run.issue]
    assert all(p is not None for p in parts)
    plain = sum(getattr(run, n).nbytes for n in ("frames", "shared", "header_template", "trace", "counters"))
    wbc, nb = run.warp_counts, run._native_batch
    want = plain + run.issue.nbytes + wbc.nbytes + nb.nbytes     # its arrays, each kept part's own count
    assert run.buffer_bytes() == want
    # the parts count their arrays: the warp counts', the native batch's columns, the
    # passes' buffers and the launch's sums (none when an earlier test's host memory is in use)
    assert wbc.nbytes == sum(a.nbytes for a in (wbc.table, wbc.sm_wavefronts, wbc.warp_wavefronts, wbc.best,
                                                wbc.state))
    ls = nb.__dict__.get("_fold_into")
    held = list(nb.cols.cols.values()) + [nb.cycles, nb.latency, nb.start, nb.keys, nb.sums, nb.table]
    if ls is not None:
        held += [ls.table, ls.batch_of, ls.masks, ls.addrs]
    assert nb.nbytes >= sum(a.nbytes for a in held) + nb._sectors.nbytes    # (its sectors: the pages written)
    assert launch_plan._kept_bytes(run) == want + run.memsys.state_bytes()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_kept_run_whose_memory_system_is_dropped_holds_nothing_of_it(monkeypatch, workers):
    # a memory system too large to keep (launch_plan.keep_memory_system) is not counted in the
    # kept run's bytes, so no part of the kept run (its NativeBatch included) may still hold it:
    # else the kernel's kept runs would hold megabytes beyond MAX_KERNEL_BYTES
    import weakref
    from gpuemu.memory.memory_system import MemorySystem
    made = []
    init = MemorySystem.__init__

    def recording_init(self, *a, **kw):
        init(self, *a, **kw)
        made.append(weakref.ref(self))
    monkeypatch.setattr(MemorySystem, "__init__", recording_init)
    monkeypatch.setattr(launch_plan, "MAX_MEMSYS_BYTES", 0)     # every memory system is too large
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (2: on the workers)
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd_args(4096)
    k((16,), (256,), args, workers=workers)
    [run] = [r for got in k._kept_launches.values() for r in got.idle]
    assert (worker_copy.KEPT in run.__dict__) == (workers > 1)    # its worker copies, kept
    gc.collect()
    assert run.memsys is None and made
    assert [m() for m in made if m() is not None] == []
    assert np.array_equal(args[2].get(), a + b)
    assert k((16,), (256,), args, workers=workers).stats["global_load_requests"] == 2 * 4096 // 32   # bound anew


def test_a_kept_run_whose_caches_grew_past_the_budget_keeps_its_memory_system_holding_their_row_numbers_only(
        monkeypatch):
    # launch_plan.keep_memory_system: the caches' planes go back to record_pool, the memory system
    # (and the run's NativeBatch bound to it) stays, its kept bytes within MAX_MEMSYS_BYTES;
    # the next launch starts from cold caches as a new memory system would
    from gpuemu.memory.memory_system import MemorySystem
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    a, b, args = _vecadd_args(16384)
    fresh = MemorySystem(k.module.preset)
    rows_only = sum(c.lru_state().row_of.nbytes for c in (fresh.l1, fresh.l2, fresh.ro_cache) if c is not None)
    monkeypatch.setattr(launch_plan, "MAX_MEMSYS_BYTES", rows_only)     # any state with planes is larger
    first = k((64,), (256,), args)
    [run] = [r for got in k._kept_launches.values() for r in got.idle]
    ms, nb = run.memsys, run._native_batch
    assert ms is not None and ms.state_bytes() == rows_only and nb.serves(ms, run.meta.instrs)
    again = k((64,), (256,), args)
    assert run.memsys is ms and again.stats == first.stats
    assert np.array_equal(args[2].get(), a + b)
