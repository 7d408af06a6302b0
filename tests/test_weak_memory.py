"""memory_model="weak": unfenced global stores reach other blocks late."""
from __future__ import annotations

import re

import numpy as np
import pytest

import gpuemu
from gpuemu import manifest as mf
from gpuemu.cli import main
from gpuemu.jit import abi
from gpuemu.machine.weak_memory import held_bytes

from conftest import PROGRAMS

SEEDS = range(20)


def last_block_runs(name: str, **opts) -> list:
    """Manifest mismatches ([] = right) of programs/NAME.json on each seed."""
    m = mf.load(PROGRAMS / f"{name}.json")
    mod = mf.module_for(m)
    return [mf.check(mf.run(m, module=mod, seed=s, **opts)) for s in SEEDS]


def test_unfenced_last_block_sum_is_wrong_on_some_seeds():
    wrong = [s for s, bad in zip(SEEDS, last_block_runs("last_block_no_fence", memory_model="weak"))
             if bad]
    assert wrong


def test_fenced_last_block_sum_is_right_on_every_seed():
    assert last_block_runs("last_block_sum", memory_model="weak") == [[] for _ in SEEDS]


def test_default_model_gives_the_unfenced_sum_right_on_every_seed():
    assert last_block_runs("last_block_no_fence") == [[] for _ in SEEDS]


OWN_STORES = r"""
extern "C" __global__ void k(int* buf, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[i] = 10 * i + 1;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    out[i] = buf[j];
}
"""


def kernel(src: str):
    return gpuemu.RawModule(code=src).get_function("k")


def test_a_block_reads_back_its_own_unfenced_stores():
    k = kernel(OWN_STORES)
    buf, out = np.zeros(256, np.int32), np.zeros(256, np.int32)
    k(4, 64, (buf, out), memory_model="weak", seed=3)
    j = (np.arange(256) // 64) * 64 + 63 - np.arange(256) % 64
    np.testing.assert_array_equal(out, 10 * j + 1)


def test_the_end_of_the_kernel_makes_every_store_visible():
    k = kernel(OWN_STORES)
    for seed in range(5):
        buf, out = np.zeros(256, np.int32), np.zeros(256, np.int32)
        k(4, 64, (buf, out), memory_model="weak", seed=seed)
        np.testing.assert_array_equal(buf, 10 * np.arange(256) + 1)


def test_the_same_seed_gives_the_same_result():
    m = mf.load(PROGRAMS / "last_block_no_fence.json")
    mod = mf.module_for(m)
    runs = [[int(mf.run(m, module=mod, memory_model="weak", seed=s).outputs["out"][0])
             for s in range(8)] for _ in range(2)]
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1          # and the seeds do differ


def test_weak_mode_without_a_seed_is_reproducible():
    m = mf.load(PROGRAMS / "last_block_no_fence.json")
    mod = mf.module_for(m)
    got = {int(mf.run(m, module=mod, memory_model="weak").outputs["out"][0]) for _ in range(3)}
    assert len(got) == 1


def test_an_unknown_memory_model_is_a_launch_error():
    with pytest.raises(gpuemu.LaunchError, match="memory_model"):
        kernel(OWN_STORES)(1, 64, (np.zeros(64, np.int32), np.zeros(64, np.int32)),
                           memory_model="relaxed")


def test_weak_memory_in_timing_mode_is_a_launch_error():
    with pytest.raises(gpuemu.LaunchError, match="functional mode"):
        kernel(OWN_STORES)(1, 64, (np.zeros(64, np.int32), np.zeros(64, np.int32)),
                           memory_model="weak", mode="timing")


# ------------------------------------------------- the rule on trace records
OPS = np.array(["st", "atom", "sync_threadfence", "ld"])
SIZES = np.array([4, 4, 0, 4])
ST, ATOM, FENCE, LD = range(4)


def records(*reqs) -> np.ndarray:
    """Trace records of one lane each: (op id, address)."""
    r = np.zeros(len(reqs), abi.TRACE_DTYPE)
    for i, (op, addr) in enumerate(reqs):
        r[i]["instr"], r[i]["mask"], r[i]["addr"][0] = op, 1, addr
        r[i]["space"] = abi.SYNC_SPACE if op == FENCE else 0
    return r


def test_stores_before_the_last_fence_are_visible_and_later_ones_held():
    written, held = held_bytes(records((ST, 0), (FENCE, 0), (ST, 8)), OPS, SIZES)
    assert written.tolist() == [0, 1, 2, 3, 8, 9, 10, 11]
    assert held.tolist() == [8, 9, 10, 11]


def test_without_a_fence_every_plain_store_is_held_and_atomics_are_not():
    written, held = held_bytes(records((ST, 0), (ATOM, 16)), OPS, SIZES)
    assert held.tolist() == [0, 1, 2, 3]
    assert written.tolist() == [0, 1, 2, 3, 16, 17, 18, 19]


def test_an_atomic_after_a_store_to_the_same_bytes_is_not_held_back():
    _, held = held_bytes(records((ST, 0), (ATOM, 0), (ST, 4)), OPS, SIZES)
    assert held.tolist() == [4, 5, 6, 7]


def test_check_with_weak_memory_reports_differing_seeds(capsys):
    rc = main(["check", str(PROGRAMS / "last_block_no_fence.json"), "--memory-model", "weak",
               "--seeds", "10", "--tools", "memcheck"])
    out = capsys.readouterr().out
    assert rc == 1
    assert re.search(r"10 seeds: [1-9]\d* give outputs that differ", out)


def test_run_accepts_the_weak_memory_model(capsys):
    rc = main(["run", str(PROGRAMS / "last_block_sum.json"), "--memory-model", "weak",
               "--seed", "4", "--quiet"])
    assert rc == 0


MESSAGE = r"""
extern "C" __global__ void k(int *data, volatile int *flag, int *o) {
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      data[0] = 42;
      __threadfence();
      FLAG_STORE;
    }
  } else if (threadIdx.x == 0) {
    while (flag[0] == 0) ;
    __threadfence();
    o[0] = data[0];
  }
}
"""


def message_passing(store: str, seeds) -> list:
    """o[0] of the fenced message passing on each seed, in the weak model."""
    k = kernel(MESSAGE.replace("FLAG_STORE", store))
    got = []
    for seed in seeds:
        o = np.zeros(1, np.int32)
        k(2, 32, (np.zeros(1, np.int32), np.zeros(1, np.int32), o), budget=200_000, seed=seed,
          memory_model="weak")
        got.append(int(o[0]))
    return got


def test_a_flag_store_held_after_the_last_fence_reaches_a_spinning_consumer():
    # the flag store follows the producer's last fence: held for 0-3 further blocks (on
    # some seeds past the producer's end), it ages as the consumer spins
    assert message_passing("flag[0] = 1", range(6)) == [42] * 6


def test_an_atomic_flag_reaches_a_consumer_run_before_its_producer():
    # on some seeds the consumer block runs first and spins before the producer has run
    assert message_passing("atomicExch((int *)flag, 1)", range(10)) == [42] * 10
