"""Blocks on parallel workers: the same results, counters and findings as one worker."""
from __future__ import annotations

from pathlib import Path

import llvmlite.ir as ll
import numpy as np
import pytest

import gpuemu
from gpuemu.jit import abi
from gpuemu.errors import KernelError, LaunchError
from kernel_launch import launch

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"


def _transpose(workers: int):
    n = 512                       # 256 blocks: four batches of 64
    a = np.random.default_rng(1).random((n, n), dtype=np.float32)
    t = np.zeros_like(a)
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    lau = k((n // 32, n // 32), (32, 8), (t, a, np.int32(n)), workers=workers)
    return a, t, lau


def _idle_runs(k) -> list:
    """The runs k keeps idle for its next launches: launch_plan's and launch_cache's."""
    d = k.__dict__
    return ([r for idle in d.get("_plan_runs", {}).values() for r in idle]
            + [r for got in d.get("_kept_launches", {}).values() for r in got.idle])


def test_two_workers_give_the_transpose():
    a, t, _ = _transpose(2)
    assert np.array_equal(t, a.T)


def test_two_workers_count_what_one_worker_counts():
    _, _, one = _transpose(1)
    _, _, two = _transpose(2)
    assert two.stats == one.stats
    assert two.stats_by_line == one.stats_by_line


def test_three_workers_give_the_transpose_and_count_what_one_worker_counts():
    _, _, one = _transpose(1)
    a, t, three = _transpose(3)
    assert np.array_equal(t, a.T)
    assert three.stats == one.stats and three.stats_by_line == one.stats_by_line


MIXED = r"""
extern "C" __global__ void k(const float* x, float* out, unsigned int* bins, int n) {
    __shared__ float s[256];
    float loc[16];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    for (int j = 0; j < 16; j++) loc[j] = x[(i + j * 33) % n];    // reused lines: L1 and L2 hits
    s[(t * 2) % 256] = loc[(int)x[i] % 16];                      // local memory, bank conflicts
    __syncthreads();
    out[i] = s[255 - t];
    atomicAdd(&bins[i % 7], 1u);
}
"""


def test_two_workers_count_what_one_worker_counts_in_every_space():
    # 96 blocks in several ranges, trace buffers drained mid-range
    runs = []
    for workers in (1, 2):
        x = (np.arange(96 * 256) % 23).astype(np.float32)
        out, bins = np.zeros_like(x), np.zeros(7, np.uint32)
        runs.append(launch(MIXED, "k", (96,), (256,), x, out, bins, np.int32(x.size),
                           workers=workers))
    one, two = runs
    assert two.stats == one.stats and two.stats_by_line == one.stats_by_line
    for name in ("local_load_requests", "l1_hits", "l2_hits", "shared_bank_conflicts",
                 "global_reduction_requests"):
        assert one.stats[name] > 0, name


CONSTANT = r"""
__constant__ float coef[8];
extern "C" __global__ void k(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i] + coef[threadIdx.x & 7];
    __syncthreads();
    out[i] = s[255 - threadIdx.x] * coef[(i >> 5) & 7];
}
"""


def test_two_workers_count_batches_the_native_passes_do_not_serve_as_one_worker(monkeypatch):
    # a batch with a constant request is prepared the MemorySystem way, which reads its trace
    # buffer until it is charged (the worker goes on in a spare buffer), or charged at once
    from gpuemu.machine import block_workers
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (on the workers)
    runs = []
    for workers in (1, 2):
        x = np.arange(1024 * 256, dtype=np.float32)
        runs.append(launch(CONSTANT, "k", (1024,), (256,), x, np.zeros_like(x), np.int32(x.size),
                           workers=workers))
    one, two = runs
    assert one.stats["constant_requests"] > 0
    assert two.stats == one.stats and two.stats_by_line == one.stats_by_line


def test_a_batch_the_native_passes_do_not_serve_is_copied_into_the_columns_once(monkeypatch):
    # NativeBatch.prepare puts the records in the columns before it finds the constant
    # request; the MemorySystem way then reads those columns (TraceColumns.batch, filled)
    # rather than copying the records in again (TraceColumns.fill)
    from gpuemu.machine import block_workers
    from gpuemu.memory.native_batch import NativeBatch
    from gpuemu.memory.trace_columns import TraceColumns
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})
    fills, prepares = [0], [0]
    fill, prepare = TraceColumns.fill, NativeBatch.prepare

    def counted_fill(self, records):
        fills[0] += 1
        return fill(self, records)

    def counted_prepare(self, records):
        prepares[0] += 1
        return prepare(self, records)
    monkeypatch.setattr(TraceColumns, "fill", counted_fill)
    monkeypatch.setattr(NativeBatch, "prepare", counted_prepare)
    x = np.arange(1024 * 256, dtype=np.float32)
    lau = launch(CONSTANT, "k", (1024,), (256,), x, np.zeros_like(x), np.int32(x.size), workers=2)
    assert lau.stats["constant_requests"] > 0
    assert prepares[0] > 0 and fills[0] == 0


GLOBAL_HIST = r"""
extern "C" __global__ void hist(const int* data, unsigned int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i] & 7], 1u);
}
"""


def test_global_atomics_of_concurrent_blocks_lose_no_update():
    data = np.random.default_rng(2).integers(0, 1000, 1 << 16).astype(np.int32)
    bins = np.zeros(8, dtype=np.uint32)
    launch(GLOBAL_HIST, "hist", (data.size // 128,), (128,), data, bins, np.int32(data.size),
           stats=False, workers=2)
    assert bins.tolist() == np.bincount(data & 7, minlength=8).tolist()


def test_global_atomic_add_is_an_atomic_instruction():
    from isa import compile_source
    from gpuemu.jit.warp_codegen import WarpCodegen
    module = compile_source(GLOBAL_HIST)
    llmod = ll.Module(name="t")
    WarpCodegen(module, module.kernel("hist"), llmod, "hist_sym").build()
    assert "atomicrmw add" in str(llmod)


FAULT = r"""
extern "C" __global__ void k(float* x, int bad_block) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x >= bad_block) i += 1 << 20;
    x[i] = 1.0f;
}
"""


@pytest.mark.parametrize("stats", [False, True])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_fault_names_the_first_faulting_block(workers, stats):
    x = np.zeros(1024 * 64, dtype=np.float32)       # ranges of 21 to 171 blocks
    with pytest.raises(KernelError) as e:
        launch(FAULT, "k", (1024,), (64,), x, np.int32(700), stats=stats, workers=workers)
    assert e.value.findings[0].block == (700, 0, 0)


DIVERGENT = r"""
extern "C" __global__ void k(int* out) {
    if (threadIdx.x < 16 && blockIdx.x % 3 == 1) { __syncthreads(); }
    else { __syncthreads(); }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
"""


def test_barrier_divergence_findings_match_one_worker():
    runs = []
    for workers in (1, 2):
        out = np.zeros(640 * 32, dtype=np.int32)
        runs.append(launch(DIVERGENT, "k", (640,), (32,), out, workers=workers).findings)
    assert [(f.kind, f.line, f.block) for f in runs[1]] == [(f.kind, f.line, f.block) for f in runs[0]]
    assert runs[0] and runs[0][0].block == (1, 0, 0)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_workers_must_be_a_positive_int(bad):
    with pytest.raises(LaunchError, match="workers"):
        launch(GLOBAL_HIST, "hist", (1,), (32,), np.zeros(32, np.int32), np.zeros(8, np.uint32),
               np.int32(32), workers=bad)


def test_workers_above_the_cap_is_a_launch_error_before_any_thread_starts():
    import threading
    from gpuemu.machine.block_workers import MAX_WORKERS
    before = threading.active_count()
    with pytest.raises(LaunchError, match=rf"workers must be at most {MAX_WORKERS} .*got 1000000"):
        launch(GLOBAL_HIST, "hist", (1,), (32,), np.zeros(32, np.int32), np.zeros(8, np.uint32),
               np.int32(32), workers=10**6)
    assert threading.active_count() == before


def test_gpuemu_workers_above_the_cap_is_a_launch_error(monkeypatch):
    from gpuemu.machine.block_workers import MAX_WORKERS
    monkeypatch.setenv("GPUEMU_WORKERS", str(MAX_WORKERS + 1))
    with pytest.raises(LaunchError, match=rf"GPUEMU_WORKERS must be at most {MAX_WORKERS} .*got {MAX_WORKERS + 1}"):
        launch(GLOBAL_HIST, "hist", (1,), (32,), np.zeros(32, np.int32), np.zeros(8, np.uint32),
               np.int32(32))


def test_the_cap_on_workers_itself_is_taken():
    from gpuemu.machine.block_workers import MAX_WORKERS
    out = np.zeros(8, np.uint32)
    launch(GLOBAL_HIST, "hist", (4,), (32,), np.zeros(128, np.int32), out, np.int32(128),
           workers=MAX_WORKERS)
    assert out[0] == 128


@pytest.mark.parametrize("stats", [False, True])
def test_progress_hears_of_every_block(stats):
    seen = []
    data = np.zeros(1 << 15, dtype=np.int32)
    launch(GLOBAL_HIST, "hist", (data.size // 32,), (32,), data, np.zeros(8, np.uint32),
           np.int32(data.size), stats=stats, workers=2, progress=seen.append)
    assert sum(seen) == data.size // 32


DIVERGENCE_THEN_MISMATCH = r"""
extern "C" __global__ void k(int* out) {
    bool first = blockIdx.x == 0 ? threadIdx.x < 16 : threadIdx.x < 32;
    if (first) {
        __syncthreads();
    } else if (blockIdx.x != 0) {
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}"""


def test_a_barrier_mismatch_is_kept_beside_a_divergence_at_its_line():
    # block 0: warp 0 reaches line 5 with half its lanes (divergence at 5);
    # other blocks: warp 0 waits at line 5, warp 1 at 7 (a mismatch whose lowest line is 5)
    found = []
    for workers in (1, 2):
        res = launch(DIVERGENCE_THEN_MISMATCH, "k", (8,), (64,), np.zeros(512, np.int32),
                     workers=workers)
        found.append(sorted((f.kind, f.line, tuple(f.extra.get("barrier_lines") or ()))
                            for f in res.findings))
    assert found[0] == found[1]
    assert ("barrier_divergence", 5, (5, 7)) in found[1] and ("barrier_divergence", 5, ()) in found[1]


def test_a_forked_child_runs_two_workers_of_its_own():
    # the parent's pool threads do not exist in a child made by fork
    import multiprocessing
    _transpose(2)                                   # the parent's pool is started
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        ok = pool.apply_async(_transpose_is_right, (2,)).get(timeout=60)
    assert ok


def _transpose_is_right(workers: int) -> bool:
    a, t, _ = _transpose(workers)
    return bool(np.array_equal(t, a.T))


def _vecadd_on_workers(monkeypatch, n: int):
    """vecadd of n threads that runs on the workers however small (SERIAL_BELOW
    0): the kernel, the input a (x = a, added to itself), c and the launch's
    (grid, block, args)."""
    from gpuemu.machine import block_workers
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})
    k = gpuemu.RawModule(path=str(PROGRAMS / "vecadd.cu")).get_function("vecadd")
    a = np.arange(n, dtype=np.float32)
    x, c = gpuemu.asarray(a), gpuemu.zeros(n, dtype=np.float32)
    return k, a, c, ((n // 256,), (256,), (x, x, c, np.int32(n)))


def test_two_workers_prepare_every_batch_outside_the_ordered_step_and_keep_records_only_of_those_that_wait(
        monkeypatch):
    # the ordered step holds only applies: a batch is prepared (its native passes) on the thread that
    # wrote it before it is applied, and only a batch that waits for its turn keeps a copy of its records
    import threading
    from gpuemu.machine import ordered_charge
    from gpuemu.memory.native_batch import NativeBatch
    k, _, _, args = _vecadd_on_workers(monkeypatch, 1 << 20)
    one = k(*args, workers=1).stats
    seen = []                        # (what, NativeBatch, thread, in the ordered step)
    ordered = set()                  # the threads in the ordered step now

    def spy(name):
        real = getattr(NativeBatch, name)

        def call(self, *a):
            seen.append((name, id(self), threading.get_ident(), threading.get_ident() in ordered))
            return real(self, *a)
        return call
    for name in ("prepare", "keep_records", "apply", "charge"):
        monkeypatch.setattr(NativeBatch, name, spy(name))
    real_apply = ordered_charge.OrderedCharge._apply

    def applying(self, chunks):
        ordered.add(threading.get_ident())
        try:
            real_apply(self, chunks)
        finally:
            ordered.discard(threading.get_ident())
    monkeypatch.setattr(ordered_charge.OrderedCharge, "_apply", applying)
    for _ in range(3):
        assert k(*args, workers=2).stats == one
    names = [s[0] for s in seen]
    assert "charge" not in names and names.count("prepare") == names.count("apply") > 0
    assert not any(inside for name, _, _, inside in seen if name == "prepare")
    assert all(inside for name, _, _, inside in seen if name == "apply")
    prepared = {}                    # a NativeBatch's last prepare: its thread
    kept = at_once = 0
    for name, nb, thread, _ in seen:
        if name == "prepare":
            prepared[nb] = (thread, False)
        elif name == "keep_records":
            prepared[nb] = (prepared[nb][0], True)
            kept += 1
        elif name == "apply" and not prepared[nb][1]:     # applied at once: on the thread that prepared it
            assert thread == prepared[nb][0]
            at_once += 1
    assert kept + at_once == names.count("prepare")


def test_two_workers_charge_batches_of_at_most_the_workers_trace_records_and_count_what_one_worker_counts(
        monkeypatch):
    # a worker's batch stays in its core's L2: WORKER_TRACE_RECORDS records at most (one worker
    # charges up to the run's TRACE_CAPACITY), each range after the first whole such batches
    from gpuemu.machine import block_ranges, worker_copy
    from gpuemu.memory.native_batch import NativeBatch
    k, _, _, args = _vecadd_on_workers(monkeypatch, 1 << 17)      # 12,288 records: 24 a block
    sizes, units = [], []
    prepare, in_units = NativeBatch.prepare, block_ranges.GuidedRanges.in_units
    monkeypatch.setattr(NativeBatch, "prepare", lambda self, rec: sizes.append(len(rec)) or prepare(self, rec))
    monkeypatch.setattr(block_ranges.GuidedRanges, "in_units",
                        lambda self, blocks: units.append(blocks) or in_units(self, blocks))
    one = k(*args, workers=1).stats
    cap = 1000
    monkeypatch.setattr(worker_copy, "WORKER_TRACE_RECORDS", cap)
    for _ in range(2):
        sizes.clear()
        units.clear()
        assert k(*args, workers=2).stats == one
        assert sum(sizes) == 12288 and max(sizes) <= cap and len(sizes) >= 12288 // cap
        assert units and all(24 * u <= cap for u in units)


@pytest.mark.parametrize("stats", [True, False])
def test_a_kept_run_renews_its_worker_copies_for_new_arguments(stats):
    # launch_plan keeps the run between launches, the run keeps its worker copies
    from gpuemu.machine.worker_copy import KEPT
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    kept = []
    for seed in (1, 2, 3):
        a = np.random.default_rng(seed).random((n, n), dtype=np.float32)
        got = {}
        for workers in (2, 1):
            t = np.zeros_like(a)
            lau = k((n // 32, n // 32), (32, 8), (t, a, np.int32(n)), workers=workers, stats=stats)
            assert np.array_equal(t, a.T)
            got[workers] = (lau.stats, lau.stats_by_line)
        assert got[2] == got[1]
        runs = [r for r in _idle_runs(k) if r.__dict__.get(KEPT)]
        kept.append({id(c) for r in runs for c in r.__dict__[KEPT]})
    assert kept[0] and kept[0] == kept[1] == kept[2]


def _working_state(run) -> list:
    """The arrays a run's native code writes all through a launch."""
    got = [run.ctx, run.frames, run.shared, run.counters, run.store_order]
    scratch = run.__dict__.get("_block_range_scratch")
    return got + ([scratch[0], scratch[1]] if scratch is not None else [])


@pytest.mark.parametrize("stats", [False, True])
def test_a_worker_copys_working_state_shares_no_page_with_the_runs(stats):
    # the L2 streamer prefetches for ownership anywhere in a 4 KB page, so two
    # workers' arrays in one page slow both (gpuemu/machine/cache_lines.py)
    from gpuemu.machine import cache_lines, worker_copy
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(5).random((n, n), dtype=np.float32)
    k((n // 32, n // 32), (32, 8), (np.zeros_like(a), a, np.int32(n)), workers=2, stats=stats)
    run = next(r for r in _idle_runs(k) if r.__dict__.get(worker_copy.KEPT))
    arrays = _working_state(run) + _working_state(run.__dict__[worker_copy.KEPT][0].run)
    held = [set(cache_lines.pages(x)) for x in arrays]
    assert sum(len(h) for h in held) == len(set().union(*held))


def test_the_worker_copies_a_run_keeps_are_counted_in_its_kept_bytes():
    # launch_plan keeps a kernel's idle runs within a byte budget: their worker copies count
    from gpuemu.machine import block_workers, launch_plan, worker_copy
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(4).random((n, n), dtype=np.float32)
    k((n // 32, n // 32), (32, 8), (np.zeros_like(a), a, np.int32(n)), workers=2)
    run = next(r for r in _idle_runs(k) if r.__dict__.get(worker_copy.KEPT))
    copies = run.__dict__[worker_copy.KEPT]
    natives = sum(nb.nbytes for wk in copies for nb in wk.natives)
    assert worker_copy.kept_bytes(run) > natives > 0
    without = launch_plan._kept_bytes(run) - worker_copy.kept_bytes(run)
    run.__dict__[worker_copy.KEPT] = []
    run.__dict__.pop(worker_copy.LAST, None)      # (its last launch's sums: the next test's)
    assert launch_plan._kept_bytes(run) == without


def test_each_worker_writes_its_launch_s_trace_into_one_buffer(monkeypatch):
    # a batch the native passes prepared keeps what the ordered step reads of its records
    # (NativeBatch.keep_records): the worker goes on in the same buffer, in its core's caches
    import threading
    from gpuemu.machine import block_workers, worker_copy
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (on the workers)
    writers: dict = {}
    real = worker_copy.Worker._keep_trace

    def spy(self):
        writers.setdefault(threading.get_ident(), set()).add(self.run.trace.ctypes.data)
        return real(self)
    n = 1 << 20                                   # 12 trace buffers of records
    k = gpuemu.RawModule(path=str(PROGRAMS / "vecadd.cu")).get_function("vecadd")
    a = np.ones(n, dtype=np.float32)
    x, c = gpuemu.asarray(a), gpuemu.zeros(n, dtype=np.float32)
    one = k((n // 256,), (256,), (x, x, c, np.int32(n)), workers=1).stats
    monkeypatch.setattr(worker_copy.Worker, "_keep_trace", spy)
    for _ in range(3):
        writers.clear()
        assert k((n // 256,), (256,), (x, x, c, np.int32(n)), workers=2).stats == one
        assert sum(len(b) for b in writers.values()) >= 2 and all(len(b) == 1 for b in writers.values())


def test_the_calling_thread_takes_back_the_worker_copy_it_had(monkeypatch):
    # its copy (the one that lends the run's trace buffer) is kept last and taken back
    # by it (the pool's threads get the first ones), so a copy's NativeBatches stay
    # with one thread from launch to launch
    from gpuemu.machine import block_workers, worker_copy
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (on the workers)
    taken, real = [], worker_copy.take

    def spy(run, start, lend=False):
        wk = real(run, start, lend)
        taken.append((lend, wk))
        return wk
    monkeypatch.setattr(worker_copy, "take", spy)
    transpose = _transposes(11, True)
    one = transpose(1)
    for _ in range(3):
        assert transpose(2) == one
    mine = [wk for main, wk in taken if main]
    others = [wk for main, wk in taken if not main]
    assert len(mine) == len(others) == 3
    assert mine[1] is mine[2] and others[1] is others[2] and mine[1] is not others[1]
    [run] = [r for r in _idle_runs(transpose.kernel) if r.__dict__.get(worker_copy.KEPT)]
    assert run.__dict__[worker_copy.KEPT][-1] is mine[-1]


def test_the_calling_thread_s_copy_traces_into_the_run_s_own_buffer():
    # a two-worker run traces nothing itself: its trace buffer is the calling thread's copy's
    # first (the others take theirs from record_pool); kept copies hold no trace buffer
    from gpuemu.machine.worker_copy import KEPT, take
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(5).random((n, n), dtype=np.float32)
    k((n // 32, n // 32), (32, 8), (np.zeros_like(a), a, np.int32(n)), workers=2)
    [run] = [r for r in _idle_runs(k) if r.__dict__.get(KEPT)]
    assert all(wk.run.trace is None for wk in run.__dict__[KEPT])
    run.options = {}             # (a launch of the kept run renews it with its options first)
    mine, other = take(run, run.ctx, lend=True), take(run, run.ctx)
    assert mine.run.trace is run.trace
    assert other.run.trace is not None and other.run.trace is not run.trace
    assert mine.run.ctx[abi.C_TRACE] == run.trace.ctypes.data


def test_a_kept_run_s_next_launch_folds_into_its_last_sums_where_its_memory_system_was_dropped(
        monkeypatch):
    # kept NativeBatches let go of a dropped memory system (launch_plan.keep_memory_system: its
    # caches' states go back to record_pool); the next launch's memory system takes the last
    # launch's settled sums, which those NativeBatches fold into already, and its caches' rows
    from gpuemu.machine import block_workers, launch_plan
    from gpuemu.machine.worker_copy import KEPT, LAST
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (small: on the workers)
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(6).random((n, n), dtype=np.float32)
    first = k((n // 32, n // 32), (32, 8), (np.zeros_like(a), a, np.int32(n)), workers=2).stats
    [run] = [r for r in _idle_runs(k) if r.__dict__.get(KEPT)]
    sums, rows = run.__dict__[LAST]
    natives = [nb for wk in run.__dict__[KEPT] for nb in wk.natives]
    assert rows and all(r > 0 for r in rows)
    monkeypatch.setattr(launch_plan, "MAX_MEMSYS_BYTES", 0)     # too large to keep: dropped
    launch_plan.keep_memory_system(run)
    assert run.memsys is None and natives and all(nb.ms is None for nb in natives)
    seen = []
    real_run = type(run).run

    def spy(self):
        got = real_run(self)
        seen.append((self, self.memsys.launch_sums()))
        return got
    type(run).run = spy
    try:
        again = k((n // 32, n // 32), (32, 8), (np.zeros_like(a), a, np.int32(n)), workers=2).stats
    finally:
        type(run).run = real_run
    assert seen == [(run, sums)] and run.__dict__[LAST][0] is sums
    assert again == first


def _transposes(seed: int, stats: bool):
    """A launcher of transpose_tiled33 of a 256x256 matrix on `workers`,
    checked against numpy: its counters (stats) or None."""
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(seed).random((n, n), dtype=np.float32)

    def transpose(workers):
        t = np.zeros_like(a)
        lau = k((n // 32, n // 32), (32, 8), (t, a, np.int32(n)), workers=workers, stats=stats)
        assert np.array_equal(t, a.T)
        return lau.stats if stats else None
    transpose.kernel = k
    return transpose


@pytest.mark.parametrize("stats", [True, False])
def test_a_run_whose_last_launch_was_small_runs_its_next_on_the_calling_thread_alone(stats, monkeypatch):
    # two workers gain nothing where a launch's blocks cost less than the workers' fixed part:
    # the run's next launch runs on the calling thread, measured, and goes back to the workers
    # once its blocks cost more; results and counters are one worker's either way
    from gpuemu.machine import block_workers
    pools = []
    real = block_workers._threads
    monkeypatch.setattr(block_workers, "_threads", lambda n: pools.append(n) or real(n))
    transpose = _transposes(7, stats)
    one = transpose(1)
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 1e9, False: 1e9})     # every launch small
    used = []
    for _ in range(3):                        # the first: nothing known, on the workers
        pools.clear()
        assert transpose(2) == one
        used.append(len(pools))
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})     # every launch large
    pools.clear()
    assert transpose(2) == one
    assert used == [1, 0, 0] and pools == [1]


def test_a_launch_whose_calling_thread_got_no_cpu_still_counts_as_large(monkeypatch):
    # without counters the pool threads' CPU is not measured: where another process held the
    # calling thread's core while the pool thread ran the blocks, its CPU time is near 0, and
    # the launch must not pass for small (its next on the calling thread alone)
    import time
    from gpuemu.machine import block_workers
    pools = []
    real = block_workers._threads
    monkeypatch.setattr(block_workers, "_threads", lambda n: pools.append(n) or real(n))
    transpose = _transposes(11, False)
    one = transpose(1)
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 1e-9, False: 1e-9})
    monkeypatch.setattr(time, "thread_time", lambda: 0.0)      # the calling thread never ran
    for _ in range(3):
        assert transpose(2) == one
    assert pools == [1, 1, 1]


@pytest.mark.parametrize("stats", [True, False])
def test_a_small_launch_on_the_calling_thread_alone_runs_its_blocks_in_one_call(stats, monkeypatch):
    # the calling thread alone, nothing to report: the grid's ranges as one range (LaunchRun.run's one worker)
    from gpuemu.machine import block_workers
    from gpuemu.machine.executor import LaunchRun
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 1e9, False: 1e9})     # every launch small
    transpose = _transposes(8, stats)
    one = transpose(1)
    transpose(2)                              # (the first: nothing known, on the workers)
    calls, real = [], LaunchRun._run_batch
    monkeypatch.setattr(LaunchRun, "_run_batch", lambda self, blocks: calls.append(blocks) or real(self, blocks))
    assert transpose(2) == one
    assert calls == [range(0, (256 // 32) ** 2)]


@pytest.mark.parametrize("stats", [True, False])
def test_a_small_launch_of_two_workers_runs_its_blocks_through_one_worker_s_loop(stats, monkeypatch):
    # one loop over the batches for one worker and for a launch the workers find too small to share
    from gpuemu.machine import block_workers
    from gpuemu.machine.executor import LaunchRun
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 1e9, False: 1e9})     # every launch small
    transpose = _transposes(10, stats)
    transpose(2)                              # (the first: nothing known, on the workers)
    calls, real = [], LaunchRun.run_batches
    monkeypatch.setattr(LaunchRun, "run_batches",
                        lambda self, batches, progress=None: calls.append(tuple(batches)) or real(self, batches, progress))
    assert transpose(2) == transpose(1)
    assert calls == [(range(0, (256 // 32) ** 2),)] * 2


def test_a_runs_last_traced_launchs_sums_are_counted_once_in_its_kept_bytes(monkeypatch):
    # block_workers keeps a traced launch's sums (LAST) for the run's next launch: launch_plan counts them
    from gpuemu.machine import block_workers, worker_copy
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (on the workers)
    n = 256
    k = gpuemu.RawModule(path=str(PROGRAMS / "transpose_tiled33.cu")).get_function("transpose_tiled33")
    a = np.random.default_rng(9).random((n, n), dtype=np.float32)
    k((n // 32, n // 32), (32, 8), (np.zeros_like(a), a, np.int32(n)), workers=2, stats=True)
    [run] = [r for r in _idle_runs(k) if r.__dict__.get(worker_copy.LAST)]
    sums = run.__dict__[worker_copy.LAST][0]
    copies = run.__dict__[worker_copy.KEPT]
    natives = [nb for wk in copies for nb in wk.natives]
    assert sums.nbytes > 0 and any(nb.folds_into is sums for nb in natives)   # shared by them
    # each object once: the copies' buffers, their NativeBatches' own buffers, each sums once
    distinct = {id(s): s for s in [sums] + [nb.folds_into for nb in natives] if s is not None}
    assert worker_copy.kept_bytes(run) == (sum(wk.run.buffer_bytes() for wk in copies)
                                            + sum(nb.buffer_nbytes for nb in natives)
                                            + sum(s.nbytes for s in distinct.values()))


def _vecadd(n: int):
    """vecadd of n elements: its kernel, arguments and the sum they should give."""
    rng = np.random.default_rng(8)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    k = gpuemu.RawModule(path=str(PROGRAMS / "vecadd.cu")).get_function("vecadd")
    return k, (gpuemu.asarray(a), gpuemu.asarray(b), gpuemu.zeros(n, dtype=np.float32), np.int32(n)), a + b


def test_a_kept_run_of_two_workers_keeps_its_large_memory_system_and_its_native_batches_stay_bound(monkeypatch):
    # caches grown past launch_plan's budget give their planes back (the run holds their sets'
    # row numbers only) and the memory system is kept: the next launch binds no NativeBatch
    # again, and counts what one worker counts
    from gpuemu.machine import block_workers, launch_plan
    from gpuemu.machine.worker_copy import KEPT
    from gpuemu.memory.memory_system import MemorySystem
    from gpuemu.memory.native_batch import NativeBatch
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (small: on the workers)
    k, args, want = _vecadd(1 << 16)
    fresh = MemorySystem(k.module.preset)
    rows_only = sum(c.lru_state().row_of.nbytes for c in (fresh.l1, fresh.l2, fresh.ro_cache) if c is not None)
    monkeypatch.setattr(launch_plan, "MAX_MEMSYS_BYTES", rows_only)     # any state with planes is larger
    one = k((256,), (256,), args, workers=1).stats
    k((256,), (256,), args, workers=2)
    [run] = [r for r in _idle_runs(k) if r.__dict__.get(KEPT)]
    ms = run.memsys
    assert ms is not None and ms.state_bytes() == rows_only
    binds = []
    bind = NativeBatch.bind
    monkeypatch.setattr(NativeBatch, "bind", lambda self, *a: binds.append(self) or bind(self, *a))
    natives = {id(nb) for wk in run.__dict__[KEPT] for nb in wk.natives}
    two = k((256,), (256,), args, workers=2).stats
    assert run.memsys is ms and [nb for nb in binds if id(nb) in natives] == []
    assert two == one and np.array_equal(args[2].get(), want)


def _launch_on_a_thread(k, args, error: type, launching: list | None = None) -> list:
    """The errors of type `error` a two-worker launch raised on a thread of its
    own (its id appended to `launching`), which must end within 60 s."""
    import threading
    got: list = []

    def launch_once():
        if launching is not None:
            launching.append(threading.get_ident())
        try:
            k(*args, workers=2)
        except error as e:
            got.append(e)
    t = threading.Thread(target=launch_once, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive()
    return got


def test_a_worker_failing_outside_a_batch_s_run_fails_the_launch_instead_of_hanging(monkeypatch):
    # an error a pool thread raises after taking a batch and before handing it
    # over (here in run_batch itself) reaches the calling thread, which would
    # otherwise wait for that batch for ever; the next launch is right
    import threading
    from gpuemu.machine import worker_copy
    n = 1 << 18
    k, a, c, args = _vecadd_on_workers(monkeypatch, n)
    one = k(*args, workers=1).stats
    real, armed, launching = worker_copy.Worker.run_batch, [True], []
    pool_failed = threading.Event()

    def failing(self, blocks):
        if threading.get_ident() in launching:
            # the calling thread waits for the pool thread's failure before its first batch:
            # otherwise, with the pool thread slow to wake, it may run every batch itself
            pool_failed.wait(30)
        elif armed[0]:                                                 # a pool thread
            armed[0] = False
            pool_failed.set()
            raise MemoryError("injected")
        return real(self, blocks)
    monkeypatch.setattr(worker_copy.Worker, "run_batch", failing)
    got = _launch_on_a_thread(k, args, MemoryError, launching)
    assert len(got) == 1 and not armed[0]
    c.set(np.zeros(n, np.float32))
    assert k(*args, workers=2).stats == one and np.array_equal(c.get(), 2 * a)


def test_the_ranges_of_block_ranges_are_handed_out_as_those_of_any_list_of_them():
    # block_ranges' tuple (LaunchRun.run's) is known to follow one another: cut afresh all the same
    from gpuemu.machine.block_workers import _source, block_ranges

    def handed(source):
        out = []
        while (got := source.take()) is not None:
            out.append(got)
        return out
    for even in (False, True):
        kept = block_ranges(4096, 2, 256)
        assert handed(_source(kept, 2, 256, even)) == handed(_source(list(kept), 2, 256, even))


def test_pool_threads_take_their_copies_once_the_memory_system_is_shared_and_a_failed_share_fails_the_launch(
        monkeypatch):
    # the calling thread shares the memory system (MemorySystem.share: what two threads must not
    # make at once) before any worker takes its copy (whose NativeBatches bind to it); an error
    # sharing it ends the launch
    from gpuemu.machine import worker_copy
    from gpuemu.memory.memory_system import MemorySystem
    n = 1 << 18
    k, a, c, args = _vecadd_on_workers(monkeypatch, n)
    one = k(*args, workers=1).stats
    events = []
    real_share, real_take = MemorySystem.share, worker_copy.take

    def share(self, *a):
        events.append("share")
        got = real_share(self, *a)
        events.append("shared")
        if armed:
            raise MemoryError("injected")
        return got

    def take(run, start, lend=False):
        events.append("mine" if lend else "pool")
        return real_take(run, start, lend)
    monkeypatch.setattr(MemorySystem, "share", share)
    monkeypatch.setattr(worker_copy, "take", take)
    armed = False
    assert k(*args, workers=2).stats == one
    assert events[:2] == ["share", "shared"] and sorted(events[2:]) == ["mine", "pool"]
    armed = True
    assert len(_launch_on_a_thread(k, args, MemoryError)) == 1
    armed = False
    c.set(np.zeros(n, np.float32))
    assert k(*args, workers=2).stats == one and np.array_equal(c.get(), 2 * a)


def _interrupt_once_waiting(thread: threading.Thread, then: threading.Event) -> None:
    """SIGINT to `thread` (the main one) once it waits inside worker_threads
    for a pool task; then `then` is set."""
    import signal
    import sys
    import time
    from gpuemu.machine import worker_threads
    while True:
        frame = sys._current_frames().get(thread.ident)
        if frame is not None and frame.f_code.co_filename == worker_threads.__file__:
            break
        time.sleep(0.001)
    time.sleep(0.05)                                   # (in the lock's wait, not before it)
    signal.pthread_kill(thread.ident, signal.SIGINT)
    time.sleep(0.2)
    then.set()


def test_an_interrupted_launch_returns_only_once_its_pool_threads_ended(ctrl_c_raises):
    # Ctrl-C while a launch waits for its pool thread: were the wait left at
    # once, the pool thread would write the abandoned launch's results into
    # the user's arrays after a later launch returned
    import threading
    from gpuemu.machine import block_workers
    go_on, ended = threading.Event(), []

    def pool_loop():
        go_on.wait(10)
        ended.append(True)

    def own_loop():
        threading.Thread(target=_interrupt_once_waiting,
                         args=(threading.current_thread(), go_on), daemon=True).start()

    with pytest.raises(KeyboardInterrupt):
        block_workers._on_threads(2, pool_loop, own_loop, lambda: None)
    assert ended == [True]
