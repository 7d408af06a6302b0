"""gpuemu sweep: a grid of launches on Dask, one table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuemu import cli
from gpuemu import manifest as mf
from gpuemu import sweep

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"

VEC_SIZES = [{"label": "1K", "grid": [4], "args": {"a": 1024, "b": 1024, "c": 1024, "n": 1024}},
             {"label": "2K", "grid": [8], "args": {"a": 2048, "b": 2048, "c": 2048, "n": 2048}}]


def write_spec(tmp_path, **over) -> Path:
    spec = {"programs": [{"manifest": str(PROGRAMS / "vecadd.json"), "sizes": VEC_SIZES},
                         str(PROGRAMS / "transpose_tiled33.json")],
            "archs": ["sm_90", "sm_70"], "schedulers": ["lrr"],
            "counters": ["thread_instructions", "global_load_sectors", "shared_bank_conflicts"]}
    spec.update(over)
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    return p


def test_spec_expands_to_every_program_size_arch_and_scheduler_in_order(tmp_path):
    tasks = sweep.load_spec(write_spec(tmp_path))
    assert [(Path(t.manifest).stem, t.size_label, t.arch) for t in tasks] == [
        ("vecadd", "1K", "sm_90"), ("vecadd", "1K", "sm_70"),
        ("vecadd", "2K", "sm_90"), ("vecadd", "2K", "sm_70"),
        ("transpose_tiled33", "manifest", "sm_90"), ("transpose_tiled33", "manifest", "sm_70")]


@pytest.mark.parametrize("over,msg", [({"programs": []}, "programs"),
                                      ({"archs": "sm_90"}, "archs"),
                                      ({"programs": ["nope.json"]}, "no such manifest")])
def test_bad_spec_says_what_to_fix(tmp_path, over, msg):
    with pytest.raises(sweep.SweepError, match=msg):
        sweep.load_spec(write_spec(tmp_path, **over))


def test_a_size_sets_grid_buffer_counts_and_scalars():
    m = sweep.apply_size(mf.load(PROGRAMS / "vecadd.json"), VEC_SIZES[1])
    assert m.grid == (8, 1, 1)
    assert {a.name: (a.count if a.kind == "buffer" else a.value) for a in m.args} == \
        {"a": 2048, "b": 2048, "c": 2048, "n": 2048}


def test_a_failing_run_is_a_row_with_its_error(tmp_path):
    t = sweep.load_spec(write_spec(tmp_path, schedulers=["no_such_policy"]))[0]
    row = sweep.run_task(t)
    assert row["error"] and "no_such_policy" in row["error"]


def test_sweep_on_a_local_two_worker_cluster_gives_the_in_process_rows(tmp_path):
    tasks = sweep.load_spec(write_spec(tmp_path))
    rows = sweep.run_sweep(tasks, workers=2)
    want = [sweep.run_task(t) for t in tasks]
    drop = ("seconds", "compile_seconds")
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows] == \
        [{k: v for k, v in r.items() if k not in drop} for r in want]
    assert all(r["result"] == "match" and r["error"] is None for r in rows)
    assert rows[2]["thread_instructions"] == 2 * rows[0]["thread_instructions"]


def test_sweep_command_prints_the_table_and_writes_csv(tmp_path, capsys):
    spec = write_spec(tmp_path, programs=[{"manifest": str(PROGRAMS / "vecadd.json"),
                                           "sizes": VEC_SIZES[:1]}], archs=["sm_90"])
    out = tmp_path / "rows.csv"
    assert cli.main(["sweep", str(spec), "--workers", "1", "--out", str(out)]) == cli.EXIT_OK
    text = capsys.readouterr().out
    assert "vecadd" in text and "thread_instructions" in text
    assert out.read_text().splitlines()[0].startswith("program,arch,scheduler,size")


# ---------------------------------------------------------------- unknown fields

def _refused(tmp_path, **over) -> str:
    with pytest.raises(sweep.SweepError) as e:
        sweep.load_spec(write_spec(tmp_path, **over))
    return str(e.value)


def test_a_misspelt_spec_field_is_refused_naming_the_spec_and_the_closest_field(tmp_path):
    msg = _refused(tmp_path, arch=["sm_70"])
    assert str(tmp_path / "spec.json") in msg and "arch: unknown field" in msg
    assert "did you mean 'archs'?" in msg


def test_a_misspelt_program_field_is_refused_with_its_path(tmp_path):
    msg = _refused(tmp_path, programs=[{"manifest": str(PROGRAMS / "vecadd.json"),
                                        "size": VEC_SIZES}])
    assert "programs[0].size: unknown field" in msg and "did you mean 'sizes'?" in msg


def test_an_unknown_size_field_is_refused_with_its_path(tmp_path):
    sizes = [VEC_SIZES[0], dict(VEC_SIZES[1], block=[128])]
    msg = _refused(tmp_path, programs=[{"manifest": str(PROGRAMS / "vecadd.json"),
                                        "sizes": sizes}])
    assert "programs[0].sizes[1].block: unknown field of a size" in msg


def test_an_unknown_field_of_the_default_sizes_is_refused_with_its_path(tmp_path):
    assert "sizes[0].grdi" in _refused(tmp_path, sizes=[{"grdi": [2]}])


def test_an_unknown_launch_option_is_refused_with_the_closest_name(tmp_path):
    msg = _refused(tmp_path, launch={"budjet": 5})
    assert "launch.budjet: unknown field" in msg and "did you mean 'budget'?" in msg


def test_a_launch_scheduler_is_refused_because_the_schedulers_field_gives_it(tmp_path):
    msg = _refused(tmp_path, launch={"scheduler": "gto"})
    assert "launch.scheduler" in msg and "'schedulers'" in msg


def test_a_misspelt_spec_field_makes_the_sweep_command_a_usage_error(tmp_path, capsys):
    assert cli.main(["sweep", str(write_spec(tmp_path, counter=["cycles"]))]) == cli.EXIT_USAGE
    assert "did you mean 'counters'?" in capsys.readouterr().err


def test_default_sizes_no_program_uses_are_refused(tmp_path):
    msg = _refused(tmp_path, sizes=[{"grid": [2]}],
                   programs=[{"manifest": str(PROGRAMS / "vecadd.json"), "sizes": VEC_SIZES}])
    assert "'sizes'" in msg and "every program gives its own" in msg


def test_sizes_that_are_not_a_list_are_refused(tmp_path):
    assert "programs[0].sizes: must be a list" in _refused(
        tmp_path, programs=[{"manifest": str(PROGRAMS / "vecadd.json"), "sizes": VEC_SIZES[0]}])


# ---------------------------------------------------------------- bad values

@pytest.mark.parametrize("text, msg", [(b"\xff\xfe bad", "not UTF-8"),
                                       (b"[" * 100000, "nested too deeply"),
                                       (b'{"programs": [}', "spec.json:1:15: invalid JSON")])
def test_a_spec_that_is_not_json_is_a_sweep_error_saying_why(tmp_path, text, msg):
    (tmp_path / "spec.json").write_bytes(text)
    with pytest.raises(sweep.SweepError, match=msg):
        sweep.load_spec(tmp_path / "spec.json")


def test_programs_given_as_one_string_are_refused(tmp_path):
    assert "'programs' must be a list" in _refused(tmp_path, programs=str(PROGRAMS / "vecadd.json"))


def test_a_manifest_that_is_not_a_path_is_refused_with_its_path(tmp_path):
    assert "programs[0].manifest" in _refused(tmp_path, programs=[{"manifest": 5}])


@pytest.mark.parametrize("field, value", [("grid", "big"), ("grid", [1, 2, 3, 4]),
                                          ("args", [1024]), ("label", [1])])
def test_a_size_field_of_the_wrong_type_is_refused_with_its_path(tmp_path, field, value):
    msg = _refused(tmp_path, sizes=[{field: value}])
    assert f"sizes[0].{field}" in msg


def test_a_counter_the_launch_does_not_report_makes_the_row_an_error(tmp_path):
    t = sweep.load_spec(write_spec(tmp_path, counters=["cycels", "thread_instructions"]))[0]
    row = sweep.run_task(t)
    assert "cycels" in row["error"] and "did you mean 'cycles'?" in row["error"]
    assert row["thread_instructions"] > 0


def test_a_size_grid_may_be_one_integer(tmp_path):
    sizes = [{"grid": 8, "args": {"a": 2048, "b": 2048, "c": 2048, "n": 2048}}]
    t = sweep.load_spec(write_spec(tmp_path, sizes=sizes))[-1]
    assert t.size_label == "grid 8"
    assert sweep.apply_size(mf.load(PROGRAMS / "vecadd.json"), t.size).grid == (8, 1, 1)


def test_a_size_giving_a_buffer_a_count_that_is_not_an_integer_is_refused():
    with pytest.raises(mf.ManifestError, match="'a'.*4096.7.*integer"):
        sweep.apply_size(mf.load(PROGRAMS / "vecadd.json"), {"args": {"a": 4096.7}})


def test_an_unknown_arch_is_refused_when_the_spec_loads_naming_the_closest_preset(tmp_path):
    msg = _refused(tmp_path, archs=["sm_90", "sm_700"])
    assert "archs[1]" in msg and "'sm_700'" in msg and "did you mean 'sm_70'?" in msg


# ---------------------------------------------------------------- command-line values

def test_an_out_file_in_a_missing_folder_is_refused_before_the_sweep_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "run_sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    out = tmp_path / "nope" / "rows.csv"
    assert cli.main(["sweep", str(write_spec(tmp_path)), "--out", str(out)]) == cli.EXIT_USAGE
    assert f"--out {out}: no such folder" in capsys.readouterr().err


def test_an_out_file_that_is_a_folder_is_refused_before_the_sweep_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "run_sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    assert cli.main(["sweep", str(write_spec(tmp_path)), "--out", str(tmp_path)]) == cli.EXIT_USAGE
    assert "is a folder, not a file" in capsys.readouterr().err


def test_an_unreachable_scheduler_is_a_usage_error_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "CONNECT_TIMEOUT", 1)
    spec = str(write_spec(tmp_path))
    assert cli.main(["sweep", spec, "--scheduler", "tcp://127.0.0.1:1"]) == cli.EXIT_USAGE
    assert "cannot connect to the Dask scheduler at 'tcp://127.0.0.1:1'" in capsys.readouterr().err


def test_a_scheduler_address_dask_cannot_read_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["sweep", str(write_spec(tmp_path)), "--scheduler", "foo://x:1"]) == cli.EXIT_USAGE
    assert "unknown address scheme 'foo'" in capsys.readouterr().err
