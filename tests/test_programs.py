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
from gpuemu.errors import KernelError

ALL = mf.discover(PROGRAMS)
# demos of a bug: their manifest names the finding the launch must stop with
FINDING_DEMOS = [p for p in ALL if mf.load(p).expect_finding]
MANIFESTS = [p for p in ALL if p not in FINDING_DEMOS]
REQUIRED = ("vecadd", "saxpy", "transpose_naive", "transpose_tiled32", "transpose_tiled33",
            "reduce_interleaved", "reduce_sequential", "reduce_shfl", "dynamic_shared_carve",
            "const_poly", "histogram_shared_atomics", "matmul_tiled", "warp_scan_shfl_up",
            "divergence_demo",
            # issue 7: the memory chapters of the CUDA guide
            "shared_stride", "shared_broadcast", "shared_char", "shared_double", "global_coeffs",
            "gmem_offset", "gmem_stride", "reduce_strided_index", "reduce_first_add",
            "reduce_unroll_last_warp", "reduce_shfl_atomic", "last_block_sum", "deadlock_demo",
            "occupancy_study")


@functools.cache
def run(path):
    """One run per program per session, shared by the tests that look at it."""
    return mf.run(path)


def test_every_required_program_is_present():
    names = {p.stem for p in ALL}
    assert set(REQUIRED) <= names
    assert len(names) >= 25


@pytest.mark.parametrize("path", FINDING_DEMOS, ids=lambda p: p.stem)
def test_bug_demo_stops_with_the_finding_its_manifest_expects(path):
    m = mf.load(path)
    with pytest.raises(KernelError) as e:
        mf.run(path)
    assert [f.kind for f in e.value.findings] == [m.expect_finding]
    assert e.value.findings[0].kernel == m.kernel


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


def _per_request(name, counter, requests):
    s = run(PROGRAMS / f"{name}.json").launch.stats
    return s[counter] / s[requests]


def test_shared_stride_of_four_words_is_four_way():
    # lanes 0, 8, 16, 24 read words 0, 32, 64, 96: bank 0, four rows
    assert _per_request("shared_stride", "shared_load_wavefronts", "shared_load_requests") == 4


def test_broadcast_costs_one_wavefront_and_two_rows_of_a_bank_two():
    s = run(PROGRAMS / "shared_broadcast.json").launch.stats
    warps = 4 * 128 // 32
    assert s["shared_load_requests"] == 2 * warps
    assert s["shared_load_wavefronts"] == warps * 1 + warps * 2
    assert s["shared_bank_conflicts"] == warps


def test_char_reads_do_not_conflict():
    assert run(PROGRAMS / "shared_char.json").launch.stats["shared_bank_conflicts"] == 0


def test_doubles_need_two_wavefronts_with_4_byte_banks_and_one_in_8_byte_mode():
    def loads(**kw):
        s = mf.run(PROGRAMS / "shared_double.json", **kw).launch.stats
        return s["shared_load_wavefronts"] / s["shared_load_requests"]
    assert loads() == 2                          # sm_90: 256 bytes over 32 x 4-byte banks
    assert loads(arch="cc3x", bank_mode=8) == 1  # 32 x 8-byte banks


def test_constant_coefficients_save_the_global_loads_of_global_coefficients():
    const = run(PROGRAMS / "const_poly.json").launch.stats
    glob = run(PROGRAMS / "global_coeffs.json").launch.stats
    warps = -(-4000 // 32)
    assert glob["constant_requests"] == 0 and const["constant_requests"] == 8 * warps
    assert glob["global_load_requests"] - const["global_load_requests"] == 8 * warps


def test_a_read_misaligned_by_one_float_costs_five_sectors():
    assert _per_request("gmem_offset", "global_load_sectors", "global_load_requests") == 5


def test_a_read_of_every_fourth_float_costs_sixteen_sectors():
    assert _per_request("gmem_stride", "global_load_sectors", "global_load_requests") == 16


def test_strided_index_reduction_trades_divergence_for_bank_conflicts():
    strided = run(PROGRAMS / "reduce_strided_index.json").launch.stats
    interleaved = run(PROGRAMS / "reduce_interleaved.json").launch.stats
    assert strided["shared_bank_conflicts"] > 0 == interleaved["shared_bank_conflicts"]
    assert strided["divergent_branches"] < interleaved["divergent_branches"]


def test_first_add_halves_the_blocks_of_the_shared_tree():
    first = run(PROGRAMS / "reduce_first_add.json").launch.stats
    seq = run(PROGRAMS / "reduce_sequential.json").launch.stats
    assert first["shared_load_requests"] * 2 == seq["shared_load_requests"]


def test_one_global_atomic_per_warp_in_the_shuffle_reduction():
    s = run(PROGRAMS / "reduce_shfl_atomic.json").launch.stats
    assert s["global_atomic_requests"] + s["global_reduction_requests"] == 20 * 256 // 32


def test_last_block_pattern_fences_once_per_block():
    assert run(PROGRAMS / "last_block_sum.json").launch.stats["fences"] == 40


def test_strided_index_reduction_is_at_most_8_way():
    # s = 1: 2-way, s = 2: 4-way, s >= 4: 8 working lanes per bank word column
    by_line = run(PROGRAMS / "reduce_strided_index.json").launch.stats_by_line
    ways = {int(k.rsplit("_", 1)[1]) for c in by_line.values() for k in c
            if k.startswith("shared_conflict_ways_")}
    assert ways == {2, 4, 8}
