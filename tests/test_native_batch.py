"""native_batch: a run's trace batches charged by the native passes with
kept arguments give what prepare and apply give (and the numpy path): every
counter in total and per line, the kept requests, SM and warp cycles, cache
state; a batch the passes do not serve is left to prepare and apply."""
import mmap
from dataclasses import replace

import numpy as np
import pytest

from gpuemu.jit import abi
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory import native_batch, native_lru
from gpuemu.memory.native_batch import NativeBatch
from gpuemu.memory.trace import SPACE_CODES, MemInstr
from gpuemu.stats import Stats
from test_request_table import PRESETS, _instrs, _pieces, _tiny, random_batch

SIZES = [1, 300, 37, 900, 2]          # batches, the first ones smaller than the columns grow to


def _records(batch) -> np.ndarray:
    """The trace records of an AccessBatch (as the warps write them)."""
    r = np.zeros(len(batch), dtype=abi.TRACE_DTYPE)
    for f in ("instr", "mask", "space", "block", "warp", "sm"):
        r[f] = getattr(batch, f)
    r["addr"] = batch.addr
    return r


def _charged(preset, batches, instrs, fast: bool, native: bool = True):
    ms = MemorySystem(preset)
    ms.native = native
    st = Stats()
    nb = NativeBatch(ms, instrs, 16)
    served = []
    for b in batches:
        r = _records(b)
        ok = fast and nb.charge(r)
        if not ok:                       # as LaunchRun._charge_records: prepare and apply
            ms.apply(ms.prepare(nb.cols.batch(r, ms._op, ms._size, ms._skip), instrs), st)
        served.append(ok)
    return _outcome(ms, st), served


def _outcome(ms, st) -> dict:
    """A finished launch's counters, kept requests, cycles and cache state."""
    ms.finish(st)
    caches = [(c.hits, c.misses, c._t) for c in (ms.l1, ms.l2, ms.ro_cache) if c is not None]
    return dict(totals=dict(st.totals), lines=st.lines_dict(),
                worst={k: w.as_dict() for k, w in ms.worst.by_line.items()},
                sm=ms.sm_cycles.tolist(), warps=ms.warp_cycles, caches=caches)


def _no_constant(instrs: list) -> list:
    return [replace(i, space="global") if i.space == "constant" else i for i in instrs]


def _on_device(preset, seed: int, n_instrs: int, monkeypatch) -> tuple:
    """(preset, rng, instrs) for random requests all on the device."""
    # (an earlier test may have made host memory: these requests are all on the device)
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    rng = np.random.default_rng(seed)
    return _tiny() if preset == "tiny" else preset, rng, _no_constant(_instrs(rng, n_instrs, narrow_shared=True))


def _random_launch(preset, seed: int, monkeypatch) -> tuple:
    """(preset, instrs, batches) of random requests, all on the device."""
    preset, rng, instrs = _on_device(preset, seed, 10, monkeypatch)
    return preset, instrs, list(_pieces(random_batch(rng, instrs, sum(SIZES)), SIZES))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seed", range(3))
def test_batches_charge_as_prepare_and_apply_and_the_numpy_path(preset, seed, monkeypatch):
    preset, instrs, batches = _random_launch(preset, seed, monkeypatch)
    want, _ = _charged(preset, batches, instrs, fast=False, native=False)
    got, served = _charged(preset, batches, instrs, fast=True)
    assert got == want
    assert _charged(preset, batches, instrs, fast=False)[0] == want
    if preset in ("sm_90", "sm_70"):     # their rules are the passes': every batch served here
        assert all(served)


def test_a_batch_with_a_constant_request_is_left_to_prepare_and_apply():
    rng = np.random.default_rng(5)
    instrs = _no_constant(_instrs(rng, 6, narrow_shared=True)) + [MemInstr(6, "ld", 4, 9, "constant")]
    b = random_batch(rng, instrs, 400)
    batches = list(_pieces(b, [200, 200]))
    want, _ = _charged("sm_90", batches, instrs, fast=False, native=False)
    got, served = _charged("sm_90", batches, instrs, fast=True)
    assert got == want and not any(served)
    assert want["totals"]["constant_requests"] > 0


@pytest.mark.parametrize("in_host_memory", [True, False])
def test_global_requests_in_host_memory_are_left_to_prepare_and_apply(in_host_memory, monkeypatch):
    # host memory in use (a mapped buffer alive): a batch is served unless an active lane of a
    # global request has a host memory address (buffers.kind_of_addresses' ranges)
    from gpuemu.host.buffers import MAPPED_BASE
    from gpuemu.memory import memory_system
    for module in (native_batch, memory_system):
        monkeypatch.setattr(module, "host_memory_in_use", lambda: True)
    rng = np.random.default_rng(8)
    instrs = [MemInstr(0, "ld", 4, 3, "global"), MemInstr(1, "ld", 4, 4, "shared")]
    b = random_batch(rng, instrs, 100)
    if in_host_memory:
        glob = b.space == SPACE_CODES["global"]
        b.addr[glob] += MAPPED_BASE        # (random_batch's addresses are small offsets)
    want, _ = _charged("sm_90", [b], instrs, fast=False, native=False)
    got, served = _charged("sm_90", [b], instrs, fast=True)
    assert got == want and served == [not in_host_memory]
    if in_host_memory:
        assert want["totals"]["zero_copy_requests"] > 0


def test_shared_requests_the_bank_pass_does_not_serve_are_left_to_prepare_and_apply():
    instrs = [MemInstr(0, "ld", 16, 3, "shared"), MemInstr(1, "ld", 4, 4, "global")]
    rng = np.random.default_rng(6)
    batches = [random_batch(rng, instrs, 100)]
    want, _ = _charged("sm_90", batches, instrs, fast=False, native=False)
    got, served = _charged("sm_90", batches, instrs, fast=True)
    assert got == want and served == [False]


@pytest.mark.parametrize("let_go", [False, True])
def test_rebound_to_a_new_memory_system_it_counts_what_a_new_one_counts(let_go, monkeypatch):
    # a run whose memory system is not kept (launch_plan.keep_memory_system) keeps its NativeBatch;
    # let go (a block worker's kept one between launches), it holds nothing of the old memory
    # system (its caches' states can go back to record_pool) and serves no other until bound
    import gc
    import weakref
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    rng = np.random.default_rng(7)
    instrs = _no_constant(_instrs(rng, 8, narrow_shared=True))
    batches = list(_pieces(random_batch(rng, instrs, 1500), [700, 800]))
    want, _ = _charged("sm_90", batches, instrs, fast=True)
    old = MemorySystem("sm_90")
    nb = NativeBatch(old, instrs, 16)
    for b in batches:                      # a first launch, on another memory system
        assert nb.charge(_records(b))
    if let_go:
        gone = weakref.ref(old.l2._state)
        nb.let_go()
        del old
        gc.collect()
        assert gone() is None and not nb.serves(MemorySystem("sm_90"), instrs)
    ms, st = MemorySystem("sm_90"), Stats()
    nb.bind(ms, instrs)
    for b in batches:
        assert nb.charge(_records(b))
    ms.finish(st)
    assert dict(st.totals) == want["totals"] and st.lines_dict() == want["lines"]
    assert ms.sm_cycles.tolist() == want["sm"] and ms.warp_cycles == want["warps"]


def _apart(preset, seed: int, monkeypatch) -> tuple:
    """Random batches on the device, what one NativeBatch charging them in
    turn counts, and a memory system ready to be charged by one NativeBatch
    per batch (as block workers' threads share it): (rng, instrs, batches,
    want, ms, NativeBatches)."""
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    rng = np.random.default_rng(seed)
    instrs = _no_constant(_instrs(rng, 10, narrow_shared=True))
    batches = list(_pieces(random_batch(rng, instrs, sum(SIZES)), SIZES))
    want, _ = _charged(preset, batches, instrs, fast=True)
    ms = MemorySystem(preset)
    ms._tables(instrs)
    ms.launch_sums()
    return rng, instrs, batches, want, ms, [NativeBatch(ms, instrs, 16) for _ in batches]


@pytest.mark.parametrize("preset", ["sm_90", "sm_70"])
def test_batches_prepared_apart_out_of_order_and_applied_in_order_charge_as_one_in_turn(preset, monkeypatch):
    # block workers: each trace buffer's NativeBatch prepares its batch on its own
    # thread, in any order; the batches are applied in issue order
    rng, instrs, batches, want, ms, parts = _apart(preset, 7, monkeypatch)
    records = [_records(b) for b in batches]
    for k in reversed(range(len(batches))):            # the last batch prepared first
        assert parts[k].prepare(records[k])
    for nb in parts:
        nb.apply()
    assert _outcome(ms, Stats()) == want


@pytest.mark.parametrize("preset", ["sm_90", "sm_70"])
def test_native_batches_of_one_memory_system_applied_in_turn_walk_one_clock(preset, monkeypatch):
    # block workers' NativeBatches take turns on one memory system: the caches stay counted
    # in its one clock array, not read back (SectoredCache._sync) before each apply
    from gpuemu.memory.cache import SectoredCache
    rng, instrs, batches, want, ms, parts = _apart(preset, 9, monkeypatch)
    for nb, b in zip(parts, batches):
        assert nb.prepare(_records(b))
    parts[0].apply()
    sync, synced = SectoredCache._sync, []
    monkeypatch.setattr(SectoredCache, "_sync", lambda cache: synced.append(cache.name) or sync(cache))
    for nb in parts[1:]:
        nb.apply()
    monkeypatch.setattr(SectoredCache, "_sync", sync)
    assert synced == [] and all(nb.clock is parts[0].clock for nb in parts)
    assert _outcome(ms, Stats()) == want


@pytest.mark.parametrize("preset", ["sm_90", "sm_70"])
def test_a_prepared_batch_whose_records_are_written_over_after_keep_records_applies_as_charged(preset, monkeypatch):
    # block workers write the next batch into the buffer a prepared one was read from:
    # apply reads the records it needs (the fold's costliest requests) from the kept copy
    rng, instrs, batches, want, ms, parts = _apart(preset, 8, monkeypatch)
    buffer = np.zeros(max(SIZES), dtype=abi.TRACE_DTYPE)
    for nb, b in zip(parts, batches):
        r = buffer[:len(b)]
        r[...] = _records(b)
        assert nb.prepare(r)
        nb.keep_records()
        buffer["addr"] = rng.integers(0, 1 << 40, size=buffer["addr"].shape)    # the next batch's
    for nb in parts:
        nb.apply()
    assert _outcome(ms, Stats()) == want


def test_kept_records_hold_a_bounded_number_of_pages():
    kept = native_batch.KeptRecords(8192)
    records = np.zeros(8192, dtype=abi.TRACE_DTYPE)
    records["addr"] = 7
    for first in range(0, 8192, 97):              # copies spread over the whole room
        at = np.arange(first, min(first + 3, 8192))
        got = kept.copy(records, at)
        assert (got["addr"][at] == 7).all()
        assert kept.nbytes <= native_batch.KeptRecords.PAGES * mmap.PAGESIZE
    assert (kept.records["addr"][:3] == 0).all()      # the first copy's pages given back long since


def test_kept_records_copied_again_at_the_same_places_keep_their_pages():
    # a batch's costliest requests are mostly at the same places batch after
    # batch: the pages stay mapped (each give-back flushes every core's TLB)
    kept = native_batch.KeptRecords(8192)
    records = np.zeros(8192, dtype=abi.TRACE_DTYPE)
    records["addr"] = 7
    kept.copy(records, np.array([0, 1, 2]))
    records["addr"] = 9
    for _ in range(50):
        kept.copy(records, np.array([0, 1]))
    assert (kept.records["addr"][:3, 0] == [9, 9, 7]).all()     # record 2's page never given back
    assert kept.nbytes == mmap.PAGESIZE


def _line_batches(first: int, second: int):
    """One request of line `first`, then 200 lookups of line `second` (the
    caches' rows grow), then both lines again: the last batch hits both.
    (Each test its own lines: rows given back to record_pool by an earlier
    test must not hold them by chance.)"""
    from gpuemu.memory.synthetic import concat, warp_requests
    lanes = np.arange(32) * 4
    one = lambda line: warp_requests(0, (line << 20) + lanes, "global")  # noqa: E731
    return [concat([one(first)]), concat([one(second)] * 200), concat([one(second), one(first)])]


def test_caches_grown_by_a_batch_left_to_prepare_and_apply_are_walked_in_their_new_rows(monkeypatch):
    # the middle batch (left to the other way) grows the caches' rows through MemorySystem.apply:
    # the next batch charged natively walks the rows the caches hold now (not the ones they gave back)
    monkeypatch.setattr(native_lru, "GROWN", {})
    instrs = [MemInstr(0, "ld", 4, 3, "global")]
    batches = _line_batches(1, 2)

    def charged(fast: bool):
        ms, st = MemorySystem("sm_90"), Stats()
        nb = NativeBatch(ms, instrs, 16)
        served = []
        for b, host in zip(batches, (False, True, False)):
            r = _records(b)
            ok = fast and not host and nb.charge(r)       # (host: as a batch the native path refuses)
            if not ok:
                ms.apply(ms.prepare(nb.cols.batch(r, ms._op, ms._size, ms._skip), instrs), st)
            served.append(ok)
        return _outcome(ms, st), served

    want, _ = charged(False)
    got, served = charged(True)
    assert served == [True, False, True]
    assert got == want
    assert got["caches"][1][:2] == (0, 8)    # L2: the 4 sectors of each line missed once (then L1 hits)


def test_caches_grown_by_another_native_batch_are_walked_in_their_new_rows(monkeypatch):
    # block workers: two NativeBatches on one memory system; the second grows the caches' rows,
    # the first then walks the rows the caches hold now
    monkeypatch.setattr(native_lru, "GROWN", {})
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    instrs = [MemInstr(0, "ld", 4, 3, "global")]
    batches = _line_batches(3, 4)

    def charged(which: list):
        ms, st = MemorySystem("sm_90"), Stats()
        parts = [NativeBatch(ms, instrs, 16) for _ in range(2)]
        for b, k in zip(batches, which):
            assert parts[k].prepare(_records(b))
            parts[k].apply()
        return _outcome(ms, st)

    one = charged([0, 0, 0])
    assert charged([0, 1, 0]) == one
    assert one["caches"][1][:2] == (0, 8)    # L2: the 4 sectors of each line missed once (then L1 hits)


def test_a_launch_whose_constant_requests_grow_the_caches_counts_as_prepare_and_apply(monkeypatch):
    # end to end: the blocks with a __constant__ request take prepare and apply and grow the
    # caches' rows; the later blocks' batches, charged natively, walk the rows as they are now
    import gpuemu
    monkeypatch.setattr(native_lru, "GROWN", {})
    src = r'''
__constant__ float cdata[4];
extern "C" __global__ void k(const float *x, float *out, int a, int b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int heavy = (int)blockIdx.x >= a && (int)blockIdx.x < b;
  float v = x[heavy ? (threadIdx.x % 32) * 8 : ((int)blockIdx.x >= b ? (blockIdx.x % 8) * 32 : 2048 + (blockIdx.x % 7) * 64)];
  if (heavy) v += cdata[0];
  if (v == 12345.0f) out[i] = v; }'''
    a, b, blocks = 1024, 1536, 1636
    x = gpuemu.asarray(np.zeros(4096, np.float32))
    out = gpuemu.asarray(np.zeros(blocks * 256, np.float32))
    k = gpuemu.RawModule(code=src).get_function("k")

    def stats() -> dict:
        return dict(k((blocks,), (256,), (x, out, np.int32(a), np.int32(b))).stats)

    got = stats()

    def refused(self, records, at=None) -> bool:   # as where the native path refuses a batch
        self.cols.fill(records)                    # (the columns hold its records)
        return False
    monkeypatch.setattr(NativeBatch, "charge", refused)      # every batch the other way
    monkeypatch.setattr(NativeBatch, "charge_last", lambda self, *args: None)
    monkeypatch.setattr(native_lru, "GROWN", {})
    assert got == stats()


def _ended(preset, batches, instrs, last: bool, reset: bool = False):
    """A launch's batches charged, then its end (MemorySystem.finish with
    issue counts and 4 schedulers): the last batch by charge_last where
    `last`, else as before. Its outcome, and the memory system."""
    from gpuemu.jit.engine import address
    ms = MemorySystem(preset)
    st = Stats()
    nb = NativeBatch(ms, instrs, 16)
    issue = np.arange(ms.sm_cycles.size, dtype=np.int64) * 37
    for b in batches[:-1]:
        assert nb.charge(_records(b))
    r = _records(batches[-1])
    if last:
        cycles = nb.charge_last(nb.ms, instrs, len(r), address(r), st, issue, 4, reset=reset)
        assert cycles is not None
        caches = [(c.hits, c.misses, c._t) for c in (ms.l1, ms.l2) if c is not None]
        st.add("cycles", cycles)
    else:
        assert nb.charge(r)
        ms.finish(st, issue, 4)
        caches = [(c.hits, c.misses, c._t) for c in (ms.l1, ms.l2) if c is not None]
    out = dict(totals=dict(st.totals), lines=st.lines_dict(),
               worst={k: w.as_dict() for k, w in ms.worst.by_line.items()})
    if not reset:
        out.update(sm=ms.sm_cycles.tolist(), warps=ms.warp_cycles, caches=caches)
    return out, nb


@pytest.mark.parametrize("preset", ["sm_90", "sm_70", "tiny"])
@pytest.mark.parametrize("seed", range(2))
def test_a_launchs_last_batch_charged_with_its_end_counts_as_charge_and_finish(preset, seed, monkeypatch):
    # LaunchRun.finish: the last batch, the settle and the busiest SM's cycles in one native call
    preset, instrs, batches = _random_launch(preset, seed, monkeypatch)
    want, _ = _ended(preset, batches, instrs, last=False)
    got, _ = _ended(preset, batches, instrs, last=True)
    assert got == want
    reset, _ = _ended(preset, batches, instrs, last=True, reset=True)
    assert reset == {k: want[k] for k in ("totals", "lines", "worst")}


@pytest.mark.parametrize("preset", ["sm_90", "tiny"])
def test_a_memory_system_reset_at_its_launchs_end_counts_the_next_launch_as_a_new_one(preset, monkeypatch):
    # launch_cache's kept runs: the native half of MemorySystem.reset ran with the last batch
    preset, rng, instrs = _on_device(preset, 4, 10, monkeypatch)
    first = list(_pieces(random_batch(rng, instrs, 1200), [500, 700]))
    later = list(_pieces(random_batch(rng, instrs, 900), [400, 500]))
    _, kept = _ended(preset, first, instrs, last=True, reset=True)
    ms = kept.ms
    assert not ms.sm_cycles.any() and ms.warp_cycles == {}
    assert (ms.l2.hits, ms.l2.misses, ms.l2._t, ms.l2.sets_in_use) == (0, 0, 0, 0)
    ms.reset()
    fresh = MemorySystem(preset)
    want, got = Stats(), Stats()
    for nb, st in ((NativeBatch(fresh, instrs, 16), want), (kept, got)):
        for b in later:
            assert nb.charge(_records(b))
        nb.ms.finish(st)
    assert dict(got.totals) == dict(want.totals) and got.lines_dict() == want.lines_dict()
    assert ms.sm_cycles.tolist() == fresh.sm_cycles.tolist() and ms.warp_cycles == fresh.warp_cycles
    assert [(c.hits, c.misses, c._t) for c in (ms.l1, ms.l2)] == [(c.hits, c.misses, c._t) for c in (fresh.l1, fresh.l2)]
    assert want.totals["l2_hits"] > 0


def _charged_by(path: str, ms, instrs, batch) -> None:
    """`batch` charged to `ms` one of the ways a batch is charged."""
    if path == "charge":
        ms.charge(batch, instrs, Stats())
    elif path == "prepare_apply":
        ms.apply(ms.prepare(batch, instrs), Stats())
    elif path == "native":
        assert NativeBatch(ms, instrs, 16).charge(_records(batch))
    else:                                          # a block worker's: prepared, then applied in order
        nb = NativeBatch(ms, instrs, 16)
        assert nb.prepare(_records(batch))
        nb.apply()


@pytest.mark.parametrize("path", ["charge", "prepare_apply", "native", "native_prepare_apply"])
def test_a_batch_charged_any_way_after_the_end_reset_makes_the_next_reset_whole(path, monkeypatch):
    # MemorySystem.reset's two phases: every way of charging a batch undoes the native half's note
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    rng = np.random.default_rng(9)
    instrs = _no_constant(_instrs(rng, 6, narrow_shared=True))
    batches = list(_pieces(random_batch(rng, instrs, 600), [300, 300]))
    _, nb = _ended("sm_90", batches, instrs, last=True, reset=True)
    ms = nb.ms
    _charged_by(path, ms, instrs, batches[0])
    assert ms.l2.sets_in_use > 0 and ms.sm_cycles.any()
    ms.reset()
    assert (ms.l2.sets_in_use, ms.l2.hits, ms.l2._t) == (0, 0, 0) and not ms.sm_cycles.any()
    assert ms.l1.sets_in_use == 0 and ms.warp_cycles == {}


def test_a_last_batch_the_passes_do_not_serve_is_left_as_it_was():
    from gpuemu.jit.engine import address
    rng = np.random.default_rng(5)
    instrs = _no_constant(_instrs(rng, 6, narrow_shared=True)) + [MemInstr(6, "ld", 4, 9, "constant")]
    r = _records(random_batch(rng, instrs, 300))
    ms = MemorySystem("sm_90")
    nb = NativeBatch(ms, instrs, 16)
    st = Stats()
    issue = np.zeros(ms.sm_cycles.size, dtype=np.int64)
    assert nb.charge_last(nb.ms, instrs, len(r), address(r), st, issue, 4, reset=True) is None
    assert st.empty and not ms.sm_cycles.any() and ms.l2.sets_in_use == 0
    assert ms._reset_clock is None


@pytest.mark.parametrize("preset", ["sm_90", "tiny"])
def test_launch_after_launch_ended_and_reset_natively_each_counts_as_on_a_new_memory_system(preset, monkeypatch):
    # launch_cache: one kept run, its NativeBatch and memory system, launch after launch
    from gpuemu.jit.engine import address
    preset, rng, instrs = _on_device(preset, 11, 8, monkeypatch)
    ms = MemorySystem(preset)
    kept = NativeBatch(ms, instrs, 16)
    issue = np.arange(ms.sm_cycles.size, dtype=np.int64) * 5
    for launch in range(4):
        batches = list(_pieces(random_batch(rng, instrs, 700), [300, 400] if launch % 2 else [700]))
        fresh = MemorySystem(preset)
        want, nb = Stats(), NativeBatch(fresh, instrs, 16)
        for b in batches:
            assert nb.charge(_records(b))
        fresh.finish(want, issue, 4)
        ms.reset()
        got = Stats()
        for b in batches[:-1]:
            assert kept.charge(_records(b))
        r = _records(batches[-1])
        got.add("cycles", kept.charge_last(ms, instrs, len(r), address(r), got, issue, 4, reset=True))
        assert dict(got.totals) == dict(want.totals) and got.lines_dict() == want.lines_dict()
        assert ({k: w.as_dict() for k, w in ms.worst.by_line.items()}
                == {k: w.as_dict() for k, w in fresh.worst.by_line.items()})


def test_a_steady_last_batch_counts_its_own_issue_counts_after_a_finish_with_others(monkeypatch):
    # a finish on the same memory system with other issue counts and schedulers re-points the
    # busiest SM's call: the next charge_last (the steady path) counts the issue counts it is given
    from gpuemu.jit.engine import address
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    rng = np.random.default_rng(3)
    instrs = _no_constant(_instrs(rng, 8, narrow_shared=True))
    r = _records(random_batch(rng, instrs, 300))

    def cycles(spoil: bool) -> list:
        ms = MemorySystem("sm_90")
        nb = NativeBatch(ms, instrs, 16)
        issue = np.arange(ms.sm_cycles.size, dtype=np.int64) * 1000
        out = []
        for _ in range(3):
            ms.reset()
            out.append(nb.charge_last(ms, instrs, len(r), address(r), Stats(), issue, 4))
            if spoil:
                ms.finish(Stats(), np.zeros_like(issue), 1)
        return out

    plain = cycles(False)
    assert plain == [plain[0]] * 3 and plain[0] >= (MemorySystem("sm_90").sm_cycles.size - 1) * 1000 // 4
    assert cycles(True) == plain


def test_zero_schedulers_count_as_one_in_the_numpy_and_the_native_finish():
    # MemorySystem.finish: the native busiest call (a C-contiguous int64 array) and numpy (any other) agree
    ms = MemorySystem("sm_90")
    ms.sm_cycles[:] = np.arange(ms.sm_cycles.size) * 3
    issue = np.arange(ms.sm_cycles.size, dtype=np.int64)[::-1].copy() * 7
    native, numpy_ = Stats(), Stats()
    ms.finish(native, issue, 0)
    ms.finish(numpy_, np.repeat(issue, 2)[::2], 0)      # (the same counts, not contiguous: numpy)
    assert native.totals["cycles"] == numpy_.totals["cycles"] == int((ms.sm_cycles + issue).max())


def _kept_launches(seed: int, monkeypatch) -> tuple:
    """A kept run's memory system and NativeBatch, its batch of records and
    issue counts, per launch whether charge_last took the steady path (did
    not set its arguments up again: _ready_last), and its launch: reset,
    then the batch charged by charge_last."""
    from gpuemu.jit.engine import address
    _, rng, instrs = _on_device("sm_90", seed, 8, monkeypatch)
    steady, ready = [], NativeBatch._ready_last

    def spy(self, *args):
        steady[-1] = False
        return ready(self, *args)
    monkeypatch.setattr(NativeBatch, "_ready_last", spy)
    r = _records(random_batch(rng, instrs, 400))
    ms = MemorySystem("sm_90")
    kept = NativeBatch(ms, instrs, 16)
    issue = np.arange(ms.sm_cycles.size, dtype=np.int64) * 11

    def launch(records: np.ndarray = r) -> tuple:
        ms.reset()
        st = Stats()
        steady.append(True)
        cycles = kept.charge_last(ms, instrs, len(records), address(records), st, issue, 4, reset=True)
        if cycles is not None:
            st.add("cycles", cycles)
        return cycles, st
    return ms, kept, r, issue, steady, launch


def test_a_kept_runs_later_launches_take_the_steady_path_and_count_as_the_first(monkeypatch):
    # launch_cache: nothing charge_last depends on changed since the last launch: the steady path
    *_, steady, launch = _kept_launches(12, monkeypatch)
    outs = [(dict(st.totals), st.lines_dict()) for _, st in (launch() for _ in range(3))]
    assert steady == [False, True, True] and outs[1] == outs[0] and outs[2] == outs[0]
    assert outs[0][0]["l2_hits"] + outs[0][0]["l2_misses"] > 0


def test_a_steady_last_batch_the_guard_stops_is_left_to_the_caller_and_the_next_call_looks_again(monkeypatch):
    # the second launch reads host memory: the guard stops the steady path, nothing is charged,
    # the batch charged the other way counts as on a fresh memory system, and the third call is not steady
    from gpuemu.host.buffers import MAPPED_BASE
    from gpuemu.memory import memory_system
    ms, kept, r, issue, steady, launch = _kept_launches(13, monkeypatch)
    _, first = launch()
    for module in (native_batch, memory_system):
        monkeypatch.setattr(module, "host_memory_in_use", lambda: True)
    host = r.copy()
    host["addr"][host["space"] == SPACE_CODES["global"]] += MAPPED_BASE
    cycles, st = launch(host)
    assert cycles is None and steady == [False, True] and st.empty and not ms.sm_cycles.any()
    ms.apply(ms.prepare(kept.cols.batch(host, ms._op, ms._size, ms._skip), kept.instrs), st)
    ms.finish(st, issue, 4)
    fresh, want = MemorySystem("sm_90"), Stats()
    fresh.apply(fresh.prepare(kept.cols.batch(host, ms._op, ms._size, ms._skip), kept.instrs), want)
    fresh.finish(want, issue, 4)
    assert dict(st.totals) == dict(want.totals) and st.lines_dict() == want.lines_dict()
    assert want.totals["zero_copy_requests"] > 0
    for module in (native_batch, memory_system):
        monkeypatch.setattr(module, "host_memory_in_use", lambda: False)
    _, third = launch()
    assert steady == [False, True, False] and dict(third.totals) == dict(first.totals)


GATHER = r"""
extern "C" __global__ void gather(const float *a, float *c, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[(long long)i * stride % n] + a[((long long)i * stride + 4096) % n];
}
"""


def test_a_steady_launch_whose_cache_walk_needs_room_counts_as_a_fresh_module(monkeypatch):
    # a kept run's later launch gathers from many more lines than the one before: the steady
    # path's walk stops for room (_make_room), grows the caches' rows and walks on; every
    # launch counts what the same launch on a fresh module (the full path) counts
    import gpuemu
    monkeypatch.setattr(native_lru, "GROWN", {})   # states grow as in a fresh process (not at once
    # to what earlier tests' states reached), and no host memory was ever allocated (an earlier
    # test's mapped buffer makes the guard stop every steady path: buffers.host_memory_in_use)
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)
    calls = []
    for name in ("charge_last", "_ready_last", "_make_room"):
        orig = getattr(NativeBatch, name)

        def spy(self, *a, _orig=orig, _name=name):
            calls.append(_name)
            return _orig(self, *a)
        monkeypatch.setattr(NativeBatch, name, spy)
    n = 1 << 20
    a = gpuemu.asarray(np.random.default_rng(0).random(n, dtype=np.float32))
    c = gpuemu.asarray(np.zeros(2048, np.float32))
    k = gpuemu.RawModule(code=GATHER).get_function("gather")
    made_room_steady = False
    for stride in (0, 0, 0, 4097, 0, 8193, 129):
        args = (a, c, np.int32(n), np.int32(stride))
        del calls[:]
        kept = k((8,), (256,), args)
        made_room_steady |= calls[:1] == ["charge_last"] and "_ready_last" not in calls and "_make_room" in calls
        fresh = gpuemu.RawModule(code=GATHER).get_function("gather")((8,), (256,), args)
        assert (kept.stats, kept.stats_by_line) == (fresh.stats, fresh.stats_by_line)
    assert made_room_steady


VECADD = r"""
extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def _kept_vecadd_ends(a, monkeypatch) -> tuple:
    """Three launches of a counters-on vecadd reading `a` (and device
    arrays), the later two kept: per kept launch whether its last batch went
    the native end path (charge_last charged it), and each launch's
    counters; then the same launch on a fresh module (the full path)."""
    import gpuemu
    ends, last = [], NativeBatch.charge_last

    def spy(self, *args):
        got = last(self, *args)
        ends.append(got is not None)
        return got
    monkeypatch.setattr(NativeBatch, "charge_last", spy)
    n = a.size
    b, c = gpuemu.asarray(np.ones(n, np.float32)), gpuemu.asarray(np.zeros(n, np.float32))
    args = (a, b, c, np.int32(n))
    k = gpuemu.RawModule(code=VECADD).get_function("vecadd")
    counted = [(k.stats, k.stats_by_line) for k in (k(((n + 255) // 256,), (256,), args) for _ in range(3))]
    fresh = gpuemu.RawModule(code=VECADD).get_function("vecadd")(((n + 255) // 256,), (256,), args)
    return ends, counted, (fresh.stats, fresh.stats_by_line)


def _one_lane_loads(addrs) -> np.ndarray:
    r = np.zeros(len(addrs), dtype=abi.TRACE_DTYPE)
    r["instr"], r["mask"], r["space"], r["sm"] = 0, 1, SPACE_CODES["global"], 0
    r["warp"] = np.arange(len(addrs))
    r["addr"][:, 0] = addrs
    return r


@pytest.mark.parametrize("apart", [False, True])
def test_a_batch_that_looked_up_l1_alone_leaves_the_walk_its_l1_clock(apart):
    # A batch charged the other way (prepare and apply: its loads of mapped memory) looks L1
    # up and leaves L2 alone (mapped sectors do not stay there); the native batches after it
    # walk L1 with its clock, so the line it made youngest is not taken for the oldest.
    # apart: one NativeBatch per batch, as block workers' buffers take turns.
    import gpuemu
    instrs = [MemInstr(0, "ld", 4, 1, "global")]
    mp, dev = gpuemu.alloc_mapped(1 << 22, np.float32), gpuemu.empty(1 << 22, np.float32)
    sets, s = 416, 5                             # sm_90's L1: 416 sets of 4 128-byte lines

    def in_set(base, k_set, k):                  # the k-th line of L1 set k_set from base on
        first = (base + 127) // 128
        return (first + (k_set - first) % sets + k * sets) * 128
    d, m = dev.device_address, mp.device_address
    batches = [_one_lane_loads([in_set(d, s + 1, 0)]),
               _one_lane_loads([in_set(m, s + 2, 0), in_set(m, s, 0)]),       # charged the other way
               _one_lane_loads([in_set(d, s, 0)]),
               _one_lane_loads([in_set(d, s, k) for k in (1, 2, 3)]),         # set s full, then evicts
               _one_lane_loads([in_set(d, s, 0)])]

    def charged(fast: bool) -> tuple:
        ms, st = MemorySystem("sm_90"), Stats()
        ms._tables(instrs)
        nb, served = NativeBatch(ms, instrs, 16), []
        for r in batches:
            if apart:
                nb = NativeBatch(ms, instrs, 16)
            ok = fast and nb.prepare(r)
            if ok:
                nb.apply()
            else:
                ms.apply(ms.prepare(nb.cols.batch(r, ms._op, ms._size, ms._skip), instrs), st)
            served.append(ok)
        return _outcome(ms, st), served
    want, _ = charged(False)
    got, served = charged(True)
    assert served == [True, False, True, True, True]
    assert got == want and want["totals"]["l1_hits"] == 1


def test_a_freed_mapped_buffer_leaves_kept_launches_on_the_native_end_path(monkeypatch):
    import gc
    import gpuemu
    gone = gpuemu.alloc_mapped(4096, np.float32)
    del gone
    gc.collect()
    ends, counted, fresh = _kept_vecadd_ends(gpuemu.asarray(np.ones(2048, np.float32)), monkeypatch)
    assert ends == [True, True] and counted == [fresh] * 3


def test_a_mapped_buffer_the_launch_does_not_touch_leaves_it_on_the_native_end_path(monkeypatch):
    import gpuemu
    other = gpuemu.alloc_mapped(4096, np.float32)       # alive, but not read by the launch
    ends, counted, fresh = _kept_vecadd_ends(gpuemu.asarray(np.ones(2048, np.float32)), monkeypatch)
    assert other.size == 4096 and ends == [True, True] and counted == [fresh] * 3


def test_a_launch_reading_mapped_memory_is_charged_as_host_memory(monkeypatch):
    import gpuemu
    a = gpuemu.alloc_mapped(2048, np.float32)
    a.set(np.ones(2048, np.float32))
    ends, counted, fresh = _kept_vecadd_ends(a, monkeypatch)
    assert ends == [False, False] and counted == [fresh] * 3
    assert fresh[0]["zero_copy_requests"] == 2048 // 32
