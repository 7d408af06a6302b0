"""Launches the hardware would refuse: LaunchError naming the limit and value."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu

SRC = r"""
extern "C" __global__ void k(float* a, int n) {
    extern __shared__ float dyn[];
    int i = threadIdx.x;
    if (i < n) a[i] = 1.0f;
}
"""


@pytest.fixture(scope="module")
def kern():
    return gpuemu.RawModule(code=SRC).get_function("k")


def test_too_many_threads_per_block(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"2048 threads.*1024"):
        kern(1, (64, 32), (np.zeros(4, np.float32), 4))


def test_block_dimension_over_its_limit(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"block.z = 128 .*64"):
        kern(1, (1, 1, 128), (np.zeros(4, np.float32), 4))


def test_grid_dimension_over_its_limit(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"grid.y = 70000 .*65535"):
        kern((1, 70000), 32, (np.zeros(4, np.float32), 4))


def test_too_much_shared_memory(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"100000 bytes.*49152"):
        kern(1, 32, (np.zeros(4, np.float32), 4), shared_mem=100000)


def test_wrong_argument_count(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"takes 2 arguments, got 1"):
        kern(1, 32, (np.zeros(4, np.float32),))


def test_array_where_a_scalar_is_wanted(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"argument 1 \('n'"):
        kern(1, 32, (np.zeros(4, np.float32), np.zeros(4, np.int32)))


def test_scalar_where_a_pointer_is_wanted(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"argument 0 \('a'.*pointer"):
        kern(1, 32, (3.0, 4))


def test_float_for_an_int_parameter(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"integer"):
        kern(1, 32, (np.zeros(4, np.float32), 2.5))


def test_zero_sized_block(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"block.x must be at least 1"):
        kern(1, 0, (np.zeros(4, np.float32), 4))


def test_unknown_launch_option_is_refused(kern):
    with pytest.raises(gpuemu.LaunchError, match=r"unknown launch option\(s\) budgte"):
        kern(1, 32, (np.zeros(4, np.float32), 4), budgte=5)
