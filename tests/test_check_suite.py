"""Every buggy kernel of the suite is found with the right kind at the right
line; no correct kernel (the suite's and the programs/ gallery's) gives a
finding. Sources and markers: tests/check_suite.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gpuemu
from check_suite import BUGGY, CORRECT
from gpuemu import manifest as mf

ROOT = Path(__file__).resolve().parents[1]


def run_checked(case, stats: bool = True) -> list:
    mod = gpuemu.RawModule(code=case.src, arch=case.arch)
    try:
        la = mod.get_function("k")(case.grid, case.block, case.args(), shared_mem=case.shared_mem,
                                   check=True, **{"stats": stats, **case.options})
    except gpuemu.KernelError as e:
        return e.findings
    return la.findings


def test_the_suite_has_twenty_buggy_and_twenty_correct_kernels_covering_every_kind():
    assert len(BUGGY) >= 20 and len(CORRECT) >= 20
    assert {c.kind for c in BUGGY} == {"race", "uninitialized_read", "out_of_bounds",
                                        "misaligned_access", "barrier_divergence",
                                        "invalid_shuffle", "timeout", "deadlock"}


@pytest.mark.parametrize("case", BUGGY, ids=[c.name for c in BUGGY])
def test_buggy_kernel_is_found_with_its_kind_at_its_line(case):
    findings = run_checked(case)
    line, other = case.marked("BUG"), case.marked("OTHER")
    hits = [f for f in findings if f.kind == case.kind and f.line == line]
    assert hits, f"no {case.kind} at line {line}: {[str(f) for f in findings]}"
    if other is not None:
        assert any(f.other_line == other for f in hits), [str(f) for f in hits]
    assert all(f.kernel == "k" and f.block is not None and f.thread is not None for f in hits)


@pytest.mark.parametrize("case", CORRECT, ids=[c.name for c in CORRECT])
def test_correct_kernel_gives_no_finding(case):
    assert [str(f) for f in run_checked(case)] == []


@pytest.mark.parametrize("case", BUGGY + CORRECT, ids=[c.name for c in BUGGY + CORRECT])
def test_findings_are_the_same_with_counters_off(case):
    # `gpuemu check` runs without counters: the finders need only the trace
    # (each run allocates its own arguments: addresses may differ)
    def text(findings):
        return [re.sub(r"0x[0-9a-f]+", "ADDR", str(f)) for f in findings]
    assert text(run_checked(case, stats=False)) == text(run_checked(case))


@pytest.mark.parametrize("path", mf.discover(ROOT / "programs"), ids=lambda p: p.stem)
def test_gallery_program_gives_no_finding_but_the_one_it_demonstrates(path):
    # "expect_finding": the kind a bug demo stops with; "check_finding": the
    # kind check mode reports on a demo whose result comes out right
    m = mf.load(path)
    want = m.expect_finding or json.loads(path.read_text()).get("check_finding")
    try:
        res = mf.run(m, check=True)
    except gpuemu.KernelError as e:
        assert want in {f.kind for f in e.findings}, [str(f) for f in e.findings]
        return
    kinds = {f.kind for f in res.launch.findings}
    assert kinds == ({want} if want else set()), [str(f) for f in res.launch.findings]
    assert not mf.check(res)


def test_spin_lock_demo_deadlocks_on_sm60():
    with pytest.raises(gpuemu.KernelError) as ei:
        mf.run(ROOT / "programs" / "spin_lock_warp.json", arch="sm_60", budget=20000)
    assert ei.value.findings[0].kind == "deadlock" and ei.value.findings[0].line == 9


def test_warp_synchronous_demo_is_clean_in_lock_step_on_sm60():
    res = mf.run(ROOT / "programs" / "warp_reduce_no_syncwarp.json", arch="sm_60", check=True)
    assert res.launch.findings == [] and not mf.check(res)


@pytest.mark.parametrize("name, reader, writer", [
    ("a_flag_orders_only_the_writes_of_the_block_that_published_it", "block (2, 0, 0)", "block (1, 0, 0)"),
    ("a_shared_flag_orders_only_the_writes_of_the_warp_that_published_it",
     "warp 2 of block (0, 0, 0)", "warp 1 of block (0, 0, 0)")])
def test_a_race_past_a_flag_says_the_reader_read_none_the_writer_published(name, reader, writer):
    case = next(c for c in BUGGY if c.name == name)
    (f,) = [f for f in run_checked(case) if f.kind == "race"]
    assert f"here {reader} read a flag before its access, but none that {writer} published" in f.message
