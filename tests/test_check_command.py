"""`gpuemu check`: findings with their lines, exit status, --json, --seeds."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import gpuemu
from gpuemu.check.command import differing_seeds
from gpuemu.cli import main
from gpuemu import manifest as mf

ROOT = Path(__file__).resolve().parents[1]

RACY = r"""
extern "C" __global__ void k(int* out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    out[threadIdx.x] = s[63 - threadIdx.x];
}
"""

LAST_WARP_WINS = r"""
extern "C" __global__ void k(int* out) {
    if (threadIdx.x % 32 == 0) out[0] = threadIdx.x / 32;
}
"""

LAST_BLOCK_WINS = r"""
extern "C" __global__ void k(int* out) {
    if (threadIdx.x == 0) out[0] = blockIdx.x;
}
"""


def write(tmp_path, src) -> str:
    p = tmp_path / "k.cu"
    p.write_text(src)
    return str(p)


def test_check_of_a_racy_kernel_prints_the_race_and_exits_1(tmp_path, capsys):
    rc = main(["check", write(tmp_path, RACY), "--kernel", "k", "--block", "64",
               "--arg", "out:i32[64]"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "[race]" in out and "line 4" in out


def test_check_of_a_clean_manifest_exits_0(capsys):
    assert main(["check", str(ROOT / "programs" / "transpose_tiled33.json")]) == 0
    assert "0 finding(s)" in capsys.readouterr().out


def test_check_json_lists_findings_with_their_fields(tmp_path, capsys):
    main(["check", write(tmp_path, RACY), "--kernel", "k", "--block", "64",
          "--arg", "out:i32[64]", "--json", "--tools", "race"])
    d = json.loads(capsys.readouterr().out)
    assert d["tools"] == ["race"]
    f = d["findings"][0]
    assert f["kind"] == "race" and f["line"] == 4 and f["other_line"] == 5 and f["count"] >= 1


def test_seeds_reorder_warps_and_the_same_seed_gives_the_same_run():
    mod = gpuemu.RawModule(code=LAST_WARP_WINS)
    k = mod.get_function("k")
    got = []
    for seed in (1, 1, 2, 3, 4, 5):
        out = np.zeros(1, np.int32)
        k(1, 256, (out,), seed=seed)
        got.append(int(out[0]))
    assert got[0] == got[1]
    assert len(set(got)) > 1


def test_seeds_reorder_blocks_and_the_same_seed_gives_the_same_order():
    k = gpuemu.RawModule(code=LAST_BLOCK_WINS).get_function("k")
    got = []
    for seed in (7, 7, 1, 2, 3, 4):
        out = np.zeros(1, np.int32)
        k(16, 32, (out,), seed=seed)
        got.append(int(out[0]))
    assert got[0] == got[1]
    assert len(set(got)) > 1
    out = np.zeros(1, np.int32)
    k(16, 32, (out,))
    assert out[0] == 15           # without a seed: blocks in order, the last one wins


def test_check_seeds_reports_the_seeds_whose_outputs_differ(tmp_path):
    m = mf.Manifest(kernel="k", grid=(1, 1, 1), block=(256, 1, 1),
                    args=[mf.ArgSpec(name="out", kind="buffer", dtype=np.dtype("int32"), count=1, output=True)],
                    source=Path(write(tmp_path, LAST_WARP_WINS)))
    seeds = differing_seeds(m, "sm_90", 8)
    assert seeds and all(names == ["out"] for _, names in seeds)


def test_check_seeds_of_a_deterministic_kernel_reports_none():
    assert differing_seeds(mf.load(ROOT / "programs" / "reduce_shfl.json"), "sm_90", 4) == []


def test_check_of_a_manifest_refuses_the_options_only_a_cu_file_uses(capsys):
    # a manifest sets the kernel and its arguments: --kernel/--arg would be ignored
    assert main(["check", str(ROOT / "programs" / "vecadd.json"), "--kernel", "other",
                 "--arg", "i32:5"]) == 2
    assert "drop --kernel" in capsys.readouterr().err


CHAIN = r"""
extern "C" __global__ void k(int* flag, int* out) {
    int b = blockIdx.x;
    if (threadIdx.x == 0) {
        if (b > 0) { while (atomicAdd(&flag[b - 1], 0) == 0) { } }
        atomicExch(&flag[b], 1);
        out[b] = b;
    }
}
"""


def test_check_seeds_names_the_finding_that_stopped_a_seed(tmp_path, capsys):
    # block b waits for block b-1: blocks run one at a time, so a seed that
    # runs a block before its predecessor spins past the budget
    rc = main(["check", write(tmp_path, CHAIN), "--kernel", "k", "--grid", "4", "--block", "32",
               "--arg", "i32[4]=zeros", "--arg", "out:i32[4]", "--budget", "2000", "--seeds", "4"])
    out = capsys.readouterr().out
    stopped = [ln for ln in out.splitlines() if ln.lstrip().startswith("seed ")]
    assert rc == 1 and stopped
    assert all("stopped: [timeout] k block" in ln and "line 5: the loop at line 5 ran past" in ln
               for ln in stopped), out
