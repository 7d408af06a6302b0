"""gpuemu: a SIMT GPU emulator. Kernels in a subset of CUDA C, launched on
numpy data in CuPy's RawModule/RawKernel shape, with counters and bug findings."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import CompileError, Finding, KernelError, LaunchError  # noqa: E402
from .device_array import (DeviceArray, asarray, empty, empty_like, zeros,  # noqa: E402
                           zeros_like)
from .api import Launch, RawKernel, RawModule  # noqa: E402
from .host.buffers import alloc_managed, alloc_mapped, alloc_pinned  # noqa: E402
from .host.streams import Event, Stream, elapsed_time, timeline  # noqa: E402
from .host.transfers import memcpy_dtoh, memcpy_htod  # noqa: E402
from .texture import Texture  # noqa: E402

__all__ = ["RawModule", "RawKernel", "Launch", "DeviceArray", "asarray", "empty", "zeros",
           "empty_like", "zeros_like", "CompileError", "LaunchError", "KernelError", "Finding",
           "__version__", "alloc_pinned", "alloc_mapped", "alloc_managed", "Stream", "Event",
           "elapsed_time", "timeline", "memcpy_htod", "memcpy_dtoh", "Texture"]
