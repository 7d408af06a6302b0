"""benchmarks/page_sharing.py at a small size: one row per placement, the
frames' page told, the allocation rule given back after --lines. No
timing asserts."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO
from gpuemu.machine import block_workers, cache_lines

sys.path.insert(0, str(REPO / "benchmarks"))
import page_sharing  # noqa: E402

SMALL = ["--placements", "2", "--turns", "2", "--threads", "65536"]


@pytest.fixture(autouse=True)
def _on_two_workers(monkeypatch):
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})


def _rows(out: str) -> list:
    return [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ") and line[2].isdigit()]


def test_every_placement_is_a_row_and_none_shares_a_page_on_pages_of_their_own(capsys):
    assert page_sharing.main(SMALL) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    assert [r[0].strip() for r in rows] == ["0", "1"]
    assert all(r[1].strip() == "no" for r in rows)
    assert "frames apart: 2 placements" in out and "pages of their own" in out


def test_lines_of_their_own_is_the_old_rule_and_is_given_back(capsys):
    zeros = cache_lines.zeros
    assert page_sharing.main(SMALL + ["--lines"]) == 0
    out = capsys.readouterr().out
    assert "lines of their own only" in out
    assert {r[1].strip() for r in _rows(out)} <= {"yes", "no"} and len(_rows(out)) == 2
    assert cache_lines.zeros is zeros
