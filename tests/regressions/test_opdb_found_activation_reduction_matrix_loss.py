"""Regression tests of the bugs the op database (tests/opdb_entries/{activation, reduction,
matrix, loss}.py) found, on every backend present. Each test is the smallest input that showed
the bug; the expected values are worked out by hand from the definitions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

R = mg.LossReductionType
pytestmark = pytest.mark.parametrize("device", DEVICES)


def _run(device, g, feeds, targets):
    res = g.run(feeds, targets, device=device)
    return [res[t].numpy() for t in targets]


# ---------------------------------------------------------------------------- softMax and +inf
def test_softmax_row_with_plus_inf_is_nan(device):
    # was [NaN, 0, 0]: the kernels replaced a non-finite row maximum by 0, so the +inf
    # position gave inf / inf and the others exp(x) / inf = 0, a row that sums to no number
    g = mg.Graph()
    x = g.placeholder([3, 3])
    y = g.softMax(x, 1)
    dx = g.softMaxGradient(g.constant(np.ones((3, 3), np.float32)), x, 1)
    xs = np.array([[np.inf, 1, 2], [-np.inf, -np.inf, -np.inf], [0, -np.inf, 0]], np.float32)
    gy, gdx = _run(device, g, {x: xs}, [y, dx])
    assert np.isnan(gy[0]).all() and np.isnan(gy[1]).all()
    np.testing.assert_allclose(gy[2], [0.5, 0.0, 0.5])
    assert np.isnan(gdx[0]).all() and np.isnan(gdx[1]).all()
    np.testing.assert_allclose(gdx[2], [0.0, 0.0, 0.0], atol=1e-7)


# ---------------------------------------------------------------------------- the mean of CE
@pytest.mark.parametrize("axis", [1, -1])
def test_ce_mean_over_an_empty_class_axis(device, axis):
    # source [3, 0]: three loss terms, each a sum over no classes (0); their mean is 0. Was
    # NaN: the term count was numel // C, which the kernels took as 0 when C = 0
    g = mg.Graph()
    x = g.placeholder([3, 0])
    lab = g.placeholder([3, 0])
    loss = g.softMaxCrossEntropy(x, lab, axis, R.mean)
    total = g.softMaxCrossEntropy(x, lab, axis, R.sum)
    z = np.zeros((3, 0), np.float32)
    got, gs = _run(device, g, {x: z, lab: z}, [loss, total])
    assert got.shape == (1, 1) and gs.shape == (1, 1)
    np.testing.assert_array_equal(got, [[0.0]])
    np.testing.assert_array_equal(gs, [[0.0]])


def test_ce_mean_term_count_is_the_none_loss_size(device):
    # the mean is the mean of the `none` loss, whatever the source's empty axes
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ls = rng.random((2, 3, 4)).astype(np.float32)
    g = mg.Graph()
    x, lab = g.placeholder([2, 3, 4]), g.placeholder([2, 3, 4])
    none = g.softMaxCrossEntropy(x, lab, 1, R.none)
    mean = g.softMaxCrossEntropy(x, lab, 1, R.mean)
    gn, gm = _run(device, g, {x: xs, lab: ls}, [none, mean])
    np.testing.assert_allclose(gm.reshape(()), gn.mean(), rtol=1e-6)


def test_ce_infinite_logits_warn_nothing(device):
    # the NumPy kernel's log-softmax subtracted the maximum outside its errstate: a RuntimeWarning
    # ("invalid value encountered in subtract") for a row with +inf
    g = mg.Graph()
    x = g.placeholder([2, 3])
    lab = g.constant(np.full((2, 3), 1 / 3, np.float32))
    loss = g.softMaxCrossEntropy(x, lab, 1, R.none)
    xs = np.array([[np.inf, 1, 2], [0, 1, 2]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (got,) = _run(device, g, {x: xs}, [loss])
    assert np.isnan(got[0, 0]) and np.isfinite(got[1, 0])


# ---------------------------------------------------------------------------- oneHot's values
@pytest.mark.parametrize("dt,value", [(mg.float16, 1e5), (mg.float16, 70000.0),
                                      (mg.bFloat16, 1e39), (mg.float32, 1e39),
                                      (mg.float32, 10 ** 400), (mg.int64, 10 ** 400),
                                      (mg.int8, -10 ** 400)],
                         ids=["f16-1e5", "f16-70000", "bf16-1e39", "f32-1e39", "f32-10^400",
                              "i64-10^400", "i8--10^400"])
def test_one_hot_value_beyond_the_type(device, dt, value):
    # was accepted with a RuntimeWarning (a finite onValue rounded to inf) or raised a bare
    # OverflowError (float() of a Python int beyond float's range)
    g = mg.Graph()
    i = g.placeholder([2], mg.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(mg.DataTypeError, match="argument 'onValue'"):
            g.oneHot(i, 3, dataType=dt, onValue=value)


def test_one_hot_values_at_the_type_limits(device):
    g = mg.Graph()
    i = g.placeholder([2], mg.int32)
    ys = [g.oneHot(i, 2, dataType=mg.float16, onValue=65504.0, offValue=float("-inf")),
          g.oneHot(i, 2, dataType=mg.DataType.uInt64, onValue=2 ** 64 - 1),
          g.oneHot(i, 2, dataType=mg.int64, onValue=2 ** 53 + 1, offValue=-2 ** 63)]
    a, b, c = _run(device, g, {i: np.array([1, 7], np.int32)}, ys)
    np.testing.assert_array_equal(a, np.array([[-np.inf, 65504], [-np.inf, -np.inf]],
                                              np.float16))
    np.testing.assert_array_equal(b, np.array([[0, 2 ** 64 - 1], [0, 0]], np.uint64))
    np.testing.assert_array_equal(c, np.array([[-2 ** 63, 2 ** 53 + 1], [-2 ** 63, -2 ** 63]],
                                              np.int64))
