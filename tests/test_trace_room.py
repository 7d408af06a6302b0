"""A warp that stops because the trace is full (EV_TRACE_FULL) gets room
(LaunchRun.trace_room: the records so far charged, or a trace twice as long
where one statement needs more than it holds) and goes on: a launch whose
trace fills again and again counts what one whose trace holds it all counts,
through the native block loop and the Python one."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
from gpuemu.machine import executor

SRC = r"""
extern "C" __global__ void k(float *out, const float *x, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[(i * 7) % n];
    __syncthreads();
    out[i] = s[(threadIdx.x * 3) % 256] + x[i];
}
"""


def _launch(options: dict, k=None) -> tuple:
    k = k or gpuemu.RawModule(code=SRC).get_function("k")
    n = 2048
    x = gpuemu.asarray(np.arange(n, dtype=np.float32))
    out = gpuemu.zeros(n, np.float32)
    r = k((n // 256,), (256,), (out, x, np.int32(n)), stats=True, **options)
    return dict(r.stats), {ln: dict(c) for ln, c in r.stats_by_line.items()}, out.get().tolist()


@pytest.mark.parametrize("options", [{}, {"seed": 3}], ids=["native loop", "python loop"])
@pytest.mark.parametrize("capacity", [1, 40])
def test_a_launch_whose_trace_fills_counts_as_one_whose_trace_holds_it_all(monkeypatch, options, capacity):
    whole = _launch(options)
    trace_room = executor.LaunchRun.trace_room
    room = []                            # what trace_room did: the trace was full that often
    monkeypatch.setattr(executor.LaunchRun, "trace_room", lambda run: room.append(
        "drain" if run.ctx[executor.abi.C_TRACE_LEN] else "grow") or trace_room(run))
    monkeypatch.setattr(executor, "TRACE_CAPACITY", capacity)
    assert _launch(options) == whole
    assert "drain" in room and ("grow" in room) == (capacity == 1)


@pytest.mark.parametrize("capacity", [1, 40])
def test_two_workers_whose_batches_fill_count_as_one_worker_whose_trace_holds_it_all(monkeypatch, capacity):
    # the workers' batches (worker_copy.WORKER_TRACE_RECORDS) fill, or one statement needs more
    from gpuemu.machine import block_workers, worker_copy
    whole = _launch({})
    monkeypatch.setattr(block_workers, "SERIAL_BELOW", {True: 0.0, False: 0.0})   # (on the workers)
    monkeypatch.setattr(worker_copy, "WORKER_TRACE_RECORDS", capacity)
    k = gpuemu.RawModule(code=SRC).get_function("k")
    for _ in range(3):                   # (a kept run's worker copies, renewed)
        assert _launch({"workers": 2}, k) == whole
