"""float2/float3/float4/int2/int4 values: one access per vector, members by name."""
from __future__ import annotations

import numpy as np
import pytest

from kernel_launch import launch


@pytest.mark.parametrize("vtype,n,dtype", [("float2", 2, np.float32), ("float3", 3, np.float32),
                                           ("float4", 4, np.float32), ("int2", 2, np.int32),
                                           ("int4", 4, np.int32)])
def test_vector_load_store_reverses_members(vtype, n, dtype):
    members = "xyzw"[:n]
    rev = ", ".join(f"v.{m}" for m in reversed(members))
    src = f"""
    extern "C" __global__ void k({vtype}* out, const {vtype}* in) {{
        int i = threadIdx.x;
        {vtype} v = in[i];
        out[i] = make_{vtype}({rev});
    }}"""
    a = np.arange(32 * n).astype(dtype)
    out = np.zeros_like(a)
    la = launch(src, "k", 1, 32, out, a)
    np.testing.assert_array_equal(out, a.reshape(32, n)[:, ::-1].ravel())
    assert la.stats["global_load_requests"] == 1 and la.stats["global_store_requests"] == 1


def test_float4_by_value_parameter():
    src = r"""
    extern "C" __global__ void k(float* out, float4 v) {
        out[threadIdx.x] = v.x + v.y * 10.0f + v.z * 100.0f + v.w * 1000.0f;
    }"""
    out = np.zeros(32, np.float32)
    launch(src, "k", 1, 32, out, np.array([1, 2, 3, 4], np.float32))
    assert (out == 4321).all()
