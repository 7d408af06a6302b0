"""Compiled kernels cached in memory and on disk.

Key: a hash of the kernel's IR (which includes every source location, so it
changes with the source and its includes), the arch, the options, the gpuemu
version and the host CPU (object code is CPU-specific). On disk each entry is
KEY.obj (object code) and KEY.meta (pickled metadata) under $GPUEMU_CACHE_DIR
or ~/.cache/gpuemu; a second process loads them instead of recompiling.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Optional

_memory: dict = {}


def cache_dir() -> Path:
    d = os.environ.get("GPUEMU_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "gpuemu"


def make_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()[:40]


def memory_get(key: str):
    return _memory.get(key)


def memory_put(key: str, value) -> None:
    _memory[key] = value


def disk_get(key: str) -> Optional[tuple]:
    """(object bytes, metadata) or None."""
    d = cache_dir()
    try:
        obj = (d / f"{key}.obj").read_bytes()
        meta = pickle.loads((d / f"{key}.meta").read_bytes())
        return obj, meta
    except Exception:  # missing, partial or stale entry: recompile
        return None


def disk_put(key: str, obj: bytes, meta) -> None:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        for name, data in ((f"{key}.obj", obj), (f"{key}.meta", pickle.dumps(meta))):
            fd, tmp = tempfile.mkstemp(dir=d)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, d / name)   # atomic: readers never see half a file
    except OSError:
        pass  # a read-only cache directory only costs recompiles
