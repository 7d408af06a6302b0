"""numpy arrays passed for pointer parameters: one device copy in, copied back after.

RawKernel._pack copies each numpy argument to device memory and _launch_of
copies it back after the launch. Arguments that share memory (one array
passed for two parameters, overlapping views of one buffer) get one device
copy of the bytes they span together, each passed as a pointer at its offset
into it, and the span is copied back once: the kernel sees one memory, as on
a GPU with unified memory (a managed or mapped host buffer), so no
argument's copy-back overwrites the kernel's writes through another.

A view that is not C-contiguous is copied contiguous (the kernel sees it
dense), so it cannot share one copy with an overlapping view: such a group
gets one copy per argument, and only the copy the kernel changed is copied
back (a kernel that reads a matrix and one of its columns is fine); where
the kernel changed two of them the launch raises a LaunchError, as their
writes cannot be merged faithfully.

A read-only array (np.frombuffer of bytes, np.broadcast_to) is never written
back. Where the kernel changed its bytes the launch raises a LaunchError
naming the argument after the kernel ran (its writable arrays are copied back
first): the writes are neither stored into memory numpy marked read-only nor
dropped silently. A read-only array the kernel only reads is fine.
"""
from __future__ import annotations

import numpy as np

from .device_array import _device_dtype, asarray
from .errors import LaunchError


class Copy:
    """One device copy of numpy arguments: `members` are (array, where, start),
    the array's bytes at `start` in `dev`; start None: dev is the array's own
    contiguous copy (of its shape). `before`: the bytes copied in, where the
    copy is one of a group of overlapping copies (`group`, shared by them)."""
    __slots__ = ("dev", "members", "before", "group")

    def __init__(self, dev, members: list, before: bytes = None, group: list = None) -> None:
        self.dev, self.members, self.before, self.group = dev, members, before, group


def _bounds(a: np.ndarray) -> tuple:
    """[lo, hi) of the bytes `a` touches, as numpy's byte_bounds."""
    lo = hi = a.__array_interface__["data"][0]
    if a.size == 0:
        return lo, lo
    for n, s in zip(a.shape, a.strides):
        if s > 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + a.itemsize


def _groups(arrays: list) -> list:
    """Indices of `arrays` grouped by shared memory (transitively)."""
    n = len(arrays)
    if n == 1:
        return [[0]]
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(n):
        a = arrays[i][0]
        for j in range(i):
            b = arrays[j][0]
            # byte ranges overlap (numpy's bounds test, in C); contiguous ones then share
            # memory, strided ones may interleave
            if np.may_share_memory(a, b) and (
                    (a.flags.c_contiguous and b.flags.c_contiguous) or np.shares_memory(a, b)):
                parent[root(i)] = root(j)
    out: dict = {}
    for i in range(n):
        out.setdefault(root(i), []).append(i)
    return list(out.values())


def dtype_misfit(dtype: np.dtype, pointee) -> str:
    """Why a numpy array of `dtype` cannot be what a pointer to `pointee`
    points at, or "" when it can. The kernel reads the array's bytes as
    `pointee`s, so a float64 array for a float* reads garbage: refused where
    the element's size differs, or float meets integer, or the bytes are
    big-endian, or the dtype is one no device array holds
    (device_array._device_dtype: str, dates, long double, Python objects:
    its copy could not be made). Complex numbers are pairs of floats (for a
    float2*/double2*, a float*/double* or a struct), half floats their
    2-byte bits (for an unsigned short*).
    What CUDA code does on purpose stays: void*, char* and unsigned char*
    take an array of any other dtype (bytes); same-size signed and unsigned
    integers; a vector pointee (float4) an array of its element or of records
    its size (a structured dtype, uint32 for uchar4); a struct pointee a
    numeric array whose item size divides the struct's size or is a multiple of it."""
    from isa import ir
    try:
        _device_dtype(dtype)
    except ValueError as e:                         # 'Unsupported dtype complex64: why'
        return str(e).split(": ", 1)[-1]
    while isinstance(pointee, ir.ArrayType):        # int (*)[8]: rows of ints
        pointee = pointee.elem
    as_bytes = isinstance(pointee, ir.VoidType) or (
        isinstance(pointee, ir.ScalarType) and pointee.kind == "int" and pointee.size == 1)
    if not dtype.isnative and not as_bytes:
        return ("its bytes are big-endian where the device's are little-endian; pass "
                "a.astype(a.dtype.newbyteorder('='))")
    kind, size = dtype.kind, dtype.itemsize
    if kind == "c":                 # complex numbers: pairs of floats (cuComplex is a float2)
        kind, size = "f", size // 2
        if isinstance(pointee, ir.VectorType) and pointee.size == 2 * size and pointee.elem.kind == "float":
            return ""
    elif kind == "f" and size == 2 and isinstance(pointee, ir.ScalarType) \
            and pointee.kind == "int" and pointee.size == 2:
        return ""                   # half floats read as their bits (unsigned short, as __half is stored)
    if isinstance(pointee, ir.VoidType):
        return ""
    if isinstance(pointee, ir.ScalarType):
        want = pointee.size
        if pointee.kind == "int" and want == 1:     # char, signed char, unsigned char: bytes
            return ""
        kinds = {"int": "iu", "float": "f", "bool": "biu"}[pointee.kind]
        if kind not in kinds:
            return f"its elements are {_kind_words(kind)}, not {_kind_words(kinds[0])}"
        if size != want:
            return f"its elements are {size} bytes, not {want}"
        return ""
    if isinstance(pointee, ir.PointerType):         # an array of addresses
        return "" if kind in "iu" and size == 8 else "an array of pointers is 8-byte integers"
    if isinstance(pointee, ir.VectorType):
        elem, whole = pointee.elem, pointee.size
        same_kind = kind in ("f" if elem.kind == "float" else "biu")
        if (same_kind and size == elem.size) or (kind == "V" and size == whole) \
                or (same_kind and elem.kind == "int" and size % elem.size == 0 and whole % size == 0):
            return ""
        return (f"its elements are {size}-byte {_kind_words(kind)}, neither {elem} "
                f"({elem.size} bytes) nor {whole}-byte records")
    if isinstance(pointee, ir.StructType) and pointee.complete and pointee.size:
        want = pointee.size
        if want % size and size % want:
            return f"its {size}-byte elements do not tile the {want}-byte struct"
    return ""


def check_dtype(dtype: np.dtype, t, where: str) -> None:
    """The LaunchError of an array of `dtype` passed for the pointer type `t`
    that dtype_misfit refuses (`where`: how the error names the argument)."""
    why = dtype_misfit(dtype, t.pointee)
    if why:
        raise LaunchError(f"{where} points to {t.pointee}: an array of {dtype} cannot be "
                          f"passed for it ({why})")


def _kind_words(kind: str) -> str:
    """numpy's dtype kind in words, plural."""
    return {"b": "bools", "i": "integers", "u": "integers", "f": "floats", "c": "complex numbers",
            "U": "strings", "S": "bytes", "O": "Python objects", "M": "datetimes",
            "m": "timedeltas", "V": "records"}.get(kind, kind)


def copy_in(arrays: list) -> tuple:
    """(device pointer per array, copies for copy_back) of `arrays`, a list
    of (numpy array, where: how errors name its argument)."""
    for a, where in arrays:
        if a.dtype.hasobject:
            raise LaunchError(f"{where} is a numpy array of Python objects ({a.dtype}): "
                              f"a kernel's memory holds numbers")
    ptrs = [0] * len(arrays)
    copies = []
    for group in _groups(arrays):
        if len(group) == 1:
            a = arrays[group[0]][0]
            d = asarray(np.ascontiguousarray(a))
            ptrs[group[0]] = d.ptr
            copies.append(Copy(d, [(a, arrays[group[0]][1], None)]))
            continue
        members = [arrays[i] for i in group]
        if not all(a.flags.c_contiguous for a, _ in members):
            together: list = []
            for i in group:
                a, where = arrays[i]
                host = np.array(a, order="C")         # a copy: what it held before the launch
                d = asarray(host)
                ptrs[i] = d.ptr
                together.append(Copy(d, [(a, where, None)], host.tobytes(), together))
            copies.extend(together)
            continue
        bounds = [_bounds(a) for a, _ in members]
        lo = min(b[0] for b in bounds)
        span = np.empty(max(b[1] for b in bounds) - lo, dtype=np.uint8)
        for (a, _), (alo, ahi) in zip(members, bounds):      # they cover the span together
            span[alo - lo:ahi - lo] = a.reshape(-1).view(np.uint8)
        d = asarray(span)
        for i, (alo, _) in zip(group, bounds):
            ptrs[i] = d.ptr + (alo - lo)
        copies.append(Copy(d, [(a, where, alo - lo) for (a, where), (alo, _) in zip(members, bounds)]))
    return ptrs, copies


def copy_back(copies: list) -> None:
    """Copy each device copy back into its writable arrays; then a LaunchError
    naming each read-only argument whose bytes the kernel changed."""
    changed, conflicts = [], []
    for c in copies:
        if c.group is not None:
            if c is c.group[0]:
                changed += _back_one_of(c.group, conflicts)
            continue
        got = c.dev.get()
        readonly = []
        for a, where, start in c.members:
            new = got.reshape(a.shape) if start is None else got[start:start + a.nbytes]
            if not a.flags.writeable:
                readonly.append((a, where, new))
            elif start is None:
                a[...] = new
            else:
                a.reshape(-1).view(np.uint8)[...] = new
        for a, where, new in readonly:      # after the writable ones, which may alias it
            if np.ascontiguousarray(a).tobytes() != new.tobytes():
                changed.append(where)
    if conflicts:
        raise LaunchError(conflicts[0])
    if changed:
        one = len(changed) == 1
        raise LaunchError(f"{', '.join(changed)} {'is a' if one else 'are'} read-only numpy "
                          f"array{'' if one else 's'} the kernel wrote to: the writes were not "
                          f"copied back (pass a writable array or a DeviceArray)")


def _back_one_of(group: list, conflicts: list) -> list:
    """Copy back the one copy of an overlapping group the kernel changed (the
    others, unchanged, are not written: their stale bytes would overwrite
    it); read-only ones it changed, for copy_back's error. Two changed:
    nothing copied back, the message added to `conflicts`."""
    got = [(c, c.dev.get()) for c in group]
    moved = [(c, g) for c, g in got if g.tobytes() != c.before]
    writable = [(c, g) for c, g in moved if c.members[0][0].flags.writeable]
    if len(moved) > 1:
        conflicts.append(f"{', '.join(c.members[0][1] for c, _ in moved)} share memory and "
                         f"the kernel wrote to more than one of them, which are not contiguous "
                         f"views: each had its own device copy, so their writes cannot be "
                         f"merged and none was copied back; pass contiguous views or DeviceArrays")
        return []
    for c, g in writable:
        a = c.members[0][0]
        a[...] = g.reshape(a.shape)
    return [c.members[0][1] for c, _ in moved if not c.members[0][0].flags.writeable]
