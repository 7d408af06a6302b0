"""The ordered step of a traced launch on block workers (block_workers.py).

The caches' counts depend on the order requests reach them, so the
workers' prepared trace batches are charged in block order, the order one
worker produces, by whichever thread finds the next one ready; findings
are merged in that order too (`merge_findings`).
"""
from __future__ import annotations

import threading
from typing import Optional

from gpuemu.memory.native_batch import NativeBatch


class OrderedCharge:
    """The ordered step of a traced launch: finished ranges' batches are
    charged to the memory model in range order (NativeBatch.apply, or
    MemorySystem.apply via LaunchRun._charge_prepared), their findings
    merged, by whichever thread finds the next one ready and no other
    thread charging, so the work balances between threads and one
    worker's order is kept; the running range that is next in order has
    its batches applied as its worker prepares them (`now`)."""

    def __init__(self, run, source) -> None:
        self.run, self.source = run, source
        self.seq = 0                  # the next batch to charge
        self.blocks = 0               # blocks charged so far (progress)
        self.error: Optional[BaseException] = None
        self._done: dict = {}
        self._lock = threading.Lock()          # held by the thread charging
        self._mutex = threading.Lock()         # guards _done, seq and _waiting
        self._cond = threading.Condition(self._mutex)   # the calling thread waits on it (wait)
        self._waiting = 0                      # threads waiting (notified only then)

    def fail(self, err: BaseException) -> None:
        """A worker failed outside a batch's run (a batch it took will never
        be put): nothing more is handed out, and the calling thread stops
        waiting and raises `err` (the first error)."""
        with self._mutex:
            if self.error is None:
                self.error = err
            self.source.close()
            if self._waiting:
                self._cond.notify_all()

    def put(self, seq: int, nblocks: int, result: tuple, worker=None,
            buffers: tuple = ()) -> None:
        """A finished batch: (trace chunks, findings, error) of run_batch;
        the trace buffers its chunks read go back to `worker` once charged."""
        with self._mutex:
            self._done[seq] = (nblocks, result, worker, buffers)
            if self._waiting:
                self._cond.notify_all()

    def ready(self) -> None:
        """Charge the batches ready in order, unless another thread is charging
        (it will: a batch put while it holds the lock is seen after it lets go)."""
        while self._lock.acquire(blocking=False):
            try:
                while self.error is None:
                    with self._mutex:
                        got = self._done.pop(self.seq, None)
                    if got is None:
                        break
                    self._charge(*got)
            finally:
                self._lock.release()
            with self._mutex:
                if self.error is not None or self.seq not in self._done:
                    return

    def now(self, seq: int, worker, chunk) -> bool:
        """Apply a prepared batch (`chunk`: a NativeBatch, or MemorySystem.
        prepare's) of range `seq` now, on the worker's thread that wrote and
        prepared it, where that range is the next to charge and no other
        thread is charging (False: nothing done): the range's batches the
        worker holds first, then `chunk`, as one worker charges them, so its
        buffer is free again and its records are read while in this core's
        caches."""
        if self.seq != seq or not self._lock.acquire(blocking=False):
            return False
        try:
            if self.seq != seq or self.error is not None:
                return False
            self._apply(worker.chunks)
            worker.release(worker.held)
            worker.chunks, worker.held = [], []
            self._apply((chunk,))
            return True
        finally:
            self._lock.release()

    def _apply(self, chunks: list) -> None:
        """Prepared batches, the next in order, charged."""
        for c in chunks:
            if type(c) is NativeBatch:
                c.apply()
            else:
                self.run._charge_prepared(c)

    def _charge(self, nblocks: int, result: tuple, worker, buffers: list) -> None:
        chunks, findings, err = result
        try:
            self._apply(chunks)
            merge_findings(self.run, findings)
        except BaseException as e:       # handed to the calling thread
            err = e
        if worker is not None and err is None:
            worker.release(buffers)
        with self._mutex:
            if err is not None:
                self.error = err
                self.source.close()
            else:
                self.blocks += nblocks
            self.seq += 1
            if self._waiting:
                self._cond.notify_all()

    def wait(self, source) -> bool:
        """`source` handed out everything: wait until a batch is ready to charge
        (True) or every batch is charged or one failed (False)."""
        with self._mutex:
            while True:
                if self.error is not None or self.seq >= source.handed:
                    return False
                if self.seq in self._done and not self._lock.locked():
                    return True      # (a thread charging takes it itself)
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1


def merge_findings(run, findings: list) -> None:
    """Barrier divergence is reported once per line, a barrier mismatch once per
    set of barrier lines (as one worker keys them): keep the first in block order."""
    if not findings:
        return
    seen = run.__dict__.setdefault("_merged_divergence", set())
    for f in findings:
        if f.kind == "barrier_divergence":
            key = tuple(f.extra.get("barrier_lines") or ()) or f.line
            if key in seen:
                continue
            seen.add(key)
        run.findings.append(f)
