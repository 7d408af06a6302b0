"""Forks made while another thread holds a lock of gpuemu's: the child must find it free."""
from __future__ import annotations

import os
import threading
import time


def child_finds_free(lock) -> bool:
    """Fork while another thread holds `lock` (a compile or request in
    progress); whether the child can take it (a lock copied held into the
    child is held for ever there: its next compile or request hangs)."""
    held, holder = threading.Event(), None

    def hold():
        with lock:
            held.set()
            time.sleep(0.2)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    pid = os.fork()
    if pid == 0:                                          # the child: exit status 0 when free
        os._exit(0 if lock.acquire(timeout=2) else 1)
    holder.join()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
