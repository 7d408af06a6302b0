"""Every kernel in programs/ runs on the emulator and gives what numpy gives.

Each programs/NAME.json names its kernel, launch and arguments and carries an
"expect" (numpy statements over the argument names); gpuemu.manifest runs the
kernel and compares (integers exactly, floats to the manifest's rtol)."""
from __future__ import annotations

import functools
import re

import pytest

from conftest import PROGRAMS
from gpuemu import manifest as mf

MANIFESTS = mf.discover(PROGRAMS)
REQUIRED = ("vecadd", "saxpy", "transpose_naive", "transpose_tiled32", "transpose_tiled33",
            "reduce_interleaved", "reduce_sequential", "reduce_shfl", "dynamic_shared_carve",
            "const_poly", "histogram_shared_atomics", "matmul_tiled", "warp_scan_shfl_up",
            "divergence_demo")


@functools.cache
def run(path):
    """One run per program per session, shared by the tests that look at it."""
    return mf.run(path)


def test_every_required_program_is_present():
    names = {p.stem for p in MANIFESTS}
    assert set(REQUIRED) <= names


@pytest.mark.parametrize("source", sorted(PROGRAMS.glob("*.cu")), ids=lambda p: p.stem)
def test_program_source_opens_with_a_comment_saying_what_it_shows(source):
    first = source.read_text().lstrip().splitlines()[0]
    assert first.startswith("//") and source.stem in first


@pytest.mark.parametrize("source", sorted(PROGRAMS.glob("*.cu")), ids=lambda p: p.stem)
def test_program_uses_no_construct_outside_the_subset(source):
    text = source.read_text()
    for construct in ("template", "printf", "cooperative_groups", "#include <"):
        assert construct not in text, construct


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.stem)
def test_program_matches_numpy(path):
    res = run(path)
    mismatches = mf.check(res)
    assert mismatches == [], "\n".join(map(str, mismatches))


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.stem)
def test_program_launch_reports_instructions(path):
    res = run(path)
    m = res.manifest
    threads = m.grid[0] * m.grid[1] * m.grid[2] * m.block[0] * m.block[1] * m.block[2]
    stats = res.launch.stats
    # every launched thread executes at least its first instruction
    assert stats["thread_instructions"] >= threads
    assert stats["warp_instructions"] >= -(-threads // 32)


def test_tiled33_has_no_bank_conflicts_but_tiled32_does():
    # The padding's point (CUDA C Programming Guide, "Shared Memory"): a column
    # of tile[32][32] lies in one bank, a column of tile[32][33] in 32 banks.
    t32 = run(PROGRAMS / "transpose_tiled32.json").launch.stats
    t33 = run(PROGRAMS / "transpose_tiled33.json").launch.stats
    assert t33["shared_bank_conflicts"] == 0
    # 256x256 / (32 lanes) load requests, each 32 wavefronts: 31 conflicts each
    assert t32["shared_load_requests"] == 256 * 256 // 32
    assert t32["shared_load_wavefronts"] == 32 * t32["shared_load_requests"]


def test_divergence_demo_reports_divergent_branches():
    stats = run(PROGRAMS / "divergence_demo.json").launch.stats
    assert stats["divergent_branches"] > 0


def test_struct_fields_are_read_16_sectors_per_full_warp():
    # Particle is 16 bytes: a warp's read of one field spans 32 x 16 B = 512 B,
    # 16 sectors of 32 B; 1000 particles = 31 full warps + 8 lanes (128 B, 4
    # sectors); four fields read.
    stats = run(PROGRAMS / "struct_particles.json").launch.stats
    assert stats["global_load_sectors"] == 4 * (31 * 16 + 4)


def test_program_names_match_their_kernels():
    for p in MANIFESTS:
        m = mf.load(p)
        src = m.source.read_text()
        assert re.search(rf"__global__\s+void\s+{m.kernel}\s*\(", src), p.name


def test_readme_python_example_runs():
    # README.md's API example is a program too: it must run as printed.
    from conftest import REPO
    text = (REPO / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", text, re.S)
    assert example, "README.md has no python example"
    exec(compile(example.group(1), "README.md", "exec"), {"__name__": "readme"})
