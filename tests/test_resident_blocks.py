"""Blocks resident at the same time: a block that spins on another's flag
lets the blocks that would be resident with it run (machine/resident_blocks.py)."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu

BUDGET = 200_000

HANDSHAKE = r"""
extern "C" __global__ void k(int *data, int *flag, int *o, int producer) {
  if (blockIdx.x == producer) {
    if (threadIdx.x == 0) {
      data[0] = 42;
      __threadfence();
      atomicExch(flag, 1);
    }
  } else if (threadIdx.x == 0) {
    while (atomicAdd(flag, 0) == 0) ;
    __threadfence();
    o[0] = data[0];
  }
}
"""

CHAIN = r"""
extern "C" __global__ void k(int *val, int *flag, int *out) {
  int b = blockIdx.x;
  if (threadIdx.x == 0) {
    int prev = 0;
    if (b > 0) {
      while (atomicAdd(&flag[b - 1], 0) == 0) ;
      __threadfence();
      prev = val[b - 1];
    }
    val[b] = prev + 1;
    __threadfence();
    atomicExch(&flag[b], 1);
    out[b] = prev + 1;
  }
}
"""

PING_PONG = r"""
extern "C" __global__ void k(int *flag, int *o) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) {
      while (atomicAdd(&flag[1], 0) == 0) ;
      atomicExch(&flag[0], 1);
    } else {
      atomicExch(&flag[1], 1);
      while (atomicAdd(&flag[0], 0) == 0) ;
      o[0] = 7;
    }
  }
}
"""

NOBODY_SETS = r"""
extern "C" __global__ void k(int *flag) {
  if (threadIdx.x == 0)
    while (atomicAdd(flag, 0) == 0) ;
}
"""

LAST_SETS = r"""
extern "C" __global__ void k(int *flag) {
  if (threadIdx.x == 0) {
    if (blockIdx.x == gridDim.x - 1) atomicExch(flag, 1);
    else while (atomicAdd(flag, 0) == 0) ;
  }
}
"""

LONG_LOOP = r"""
extern "C" __global__ void k(int *ticket, int *o, int n) {
  int acc = 0;
  if (blockIdx.x == 0)
    for (int i = 0; i < n; i++) acc += i & 7;
  if (threadIdx.x == 0) {
    o[blockIdx.x] = atomicAdd(ticket, 1);
    o[4 + blockIdx.x] = acc;
  }
}
"""


def kernel(src: str):
    return gpuemu.RawModule(code=src).get_function("k")


def handshake(producer: int, **opts) -> int:
    o = np.zeros(1, np.int32)
    kernel(HANDSHAKE)(2, 32, (np.zeros(1, np.int32), np.zeros(1, np.int32), o, np.int32(producer)),
                      budget=BUDGET, **opts)
    return int(o[0])


def test_a_consumer_block_run_before_its_producer_gets_the_data():
    assert handshake(1) == 42


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_a_seeded_order_with_the_consumer_first_gets_the_data(seed):
    assert handshake(0, seed=seed) == 42


def test_the_handshake_in_check_mode_completes_with_no_finding():
    o = np.zeros(1, np.int32)
    launch = kernel(HANDSHAKE)(2, 32, (np.zeros(1, np.int32), np.zeros(1, np.int32), o, np.int32(1)),
                               budget=BUDGET, check=True)
    assert (int(o[0]), launch.findings) == (42, [])


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_a_chained_scan_completes_in_any_block_order(seed):
    val, flag, out = (np.zeros(8, np.int32) for _ in range(3))
    kernel(CHAIN)(8, 32, (val, flag, out), budget=BUDGET, seed=seed)
    assert out.tolist() == [1, 2, 3, 4, 5, 6, 7, 8]


def test_a_parked_block_resumes_after_the_spinning_one_answers_it():
    o = np.zeros(1, np.int32)
    kernel(PING_PONG)(2, 32, (np.zeros(2, np.int32), o), budget=BUDGET)
    assert o[0] == 7


def test_a_flag_nobody_sets_is_a_deadlock_at_the_spinning_loop():
    with pytest.raises(gpuemu.KernelError) as e:
        kernel(NOBODY_SETS)(2, 32, (np.zeros(1, np.int32),), budget=BUDGET)
    f = e.value.findings[0]
    assert (f.kind, f.line, f.thread) == ("deadlock", 4, (0, 0, 0))
    assert "no block can make progress" in f.message


def test_waiting_on_a_block_that_cannot_be_resident_names_it():
    # sm_90: 1024-thread blocks, 2048 threads per SM -> 2 blocks per SM x 132 SMs = 264
    with pytest.raises(gpuemu.KernelError) as e:
        kernel(LAST_SETS)(265, 1024, (np.zeros(1, np.int32),), budget=BUDGET)
    f = e.value.findings[0]
    assert (f.kind, f.block, f.line) == ("deadlock", (0, 0, 0), 5)
    assert ("waits on block (264, 0, 0), which is not resident alongside it: 264 blocks fit on the device"
            in f.message)


def test_the_same_wait_completes_when_every_block_fits():
    kernel(LAST_SETS)(264, 1024, (np.zeros(1, np.int32),), budget=BUDGET)


@pytest.mark.parametrize("check", [False, True])
def test_a_long_loop_that_does_not_spin_is_not_parked(check):
    # 40000 iterations: past the first looks (16384, 32768 back edges), each finds it moved on,
    # so block 0 runs to its end first and takes ticket 0, as before
    ticket, o = np.zeros(1, np.int32), np.zeros(8, np.int32)
    kernel(LONG_LOOP)(4, 32, (ticket, o, np.int32(40000)), check=check)
    assert o.tolist() == [0, 1, 2, 3, 40000 // 8 * 28, 0, 0, 0]


def test_progress_hears_of_every_block_when_the_rest_ran_resident():
    told = []
    kernel(CHAIN)(8, 32, tuple(np.zeros(8, np.int32) for _ in range(3)), budget=BUDGET, seed=3,
                  progress=told.append)
    assert sum(told) == 8


def test_blocks_after_a_long_loop_first_look_further_on(monkeypatch):
    # block 0 looks at 16384 back edges (a first sight) and 32768 (moved on: a loop, not a
    # spin), so later blocks first look at 65536, past their 40000: 2 looks, not 2 per block
    from gpuemu.machine.executor import LaunchRun
    looks = []
    spun = LaunchRun._spun

    def counted(self, *args, **kw):
        looks.append(1)
        return spun(self, *args, **kw)
    monkeypatch.setattr(LaunchRun, "_spun", counted)
    ticket, o = np.zeros(1, np.int32), np.zeros(8, np.int32)
    src = LONG_LOOP.replace("if (blockIdx.x == 0)\n    for", "for")
    kernel(src)(4, 32, (ticket, o, np.int32(40000)))
    assert len(looks) == 2 and o.tolist() == [0, 1, 2, 3] + [40000 // 8 * 28] * 4


# thread 0 waits for the block before to publish its running total, then publishes its own (OWN)
LOOK_BACK = r"""
  if (t == 0) {
    int prev = 0;
    if (b > 0) {
      while (atomicAdd(&flag[b - 1], 0) == 0) ;
      __threadfence();
      prev = val[b - 1];
    }
    val[b] = prev + OWN;
    __threadfence();
    atomicExch(&flag[b], 1);
    AFTER
  }"""

SHARED_SCAN = r"""
extern "C" __global__ void k(const int *in, int *val, int *flag, int *out) {
  __shared__ int part[64];
  __shared__ int prefix;
  __shared__ int unset[64];
  int b = blockIdx.x, t = threadIdx.x;
  part[t] = in[b * 64 + t];
  __syncthreads();
  for (int s = 32; s > 0; s >>= 1) { if (t < s) part[t] += part[t + s]; __syncthreads(); }""" + \
    LOOK_BACK.replace("OWN", "part[0]").replace("AFTER", "prefix = prev;") + r"""
  __syncthreads();
  out[b * 64 + t] = prefix + part[0] + READ_UNSET;
}
"""


def shared_scan(read_unset: bool, seed):
    """The look-back scan with shared memory in check mode: (findings, right sums)."""
    src = SHARED_SCAN.replace("READ_UNSET", "unset[t]" if read_unset else "0")
    inp = np.arange(6 * 64, dtype=np.int32)
    val, flag, out = np.zeros(6, np.int32), np.zeros(6, np.int32), np.zeros(6 * 64, np.int32)
    launch = kernel(src)(6, 64, (inp, val, flag, out), check=True, seed=seed, budget=BUDGET)
    right = np.array_equal(out, np.repeat(np.cumsum(inp.reshape(6, 64).sum(1)), 64))
    return launch.findings, right


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_parked_block_reading_shared_memory_it_wrote_before_parking_has_no_finding(seed):
    # blocks that wait on an earlier one are parked (these seeds run one first): their shared
    # records before and after the park are one block's, judged together
    assert shared_scan(False, seed) == ([], True)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_parked_block_reading_shared_memory_nobody_wrote_is_found(seed):
    # every thread of the 6 blocks, parked or not, reads unset[t]: 384 reads
    findings, _ = shared_scan(True, seed)
    assert [(f.kind, f.space, f.line, f.extra["object"], f.extra["count"]) for f in findings] == [
        ("uninitialized_read", "shared", 23, "the shared array 'unset' [260, 516)", 384)]


LOCAL_CHAIN = r"""
extern "C" __global__ void k(const int *in, int *val, int *flag, int *out, int n) {
  int b = blockIdx.x, t = threadIdx.x;
  int loc[16];
  for (int i = 0; i < n; i++) loc[i] = in[b * 64 + t] + i;""" + \
    LOOK_BACK.replace("OWN", "1").replace("\n    AFTER", "") + r"""
  int s = 0;
  for (int i = 0; i < 16; i++) s += loc[(i * 7 + t) % 16];
  out[b * 64 + t] = s;
}
"""


def local_chain(written: int, seed: int) -> list:
    """Each thread writes loc[0..written) and then reads all 16 (check mode): (kind, space, line, count)."""
    inp = np.arange(6 * 64, dtype=np.int32)
    args = (inp, np.zeros(6, np.int32), np.zeros(6, np.int32), np.zeros(6 * 64, np.int32), np.int32(written))
    launch = kernel(LOCAL_CHAIN)(6, 64, args, check=True, seed=seed, budget=BUDGET)
    return [(f.kind, f.space, f.line, f.extra["count"]) for f in launch.findings]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_parked_block_reading_a_local_array_it_wrote_before_parking_has_no_finding(seed):
    assert local_chain(16, seed) == []


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_parked_block_reading_a_local_element_nobody_wrote_is_found(seed):
    # loc[15] unwritten: one read by each of the 384 threads
    assert local_chain(15, seed) == [("uninitialized_read", "local", 18, 384)]


TICKETS = r"""
extern "C" __global__ void k(int *head, int *per, int n) {
  if (threadIdx.x == 0) {
    while (atomicAdd(head, 1) < n) atomicAdd(&per[blockIdx.x], 1);
  }
}
"""


@pytest.mark.parametrize("seed", [None, 1])
def test_a_loop_working_only_through_global_memory_is_not_parked(monkeypatch, seed):
    # a thread taking tickets keeps no state of its own across its back edge, so its
    # frames repeat; but global memory moves: no spin. The block that runs first takes
    # every ticket, as when blocks run one at a time, and no block is parked
    from gpuemu.machine import resident_blocks
    made = []
    real = resident_blocks.ResidentBlocks.__init__
    monkeypatch.setattr(resident_blocks.ResidentBlocks, "__init__",
                        lambda self, *a, **kw: made.append(1) or real(self, *a, **kw))
    k = gpuemu.RawModule(code=TICKETS).get_function("k")
    n = 60000
    per = np.zeros(8, np.int32)
    k((8,), (32,), (np.zeros(1, np.int32), per, np.int32(n)), budget=10**9, seed=seed)
    assert not made and sorted(per.tolist()) == [0] * 7 + [n]


def test_the_handshake_completes_in_timing_mode_with_the_consumer_first():
    # timing mode records the functional run: the consumer is parked there
    # too, so it is not stopped as a timeout while its producer never runs
    assert handshake(1, mode="timing") == 42


def test_a_chained_scan_completes_in_timing_mode():
    val, flag, out = (np.zeros(8, np.int32) for _ in range(3))
    launch = kernel(CHAIN)(8, 32, (val, flag, out), budget=BUDGET, mode="timing")
    assert out.tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert launch.stats["cycles"] > 0


def test_a_flag_nobody_sets_is_a_deadlock_in_timing_mode_too():
    with pytest.raises(gpuemu.KernelError) as err:
        kernel(NOBODY_SETS)(2, 32, (np.zeros(1, np.int32),), budget=BUDGET, mode="timing")
    assert err.value.findings[0].kind == "deadlock"
