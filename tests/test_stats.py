"""Per-launch counters: totals and per-line sums of batches, however they are held back."""
import numpy as np

from gpuemu import stats as stats_mod
from gpuemu.stats import COUNTERS, Stats


def test_add_lines_sums_per_line_and_in_total():
    s = Stats()
    s.add_lines("global_load_requests", np.array([3, 5, 3]), np.array([1, 2, 4]))
    s.add_lines("global_load_sectors", np.array([5]), np.array([7]))
    s.add_lines("global_load_requests", np.array([5]), np.array([10]))
    assert s.totals["global_load_requests"] == 17
    assert s.lines_dict() == {3: {"global_load_requests": 5},
                              5: {"global_load_requests": 12, "global_load_sectors": 7}}


def test_a_line_whose_sum_is_zero_is_not_listed_but_the_counter_is():
    s = Stats()
    s.add_lines("shared_bank_conflicts", np.array([4, 4]), np.array([0, 0]))
    assert s.totals["shared_bank_conflicts"] == 0 and s.lines_dict() == {}


def test_empty_batch_adds_no_counter():
    s = Stats()
    s.add_lines("l1_hits", np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert "l1_hits" not in s.totals


def test_single_adds_and_batches_mix_in_order():
    s = Stats()
    s.add_lines("cycles", np.array([1]), np.array([5]))
    s.add("cycles", 3, line=1)
    s.add("cycles", 2)
    assert s.totals["cycles"] == 10 and s.by_line[1]["cycles"] == 8


def test_lines_outside_the_indexed_range_are_summed_too():
    s = Stats()
    s.add_lines("fences", np.array([-1, 1 << 40, -1]), np.array([1, 2, 3]))
    assert s.lines_dict() == {-1: {"fences": 4}, 1 << 40: {"fences": 2}}
    assert s.totals["fences"] == 6


def test_sums_are_exact_beyond_float_precision():
    s = Stats()
    big = (1 << 53) + 1
    s.add_lines("cycles", np.array([2, 2]), np.array([big, 1]))
    assert s.by_line[2]["cycles"] == big + 1


def test_batches_held_past_the_limit_are_summed_on_the_way(monkeypatch):
    monkeypatch.setattr(stats_mod, "_PENDING_MAX", 4)
    s = Stats()
    for _ in range(5):
        s.add_lines("barriers", np.array([1, 2, 3]), np.array([1, 1, 1]))
    assert s.totals["barriers"] == 15 and s.by_line[2]["barriers"] == 5


def test_as_dict_lists_every_counter_name():
    s = Stats()
    s.add_lines("shared_conflict_ways_2", np.array([1]), np.array([1]))
    d = s.as_dict()
    assert set(COUNTERS) <= set(d) and d["shared_conflict_ways_2"] == 1 and d["cycles"] == 0


def test_a_long_batch_sums_like_short_ones():
    s = Stats()
    lines = np.arange(10000) % 7
    values = np.arange(10000, dtype=np.int64) - 3000
    s.add_lines("cycles", lines, values)
    want = {ln: int(values[lines == ln].sum()) for ln in range(7)}
    assert {ln: c["cycles"] for ln, c in s.lines_dict().items()} == {k: v for k, v in want.items() if v}
    assert s.totals["cycles"] == int(values.sum())


def test_negative_values_sum_exactly():
    s = Stats()
    s.add_lines("cycles", np.array([3, 3, 3]), np.array([-(1 << 40) - 1, 5, -(1 << 53)]))
    assert s.by_line[3]["cycles"] == -(1 << 40) - 1 + 5 - (1 << 53)


def test_merge_adds_held_back_and_summed_counters_alike():
    a, b = Stats(), Stats()
    a.add_lines("barriers", np.array([1]), np.array([2]))
    b.add_lines("fences", np.array([1, 4]), np.array([3, 5]))
    b.add("cycles", 7)                                     # summed at once in b
    b.add_lines("barriers", np.array([1]), np.array([10]))
    a.merge(b)
    assert a.lines_dict() == {1: {"barriers": 12, "fences": 3}, 4: {"fences": 5}}
    assert a.totals["cycles"] == 7 and a.totals["fences"] == 8


def _eager_and_deferred(steps) -> tuple:
    """Two Stats given the same steps, one adding each named batch at once
    (add_named / add_sums of a table), the other deferring it."""
    eager, lazy = Stats(), Stats()
    for step in steps:
        kind, args = step[0], step[1:]
        if kind == "named":
            names, rows = args
            eager.add_named(names, rows.tolist())
            lazy.defer_named(names, rows.copy())
        elif kind == "table":
            names, table = args
            eager.add_named(names, [(c, r, v) for c, col in enumerate(table.T.tolist())
                                    for r, v in enumerate(col) if v])
            lazy.defer_table(names, table.copy())
        else:
            getattr(eager, kind)(*args)
            getattr(lazy, kind)(*args)
    return eager, lazy


def test_new_stats_share_nothing_and_one_takes_anothers_held_batches():
    # a Stats makes its held-back batches' containers when first added to (one per kept launch)
    fresh, held, untouched = Stats(), Stats(), Stats()
    held.add_lines("fences", np.array([1, 4]), np.array([3, 5]))
    fresh.merge(held)
    fresh.add_lines("barriers", np.array([4]), np.array([2]))
    assert fresh.lines_dict() == {1: {"fences": 3}, 4: {"fences": 5, "barriers": 2}}
    assert held.lines_dict() == {1: {"fences": 3}, 4: {"fences": 5}}
    assert untouched.empty and untouched.lines_dict() == {} and Stats().empty


def test_deferred_sums_read_as_the_sums_added_at_once_in_the_same_order():
    names = ["global_load_requests", "memory_cycles", "shared_conflict_ways_3"]
    steps = [("add_lines", "l1_hits", np.array([2, 2]), np.array([1, 4])),
             ("named", names, np.array([[0, 7, 3], [2, 7, 1], [1, 5, 0], [1, 9, 2]])),
             ("add", "cycles", 12),
             ("table", ("warp_instructions", "barriers"), np.array([[0, 0], [4, 1], [0, 2]])),
             ("add", "fences", 2, 1)]
    eager, lazy = _eager_and_deferred(steps)
    assert list(lazy.as_dict()) == list(eager.as_dict()) and lazy.as_dict() == eager.as_dict()
    assert lazy.lines_dict() == eager.lines_dict()
    assert [list(c) for c in lazy.lines_dict().values()] == [list(c) for c in eager.lines_dict().values()]


def test_get_reads_a_total_without_adding_the_deferred_sums_that_lack_it():
    s = Stats()
    s.add("page_faults", 3)
    s.defer_named(["global_load_requests"], np.array([[0, 4, 9]]))
    s.add("cycles", 40)
    assert (s.get("cycles"), s.get("page_faults"), s.get("managed_migrated_bytes")) == (40, 3, 0)
    assert s._log                            # still deferred
    assert s.get("global_load_requests") == 9 and not s._log
    assert s.totals["cycles"] == 40 and s.by_line == {4: {"global_load_requests": 9}}


def test_deferred_rows_given_as_the_first_of_a_flat_array_read_as_those_rows():
    # launch_sums' settle hands its rows and kept requests over in one copy: the rows come first
    names = ["global_load_requests", "memory_cycles"]
    rows = np.array([[0, 7, 3], [1, 7, 11], [0, 2, 4]])
    flat, whole = Stats(), Stats()
    flat.defer_named(names, np.concatenate([rows.reshape(-1), [99, 98, 97, 96]]), frozenset(names), count=3)
    whole.defer_named(names, rows)
    assert flat.get("cycles") == 0 and flat._log       # (the set given: memory_cycles held, cycles not)
    assert flat.as_dict() == whole.as_dict() and flat.lines_dict() == whole.lines_dict()


def test_deferred_sums_given_as_bytes_read_as_the_arrays_they_copy():
    # a launch's end copies its settled rows and per-line table as bytes (memoryview.tobytes)
    names, table_names = ["global_load_requests", "memory_cycles"], ("warp_instructions", "barriers")
    rows = np.array([[0, 7, 3], [1, 7, 11], [0, 2, 4], [99, 98, 97]])
    table = np.array([[0, 0], [4, 1], [0, 2]])
    as_bytes, arrays = Stats(), Stats()
    as_bytes.defer_named(names, rows.tobytes(), frozenset(names), count=3)
    as_bytes.defer_table(table_names, table.tobytes())
    arrays.defer_named(names, rows[:3])
    arrays.defer_table(table_names, table)
    assert as_bytes.as_dict() == arrays.as_dict() and as_bytes.lines_dict() == arrays.lines_dict()


def test_a_launchs_end_deferred_in_one_call_reads_as_each_deferred_in_turn():
    names, table_names = ["global_load_requests", "memory_cycles"], ("warp_instructions", "barriers")
    rows, table = np.array([[0, 7, 3], [1, 7, 11], [0, 2, 4]]), np.array([[0, 0], [4, 1], [0, 2]])
    for before in ((), (("add_lines", "l1_hits", np.array([2]), np.array([5])),)):
        one, each = Stats(), Stats()
        for st in (one, each):
            for kind, *args in before:
                getattr(st, kind)(*args)
        one.defer_end((names, rows.tobytes(), None, 3), (table_names, table.tobytes(), None), ("cycles", 40))
        each.defer_named(names, rows.copy())
        each.defer_table(table_names, table.copy())
        each.add("cycles", 40)
        assert one.get("cycles") == 40
        assert list(one.as_dict()) == list(each.as_dict()) and one.as_dict() == each.as_dict()
        assert one.lines_dict() == each.lines_dict()


def test_sums_added_after_deferred_ones_come_after_them():
    s = Stats()
    s.defer_named(["l2_hits"], np.array([[0, 3, 5]]))
    s.add_lines("l1_hits", np.array([3]), np.array([2]))
    assert list(s.by_line[3]) == ["l2_hits", "l1_hits"]


def test_a_deferred_value_compares_and_prints_as_the_value_it_makes():
    made = []

    def make():
        made.append(1)
        return {"cycles": 3}
    d = stats_mod.Deferred(make)
    assert d == {"cycles": 3} and d == stats_mod.Deferred(make) and repr(d) == "{'cycles': 3}"


def test_a_deferred_field_is_made_once_when_first_read_and_then_kept():
    class Holder:
        value = stats_mod.deferred_field("value")
    made = []
    h = Holder()
    h.value = stats_mod.Deferred(lambda: made.append(1) or {"n": len(made)})
    assert made == []
    first = h.value
    assert first == {"n": 1} and h.value is first and made == [1]
    h.value = {"n": 7}
    assert h.value == {"n": 7}
