"""convolution2D, convolution2DDataGradient and convolution2DWeightsGradient on the device under
test, against independent oracles: the float64 direct loops of tests/oracles/conv_f64.py, torch
(float64 autograd) when installed, and central finite differences of the forward op."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from oracles import conv_f64 as ref
from oracles import gradcheck

L = mg.TensorNamedDataLayout
PS = mg.PaddingStyle
STYLES = ["explicit", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER"]
GROUPS = {"g1": (1, 4, 6), "g2": (2, 4, 6), "dw": (4, 4, 8)}  # name: (groups, C, O)


def _case_params():
    out = []
    for style, dl, wl, s, r, gname in itertools.product(
            STYLES, ["NCHW", "NHWC"], ["OIHW", "HWIO"], [1, 2], [1, 2], GROUPS):
        out.append(pytest.param(style, dl, wl, s, r, gname,
                                id=f"{style}-{dl}-{wl}-s{s}-r{r}-{gname}"))
    return out


class Case:
    """One convolution configuration, with canonical (NCHW/OIHW, float64) data and the
    descriptor; converts between the canonical and the user layouts."""

    def __init__(self, rng, style="explicit", dl="NCHW", wl="OIHW", stride=(1, 1),
                 dilation=(1, 1), groups=1, C=4, O=6, N=2, hw=(7, 6), k=(3, 2),
                 pads=(1, 0, 2, 1)):
        self.d = mg.Convolution2DOpDescriptor(
            strideInX=stride[1], strideInY=stride[0], dilationRateInX=dilation[1],
            dilationRateInY=dilation[0], groups=groups, paddingTop=pads[0],
            paddingBottom=pads[1], paddingLeft=pads[2], paddingRight=pads[3],
            paddingStyle=getattr(PS, style), dataLayout=getattr(L, dl),
            weightsLayout=getattr(L, wl))
        self.dl, self.wl = dl, wl
        (ho, wo), self.pads = ref.resolve_pads(style, hw, k, stride, dilation, pads)
        self.kw = dict(stride=stride, dilation=dilation, pads=self.pads, groups=groups)
        self.x = rng.standard_normal((N, C, *hw))
        self.w = rng.standard_normal((O, C // groups, *k))
        self.dy = rng.standard_normal((N, O, ho, wo))

    def data(self, a):  # canonical NCHW -> user layout
        return ref.nchw_to_nhwc(a) if self.dl == "NHWC" else a

    def weights(self, a):
        return ref.oihw_to_hwio(a) if self.wl == "HWIO" else a

    def undata(self, a):
        return ref.nhwc_to_nchw(a) if self.dl == "NHWC" else a

    def unweights(self, a):
        return ref.hwio_to_oihw(a) if self.wl == "HWIO" else a

    def run_all(self, dtype=mg.float32, device=None):
        """Run the three ops in one graph; results back in canonical layout, float64."""
        npdt = dtype.numpy_dtype
        g = mg.Graph()
        xs, ws, dys = self.data(self.x), self.weights(self.w), self.data(self.dy)
        x = g.placeholder(list(xs.shape), dtype, name="x")
        w = g.placeholder(list(ws.shape), dtype, name="w")
        dy = g.placeholder(list(dys.shape), dtype, name="dy")
        y = g.convolution2D(x, w, self.d, name="y")
        dx = g.convolution2DDataGradient(dy, w, list(xs.shape), self.d, name="dx")
        dw = g.convolution2DWeightsGradient(dy, x, list(ws.shape), self.d, name="dw")
        assert y.shape == list(self.data(np.empty(self.dy.shape)).shape)
        assert dx.shape == list(xs.shape) and dw.shape == list(ws.shape)
        out = g.run({x: xs.astype(npdt), w: ws.astype(npdt), dy: dys.astype(npdt)},
                    [y, dx, dw], device=device)
        for t in (y, dx, dw):
            assert out[t].dataType == dtype and out[t].numpy().dtype == npdt
        f = lambda t: out[t].numpy().astype(np.float64)  # noqa: E731
        return self.undata(f(y)), self.undata(f(dx)), self.unweights(f(dw))

    def refs(self):
        return (ref.conv2d_ref(self.x, self.w, **self.kw),
                ref.conv2d_data_grad_ref(self.dy, self.w, self.x.shape, **self.kw),
                ref.conv2d_weights_grad_ref(self.dy, self.x, self.w.shape, **self.kw))


def _close(got, want, rtol, atol_rel):
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol_rel * scale)


@pytest.mark.parametrize("style,dl,wl,s,r,gname", _case_params())
def test_sweep_against_f64_loops_and_torch(rng, style, dl, wl, s, r, gname):
    groups, C, O = GROUPS[gname]
    c = Case(rng, style, dl, wl, (s, s), (r, r), groups, C, O)
    got = c.run_all()
    for g_, w_ in zip(got, c.refs()):
        _close(g_, w_, 1e-5, 1e-6)
    try:
        import torch  # noqa: F401

        from oracles import torch_conv
    except ImportError:
        return
    y_t = torch_conv.conv2d_torch(c.x, c.w, c.kw["stride"], c.kw["dilation"], c.pads, groups)
    dx_t, dw_t = torch_conv.conv2d_grads_torch(c.x, c.w, c.dy, c.kw["stride"],
                                               c.kw["dilation"], c.pads, groups)
    for g_, w_ in zip(got, (y_t, dx_t, dw_t)):
        _close(g_, w_, 1e-5, 1e-6)


@pytest.mark.parametrize("stride,dilation,pads,k,hw", [
    ((2, 1), (1, 3), (0, 2, 1, 0), (2, 3), (9, 11)),
    ((3, 2), (2, 1), (2, 2, 0, 3), (3, 1), (10, 7)),
    ((1, 1), (1, 1), (0, 0, 0, 0), (1, 1), (5, 5)),
    ((2, 2), (1, 1), (0, 0, 0, 0), (1, 1), (6, 5)),
    ((1, 1), (1, 1), (2, 1, 3, 0), (1, 1), (5, 6)),  # padding wider than the kernel
    ((1, 1), (1, 2), (3, 3, 3, 3), (2, 2), (4, 4)),
    ((1, 1), (2, 1), (0, 4, 1, 0), (2, 3), (5, 7)),
])
@pytest.mark.parametrize("gname", list(GROUPS))
def test_asymmetric_configs(rng, stride, dilation, pads, k, hw, gname):
    groups, C, O = GROUPS[gname]
    for dl, wl in itertools.product(("NCHW", "NHWC"), ("OIHW", "HWIO")):
        c = Case(rng, "explicit", dl, wl, stride, dilation, groups, C, O, hw=hw, k=k, pads=pads)
        for g_, w_ in zip(c.run_all(), c.refs()):
            _close(g_, w_, 1e-5, 1e-6)


def test_channel_multiplier_and_grouped_depthwise(rng):
    # groups == C with a multiplier (O = 3C), and groups == C == O; N > 1 (SPEC C3)
    for C, O in ((3, 9), (5, 5)):
        c = Case(rng, "TF_SAME", "NHWC", "HWIO", (1, 1), (1, 1), C, C, O, N=3, hw=(6, 6),
                 k=(6, 3))
        for g_, w_ in zip(c.run_all(), c.refs()):
            _close(g_, w_, 1e-5, 1e-6)


@pytest.mark.parametrize("dtype,rtol", [(mg.float16, 4e-3), (mg.bFloat16, 2e-2)])
@pytest.mark.parametrize("gname", list(GROUPS))
@pytest.mark.parametrize("dl,s", [("NCHW", 1), ("NHWC", 2)])
def test_half_precision(rng, dtype, rtol, gname, dl, s):
    """float16 / bFloat16: inputs are rounded to the type, the math runs in float32 and the
    result is rounded once; so compare with the f64 loops on the ROUNDED inputs, with a
    tolerance of a few units of the output type's precision (float16 eps 9.8e-4, bf16 7.8e-3)."""
    groups, C, O = GROUPS[gname]
    c = Case(rng, "TF_SAME", dl, "OIHW", (s, s), (1, 1), groups, C, O)
    npdt = dtype.numpy_dtype
    c.x, c.w, c.dy = (a.astype(npdt).astype(np.float64) for a in (c.x, c.w, c.dy))
    for g_, w_ in zip(c.run_all(dtype), c.refs()):
        _close(g_, w_, rtol, rtol)


def test_half_precision_rounds_once(rng):
    # the float16 result equals the float32 result rounded once (not per tap)
    c = Case(rng, "explicit", "NCHW", "OIHW", groups=1)
    c.x, c.w, c.dy = (a.astype(np.float16).astype(np.float64) for a in (c.x, c.w, c.dy))
    h = c.run_all(mg.float16)
    f = c.run_all(mg.float32)
    for a, b in zip(h, f):
        np.testing.assert_array_equal(a, b.astype(np.float16).astype(np.float64))
    bf = c.run_all(mg.bFloat16)
    c.x, c.w, c.dy = (a.astype(ml_dtypes.bfloat16).astype(np.float64) for a in (c.x, c.w, c.dy))
    f = c.run_all(mg.float32)
    for a, b in zip(bf, f):
        np.testing.assert_array_equal(a, b.astype(ml_dtypes.bfloat16).astype(np.float64))


# ------------------------------------------------------------------ finite differences
def _forward_fn(c: Case):
    """The op under test, forward, as a float64 -> float64 function of (x, w) (canonical)."""
    g = mg.Graph()
    xs, ws = c.data(c.x), c.weights(c.w)
    x = g.placeholder(list(xs.shape), mg.float32)
    w = g.placeholder(list(ws.shape), mg.float32)
    exe = g.compile({x: mg.ShapedType(list(xs.shape)), w: mg.ShapedType(list(ws.shape))},
                    [g.convolution2D(x, w, c.d)])

    def f(xc, wc):
        y = exe.run([c.data(xc).astype(np.float32), c.weights(wc).astype(np.float32)])[0]
        return c.undata(y.numpy().astype(np.float64))

    return f


@pytest.mark.parametrize("style,dl,s,r,gname", [
    ("explicit", "NCHW", 1, 1, "g1"), ("TF_SAME", "NHWC", 2, 1, "g2"),
    ("ONNX_SAME_LOWER", "NCHW", 2, 2, "dw"), ("TF_VALID", "NHWC", 1, 2, "g1"),
    ("TF_SAME", "NCHW", 1, 2, "dw"), ("explicit", "NHWC", 2, 1, "g2"),
])
def test_gradients_match_finite_differences_of_forward(rng, style, dl, s, r, gname):
    """<u, J v> by central differences of OUR forward op vs <J^T u, v> from the gradient ops.
    The op is linear in each argument, so with a step of 1 the central difference is exact up
    to float32 rounding: the tolerance can be tight."""
    groups, C, O = GROUPS[gname]
    c = Case(rng, style, dl, "HWIO" if dl == "NHWC" else "OIHW", (s, s), (r, r), groups, C, O)
    f = _forward_fn(c)
    _, dx, dw = c.run_all()  # vjp with u = c.dy
    for wrt in (0, 1):
        v = rng.standard_normal(c.x.shape if wrt == 0 else c.w.shape)
        numeric = np.vdot(c.dy, gradcheck.directional_derivative(
            f, [c.x, c.w], [v if wrt == 0 else np.zeros_like(c.x),
                            v if wrt == 1 else np.zeros_like(c.w)], eps=1.0))
        analytic = np.vdot(dx if wrt == 0 else dw, v)
        np.testing.assert_allclose(analytic, numeric, rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("wl", ["HWIO", "OIHW"])
@pytest.mark.parametrize("dtype,rtol", [(mg.float32, 1e-5), (mg.bFloat16, 2e-2)])
def test_pointwise_nhwc(rng, wl, dtype, rtol):
    """1x1 NHWC convolutions (which the torch backend runs as plain matrix products) against
    the f64 loops, with both weight layouts, a batch > 1 and channel counts that differ."""
    c = Case(rng, "explicit", "NHWC", wl, (1, 1), (1, 1), 1, C=5, O=7, N=3, hw=(4, 6),
             k=(1, 1), pads=(0, 0, 0, 0))
    if dtype != mg.float32:  # compare on the rounded inputs
        c.x, c.w, c.dy = (np.asarray(a.astype(dtype.numpy_dtype), np.float64)
                          for a in (c.x, c.w, c.dy))
    for g_, w_ in zip(c.run_all(dtype), c.refs()):
        _close(g_, w_, rtol, rtol)
