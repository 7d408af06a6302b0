"""Every kernel in programs/ is plain CUDA C: nvcc compiles it unchanged.

DESIGN section 2: the language is a true subset of CUDA C. Skipped only when
nvcc is not on the PATH."""
from __future__ import annotations

import shutil

import pytest

from conftest import PROGRAMS, nvcc_cubin

NVCC = shutil.which("nvcc")
SOURCES = sorted(PROGRAMS.glob("*.cu"))

pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")


def test_programs_folder_holds_kernels():
    assert len(SOURCES) >= 25


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_program_compiles_with_nvcc_for_sm_90(source, tmp_path):
    nvcc_cubin(NVCC, source, tmp_path)
