"""The memory model's native passes (native_banks.shared_pass,
native_coalescer, native_cache_walk, summed per row by request_table) give
exactly what the numpy path gives (MemorySystem.native = False): every
counter in total and per line, the kept worst requests, per-request cycles
and latency, per-SM and per-warp cycles, cache state; on random traces
over the presets' rules and on the gallery's kernels."""
from dataclasses import replace

import numpy as np
import pytest

import request_table_reference as reference
from conftest import PROGRAMS
from gpuemu import manifest as mf
from gpuemu.arch import get_preset
from gpuemu.memory import request_table
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.trace import SPACE_CODES, AccessBatch, MemInstr
from gpuemu.stats import Stats

SPACES = ("shared", "global", "local", "constant")
G0 = 1 << 28


def _instrs(rng, n: int, narrow_shared: bool) -> list:
    """n random instructions; narrow_shared: shared ones of at most 4 bytes
    (the native bank pass serves a batch only when it serves all of them)."""
    out = []
    for i in range(n):
        space = SPACES[rng.integers(0, 4)]
        op = ("ld", "st", "atom", "red")[rng.integers(0, 4)] if space != "constant" else "ld"
        size = int(rng.choice([1, 2, 4, 4] if narrow_shared and space == "shared" else [1, 2, 4, 4, 4, 8, 16]))
        ro = bool(space == "global" and op == "ld" and rng.random() < 0.3)
        out.append(MemInstr(i, op, size, int(rng.integers(1, 6)), space, readonly=ro,
                            spill=bool(space == "local" and rng.random() < 0.5),
                            texture=bool(ro and rng.random() < 0.5)))
    return out


def _addresses(rng, ins: MemInstr, n: int) -> np.ndarray:
    lanes = np.arange(32, dtype=np.int64)
    kind = rng.integers(0, 5, size=n)[:, None]
    base = rng.integers(0, 64, size=n)[:, None] * 128
    stride = rng.choice([1, 2, 3, 8, 32, 33], size=n)[:, None]
    a = np.where(kind == 0, base + lanes * ins.size,                       # coalesced
        np.where(kind == 1, base + lanes * stride * ins.size,              # strided
        np.where(kind == 2, base,                                          # one address
        np.where(kind == 3, base + (lanes // 4) * 4,                       # a few words
                 rng.integers(0, 8192, size=(n, 32))))))                   # scattered
    a = (a // ins.size) * ins.size if rng.random() < 0.8 else a + rng.integers(0, 3)
    if ins.space == "global":
        a = a + G0
    if ins.space in ("shared", "constant"):
        a = a % (48 * 1024 - 16)
    return a.astype(np.int64)


def random_batch(rng, instrs: list, n: int) -> AccessBatch:
    iid = rng.integers(0, len(instrs), size=n)
    addr = np.zeros((n, 32), dtype=np.int64)
    for i in np.unique(iid):
        at = np.flatnonzero(iid == i)
        addr[at] = _addresses(rng, instrs[i], at.size)
    mask = np.where(rng.random(n) < 0.7, 0xFFFFFFFF, rng.integers(0, 1 << 32, size=n)).astype(np.uint32)
    mask[rng.random(n) < 0.02] = 0
    block = np.sort(rng.integers(0, 6, size=n)).astype(np.int32)
    return AccessBatch(instr=iid.astype(np.int32), mask=mask, addr=addr,
                       space=np.array([SPACE_CODES[instrs[i].space] for i in iid], dtype=np.int8),
                       sm=(block % 3).astype(np.int32), block=block,
                       warp=rng.integers(0, 4, size=n).astype(np.int32))


def _pieces(b: AccessBatch, sizes):
    at = 0
    for k in sizes:
        sl = slice(at, at + k)
        yield AccessBatch(b.instr[sl], b.mask[sl], b.addr[sl], b.space[sl], b.sm[sl], b.block[sl],
                          b.warp[sl])
        at += k


def charged(preset, batches, instrs, native: bool, prepared_first: bool = False):
    ms = MemorySystem(preset)
    ms.native = native
    st = Stats()
    if prepared_first:                    # as block workers do: prepare all, then apply in order
        results = [ms.apply(p, st) for p in [ms.prepare(b, instrs) for b in batches]]
    else:
        results = [ms.charge(b, instrs, st) for b in batches]
    ms.finish(st)
    caches = [(c.hits, c.misses, c._t) for c in (ms.l1, ms.l2, ms.ro_cache) if c is not None]
    return dict(totals=dict(st.totals), lines=st.lines_dict(),
                worst={k: w.as_dict() for k, w in ms.worst.by_line.items()},
                cycles=[r.cycles.tolist() for r in results], latency=[r.latency.tolist() for r in results],
                sm=ms.sm_cycles.tolist(), warps=ms.warp_cycles, caches=caches)


def _tiny():
    p = get_preset("sm_90")
    return replace(p, mem=replace(p.mem, l1_bytes=2048, l2_bytes=32768, l2_assoc=4))


PRESETS = ["sm_90", "sm_70", "sm_52", "sm_35", "sm_20", "sm_13", "tiny"]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("seed", range(4))
def test_native_passes_count_what_the_numpy_path_counts_on_random_traces(preset, seed):
    preset = _tiny() if preset == "tiny" else preset
    rng = np.random.default_rng(seed)
    instrs = _instrs(rng, 12, narrow_shared=seed % 2 == 0)
    whole = random_batch(rng, instrs, 3000)
    batches = list(_pieces(whole, [1, 700, 1299, 1000]))
    want = charged(preset, batches, instrs, native=False)
    assert charged(preset, batches, instrs, native=True) == want
    assert charged(preset, batches, instrs, native=True, prepared_first=True) == want
    assert want["totals"]["memory_cycles"] > 0


KERNELS = ["matmul_tiled", "histogram_shared_atomics", "transpose_tiled32", "reduce_sequential",
           "register_spill", "shared_char", "shared_double", "gmem_offset", "const_poly",
           "reduce_shfl_atomic", "global_coeffs"]


@pytest.mark.parametrize("name", KERNELS)
def test_native_passes_count_what_the_numpy_path_counts_on_gallery_kernels(name, monkeypatch):
    def launch(native):
        monkeypatch.setattr(MemorySystem, "native", native)
        r = mf.run(PROGRAMS / f"{name}.json")
        # global addresses are where this run's buffers happen to lie: compared as offsets
        worst = {k: dict(w.as_dict(), addrs=np.subtract(w.addrs, min(w.addrs)).tolist())
                 for k, w in r.launch.worst_requests.items()}
        return r.launch.stats, r.launch.stats_by_line, worst
    want = launch(False)
    assert launch(True) == want
    assert want[0]["memory_cycles"] > 0


def test_a_table_row_is_one_instruction_in_one_space():
    t = request_table.new_table(3)
    assert t.shape == (3 * request_table.NSP, request_table.NC)
    assert (t[:, request_table.COL["best"]] == -1).all() and reference.used_rows(t) == []
    t[2 * request_table.NSP + 1, 0] = 5
    assert [r for r, _ in reference.used_rows(t)] == [17]


def test_addresses_read_in_place_from_trace_records_count_as_a_copy_of_them():
    # the executor hands the trace buffer's addr field (rows 296 bytes apart) without copying it
    from gpuemu.jit import abi
    rng = np.random.default_rng(7)
    instrs = _instrs(rng, 10, narrow_shared=True)
    b = random_batch(rng, instrs, 500)
    rec = np.zeros(len(b), dtype=abi.TRACE_DTYPE)
    rec["addr"] = b.addr
    view = AccessBatch(b.instr, b.mask, rec["addr"], b.space, b.sm, b.block, b.warp)
    assert not view.addr.flags.c_contiguous and request_table._rows_of_32(view.addr)
    assert charged("sm_90", [view], instrs, native=True) == charged("sm_90", [b], instrs, native=True)
    assert charged("sm_90", [view], instrs, native=True) == charged("sm_90", [b], instrs, native=False)


def _reference_counters(table, t, kind, ro_on, l1_present, readonly_path) -> list:
    """The counters of a table as the readable rule gives them (request_table_reference), in settle's order."""
    sp = (SPACE_CODES["global"], SPACE_CODES["local"])
    used = reference.used_rows(table)
    return (reference.shared_counters(used, t["op"], t["line"], SPACE_CODES["shared"])
            + reference.global_counters(used, t, sp, ro_on, l1_present)
            + reference.cache_counters(used, t, sp, kind, readonly_path)
            + reference.cycle_counters(table, t["line"]))


@pytest.mark.parametrize("readonly_path", ["l1", "separate", "none"])
@pytest.mark.parametrize("seed", range(4))
def test_a_counter_plan_gives_the_counters_of_the_readable_rules(readonly_path, seed):
    rng = np.random.default_rng(seed)
    n = 9
    t = dict(op=rng.integers(0, 4, n).astype(np.int8), size=rng.choice([1, 4, 8, 16], n).astype(np.int64),
             line=rng.integers(1, 5, n).astype(np.int64), ro=rng.random(n) < 0.5, spill=rng.random(n) < 0.5,
             tex=rng.random(n) < 0.5)
    kind = rng.integers(0, 4, n * request_table.NSP).astype(np.int8)
    ro_on, l1_present = readonly_path != "none", seed % 2 == 0
    plan = request_table.CounterPlan(t, (SPACE_CODES["shared"], SPACE_CODES["global"], SPACE_CODES["local"]),
                                     ro_on, l1_present, kind, readonly_path)
    for _ in range(5):
        table = request_table.new_table(n)
        rows = rng.random(table.shape[0]) < 0.4
        table[rows] = rng.integers(0, 6, (int(rows.sum()), request_table.NC)) * (rng.random((int(rows.sum()), 1)) < 0.8)
        table[:, request_table.COL["cost"]] += table[:, request_table.COL["l1_hits"]]   # misses are not negative
        if rng.random() < 0.3:                  # no request through L1
            table[kind[np.arange(table.shape[0])] % 3 == 0, request_table.COL["cost"]] = 0
        got = plan.counters(table)
        assert got == _reference_counters(table, t, kind, ro_on, l1_present, readonly_path)
        assert any(name == "memory_cycles" for name, _, _ in got)
