"""Python's cyclic garbage collector paused while a kernel's LLVM IR is built.

llvmlite makes several Python objects per IR instruction, all alive until
the module is printed: a long kernel's code generation makes hundreds of
thousands, and the collector walks them again at every full collection it
triggers (1000 statements 'a[j] += 1;': 3.4 s of code generation and IR
text, 1.0 s of it the collector's). Building the IR makes little garbage;
what there is goes at the next collection after the pause.
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_holders = 0          # threads inside paused()
_was_enabled = False  # whether the collector ran before the first of them


@contextlib.contextmanager
def paused():
    """The collector off for the block (threads may nest and overlap); on
    again after the last one leaves, only when it was on before the first."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
