"""A block worker's copy of a launch (gpuemu/machine/worker_copy.py): what it
keeps between launches."""
from __future__ import annotations

import numpy as np

from gpuemu.jit import abi
from gpuemu.machine.worker_copy import NATIVES_KEPT, Worker


def test_a_worker_keeps_native_batches_of_its_spare_buffers_after_the_launch():
    # at the end the buffers go (back to record_pool), their NativeBatches stay for the next launch
    class Run:                                    # a launch's run, as idle() leaves it
        trace, ctx = None, np.zeros(abi.CTX_FIELDS, dtype=np.int64)

    class Native:                                 # a NativeBatch: kept ones stay bound to the run's memory system
        served = True

        def let_go(self):
            self.served = False
    wk = Worker.__new__(Worker)
    wk.run, wk.chunks, wk.held, wk.native, wk.natives, wk.spare = Run(), [], [], None, [], []
    pairs = [(np.empty(8), Native()) for _ in range(NATIVES_KEPT + 3)]
    wk.release(pairs)                             # its batches charged
    assert wk.spare == pairs
    wk.idle()
    assert wk.spare == [] and len(wk.natives) == NATIVES_KEPT
    assert {id(nb) for nb in wk.natives} <= {id(nb) for _, nb in pairs}
    assert all(nb.served for nb in wk.natives)     # (launch_plan.keep_memory_system lets go where it drops it)
