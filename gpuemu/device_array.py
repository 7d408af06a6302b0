"""DeviceArray: an n-d array living in emulated global memory (CuPy-shaped)."""
from __future__ import annotations

import operator

import numpy as np

from .check.shadow_memory import mark_elements_written, mark_fresh, mark_written
from .device_memory import Allocation, device_memory


class DeviceArray:
    """Shape and dtype over one allocation. `.get()` copies to numpy,
    `.set(a)` and slice assignment write into device memory."""

    def __init__(self, alloc: Allocation, shape: tuple, dtype, offset: int = 0):
        self._alloc = alloc
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self._offset = offset

    # ---- properties (as numpy/CuPy)
    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """Bytes of the elements."""
        return self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def ptr(self) -> int:
        """The fat pointer a kernel receives for this array."""
        return self._alloc.pointer + self._offset

    @property
    def device_address(self) -> int:
        """The array's first byte in the emulated global address space (no tag bits)."""
        return self._alloc.address + self._offset

    def _view(self) -> np.ndarray:
        raw = self._alloc.host[self._offset:self._offset + self.nbytes]
        return raw.view(self.dtype).reshape(self.shape)

    # ---- data movement
    def get(self, stream=None, out=None) -> np.ndarray:
        """A numpy copy of the device data (into `out`, e.g. a pinned array,
        if given); charged as a device-to-host copy (gpuemu/host/)."""
        from .host.transfers import record_copy
        if out is not None:
            self._check_out(out)
        record_copy(self.nbytes, "d2h", out, stream)
        if out is not None:
            out[...] = self._view().reshape(out.shape)
            return out
        return self._view().copy()

    def _check_out(self, out) -> None:
        """`out` of get(): a numpy array of this array's dtype and size (as CuPy's
        get: TypeError for another type or dtype, ValueError for another size)."""
        if not isinstance(out, np.ndarray):
            raise TypeError(f"get(out=...) takes a numpy array (e.g. gpuemu.alloc_pinned), "
                            f"got {type(out).__name__}")
        if out.dtype != self.dtype:
            raise TypeError(f"{self.dtype} array cannot be copied into a {out.dtype} out array")
        if out.size != self.size:
            raise ValueError(f"get(out=...): out has {out.size} elements, the device array {self.size}")

    def set(self, arr, stream=None) -> None:
        """Copy a numpy array (same dtype and size) into device memory; charged
        as a host-to-device copy, pinned if `arr` is (gpuemu.alloc_pinned)."""
        from .host.transfers import record_copy
        a = self._source(arr)
        record_copy(self.nbytes, "h2d", arr, stream)
        self._view()[...] = a.reshape(self.shape)
        mark_written(self._alloc, self._offset, self.nbytes)

    def _source(self, arr) -> np.ndarray:
        """`arr` of set(): a numpy array of this array's dtype and size (as CuPy's
        set: TypeError for another type or dtype, no silent conversion)."""
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"set takes a numpy array, got {type(arr).__name__}")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array "
                            f"(convert it first: arr.astype(np.{self.dtype}))")
        if arr.size != self.size:
            raise ValueError(f"set: array of {arr.size} elements into a device array of {self.size}")
        return arr

    def __setitem__(self, key, value) -> None:
        v = value.get() if isinstance(value, DeviceArray) else value
        self._view()[key] = v
        if getattr(self._alloc, "shadow", None) is not None:
            mark_elements_written(self._alloc, self._offset, self.shape, self.dtype.itemsize, key)

    def __getitem__(self, key):
        return self._view()[key].copy()

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a.astype(dtype) if dtype is not None else a

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, address={self.device_address:#x})"


def _shape(shape) -> tuple:
    """`shape` as numpy takes it: an int or a sequence of ints, none negative
    (numpy's errors: TypeError for a non-integer, ValueError for a negative dimension)."""
    try:
        dims = (operator.index(shape),)
    except TypeError:
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise TypeError(f"expected a sequence of integers or a single integer, "
                            f"got {shape!r}") from None
        dims = tuple(operator.index(d) for d in shape)    # "'float' object cannot be interpreted ..."
    if any(d < 0 for d in dims):
        raise ValueError("negative dimensions are not allowed")
    return dims


# why a device array cannot hold a dtype of this numpy kind (what it holds: the
# integers, bool, float16/32/64, complex64/128 and structured dtypes, as CuPy
# arrays do; a kernel reads complex numbers as float2/double2 or through a
# struct, half floats as unsigned short bits or bytes)
_NO_DEVICE_FORM = {
    "O": "a device array holds numbers, not Python objects",
    "U": "a device array holds numbers, not text", "S": "a device array holds numbers, not text",
    "M": "a device array holds numbers, not dates", "m": "a device array holds numbers, not dates",
}


def _device_dtype(dtype) -> np.dtype:
    """`dtype` as a device array's: one a kernel can read (cupy's word for
    the others: 'Unsupported dtype'), else a ValueError naming it and why."""
    dtype = np.dtype(dtype)
    why = "a device array holds numbers, not Python objects" if dtype.hasobject else \
        _NO_DEVICE_FORM.get(dtype.kind)
    if why is None and dtype.kind in "fc" and dtype.itemsize > (8 if dtype.kind == "f" else 16):
        why = "CUDA C has no long double on the device"
    if why is not None:
        raise ValueError(f"Unsupported dtype {dtype}: {why}")
    return dtype


def _new(shape, dtype) -> DeviceArray:
    shape = _shape(shape)
    dtype = _device_dtype(dtype)
    n = int(np.prod([int(d) for d in shape], dtype=object)) * dtype.itemsize
    return DeviceArray(device_memory().allocate(n), shape, dtype)


def _like(a, what: str):
    """`a` of empty_like / zeros_like: an array (device or numpy) or what numpy
    reads as one (a list, a number); TypeError for anything else."""
    if isinstance(a, (DeviceArray, np.ndarray)):
        return a
    if isinstance(a, (list, tuple, np.generic, int, float, bool)):
        return _host_array(a, None, what)
    raise TypeError(f"{what} takes an array (a DeviceArray, a numpy array or a list of numbers), "
                    f"got {type(a).__name__}")


def _host_array(a, dtype, what: str) -> np.ndarray:
    """np.asarray(a, dtype), a ValueError in gpuemu's words where numpy cannot read
    it as one rectangular array (a ragged list)."""
    try:
        return np.asarray(a, dtype=dtype)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{what}: {a!r:.60} is not a rectangular array of numbers "
                         f"(numpy: {str(e).split('.')[0]})") from None


def empty(shape, dtype=np.float64) -> DeviceArray:
    """Uninitialised (here: zeroed) device array, as cupy.empty; initcheck
    reports kernel reads of bytes nothing wrote (gpuemu/check/shadow_memory.py)."""
    return mark_fresh(_new(shape, dtype))


def zeros(shape, dtype=np.float64) -> DeviceArray:
    """A zero-filled device array, as cupy.zeros."""
    return _new(shape, dtype)


def asarray(a, dtype=None) -> DeviceArray:
    """A device copy of a numpy array (a DeviceArray is returned as is)."""
    if isinstance(a, DeviceArray) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    arr = a.get() if isinstance(a, DeviceArray) else a
    arr = _host_array(arr, dtype, "asarray")
    _device_dtype(arr.dtype)
    if not arr.dtype.isnative:           # the device's bytes are little-endian, as CuPy converts
        arr = arr.astype(arr.dtype.newbyteorder("="))
    d = _new(arr.shape, arr.dtype)
    d.set(a if isinstance(a, np.ndarray) and a.dtype == arr.dtype else arr)
    return d


def empty_like(a, dtype=None) -> DeviceArray:
    """A device array of a's shape and dtype, uninitialised (zeroed here), as
    cupy.empty_like; initcheck reports reads of bytes nothing wrote."""
    a = _like(a, "empty_like")
    return mark_fresh(_new(a.shape, dtype or a.dtype))


def zeros_like(a, dtype=None) -> DeviceArray:
    """A zero-filled device array of a's shape and dtype, as cupy.zeros_like."""
    a = _like(a, "zeros_like")
    return _new(a.shape, dtype or a.dtype)
