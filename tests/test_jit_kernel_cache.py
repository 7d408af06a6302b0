"""Compiled kernels are cached in memory and on disk (a second process loads them)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import gpuemu

REPO = Path(__file__).resolve().parent.parent

SRC = r"""
extern "C" __global__ void cached_k(int* out) { out[threadIdx.x] = threadIdx.x * 3; }
"""

SCRIPT = textwrap.dedent(f"""
    import numpy as np, gpuemu
    k = gpuemu.RawModule(code={SRC!r}).get_function("cached_k")
    out = np.zeros(32, np.int32)
    k(1, 32, (out,))
    assert (out == np.arange(32) * 3).all()
    print(k.compiled.from_cache)
""")


def _run(cache_dir: Path) -> str:
    env = dict(os.environ, GPUEMU_CACHE_DIR=str(cache_dir),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_second_process_loads_the_kernel_from_the_disk_cache(tmp_path):
    assert _run(tmp_path) == "compiled"
    assert list(tmp_path.glob("*.obj"))
    assert _run(tmp_path) == "disk"


def test_same_kernel_twice_in_one_process_hits_the_memory_cache():
    src = SRC.replace("* 3", "* 5")
    gpuemu.RawModule(code=src).get_function("cached_k")
    k2 = gpuemu.RawModule(code=src).get_function("cached_k")
    assert k2.compiled.from_cache == "memory"


def test_changed_source_does_not_hit_the_cache():
    a = gpuemu.RawModule(code=SRC.replace("* 3", "* 7")).get_function("cached_k")
    b = gpuemu.RawModule(code=SRC.replace("* 3", "* 11")).get_function("cached_k")
    assert b.compiled.meta.symbol != a.compiled.meta.symbol
