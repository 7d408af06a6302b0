"""The command line's progress bar for long launches."""
from __future__ import annotations

import io
from pathlib import Path

from gpuemu import cli
from gpuemu.progress import LaunchProgress

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"


def test_counts_the_blocks_it_hears_of():
    p = LaunchProgress(10, stream=io.StringIO())
    p(4)
    p(6)
    assert p.done == 10


def test_draws_nothing_before_the_delay():
    out = io.StringIO()
    with LaunchProgress(10, delay=3600, stream=out, force=True) as p:
        p(5)
    assert not p.shown and out.getvalue() == ""


def test_draws_a_bar_of_blocks_after_the_delay():
    out = io.StringIO()
    with LaunchProgress(10, label="vecadd", delay=0, stream=out, force=True) as p:
        p(5)
    assert p.shown and "vecadd" in out.getvalue() and "blocks" in out.getvalue()


def test_off_where_stderr_is_not_a_terminal():
    out = io.StringIO()
    with LaunchProgress(10, delay=0, stream=out) as p:
        p(5)
    assert not p.shown and out.getvalue() == ""


def test_run_accepts_quiet_and_workers(capsys):
    rc = cli.main(["run", str(PROGRAMS / "vecadd.json"), "--quiet", "--workers", "2"])
    assert rc == cli.EXIT_OK
    assert "match" in capsys.readouterr().out
