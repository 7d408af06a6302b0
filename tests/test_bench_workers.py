"""benchmarks/bench_workers.py: the launches it measures are counted as
they run (threads and blocks from the launch's own shape). No timing asserts."""
from __future__ import annotations

import math
import sys
import time

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_workers  # noqa: E402


def _launched_threads(bench) -> int:
    launch = bench.launch(stats=False)
    return math.prod(launch.grid) * math.prod(launch.block)


def test_the_transpose_runs_a_quarter_of_its_elements_as_threads():
    # 64x64: 2x2 tiles of 32x32, one 32x8 block each (a thread moves 4 elements)
    b = bench_workers._transpose(64)
    assert (b.blocks, b.tpb, b.threads) == (4, 256, 64 * 64 // 4)
    assert _launched_threads(b) == b.threads


def test_vecadd_runs_one_thread_per_element_in_blocks_of_256():
    b = bench_workers._vecadd(1024)
    assert (b.blocks, b.tpb, b.threads) == (4, 256, 1024)
    assert _launched_threads(b) == b.threads


def test_the_median_of_paired_ratios_takes_each_pair_s_ratio_not_the_ratio_of_the_medians():
    # pairs (2, 1), (4, 1), (9, 3): ratios 2, 4, 3 -> 3; the medians' ratio would be 4 / 1
    assert bench_workers.paired_ratio([2.0, 4.0, 9.0], [1.0, 1.0, 3.0]) == 3.0


def test_each_n_thread_run_follows_its_own_one_thread_run_for_gpuemu_and_the_ceiling():
    # launch 1, launch N, ceiling 1, ceiling N per turn: neither N-thread run follows the other's
    order = []
    ts, cs = bench_workers.timed_turns(lambda w: order.append(("launch", w)),
                                       lambda w: order.append(("ceiling", w)), 2, 3)
    assert order == [("launch", 1), ("launch", 2), ("ceiling", 1), ("ceiling", 2)] * 3
    assert [len(ts[w]) for w in (1, 2)] == [3, 3] and [len(cs[w]) for w in (1, 2)] == [3, 3]


def test_the_ceiling_is_as_long_as_a_warm_launch_not_the_first_one_timed(monkeypatch):
    # the first launches of a kernel are cold (the launch gate compiled): 45 ms, then 2.5
    times = iter([45, 2.5, 3, 2.5, 2.6])
    clock = [0.0]

    def launch():
        clock[0] += next(times)
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    assert bench_workers.warm_seconds(launch, 5) == 2.5


def test_the_steady_state_runs_blocks_back_to_back_and_drops_each_block_s_first_launches():
    order = []
    got = bench_workers.steady_turns(lambda w: order.append(w), 2, 2, block=4, skip=1)
    assert order == [1, 1, 1, 1, 2, 2, 2, 2] * 2
    assert [len(b) for w in (1, 2) for b in got[w]] == [3, 3, 3, 3]


def test_the_steady_ratio_is_the_median_of_the_rounds_ratios_of_block_medians():
    # rounds: 1-worker blocks' medians 4, 6, 9; 2-worker 2, 2, 3: ratios 2, 3, 3 -> 3
    got = {1: [[4.0, 5.0, 3.0], [6.0, 6.0, 7.0], [9.0, 9.0, 9.0]],
           2: [[2.0, 2.0, 2.0], [2.0, 1.0, 3.0], [3.0, 3.0, 4.0]]}
    assert bench_workers.steady_ratio(got, 2) == 3.0


def test_the_cpu_table_times_both_worker_counts_in_turns():
    calls = []
    got = bench_workers.cpu_of_launches(lambda **opt: calls.append(opt["workers"]), 2, 3)
    assert calls == [1, 2] + [1, 2] * 3
    assert [len(got[w]) for w in (1, 2)] == [3, 3]
    assert all(len(row) == 4 and row[2] >= 0 for w in (1, 2) for row in got[w])


def test_the_cpu_table_s_serial_part_is_the_calling_thread_s_cpu_outside_the_hand_out_and_the_join(
        monkeypatch):
    from gpuemu.machine import worker_threads
    clock = [0.0]                             # the calling thread's CPU clock, moved by the launch
    monkeypatch.setattr(time, "thread_time", lambda: clock[0])

    def launch(**opt):
        clock[0] += 1                         # serial, before the hand-out
        if opt["workers"] > 1:
            task = worker_threads.threads(1).submit(lambda: None)
            clock[0] += 5                     # the calling thread's share of the blocks
            task.result()
        clock[0] += 2                         # serial, after the join
    got = bench_workers.cpu_of_launches(launch, 2, 3)
    assert [row[1] for row in got[1]] == [row[3] for row in got[1]] == [3] * 3    # nothing handed out
    assert [(row[1], row[3]) for row in got[2]] == [(8, 3)] * 3


def test_the_calls_are_counted_on_the_calling_thread_and_on_the_others():
    import threading

    def f():
        pass

    def launch(**opt):
        f()
        f()
        t = threading.Thread(target=f)
        t.start()
        t.join()
    assert bench_workers.calls_per_launch(launch, 2, 3, where=lambda code: code is f.__code__) == (2.0, 1.0)


def test_the_phase_clock_times_one_worker_s_native_charge_as_its_prepare_and_apply_steps():
    import threading
    b = bench_workers._vecadd(1 << 18)           # 256K threads: several trace batches (the last one
    #                                              charged with the launch's end, charge_last)
    plain = b.launch(workers=1)
    with bench_workers._phase_clock() as spent:
        split = b.launch(workers=1)
    mine = spent[threading.main_thread().ident]
    assert mine["prepare"][0] > 0 and mine["apply"][0] > 0
    assert split.stats == plain.stats and split.stats_by_line == plain.stats_by_line


def test_the_phase_clock_counts_an_apply_inside_a_range_also_as_in_range():
    import threading
    from types import SimpleNamespace
    from gpuemu.machine import worker_copy
    from gpuemu.memory.native_batch import NativeBatch
    nb = NativeBatch.__new__(NativeBatch)
    nb._n = 0                                    # (an empty batch: apply has nothing to charge)
    run = SimpleNamespace(findings=[], want_stats=False, _run_batch=lambda blocks: NativeBatch.apply(nb))
    worker = SimpleNamespace(run=run, chunks=[], held=[], records=0)
    with bench_workers._phase_clock() as spent:
        NativeBatch.apply(nb)                    # outside a range
        worker_copy.Worker.run_batch(worker, range(1))
    mine = spent[threading.get_ident()]
    assert set(mine) == {"apply", "apply_in_range", "range"}
    assert mine["apply"][0] >= mine["apply_in_range"][0] >= 0


def test_the_phase_clock_counts_an_apply_after_a_range_as_apply_alone():
    import threading
    from types import SimpleNamespace
    from gpuemu.machine import worker_copy
    from gpuemu.memory.native_batch import NativeBatch
    nb = NativeBatch.__new__(NativeBatch)
    nb._n = 0
    run = SimpleNamespace(findings=[], want_stats=False, _run_batch=lambda blocks: NativeBatch.apply(nb))
    worker = SimpleNamespace(run=run, chunks=[], held=[], records=0)
    with bench_workers._phase_clock() as spent:
        worker_copy.Worker.run_batch(worker, range(1))
        mine = spent[threading.get_ident()]
        in_range, applied = list(mine["apply_in_range"]), list(mine["apply"])
        NativeBatch.apply(nb)                    # the range is over: not inside one
    assert mine["apply_in_range"] == in_range and mine["apply"][1] > applied[1]


def test_split_phases_counts_a_worker_s_apply_inside_its_range_once():
    import threading
    ms = lambda v: [v / 1e3, v / 1e3]            # noqa: E731  (cpu, wall) seconds of v ms
    spent = {threading.main_thread().ident: {"native": ms(4), "prepare": ms(2), "apply": ms(3)},
             -1: {"range": ms(10), "native": ms(4), "prepare": ms(3), "apply": ms(5), "apply_in_range": ms(2)}}
    got = bench_workers.split_phases(0.012, 0.011, spent)
    assert math.isclose(got["workers_other"], 10 - 4 - 3 - 2)
    assert math.isclose(got["all_cpu"], 11 + 10 + (5 - 2))
    assert math.isclose(got["workers_apply"], 5) and math.isclose(got["main_other"], 11 - 4 - 2 - 3)


def test_rounds_measure_every_cell_each_round_and_count_the_rounds_at_the_target(monkeypatch, capsys):
    # a fake kernel whose two-worker launch is 1.8x one worker's in round 1 and 1.6x in round 2:
    # the summary gives least / median / largest and 1 of 2 rounds at 1.7x
    speeds = iter([1.8, 1.6])
    cells = []

    def cell(launch, n, repeats, stats):
        got = next(speeds) if stats else 2.0
        cells.append(stats)
        return {"min": {1: 1.0, n: 1.0 / got}, "median": {1: 1.0, n: 1.0 / got},
                "paired": got, "ceiling": 2.0, "share": got / 2.0}
    monkeypatch.setattr(bench_workers, "speed_cell", cell)
    monkeypatch.setattr(bench_workers, "steady_turns", lambda launch, n, rounds: {1: [[2.0]], n: [[1.0]]})
    monkeypatch.setattr(bench_workers, "_same_at", lambda *a: "identical")
    bench = bench_workers.Bench("fake", 1, 32, lambda **kw: None, lambda: None, None)
    monkeypatch.setattr(bench_workers, "_kernels", lambda args: iter([bench]))
    args = type("Args", (), {"workers": 2, "target": 1.7, "repeats": 5, "rounds": 2})()
    bench_workers._rounds_table(args)
    out = capsys.readouterr().out
    assert cells == [False, True, False, True]            # every cell, each round
    assert "| fake | on | 1.60 / 1.70 / 1.80x | 1 of 2 | 2.00 / 2.00 / 2.00x | 2 of 2 | 2.00x | 0.85 |" in out
    assert "| fake | off | 2.00 / 2.00 / 2.00x | 2 of 2 |" in out
