"""The host threads block workers run on, kept between launches.

A launch on N block workers hands N - 1 tasks to threads started once per
process (starting threads per launch is serial work) and waits for them at
its end. A task is handed on through one queue.SimpleQueue that every
thread waits on and finished through a lock the waiting thread holds
until the task's thread lets it go: both C calls, a few microseconds of
the calling thread's time per launch, where concurrent.futures'
ThreadPoolExecutor (a Future with its Condition per task) took about
twice that on our machine, on the Python the GIL serialises before the
workers start and after they end.

A task carries the CPU its submitting thread ran on, and the thread that
takes it runs it off that CPU (thread_placement.py: on a virtual machine
Linux often wakes it there, while another CPU is idle).

The threads are daemons: one waits for a task only between launches,
never inside one (every launch waits for its tasks). A forked child has
none of its parent's threads and starts its own (`forget`).
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Callable, Optional

from . import thread_placement


class Task:
    """A function handed to a thread; `result` waits for it to return."""
    __slots__ = ("fn", "cpu", "error", "ended", "_done")

    def __init__(self, fn: Callable[[], None], cpu: int = -1) -> None:
        self.fn = fn
        self.cpu = cpu                     # the CPU the submitting thread ran on (-1: not known)
        self.error: Optional[BaseException] = None
        self.ended = False                 # set by the thread that runs it, once it returned
        self._done = threading.Lock()
        self._done.acquire()               # let go by that thread just after

    def run(self) -> None:
        try:
            self.fn()
        except BaseException as e:         # handed to the waiting thread
            self.error = e
        finally:
            self.ended = True
            self._done.release()

    def wait(self) -> Optional[BaseException]:
        """Wait until the function returned, also where the waiting thread is
        interrupted meanwhile (a KeyboardInterrupt raised inside the wait: a
        task let run on past its launch's end would write into the user's
        arrays after a later launch returned); the first such exception, for
        the caller to raise once every task it waits for has ended, or None."""
        caught: Optional[BaseException] = None
        while not self.ended:
            try:
                self._done.acquire()
                self._done.release()
            except BaseException as e:     # (an interrupt after the acquire: `ended` is set)
                if caught is None:
                    caught = e
        return caught

    def result(self) -> None:
        """Wait until the function returned; raise what interrupted the wait,
        else what it raised."""
        caught = self.wait()
        if caught is not None:
            raise caught
        if self.error is not None:
            raise self.error


class Threads:
    """Threads that take tasks from one queue, the next idle one the next task."""

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.size = 0

    def at_least(self, n: int) -> "Threads":
        """At least n threads (more are started where fewer run)."""
        if self.size < n:
            with self._lock:
                while self.size < n:
                    self.size += 1
                    threading.Thread(target=_serve, args=(self._inbox,), daemon=True,
                                     name=f"gpuemu-block-worker-{self.size}").start()
        return self

    def submit(self, fn: Callable[[], None]) -> Task:
        """Run fn on the next idle thread, off this thread's CPU; its Task."""
        task = Task(fn, thread_placement.current_cpu())
        self._inbox.put(task)
        return task


def _serve(inbox: queue.SimpleQueue) -> None:
    """A pool thread's loop: the next task, run off its submitter's CPU."""
    off_caller = thread_placement.OffCaller
    while True:
        task = inbox.get()
        with off_caller(task.cpu):
            task.run()


def join(tasks: list) -> None:
    """Wait for every task (an interrupt of the wait raised once all ended),
    then raise what the first that failed raised."""
    caught = None
    for t in tasks:
        got = t.wait()
        caught = caught or got
    if caught is not None:
        raise caught
    for t in tasks:
        t.result()


_threads: Optional[Threads] = None
_lock = threading.Lock()


def threads(n: int) -> Threads:
    """The process's threads, at least n of them."""
    global _threads
    got = _threads
    if got is None:
        with _lock:
            if _threads is None:
                _threads = Threads()
            got = _threads
    return got.at_least(n)


def forget() -> None:
    """A forked child has none of the parent's threads: it starts its own."""
    global _threads, _lock
    _threads, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=forget)
