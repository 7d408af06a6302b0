"""Device arrays: shapes and dtypes as numpy / CuPy take them."""
from __future__ import annotations

import numpy as np
import pytest

import gpuemu


@pytest.mark.parametrize("shape", [-1, (-2, -2), (3, -1)])
def test_negative_dimensions_are_refused_as_numpy_refuses_them(shape):
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        gpuemu.zeros(shape)


@pytest.mark.parametrize("shape", [2.5, (2, 2.5), "a"])
def test_non_integer_shapes_are_a_type_error_as_in_numpy(shape):
    with pytest.raises(TypeError):
        np.zeros(shape)
    with pytest.raises(TypeError):
        gpuemu.zeros(shape)


def test_empty_refuses_a_negative_dimension_too():
    with pytest.raises(ValueError, match="negative dimensions"):
        gpuemu.empty(-3, np.int32)


@pytest.mark.parametrize("shape", [3, np.int64(3), (2, 3), [2, 3], ()])
def test_integer_shapes_are_taken(shape):
    assert gpuemu.zeros(shape).shape == np.zeros(shape).shape


def test_an_object_array_cannot_be_a_device_array():
    with pytest.raises(ValueError, match="Unsupported dtype object.*Python objects"):
        gpuemu.asarray(np.array([object()]))


def test_zeros_of_object_dtype_is_refused():
    with pytest.raises(ValueError, match="Unsupported dtype object"):
        gpuemu.zeros(4, dtype=object)
