"""The read-only data path (isa/readonly_path.py, memory_system): __ldg and
const __restrict__ loads, counted separately and cached as the preset says."""
import numpy as np

import gpuemu

SRC = r'''
extern "C" __global__ void plain(float *o, const float *a)
{ int i = threadIdx.x; o[i] = a[i] + a[i]; }
extern "C" __global__ void restr(float *o, const float *__restrict__ a)
{ int i = threadIdx.x; o[i] = a[i] + a[i]; }
extern "C" __global__ void ldg(float *o, const float *a)
{ int i = threadIdx.x; o[i] = __ldg(&a[i]) + __ldg(&a[i]); }
extern "C" __global__ void nonconst(float *o, float *__restrict__ a)
{ int i = threadIdx.x; o[i] = a[i] + a[i]; }
extern "C" __global__ void moved(float *o, const float *__restrict__ a)
{ int i = threadIdx.x; a += 1; o[i] = a[i] + a[i]; }
'''


def stats(name, arch="sm_90"):
    a = np.arange(33, dtype=np.float32)
    o = np.zeros(32, dtype=np.float32)
    launch = gpuemu.RawModule(code=SRC, arch=arch).get_function(name)((1,), (32,), (o, a))
    shift = 1 if name == "moved" else 0
    np.testing.assert_array_equal(o, 2 * a[shift:shift + 32])
    return launch.stats


def test_const_restrict_loads_take_the_readonly_path():
    st = stats("restr")
    assert st["readonly_load_requests"] == 2 and st["readonly_load_sectors"] == 8


def test_ldg_loads_take_the_readonly_path():
    assert stats("ldg")["readonly_load_requests"] == 2


def test_plain_loads_do_not():
    assert stats("plain")["readonly_load_requests"] == 0


def test_restrict_without_const_does_not():
    assert stats("nonconst")["readonly_load_requests"] == 0


def test_a_reassigned_restrict_pointer_does_not():
    assert stats("moved")["readonly_load_requests"] == 0


def test_readonly_loads_are_also_global_loads():
    assert stats("restr")["global_load_requests"] == stats("plain")["global_load_requests"] == 2


def test_on_maxwell_readonly_loads_hit_l1_where_plain_loads_bypass_it():
    # sm_52: global loads skip L1 (L2 only); the read-only path uses the unified
    # L1/texture cache: the second read of the same 128 bytes hits its 4 sectors
    plain, ro = stats("plain", "sm_52"), stats("restr", "sm_52")
    assert plain["l1_hits"] == 0 and plain["l2_read_sectors"] == 8
    assert ro["readonly_hits"] == 4 and ro["readonly_misses"] == 4
    assert ro["l2_read_sectors"] == 4


def test_on_kepler_the_readonly_cache_is_separate():
    ro = stats("restr", "cc3x")
    assert ro["readonly_hits"] == 4 and ro["l1_hits"] == 0 and ro["l2_read_sectors"] == 4


def test_before_cc35_there_is_no_readonly_path():
    st = stats("restr", "cc2x")
    assert st["readonly_load_requests"] == 0 and st["global_load_requests"] == 2
