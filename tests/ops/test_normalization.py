"""The normalization family (ops/normalization.py) as a batch norm: normalize with the batch
statistics mean / variance, differentiated by gradientForPrimaryTensor in a compiled
Executable, against torch.nn.functional.batch_norm's forward and autograd (float64) on NCHW
and NHWC; the fused rule against the chain it replaces; the rule's guard (a requested mean or
variance turns the fusion off)."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

torch = pytest.importorskip("torch")


def _bn_graph(shape, axes, pshape, eps, with_mean):
    g = mg.Graph()
    x = g.placeholder(list(shape))
    gamma = g.placeholder(list(pshape))
    beta = g.placeholder(list(pshape))
    dy = g.placeholder(list(shape))
    m = g.mean(x, axes)
    v = g.variance(x, mean=m if with_mean else None, axes=axes)
    y = g.normalize(x, m, v, gamma=gamma, beta=beta, epsilon=eps)
    loss = g.reductionSum(g.multiplication(y, dy))
    grads = g.gradientForPrimaryTensor(loss, [x, gamma, beta])
    return g, (x, gamma, beta, dy), [y, grads[x], grads[gamma], grads[beta], m, v]


def _torch_bn(x, gamma, beta, dy, channel, eps):
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    c = x.shape[channel]
    gt = torch.tensor(gamma.reshape(c), dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(beta.reshape(c), dtype=torch.float64, requires_grad=True)
    xm = xt.movedim(channel, 1)
    y = torch.nn.functional.batch_norm(xm, None, None, gt, bt, training=True, eps=eps)
    y = y.movedim(1, channel)
    (y * torch.tensor(dy, dtype=torch.float64)).sum().backward()
    return [y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy().reshape(gamma.shape),
            bt.grad.numpy().reshape(beta.shape)]


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("with_mean", [False, True])
@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_matches_torch(device, layout, with_mean):
    rng = np.random.default_rng(17)
    n, c, h, w = 8, 5, 6, 7
    shape = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    channel = 1 if layout == "NCHW" else 3
    axes = [0, 2, 3] if layout == "NCHW" else [0, 1, 2]
    pshape = [1, c, 1, 1] if layout == "NCHW" else [c]
    eps = 1e-5
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    gamma = rng.uniform(0.5, 2, pshape).astype(np.float32)
    beta = rng.uniform(-1, 1, pshape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    g, phs, outs = _bn_graph(shape, axes, pshape, eps, with_mean)
    kinds = {o.kind for o in g._ops}
    assert "normalizationGradients" in kinds  # the fused rule
    exe = g.compile({p: mg.ShapedType(list(a.shape), mg.float32)
                     for p, a in zip(phs, (x, gamma, beta, dy))}, outs, device=device)
    for _ in range(2):  # a compiled executable, run twice
        got = [r.numpy().astype(np.float64) for r in exe.run([x, gamma, beta, dy])]
    want = _torch_bn(x, gamma, beta, dy, channel, eps)
    for k, (a, b) in enumerate(zip(got[:4], want)):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4 * np.abs(b).max(),
                                   err_msg=f"output {k}")
    xf = x.astype(np.float64)
    np.testing.assert_allclose(got[4], xf.mean(axis=tuple(axes), keepdims=True), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(got[5], xf.var(axis=tuple(axes), keepdims=True), rtol=1e-4)


def test_fused_rule_equals_the_chain():
    """Requesting the mean itself turns the fusion off (the chain through mean / variance
    runs); the gradient of x is the same either way."""
    rng = np.random.default_rng(3)
    g = mg.Graph()
    x = g.placeholder([6, 4, 3])
    gam = g.placeholder([1, 4, 1])
    m = g.mean(x, [0, 2])
    v = g.variance(x, axes=[0, 2])
    y = g.normalize(x, m, v, gamma=gam, epsilon=1e-3)
    u = g.constant(rng.standard_normal((6, 4, 3)).astype(np.float32))
    loss = g.reductionSum(g.multiplication(g.multiplication(y, y), u))
    n_before = len(g._ops)
    fused = g.gradientForPrimaryTensor(loss, [x, gam])
    assert any(o.kind == "normalizationGradients" for o in g._ops[n_before:])
    n_before = len(g._ops)
    chain = g.gradientForPrimaryTensor(loss, [x, gam, m])
    assert not any(o.kind.startswith("normalizationGradient") for o in g._ops[n_before:])
    xv = rng.standard_normal((6, 4, 3)).astype(np.float32)
    gv = rng.uniform(0.5, 2, (1, 4, 1)).astype(np.float32)
    res = g.run({x: xv, gam: gv}, [fused[x], chain[x], fused[gam], chain[gam], chain[m]])
    np.testing.assert_allclose(res[fused[x]].numpy(), res[chain[x]].numpy(), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(res[fused[gam]].numpy(), res[chain[gam]].numpy(), rtol=1e-5)
    # d loss / d m through normalize (m as an independent input): -sum(dy g r) over x's axes
    assert res[chain[m]].numpy().shape == (1, 4, 1)


def test_population_variance_and_empty_slices():
    g = mg.Graph()
    x = g.placeholder([3, 0])
    y = g.placeholder([4])
    a, b = g.variance(x, axes=[1]), g.variance(y, axes=[0])
    c = g.variance(y, mean=g.constant(0.0, dataType=mg.float32), axes=None)
    res = g.run({x: np.zeros((3, 0), np.float32), y: np.array([1, 2, 3, 4], np.float32)},
                [a, b, c])
    assert np.isnan(res[a].numpy()).all() and res[a].numpy().shape == (3, 1)
    assert res[b].numpy().tolist() == [1.25] and res[c].numpy().tolist() == [7.5]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(3, 0, 2), (0, 4, 2), (2, 3, 0)])
def test_batch_layout_with_empty_axes(device, shape):
    """The batch-norm layout with a size-0 axis (the fast paths' fused kernels divide by the
    channel count: they must not be reached): NaN statistics or empty results, no crash."""
    g = mg.Graph()
    x, dy = g.placeholder(list(shape)), g.placeholder(list(shape))
    c = shape[1]
    m, v = g.placeholder([1, c, 1]), g.placeholder([1, c, 1])
    outs = [g.normalizationGradient(dy, x, m, v, reductionAxes=[0, 2], epsilon=1e-5),
            g.normalizationGammaGradient(dy, x, m, v, reductionAxes=[0, 2], epsilon=1e-5),
            g.normalizationBetaGradient(dy, x, reductionAxes=[0, 2])]
    z = np.zeros(shape, np.float32)
    s = np.ones((1, c, 1), np.float32)
    res = g.run({x: z, dy: z, m: s, v: s}, outs, device=device)
    ref = g.run({x: z, dy: z, m: s, v: s}, outs, device="cpu")
    for o in outs:
        np.testing.assert_array_equal(res[o].numpy(), ref[o].numpy())


def test_gamma_varying_along_the_axes():
    """A gamma that varies along the reduced axes: the fused rule's normalizationGradient
    branch, against torch autograd of the definition."""
    rng = np.random.default_rng(5)
    g = mg.Graph()
    x, gam = g.placeholder([5, 3, 4]), g.placeholder([5, 3, 4])
    m = g.mean(x, [0, 2])
    v = g.variance(x, mean=m, axes=[0, 2])
    y = g.normalize(x, m, v, gamma=gam, epsilon=1e-3)
    u = rng.standard_normal((5, 3, 4)).astype(np.float32)
    loss = g.reductionSum(g.multiplication(y, g.constant(u)))
    n0 = len(g._ops)
    gr = g.gradientForPrimaryTensor(loss, [x, gam])
    assert any(o.kind == "normalizationGradient" for o in g._ops[n0:])
    xv = rng.standard_normal((5, 3, 4)).astype(np.float32)
    gv = rng.uniform(0.5, 2, (5, 3, 4)).astype(np.float32)
    res = g.run({x: xv, gam: gv}, [gr[x], gr[gam]])
    xt = torch.tensor(xv, dtype=torch.float64, requires_grad=True)
    gt = torch.tensor(gv, dtype=torch.float64, requires_grad=True)
    mt = xt.mean(dim=(0, 2), keepdim=True)
    vt = ((xt - mt) ** 2).mean(dim=(0, 2), keepdim=True)
    yt = (xt - mt) / torch.sqrt(vt + float(np.float32(1e-3))) * gt
    (yt * torch.tensor(u, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(res[gr[x]].numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(res[gr[gam]].numpy(), gt.grad.numpy(), rtol=1e-4, atol=1e-5)
