"""The implicit-GEMM Triton convolutions of NHWC data with HWIO weights (kernels/conv_igemm.py)
against float64 torch.nn.functional.conv2d and its autograd gradients (an independent oracle),
and the "igemm" path of backends/torch/convolution.py through the graph.

Geometries: strides, dilations, asymmetric padding (wider than the kernel too), size-1 axes,
channel counts that are not a multiple of the channel block, more than one output-channel
block, a weights gradient split over pixels (summed by `_sum_splits`), a strided (non-
contiguous) source, size-0 axes. Results are NaN-poisoned first where the kernel writes into a
given buffer; the tolerance is the error bound of one float32-accumulated sum of products of
operands rounded to the kernel's product precision (TF32 for float32 on the GPU), rounded once
to the dtype: |got - exact| <= ulp-ish(dtype) |exact| + 4 eps_product (the sum of |terms|).
On the CPU the kernels run under TRITON_INTERPRET=1."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import triton_kernels  # noqa: E402

ig, = triton_kernels("conv_igemm")

import mpsgraph as mg  # noqa: E402
from mpsgraph.backends.torch import convolution as conv  # noqa: E402

F = torch.nn.functional
TL = mg.TensorNamedDataLayout
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ON = [pytest.param(DEVICE, marks=pytest.mark.gpu) if DEVICE == "cuda" else DEVICE]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# the dtype's rounding of the result, the product precision's (TF32 for float32)
ROUND = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}
PRODUCT = {torch.float32: 2.0**-10, torch.float16: 2.0**-22, torch.bfloat16: 2.0**-22}

# name: (N, H, W, C, O, (kH, kW), stride, dilation, pads (top, bottom, left, right))
GEOMETRIES = {
    "3x3": (2, 5, 6, 3, 4, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    "2x3-s21-d12-asym": (1, 7, 5, 20, 17, (2, 3), (2, 1), (1, 2), (0, 1, 2, 0)),
    "3x3-d2-widepad": (2, 6, 6, 16, 16, (3, 3), (1, 1), (2, 2), (5, 2, 0, 4)),
    "1x1-many-channels": (3, 4, 4, 70, 130, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
    "5x5-s2": (2, 9, 8, 33, 9, (5, 5), (2, 2), (1, 1), (2, 2, 2, 2)),
    "1x1-pixel": (1, 1, 1, 5, 3, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
    "3x1-one-row": (2, 1, 9, 2, 1, (1, 3), (1, 1), (1, 1), (0, 0, 1, 1)),
    "wgrad-splits": (2, 32, 32, 16, 8, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),
}


def _out_hw(h, w, k, s, d, p):
    return ((h + p[0] + p[1] - d[0] * (k[0] - 1) - 1) // s[0] + 1,
            (w + p[2] + p[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1)


def _oracle(x, w, dy, s, d, p):
    """float64 (y, dx, dW) and the same three sums over |terms|, NHWC / HWIO."""
    def run(xv, wv, dyv):
        xn = xv.permute(0, 3, 1, 2).double().contiguous().requires_grad_()
        wn = wv.permute(3, 2, 0, 1).double().contiguous().requires_grad_()
        y = F.conv2d(F.pad(xn, (p[2], p[3], p[0], p[1])), wn, stride=s, dilation=d)
        y.backward(dyv.permute(0, 3, 1, 2).double())
        return (y.detach().permute(0, 2, 3, 1), xn.grad.permute(0, 2, 3, 1),
                wn.grad.permute(2, 3, 1, 0))
    return run(x.cpu(), w.cpu(), dy.cpu()), run(x.cpu().abs(), w.cpu().abs(), dy.cpu().abs())


def _check(got, exact, absum, dtype, what):
    assert got.dtype == dtype and not torch.isnan(got).any(), what
    err = (got.cpu().double() - exact).abs()
    bound = ROUND[dtype] * exact.abs() + 4 * PRODUCT[dtype] * absum + 1e-30
    worst = (err / bound).max().item() if err.numel() else 0.0
    assert worst <= 1.0, f"{what}: error {worst:.2f}x the bound"


@pytest.mark.parametrize("device", ON)
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("geo", list(GEOMETRIES))
def test_three_ops_against_float64(geo, dt, device):
    n, h, w, c, o, k, s, d, p = GEOMETRIES[geo]
    dtype = DTYPES[dt]
    g = torch.Generator().manual_seed(sum(map(ord, geo + dt)))
    x = torch.randn((n, h, w, c), generator=g).to(device, dtype)
    wt = torch.randn((*k, c, o), generator=g).to(device, dtype)
    ho, wo = _out_hw(h, w, k, s, d, p)
    dy = torch.randn((n, ho, wo, o), generator=g).to(device, dtype)
    (y, dx, dw), (ya, dxa, dwa) = _oracle(x, wt, dy, s, d, p)
    _check(ig.forward(x, wt, (ho, wo), s, d, p), y, ya, dtype, "forward")
    if s == (1, 1):
        _check(ig.data_gradient(dy, wt, x.shape, d, p), dx, dxa, dtype, "data gradient")
    _check(ig.weights_gradient(dy, x, k, s, d, p), dw, dwa, dtype, "weights gradient")


def test_the_weights_gradient_really_splits():
    """The "wgrad-splits" geometry runs more than one pixel split (so `_sum_splits` is tested)."""
    n, h, w, c, o, k = GEOMETRIES["wgrad-splits"][:6]
    *_, splits, _ = ig._wgrad_plan(n * h * w, 1, c, o, 4)
    assert splits > 1


@pytest.mark.parametrize("device", ON)
def test_strided_source_and_size_zero_axes(device):
    g = torch.Generator().manual_seed(3)
    big = torch.randn((2, 9, 12, 8), generator=g).to(device, torch.bfloat16)
    x = big[:, ::2, 1::2, :]  # channel stride 1, the other strides not a fresh tensor's
    assert not x.is_contiguous()
    wt = torch.randn((3, 3, 8, 5), generator=g).to(device, torch.bfloat16)
    s, d, p = (1, 1), (1, 1), (1, 1, 1, 1)
    ho, wo = _out_hw(5, 6, (3, 3), s, d, p)
    dy = torch.randn((2, ho, wo, 5), generator=g).to(device, torch.bfloat16)
    (y, _, dw), (ya, _, dwa) = _oracle(x, wt, dy, s, d, p)
    _check(ig.forward(x, wt, (ho, wo), s, d, p), y, ya, torch.bfloat16, "forward")
    _check(ig.weights_gradient(dy, x, (3, 3), s, d, p), dw, dwa, torch.bfloat16, "wgrad")
    # size 0: no pixels -> empty; no input channels -> zeros
    e = torch.zeros((0, 4, 4, 3), device=device)
    assert ig.forward(e, torch.ones((1, 1, 3, 2), device=device), (4, 4)).shape == (0, 4, 4, 2)
    z = ig.forward(torch.ones((1, 4, 4, 0), device=device), torch.ones((1, 1, 0, 2),
                   device=device), (4, 4))
    assert z.shape == (1, 4, 4, 2) and not z.any()
    dwz = ig.weights_gradient(torch.ones((0, 4, 4, 2), device=device), e, (1, 1))
    assert dwz.shape == (1, 1, 3, 2) and not dwz.any()


def test_rejects_a_non_unit_channel_stride():
    x = torch.zeros((1, 4, 4, 6), device=DEVICE)[..., ::2]
    with pytest.raises(ValueError, match="unit channel stride"):
        ig.forward(x, torch.zeros((1, 1, 3, 2), device=DEVICE), (4, 4))


# ------------------------------------------------------------ the "igemm" path of the graph
def _descriptor(s, d, p, groups=1):
    return mg.Convolution2DOpDescriptor(
        strideInX=s[1], strideInY=s[0], dilationRateInX=d[1], dilationRateInY=d[0],
        groups=groups, paddingStyle=mg.PaddingStyle.explicit, paddingTop=p[0],
        paddingBottom=p[1], paddingLeft=p[2], paddingRight=p[3], dataLayout=TL.NHWC,
        weightsLayout=TL.HWIO)


def _graph_run(geo, dtype, monkeypatch, want="igemm"):
    """The three ops of GEOMETRIES[geo] through the graph with every path choice replaced by
    `want` where it is a candidate; returns ({op: (paths, taken)}, results, oracle)."""
    seen = {}

    def pick(op, a, shapes, t, paths, hand, run):
        seen[op] = (list(paths), want if want in paths else hand)
        return seen[op][1]

    monkeypatch.setattr(conv, "_pick", pick)
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # (read only on the CPU: _triton_available)
    n, h, w, c, o, k, s, d, p = GEOMETRIES[geo]
    ho, wo = _out_hw(h, w, k, s, d, p)
    rng = np.random.default_rng(5)
    vals = {"x": rng.standard_normal((n, h, w, c)), "w": rng.standard_normal((*k, c, o)),
            "dy": rng.standard_normal((n, ho, wo, o))}
    mdt = {torch.float32: mg.float32, torch.bfloat16: mg.bFloat16,
           torch.float16: mg.float16}[dtype]
    g = mg.Graph()
    ph = {name: g.placeholder(list(v.shape), dataType=mdt, name=name)
          for name, v in vals.items()}
    desc = _descriptor(s, d, p)
    outs = [g.convolution2D(ph["x"], weights=ph["w"], descriptor=desc),
            g.convolution2DDataGradient(ph["dy"], weights=ph["w"], outputShape=[n, h, w, c],
                                        forwardConvolutionDescriptor=desc),
            g.convolution2DWeightsGradient(ph["dy"], source=ph["x"], outputShape=[*k, c, o],
                                           forwardConvolutionDescriptor=desc)]
    ts = {name: torch.tensor(v).to(dtype) for name, v in vals.items()}
    npdt = {torch.float32: np.float32, torch.bfloat16: ml_dtypes.bfloat16,
            torch.float16: np.float16}[dtype]
    got = g.run({ph[name]: ts[name].float().numpy().astype(npdt) for name in vals}, outs,
                device="cuda" if DEVICE == "cuda" else "torch-cpu")
    return seen, [got[t] for t in outs], _oracle(ts["x"], ts["w"], ts["dy"], s, d, p)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("geo", ["3x3", "2x3-s21-d12-asym", "3x3-d2-widepad"])
def test_igemm_path_through_the_graph(geo, dt, monkeypatch):
    dtype = DTYPES[dt]
    seen, got, (exact, absum) = _graph_run(geo, dtype, monkeypatch)
    stride1 = GEOMETRIES[geo][6] == (1, 1)
    assert seen["forward"][1] == seen["weights_grad"][1] == "igemm", seen
    assert (seen["data_grad"][1] == "igemm") == stride1  # (the data gradient: stride 1 only)
    for name, v, e, a in zip(("forward", "data gradient", "weights gradient"), got, exact,
                             absum):
        t = torch.from_numpy(np.asarray(v.numpy()).astype(np.float64))
        _check(t.to(dtype), e, a, dtype, name)


def test_float32_graphs_keep_ieee_products(monkeypatch):
    """A float32 graph runs float32 products unless TF32 is allowed (docs/semantics.md): the
    TF32 kernels are then no candidate, and the results are float32-exact."""
    seen, got, (exact, absum) = _graph_run("3x3", torch.float32, monkeypatch)
    assert all("igemm" not in paths for paths, _ in seen.values()), seen
    for v, e, a in zip(got, exact, absum):
        t = torch.from_numpy(np.asarray(v.numpy()).astype(np.float64))
        assert ((t - e).abs() <= 1e-5 * a + 1e-6).all()


def test_igemm_not_offered_outside_its_cases(monkeypatch):
    """Grouped convolutions, NCHW data, float32 without TF32: no "igemm" candidate."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    t32 = torch.zeros(1, device=DEVICE)
    th = torch.zeros(1, device=DEVICE, dtype=torch.bfloat16)

    def attrs(**kw):
        base = dict(stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=1,
                    data_layout=TL.NHWC, weights_layout=TL.HWIO, out_shape=[1, 1, 1, 1])
        base.update(kw)
        return _attrs(base)

    assert conv._igemm("forward", attrs(), th, 9)
    assert not conv._igemm("forward", attrs(groups=2), th, 9)
    assert not conv._igemm("forward", attrs(data_layout=TL.NCHW), th, 9)
    assert not conv._igemm("forward", attrs(weights_layout=TL.OIHW), th, 9)
    assert not conv._igemm("data_grad", attrs(stride=(2, 1)), th, 9)
    assert conv._igemm("weights_grad", attrs(stride=(2, 1)), th, 9)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert not conv._igemm("forward", attrs(), t32, 9)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert conv._igemm("forward", attrs(), t32, 9)


def _attrs(fields):
    """A Conv2DAttrs with just the fields `_igemm` reads."""
    import types
    return types.SimpleNamespace(**fields)
