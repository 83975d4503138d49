"""The default CPU device's two convolution paths, each pinned against float64 references.

The NumPy backend runs convolutions (float32, and float16 / bFloat16 computed in float32) on
PyTorch CPU when it is installed (backends/numpy/conv_accel.py) and on its own NumPy kernels
with MPSGRAPH_CPU_ACCEL=0 or without torch. Every test here runs on both paths ("numpy",
"accel") and checks which path really ran. References: the float64 direct loops of
tests/oracles/conv_f64.py (2-D) and a float64 sum over kernel taps written from the definition
(N-D, checked against conv_f64 in 2-D below); neither calls our kernels.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from mpsgraph.backends.numpy import conv_accel
from oracles import conv_f64 as ref

L = mg.TensorNamedDataLayout
PS = mg.PaddingStyle

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

PATHS = ["numpy", pytest.param("accel", marks=pytest.mark.skipif(
    not HAVE_TORCH, reason="the accelerator needs torch"))]
DTYPES = {"float32": (mg.float32, np.float32, 2e-5), "float16": (mg.float16, np.float16, 3e-3),
          "bFloat16": (mg.bFloat16, ml_dtypes.bfloat16, 2e-2)}


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """Select a path and record every accelerator call: (function, took it)."""
    monkeypatch.setenv("MPSGRAPH_CPU_ACCEL", "0" if request.param == "numpy" else "1")
    calls: list[tuple[str, bool]] = []
    for fname in ("forward", "data_gradient", "weights_gradient"):
        f = getattr(conv_accel, fname)

        def wrapped(*args, _f=f, _n=fname, **kw):
            out = _f(*args, **kw)
            calls.append((_n, out is not None))
            return out

        monkeypatch.setattr(conv_accel, fname, wrapped)
    return request.param, calls


def _ran_on(path):
    """Assert which kernels ran: the accelerator for every op on the accel path, never with
    MPSGRAPH_CPU_ACCEL=0."""
    name, calls = path
    if name == "numpy":
        assert calls == [], f"ops reached the accelerator: {calls}"
    else:
        assert calls and all(took for _, took in calls), calls


def _close(got, want, tol):
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


def _rounded(rng, shape, npdt):
    """Random values exactly representable in `npdt`, as float64."""
    return rng.standard_normal(shape).astype(npdt).astype(np.float64)


# ---------------------------------------------------------------------------- 2-D
# (style, data layout, weights layout, stride, dilation, groups, C, O, N, hw, k, explicit pads)
CASES_2D = {
    "asym-pads": ("explicit", "NCHW", "OIHW", (2, 1), (1, 3), 1, 3, 5, 2, (9, 11), (2, 3),
                  (0, 2, 1, 0)),
    "same-s2-even": ("TF_SAME", "NHWC", "HWIO", (2, 2), (1, 1), 2, 4, 6, 2, (8, 10), (3, 3),
                     None),
    "lower-dw-mult": ("ONNX_SAME_LOWER", "NHWC", "OIHW", (2, 2), (1, 1), 3, 3, 6, 2, (7, 6),
                      (2, 4), None),
    "valid-s3-r2": ("TF_VALID", "NCHW", "HWIO", (3, 3), (2, 2), 1, 2, 3, 3, (12, 13), (2, 3),
                    None),
    "pad-wider": ("explicit", "NHWC", "HWIO", (1, 1), (1, 1), 1, 4, 3, 2, (5, 6), (1, 1),
                  (2, 1, 3, 0)),
    "dw-dilated": ("explicit", "NCHW", "OIHW", (1, 1), (2, 2), 4, 4, 4, 2, (6, 5), (2, 2),
                   (3, 3, 3, 3)),
    "dw-s2-nhwc": ("explicit", "NHWC", "HWIO", (2, 2), (1, 1), 5, 5, 5, 3, (9, 8), (3, 3),
                   (1, 1, 1, 1)),
    "size1": ("explicit", "NHWC", "OIHW", (1, 2), (1, 1), 1, 1, 1, 1, (1, 5), (1, 3),
              (0, 0, 1, 1)),
    "deep-hwio": ("explicit", "NHWC", "HWIO", (1, 1), (2, 1), 1, 8, 6, 1, (5, 4), (3, 3),
                  (2, 2, 1, 1)),  # weights outweigh dy: the flipped-kernel data gradient
    "pointwise": ("explicit", "NCHW", "OIHW", (1, 1), (1, 1), 2, 4, 6, 2, (5, 4), (1, 1),
                  (0, 0, 0, 0)),
}


class Case2D:
    def __init__(self, rng, name, npdt):
        (style, dl, wl, stride, dil, g, c, o, n, hw, k, pads) = CASES_2D[name]
        pads = pads or (0, 0, 0, 0)
        self.d = mg.Convolution2DOpDescriptor(
            strideInX=stride[1], strideInY=stride[0], dilationRateInX=dil[1],
            dilationRateInY=dil[0], groups=g, paddingTop=pads[0], paddingBottom=pads[1],
            paddingLeft=pads[2], paddingRight=pads[3], paddingStyle=getattr(PS, style),
            dataLayout=getattr(L, dl), weightsLayout=getattr(L, wl))
        (ho, wo), self.pads = ref.resolve_pads(style, hw, k, stride, dil, pads)
        self.kw = dict(stride=stride, dilation=dil, pads=self.pads, groups=g)
        self.dl, self.wl = dl, wl
        self.x = _rounded(rng, (n, c, *hw), npdt)
        self.w = _rounded(rng, (o, c // g, *k), npdt)
        self.dy = _rounded(rng, (n, o, ho, wo), npdt)

    def data(self, a):
        return ref.nchw_to_nhwc(a) if self.dl == "NHWC" else a

    def weights(self, a):
        return ref.oihw_to_hwio(a) if self.wl == "HWIO" else a

    def refs(self):
        return (self.data(ref.conv2d_ref(self.x, self.w, **self.kw)),
                self.data(ref.conv2d_data_grad_ref(self.dy, self.w, self.x.shape, **self.kw)),
                self.weights(ref.conv2d_weights_grad_ref(self.dy, self.x, self.w.shape,
                                                         **self.kw)))


def _run_2d(c: Case2D, dtype, npdt, feed=lambda a: a):
    g = mg.Graph()
    xs, ws, dys = c.data(c.x), c.weights(c.w), c.data(c.dy)
    x = g.placeholder(list(xs.shape), dtype, name="x")
    w = g.placeholder(list(ws.shape), dtype, name="w")
    dy = g.placeholder(list(dys.shape), dtype, name="dy")
    y = g.convolution2D(x, w, c.d, name="y")
    dx = g.convolution2DDataGradient(dy, w, list(xs.shape), c.d, name="dx")
    dw = g.convolution2DWeightsGradient(dy, x, list(ws.shape), c.d, name="dw")
    out = g.run({x: feed(xs.astype(npdt)), w: feed(ws.astype(npdt)),
                 dy: feed(dys.astype(npdt))}, [y, dx, dw], device=mg.Device("cpu"))
    res = []
    for t in (y, dx, dw):
        a = out[t].numpy()
        assert a.dtype == np.dtype(npdt) and out[t].dataType == dtype
        res.append(a.astype(np.float64))
    return res


@pytest.mark.parametrize("dname", list(DTYPES))
@pytest.mark.parametrize("name", list(CASES_2D))
def test_2d_both_paths_against_f64(rng, path, name, dname):
    dtype, npdt, tol = DTYPES[dname]
    c = Case2D(rng, name, npdt)
    for got, want in zip(_run_2d(c, dtype, npdt), c.refs()):
        _close(got, want, tol)
    _ran_on(path)

def test_2d_read_only_and_negative_stride_feeds(rng, path):
    def feed(a):
        v = np.ascontiguousarray(a[:, ::-1])[:, ::-1]  # the same values, negative strides
        v.flags.writeable = False
        return v

    c = Case2D(rng, "same-s2-even", np.float32)
    for got, want in zip(_run_2d(c, mg.float32, np.float32, feed), c.refs()):
        _close(got, want, 2e-5)
    _ran_on(path)

def test_transpose_2d_both_paths(rng, path):
    # convolutionTranspose2D is the data gradient with the roles renamed (ops/conv_extra.py)
    c = Case2D(rng, "same-s2-even", np.float32)
    g = mg.Graph()
    dys, ws = c.data(c.dy), c.weights(c.w)
    src = g.placeholder(list(dys.shape), mg.float32, name="src")
    w = g.placeholder(list(ws.shape), mg.float32, name="w")
    y = g.convolutionTranspose2D(src, w, list(c.data(c.x).shape), c.d, name="y")
    out = g.run({src: dys.astype(np.float32), w: ws.astype(np.float32)}, [y],
                device=mg.Device("cpu"))  # the accelerator is the default device's
    _close(out[y].numpy().astype(np.float64), c.refs()[1], 2e-5)
    _ran_on(path)


# ---------------------------------------------------------------------------- N-D

def _taps_ref(x, w, stride, dil, pads, groups):
    """float64 forward, data and weights gradient of an N-D convolution from the definition
    y[b, o, i] = sum_{c, t} xp[b, g(o)*Cg + c, i*s + t*r] w[o, c, t], as sums over the taps t.
    Returns (y, (dy -> dx), (dy -> dw))."""
    b, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    og = o // groups
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    so = [(n + pb + pe - r * (kk - 1) - 1) // s + 1
          for n, (pb, pe), kk, s, r in zip(x.shape[2:], pads, k, stride, dil)]

    def sl(t):
        return (slice(None), slice(None), *(slice(ti * r, ti * r + s * (m - 1) + 1, s)
                                            for ti, r, s, m in zip(t, dil, stride, so)))

    taps = list(itertools.product(*(range(kk) for kk in k)))
    wg = w.reshape(groups, og, cg, -1)
    y = np.zeros((b, groups, og, *so))
    for i, t in enumerate(taps):
        xs = xp[sl(t)].reshape(b, groups, cg, *so)
        y += np.einsum("bgc...,goc->bgo...", xs, wg[..., i])

    def dx(dy):
        d5 = dy.reshape(b, groups, og, *so)
        dxp = np.zeros(xp.shape)
        for i, t in enumerate(taps):
            dxp[sl(t)] += np.einsum("bgo...,goc->bgc...", d5, wg[..., i]).reshape(b, c, *so)
        return dxp[(slice(None), slice(None), *(slice(pb, pb + n) for (pb, _), n in
                                                zip(pads, x.shape[2:])))]

    def dw(dy):
        d5 = dy.reshape(b, groups, og, *so)
        out = np.zeros((groups, og, cg, len(taps)))
        for i, t in enumerate(taps):
            xs = xp[sl(t)].reshape(b, groups, cg, -1)
            out[..., i] = np.einsum("bgom,bgcm->goc", d5.reshape(b, groups, og, -1), xs)
        return out.reshape(w.shape)

    return y.reshape(b, o, *so), dx, dw


def test_taps_reference_matches_conv_f64(rng):
    x, w = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 2))
    kw = dict(stride=(2, 1), dilation=(1, 2), pads=(1, 0, 2, 1), groups=2)
    y, dx, dw = _taps_ref(x, w, (2, 1), (1, 2), [(1, 0), (2, 1)], 2)
    dy = rng.standard_normal(y.shape)
    np.testing.assert_allclose(y, ref.conv2d_ref(x, w, **kw), atol=1e-12)
    np.testing.assert_allclose(dx(dy), ref.conv2d_data_grad_ref(dy, w, x.shape, **kw),
                               atol=1e-12)
    np.testing.assert_allclose(dw(dy), ref.conv2d_weights_grad_ref(dy, x, w.shape, **kw),
                               atol=1e-12)


def _run_nd(kind, d, xs, ws, dys, dtype, npdt):
    g = mg.Graph()
    x = g.placeholder(list(xs.shape), dtype, name="x")
    w = g.placeholder(list(ws.shape), dtype, name="w")
    dy = g.placeholder(list(dys.shape), dtype, name="dy")
    y = getattr(g, kind)(x, w, d, name="y")
    dx = getattr(g, kind + "DataGradient")(dy, w, list(xs.shape), d, name="dx")
    dw = getattr(g, kind + "WeightsGradient")(dy, x, list(ws.shape), d, name="dw")
    out = g.run({x: xs.astype(npdt), w: ws.astype(npdt), dy: dys.astype(npdt)}, [y, dx, dw],
                device=mg.Device("cpu"))
    return [out[t].numpy().astype(np.float64) for t in (y, dx, dw)]


@pytest.mark.parametrize("dname", list(DTYPES))
@pytest.mark.parametrize("channels_last", [False, True])
def test_conv3d_both_paths_against_f64(rng, path, dname, channels_last):
    dtype, npdt, tol = DTYPES[dname]
    stride, dil, pads, groups = (2, 1, 2), (1, 2, 1), [(1, 0), (0, 2), (2, 1)], 2
    x = _rounded(rng, (2, 4, 5, 6, 7), npdt)
    w = _rounded(rng, (6, 2, 2, 3, 3), npdt)
    y, dx, dw = _taps_ref(x, w, stride, dil, pads, groups)
    dy = _rounded(rng, y.shape, npdt)
    d = mg.Convolution3DOpDescriptor(
        strideInZ=stride[0], strideInY=stride[1], strideInX=stride[2],
        dilationRateInZ=dil[0], dilationRateInY=dil[1], dilationRateInX=dil[2], groups=groups,
        paddingFront=pads[0][0], paddingBack=pads[0][1], paddingTop=pads[1][0],
        paddingBottom=pads[1][1], paddingLeft=pads[2][0], paddingRight=pads[2][1],
        dataLayout=L.NDHWC if channels_last else L.NCDHW,
        weightsLayout=L.DHWIO if channels_last else L.OIDHW)
    data = (lambda a: a.transpose(0, 2, 3, 4, 1)) if channels_last else (lambda a: a)
    wts = (lambda a: a.transpose(2, 3, 4, 1, 0)) if channels_last else (lambda a: a)
    got = _run_nd("convolution3D", d, data(x), wts(w), data(dy), dtype, npdt)
    for g_, w_ in zip(got, (data(y), data(dx(dy)), wts(dw(dy)))):
        _close(g_, w_, tol)
    _ran_on(path)

@pytest.mark.parametrize("channel_index", [-4, -1])
def test_depthwise3d_both_paths_against_f64(rng, path, channel_index):
    stride, dil, pads = (1, 2, 2), (2, 1, 1), [(1, 1), (0, 1), (2, 0)]
    c = 3
    x = rng.standard_normal((2, c, 6, 7, 5))
    w = rng.standard_normal((c, 1, 2, 3, 2))
    y, dx, dw = _taps_ref(x, w, stride, dil, pads, c)
    dy = rng.standard_normal(y.shape)
    d = mg.DepthwiseConvolution3DOpDescriptor(
        strides=list(stride), dilationRates=list(dil),
        paddingValues=[v for p in pads for v in p], channelDimensionIndex=channel_index)
    if channel_index == -1:
        data, wts = (lambda a: a.transpose(0, 2, 3, 4, 1)), (lambda a: a[:, 0].transpose(1, 2,
                                                                                          3, 0))
    else:
        data, wts = (lambda a: a), (lambda a: a[:, 0])
    got = _run_nd("depthwiseConvolution3D", d, data(x), wts(w), data(dy), mg.float32,
                  np.float32)
    for g_, w_ in zip(got, (data(y), data(dx(dy)), wts(dw(dy)))):
        _close(g_, w_, 2e-5)
    _ran_on(path)
