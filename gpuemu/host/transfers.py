"""Host<->device copies on the timeline: which copies are pinned, and the
explicit copy calls (cudaMemcpy / cudaMemcpyAsync in CuPy's words).

A copy is pinned when its host side is (gpuemu.alloc_pinned); a
DeviceArray-to-DeviceArray copy or a copy of host data that never left the
host (a mapped or managed array) crosses no link and is not charged.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .buffers import is_pinned
from .streams import Stream, timeline


def record_copy(nbytes: int, direction: str, host, stream: Optional[Stream] = None) -> None:
    """Charge one copy of `nbytes` between the device and `host` (None: a
    fresh pageable numpy array)."""
    timeline().copy(int(nbytes), direction, is_pinned(host), stream)


def memcpy_htod(dst, src: np.ndarray, stream: Optional[Stream] = None) -> None:
    """Copy host array `src` into device array `dst` (async on `stream` when
    `src` is pinned, as cudaMemcpyAsync)."""
    _check_sides("memcpy_htod", dst, src, device_first=True)
    dst.set(src, stream=stream)


def memcpy_dtoh(dst: np.ndarray, src, stream: Optional[Stream] = None) -> np.ndarray:
    """Copy device array `src` into host array `dst`."""
    _check_sides("memcpy_dtoh", dst, src, device_first=False)
    return src.get(stream=stream, out=dst)


def _check_sides(what: str, dst, src, device_first: bool) -> None:
    """A TypeError naming the side of a copy that is not the kind it must be
    (memcpy_htod(dst device, src host), memcpy_dtoh(dst host, src device))."""
    from gpuemu.device_array import DeviceArray
    dev, host = (dst, src) if device_first else (src, dst)
    dev_name, host_name = ("dst", "src") if device_first else ("src", "dst")
    if not isinstance(dev, DeviceArray):
        swapped = " (the arguments are swapped?)" if isinstance(host, DeviceArray) else ""
        raise TypeError(f"{what}: {dev_name} must be a device array (gpuemu.DeviceArray), "
                        f"got {type(dev).__name__}{swapped}")
    if not isinstance(host, np.ndarray):
        raise TypeError(f"{what}: {host_name} must be a host numpy array, got {type(host).__name__}")
