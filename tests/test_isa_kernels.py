"""The front end's own feature kernels (tests/isa_kernels/*.cu) are accepted by
isa.compile_source AND by nvcc, so the language stays a true subset of CUDA C."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import isa
from isa import ir
from isa_ir_walk import nodes

KERNELS = sorted((Path(__file__).parent / "isa_kernels").glob("*.cu"))
NVCC = shutil.which("nvcc")


def test_feature_kernels_exist():
    assert {p.stem for p in KERNELS} >= {"features", "structs", "control"}


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_feature_kernel_compiles_in_front_end(path):
    m = isa.compile_source(path.read_text(), str(path))
    assert m.kernels and all(k.body is not None for k in m.kernels)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_feature_kernel_compiles_with_nvcc(path, tmp_path):
    r = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"), str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_structs_kernel_copies_structs_with_memcopy():
    path = [p for p in KERNELS if p.stem == "structs"][0]
    k = isa.compile_source(path.read_text(), str(path)).kernel("structs")
    sizes = {m.nbytes for m in nodes(k.body, ir.MemCopy)}
    assert sizes == {28, 16}   # Particle: float3 12 + float 4 + int[3] 12; Weight: double + char, padded


def test_structs_kernel_constant_struct_array_image():
    import struct
    path = [p for p in KERNELS if p.stem == "structs"][0]
    m = isa.compile_source(path.read_text(), str(path))
    w = [g for g in m.globals if g.name == "weights"][0]
    assert w.space == "constant" and len(w.init) == 32
    assert struct.unpack_from("<d", w.init, 0)[0] == 0.5 and w.init[8] == ord("a")
    assert struct.unpack_from("<d", w.init, 16)[0] == 1.5 and w.init[24] == ord("b")


def test_conformance_kernels_all_compile():
    conf = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance"
    sources = sorted(conf.glob("*.cu"))
    if not sources:
        pytest.skip("no conformance set beside the checkout")
    for s in sources:
        m = isa.compile_source(s.read_text(), str(s))
        assert m.kernel(s.stem).is_kernel
