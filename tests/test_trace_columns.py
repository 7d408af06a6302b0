"""trace_columns: a run's records as a batch in kept columns give the
AccessBatch and native-pass arrays that the plain conversion gives."""
import numpy as np

from gpuemu.jit import abi
from gpuemu.memory import request_table
from gpuemu.memory.trace import AccessBatch
from gpuemu.memory.trace_columns import TraceColumns


def _records(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    r = np.zeros(n, dtype=abi.TRACE_DTYPE)
    for name, hi in (("instr", 5), ("space", 8), ("block", 100), ("warp", 32), ("sm", 132)):
        r[name] = rng.integers(0, hi, n)
    r["mask"] = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    r["addr"] = rng.integers(0, 1 << 40, (n, abi.WARP))
    return r


def _tables():
    return (np.arange(5, dtype=np.int8) % 4, np.array([4, 8, 4, 16, 1], dtype=np.int64),
            np.array([0, 0, 1, 0, 0], dtype=np.int8))


def _plain(r: np.ndarray) -> AccessBatch:
    """The batch as plain numpy copies of the records' columns (the reference)."""
    c = np.ascontiguousarray
    return AccessBatch(instr=c(r["instr"]), mask=c(r["mask"]), addr=r["addr"],
                       space=r["space"].astype(np.int8), sm=c(r["sm"]), block=c(r["block"]),
                       warp=c(r["warp"]))


def _same(got, want, tables) -> None:
    for f in ("instr", "mask", "addr", "space", "sm", "block", "warp"):
        a, b = getattr(got, f), getattr(want, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f
    ref = request_table.batch_arrays(want, *tables)
    arrays = got.arrays
    assert len(arrays) == len(ref)
    for a, b in zip(arrays, ref):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert arrays.args[0] == ref.args[0] and arrays.args[-1] == ref.args[-1]
    for a, p in zip(arrays, arrays.args[1:-1]):     # each address is its array's
        assert p == a.ctypes.data


def test_a_batch_in_kept_columns_is_the_plain_one():
    tables = _tables()
    r = _records(100, 1)
    _same(TraceColumns(128).batch(r, *tables), _plain(r), tables)


def test_the_next_batch_overwrites_the_columns_and_a_larger_one_grows_them():
    tables = _tables()
    cols = TraceColumns(64)
    for n, seed in ((50, 2), (64, 3), (200, 4), (7, 5)):
        buf = _records(256, seed)
        r = buf[:n]                     # a prefix of the trace buffer, as drain hands it
        _same(cols.batch(r, *tables), _plain(r), tables)
    assert cols.capacity >= 200


def test_records_picked_out_of_the_buffer_are_columns_too():
    tables = _tables()
    buf = _records(300, 6)
    r = buf[buf["space"] != abi.SYNC_SPACE]    # as drain leaves out warp-sync records
    _same(TraceColumns(512).batch(r, *tables), _plain(r), tables)


def test_other_tables_on_the_next_batch_are_the_ones_it_reads():
    cols = TraceColumns(64)
    r = _records(40, 7)
    first, other = _tables(), tuple(t.copy() for t in _tables())
    cols.batch(r, *first)
    _same(cols.batch(r, *other), _plain(r), other)
    assert cols.batch(r, *other).arrays[7] is other[0]


def test_filling_counts_the_requests_of_each_space():
    cols = TraceColumns(64)
    r = _records(150, 8)
    cols.fill(r)
    assert cols.counts.tolist() == np.bincount(r["space"], minlength=request_table.NSP).tolist()
    cols.fill(r[:3])                    # counted afresh per batch
    assert cols.counts.sum() == 3
