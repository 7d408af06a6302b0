"""The ordered step (gpuemu/machine/ordered_charge.py): prepared batches are
charged in block order, once each, whichever thread finishes them."""
from __future__ import annotations

import random
import threading

from gpuemu.errors import KernelError
from gpuemu.machine.block_workers import _InOrder
from gpuemu.machine.ordered_charge import OrderedCharge
from gpuemu.machine.worker_copy import Worker


class _Recorder:
    """A launch's ordered step as OrderedCharge sees it: charges recorded in order."""

    def __init__(self):
        self.charged, self.findings = [], []

    def _charge_prepared(self, chunk):
        self.charged.append(chunk)


def test_batches_finished_out_of_order_on_several_threads_are_charged_in_order_once():
    run = _Recorder()
    n = 400
    source = _InOrder(range(n))
    charge = OrderedCharge(run, source)

    def worker(seed):
        rnd = random.Random(seed)
        while (got := source.take()) is not None:
            seq, _ = got
            if rnd.random() < 0.3:
                threading.Event().wait(0.0005)       # finish late: later batches overtake
            charge.put(seq, 1, ([f"chunk {seq}a", f"chunk {seq}b"], [], None))
            charge.ready()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    while charge.wait(source):
        charge.ready()
    assert run.charged == [f"chunk {i}{h}" for i in range(n) for h in "ab"]
    assert charge.blocks == n and charge.error is None


def test_the_ordered_step_stops_at_the_first_failed_batch():
    run = _Recorder()
    source = _InOrder(range(5))
    charge = OrderedCharge(run, source)
    boom = KernelError("batch 2 faults")
    for seq in (4, 3, 2, 1, 0):                       # all taken, finished in reverse
        source.take()
    for seq in (4, 3, 2, 1, 0):
        charge.put(seq, 1, ([seq], [], boom if seq == 2 else None))
    charge.ready()
    assert run.charged == [0, 1, 2] and charge.error is boom
    assert not charge.wait(source) and source.take() is None


def test_a_prepared_batch_of_the_range_next_in_order_is_applied_at_once_after_the_range_s_held_batches():
    run = _Recorder()
    source = _InOrder(range(3))
    charge = OrderedCharge(run, source)
    wk = Worker.__new__(Worker)
    wk.chunks, wk.held, wk.spare = ["held 0a"], [("buffer 0a", None)], []
    assert not charge.now(1, wk, "prepared 1")                 # range 1 waits for range 0
    with charge._lock:                                          # another thread charging
        assert not charge.now(0, wk, "prepared 2")
    assert run.charged == []
    assert charge.now(0, wk, "prepared 3")
    assert run.charged == ["held 0a", "prepared 3"]
    assert wk.chunks == [] and wk.held == [] and wk.spare == [("buffer 0a", None)]
    assert charge.seq == 0                        # the range itself is charged when put (its findings)
