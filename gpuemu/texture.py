"""Texture objects from Python, and the numpy reference of texture fetching.

    tex = gpuemu.Texture(a2d, address_mode="clamp", filter_mode="linear",
                         normalized_coords=False, border_value=0.0)
    k(grid, block, (out, tex, ...))        # a cudaTextureObject_t parameter

`Texture(data)` with a 1D or 2D float32 array copies it into device memory
(2D data in the tiled layout of isa/texture_fetch.py, as cudaMallocArray +
cudaMemcpy2DToArray store a CUDA array) and writes the descriptor the
kernel's tex1D / tex2D read. `Texture(device_array, linear=True)` binds a 1D
device array for tex1Dfetch without a copy (cudaResourceTypeLinear).

`reference_fetch_1d` / `reference_fetch_2d` are the plain numpy statement
of the CUDA C Programming Guide's texture-fetching rules (appendix "Texture
Fetching"), which the kernel-side prelude is tested against.
"""
from __future__ import annotations

import numpy as np

from isa.texture_fetch import (ADDRESS_MODES, DESCRIPTOR_BYTES, FILTER_MODES, SECTOR_H, SECTOR_W,
                               TILE_H, TILE_W)

from .device_array import DeviceArray, asarray
from .device_memory import device_memory


def _modes(address_mode) -> tuple:
    modes = (address_mode, address_mode) if isinstance(address_mode, str) else tuple(address_mode)
    if len(modes) == 1:
        modes = modes * 2
    for m in modes:
        if m not in ADDRESS_MODES:
            raise ValueError(f"address mode must be one of {', '.join(ADDRESS_MODES)}, got {m!r}")
    return modes[:2]


def tile_2d(a: np.ndarray) -> tuple:
    """(flat tiled texels, tiles per row): texel (x, y) of `a` (rows = y) at
    the index the prelude's __gpuemu_texel computes."""
    h, w = a.shape
    tx, ty = -(-w // TILE_W), -(-h // TILE_H)
    pad = np.zeros((ty * TILE_H, tx * TILE_W), dtype=np.float32)
    pad[:h, :w] = a
    # (ty, TILE_H, tx, TILE_W) -> (ty, tx, sy, sx, yy, xx): sectors of SECTOR_H x SECTOR_W
    t = pad.reshape(ty, TILE_H // SECTOR_H, SECTOR_H, tx, TILE_W // SECTOR_W, SECTOR_W)
    t = t.transpose(0, 3, 1, 4, 2, 5)
    return np.ascontiguousarray(t).reshape(-1), tx


class Texture:
    """A texture object (cudaCreateTextureObject) over float32 texels."""

    def __init__(self, data, address_mode="clamp", filter_mode="point",
                 normalized_coords: bool = False, border_value: float = 0.0, linear: bool = False):
        ax, ay = _modes(address_mode)
        if filter_mode not in FILTER_MODES:
            raise ValueError(f"filter mode must be 'point' or 'linear', got {filter_mode!r}")
        if not normalized_coords and ("wrap" in (ax, ay) or "mirror" in (ax, ay)):
            raise ValueError("wrap and mirror address modes need normalized_coords=True "
                             "(CUDA C Programming Guide, Texture Fetching)")
        if isinstance(data, DeviceArray) and linear:
            if data.dtype != np.float32 or data.ndim != 1:
                raise ValueError("a linear texture binds a 1D float32 device array")
            self.array, w, h, tiles, tiled = data, data.size, 1, 0, 0
        else:
            a = np.asarray(data.get() if isinstance(data, DeviceArray) else data)
            if a.dtype != np.float32 or a.ndim not in (1, 2) or a.size == 0:
                raise ValueError(f"texture data must be a non-empty 1D or 2D float32 array, "
                                 f"got {a.dtype} of shape {a.shape}")
            if a.ndim == 1:
                self.array, w, h, tiles, tiled = asarray(a), a.size, 1, 0, 0
            else:
                flat, tiles = tile_2d(a)
                self.array, w, h, tiled = asarray(flat), a.shape[1], a.shape[0], 1
        self.shape = (h, w) if h > 1 or tiled else (w,)
        self.address_mode, self.filter_mode = (ax, ay), filter_mode
        self.normalized_coords, self.border_value = bool(normalized_coords), float(border_value)
        desc = np.zeros(DESCRIPTOR_BYTES, dtype=np.uint8)
        desc[0:8] = np.frombuffer(np.uint64(self.array.ptr).tobytes(), np.uint8)
        ints = np.array([w, h, tiles, ADDRESS_MODES[ax], ADDRESS_MODES[ay], FILTER_MODES[filter_mode],
                         int(normalized_coords)], dtype=np.int32)
        desc[8:36] = np.frombuffer(ints.tobytes(), np.uint8)
        desc[36:40] = np.frombuffer(np.float32(border_value).tobytes(), np.uint8)
        desc[40:44] = np.frombuffer(np.int32(tiled).tobytes(), np.uint8)
        self._desc = device_memory().allocate(DESCRIPTOR_BYTES, "global", name="texture descriptor")
        self._desc.host[:] = desc

    @property
    def handle(self) -> np.uint64:
        """The cudaTextureObject_t value a kernel receives."""
        return np.uint64(self._desc.pointer)


# ------------------------------------------------------------ numpy reference

def _address(i: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Texel indices after the address mode; -1 stands for the border."""
    i = np.asarray(i, dtype=np.int64)
    if mode == "wrap":
        return np.mod(i, n)
    if mode == "mirror":
        j = np.mod(i, 2 * n)
        return np.where(j >= n, 2 * n - 1 - j, j)
    if mode == "border":
        return np.where((i < 0) | (i >= n), -1, i)
    return np.clip(i, 0, n - 1)


def _frac8(f: np.ndarray) -> np.ndarray:
    """alpha in 9-bit fixed point with 8 fractional bits (Guide, Texture Fetching)."""
    return np.rint(np.float32(f) * np.float32(256)) / np.float32(256)


def _texel(a2: np.ndarray, i, j, border: float) -> np.ndarray:
    ok = (i >= 0) & (j >= 0)
    return np.where(ok, a2[np.where(ok, j, 0), np.where(ok, i, 0)], np.float32(border)).astype(np.float32)


def reference_fetch_2d(a: np.ndarray, x, y, address_mode="clamp", filter_mode="point",
                       normalized_coords=False, border_value=0.0) -> np.ndarray:
    """tex2D(a, x, y) by the Guide's rules (a[y, x] is texel (x, y))."""
    ax, ay = _modes(address_mode)
    h, w = a.shape
    x = np.asarray(x, np.float32)
    y = np.asarray(y, np.float32)
    if normalized_coords:
        x, y = x * np.float32(w), y * np.float32(h)
    if filter_mode == "point":
        return _texel(a, _address(np.floor(x), w, ax), _address(np.floor(y), h, ay), border_value)
    xb, yb = x - np.float32(0.5), y - np.float32(0.5)
    fx, fy = np.floor(xb), np.floor(yb)
    al, be = _frac8(xb - fx), _frac8(yb - fy)
    i0, i1 = _address(fx, w, ax), _address(fx + 1, w, ax)
    j0, j1 = _address(fy, h, ay), _address(fy + 1, h, ay)
    one = np.float32(1)
    return ((one - al) * (one - be) * _texel(a, i0, j0, border_value) + al * (one - be) * _texel(a, i1, j0, border_value)
            + (one - al) * be * _texel(a, i0, j1, border_value) + al * be * _texel(a, i1, j1, border_value))


def reference_fetch_1d(a: np.ndarray, x, address_mode="clamp", filter_mode="point",
                       normalized_coords=False, border_value=0.0) -> np.ndarray:
    """tex1D(a, x) by the Guide's rules."""
    return reference_fetch_2d(np.asarray(a)[None, :], x, np.full(np.shape(x), 0.5, np.float32),
                              (_modes(address_mode)[0], "clamp"), filter_mode, normalized_coords,
                              border_value) if filter_mode == "point" else \
        _linear_1d(np.asarray(a), x, _modes(address_mode)[0], normalized_coords, border_value)


def _linear_1d(a, x, mode, normalized, border):
    w = a.size
    x = np.asarray(x, np.float32)
    if normalized:
        x = x * np.float32(w)
    xb = x - np.float32(0.5)
    fx = np.floor(xb)
    al = _frac8(xb - fx)
    a2 = a[None, :]
    zero = np.zeros(np.shape(x), np.int64)
    t0 = _texel(a2, _address(fx, w, mode), zero, border)
    t1 = _texel(a2, _address(fx + 1, w, mode), zero, border)
    return (np.float32(1) - al) * t0 + al * t1


def reference_fetch_linear(a: np.ndarray, i) -> np.ndarray:
    """tex1Dfetch: a[i], 0 outside."""
    i = np.asarray(i, np.int64)
    ok = (i >= 0) & (i < a.size)
    return np.where(ok, a[np.where(ok, i, 0)], np.float32(0)).astype(np.float32)
