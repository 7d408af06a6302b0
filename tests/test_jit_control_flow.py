"""Masks and reconvergence: if/else, loops with break/continue, return, ?:, switch."""
from __future__ import annotations

import numpy as np

from kernel_launch import launch


def test_if_else_divergence_gives_each_lane_its_side():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        if (t % 3 == 0) out[t] = t * 10;
        else if (t % 3 == 1) out[t] = -t;
        else out[t] = 7;
    }"""
    out = np.zeros(64, np.int32)
    launch(src, "k", 1, 64, out)
    t = np.arange(64)
    np.testing.assert_array_equal(out, np.where(t % 3 == 0, t * 10, np.where(t % 3 == 1, -t, 7)))


def test_divergent_branch_is_counted_once_per_warp_that_splits():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        if (t < 40) out[t] = 1;
    }"""
    out = np.zeros(96, np.int32)
    launch_ = launch(src, "k", 1, 96, out)
    # warp 0: all lanes true, warp 1: lanes 0-7 true (splits), warp 2: none true
    assert launch_.stats["divergent_branches"] == 1
    assert launch_.stats_by_line[4]["divergent_branches"] == 1


def test_nested_loops_with_break_and_continue_match_python():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        int acc = 0;
        for (int i = 0; i < 10; i++) {
            if (i == t % 7) continue;
            int j = 0;
            while (true) {
                if (j > i) break;
                if ((i + j + t) % 5 == 0) { j++; continue; }
                acc += i * j + 1;
                j++;
            }
            if (acc > 100 + t) break;
        }
        out[t] = acc;
    }"""

    def ref(t):
        acc = 0
        for i in range(10):
            if i == t % 7:
                continue
            j = 0
            while True:
                if j > i:
                    break
                if (i + j + t) % 5 == 0:
                    j += 1
                    continue
                acc += i * j + 1
                j += 1
            if acc > 100 + t:
                break
        return acc

    out = np.zeros(64, np.int32)
    launch(src, "k", 1, 64, out)
    np.testing.assert_array_equal(out, [ref(t) for t in range(64)])


def test_do_while_runs_body_before_the_test():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x, n = 0;
        do { n++; } while (n < t % 4);
        out[t] = n;
    }"""
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, out)
    np.testing.assert_array_equal(out, np.maximum(np.arange(32) % 4, 1))


def test_early_return_stops_only_returning_lanes():
    src = r"""
    extern "C" __global__ void k(int* out, int n) {
        int t = threadIdx.x;
        out[t] = 1;
        if (t >= n) return;
        out[t] = 2;
        for (int i = 0; i < 100; i++) { if (i == t) return; }
        out[t] = 3;
    }"""
    out = np.zeros(64, np.int32)
    launch(src, "k", 1, 64, out, np.int32(50))
    t = np.arange(64)
    np.testing.assert_array_equal(out, np.where(t >= 50, 1, 2))


def test_ternary_evaluates_only_the_chosen_side_per_lane():
    src = r"""
    extern "C" __global__ void k(int* hits_a, int* hits_b, int* out) {
        int t = threadIdx.x;
        out[t] = (t & 1) ? (hits_a[t] += 5) : (hits_b[t] += 7);
    }"""
    a, b, out = (np.zeros(32, np.int32) for _ in range(3))
    launch(src, "k", 1, 32, a, b, out)
    odd = np.arange(32) & 1
    np.testing.assert_array_equal(a, np.where(odd, 5, 0))
    np.testing.assert_array_equal(b, np.where(odd, 0, 7))
    np.testing.assert_array_equal(out, np.where(odd, 5, 7))


def test_short_circuit_skips_the_right_side_per_lane():
    src = r"""
    extern "C" __global__ void k(const int* idx, const int* data, int* out, int n) {
        int t = threadIdx.x;
        // data[idx[t]] would be out of bounds where idx[t] >= n
        out[t] = (idx[t] < n && data[idx[t]] > 0) || idx[t] == 99;
    }"""
    idx = np.array([0, 1, 1000, 99, 2] * 6 + [0, 0], dtype=np.int32)
    data = np.array([5, -1, 3], dtype=np.int32)
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, idx, data, out, np.int32(3))
    want = [(i < 3 and data[i] > 0) or i == 99 for i in idx]
    np.testing.assert_array_equal(out, np.array(want, np.int32))


def test_device_function_with_early_return_is_inlined_per_lane():
    src = r"""
    __device__ int classify(int v) {
        if (v < 0) return -1;
        for (int i = 0; i < 8; i++) if (v == i * i) return i;
        return 100 + v;
    }
    extern "C" __global__ void k(const int* in, int* out) {
        int t = threadIdx.x;
        out[t] = classify(in[t]) + classify(t);
    }"""

    def ref(v):
        if v < 0:
            return -1
        for i in range(8):
            if v == i * i:
                return i
        return 100 + v

    vals = np.arange(-5, 27, dtype=np.int32)
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, vals, out)
    np.testing.assert_array_equal(out, [ref(v) + ref(t) for t, v in enumerate(vals)])


def test_switch_falls_through_until_break():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x, r = 0;
        switch (t % 5) {
            case 0: r += 1;
            case 1: r += 10; break;
            case 3: r += 100;
            default: r += 1000;
        }
        out[t] = r;
    }"""
    out = np.zeros(32, np.int32)
    launch(src, "k", 1, 32, out)
    want = {0: 11, 1: 10, 2: 1000, 3: 1100, 4: 1000}
    np.testing.assert_array_equal(out, [want[t % 5] for t in range(32)])


def switch_kernel(body: str, n: int = 32, **kw) -> np.ndarray:
    """Run `body` (which sets int r from int v = threadIdx.x) and return each thread's r."""
    src = r"""
    __device__ int f(int v) { int r = 0; BODY return r; }
    extern "C" __global__ void k(int* out, int dev) {
        int v = threadIdx.x, r = 0;
        if (dev) r = f(v);
        else { BODY }
        out[v] = r;
    }""".replace("BODY", body)
    out = np.full(n, -1, np.int32)
    dev = np.full(n, -2, np.int32)
    launch(src, "k", 1, n, out, np.int32(0), **kw)
    launch(src, "k", 1, n, dev, np.int32(1), **kw)
    np.testing.assert_array_equal(out, dev)
    return out


def by_residue(want: dict) -> list:
    """Thread t's expectation want[t % len(want)], for 32 threads."""
    return [want[t % len(want)] for t in range(32)]


def test_switch_with_no_matching_case_and_no_default_goes_on_after_it():
    # C++ [stmt.switch]/5: no case matches and there is no default: none of the body runs
    body = "r = 100; switch (v % 4) { case 1: r += 1; break; case 2: r += 2; break; } r += 1000;"
    np.testing.assert_array_equal(switch_kernel(body), by_residue({0: 1100, 1: 1101, 2: 1102, 3: 1100}))


def test_switch_with_a_uniform_value_matching_no_case_goes_on_after_it():
    out = switch_kernel("r = 5; switch (v / 64) { case 1: r = 1; break; case 2: r = 2; } r *= 3;")
    np.testing.assert_array_equal(out, np.full(32, 15))


def test_switch_with_no_default_falls_through_and_leaves_unmatched_lanes_running():
    body = "switch (v % 5) { case 0: r += 1; case 1: r += 10; break; case 3: r += 100; } r += 1000;"
    want = {0: 1011, 1: 1010, 2: 1000, 3: 1100, 4: 1000}
    np.testing.assert_array_equal(switch_kernel(body), by_residue(want))


def test_switch_default_first_runs_for_unmatched_values_and_falls_through():
    body = "switch (v % 4) { default: r += 1; case 1: r += 10; break; case 2: r += 100; } r += 1000;"
    np.testing.assert_array_equal(switch_kernel(body), by_residue({0: 1011, 1: 1010, 2: 1100, 3: 1011}))


def test_switch_default_in_the_middle_runs_for_unmatched_values_and_falls_through():
    body = "switch (v % 4) { case 1: r += 1; default: r += 10; case 2: r += 100; break; } r += 1000;"
    np.testing.assert_array_equal(switch_kernel(body), by_residue({0: 1110, 1: 1111, 2: 1100, 3: 1110}))


def test_switch_labels_with_no_statement_after_them_go_on_after_the_switch():
    out = switch_kernel("switch (v % 3) { case 0: r = 7; break; case 1: ; default: ; } r += 1000;")
    np.testing.assert_array_equal(out, [1007 if t % 3 == 0 else 1000 for t in range(32)])


def test_nested_switch_without_defaults_resumes_both_levels():
    out = switch_kernel("""switch (v % 3) {
            case 0: switch (v % 2) { case 1: r += 1; break; } r += 10; break;
            case 1: r += 100;
        } r += 1000;""")
    want = {(0, 0): 1010, (0, 1): 1011, (1, 0): 1100, (1, 1): 1100, (2, 0): 1000, (2, 1): 1000}
    np.testing.assert_array_equal(out, [want[(t % 3, t % 2)] for t in range(32)])


def test_switch_without_default_in_a_loop_keeps_every_iteration():
    # i = 0 and 3 match no case; continue skips r += 100 for i = 2; i = 4 leaves the loop
    out = switch_kernel("""for (int i = 0; i < 6; i++) {
            switch (i) { case 1: r += v; break; case 2: continue; case 4: i = 9; break; }
            if (i > 5) break;
            r += 100;
        }""")
    np.testing.assert_array_equal(out, np.arange(32) + 300)


def test_barrier_after_a_switch_without_default_is_reached_by_every_thread():
    src = r"""
    extern "C" __global__ void k(int* out) {
        __shared__ int s[64];
        int t = threadIdx.x, r = 0;
        switch (t % 8) { case 1: r = 1; break; case 2: r = 2; break; }
        s[t] = r;
        __syncthreads();
        out[t] = s[63 - t];
    }"""
    out = np.full(64, -1, np.int32)
    la = launch(src, "k", 1, 64, out, check=True)
    assert la.findings == []
    want = [{1: 1, 2: 2}.get((63 - t) % 8, 0) for t in range(64)]
    np.testing.assert_array_equal(out, want)


def test_instruction_counts_scale_with_active_lanes():
    src = r"""
    extern "C" __global__ void k(int* out) {
        int t = threadIdx.x;
        out[t] = t + 1;
    }"""
    out = np.zeros(48, np.int32)
    la = launch(src, "k", 1, 48, out)
    s = la.stats
    # two warps run the same code; the second has 16 of 32 lanes
    assert s["thread_instructions"] * 2 == s["warp_instructions"] * 48
