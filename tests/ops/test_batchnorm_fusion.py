"""The batch-norm training pattern's compile-time and gradient-time shortcuts, against float64
NumPy references (not our kernels):

- runtime/plan_fusion.py: mean(x, A) and variance(x, [mean,] A) of one x become one plan step
  (`varianceMean`), and only then (other axes, another x, another mean: two steps);
- ops/arithmetic.py `_times`: the gradient of sum(y * dy) reaching y is dy itself (no ones
  materialised, no multiplication), exactly, NaN and infinities included; ones that widen the
  other operand still multiply;
- the whole training step's gradients against central finite differences of the float64
  reference (NCHW, NHWC, size-1 axes, a 2-D batch);
- the Triton kernels of the torch backend (kernels/batchnorm.py, under TRITON_INTERPRET=1 on
  the CPU) really run for the pattern, and give the float64 numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

EPS = 1e-3


def _ref(x, gamma, beta, axes, eps=EPS):
    """float64 batch norm: y, mean, variance."""
    ax = tuple(axes)
    m = x.mean(ax, keepdims=True)
    v = ((x - m) ** 2).mean(ax, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * gamma + beta, m, v


def _graph(shape, axes, pshape, given_mean=True, mean_axes=None):
    g = mg.Graph()
    x = g.placeholder(list(shape), name="x")
    gamma = g.placeholder(list(pshape), name="gamma")
    beta = g.placeholder(list(pshape), name="beta")
    dy = g.placeholder(list(shape), name="dy")
    m = g.mean(x, axes if mean_axes is None else mean_axes)
    v = g.variance(x, mean=m, axes=axes) if given_mean else g.variance(x, axes=axes)
    y = g.normalize(x, m, v, gamma=gamma, beta=beta, epsilon=EPS)
    loss = g.reductionSum(g.multiplication(y, dy))
    grads = g.gradientForPrimaryTensor(loss, [x, gamma, beta])
    return g, [x, gamma, beta, dy], [y, m, v, grads[x], grads[gamma], grads[beta]]


def _data(shape, pshape, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 2 + 0.5).astype(np.float32),
            rng.uniform(0.5, 1.5, pshape).astype(np.float32),
            rng.standard_normal(pshape).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32)]


def _compile(g, feeds, targets, data, device):
    return g.compile({f: mg.ShapedType(list(a.shape), mg.float32) for f, a in zip(feeds, data)},
                     targets, device=mg.Device(device))


def _kinds(exe):
    return [(st.kind, tuple(o.kind for o in st.fused)) for st in exe._steps]


def _analytic(x, gamma, beta, dy, axes):
    """float64 [y, m, v, dx, dgamma, dbeta] (closed form of the batch-norm gradient)."""
    ax = tuple(axes)
    y, m, v = _ref(x, gamma, beta, axes)
    r = 1 / np.sqrt(v + EPS)
    xh = (x - m) * r
    dyg = dy * gamma
    dx = r * (dyg - dyg.mean(ax, keepdims=True) - xh * (dyg * xh).mean(ax, keepdims=True))
    return [y, m, v, dx, (dy * xh).sum(ax, keepdims=True), dy.sum(ax, keepdims=True)]


CASES = [((4, 3, 5, 2), [0, 2, 3], [1, 3, 1, 1]),  # NCHW
         ((4, 5, 2, 3), [0, 1, 2], [1, 1, 1, 3]),  # NHWC
         ((3, 2, 1, 4), [0, 2, 3], [1, 2, 1, 1]),  # a size-1 spatial axis
         ((1, 4, 3, 3), [0, 2, 3], [1, 4, 1, 1]),  # batch of one
         ((6, 5), [0], [1, 5])]                    # a 2-D batch


@pytest.mark.parametrize("given_mean", [True, False])
@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
@pytest.mark.parametrize("device", DEVICES)
def test_pattern_is_one_statistics_step_and_exact(device, case, given_mean):
    shape, axes, pshape = case
    g, feeds, targets = _graph(shape, axes, pshape, given_mean)
    data = _data(shape, pshape)
    exe = _compile(g, feeds, targets, data, device)
    kinds = _kinds(exe)
    assert kinds[0] == ("variance", ("reductionMean", "variance"))
    # and nothing else: normalize, then the whole backward in one op (no seed, no multiply)
    assert [k for k, _ in kinds[1:]] == ["normalize", "normalizationGradients"]
    want = _analytic(*[a.astype(np.float64) for a in data], axes)
    for got, ref in zip(exe.run(data), want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=2e-4, atol=2e-5 * max(
            1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("device", DEVICES)
def test_no_pairing_where_the_pattern_is_not_there(device):
    shape, pshape = (4, 3, 5, 2), [1, 3, 1, 1]
    data = _data(shape, pshape, 1)
    x64 = data[0].astype(np.float64)
    # the mean over other axes than the variance's: two separate steps, still the semantics
    g = mg.Graph()
    x = g.placeholder(list(shape))
    other = g.placeholder(list(shape))
    m_other_axes = g.mean(x, [0, 2])
    v1 = g.variance(x, axes=[0, 2, 3])
    m_of_other = g.mean(other, [0, 2, 3])
    v2 = g.variance(x, mean=m_of_other, axes=[0, 2, 3])  # a mean of another tensor
    exe = g.compile({x: mg.ShapedType(list(shape), mg.float32),
                     other: mg.ShapedType(list(shape), mg.float32)},
                    [m_other_axes, v1, m_of_other, v2], device=mg.Device(device))
    assert all(not st.fused for st in exe._steps)
    o64 = data[3].astype(np.float64)
    mo = o64.mean((0, 2, 3), keepdims=True)
    want = [x64.mean((0, 2), keepdims=True), x64.var((0, 2, 3), keepdims=True), mo,
            ((x64 - mo) ** 2).mean((0, 2, 3), keepdims=True)]
    for got, ref in zip(exe.run([data[0], data[3]]), want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_pairing_with_a_mean_used_twice_and_empty_axes(device):
    """A mean also used elsewhere keeps its value; axes=[] (nothing reduced) pairs too."""
    shape = (3, 4)
    rng = np.random.default_rng(2)
    xv = rng.standard_normal(shape).astype(np.float32)
    g = mg.Graph()
    x = g.placeholder(list(shape))
    m = g.mean(x, [1])
    v = g.variance(x, mean=m, axes=[1])
    twice = g.addition(m, m)
    m0 = g.mean(x, [])
    v0 = g.variance(x, mean=m0, axes=[])
    exe = g.compile({x: mg.ShapedType(list(shape), mg.float32)}, [v, twice, m0, v0],
                    device=mg.Device(device))
    assert sum(bool(st.fused) for st in exe._steps) == 2
    x64 = xv.astype(np.float64)
    want = [x64.var(1, keepdims=True), 2 * x64.mean(1, keepdims=True), x64, np.zeros(shape)]
    for got, ref in zip(exe.run([xv]), want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_through_ones_is_the_other_operand_exactly(device):
    g = mg.Graph()
    a = g.placeholder([3, 4], name="a")
    b = g.placeholder([3, 4], name="b")
    c = g.placeholder([4], name="c")
    loss = g.reductionSum(g.multiplication(a, b))
    ga = g.gradientForPrimaryTensor(loss, [a, b])
    # ones that would widen the other operand: sum(a * c) w.r.t. c sums a's rows
    loss2 = g.reductionSum(g.multiplication(a, c))
    gc = g.gradientForPrimaryTensor(loss2, [a, c])
    av = np.array([[1, -2, np.nan, np.inf], [0.5, -0.0, 3, 4], [5, 6, -np.inf, 7]], np.float32)
    bv = np.array([[np.inf, 1, 2, np.nan], [-0.0, 2, -3, 1e-40], [1, 2, 3, 4]], np.float32)
    cv = np.array([1, 2, 3, 4], np.float32)
    feeds = {a: mg.ShapedType([3, 4], mg.float32), b: mg.ShapedType([3, 4], mg.float32),
             c: mg.ShapedType([4], mg.float32)}
    plain = g.compile({a: feeds[a], b: feeds[b]}, [ga[a], ga[b]], device=mg.Device(device))
    assert not any(st.kind in ("multiplication", "broadcast") for st in plain._steps)
    exe = g.compile(feeds, [ga[a], ga[b], gc[a], gc[c]], device=mg.Device(device))
    da, db, da2, dc = (r.numpy() for r in exe.run([av, bv, cv]))
    np.testing.assert_array_equal(da, bv)  # NaN, infinities, -0 and subnormals as they are
    assert np.signbit(da[1, 0]) and np.signbit(db[1, 1])
    np.testing.assert_array_equal(db, av)
    np.testing.assert_array_equal(da2, np.broadcast_to(cv, (3, 4)))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(dc, av.astype(np.float64).sum(0).astype(np.float32))


def _loss64(x, gamma, beta, w, axes):
    return float((_ref(x, gamma, beta, axes)[0] * w).sum())


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
@pytest.mark.parametrize("device", DEVICES)
def test_gradients_match_finite_differences(device, case):
    shape, axes, pshape = case
    g, feeds, targets = _graph(shape, axes, pshape)
    data = _data(shape, pshape, 3)
    exe = _compile(g, feeds, targets, data, device)
    got = [r.numpy().astype(np.float64) for r in exe.run(data)[3:]]
    x, gamma, beta, w = (a.astype(np.float64) for a in data)
    args = [x, gamma, beta]
    h = 1e-5
    for k, dk in enumerate(got):
        fd = np.zeros_like(args[k])
        for idx in np.ndindex(*args[k].shape):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[k][idx] += h
            minus[k][idx] -= h
            fd[idx] = (_loss64(*plus, w, axes) - _loss64(*minus, w, axes)) / (2 * h)
        np.testing.assert_allclose(dk, fd, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(fd).max()))


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
def test_triton_kernels_run_for_the_pattern(monkeypatch, case):
    """The Triton kernels (kernels/batchnorm.py; on the CPU: torch-cpu under
    TRITON_INTERPRET=1): every part of the step goes through them, with the float64 numbers."""
    torch = pytest.importorskip("torch")
    from helpers import triton_kernels

    bn, = triton_kernels("batchnorm")
    device = "cuda" if torch.cuda.is_available() else "torch-cpu"
    if device == "torch-cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("MPSGRAPH_NO_TRITON", raising=False)
    calls = []
    for name in ("statistics", "normalize", "backward"):
        real = getattr(bn, name)
        monkeypatch.setattr(bn, name, lambda *a, _r=real, _n=name, **k: (calls.append(_n),
                                                                         _r(*a, **k))[1])
    shape, axes, pshape = case
    g, feeds, targets = _graph(shape, axes, pshape)
    data = _data(shape, pshape, 4)
    exe = _compile(g, feeds, targets, data, device)
    outs = exe.run(data)
    assert calls == ["statistics", "normalize", "backward"]
    want = _analytic(*[a.astype(np.float64) for a in data], axes)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=2e-4, atol=2e-5 * max(
            1.0, float(np.abs(ref).max())))
