"""Property: any index pattern either gives numpy's answer or a finding naming
the first bad lane, and never touches memory outside the objects."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpuemu

SRC = r"""
extern "C" __global__ void k(const int* idx, const float* a, float* out, int* victim) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = a[t];
    s[t + 32] = a[t + 32];
    __syncthreads();
    out[t] = a[idx[t]] + s[idx[t + 32]];
}
"""


@pytest.fixture(scope="module")
def kern():
    return gpuemu.RawModule(code=SRC).get_function("k")


@settings(max_examples=60)
@given(st.lists(st.integers(-300, 300), min_size=64, max_size=64))
def test_reads_in_bounds_match_numpy_and_others_fault_at_the_first_bad_lane(kern, idx):
    idx = np.array(idx, np.int32)
    a = np.arange(64, dtype=np.float32) * 3
    out = np.zeros(32, np.float32)
    victim = gpuemu.zeros(16, np.int32)
    g_bad = (idx[:32] < 0) | (idx[:32] >= 64)
    s_bad = (idx[32:] < 0) | (idx[32:] >= 64)
    if not (g_bad.any() or s_bad.any()):
        kern(1, 32, (idx, a, out, victim))
        np.testing.assert_array_equal(out, a[idx[:32]] + a[idx[32:]])
        return
    with pytest.raises(gpuemu.KernelError) as ei:
        kern(1, 32, (idx, a, out, victim))
    f = ei.value.findings[0]
    assert f.kind == "out_of_bounds"
    if g_bad.any():     # the global load comes first in the expression
        assert f.space == "global" and f.thread == (int(np.argmax(g_bad)), 0, 0)
    else:
        assert f.space == "shared" and f.thread == (int(np.argmax(s_bad)), 0, 0)
        assert f.address == 4 * int(idx[32 + np.argmax(s_bad)]) & ((1 << 48) - 1)
    assert (out == 0).all() and (victim.get() == 0).all()
