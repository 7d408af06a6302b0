"""The `gpuemu` command line, run as users run it (python -m gpuemu in a
subprocess), plus the argument-spec parser on its own."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import CONFORMANCE, PROGRAMS, REPO, run_cli
from gpuemu import cli

SCALE = """\
extern "C" __global__ void scale(float *x, float f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * f;
}
"""

BROKEN = """\
extern "C" __global__ void broken(float *x)
{
    int i = threadIdx.x
    x[i] = 1.0f;
}
"""

OVERRUN = """\
extern "C" __global__ void overrun(int *x)
{
    x[threadIdx.x + 1] = 1;
}
"""


# ---------------------------------------------------------------- spec parsing

def test_buffer_spec_gives_dtype_count_and_init():
    a = cli.parse_arg_spec("float32[1024]=random:1", 0)
    assert (a.kind, a.dtype, a.count, a.init, a.output, a.name) == \
        ("buffer", np.dtype("float32"), 1024, "random:1", False, "arg0")


def test_out_prefix_marks_an_output_with_zeros_by_default():
    a = cli.parse_arg_spec("out:i32[8]", 2)
    assert a.output and a.init == "zeros" and a.dtype == np.int32 and a.name == "arg2"


def test_scalar_spec_gives_a_typed_value():
    a = cli.parse_arg_spec("n=i32:1024", 0)
    assert a.kind == "scalar" and a.name == "n" and a.build() == np.int32(1024)
    assert isinstance(cli.parse_arg_spec("f32:2.5", 1).build(), np.float32)


def test_named_output_buffer():
    a = cli.parse_arg_spec("c=out:float[4]=const:1", 0)
    assert a.name == "c" and a.output and a.build().tolist() == [1.0] * 4


def test_bad_spec_is_a_usage_error_pointing_at_help():
    with pytest.raises(cli.UsageError, match="gpuemu run --help"):
        cli.parse_arg_spec("float32(4)", 0)


def test_bad_init_in_spec_is_a_usage_error():
    with pytest.raises(cli.UsageError, match="unknown init"):
        cli.parse_arg_spec("float32[4]=ones", 0)


def test_dim3_pads_to_three():
    assert cli.dim3("4") == (4, 1, 1) and cli.dim3("32,8") == (32, 8, 1)
    assert cli.dim3("2x3x4") == (2, 3, 4)


# ---------------------------------------------------------------- help

def test_help_lists_the_commands():
    r = run_cli("--help")
    assert r.returncode == 0 and "run" in r.stdout and "info" in r.stdout


def test_run_help_documents_every_option_and_the_spec_grammar():
    r = run_cli("run", "--help")
    assert r.returncode == 0
    for text in ("--kernel", "--grid", "--block", "--shared", "--arg", "--arch", "--json",
                 "random:SEED", "TYPE:VALUE", "out:"):
        assert text in r.stdout, text


def test_installed_console_script_runs():
    # pip install -e '.[test]' puts the `gpuemu` script beside the interpreter
    script = Path(sys.executable).parent / "gpuemu"
    if not script.exists():
        pytest.skip("gpuemu is not installed in this environment (pip install -e .)")
    r = subprocess.run([str(script), "info", "archs"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "sm_90" in r.stdout


def test_version_is_the_packaged_version():
    declared = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"gpuemu {declared.group(1)}"


def test_no_command_prints_help_and_fails():
    r = run_cli()
    assert r.returncode == 2 and "usage" in r.stdout


# ---------------------------------------------------------------- info

def test_info_archs_lists_the_presets():
    r = run_cli("info", "archs")
    assert r.returncode == 0, r.stderr
    for name in ("sm_90", "sm_80", "sm_70", "cc1x", "cc2x", "cc3x"):
        assert name in r.stdout, name


def test_info_archs_json_gives_sm_90_with_132_sms():
    r = run_cli("info", "archs", "--json")
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    # H100 SXM5: 132 SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper)
    assert rows["sm_90"]["cc"] == "9.0" and rows["sm_90"]["sms"] == 132


# ---------------------------------------------------------------- run

def test_run_manifest_prints_outputs_and_counters():
    r = run_cli("run", PROGRAMS / "vecadd.json")
    assert r.returncode == 0, r.stderr
    assert "matches expectation" in r.stdout
    assert "global_load_requests" in r.stdout and "float32" in r.stdout


def test_run_manifest_json_has_outputs_and_stats():
    r = run_cli("run", PROGRAMS / "vecadd.json", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["expectation"] == "match"
    assert out["outputs"]["c"]["shape"] == [5000]
    # 5000 floats read twice, by warps of 32: ceil(5000/32) = 157 requests per array
    assert out["stats"]["global_load_requests"] == 2 * 157


def test_run_cu_with_args_gives_the_scaled_values(tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text(SCALE)
    save = tmp_path / "out.npz"
    r = run_cli("run", src, "--kernel", "scale", "--grid", "2", "--block", "64",
                "--arg", "x=out:float32[100]=arange", "--arg", "f32:3", "--arg", "i32:100",
                "--save", save, "--expect", "x = x * 3")
    assert r.returncode == 0, r.stderr
    assert "matches expectation" in r.stdout
    assert np.array_equal(np.load(save)["x"], np.arange(100, dtype=np.float32) * 3)


def test_a_float64_buffer_for_a_float_pointer_is_a_launch_error(capsys):
    assert cli.main(["run", str(PROGRAMS / "vecadd.cu"), "--kernel", "vecadd", "--grid", "1",
                     "--block", "64", "--arg", "f64[64]", "--arg", "f32[64]", "--arg", "out:f32[64]",
                     "--arg", "i32:64", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "launch error: argument 0 ('a', float*) points to float: an array of float64" in err


def run_scale_by_2(tmp_path, expect: str) -> subprocess.CompletedProcess:
    """`gpuemu run` of SCALE doubling 32 ones in x, with an --expect."""
    src = tmp_path / "scale.cu"
    src.write_text(SCALE)
    return run_cli("run", src, "--kernel", "scale", "--block", "32",
                   "--arg", "x=out:float32[32]=const:1", "--arg", "f32:2", "--arg", "i32:32",
                   "--expect", expect)


def test_mismatch_with_expectation_exits_non_zero(tmp_path):
    r = run_scale_by_2(tmp_path, "x = x * 3")
    assert r.returncode == 1 and "DOES NOT match" in r.stdout


def test_in_place_expectation_that_disagrees_exits_non_zero(tmp_path):
    r = run_scale_by_2(tmp_path, "x[:] = x * 3")
    assert r.returncode == 1 and "DOES NOT match" in r.stdout


def test_expectation_naming_no_output_is_an_error_not_a_pass(tmp_path):
    r = run_scale_by_2(tmp_path, "xx = x * 2")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "gives no output" in r.stderr and "matches expectation" not in r.stdout


def test_compile_error_shows_file_line_col_and_caret(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text(BROKEN)
    r = run_cli("run", src, "--kernel", "broken", "--block", "32", "--arg", "out:f32[32]")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    assert f"{src.name}:3:" in r.stderr or f"{src.name}:4:" in r.stderr
    lines = r.stderr.splitlines()
    caret = [i for i, ln in enumerate(lines) if ln.strip() == "^"]
    assert caret, r.stderr
    assert "x[i]" in lines[caret[0] - 1] or "threadIdx.x" in lines[caret[0] - 1]


def test_launch_error_names_the_limit_and_value(tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text(SCALE)
    r = run_cli("run", src, "--kernel", "scale", "--block", "2048",
                "--arg", "out:f32[32]", "--arg", "f32:1", "--arg", "i32:32")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "launch error" in r.stderr and "2048" in r.stderr and "1024" in r.stderr


def test_out_of_bounds_kernel_reports_the_finding(tmp_path):
    src = tmp_path / "overrun.cu"
    src.write_text(OVERRUN)
    r = run_cli("run", src, "--kernel", "overrun", "--block", "32", "--arg", "out:i32[32]")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "out_of_bounds" in r.stderr and "line 3" in r.stderr


def test_cu_without_kernel_is_a_usage_error(tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text(SCALE)
    r = run_cli("run", src, "--block", "32")
    assert r.returncode == 2 and "--kernel" in r.stderr


def test_missing_file_fails_without_traceback(tmp_path):
    r = run_cli("run", tmp_path / "nothing.json")
    assert r.returncode == 1 and "Traceback" not in r.stderr and "nothing.json" in r.stderr


def test_unknown_arch_fails_without_traceback():
    r = run_cli("run", PROGRAMS / "vecadd.json", "--arch", "sm_999")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "sm_999" in r.stderr


def test_unknown_kernel_name_is_reported(tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text(SCALE)
    r = run_cli("run", src, "--kernel", "nope", "--block", "32",
                "--arg", "out:f32[32]", "--arg", "f32:1", "--arg", "i32:32")
    assert r.returncode == 1 and "Traceback" not in r.stderr and "nope" in r.stderr


CONST = """\
__constant__ int table[4];

extern "C" __global__ void lookup(int *out)
{
    out[threadIdx.x] = table[threadIdx.x % 4] * 10;
}
"""


def test_const_option_fills_a_constant_symbol(tmp_path):
    src = tmp_path / "lookup.cu"
    src.write_text(CONST)
    r = run_cli("run", src, "--kernel", "lookup", "--block", "8", "--arg", "o=out:i32[8]",
                "--const", "table=i32[4]=arange", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"]["o"]["first"] == [0, 10, 20, 30, 0, 10, 20, 30]


def test_lines_option_prints_counters_by_source_line():
    r = run_cli("run", PROGRAMS / "transpose_tiled32.json", "--lines")
    assert r.returncode == 0, r.stderr
    assert "counters by source line" in r.stdout
    # the conflicting column read of the tile is line 16 of the program
    assert "tile[threadIdx.x][threadIdx.y + j]" in r.stdout


def test_grid_override_on_a_manifest_changes_the_launch():
    r = run_cli("run", PROGRAMS / "vecadd.json", "--grid", "10", "--json")
    out = json.loads(r.stdout)
    # half the blocks: elements 2560.. stay zero, so the expectation fails
    assert out["grid"] == [10, 1, 1] and out["expectation"] == "mismatch"
    assert r.returncode == 1


SPIN = """\
extern "C" __global__ void spin(int *x)
{
    while (x[0] == 0)
        x[1] += 1;
}
"""


def test_budget_stops_a_kernel_that_never_ends(tmp_path):
    src = tmp_path / "spin.cu"
    src.write_text(SPIN)
    r = run_cli("run", src, "--kernel", "spin", "--block", "1", "--arg", "out:i32[2]",
                "--budget", "1000")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "timeout" in r.stderr


def test_plain_text_report_without_rich(monkeypatch, capsys):
    # rich is a dependency, but the report must not need it
    monkeypatch.setattr(cli, "_console", lambda stream=None: None)
    assert cli.main(["run", str(PROGRAMS / "vecadd.json")]) == 0
    out = capsys.readouterr().out
    assert "matches expectation" in out and "global_load_requests" in out


def test_no_l1_makes_cc2x_loads_32_byte_segments():
    # CUDA C Programming Guide, cc2.x global memory: a warp reading 128
    # aligned bytes is one 128-byte L1 line, or four 32-byte segments with L1
    # off (-dlcm=cg). transpose_naive reads 256*256/32 = 2048 such rows.
    def loads(*extra):
        r = run_cli("run", PROGRAMS / "transpose_naive.json", "--arch", "cc2x", "--json", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["stats"]["global_load_transactions"]
    assert loads() == 2048 and loads("--no-l1") == 4 * 2048


STRIDE2 = """\
extern "C" __global__ void stride2(float *out)
{
    __shared__ float buf[64];
    buf[threadIdx.x] = threadIdx.x;
    buf[threadIdx.x + 32] = threadIdx.x + 32;
    __syncthreads();
    out[threadIdx.x] = buf[2 * threadIdx.x];
}
"""


def test_bank_mode_8_makes_stride_2_floats_conflict_free_on_cc3x(tmp_path):
    # Guide, cc3.x shared memory: in 8-byte mode words 2i and 2i+1 share bank
    # i, so lane i reading word 2i hits 32 different banks: one wavefront.
    src = tmp_path / "stride2.cu"
    src.write_text(STRIDE2)
    r = run_cli("run", src, "--kernel", "stride2", "--block", "32", "--arg", "out:f32[32]",
                "--arch", "cc3x", "--bank-mode", "8", "--json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)["stats"]
    assert stats["shared_load_requests"] == 1 and stats["shared_load_wavefronts"] == 1


def test_bank_mode_a_preset_does_not_offer_is_a_usage_error(capsys):
    # only cc3.x switches bank width (cudaDeviceSetSharedMemConfig); sm_90's banks are 4 bytes
    assert cli.main(["run", str(PROGRAMS / "vecadd.json"), "--bank-mode", "8"]) == 2
    err = capsys.readouterr().err
    assert "--bank-mode 8" in err and "sm_90" in err and "cc3x" in err


@pytest.mark.parametrize("option", ["--save", "--html", "--timeline"])
def test_output_file_in_a_missing_folder_is_refused_before_the_launch(option, tmp_path, capsys):
    path = tmp_path / "nowhere" / "out.x"
    assert cli.main(["run", str(PROGRAMS / "vecadd.json"), option, str(path)]) == 2
    captured = capsys.readouterr()
    assert f"{option} {path}: no such folder" in captured.err and captured.out == ""


def test_output_file_that_is_a_folder_is_refused(tmp_path, capsys):
    assert cli.main(["run", str(PROGRAMS / "vecadd.json"), "--save", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_workers_above_the_cap_is_a_usage_error(capsys):
    from gpuemu.machine.block_workers import MAX_WORKERS
    with pytest.raises(SystemExit) as e:
        cli.main(["run", str(PROGRAMS / "vecadd.json"), "--workers", "100000"])
    assert e.value.code == 2
    assert f"--workers: must be at most {MAX_WORKERS}" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "check"])
def test_gpuemu_workers_above_the_cap_is_a_usage_error(command, monkeypatch, capsys):
    from gpuemu.machine.block_workers import MAX_WORKERS
    monkeypatch.setenv("GPUEMU_WORKERS", "100000")
    assert cli.main([command, str(PROGRAMS / "vecadd.json")]) == 2
    err = capsys.readouterr().err
    assert f"GPUEMU_WORKERS must be at most {MAX_WORKERS}" in err and "internal error" not in err


@pytest.mark.parametrize("command", ["run", "check"])
def test_budget_past_int64_is_a_usage_error(command, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([command, str(PROGRAMS / "vecadd.json"), "--budget", "99999999999999999999999"])
    assert e.value.code == 2
    assert "--budget: must be at most 9223372036854775807 (2**63 - 1)" in capsys.readouterr().err


def test_manifest_budget_past_int64_is_a_launch_error(tmp_path, capsys):
    m = json.loads((PROGRAMS / "vecadd.json").read_text())
    m["source"], m["launch"] = str(PROGRAMS / "vecadd.cu"), {"budget": 10**30}
    (tmp_path / "m.json").write_text(json.dumps(m))
    assert cli.main(["run", str(tmp_path / "m.json"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "launch error: budget must be a positive int of at most 2**63 - 1" in err


@pytest.mark.parametrize("options", [["--seed", "-1"], ["--scheduler", "nope"],
                                     ["--scheduler", "nope", "--timing"]])
def test_an_option_the_launch_refuses_is_a_launch_error_not_an_internal_one(options, capsys):
    assert cli.main(["run", str(PROGRAMS / "vecadd.json"), "--quiet", *options]) == 1
    err = capsys.readouterr().err
    assert "launch error" in err and options[1] in err and "internal error" not in err


@pytest.mark.parametrize("option, value", [("seed", "x"), ("scheduler", 5), ("bank_mode", 3)])
def test_a_manifest_launch_option_the_launch_refuses_is_a_launch_error(option, value, tmp_path,
                                                                        capsys):
    d = json.loads((PROGRAMS / "vecadd.json").read_text())
    d.update(source=str(PROGRAMS / "vecadd.cu"), launch={option: value})
    (tmp_path / "k.json").write_text(json.dumps(d))
    assert cli.main(["run", str(tmp_path / "k.json"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "launch error" in err and option in err and "internal error" not in err


def test_conformance_manifest_shows_the_h100_counters_beside_ours():
    case = CONFORMANCE / "smem_ld_stride4.json"
    if not case.exists():
        pytest.skip(f"conformance set not found at {CONFORMANCE}")
    r = run_cli("run", case)
    assert r.returncode == 0, r.stderr
    assert "H100 (measured)" in r.stdout
    row = [ln for ln in r.stdout.splitlines() if "shared_load_wavefronts" in ln][0]
    # stride 4 floats: gcd(4, 32) = 4 wavefronts x 128 requests, as the H100 measured
    assert row.count("512") == 2


def test_occupancy_names_the_limiting_resource(tmp_path):
    # 48 KB of static shared memory per block: 4 blocks fit in the H100's
    # 228 KB (with 1 KB reserved per block), 32 of 64 warps: 50%.
    src = tmp_path / "big.cu"
    src.write_text("__global__ void big(float *o) {\n"
                   "    __shared__ float s[12288];\n"
                   "    s[threadIdx.x] = 1.0f; __syncthreads(); o[threadIdx.x] = s[255 - threadIdx.x];\n"
                   "}\n")
    r = run_cli("occupancy", src, "--block", "256")
    assert r.returncode == 0, r.stderr
    assert "active blocks per SM: 4" in r.stdout
    assert "50.0%" in r.stdout and "limited by shared memory" in r.stdout


def test_occupancy_of_an_unknown_kernel_is_a_usage_error():
    r = run_cli("occupancy", PROGRAMS / "vecadd.cu", "--kernel", "nope", "--block", "128")
    assert r.returncode == 2 and "nope" in r.stderr


def test_occupancy_of_a_missing_file_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["occupancy", str(tmp_path / "nope.cu"), "--block", "32"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_occupancy_refuses_a_block_over_the_threads_per_block_limit(capsys):
    # the launch refuses it (cudaErrorInvalidConfiguration), so it has no occupancy to report
    assert cli.main(["occupancy", str(PROGRAMS / "vecadd.cu"), "--block", "2000"]) == 1
    err = capsys.readouterr().err
    assert "2000 threads" in err and "1024 threads per block" in err


@pytest.mark.parametrize("command, option, value", [
    ("occupancy", "--shared", "-5"), ("occupancy", "--maxrregcount", "0"),
    ("occupancy", "--maxrregcount", "-1"), ("run", "--shared", "-1"),
    ("check", "--seeds", "-3"), ("check", "--seeds", "0"),
])
def test_a_negative_or_zero_count_is_a_usage_error(command, option, value, capsys):
    target = PROGRAMS / ("vecadd.cu" if command == "occupancy" else "vecadd.json")
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, str(target), option, value]
                 + (["--block", "32"] if command == "occupancy" else []))
    assert exit_.value.code == 2
    assert f"argument {option}: must be at least" in capsys.readouterr().err


def test_a_manifest_naming_an_arch_is_refused_pointing_at_the_arch_option(tmp_path, capsys):
    d = json.loads((PROGRAMS / "vecadd.json").read_text())
    d.update(source=str(PROGRAMS / "vecadd.cu"), arch="sm_70")
    (tmp_path / "k.json").write_text(json.dumps(d))
    assert cli.main(["run", str(tmp_path / "k.json"), "--quiet", "--arch", "sm_90"]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "k.json") in err and "arch" in err and "--arch NAME" in err


def test_a_demo_stopping_with_the_finding_its_manifest_expects_exits_0_saying_so(capsys):
    assert cli.main(["run", str(PROGRAMS / "deadlock_demo.json"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "expect_finding" in out and "[deadlock]" in out


def test_a_launch_ending_without_the_finding_its_manifest_expects_exits_1(tmp_path, capsys):
    d = json.loads((PROGRAMS / "vecadd.json").read_text())
    del d["expect"]
    d.update(source=str(PROGRAMS / "vecadd.cu"), expect_finding="deadlock")
    (tmp_path / "k.json").write_text(json.dumps(d))
    assert cli.main(["run", str(tmp_path / "k.json"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "expect_finding" in err and "'deadlock'" in err


def test_a_const_named_like_an_arg_is_a_usage_error(tmp_path, capsys):
    src = tmp_path / "k.cu"
    src.write_text('__constant__ float c[4];\n'
                   'extern "C" __global__ void k(float* c) { c[threadIdx.x] = 1.0f; }\n')
    assert cli.main(["run", str(src), "--kernel", "k", "--block", "4", "--quiet",
                     "--arg", "c=out:float32[4]", "--const", "c=float32[4]=arange"]) == 2
    assert "names repeat: c" in capsys.readouterr().err


@pytest.mark.parametrize("rtol", ["-1e-3", "nan", "inf"])
def test_a_negative_or_not_finite_rtol_is_a_usage_error(rtol, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", str(PROGRAMS / "vecadd.json"), f"--rtol={rtol}"])
    assert e.value.code == 2 and "--rtol" in capsys.readouterr().err


def test_expect_on_a_manifest_expecting_a_finding_is_a_usage_error(capsys):
    # the launch is expected to stop: there are no outputs for --expect to check
    assert cli.main(["run", str(PROGRAMS / "deadlock_demo.json"), "--quiet",
                     "--expect", "out = flag"]) == 2
    assert "--expect" in capsys.readouterr().err


def test_rtol_with_no_expectation_to_apply_it_to_is_a_usage_error(tmp_path, capsys):
    d = json.loads((PROGRAMS / "vecadd.json").read_text())
    del d["expect"]
    d.update(source=str(PROGRAMS / "vecadd.cu"))
    (tmp_path / "k.json").write_text(json.dumps(d))
    assert cli.main(["run", str(tmp_path / "k.json"), "--quiet", "--rtol", "1e-3"]) == 2
    assert "--rtol" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--top", "--show"])
def test_a_negative_top_or_show_count_is_a_usage_error(option, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", str(PROGRAMS / "vecadd.json"), "--quiet", option, "-1"])
    assert exit_.value.code == 2
    assert f"argument {option}: must be at least 0, got -1" in capsys.readouterr().err


def test_a_timeline_file_neither_json_nor_png_is_refused_before_the_launch(tmp_path, capsys):
    out = tmp_path / "tl.txt"
    assert cli.main(["run", str(PROGRAMS / "vecadd.json"), "--quiet", "--timeline", str(out)]) == 2
    assert f"--timeline {out}: the timeline is written as FILE.json" in capsys.readouterr().err
    assert not out.exists()


def test_occupancy_of_a_manifest_says_it_takes_the_source_and_gives_the_command(capsys):
    assert cli.main(["occupancy", str(PROGRAMS / "vecadd.json"), "--block", "32"]) == 2
    err = capsys.readouterr().err
    assert "occupancy takes a kernel source (FILE.cu), not a manifest" in err
    assert f"gpuemu occupancy {PROGRAMS / 'vecadd.cu'} --kernel vecadd --block 256" in err


def test_occupancy_of_shared_memory_over_the_opt_in_limit_is_a_launch_error(capsys):
    # as a block over the thread limit: the launch refuses it, so it has no occupancy
    assert cli.main(["occupancy", str(PROGRAMS / "vecadd.cu"), "--block", "32",
                     "--shared", "9999999999"]) == 1
    assert "9999999999 bytes exceeds the opt-in limit of 232448 bytes" in capsys.readouterr().err
