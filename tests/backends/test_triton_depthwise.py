"""The Triton depthwise convolution kernels (forward, data gradient, weights gradient) against
independent oracles: torch.nn.functional.conv2d in float64 (groups = C, F.pad for asymmetric
padding) and float64 autograd through it for the two gradients. NCHW and channels_last,
multipliers 1 and 2, strides, dilations, asymmetric padding wider than the kernel, float32 /
float16 / bfloat16. Every result buffer (`out`, and the weights gradient's buffer of partial
sums) is poisoned with NaN first, so an element a kernel fails to write is caught.

The tolerance is the error bound of one float32-accumulated sum rounded once to the dtype:
|got - exact| <= 2 ulp_dtype(exact) + 2 * terms * eps_f32 * (the same sum of |terms|).
On the CPU the kernels run under TRITON_INTERPRET=1 (set by this module when no GPU is present).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import triton_kernels  # noqa: E402

dwc, dww = triton_kernels("depthwise_conv", "depthwise_conv_wgrad")

import mpsgraph as mg  # noqa: E402

F = torch.nn.functional
DEVICES = ["cpu"] if not torch.cuda.is_available() else ["cuda"]
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

# name: (N, C, M, (H, W), (kH, kW), stride, dilation, pads (top, bottom, left, right))
GEOMETRIES = {
    "3x3": (3, 3, 1, (7, 9), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    "3x3-s2-m2": (1, 3, 2, (7, 9), (3, 3), (2, 2), (1, 1), (0, 2, 1, 0)),
    "5x3-s12-d21-widepad": (1, 2, 2, (7, 9), (5, 3), (1, 2), (2, 1), (4, 0, 3, 5)),
    "3x3-s12-d2": (3, 2, 1, (7, 9), (3, 3), (1, 2), (2, 2), (2, 3, 0, 1)),
    "1x1-s2": (3, 2, 1, (6, 5), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0)),
    "1x1-widepad-m2": (1, 2, 2, (5, 6), (1, 1), (1, 1), (1, 1), (2, 1, 3, 0)),
    "3x3-wide-row": (1, 2, 1, (3, 70), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # 2 column tiles
    "3x3-many-channels-m2": (1, 20, 2, (5, 4), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
}


def _oracle(x, w, dy, stride, dilation, pads):
    """float64 (y, dx, dw) by F.conv2d and autograd."""
    pt, pb, pl, pr = pads
    xr = x.detach().double().requires_grad_()
    wr = w.detach().double().requires_grad_()
    y = F.conv2d(F.pad(xr, (pl, pr, pt, pb)), wr, None, stride, 0, dilation, x.shape[1])
    y.backward(dy.double())
    return y.detach(), xr.grad, wr.grad


def _ulp(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    fi = torch.finfo(dtype)
    return fi.eps * torch.exp2(torch.floor(torch.log2(v.abs().clamp_min(fi.tiny))))


def _check(got: torch.Tensor, exact: torch.Tensor, abs_sum: torch.Tensor, terms: int,
           what: str) -> None:
    assert got.shape == exact.shape, (what, got.shape, exact.shape)
    g = got.detach().cpu().double()
    exact, abs_sum = exact.cpu(), abs_sum.cpu()
    assert torch.isfinite(g).all(), f"{what}: non-finite (an unwritten element?)"
    tol = 2 * _ulp(exact, got.dtype) + 2 * terms * 2.0**-24 * abs_sum
    err = (g - exact).abs()
    bad = err > tol
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {g.numel()} beyond the bound; worst "
                           f"error {float(err.max()):.3g} vs tol {float(tol[bad].min()):.3g}")


@pytest.fixture
def poison(monkeypatch):
    """Every torch.empty inside the kernels' wrappers comes back filled with NaN."""
    real = torch.empty

    def empty(*args, **kw):
        t = real(*args, **kw)
        return t.fill_(float("nan")) if t.is_floating_point() else t

    monkeypatch.setattr(dwc.torch, "empty", empty)  # the torch module: dww sees it too


def _make(geo, dtype, device, channels_last, seed=0):
    N, C, M, (H, W), k, stride, dilation, pads = geo
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N, C, H, W, generator=g).to(dtype)
    w = torch.randn(C * M, 1, *k, generator=g).to(dtype)
    with torch.no_grad():
        y = F.conv2d(F.pad(x.double(), (pads[2], pads[3], pads[0], pads[1])), w.double(), None,
                     stride, 0, dilation, C)
    dy = torch.randn(y.shape, generator=g).to(dtype)
    mf = torch.channels_last if channels_last else torch.contiguous_format
    x, dy = (t.to(device).contiguous(memory_format=mf) for t in (x, dy))
    return x, w.to(device), dy, mf


# float32 on every geometry; the half types on a subset (the interpreter is slow)
_HALF_GEOMETRIES = ("3x3", "3x3-s2-m2", "5x3-s12-d21-widepad", "1x1-s2")
_CASES = [(name, dt) for name in GEOMETRIES for dt in DTYPES
          if dt == "f32" or name in _HALF_GEOMETRIES]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("name,dt", _CASES)
def test_kernels_against_float64_autograd(device, layout, name, dt, poison):
    geo = GEOMETRIES[name]
    N, C, M, _, k, stride, dilation, pads = geo
    dtype = DTYPES[dt]
    x, w, dy, mf = _make(geo, dtype, device, layout == "NHWC")
    exact = _oracle(x.cpu(), w.cpu(), dy.cpu(), stride, dilation, pads)
    bound = _oracle(x.cpu().abs(), w.cpu().abs(), dy.cpu().abs(), stride, dilation, pads)
    kk = k[0] * k[1]

    y = dwc.forward(x, w, stride, dilation, pads)
    assert y.dtype == dtype and y.is_contiguous(memory_format=mf)
    _check(y, exact[0], bound[0], kk, "forward")
    out = torch.full(y.shape, float("nan"), dtype=dtype, device=device)
    out = out.contiguous(memory_format=mf)
    assert dwc.forward(x, w, stride, dilation, pads, out=out) is out
    assert torch.equal(out, y)

    dx = dwc.data_gradient(dy, w, x.shape, stride, dilation, pads)
    assert dx.dtype == dtype and dx.is_contiguous(memory_format=mf)
    _check(dx, exact[1], bound[1], M * kk, "data gradient")

    dw = dww.weights_gradient(dy, x, k, stride, dilation, pads)
    assert dw.dtype == dtype and dw.is_contiguous()
    terms = N * dy.shape[2] * dy.shape[3]
    _check(dw, exact[2], bound[2], terms, "weights gradient")
    if dt == "f32":  # one share, and one share per tile: the same sums in another order
        for splits in (1, 10**6):
            _check(dww.weights_gradient(dy, x, k, stride, dilation, pads, splits=splits),
                   exact[2], bound[2], terms, f"weights gradient, splits={splits}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_half_results_are_the_float32_results_rounded_once(device, layout, dt):
    # the same float32 sums, in the same order, then one rounding: bit-exact
    geo = GEOMETRIES["3x3-s2-m2"]
    _, C, M, _, k, stride, dilation, pads = geo
    x, w, dy, _ = _make(geo, DTYPES[dt], device, layout == "NHWC", seed=3)
    x32, w32, dy32 = (t.float() for t in (x, w, dy))
    assert torch.equal(dwc.forward(x, w, stride, dilation, pads),
                       dwc.forward(x32, w32, stride, dilation, pads).to(x.dtype))
    assert torch.equal(dwc.data_gradient(dy, w, x.shape, stride, dilation, pads),
                       dwc.data_gradient(dy32, w32, x.shape, stride, dilation, pads).to(x.dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_outputs_into_other_layouts_and_strided_weights(device, layout, poison):
    # the result written through `out` views of the other memory format (an HWIO weights view
    # for the weights gradient), weights given as an HWIO view: any strides are addressed
    geo = GEOMETRIES["3x3-s2-m2"]
    _, C, M, _, k, stride, dilation, pads = geo
    x, w, dy, _ = _make(geo, torch.float32, device, layout == "NHWC", seed=1)
    w_hwio = w.permute(2, 3, 1, 0).contiguous()  # [kH, kW, 1, O]
    wv = w_hwio.permute(3, 2, 0, 1)
    exact = _oracle(x.cpu(), w.cpu(), dy.cpu(), stride, dilation, pads)
    bound = _oracle(x.cpu().abs(), w.cpu().abs(), dy.cpu().abs(), stride, dilation, pads)
    other = torch.contiguous_format if layout == "NHWC" else torch.channels_last
    y = torch.full(exact[0].shape, float("nan"), device=device).contiguous(memory_format=other)
    dwc.forward(x, wv, stride, dilation, pads, out=y)
    _check(y, exact[0], bound[0], 9, "forward")
    dx = torch.full(x.shape, float("nan"), device=device).contiguous(memory_format=other)
    dwc.data_gradient(dy, wv, x.shape, stride, dilation, pads, out=dx)
    _check(dx, exact[1], bound[1], M * 9, "data gradient")
    g = torch.full(w_hwio.shape, float("nan"), device=device)
    dww.weights_gradient(dy, x, k, stride, dilation, pads, out=g.permute(3, 2, 0, 1))
    _check(g.permute(3, 2, 0, 1), exact[2], bound[2], dy[:, 0].numel(), "weights gradient")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_int64_offsets_path(device, layout, monkeypatch, poison):
    # the int64 offset path (taken for tensors of >= 2**31 elements) forced on small tensors
    monkeypatch.setattr(dwc, "needs_int64", lambda *ts: True)
    monkeypatch.setattr(dww, "needs_int64", lambda *ts: True)
    geo = GEOMETRIES["5x3-s12-d21-widepad"]
    N, C, M, _, k, stride, dilation, pads = geo
    x, w, dy, _ = _make(geo, torch.float32, device, layout == "NHWC", seed=2)
    exact = _oracle(x.cpu(), w.cpu(), dy.cpu(), stride, dilation, pads)
    bound = _oracle(x.cpu().abs(), w.cpu().abs(), dy.cpu().abs(), stride, dilation, pads)
    _check(dwc.forward(x, w, stride, dilation, pads), exact[0], bound[0], 15, "forward")
    _check(dwc.data_gradient(dy, w, x.shape, stride, dilation, pads), exact[1], bound[1],
           M * 15, "data gradient")
    _check(dww.weights_gradient(dy, x, k, stride, dilation, pads), exact[2], bound[2],
           dy[:, 0].numel(), "weights gradient")


def test_needs_int64():
    meta = lambda *s: torch.empty(*s, device="meta")  # noqa: E731 (sizes only, no storage)
    assert dwc.needs_int64(meta(2, 2**30)) and not dwc.needs_int64(meta(2, 2**30 - 1))
    assert dwc.needs_int64(meta(2, 2**30).t()) and not dwc.needs_int64(meta(0, 2**31))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_empty_batch_and_empty_source(device, layout):
    mf = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    w = torch.randn(6, 1, 3, 3, device=device)
    x = torch.empty(0, 3, 5, 4, device=device).contiguous(memory_format=mf)
    dy = torch.empty(0, 6, 5, 4, device=device).contiguous(memory_format=mf)
    pads = (1, 1, 1, 1)
    assert dwc.forward(x, w, (1, 1), (1, 1), pads).shape == (0, 6, 5, 4)
    assert dwc.data_gradient(dy, w, x.shape, (1, 1), (1, 1), pads).shape == (0, 3, 5, 4)
    dw = dww.weights_gradient(dy, x, (3, 3), (1, 1), (1, 1), pads)
    assert dw.shape == (6, 1, 3, 3) and not dw.any()
    # H == 0: every window lies in the padding (y = 0, dw = 0)
    x0 = torch.empty(2, 3, 0, 4, device=device)
    y = dwc.forward(x0, w, (1, 1), (1, 1), (2, 1, 1, 1))
    assert y.shape == (2, 6, 1, 4) and not y.any()
    dw = dww.weights_gradient(torch.ones(2, 6, 1, 4, device=device), x0, (3, 3), (1, 1), (1, 1),
                              (2, 1, 1, 1))
    assert not dw.any()


def test_supported(monkeypatch):
    dev = torch.device(DEVICES[0])
    if dev.type == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert dwc.supported(4, 4, 8, (3, 3), torch.float32, dev)
    assert dwc.supported(4, 4, 4, (8, 8), torch.bfloat16, dev)
    assert dwc.supported(1, 1, 5, (5, 3), torch.float16, dev)  # one channel, M = 5
    assert not dwc.supported(2, 4, 8, (3, 3), torch.float32, dev)  # groups != C
    assert not dwc.supported(4, 4, 6, (3, 3), torch.float32, dev)  # O % C != 0
    assert not dwc.supported(4, 4, 4, (9, 9), torch.float32, dev)  # too many taps
    assert not dwc.supported(4, 4, 4, (3, 3), torch.float64, dev)
    monkeypatch.setenv("MPSGRAPH_NO_TRITON", "1")
    assert not dwc.supported(4, 4, 8, (3, 3), torch.float32, dev)


# ------------------------------------------------------------------ through the graph
def _graph_case(dl: str, wl: str, C: int, M: int, groups: int, dtype):
    L = mg.TensorNamedDataLayout
    d = mg.Convolution2DOpDescriptor(strideInX=2, strideInY=1, dilationRateInX=1,
                                     dilationRateInY=2, groups=groups, paddingTop=2,
                                     paddingBottom=0, paddingLeft=1, paddingRight=3,
                                     dataLayout=getattr(L, dl), weightsLayout=getattr(L, wl))
    rng = np.random.default_rng(7)
    N, H, W, k = 2, 6, 7, (3, 2)
    x = rng.standard_normal((N, C, H, W))
    w = rng.standard_normal((C * M, C // groups, *k))
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    pads = (2, 0, 1, 3)
    y = F.conv2d(F.pad(xt, (1, 3, 2, 0)), wt, None, (1, 2), 0, (2, 1), groups)
    dy = rng.standard_normal(tuple(y.shape))
    exact = _oracle(xt, wt, torch.from_numpy(dy), (1, 2), (2, 1), pads) if groups == C else None
    npdt = dtype.numpy_dtype
    to_d = (lambda a: a.transpose(0, 2, 3, 1)) if dl == "NHWC" else (lambda a: a)
    to_w = (lambda a: a.transpose(2, 3, 1, 0)) if wl == "HWIO" else (lambda a: a)
    g = mg.Graph()
    xs, ws, dys = (np.ascontiguousarray(a).astype(npdt) for a in (to_d(x), to_w(w), to_d(dy)))
    xp = g.placeholder(list(xs.shape), dtype)
    wp = g.placeholder(list(ws.shape), dtype)
    dyp = g.placeholder(list(dys.shape), dtype)
    outs = [g.convolution2D(xp, wp, d),
            g.convolution2DDataGradient(dyp, wp, list(xs.shape), d),
            g.convolution2DWeightsGradient(dyp, xp, list(ws.shape), d)]
    return g, {xp: xs, wp: ws, dyp: dys}, outs, exact, (to_d, to_w)


@pytest.mark.parametrize("dl,wl", [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NHWC", "OIHW")])
def test_graph_runs_the_triton_kernels(monkeypatch, dl, wl):
    """convolution2D and both gradients of a depthwise descriptor (M = 2, strided, dilated,
    asymmetric padding) through the graph on the torch backend take the Triton path where it
    is used and match
    float64 autograd; a grouped (not depthwise) convolution does not take it."""
    device = "cuda" if torch.cuda.is_available() else "torch-cpu"
    if device == "torch-cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("MPSGRAPH_NO_TRITON", raising=False)
    calls = []
    for mod, name in ((dwc, "forward"), (dwc, "data_gradient"), (dww, "weights_gradient")):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda *a, _r=real, _n=name, **k: (calls.append(_n),
                                                                          _r(*a, **k))[1])
    g, feeds, outs, exact, (to_d, to_w) = _graph_case(dl, wl, 3, 2, 3, mg.float32)
    res = g.run(feeds, outs, device=device)
    # NHWC: only the data gradient (cuDNN's NHWC depthwise forward and weights gradient are
    # faster on the H200; see backends/torch/convolution.py)
    want_calls = ["data_gradient"] if dl == "NHWC" else [
        "data_gradient", "forward", "weights_gradient"]
    assert sorted(calls) == want_calls
    for t, want, conv in zip(outs, exact, (to_d, to_d, to_w)):
        got = res[t].numpy()
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_allclose(got, conv(want.numpy()), rtol=1e-5, atol=1e-5)
    calls.clear()
    g, feeds, outs, _, _ = _graph_case(dl, wl, 4, 1, 2, mg.float32)  # groups 2 of C 4
    g.run(feeds, outs, device=device)
    assert calls == []


@pytest.mark.gpu
def test_int64_offsets_on_a_large_tensor():
    """A bfloat16 source of 2**31 + elements on CUDA: the last rows against cuDNN in float32."""
    H, W = 2**15 + 8, 2**15
    x = torch.randn(1, 2, H, W, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(2, 1, 3, 3, dtype=torch.bfloat16, device="cuda")
    assert dwc.needs_int64(x)
    y = dwc.forward(x, w, (1, 1), (1, 1), (1, 1, 1, 1))
    tail = F.conv2d(F.pad(x[:, :, H - 5:].float(), (1, 1, 0, 1)), w.float(), groups=2)
    torch.testing.assert_close(y[:, :, H - 4:].float(), tail.to(torch.bfloat16).float(),
                               rtol=1e-2, atol=1e-2)
    del y
    dx = dwc.data_gradient(x, w, x.shape, (1, 1), (1, 1), (1, 1, 1, 1))  # dy = x (same size)
    flip = w.flip(2, 3)  # the adjoint of a stride-1 correlation: correlation with the flip
    tail = F.conv2d(F.pad(x[:, :, H - 5:].float(), (1, 1, 0, 1)), flip.float(), groups=2)
    torch.testing.assert_close(dx[:, :, H - 4:].float(), tail.to(torch.bfloat16).float(),
                               rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("shape", [(2, 5, 3, 7), (1, 1, 1, 1), (3, 4, 1, 2), (0, 3, 2, 2),
                                   (2, 3, 40, 50), (1, 2, 3, 1500)])  # (several column tiles)
def test_channel_scale_against_float64(device, layout, dt, shape):
    """The 1x1 depthwise convolution's scale kernel: y = t * w[c], the float32 product rounded
    once (exactly the float64 product rounded once: two operands of <= 24 bits)."""
    dtype = DTYPES[dt]
    g = torch.Generator().manual_seed(sum(shape) + len(dt))
    t = torch.randn(shape, generator=g).to(device, dtype)
    c = shape[3] if layout == "NHWC" else shape[1]
    w = torch.randn((c,), generator=g).to(device, dtype)
    got = dwc.channel_scale(t, w, layout == "NHWC")
    wb = w.cpu().double().view(1, 1, 1, c) if layout == "NHWC" else \
        w.cpu().double().view(1, c, 1, 1)
    want = (t.cpu().double() * wb).to(dtype)
    assert got.dtype == dtype and got.shape == t.shape
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
