"""Constant and variable data converted to their dataType with the cast op's rules (found by the
op database: `constant(300.7, dataType=int8)` wrapped to 44 and NaN became INT_MIN through
NumPy's astype), and NumPy scalars typed by their own dtype."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg


@pytest.mark.parametrize("maker", ["constant", "variable"])
@pytest.mark.parametrize("value, dt, want", [
    (300.7, mg.int8, 127), (-300.7, mg.int8, -128), (float("nan"), mg.int32, 0),
    (-2.9, mg.uInt8, 0), (2.9, mg.uInt8, 2), (-1.5, mg.int16, -1), (0.5, mg.bool, True),
    (0.0, mg.bool, False), (float("inf"), mg.int64, np.iinfo(np.int64).max),
    (1e10, mg.float16, np.inf), (7, mg.float32, 7.0)])
def test_scalar_conversion_follows_cast(maker, value, dt, want):
    g = mg.Graph()
    c = getattr(g, maker)(value, dataType=dt)
    got = g.run({}, [c])[c].numpy()
    assert got.shape == () and got.dtype == dt.numpy_dtype
    assert got == want


def test_arrays_convert_elementwise_like_cast():
    g = mg.Graph()
    c = g.constant(np.array([[1.5, -2.5], [np.nan, 1e30]]), dataType=mg.int32)
    got = g.run({}, [c])[c].numpy()
    np.testing.assert_array_equal(got, [[1, -2], [0, np.iinfo(np.int32).max]])


def test_numpy_scalar_keeps_its_dtype():
    g = mg.Graph()
    c = g.constant(np.float32(0.5))
    assert c.dataType == mg.float32 and c.shape == []
    assert g.run({}, [c])[c].numpy() == np.float32(0.5)


def test_complex_value_for_a_real_type_is_refused():
    g = mg.Graph()
    with pytest.raises(mg.DataTypeError, match="constant: argument 'data'"):
        g.constant(3 + 4j, dataType=mg.float32)
