"""Every kernel in programs/ is plain CUDA C: nvcc compiles it unchanged.

DESIGN section 2: the language is a true subset of CUDA C. Skipped only when
nvcc is not on the PATH."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import PROGRAMS

NVCC = shutil.which("nvcc")
SOURCES = sorted(PROGRAMS.glob("*.cu"))

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")


def test_programs_folder_holds_kernels():
    assert len(SOURCES) >= 25


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_program_compiles_with_nvcc_for_sm_90(source, tmp_path):
    out = tmp_path / (source.stem + ".cubin")
    r = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(out), str(source)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0
