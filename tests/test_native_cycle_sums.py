"""native_cycle_sums: a batch's cycles per SM, per table row and per warp run."""
import numpy as np

from gpuemu.memory import request_table
from gpuemu.memory.native_cycle_sums import cycle_sums


def test_cycles_add_up_per_sm_row_and_warp_run():
    row = np.array([0, 0, 9, 0], dtype=np.int64)
    cycles = np.array([5, 7, 11, 13], dtype=np.int64)
    sm = np.array([0, 3, 1, 0], dtype=np.int64)             # SM 3 of 3 SMs is SM 0
    sm_cycles = np.zeros(3, dtype=np.int64)
    table = request_table.new_table(2)
    keys, sums = cycle_sums(row, cycles, sm, sm_cycles, np.array([0, 0, 1, 0], dtype=np.int32),
                            np.array([2, 2, 0, 2], dtype=np.int32), table)
    assert sm_cycles.tolist() == [25, 11, 0]
    seen, cyc = request_table.COL["seen"], request_table.COL["cycles"]
    assert (table[0, seen], table[0, cyc], table[9, seen], table[9, cyc]) == (3, 25, 1, 11)
    assert keys.tolist() == [2, 4096, 2] and sums.tolist() == [12, 11, 13]
