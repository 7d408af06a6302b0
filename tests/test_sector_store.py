"""sector_store: the coalescer's sector array, kept from batch to batch,
counted by the pages its batches wrote (not by its bound)."""
import numpy as np

from gpuemu.jit.engine import address
from gpuemu.memory import native_batch
from gpuemu.memory.memory_system import MemorySystem
from gpuemu.memory.native_batch import NativeBatch
from gpuemu.memory.sector_store import PAGE, SectorStore
from test_native_batch import _no_constant, _records
from test_request_table import _instrs, random_batch


def test_a_store_holds_at_least_its_bound_and_keeps_its_array_for_smaller_ones():
    st = SectorStore()
    a = st.for_batch(1000)
    assert a.dtype == np.int64 and a.size >= 1000
    assert st.for_batch(10) is a and st.for_batch(1000) is a
    b = st.for_batch(5000)                 # larger: a new array
    assert b.size >= 5000 and b is not a


def test_its_bytes_are_the_pages_up_to_the_most_a_batch_wrote_not_its_bound():
    st = SectorStore()
    st.for_batch(1 << 20)                  # 8 MB of bound
    assert st.nbytes == 0
    st.wrote(1000)                         # 8,000 bytes: two pages of 4 KB
    st.wrote(10)
    assert st.nbytes == -(-8000 // PAGE) * PAGE
    st.for_batch(1 << 21)                  # a new mapping: nothing written to it yet
    assert st.nbytes == 0


def test_the_array_is_writable_and_reads_back():
    a = SectorStore().for_batch(3 * PAGE)
    a[:] = np.arange(a.size)
    assert a[-1] == a.size - 1 and a.flags.writeable


def test_a_native_batch_coalesces_every_batch_into_the_same_store(monkeypatch):
    monkeypatch.setattr(native_batch, "host_memory_in_use", lambda: False)   # (as test_native_batch)
    rng = np.random.default_rng(0)
    instrs = _no_constant(_instrs(rng, 10, narrow_shared=True))
    nb = NativeBatch(MemorySystem("sm_90"), instrs, 512)
    seen = []
    for n in (200, 300, 100):
        r = _records(random_batch(rng, instrs, n))
        assert nb.prepare(r) and nb.cols.counts[native_batch.GLOBAL] + nb.cols.counts[native_batch.LOCAL] > 0
        seen.append(address(nb._sectors.array))
        assert nb.coalesce["sec"] == seen[-1]        # the coalescer writes there
        nb.apply()
        assert nb._sectors.most >= int(nb.start[n]) > 0
    assert seen[0] == seen[1] == seen[2]
