"""native_coalescer: each request's sectors are the readable rule's
(coalescer.global_request_reference, after interleave_local for local
requests), atomics add their same-address serialisation, the table row
sums requests, sectors and lanes; texture headers and other spaces are
left out."""
import numpy as np

from gpuemu.arch import get_preset
from gpuemu.memory import bank_arbiter, coalescer, request_table
from gpuemu.memory.native_coalescer import applies, coalesce_pass
from gpuemu.memory.trace import SPACE_CODES, AccessBatch

MEM = get_preset("sm_90").mem
GLOBAL, LOCAL = SPACE_CODES["global"], SPACE_CODES["local"]


def _run(addr, mask, size, op, space, block=None, skip=0):
    """One MemInstr per request (its op and size)."""
    n = addr.shape[0]
    z = np.zeros(n, dtype=np.int32)
    batch = AccessBatch(instr=np.arange(n, dtype=np.int32), mask=mask, addr=addr,
                        space=np.asarray(space, dtype=np.int8), sm=z,
                        block=z if block is None else np.asarray(block, dtype=np.int32), warp=z)
    arrays = request_table.batch_arrays(batch, np.asarray(op, dtype=np.int8), np.asarray(size, dtype=np.int64),
                                        np.full(n, skip, dtype=np.int8))
    table = request_table.new_table(n)
    cycles, latency = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    sec, start = coalesce_pass(arrays, (GLOBAL, LOCAL), MEM, 4, cycles, latency, table)
    return [sec[start[j]:start[j + 1]].tolist() for j in range(n)], cycles, latency, table


def test_global_sectors_are_the_reference_rules():
    rng = np.random.default_rng(0)
    n = 400
    size = rng.choice([1, 2, 4, 8, 16], size=n).astype(np.int64)
    addr = (rng.integers(0, 4096, size=(n, 32)) * rng.choice([1, 4, 32], size=(n, 1))).astype(np.int64)
    mask = rng.integers(0, 1 << 32, size=n).astype(np.uint32)
    got, _, _, table = _run(addr, mask, size, np.zeros(n), np.full(n, GLOBAL))
    for j in range(n):
        want = coalescer.global_request_reference(addr[j], int(mask[j]), int(size[j]), MEM).sectors
        assert got[j] == list(want)
    rows = table[np.arange(n) * request_table.NSP + GLOBAL]
    assert (rows[:, request_table.COL["requests"]] == 1).all()
    assert rows[:, request_table.COL["cost"]].tolist() == [len(g) for g in got]
    assert rows[:, request_table.COL["lanes"]].tolist() == [bin(int(m)).count("1") for m in mask]


def test_requests_spanning_fewer_than_64_sectors_give_the_reference_sectors():
    rng = np.random.default_rng(1)
    n = 300
    size = rng.choice([1, 2, 4, 8, 16], size=n).astype(np.int64)
    base = rng.integers(0, 1 << 30, size=(n, 1)) * 8
    addr = (base + rng.integers(0, 2048, size=(n, 32)) // size[:, None] * size[:, None]).astype(np.int64)
    mask = rng.integers(0, 1 << 32, size=n).astype(np.uint32)
    mask[:3] = (1, 1 << 31, 0xFFFFFFFF)
    lanes = np.arange(32)
    addr[-2] = np.where(lanes == 5, 32 * 63, 0) + (1 << 20)     # sectors 0 and 63: within
    addr[-1] = np.where(lanes == 5, 32 * 64, 0) + (1 << 20)     # sectors 0 and 64: beyond
    size[-2:], mask[-2:] = 4, 0xFFFFFFFF
    got, _, _, table = _run(addr, mask, size, np.zeros(n), np.full(n, GLOBAL))
    for j in range(n):
        want = coalescer.global_request_reference(addr[j], int(mask[j]), int(size[j]), MEM).sectors
        assert got[j] == list(want)
    assert len(got[-2]) == len(got[-1]) == 2
    rows = table[np.arange(n) * request_table.NSP + GLOBAL]
    assert rows[:, request_table.COL["cost"]].tolist() == [len(g) for g in got]


def test_half_warps_on_two_rows_give_the_reference_sectors():
    # a block 16 threads wide: each half-warp on its own row, the rows far apart or near
    t = np.arange(32)
    base = 1 << 24
    rows = [base + (t % 16) * 4 + (t // 16) * 2048,          # half 1 64 sectors above half 0
            base + (t % 16) * 4 + (1 - t // 16) * 8192,      # half 1 below half 0
            base + (t % 16) * 8 + (t // 16) * 40,            # the halves overlap, within 64 sectors
            base + (t % 16) * 160 + (t // 16) * 32,          # overlapping, over 64 sectors together
            base + t * 4]                                     # one row
    addr = np.array(rows, dtype=np.int64)
    mask = np.array([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF0000], dtype=np.uint32)
    size = np.full(len(rows), 4, dtype=np.int64)
    got, _, _, _ = _run(addr, mask, size, np.zeros(len(rows)), np.full(len(rows), GLOBAL))
    for j in range(len(rows)):
        want = coalescer.global_request_reference(addr[j], int(mask[j]), int(size[j]), MEM).sectors
        assert got[j] == list(want)
    assert [len(g) for g in got[:2]] == [4, 4]


def test_local_offsets_are_interleaved_per_word_across_the_warp():
    t = np.arange(32, dtype=np.int64)
    addr = np.stack([np.full(32, 8), t * 16]).astype(np.int64)
    size = np.array([4, 16], dtype=np.int64)
    got, _, _, _ = _run(addr, np.full(2, 0xFFFFFFFF, dtype=np.uint32), size, np.zeros(2), np.full(2, LOCAL),
                        block=[0, 0])
    for j in range(2):
        a, act, unit = coalescer.interleave_local(addr[j:j + 1], np.ones((1, 32), bool), int(size[j]),
                                                  np.array([0]), MEM)
        want = coalescer.global_request_reference(a[0], (1 << a.shape[1]) - 1, unit, MEM).sectors
        assert got[j] == list(want)
    assert len(got[0]) == 4                   # one offset by the whole warp: 128 contiguous bytes


def test_atomics_serialise_on_one_address():
    addr = np.zeros((2, 32), dtype=np.int64)
    addr[0, :] = 64                           # 32 lanes on one address
    addr[1, :] = np.arange(32) * 4            # all distinct
    full = np.full(2, 0xFFFFFFFF, dtype=np.uint32)
    _, cycles, latency, _ = _run(addr, full, np.full(2, 4), np.full(2, 2), np.full(2, GLOBAL))
    assert bank_arbiter.same_address_multiplicity(addr, full).tolist() == [32, 1]
    assert cycles.tolist() == [31 * MEM.cycles_per_atomic_serialization, 0] == latency.tolist()


def test_texture_headers_and_other_spaces_are_left_out():
    addr = np.zeros((2, 32), dtype=np.int64)
    full = np.full(2, 0xFFFFFFFF, dtype=np.uint32)
    got, _, _, table = _run(addr, full, np.full(2, 4), np.zeros(2), [SPACE_CODES["shared"], GLOBAL], skip=1)
    assert got == [[], []] and not table[:, 0].any()


def test_only_the_sectors_rule_is_native():
    assert applies(MEM) and not applies(get_preset("sm_20").mem) and not applies(get_preset("sm_13").mem)
