"""A reset cache or memory system is a new one: a renewed launch reuses its
memory system (gpuemu/machine/executor.py LaunchRun.renew) and must count
exactly what a fresh one counts, from cold caches (each launch starts cold:
no line of an earlier launch hits)."""
from dataclasses import replace

import numpy as np
import pytest

from gpuemu.arch import get_preset
from gpuemu.memory.cache import SectoredCache
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.stats import Stats
from test_cache import invalidate
from test_request_table import _instrs, random_batch


def _accesses(rng, n: int, lines: int, partitions: int) -> tuple:
    return (rng.integers(0, lines, size=n), rng.integers(1, 16, size=n),
            rng.random(n) < 0.8, rng.integers(0, partitions, size=n))


def _walk(cache, acc) -> list:
    lines, bits, alloc, part = acc
    part = part if cache.partitions > 1 else None
    return cache.access(lines, bits, alloc, part).tolist() + [cache.hits, cache.misses, cache.sets_in_use]


@pytest.mark.parametrize("partitions", [1, 4])
@pytest.mark.parametrize("seed", range(3))
def test_a_reset_cache_hits_what_a_new_one_hits(partitions, seed):
    rng = np.random.default_rng(seed)
    first, second = (_accesses(rng, 3000, 400, partitions) for _ in range(2))
    used = SectoredCache(8192, 128, 32, 4, "L", partitions=partitions)
    _walk(used, first)
    invalidate(used, first[0][:50], first[3][:50] if partitions > 1 else None)
    assert used.sets_in_use > 0
    used.reset()
    assert (used.sets_in_use, used.hits, used.misses) == (0, 0, 0)
    assert _walk(used, second) == _walk(SectoredCache(8192, 128, 32, 4, "L", partitions=partitions), second)


def test_a_reset_cache_forgets_a_set_whose_row_holds_no_line():
    used = SectoredCache(4096, 128, 32, 4)
    used.access(np.array([5]), np.array([1]), allocate=False)   # a row, but no line in it
    used.access(np.array([6]), np.array([1]))
    used.reset()
    assert used.sets_in_use == 0
    acc = (np.array([6, 5, 6]), np.array([1, 1, 1]), np.array([True, True, True]), None)
    assert _walk(used, acc) == _walk(SectoredCache(4096, 128, 32, 4), acc) == [0, 0, 1, 1, 2, 2]


def _tiny():
    p = get_preset("sm_90")
    return replace(p, mem=replace(p.mem, l1_bytes=2048, l2_bytes=32768, l2_assoc=4))


def _charged(ms, batches, instrs) -> dict:
    st = Stats()
    results = [ms.charge(b, instrs, st) for b in batches]
    ms.finish(st, np.arange(ms.preset.num_sms))
    caches = [(c.hits, c.misses, c._t, c.sets_in_use) for c in (ms.l1, ms.l2, ms.ro_cache)
              if c is not None]
    return dict(totals=dict(st.totals), lines=st.lines_dict(),
                worst={k: w.as_dict() for k, w in ms.worst.by_line.items()},
                cycles=[r.cycles.tolist() for r in results], latency=[r.latency.tolist() for r in results],
                sm=ms.sm_cycles.tolist(), warps=ms.warp_cycles, caches=caches)


@pytest.mark.parametrize("preset", ["sm_90", "sm_35", "sm_20", "tiny"])
@pytest.mark.parametrize("native", [True, False])
def test_a_reset_memory_system_counts_what_a_new_one_counts(preset, native):
    preset = _tiny() if preset == "tiny" else get_preset(preset)
    rng = np.random.default_rng(7)
    instrs = _instrs(rng, 12, narrow_shared=True)
    earlier = [random_batch(rng, instrs, 1500) for _ in range(2)]
    later = [random_batch(rng, instrs, 1000) for _ in range(2)]
    used = MemorySystem(preset)
    used.native = native
    _charged(used, earlier, instrs)
    used.reset()
    fresh = MemorySystem(preset)
    fresh.native = native
    want = _charged(fresh, later, instrs)
    assert _charged(used, later, instrs) == want
    assert want["totals"]["l2_hits"] > 0 and want["totals"]["constant_requests"] > 0


def test_a_reset_memory_system_keeps_no_cycles_or_kept_requests():
    rng = np.random.default_rng(3)
    instrs = _instrs(rng, 8, narrow_shared=True)
    ms = MemorySystem("sm_90")
    _charged(ms, [random_batch(rng, instrs, 500)], instrs)
    assert ms.sm_cycles.any() and ms.worst.by_line and ms.warp_cycles
    ms.reset()
    assert not ms.sm_cycles.any() and not ms.worst.by_line and ms.warp_cycles == {}
    assert ms.l1.sets_in_use == ms.l2.sets_in_use == 0
