"""The reduction family against NumPy (keepdims=True): reductionSum / Maximum / Minimum / Mean
and Apple's `mean(of:axes:)`, with axis= / axes= (negative, repeated, None = all, [] = none),
data types, NaN and empty slices, gradients (ties split evenly) and bad inputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect, grad_check, run

DT = mg.DataType
BF16 = np.dtype(ml_dtypes.bfloat16)
OPS = {"reductionSum": np.sum, "reductionMaximum": np.max, "reductionMinimum": np.min,
       "reductionMean": np.mean}


# ---------------------------------------------------------------------------- forward
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kw,np_axes", [
    ({"axis": 1}, (1,)), ({"axis": -1}, (2,)), ({"axes": [0, 2]}, (0, 2)),
    ({"axes": [-1, 0, 2]}, (0, 2)), ({"axes": None}, (0, 1, 2)), ({}, (0, 1, 2)),
    ({"axes": []}, ()), ({"axes": (1, 1)}, (1,)),
])
def test_forward_keeps_reduced_axes(rng, op, kw, np_axes):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    got = run(lambda g, t: getattr(g, op)(t, **kw), x)
    want = OPS[op](x, axis=np_axes, keepdims=True)
    assert got.shape == want.shape and got.ndim == 3
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_static_result_shapes():
    g = mg.Graph()
    x = g.placeholder([2, 3, 4])
    assert g.reductionSum(x, axis=1).shape == [2, 1, 4]
    assert g.reductionMaximum(x, axes=[0, -1]).shape == [1, 3, 1]
    assert g.reductionMean(x).shape == [1, 1, 1]
    assert g.mean(x, [2]).shape == [2, 3, 1]
    assert g.reductionSum(g.placeholder([-1, 5]), axis=0).shape == [1, 5]
    assert g.reductionSum(g.placeholder(None), axis=0).shape is None
    s = g.placeholder([])
    assert g.reductionSum(s).shape == []


def test_mean_of_alias(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_allclose(run(lambda g, t: g.mean(t, [1]), x), x.mean(1, keepdims=True),
                               rtol=1e-6)


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint8, np.int64])
@pytest.mark.parametrize("op", ["reductionSum", "reductionMaximum", "reductionMinimum"])
def test_integer_types(rng, op, dt):
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, (3, 6), dtype=dt, endpoint=True)
    got = run(lambda g, t: getattr(g, op)(t, axis=1), x)
    assert got.dtype == np.dtype(dt)
    # integer sums wrap in the input type
    want = OPS[op](x, axis=1, keepdims=True, **({"dtype": dt} if op == "reductionSum" else {}))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("op", list(OPS))
def test_half_types_accumulate_in_float32(rng, op, dt):
    x = (rng.standard_normal((4, 300)) + 1).astype(dt)
    got = run(lambda g, t: getattr(g, op)(t, axis=1), x)
    assert got.dtype == np.dtype(dt)
    want = OPS[op](x.astype(np.float32), axis=1, keepdims=True).astype(dt)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               rtol=1e-2 if dt == BF16 else 1e-3)


def test_nan_and_empty():
    x = np.array([[np.nan, 1.0, 3.0], [np.nan, np.nan, np.nan]], np.float32)
    np.testing.assert_array_equal(run(lambda g, t: g.reductionMaximum(t, axis=1), x),
                                  [[3.0], [np.nan]])
    np.testing.assert_array_equal(run(lambda g, t: g.reductionMinimum(t, axis=1), x),
                                  [[1.0], [np.nan]])
    assert np.isnan(run(lambda g, t: g.reductionSum(t, axis=1), x)).all()
    e = np.zeros((2, 0), np.float32)
    np.testing.assert_array_equal(run(lambda g, t: g.reductionSum(t, axis=1), e), [[0], [0]])
    np.testing.assert_array_equal(run(lambda g, t: g.reductionMaximum(t, axis=1), e),
                                  [[-np.inf], [-np.inf]])
    np.testing.assert_array_equal(run(lambda g, t: g.reductionMinimum(t, axis=1), e),
                                  [[np.inf], [np.inf]])
    assert np.isnan(run(lambda g, t: g.reductionMean(t, axis=1), e)).all()
    ei = np.zeros((0, 2), np.int16)
    np.testing.assert_array_equal(run(lambda g, t: g.reductionMaximum(t, axis=0), ei),
                                  [[-32768, -32768]])
    assert run(lambda g, t: g.reductionSum(t, axis=0), e).shape == (1, 0)


def test_dynamic_input(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 3])
    y = g.reductionSum(x, axis=0)
    z = g.reductionMean(x, axes=None)
    for n in (1, 4):
        v = rng.standard_normal((n, 3)).astype(np.float32)
        out = g.run({x: v}, [y, z])
        np.testing.assert_allclose(out[y].numpy(), v.sum(0, keepdims=True), rtol=1e-6)
        np.testing.assert_allclose(out[z].numpy(), v.mean(keepdims=True), rtol=1e-6)


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("kw", [{"axis": 1}, {"axes": [0, 2]}, {}, {"axes": []}],
                         ids=["axis1", "axes02", "all", "none"])
def test_gradients_match_finite_differences(rng, op, kw):
    # distinct values 0.3 apart: the finite-difference steps never change an argmax / argmin
    x = rng.permutation(24).reshape(2, 3, 4) * 0.3
    grad_check(lambda g, t: getattr(g, op)(t, **kw), [(2, 3, 4)], rng, args=[x])


def test_extremum_gradient_ties_split_evenly():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0], [0.0, -1.0, 4.0, np.nan]],
                 np.float32)
    for op, want in (
            ("reductionMaximum", [[0, .5, .5, 0], [.25] * 4, [0, 0, 1, 0]]),
            ("reductionMinimum", [[1, 0, 0, 0], [.25] * 4, [0, 1, 0, 0]])):
        g = mg.Graph()
        t = g.placeholder([3, 4])
        gx = g.gradientForPrimaryTensor(getattr(g, op)(t, axis=1), [t])[t]
        np.testing.assert_array_equal(g.run({t: x}, [gx])[gx].numpy(), want)


def test_gradient_of_mean_and_sum_with_dynamic_batch(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 3])
    loss = g.reductionSum(g.reductionSum(g.square(x), axis=0), axis=1)  # [1, 1]
    gx = g.gradientForPrimaryTensor(loss, [x])[x]
    assert gx.shape == [-1, 3]
    v = rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(g.run({x: v}, [gx])[gx].numpy(), 2 * v, rtol=1e-6)
    # the mean over a dynamic axis: its count is taken at run time
    gm = g.gradientForPrimaryTensor(g.reductionMean(g.reductionMean(x, axis=0)), [x])[x]
    assert gm.shape == [-1, 3]
    np.testing.assert_allclose(g.run({x: v}, [gm])[gm].numpy(), np.full((5, 3), 1 / 15),
                               rtol=1e-6)


def test_gradient_half_type(rng):
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.bFloat16)
    gx = g.gradientForPrimaryTensor(g.reductionMean(x, axis=1), [x])[x]
    out = g.run({x: rng.standard_normal((2, 3)).astype(BF16)}, [gx])[gx].numpy()
    assert out.dtype == BF16
    np.testing.assert_allclose(out.astype(np.float32), 1 / 3, rtol=1e-2)


# ---------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("name", [None, "r"])
def test_error_axis_out_of_range(name):
    g = mg.Graph()
    x = g.placeholder([2, 3])
    expect(mg.ShapeError, lambda: g.reductionSum(x, axis=2, name=name), "reductionSum", "axis",
           "[-2, 2)", "given 2", name=name)
    expect(mg.ShapeError, lambda: g.reductionMaximum(x, axes=[0, -3], name=name),
           "reductionMaximum", "axes", "[0, -3]", name=name)


def test_error_axis_types():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    expect(mg.GraphError, lambda: g.reductionSum(x, axis=1, axes=[1]), "reductionSum", "axes",
           "both")
    expect(mg.GraphError, lambda: g.reductionSum(x, axis=1.5), "reductionSum", "axis", "1.5")
    expect(mg.GraphError, lambda: g.reductionSum(x, axes=[True]), "reductionSum", "axes",
           "True")
    expect(mg.GraphError, lambda: g.reductionMean(x, axes=3), "reductionMean", "axes", "3")
    with pytest.raises(TypeError):
        g.reductionSum(x, 1)  # axis is keyword-only (it tells the Swift overloads apart)


def test_error_dtypes():
    g = mg.Graph()
    expect(mg.DataTypeError, lambda: g.reductionMean(g.placeholder([2], mg.int32)),
           "reductionMean", "tensor", "int32")
    expect(mg.DataTypeError, lambda: g.reductionSum(g.placeholder([2], mg.bool)),
           "reductionSum", "tensor", "bool")


def test_error_axis_checked_at_compile_time_for_unranked():
    g = mg.Graph()
    x = g.placeholder(None)
    y = g.reductionSum(x, axis=3)
    expect(mg.ShapeError, lambda: g.run({x: np.ones((2, 2), np.float32)}, [y]),
           "reductionSum", "axis", "3")
