"""Regression tests of the stride and empty-input bugs of issue 14, on every backend present.

Cause of the family: code trusted `flags.c_contiguous` / `is_contiguous()` (which ignore the
strides of size-1 axes) and then read those strides to build `as_strided` views, or handed the
tensor to PyTorch's CPU convolution, which miscomputes size-1 axes with odd strides. References
are the float64 loops of tests/oracles/conv_f64.py."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES
from oracles import conv_f64 as ref

P = mg.PaddingStyle
L = mg.TensorNamedDataLayout
pytestmark = pytest.mark.parametrize("device", DEVICES)


def _conv(device, x, w, d):
    g = mg.Graph()
    xt = g.placeholder(list(x.shape), mg.float32)
    wt = g.placeholder(list(w.shape), mg.float32)
    y = g.convolution2D(xt, weights=wt, descriptor=d)
    return g.run({xt: x, wt: w}, [y], device=device)[y].numpy()


def test_grayscale_nchw_valid(device):
    # the first example: all 9.0 expected (NaN, 1e35, 3.0 before the fix)
    y = _conv(device, np.ones((1, 1, 6, 5), np.float32), np.ones((1, 1, 3, 3), np.float32),
              mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID))
    assert y.shape == (1, 1, 4, 3)
    np.testing.assert_array_equal(y, np.full((1, 1, 4, 3), 9.0, np.float32))


def test_one_channel_1x2(device):
    x = np.array([1, 2], np.float32).reshape(1, 1, 1, 2)
    w = np.array([3, 4], np.float32).reshape(1, 1, 1, 2)
    y = _conv(device, x, w, mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID))
    np.testing.assert_array_equal(y, np.full((1, 1, 1, 1), 11.0, np.float32))


def test_weights_gradient_one_channel(device):
    x = np.array([1, 2], np.float32).reshape(1, 1, 1, 2)
    dy = np.ones((1, 1, 1, 1), np.float32)
    g = mg.Graph()
    dyt, xt = g.placeholder([1, 1, 1, 1]), g.placeholder([1, 1, 1, 2])
    dw = g.convolution2DWeightsGradient(dyt, source=xt, outputShape=[1, 1, 1, 2],
                                        forwardConvolutionDescriptor=mg.Convolution2DOpDescriptor(
                                            paddingStyle=P.TF_VALID))
    r = g.run({dyt: dy, xt: x}, [dw], device=device)[dw].numpy()
    np.testing.assert_array_equal(r.ravel(), [1.0, 2.0])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_nhwc_one_channel_transposed_views(device, rng, k):
    # NHWC sources with C = 1 that are transposed views (the C axis's stride is H*W elements)
    base = rng.standard_normal((2, 1, 7, 6)).astype(np.float32)
    x = base.transpose(0, 2, 3, 1)  # [2, 7, 6, 1], a view
    w = rng.standard_normal((k, k, 1, 3)).astype(np.float32)
    d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID, dataLayout=L.NHWC,
                                     weightsLayout=L.HWIO)
    y = _conv(device, x, w, d)
    want = ref.nchw_to_nhwc(ref.conv2d_ref(ref.nhwc_to_nchw(x), ref.hwio_to_oihw(w)))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["forward", "data", "weights"])
def test_empty_source_same_strided(device, op):
    # x [1,1,1,0], w [1,1,1,3], TF_SAME, strideInX=2, dilationRateInX=2: an empty result
    # (a bare "cannot reshape" ValueError on the NumPy backend before the fix)
    d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_SAME, strideInX=2, dilationRateInX=2)
    g = mg.Graph()
    w = np.ones((1, 1, 1, 3), np.float32)
    if op == "forward":
        xt, wt = g.placeholder([1, 1, 1, 0]), g.placeholder([1, 1, 1, 3])
        y = g.convolution2D(xt, weights=wt, descriptor=d)
        feeds = {xt: np.ones((1, 1, 1, 0), np.float32), wt: w}
        shape = (1, 1, 1, 0)
    elif op == "data":
        dyt, wt = g.placeholder([1, 1, 1, 0]), g.placeholder([1, 1, 1, 3])
        y = g.convolution2DDataGradient(dyt, weights=wt, outputShape=[1, 1, 1, 0],
                                        forwardConvolutionDescriptor=d)
        feeds = {dyt: np.ones((1, 1, 1, 0), np.float32), wt: w}
        shape = (1, 1, 1, 0)
    else:
        dyt, xt = g.placeholder([1, 1, 1, 0]), g.placeholder([1, 1, 1, 0])
        y = g.convolution2DWeightsGradient(dyt, source=xt, outputShape=[1, 1, 1, 3],
                                           forwardConvolutionDescriptor=d)
        feeds = {dyt: np.ones((1, 1, 1, 0), np.float32), xt: np.ones((1, 1, 1, 0), np.float32)}
        shape = (1, 1, 1, 3)
    r = g.run(feeds, [y], device=device)[y].numpy()
    assert r.shape == shape
    np.testing.assert_array_equal(r, np.zeros(shape, np.float32))


def test_broadcast_readonly_oihw_weights_grouped_nhwc(device, rng):
    # NHWC x [1,2,3,4], read-only broadcast OIHW weights np.broadcast_to(w2, (2,2,1,2)),
    # groups=2, TF_VALID (torch-cpu gave errors up to 6.5e20 before the fix)
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    w2 = rng.standard_normal((1, 1, 1, 2)).astype(np.float32)
    w = np.broadcast_to(w2, (2, 2, 1, 2))
    d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID, dataLayout=L.NHWC,
                                     weightsLayout=L.OIHW, groups=2)
    y = _conv(device, x, w, d)
    want = ref.nchw_to_nhwc(ref.conv2d_ref(ref.nhwc_to_nchw(x), w, groups=2))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_stepped_slice_nhwc_one_channel_strided(device, rng):
    # an NHWC C=1 source given as big[::3] ([3,7,8,1]) with HWIO weights [1,8,1,1], strideInX=3
    big = rng.standard_normal((9, 7, 8, 1)).astype(np.float32)
    x = big[::3]
    w = rng.standard_normal((1, 8, 1, 1)).astype(np.float32)
    d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID, dataLayout=L.NHWC,
                                     weightsLayout=L.HWIO, strideInX=3)
    y = _conv(device, x, w, d)
    want = ref.nchw_to_nhwc(ref.conv2d_ref(ref.nhwc_to_nchw(x), ref.hwio_to_oihw(w),
                                           stride=(1, 3)))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("view", ["transposed", "stepped", "broadcast"])
def test_grouped_nhwc_data_gradient_views(device, rng, view):
    # the grouped NHWC data gradient, with dy and the weights given as non-canonical views
    n, h, wd, c, o, groups = 2, 5, 4, 4, 6, 2
    d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_SAME, dataLayout=L.NHWC,
                                     weightsLayout=L.OIHW, groups=groups, strideInX=2)
    ho, wo = h, -(-wd // 2)
    dy = rng.standard_normal((n, ho, wo, o)).astype(np.float32)
    w = rng.standard_normal((o, c // groups, 3, 3)).astype(np.float32)
    if view == "transposed":
        dy = np.ascontiguousarray(dy.transpose(3, 1, 2, 0)).transpose(3, 1, 2, 0)
        w = np.asfortranarray(w)
    elif view == "stepped":
        dy = np.repeat(dy, 2, axis=1)[:, ::2]
        w = np.repeat(w, 3, axis=2)[:, :, ::3]
    else:
        dy = np.broadcast_to(dy[:1], dy.shape)
    g = mg.Graph()
    dyt, wt = g.placeholder(list(dy.shape)), g.placeholder(list(w.shape))
    dx = g.convolution2DDataGradient(dyt, weights=wt, outputShape=[n, h, wd, c],
                                     forwardConvolutionDescriptor=d)
    r = g.run({dyt: dy, wt: w}, [dx], device=device)[dx].numpy()
    _, pads = ref.resolve_pads("TF_SAME", (h, wd), (3, 3), (1, 2), (1, 1))
    want = ref.nchw_to_nhwc(ref.conv2d_data_grad_ref(ref.nhwc_to_nchw(dy), w, (n, c, h, wd),
                                                     stride=(1, 2), pads=pads, groups=groups))
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)


def test_odd_size1_strides_every_op(device, rng):
    # every size-1 axis of every operand given an odd stride, all three ops, both layouts
    def odd(a):
        """`a` as a view whose size-1 axes have strides that are neither canonical nor 0."""
        big = np.zeros(tuple(s * 3 if s == 1 else s for s in a.shape), a.dtype)
        sl = tuple(slice(1, 2) if s == 1 else slice(None) for s in a.shape)
        v = big[sl]
        v[...] = a
        return v

    for layout in (L.NCHW, L.NHWC):
        x = rng.standard_normal((1, 1, 5, 4)).astype(np.float32)
        w = rng.standard_normal((1, 1, 2, 3)).astype(np.float32)
        d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID, dataLayout=layout)
        xu = x if layout == L.NCHW else ref.nchw_to_nhwc(x)
        y = _conv(device, odd(xu), odd(w), d)
        want = ref.conv2d_ref(x, w)
        want = want if layout == L.NCHW else ref.nchw_to_nhwc(want)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
        dy = odd(np.ones(want.shape, np.float32))
        g = mg.Graph()
        dyt, xt = g.placeholder(list(dy.shape)), g.placeholder(list(xu.shape))
        dw = g.convolution2DWeightsGradient(dyt, source=xt, outputShape=[1, 1, 2, 3],
                                            forwardConvolutionDescriptor=d)
        r = g.run({dyt: dy, xt: odd(xu)}, [dw], device=device)[dw].numpy()
        want_dw = ref.conv2d_weights_grad_ref(np.ones(ref.conv2d_ref(x, w).shape), x,
                                              (1, 1, 2, 3))
        np.testing.assert_allclose(r, want_dw, rtol=1e-5, atol=1e-5)


def test_stepped_one_channel_gradients(device, rng):
    # the same ambiguous operands (one channel, strides not the contiguous ones) reaching the
    # gradients: an NHWC dy [3, 7, 3, 1] given as big[::3] for the data gradient, and the
    # source x [3, 7, 8, 1] given as big[::3] for the weights gradient. The CPU accelerator of
    # the default device handed such views to oneDNN as they were (errors of 1e26 in the
    # forward above); the gradients were right even then, and are pinned here
    x = rng.standard_normal((9, 7, 8, 1)).astype(np.float32)[::3]
    w = rng.standard_normal((1, 8, 1, 1)).astype(np.float32)
    dy = rng.standard_normal((9, 7, 1, 1)).astype(np.float32)[::3]
    d = mg.Convolution2DOpDescriptor(paddingStyle=P.TF_VALID, dataLayout=L.NHWC,
                                     weightsLayout=L.HWIO, strideInX=3)
    g = mg.Graph()
    dyt = g.placeholder(list(dy.shape), mg.float32)
    wt = g.placeholder(list(w.shape), mg.float32)
    xt = g.placeholder(list(x.shape), mg.float32)
    dx = g.convolution2DDataGradient(dyt, weights=wt, outputShape=list(x.shape),
                                     forwardConvolutionDescriptor=d)
    dw = g.convolution2DWeightsGradient(dyt, source=xt, outputShape=list(w.shape),
                                        forwardConvolutionDescriptor=d)
    out = g.run({dyt: dy, wt: w, xt: x}, [dx, dw], device=device)
    # float64 references: dx[n, i, j*3 + q, 0] = dy[n, i, j, 0] * w[0, q, 0, 0] (q < 8, one
    # output column: 8 columns of x, kernel width 8), dw[0, q, 0, 0] = sum dy * x[..., q, 0]
    d64, w64, x64 = (a.astype(np.float64) for a in (dy, w, x))
    want_dx = np.zeros(x.shape)
    want_dx[:, :, :8, 0] = d64[:, :, 0, :1] * w64[0, :, 0, 0]
    want_dw = np.einsum("nio,niq->q", d64[:, :, 0, :], x64[:, :, :8, 0]).reshape(w.shape)
    np.testing.assert_allclose(out[dx].numpy(), want_dx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[dw].numpy(), want_dw, rtol=1e-5, atol=1e-5)
