"""Test helper: compile a CUDA C source and launch one kernel on numpy data."""
from __future__ import annotations

import gpuemu


def launch(src: str, kernel: str, grid, block, *args, shared_mem: int = 0, **options):
    """Compile src, launch `kernel`; numpy arrays in args are updated in place."""
    mod = gpuemu.RawModule(code=src)
    return mod.get_function(kernel)(grid, block, tuple(args), shared_mem=shared_mem, **options)
