"""native_cycle_sums: a batch's cycles per SM, per table row and per warp run."""
import numpy as np
import pytest

from gpuemu.memory import request_table
from gpuemu.memory.native_cycle_sums import cycle_sums
from gpuemu.memory.trace import AccessBatch


def test_cycles_add_up_per_sm_row_and_warp_run():
    i32 = lambda v: np.array(v, dtype=np.int32)  # noqa: E731
    batch = AccessBatch(instr=i32([0, 0, 1, 0]), mask=np.zeros(4, np.uint32), addr=np.zeros((4, 32), np.int64),
                        space=np.array([0, 0, 1, 0], np.int8), sm=i32([0, 3, 1, 0]),   # SM 3 of 3 is SM 0
                        block=i32([0, 0, 1, 0]), warp=i32([2, 2, 0, 2]))
    arrays = request_table.batch_arrays(batch, np.zeros(2, np.int8), np.full(2, 4, np.int64), np.zeros(2, np.int8))
    sm_cycles = np.zeros(3, dtype=np.int64)
    table = request_table.new_table(2)
    keys, sums = cycle_sums(arrays, np.array([5, 7, 11, 13], dtype=np.int64), sm_cycles, table)
    assert sm_cycles.tolist() == [25, 11, 0]
    seen, cyc, row1 = request_table.COL["seen"], request_table.COL["cycles"], request_table.NSP + 1
    assert (table[0, seen], table[0, cyc], table[row1, seen], table[row1, cyc]) == (3, 25, 1, 11)
    assert keys.tolist() == [2, 4096, 2] and sums.tolist() == [12, 11, 13]


@pytest.mark.parametrize("seed", range(3))
def test_a_launchs_cycles_are_its_busiest_sms_issue_and_memory_cycles(seed):
    # MemorySystem.finish: cycles = max over SMs of issue + memory cycles (one native call)
    from gpuemu.memory.memory_system import MemorySystem
    from gpuemu.stats import Stats
    rng = np.random.default_rng(seed)
    ms = MemorySystem("sm_90")
    ms.sm_cycles[:] = rng.integers(0, 1 << 40, ms.sm_cycles.size)
    issue = rng.integers(0, 1 << 40, ms.sm_cycles.size)
    st = Stats()
    ms.finish(st, issue)
    assert st.totals["cycles"] == int((ms.sm_cycles + issue).max())
    short = Stats()                       # fewer issue entries than SMs: the rest add nothing
    ms.finish(short, issue[:5])
    assert short.totals["cycles"] == max(int((ms.sm_cycles[:5] + issue[:5]).max()), int(ms.sm_cycles[5:].max()))


def test_an_sms_issue_cycles_are_its_warp_instructions_over_its_schedulers():
    # MemorySystem.finish(stats, issue, schedulers): max over SMs of memory cycles + issue // schedulers
    from gpuemu.memory.memory_system import MemorySystem
    from gpuemu.stats import Stats
    ms = MemorySystem("sm_90")
    ms.sm_cycles[:] = 0
    ms.sm_cycles[2] = 10
    issue = np.zeros(ms.sm_cycles.size, dtype=np.int64)
    issue[1], issue[2] = 47, 3                # SM 1: 47 // 4 = 11; SM 2: 10 + 0
    st = Stats()
    ms.finish(st, issue, 4)
    assert st.totals["cycles"] == 11
    short = Stats()                           # the numpy way (fewer entries than SMs) rounds down alike
    ms.finish(short, issue[:3], 4)
    assert short.totals["cycles"] == 11
