"""softMaxCrossEntropy, softMaxCrossEntropyGradient (and the labels gradient of the rule) and
oneHot, against expectations written in plain NumPy (float64), central finite differences of
the forward graph, and the bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mpsgraph as mg
from helpers import expect_named
from oracles import gradcheck

R = mg.LossReductionType
REDUCTIONS = [R.none, R.sum, R.mean]


# ------------------------------------------------------------------ NumPy references
def log_softmax_ref(x, axis):
    x = np.asarray(x, np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def ce_ref(x, labels, axis, red):
    x = np.asarray(x, np.float64)
    lab = np.broadcast_to(np.asarray(labels, np.float64), x.shape)
    loss = -(lab * log_softmax_ref(x, axis)).sum(axis=axis, keepdims=True)
    if red == R.none:
        return loss
    total = loss.sum()
    if red == R.mean:
        total /= loss.size  # one term per position other than `axis`
    return np.full([1] * x.ndim, total)


def ce_grad_ref(u, x, labels, axis, red):
    """d <u, ce(x)> / dx, written out (softmax * sum(labels) - labels) * u."""
    x = np.asarray(x, np.float64)
    lab = np.broadcast_to(np.asarray(labels, np.float64), x.shape)
    p = np.exp(log_softmax_ref(x, axis))
    out_shape = list(x.shape)
    out_shape[axis] = 1
    g = np.broadcast_to(np.asarray(u, np.float64), out_shape if red == R.none else [1] * x.ndim)
    if red == R.mean:
        g = g / (x.size // x.shape[axis])
    return (p * lab.sum(axis=axis, keepdims=True) - lab) * g


def _run(g, feeds, targets):
    out = g.run(feeds, targets)
    return [out[t].numpy() for t in targets]


def _loss_shape(shape, axis, red):
    if red == R.none:
        s = list(shape)
        s[axis] = 1
        return s
    return [1] * len(shape)


CASES = [((4, 5), 1), ((4, 5), 0), ((4, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), -1), ((6,), 0),
         ((3, 1), 1)]


# ------------------------------------------------------------------ forward
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape,axis", CASES)
def test_forward_matches_numpy(rng, shape, axis, red):
    x = rng.standard_normal(shape).astype(np.float32)
    lab = rng.random(shape).astype(np.float32)
    g = mg.Graph()
    tx, tl = g.placeholder(list(shape)), g.placeholder(list(shape))
    y = g.softMaxCrossEntropy(tx, tl, axis, red)
    assert y.shape == _loss_shape(shape, axis, red) and y.dataType == mg.float32
    (got,) = _run(g, {tx: x, tl: lab}, [y])
    assert got.shape == tuple(y.shape) and got.dtype == np.float32
    np.testing.assert_allclose(got, ce_ref(x, lab, axis, red), rtol=1e-5, atol=1e-6)


def test_one_hot_labels_are_the_usual_cross_entropy(rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    cls = np.array([0, 3, 6, 2, 2])
    lab = np.eye(7, dtype=np.float32)[cls]
    g = mg.Graph()
    y = g.softMaxCrossEntropy(g.constant(x), g.constant(lab), 1, R.mean)
    (got,) = _run(g, {}, [y])
    want = -np.mean(log_softmax_ref(x, 1)[np.arange(5), cls])
    np.testing.assert_allclose(got.reshape(()), want, rtol=1e-6)


@pytest.mark.parametrize("lab_shape", [(5,), (1, 5), (3, 1), ()])
def test_labels_broadcast_to_the_source(rng, lab_shape):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    lab = rng.random(lab_shape).astype(np.float32)
    g = mg.Graph()
    tx, tl = g.placeholder([3, 5]), g.placeholder(list(lab_shape))
    y = g.softMaxCrossEntropy(tx, tl, -1, R.none)
    assert y.shape == [3, 1]
    (got,) = _run(g, {tx: x, tl: lab}, [y])
    np.testing.assert_allclose(got, ce_ref(x, lab, -1, R.none), rtol=1e-5)


def test_numerically_stable_for_huge_logits():
    x = np.array([[1e4, 0.0, -1e4], [-5e3, 5e3, 4.99e3]], np.float32)
    lab = np.array([[0.0, 1.0, 0.0], [0.5, 0.25, 0.25]], np.float32)
    g = mg.Graph()
    tx, tl = g.placeholder([2, 3]), g.placeholder([2, 3])
    y = g.softMaxCrossEntropy(tx, tl, 1, R.none)
    dx = g.softMaxCrossEntropyGradient(g.constant(1.0, dataType=mg.float32), tx, tl, 1, R.none)
    got, gdx = _run(g, {tx: x, tl: lab}, [y, dx])
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(gdx))
    np.testing.assert_allclose(got, ce_ref(x, lab, 1, R.none), rtol=1e-6)
    np.testing.assert_allclose(gdx, ce_grad_ref(1.0, x, lab, 1, R.none), atol=1e-6)


def test_zero_label_with_minus_inf_logit_is_not_nan():
    x = np.array([[0.0, -np.inf, 1.0]], np.float32)
    lab = np.array([[0.5, 0.0, 0.5]], np.float32)
    g = mg.Graph()
    y = g.softMaxCrossEntropy(g.constant(x), g.constant(lab), 1, R.sum)
    (got,) = _run(g, {}, [y])
    lp = np.log(np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum())
    np.testing.assert_allclose(got.reshape(()), -(0.5 * lp).sum(), rtol=1e-6)


@pytest.mark.parametrize("spelling", ["positional", "reuctionType", "reductionType"])
def test_both_spellings_of_the_reduction_label(rng, spelling):
    g = mg.Graph()
    x, lab = g.placeholder([2, 3]), g.placeholder([2, 3])
    kw = {"positional": ((R.sum,), {}), "reuctionType": ((), {"reuctionType": R.sum}),
          "reductionType": ((), {"reductionType": R.sum})}[spelling]
    y = g.softMaxCrossEntropy(x, lab, 1, *kw[0], **kw[1])
    assert y.shape == [1, 1]
    dx = g.softMaxCrossEntropyGradient(g.constant(1.0, dataType=mg.float32), x, lab, 1,
                                       *kw[0], **kw[1])
    dx2 = g.softMaxCrossEntropyGradient(g.constant(1.0, dataType=mg.float32),
                                        sourceTensor=x, labelsTensor=lab, axis=1,
                                        reductionType=1)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.random((2, 3)).astype(np.float32)
    got = _run(g, {x: a, lab: b}, [y, dx, dx2])
    np.testing.assert_allclose(got[0], ce_ref(a, b, 1, R.sum), rtol=1e-5)
    np.testing.assert_array_equal(got[1], got[2])


@pytest.mark.parametrize("dtype,tol", [(mg.float16, 2e-3), (mg.bFloat16, 1.6e-2)])
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
def test_half_types_compute_in_float32_and_round_once(rng, dtype, tol, red):
    npdt = dtype.numpy_dtype
    x = rng.standard_normal((4, 6)).astype(npdt)
    lab = rng.random((4, 6)).astype(npdt)
    u = rng.standard_normal(_loss_shape((4, 6), 1, red)).astype(npdt)
    g = mg.Graph()
    tx, tl, tu = (g.placeholder(list(a.shape), dtype) for a in (x, lab, u))
    y = g.softMaxCrossEntropy(tx, tl, 1, red)
    dx = g.softMaxCrossEntropyGradient(tu, tx, tl, 1, red)
    assert y.dataType == dtype and dx.dataType == dtype
    got_y, got_dx = _run(g, {tx: x, tl: lab, tu: u}, [y, dx])
    assert got_y.dtype == npdt and got_dx.dtype == npdt
    x64, l64, u64 = (a.astype(np.float64) for a in (x, lab, u))
    want_y = ce_ref(x64, l64, 1, red)
    want_dx = ce_grad_ref(u64, x64, l64, 1, red)
    np.testing.assert_allclose(got_y.astype(np.float64), want_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(got_dx.astype(np.float64), want_dx, rtol=tol,
                               atol=tol * np.abs(want_dx).max())
    # rounded once: the float32 result of the same (rounded) inputs, rounded to the type
    g32 = mg.Graph()
    y32 = g32.softMaxCrossEntropy(g32.constant(x64, dataType=mg.float32),
                                  g32.constant(l64, dataType=mg.float32), 1, red)
    (ref32,) = _run(g32, {}, [y32])
    np.testing.assert_array_equal(got_y, ref32.astype(npdt))


# ------------------------------------------------------------------ gradients
def _forward_fn(shape, lab_shape, axis, red):
    """Our forward op compiled in float32, as a float64 -> float64 function of (x, labels)."""
    g = mg.Graph()
    tx, tl = g.placeholder(list(shape)), g.placeholder(list(lab_shape))
    exe = g.compile({tx: mg.ShapedType(list(shape)), tl: mg.ShapedType(list(lab_shape))},
                    [g.softMaxCrossEntropy(tx, tl, axis, red)])

    def f(x, lab):
        return exe.run([x.astype(np.float32), lab.astype(np.float32)])[0].numpy().astype(
            np.float64)

    return f


@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape,axis", [((4, 5), 1), ((3, 4, 2), 1), ((5,), 0)])
def test_gradient_op_matches_numpy_and_finite_differences(rng, shape, axis, red):
    """softMaxCrossEntropyGradient with a random incoming gradient u: against the written-out
    formula, and <u, J v> by central differences of the forward graph vs <J^T u, v>."""
    x = rng.standard_normal(shape)
    lab = rng.random(shape)
    g = mg.Graph()
    tu = g.placeholder(_loss_shape(shape, axis, red))
    tx, tl = g.placeholder(list(shape)), g.placeholder(list(shape))
    dx = g.softMaxCrossEntropyGradient(tu, tx, tl, axis, red)
    assert dx.shape == list(shape)
    f = _forward_fn(shape, shape, axis, red)

    def vjp(u, xx, ll):
        out = g.run({tu: u.astype(np.float32), tx: xx.astype(np.float32),
                     tl: ll.astype(np.float32)}, [dx])
        return [out[dx].numpy().astype(np.float64), None]

    u = rng.standard_normal(_loss_shape(shape, axis, red))
    np.testing.assert_allclose(vjp(u, x, lab)[0], ce_grad_ref(u, x, lab, axis, red),
                               rtol=1e-5, atol=1e-6)
    gradcheck.check_vjp(f, [x, lab], vjp, eps=1e-2, rtol=2e-3, atol=1e-5, trials=2)


@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
@pytest.mark.parametrize("shape,lab_shape,axis", [((3, 4), (3, 4), 1), ((3, 4), (4,), -1),
                                                  ((2, 3, 2), (2, 1, 2), 1)])
def test_autodiff_source_and_labels_match_finite_differences(rng, shape, lab_shape, axis, red):
    """gradientForPrimaryTensor (the rule: softMaxCrossEntropyGradient for the source, the
    labels-gradient op for the labels) vs element-wise central differences of sum(loss)."""
    x = rng.standard_normal(shape)
    lab = rng.random(lab_shape)
    g = mg.Graph()
    tx, tl = g.placeholder(list(shape)), g.placeholder(list(lab_shape))
    y = g.softMaxCrossEntropy(tx, tl, axis, red)
    grads = g.gradientForPrimaryTensor(y, [tx, tl])
    assert grads[tx].shape == list(shape) and grads[tl].shape == list(lab_shape)
    got = _run(g, {tx: x.astype(np.float32), tl: lab.astype(np.float32)},
               [grads[tx], grads[tl]])
    f = _forward_fn(shape, lab_shape, axis, red)
    u = np.ones(_loss_shape(shape, axis, red))
    num = gradcheck.numeric_vjp(f, [x, lab], u, eps=1e-3)
    for a, b in zip(got, num):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)
    # labels gradient in closed form: -logp, summed over the broadcast axes
    np.testing.assert_allclose(got[1], labels_grad_ref(x, shape, lab_shape, axis, red),
                               rtol=1e-5, atol=1e-6)


def labels_grad_ref(x, shape, lab_shape, axis, red):
    """d sum(loss) / d labels = -logp (/ count for mean), summed over the broadcast axes."""
    full = -log_softmax_ref(x, axis)
    if red == R.mean:
        full = full / (x.size // x.shape[axis])
    lead = len(shape) - len(lab_shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(lab_shape)
                                      if s == 1 and shape[lead + i] != 1)
    return full.sum(axis=axes).reshape(lab_shape) if axes else full


def test_gradient_accepts_the_scalar_one_seed(rng):
    # Apple: "in most cases this is the initial gradient tensor, a constant with value one"
    x = rng.standard_normal((3, 4)).astype(np.float32)
    lab = rng.random((3, 4)).astype(np.float32)
    g = mg.Graph()
    one = g.constant(1.0, dataType=mg.float32)
    d1 = g.softMaxCrossEntropyGradient(one, g.constant(x), g.constant(lab), 1, R.none)
    (got,) = _run(g, {}, [d1])
    np.testing.assert_allclose(got, ce_grad_ref(1.0, x, lab, 1, R.none), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------ oneHot
def one_hot_ref(idx, depth, axis, on, off, npdt):
    idx = np.asarray(idx)
    r = idx.ndim + 1
    ax = axis if axis >= 0 else axis + r
    k = np.arange(depth).reshape([depth if i == ax else 1 for i in range(r)])
    return np.where(np.expand_dims(idx, ax) == k, on, off).astype(npdt)


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2, -3])
def test_one_hot_axes(rng, axis):
    idx = rng.integers(-1, 6, size=(3, 4)).astype(np.int32)  # -1 and 5 are out of range
    g = mg.Graph()
    t = g.placeholder([3, 4], mg.int32)
    y = g.oneHot(t, 5, axis=axis)
    want = one_hot_ref(idx, 5, axis, 1.0, 0.0, np.float32)
    assert y.shape == list(want.shape) and y.dataType == mg.float32
    (got,) = _run(g, {t: idx}, [y])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt,on,off", [(mg.int32, 7, -2), (mg.float16, 0.5, -1.0),
                                       (mg.bFloat16, 3.0, 0.25), (mg.bool, True, False),
                                       (mg.uInt8, 255, 0), (mg.float32, 2.5, 0.1)])
@pytest.mark.parametrize("idx_dt", [mg.int32, mg.int64, mg.uInt8, mg.int16])
def test_one_hot_types_and_values(rng, dt, on, off, idx_dt):
    idx = rng.integers(0, 5, size=(6,)).astype(idx_dt.numpy_dtype)
    g = mg.Graph()
    y = g.oneHot(g.constant(idx, dataType=idx_dt), 4, dataType=dt, onValue=on, offValue=off)
    (got,) = _run(g, {}, [y])
    assert got.dtype == dt.numpy_dtype and y.dataType == dt
    np.testing.assert_array_equal(got, one_hot_ref(idx, 4, -1, on, off, dt.numpy_dtype))


def test_one_hot_scalar_and_zero_depth():
    g = mg.Graph()
    y = g.oneHot(g.constant(2, dataType=mg.int32), 4)
    z = g.oneHot(g.constant([1, 2], dataType=mg.int32), 0, axis=0)
    assert y.shape == [4] and z.shape == [0, 2]
    gy, gz = _run(g, {}, [y, z])
    np.testing.assert_array_equal(gy, [0, 0, 1, 0])
    assert gz.shape == (0, 2)


def test_one_hot_feeds_the_loss(rng):
    """The common pairing: class indices -> oneHot -> softMaxCrossEntropy (mean)."""
    cls = np.array([1, 0, 3], np.int32)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    g = mg.Graph()
    tc, tx = g.placeholder([3], mg.int32), g.placeholder([3, 4])
    loss = g.softMaxCrossEntropy(tx, g.oneHot(tc, 4), -1, R.mean)
    dx = g.gradientForPrimaryTensor(loss, [tx])[tx]
    got, gdx = _run(g, {tc: cls, tx: x}, [loss, dx])
    lp = log_softmax_ref(x, 1)
    np.testing.assert_allclose(got.reshape(()), -lp[np.arange(3), cls].mean(), rtol=1e-6)
    want = (np.exp(lp) - np.eye(4)[cls]) / 3
    np.testing.assert_allclose(gdx, want, rtol=1e-5, atol=1e-7)


@settings(deadline=None, derandomize=True, max_examples=25)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_property_labels_broadcast_and_reductions(shape, data):
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    red = data.draw(st.sampled_from(REDUCTIONS))
    # labels: drop some leading dims, set some dims to 1
    k = data.draw(st.integers(0, rank))
    lab_shape = [1 if data.draw(st.booleans()) else s for s in shape[k:]]
    rng = np.random.default_rng(len(shape) * 7 + k)
    x = rng.standard_normal(shape).astype(np.float32)
    lab = rng.random(lab_shape).astype(np.float32)
    g = mg.Graph()
    tx, tl = g.placeholder(shape), g.placeholder(lab_shape)
    y = g.softMaxCrossEntropy(tx, tl, axis, red)
    dl = g.gradientForPrimaryTensor(y, [tl])[tl]
    got, gdl = _run(g, {tx: x, tl: lab}, [y, dl])
    np.testing.assert_allclose(got, ce_ref(x, lab, axis, red), rtol=1e-5, atol=1e-6)
    assert gdl.shape == tuple(lab_shape)
    np.testing.assert_allclose(gdl, labels_grad_ref(x, shape, lab_shape, axis, red),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ errors
@pytest.fixture(params=[None, "myloss"], ids=["unnamed", "named"])
def name(request):
    return request.param


CE = "softMaxCrossEntropy"
CEG = "softMaxCrossEntropyGradient"


def _ce(shape=(3, 4), lab_shape=(3, 4), axis=1, red=R.none, dt=mg.float32, lab_dt=None,
        name=None):
    g = mg.Graph()
    x = g.placeholder(list(shape), dt)
    lab = g.placeholder(list(lab_shape), lab_dt or dt)
    return g.softMaxCrossEntropy(x, lab, axis, red, name=name)


def test_error_integer_source(name):
    expect_named(mg.DataTypeError, lambda: _ce(dt=mg.int32, lab_dt=mg.float32, name=name), CE,
           name, "source", "float32", "int32")


def test_error_labels_dtype_mismatch(name):
    expect_named(mg.DataTypeError, lambda: _ce(lab_dt=mg.float16, name=name), CE, name, "labels",
           "float32", "float16")


def test_error_labels_not_broadcastable(name):
    expect_named(mg.ShapeError, lambda: _ce(lab_shape=(3, 5), name=name), CE, name, "labels",
           "[3, 4]", "[3, 5]")
    expect_named(mg.ShapeError, lambda: _ce(lab_shape=(2, 3, 4), name=name), CE, name, "labels",
           "[2, 3, 4]")


@pytest.mark.parametrize("axis", [2, -3, 10])
def test_error_axis_out_of_range(name, axis):
    expect_named(mg.ShapeError, lambda: _ce(axis=axis, name=name), CE, name, "axis", "[-2, 1]",
           str(axis))


def test_error_axis_not_an_int(name):
    expect_named(mg.GraphError, lambda: _ce(axis=1.0, name=name), CE, name, "axis", "an int")
    expect_named(mg.GraphError, lambda: _ce(axis=True, name=name), CE, name, "axis", "an int")


def test_error_scalar_source(name):
    expect_named(mg.ShapeError, lambda: _ce(shape=(), lab_shape=(), axis=0, name=name), CE, name,
           "source", "rank >= 1")


@pytest.mark.parametrize("bad", [3, "mean", None, 1.0])
def test_error_bad_reduction_type(name, bad):
    expect_named(mg.GraphError, lambda: _ce(red=bad, name=name), CE, name,
           "reuctionType" if bad is not None else "reductionType", "LossReductionType")


def test_error_both_reduction_spellings(name):
    g = mg.Graph()
    x = g.placeholder([2, 3])
    expect_named(mg.GraphError, lambda: g.softMaxCrossEntropy(x, x, 1, R.sum, reductionType=R.sum,
                                                        name=name), CE, name, "reductionType",
           "both")


def test_error_gradient_op_bad_incoming_gradient_shape(name):
    g = mg.Graph()
    x, lab = g.placeholder([3, 4]), g.placeholder([3, 4])
    dy = g.placeholder([3, 4])  # the none loss is [3, 1]
    expect_named(mg.ShapeError, lambda: g.softMaxCrossEntropyGradient(dy, x, lab, 1, R.none,
                                                                name=name),
           CEG, name, "gradient", "[3, 1]", "[3, 4]")
    dy2 = g.placeholder([3])
    expect_named(mg.ShapeError, lambda: g.softMaxCrossEntropyGradient(dy2, x, lab, 1, R.sum,
                                                                name=name),
           CEG, name, "gradient", "[1, 1]")


def test_error_gradient_op_missing_and_duplicate_arguments(name):
    g = mg.Graph()
    x = g.placeholder([3, 4])
    expect_named(mg.GraphError, lambda: g.softMaxCrossEntropyGradient(x, x, None, 1, R.sum,
                                                                name=name),
           CEG, name, "labels", "a Tensor")
    expect_named(mg.GraphError, lambda: g.softMaxCrossEntropyGradient(x, x, x, 1, R.sum,
                                                                sourceTensor=x, name=name),
           CEG, name, "sourceTensor", "both")


def test_error_run_time_shape_check_with_dynamic_dims():
    g = mg.Graph()
    x = g.placeholder([-1, 4])
    lab = g.placeholder([-1, 4])
    y = g.softMaxCrossEntropy(x, lab, 1, R.none)
    assert y.shape == [-1, 1]
    with pytest.raises(mg.ShapeError, match="softMaxCrossEntropy: argument 'labels'"):
        g.run({x: np.zeros((3, 4), np.float32), lab: np.zeros((2, 4), np.float32)}, [y])


OH = "oneHot"


def test_error_one_hot_float_indices(name):
    g = mg.Graph()
    expect_named(mg.DataTypeError, lambda: g.oneHot(g.placeholder([3]), 4, name=name), OH, name,
           "indices", "integer", "float32")


@pytest.mark.parametrize("depth", [-1, 2.0, "3"])
def test_error_one_hot_depth(name, depth):
    g = mg.Graph()
    cls = mg.ShapeError if depth == -1 else mg.GraphError
    expect_named(cls, lambda: g.oneHot(g.placeholder([3], mg.int32), depth, name=name), OH, name,
           "depth", "an int")


@pytest.mark.parametrize("axis", [3, -4])
def test_error_one_hot_axis(name, axis):
    g = mg.Graph()
    expect_named(mg.ShapeError, lambda: g.oneHot(g.placeholder([3, 2], mg.int32), 4, axis=axis,
                                           name=name), OH, name, "axis", "[-3, 2]", str(axis))


@pytest.mark.parametrize("dt,arg,kw", [
    (mg.int32, "onValue", {"onValue": 0.5}), (mg.uInt8, "offValue", {"offValue": -1}),
    (mg.bool, "onValue", {"onValue": 2}), (mg.int8, "onValue", {"onValue": 300}),
    (mg.float32, "onValue", {"onValue": "1"})])
def test_error_one_hot_value_not_representable(name, dt, arg, kw):
    g = mg.Graph()
    expect_named(mg.DataTypeError, lambda: g.oneHot(g.placeholder([3], mg.int32), 4, dataType=dt,
                                              name=name, **kw), OH, name, arg, repr(dt))


@pytest.mark.parametrize("dt", [mg.DataType.invalid, mg.DataType.complexFloat32, "float32",
                                True])
def test_error_one_hot_bad_data_type(name, dt):
    g = mg.Graph()
    expect_named(mg.DataTypeError, lambda: g.oneHot(g.placeholder([3], mg.int32), 4, dataType=dt,
                                              name=name), OH, name, "dataType")

