"""launch.report() and `gpuemu run --report/--json/--html`: the source view's
numbers are the launch's per-line counters, the costliest lines are marked."""
from __future__ import annotations

import base64
import functools
import json
import re

from conftest import PROGRAMS
from gpuemu import manifest as mf
from gpuemu.report.source_view import line_row, source_view, why


@functools.cache
def report(name):
    return mf.run(PROGRAMS / f"{name}.json").launch.report()


def tiled32_line(pattern):
    src = (PROGRAMS / "transpose_tiled32.cu").read_text().splitlines()
    return next(i for i, t in enumerate(src, 1) if re.search(pattern, t))


def test_the_column_read_of_tile32_is_the_costliest_line():
    rep = report("transpose_tiled32")
    read = tiled32_line(r"= tile\[threadIdx.x\]")
    assert rep.hot[0].key == read
    row = rep.row(read)
    # 256x256 floats read by 32-lane warps: 2048 requests of 32 wavefronts, 31 conflicts each
    assert (row.shared_requests, row.shared_wavefronts) == (2048, 2048 * 32)
    assert row.bank_conflicts == 2048 * 31 and row.conflict_ways == 32
    assert why(row).startswith("32-way bank conflicts")


def test_padding_leaves_no_conflicts_in_the_source_view():
    rep = report("transpose_tiled33")
    assert all(r.bank_conflicts == 0 and r.conflict_ways == 0 for r in rep.rows)


def test_source_view_sums_to_the_launch_totals():
    rep = report("transpose_tiled32")
    for total, per_line in (("warp_instructions", "executions"),
                            ("shared_bank_conflicts", "bank_conflicts")):
        assert sum(getattr(r, per_line) for r in rep.rows) == rep.stats[total]


def test_counters_at_no_source_line_get_a_row_of_their_own():
    rows = source_view("a", {0: {"stall_dependency": 7}, 1: {"warp_instructions": 1}})
    assert [(r.key, r.text) for r in rows] == [(0, "(no source line)"), (1, "a")]


def test_every_source_line_is_shown_with_its_text():
    rep = report("transpose_tiled32")
    src = (PROGRAMS / "transpose_tiled32.cu").read_text().splitlines()
    assert [r.text for r in rep.rows] == src


def test_sectors_per_request_of_coalesced_floats_is_four():
    rep = report("vecadd")
    loads = [r for r in rep.rows if r.global_ldst_requests]
    assert loads and all(r.ideal_sectors in (1, 4) for r in loads)
    full = max(loads, key=lambda r: r.global_ldst_requests)
    # 5000 floats: 156 full warps of 4 sectors, 1 warp of 8 lanes (1 sector), per array
    assert full.global_sectors / full.global_ldst_requests == (156 * 4 + 1) / 157


def test_hot_ranks_follow_cost():
    rows = source_view("a\nb\nc\nd", {1: {"warp_instructions": 5}, 2: {"warp_instructions": 50},
                                      3: {"memory_cycles": 20}, 4: {}}, top=2)
    assert [r.hot for r in rows] == [0, 1, 2, 0]
    assert abs(sum(r.cost_share for r in rows) - 1.0) < 1e-12


def test_stall_counters_of_timing_mode_add_to_the_cost():
    row = line_row(7, "x", {"warp_instructions": 10, "thread_instructions": 320,
                            "stall_memory": 30, "stall_barrier": 10})
    assert (row.stall_cycles, row.cost) == (40, 50)
    assert why(row) == "40 stall cycles (75% memory)"


def test_a_timing_launch_reports_stall_cycles_per_line():
    launch = mf.run(PROGRAMS / "transpose_tiled32.json", mode="timing").launch
    rep = launch.report()
    assert sum(r.stall_cycles for r in rep.rows) == sum(v for k, v in launch.stats.items()
                                                        if k.startswith("stall_"))
    assert any(r.stall_cycles for r in rep.hot)
    assert "warp timeline" in rep.pictures()


def test_report_prints_source_with_brackets_intact():
    text = str(report("transpose_tiled32"))
    assert "tile[threadIdx.y + j][threadIdx.x]" in text
    assert "costliest lines" in text and "#1 line" in text


def test_report_dict_is_json_with_hot_lines():
    d = json.loads(json.dumps(report("transpose_tiled32").to_dict()))
    assert d["hot"][0] == tiled32_line(r"= tile\[threadIdx.x\]")
    assert d["stats"]["shared_bank_conflicts"] == 63488


def test_html_page_is_self_contained_with_png_pictures(tmp_path):
    path = report("transpose_tiled32").save_html(tmp_path / "r.html")
    page = path.read_text()
    assert "<script" not in page and 'src="http' not in page
    pngs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(pngs) == 2                                  # bank heat map, coalescing
    assert all(base64.b64decode(p)[:4] == b"\x89PNG" for p in pngs)
    assert "bank heat map, line" in page and "tile[threadIdx.x][threadIdx.y + j]" in page


def test_cli_report_prints_the_source_view(cli):
    r = cli("run", PROGRAMS / "transpose_tiled32.json", "--report")
    assert r.returncode == 0, r.stderr
    assert "source view" in r.stdout and "32-way bank conflicts" in r.stdout


def test_cli_json_report_and_html(cli, tmp_path):
    out = tmp_path / "page.html"
    r = cli("run", PROGRAMS / "reduce_interleaved.json", "--json", "--report", "--html", out)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["report"]["hot"] and any(x["divergent_branches"] for x in d["report"]["lines"])
    assert out.read_text().startswith("<!DOCTYPE html>")


class FakeTiming:
    """Timing mode's report draws the timeline into a file (gpuemu/timing/timeline.py)."""

    def __init__(self) -> None:
        self.drawn = 0

    def timeline_png(self, path):
        from gpuemu.report.pictures import coalescing_png
        self.drawn += 1
        path.write_bytes(coalescing_png([("x", 1.0, 1)]))


def test_a_timing_launchs_timeline_is_one_of_the_pictures():
    launch = mf.run(PROGRAMS / "vecadd.json").launch
    launch.timing = FakeTiming()
    pics = launch.report().pictures()
    assert pics["warp timeline"][:4] == b"\x89PNG"
    assert "warp timeline" not in report("vecadd").pictures()


def test_the_timeline_is_drawn_only_when_the_pictures_are_asked_for():
    launch = mf.run(PROGRAMS / "vecadd.json").launch
    launch.timing = FakeTiming()
    rep = launch.report()
    rep.to_dict()
    str(rep)
    assert launch.timing.drawn == 0
    rep.to_html()
    assert launch.timing.drawn == 1


def test_cli_report_json_and_html_build_the_report_once(monkeypatch, tmp_path, capsys):
    from gpuemu import cli as gcli
    from gpuemu.report import Report
    built = []
    real = Report.from_launch.__func__
    monkeypatch.setattr(Report, "from_launch",
                        classmethod(lambda cls, *a, **k: built.append(1) or real(cls, *a, **k)))
    out = tmp_path / "page.html"
    assert gcli.main(["run", str(PROGRAMS / "vecadd.json"), "--json", "--report", "--html", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["report"]["kernel"] == "vecadd"
    assert len(built) == 1 and out.read_text().startswith("<!DOCTYPE html>")
