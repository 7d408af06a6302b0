"""Timing mode through the API and the command line: same results and
counters as functional mode, plus cycles, IPC, stalls and a timeline."""
from __future__ import annotations

import json

import numpy as np
import pytest

import gpuemu
from conftest import PROGRAMS, run_cli
from gpuemu.timing.warp_policy import WarpPolicy
from gpuemu.timing.warp_trace import MEM

SRC = (PROGRAMS / "transpose_tiled33.cu").read_text()


@pytest.fixture(scope="module")
def kernel():
    return gpuemu.RawModule(code=SRC).get_function("transpose_tiled33")


def launch(kernel, n=128, **kw):
    a = np.random.default_rng(1).random((n, n), dtype=np.float32)
    out = np.zeros((n, n), np.float32)
    res = kernel((n // 32, n // 32), (32, 8), (out, a, np.int32(n)), **kw)
    return res, out, a


def test_results_and_counters_equal_functional_mode(kernel):
    f, out_f, a = launch(kernel)
    t, out_t, _ = launch(kernel, mode="timing")
    assert np.array_equal(out_t, a.T) and np.array_equal(out_f, out_t)
    for name, v in f.stats.items():
        if name != "cycles":
            assert t.stats[name] == v, name
    assert t.stats["functional_cycles"] == f.stats["cycles"]
    assert t.stats["cycles"] == t.timing.cycles > 0


def test_every_warp_instruction_and_request_is_replayed(kernel):
    t, _, _ = launch(kernel, mode="timing")
    p = t.timing.programs
    assert p.instructions.sum() == t.stats["warp_instructions"] == t.timing.instructions
    requests = sum(t.stats[k] for k in ("global_load_requests", "global_store_requests",
                                        "shared_load_requests", "shared_store_requests"))
    assert np.count_nonzero(p.kind == MEM) == requests


def test_ipc_and_issue_slot_use_follow_from_cycles(kernel):
    t, _, _ = launch(kernel, mode="timing")
    r = t.timing
    assert r.ipc == pytest.approx(t.stats["warp_instructions"] / r.cycles)
    used = r.sm_cycles[r.sm_cycles > 0]
    assert r.issue_slot_use == pytest.approx(r.instructions / (used.sum() * 4))
    assert 0 < r.issue_slot_use <= 1


def test_stall_cycles_by_line_add_up_to_the_stall_totals(kernel):
    t, _, _ = launch(kernel, mode="timing")
    for reason, total in t.timing.stalls.items():
        per_line = sum(c.get(f"stall_{reason}", 0) for c in t.stats_by_line.values())
        assert per_line == total == t.stats.get(f"stall_{reason}", 0)
    # the barrier of line 11 is where warps wait for their block
    assert t.stats_by_line[11]["stall_barrier"] == t.timing.stalls["barrier"] > 0


def test_a_user_policy_class_runs_without_touching_the_machine(kernel):
    class YoungestFirst(WarpPolicy):
        name = "youngest"

        def pick(self, ready, sched):
            return max(ready, key=lambda w: w.age)

    t, out, a = launch(kernel, mode="timing", scheduler=YoungestFirst)
    assert np.array_equal(out, a.T)
    assert t.timing.policy == "youngest" and t.timing.cycles > 0


def test_unknown_policy_and_mode_are_named(kernel):
    with pytest.raises(ValueError, match="unknown warp scheduler 'nope'"):
        launch(kernel, mode="timing", scheduler="nope")
    with pytest.raises(gpuemu.LaunchError, match="mode must be"):
        launch(kernel, mode="fast")


def test_the_carveout_limits_resident_blocks(kernel):
    big = r'''
    extern "C" __global__ void k(float *o)
    {
        __shared__ float s[8192];
        s[threadIdx.x] = threadIdx.x;
        __syncthreads();
        o[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
    }'''
    k = gpuemu.RawModule(code=big).get_function("k")
    out = np.zeros(64 * 32, np.float32)
    full = k((64,), (32,), (out,), mode="timing")
    k.preferred_carveout = 16          # 16% of 228 KB: 36 KB, one 33 KB block per SM
    small = k((64,), (32,), (out,), mode="timing")
    assert full.timing.blocks_per_sm == 6 and small.timing.blocks_per_sm == 1


def test_chrome_trace_has_one_event_per_warp(kernel, tmp_path):
    t, _, _ = launch(kernel, mode="timing")
    doc = t.timing.chrome_trace(tmp_path / "t.json")
    warps = [e for e in doc["traceEvents"] if e.get("cat") == "warp"]
    assert len(warps) == 16 * 8
    assert max(e["ts"] + e["dur"] for e in warps) == t.timing.cycles
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]


def test_timeline_png_is_written(kernel, tmp_path):
    t, _, _ = launch(kernel, mode="timing")
    t.timing.timeline_png(tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_timing_json(tmp_path):
    r = run_cli("run", str(PROGRAMS / "transpose_tiled33.json"), "--timing", "--scheduler", "lrr",
                "--json", "--timeline", str(tmp_path / "t.json"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["timing"]["policy"] == "lrr"
    assert out["stats"]["cycles"] == out["timing"]["cycles"]
    assert (tmp_path / "t.json").is_file()


def test_a_user_block_policy_decides_the_sm(kernel):
    from gpuemu.timing.block_policy import BlockPolicy

    class Pack(BlockPolicy):
        """The lowest-numbered SM with room: fills SM 0, then SM 1, ..."""
        name = "pack"

        def pick_sm(self, free, resident):
            return int(np.argmax(free))

    packed, out, a = launch(kernel, mode="timing", block_scheduler=Pack)
    spread, _, _ = launch(kernel, mode="timing", block_scheduler="least_loaded")
    assert np.array_equal(out, a.T)
    # 16 blocks, 8 resident per SM: two SMs when packed, 16 when spread
    assert packed.timing.result.num_sms_used == 2 and spread.timing.result.num_sms_used == 16
    assert packed.timing.cycles > spread.timing.cycles


def test_a_block_policy_choosing_a_full_sm_is_named(kernel):
    from gpuemu.timing.block_policy import BlockPolicy

    class AlwaysSM0(BlockPolicy):
        def pick_sm(self, free, resident):
            return 0

    with pytest.raises(ValueError, match="chose SM 0, which has no room"):
        launch(kernel, mode="timing", block_scheduler=AlwaysSM0)


def _programs_fields(p):
    return {k: getattr(p, k) for k in ("start", "end", "at", "kind", "pipe", "cost", "latency",
                                       "use", "line", "instructions")}


@pytest.mark.parametrize("capacity", [1, 3, 1 << 16])
def test_the_native_block_loop_records_the_stop_points_of_the_python_loop(kernel, monkeypatch, capacity):
    # the same stop points whether barriers and exits come from the native block loop
    # (its event buffer emptied when full, at any capacity) or from the Python loop
    from gpuemu.machine import block_runner
    from gpuemu.timing import timing_mode, warp_trace

    real = warp_trace.TraceRecorder
    monkeypatch.setattr(timing_mode, "TraceRecorder",
                        lambda nw, nb: real(nw, nb, event_capacity=capacity))
    native, _, _ = launch(kernel, mode="timing")
    monkeypatch.setattr(block_runner, "usable", lambda run: False)
    python, _, _ = launch(kernel, mode="timing")
    a, b = _programs_fields(native.timing.programs), _programs_fields(python.timing.programs)
    assert (native.timing.programs.kind == warp_trace.BARRIER).sum() > 0
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert native.timing.cycles == python.timing.cycles


def test_the_recorders_per_kernel_tables_are_bounded():
    # one table per kernel's instruction list, not one per list ever seen
    from types import SimpleNamespace

    from gpuemu.timing import warp_trace
    lists = [[SimpleNamespace(id=0, op="ld", line=3, use_distance=2)]
             for _ in range(warp_trace._TABLES_MAX + 10)]
    for instrs in lists:
        use, line = warp_trace._instr_table(instrs)
        assert use.tolist() == [2] and line.tolist() == [3]
    assert len(warp_trace._TABLES) <= warp_trace._TABLES_MAX
