"""Misuse of the Python API: one clear error in gpuemu's words (TypeError /
ValueError / MemoryError as CuPy raises them, LaunchError where a launch would
refuse the value), never a raw AttributeError or numpy's message from inside."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu
import gpuemu.manifest

SRC = r"""
extern "C" __global__ void k(float* a, int n) {
    int i = threadIdx.x;
    if (i < n) a[i] = 1.0f;
}
"""


@pytest.fixture(scope="module")
def kern():
    return gpuemu.RawModule(code=SRC).get_function("k")


@pytest.mark.parametrize("make", [gpuemu.empty_like, gpuemu.zeros_like])
def test_like_functions_name_a_value_that_is_not_an_array(make):
    with pytest.raises(TypeError, match=rf"{make.__name__} takes an array.*got NoneType"):
        make(None)


@pytest.mark.parametrize("make", [gpuemu.empty_like, gpuemu.zeros_like])
def test_like_functions_take_a_list_as_numpy_does(make):
    d = make([1, 2])
    assert d.shape == (2,) and d.dtype == np.array([1, 2]).dtype


def test_get_into_a_list_is_a_type_error():
    with pytest.raises(TypeError, match=r"get\(out=...\) takes a numpy array.*got list"):
        gpuemu.zeros(4, np.float32).get(out=[0] * 4)


def test_get_into_an_array_of_another_dtype_is_a_type_error_as_in_cupy():
    with pytest.raises(TypeError, match="float32 array cannot be copied into a float64 out array"):
        gpuemu.zeros(4, np.float32).get(out=np.zeros(4))


def test_get_into_an_array_of_another_size_is_a_value_error():
    with pytest.raises(ValueError, match="out has 3 elements, the device array 4"):
        gpuemu.zeros(4, np.float32).get(out=np.zeros(3, np.float32))


def test_memcpy_htod_with_swapped_arguments_says_so():
    with pytest.raises(TypeError, match=r"memcpy_htod: dst must be a device array.*got ndarray"):
        gpuemu.memcpy_htod(np.zeros(4), gpuemu.zeros(4))


def test_memcpy_dtoh_from_a_number_names_src():
    with pytest.raises(TypeError, match=r"memcpy_dtoh: src must be a device array.*got int"):
        gpuemu.memcpy_dtoh(np.zeros(4), 5)


def test_memcpy_dtoh_into_a_list_names_dst():
    with pytest.raises(TypeError, match=r"memcpy_dtoh: dst must be a host numpy array, got list"):
        gpuemu.memcpy_dtoh([0] * 4, gpuemu.zeros(4))


def test_elapsed_time_of_numbers_is_a_type_error():
    with pytest.raises(TypeError, match=r"elapsed_time: start must be a gpuemu.Event, got int"):
        gpuemu.elapsed_time(1, 2)


def test_raw_kernel_of_a_number_is_a_type_error():
    with pytest.raises(TypeError, match=r"RawKernel takes CUDA C source \(a str\) or a RawModule, got int"):
        gpuemu.RawKernel(5, "k")


def test_raw_module_path_of_a_number_is_a_type_error():
    with pytest.raises(TypeError, match=r"RawModule path= is the path of a source file.*got int"):
        gpuemu.RawModule(path=5)


def test_manifest_run_of_none_is_a_type_error():
    with pytest.raises(TypeError, match=r"a manifest is a Manifest or the path of its JSON file.*NoneType"):
        gpuemu.manifest.run(None)


@pytest.mark.parametrize("alloc", [gpuemu.alloc_mapped, gpuemu.alloc_managed, gpuemu.alloc_pinned])
def test_host_buffers_of_a_string_shape_are_a_type_error(alloc):
    with pytest.raises(TypeError, match="expected a sequence of integers or a single integer, got 'x'"):
        alloc("x", np.float32)


def test_zeros_beyond_memory_is_a_memory_error_naming_the_bytes():
    with pytest.raises(MemoryError, match="8,000,000,000,000,000 bytes"):
        gpuemu.zeros(10**15)


def test_asarray_of_a_ragged_list_names_it():
    with pytest.raises(ValueError, match=r"asarray: \[\[1, 2\], \[3\]\] is not a rectangular array"):
        gpuemu.asarray([[1, 2], [3]])


def test_occupancy_with_an_unknown_carveout_is_a_launch_error(kern):
    with pytest.raises(gpuemu.LaunchError, match="carveout: unknown carve-out 'x'"):
        kern.occupancy(32, carveout="x")


def test_an_unknown_preferred_carveout_is_refused_when_set(kern):
    with pytest.raises(gpuemu.LaunchError, match="carveout: unknown carve-out 'junk'"):
        kern.preferred_carveout = "junk"
    assert kern.preferred_carveout is None


def test_a_known_preferred_carveout_is_kept(kern):
    kern.preferred_carveout = "prefer_shared"
    try:
        assert kern.preferred_carveout == "prefer_shared"
    finally:
        kern.preferred_carveout = None


@pytest.mark.parametrize("top, error", [("x", TypeError), (1.5, TypeError), (-1, ValueError)])
def test_report_top_must_be_a_count(kern, top, error):
    launch = kern(1, 32, (np.zeros(32, np.float32), 32))
    with pytest.raises(error, match="report: top"):
        launch.report(top=top)


def test_occupancy_of_a_block_over_the_thread_limit_is_the_launchs_error(kern):
    with pytest.raises(gpuemu.LaunchError, match="block of 4096 threads exceeds the limit of 1024"):
        kern.occupancy(4096)


def test_occupancy_of_negative_shared_memory_is_the_launchs_error(kern):
    with pytest.raises(gpuemu.LaunchError, match="shared_mem must be a non-negative int, got -5"):
        kern.occupancy(32, shared_mem=-5)


def test_occupancy_of_shared_memory_over_the_opt_in_limit_is_a_launch_error(kern):
    with pytest.raises(gpuemu.LaunchError, match="9999999999 bytes exceeds the opt-in limit of 232448"):
        kern.occupancy(32, shared_mem=9999999999)


@pytest.mark.parametrize("value, named", [
    ("abc", "<U3: a device array holds numbers, not text"),
    (np.ones(3, np.longdouble), "float128: CUDA C has no long double on the device"),
    (np.array(["2026-01-01"], "datetime64[D]"), "datetime64.*not dates"),
])
def test_asarray_refuses_dtypes_a_kernel_cannot_read(value, named):
    with pytest.raises(ValueError, match=f"Unsupported dtype {named}"):
        gpuemu.asarray(value)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.float16])
def test_complex_and_half_device_arrays_hold_their_bytes_as_cupy_s_do(dtype):
    a = (np.arange(4) * (1 + 1j if np.dtype(dtype).kind == "c" else 1)).astype(dtype)
    d = gpuemu.asarray(a)
    assert d.dtype == dtype and np.array_equal(d.get(), a)
    assert gpuemu.zeros(4, dtype).nbytes == 4 * np.dtype(dtype).itemsize


def test_asarray_of_a_big_endian_array_holds_it_little_endian():
    d = gpuemu.asarray(np.array([1.5, -2.0], ">f8"))
    assert d.dtype == np.dtype("<f8") and d.get().tolist() == [1.5, -2.0]


def test_a_structured_dtype_is_a_device_array_of_structs():
    d = gpuemu.zeros(2, np.dtype([("x", np.float32), ("n", np.int32)]))
    assert d.nbytes == 16


def test_set_of_another_dtype_is_a_type_error_as_in_cupy():
    d = gpuemu.zeros(3, np.int32)
    with pytest.raises(TypeError, match="float64 array cannot be set to int32 array"):
        d.set(np.array([1.5, 2.5, 3.7]))
    assert d.get().tolist() == [0, 0, 0]


def test_set_of_a_list_is_a_type_error_as_in_cupy():
    with pytest.raises(TypeError, match="set takes a numpy array, got list"):
        gpuemu.zeros(3, np.int32).set([1, 2, 3])


@pytest.mark.parametrize("alloc", [gpuemu.alloc_mapped, gpuemu.alloc_managed])
def test_host_buffer_set_of_another_dtype_is_a_type_error(alloc, monkeypatch):
    from gpuemu.host import buffers     # (the next mapped/managed address is put back after:
    for kind in ("mapped", "managed"):  # other files' tests count migration blocks from the base)
        monkeypatch.setitem(buffers._next, kind, buffers._next[kind])
    with pytest.raises(TypeError, match="float64 array cannot be set to int32 array"):
        alloc(3, np.int32).set(np.array([1.5, 2.5, 3.7]))


@pytest.mark.parametrize("stats", ["no", 0, None])
def test_stats_must_be_a_bool(kern, stats):
    with pytest.raises(gpuemu.LaunchError, match=f"stats must be True or False, got {stats!r}"):
        kern(1, 32, (np.zeros(32, np.float32), 32), stats=stats)


def test_stats_must_be_a_bool_after_a_kept_launch_too(kern):
    args = (gpuemu.zeros(32, np.float32), np.int32(32))
    for _ in range(3):
        kern(1, 32, args, stats=False)
    with pytest.raises(gpuemu.LaunchError, match="stats must be True or False, got 'no'"):
        kern(1, 32, args, stats="no")
