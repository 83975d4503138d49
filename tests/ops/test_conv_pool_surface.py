"""The convolution and pooling surface (issue 18): every Swift base name of Apple's
MPSGraphConvolutionOps, MPSGraphConvolutionTransposeOps, MPSGraphDepthwiseConvolutionOps,
MPSGraphPoolingOps and MPSGraphImToColOps headers is a method of mg.Graph whose parameters
carry the Swift labels; the descriptor classes with Apple's properties and defaults; and the
decisions of docs/semantics.md, "Convolution and pooling (issue 18)", each pinned on every
CPU backend against torch float64.

The headers' rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/); when the shared
file is present, the copy must match it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mpsgraph as mg
from helpers import (
    API_DATA,
    DEVICES,
    api_rows,
    check_api_copy,
    method_params,
    swift_base,
    swift_labels,
)

torch = pytest.importorskip("torch")
F = torch.nn.functional

COPY = API_DATA / "MPSGRAPH_API_conv_pool.tsv"
HEADERS = ("MPSGraphConvolutionOps", "MPSGraphConvolutionTransposeOps",
           "MPSGraphDepthwiseConvolutionOps", "MPSGraphPoolingOps", "MPSGraphImToColOps")
P, L, M = mg.PaddingStyle, mg.TensorNamedDataLayout, mg.PoolingReturnIndicesMode


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] in HEADERS)


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 40)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["objc_selector"])
def test_every_swift_signature_is_a_graph_method(row):
    name = _base(row["swift_signature"])
    params = method_params(name)
    names = {p.name for p in params}
    labels = swift_labels(row["swift_signature"])
    for label in labels[1:]:
        if label != "_":
            assert label in names, (name, label, sorted(names))


# ---------------------------------------------------------------------------- descriptors
@pytest.mark.parametrize("cls, defaults", [
    (mg.Convolution3DOpDescriptor, dict(
        strideInX=1, strideInY=1, strideInZ=1, dilationRateInX=1, dilationRateInY=1,
        dilationRateInZ=1, groups=1, paddingLeft=0, paddingRight=0, paddingTop=0,
        paddingBottom=0, paddingFront=0, paddingBack=0, paddingStyle=P.explicit,
        dataLayout=L.NCDHW, weightsLayout=L.OIDHW)),
    (mg.DepthwiseConvolution2DOpDescriptor, dict(
        strideInX=1, strideInY=1, dilationRateInX=1, dilationRateInY=1, paddingLeft=0,
        paddingRight=0, paddingTop=0, paddingBottom=0, paddingStyle=P.explicit,
        dataLayout=L.NCHW, weightsLayout=L.OIHW)),
    (mg.DepthwiseConvolution3DOpDescriptor, dict(
        strides=[1, 1, 1], dilationRates=[1, 1, 1], paddingValues=[0] * 6,
        paddingStyle=P.explicit, channelDimensionIndex=-4)),
    (mg.Pooling4DOpDescriptor, dict(
        kernelSizes=[1, 1, 1, 1], strides=[1, 1, 1, 1], dilationRates=[1, 1, 1, 1],
        paddingValues=[0] * 8, paddingStyle=P.explicit, ceilMode=False,
        includeZeroPadToAverage=False, returnIndicesMode=M.none,
        returnIndicesDataType=mg.int32)),
    (mg.ImToColOpDescriptor, dict(
        kernelWidth=1, kernelHeight=1, strideInX=1, strideInY=1, dilationRateInX=1,
        dilationRateInY=1, paddingLeft=0, paddingRight=0, paddingTop=0, paddingBottom=0,
        dataLayout=L.NCHW)),
])
def test_descriptor_properties_and_defaults(cls, defaults):
    d = cls()
    assert {f.name for f in dataclasses.fields(cls)} == set(defaults)
    for k, v in defaults.items():
        assert getattr(d, k) == v, (cls.__name__, k)
    with pytest.raises(AttributeError, match="did you mean"):
        setattr(d, list(defaults)[0] + "s", 1)


def test_descriptor_factories_and_padding_setters():
    d = mg.Convolution3DOpDescriptor(paddingStyle=P.TF_SAME)
    d.setExplicitPaddingWithPaddingLeft(1, 2, 3, 4, 5, 6)
    assert (d.paddingLeft, d.paddingRight, d.paddingTop, d.paddingBottom, d.paddingFront,
            d.paddingBack, d.paddingStyle) == (1, 2, 3, 4, 5, 6, P.explicit)
    dw = mg.DepthwiseConvolution2DOpDescriptor.descriptorWithDataLayout(L.NHWC, L.HWIO)
    assert (dw.dataLayout, dw.weightsLayout) == (L.NHWC, L.HWIO)
    d3 = mg.DepthwiseConvolution3DOpDescriptor.descriptorWithPaddingStyle(P.TF_SAME)
    assert d3.paddingStyle == P.TF_SAME and d3.strides == [1, 1, 1]
    p4 = mg.Pooling4DOpDescriptor.descriptorWithKernelSizes([1, 1, 2, 2],
                                                            paddingStyle=P.TF_VALID)
    assert p4.kernelSizes == [1, 1, 2, 2] and p4.paddingStyle == P.TF_VALID
    im = mg.ImToColOpDescriptor.descriptorWithKernelWidth(3, kernelHeight=2)
    im.setExplicitPaddingWithPaddingLeft(1, 2, 3, 4)
    assert (im.kernelWidth, im.kernelHeight, im.paddingLeft, im.paddingBottom) == (3, 2, 1, 4)
    assert [m.value for m in M] == list(range(9))


# ---------------------------------------------------------------------------- decisions
def _run(g, feeds, outs, device):
    r = g.run(feeds, outs, device=device)
    return [r[o].numpy() for o in outs]


def _t(a):
    return torch.tensor(np.asarray(a, np.float64))


@pytest.mark.parametrize("device", DEVICES)
def test_depthwise2D_channel_multiplier_is_c_times_M_plus_m(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)  # OIHW: [M, C, kH, kW]
    g = mg.Graph()
    X, W = g.placeholder(list(x.shape)), g.placeholder(list(w.shape))
    Y = g.depthwiseConvolution2D(X, weights=W, descriptor=mg.DepthwiseConvolution2DOpDescriptor(
        paddingLeft=1, paddingRight=1, paddingTop=1, paddingBottom=1))
    (y,) = _run(g, {X: x, W: w}, [Y], device)
    want = F.conv2d(_t(x), _t(w).permute(1, 0, 2, 3).reshape(6, 1, 3, 3), padding=1, groups=3)
    np.testing.assert_allclose(y, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_depthwise3D_as_pytorch_calls_it_for_2D(device):
    # SPEC 2.9: weights [O, 1, kH, kW] transposed to [1, O, kH, kW], channelDimensionIndex -3,
    # strides [1, sy, sx], paddingValues [0, 0, pt, pb, pl, pr]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((4, 1, 3, 2)).astype(np.float32)
    d = mg.DepthwiseConvolution3DOpDescriptor(strides=[1, 2, 1], dilationRates=[1, 1, 2],
                                              paddingValues=[0, 0, 1, 0, 2, 1],
                                              channelDimensionIndex=-3)
    g = mg.Graph()
    X, W = g.placeholder(list(x.shape)), g.placeholder([1, 4, 3, 2])
    Y = g.depthwiseConvolution3D(X, weights=W, descriptor=d)
    DX = g.depthwiseConvolution3DDataGradient(Y, weights=W, outputShape=list(x.shape),
                                              descriptor=d)
    y, dx = _run(g, {X: x, W: w.transpose(1, 0, 2, 3).copy()}, [Y, DX], device)
    xt = _t(x).requires_grad_()
    yt = F.conv2d(F.pad(xt, (2, 1, 1, 0)), _t(w), stride=(2, 1), dilation=(1, 2), groups=4)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    (dxt,) = torch.autograd.grad(yt, xt, yt.detach())
    np.testing.assert_allclose(dx, dxt.numpy(), rtol=1e-4, atol=1e-4)


def test_depthwise3D_data_gradient_without_outputShape():
    # (out - 1) * stride + dilated kernel - paddings: no leftover rows
    d = mg.DepthwiseConvolution3DOpDescriptor(strides=[2, 1, 3], paddingValues=[1, 0, 0, 0,
                                                                                0, 1])
    g = mg.Graph()
    dy = g.placeholder([2, 3, 4, 5])
    w = g.placeholder([2, 3, 2, 2])
    dx = g.depthwiseConvolution3DDataGradient(dy, weights=w, descriptor=d)
    assert dx.shape == [2, (3 - 1) * 2 + 3 - 1, 4 + 1, 4 * 3 + 2 - 1]
    d.paddingStyle = P.TF_SAME
    assert g.depthwiseConvolution3DDataGradient(dy, weights=w, descriptor=d).shape == \
        [2, 6, 4, 15]


@pytest.mark.parametrize("device", DEVICES)
def test_convolutionTranspose2D_outputShape_picks_the_size(device):
    # stride 2, kernel 3, pad 1: sources of 5 and 6 both map to 3; each is a valid outputShape
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 3, 3)).astype(np.float32)
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32)
    d = mg.Convolution2DOpDescriptor(strideInX=2, strideInY=2, paddingLeft=1, paddingRight=1,
                                     paddingTop=1, paddingBottom=1)
    for size, op in ((5, 0), (6, 1)):
        g = mg.Graph()
        X, W = g.placeholder([1, 4, 3, 3]), g.placeholder([4, 2, 3, 3])
        Y = g.convolutionTranspose2D(X, weights=W, outputShape=[1, 2, size, size],
                                     descriptor=d)
        (y,) = _run(g, {X: x, W: w}, [Y], device)
        want = F.conv_transpose2d(_t(x), _t(w), stride=2, padding=1, output_padding=op)
        np.testing.assert_allclose(y, want.numpy(), rtol=1e-5, atol=1e-5)
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="outputShape"):
        g.convolutionTranspose2D(g.placeholder([1, 4, 3, 3]), weights=g.placeholder(
            [4, 2, 3, 3]), outputShape=[1, 2, 7, 7], descriptor=d)


@pytest.mark.parametrize("device", DEVICES)
def test_maxPooling2D_indices_match_torch_and_feed_back(device):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    d = mg.Pooling2DOpDescriptor(kernelWidth=3, kernelHeight=2, strideInX=2, strideInY=2,
                                 returnIndicesMode=M.globalFlatten2D,
                                 returnIndicesDataType=mg.int64)
    g = mg.Graph()
    X = g.placeholder(list(x.shape))
    v, i = g.maxPooling2DReturnIndices(X, descriptor=d)
    shape = g.placeholder([4], mg.int32)  # the outputShape as a fed shape tensor
    dx = g.maxPooling2DGradient(v, indicesTensor=i, outputShape=shape, descriptor=d)
    assert dx.shape == [-1] * 4
    vv, ii, dxx = _run(g, {X: x, shape: np.asarray(x.shape, np.int32)}, [v, i, dx], device)
    xt = _t(x).requires_grad_()
    yt, it = F.max_pool2d(xt, (2, 3), (2, 2), return_indices=True)
    np.testing.assert_array_equal(vv, yt.detach().numpy().astype(np.float32))
    np.testing.assert_array_equal(ii, it.numpy())
    assert ii.dtype == np.int64
    (want,) = torch.autograd.grad(yt, xt, yt.detach())  # overlapping windows add
    np.testing.assert_allclose(dxx, want.numpy(), rtol=1e-6, atol=0)


def test_gradient_from_indices_is_a_host_reading_step():
    """maxPooling2DGradient with indices checks the (possibly fed) indices on the host, so its
    step is marked as a host read (the executable keeps it out of a CUDA graph); the plain
    pooling ops and their gradients are not."""
    d = mg.Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2,
                                 returnIndicesMode=M.globalFlatten2D)
    g = mg.Graph()
    X = g.placeholder([1, 1, 4, 4])
    v, i = g.maxPooling2DReturnIndices(X, descriptor=d)
    dx = g.maxPooling2DGradient(v, indicesTensor=i, outputShape=[1, 1, 4, 4], descriptor=d)
    plain = g.maxPooling2DGradient(v, X, descriptor=d)
    for t, want in ((dx, True), (plain, False), (v, False)):
        exe = g.compile({X: mg.ShapedType([1, 1, 4, 4], mg.float32)}, [t])
        kinds = {s.kind: s.host for s in exe._steps}
        assert kinds[t.operation.kind] is want, (t.operation.kind, kinds)


def test_return_indices_mode_none_returns_None():
    g = mg.Graph()
    v, i = g.maxPooling4DReturnIndices(g.placeholder([1, 1, 4, 4]),
                                       descriptor=mg.Pooling4DOpDescriptor([1, 1, 2, 2]))
    assert i is None and v.shape == [1, 1, 3, 3]


@pytest.mark.parametrize("device", DEVICES)
def test_pooling4D_pools_the_last_four_axes_as_torch_3D_pooling(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 5, 6, 4)).astype(np.float32)  # rank 5: axis 0 is batch
    d = mg.Pooling4DOpDescriptor(kernelSizes=[1, 2, 3, 2], strides=[1, 2, 2, 1],
                                 paddingValues=[0, 0, 1, 1, 1, 1, 1, 1], ceilMode=True,
                                 includeZeroPadToAverage=True)
    g = mg.Graph()
    X = g.placeholder(list(x.shape))
    ys = _run(g, {X: x}, [g.maxPooling4D(X, descriptor=d), g.avgPooling4D(X, descriptor=d)],
              device)
    kw = dict(kernel_size=(2, 3, 2), stride=(2, 2, 1), padding=1, ceil_mode=True)
    np.testing.assert_allclose(ys[0], F.max_pool3d(_t(x), **kw).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ys[1], F.avg_pool3d(_t(x), count_include_pad=True, **kw)
                               .numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_imToCol_is_torch_unfold(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    d = mg.ImToColOpDescriptor(kernelWidth=2, kernelHeight=3, strideInX=2, dilationRateInY=2,
                               paddingLeft=1, paddingRight=1, paddingTop=2, paddingBottom=2)
    g = mg.Graph()
    X = g.placeholder(list(x.shape))
    C = g.imToCol(X, descriptor=d)
    I = g.colToIm(C, outputShape=list(x.shape), descriptor=d)  # noqa: E741
    c, im = _run(g, {X: x}, [C, I], device)
    want = F.unfold(_t(x), (3, 2), dilation=(2, 1), padding=(2, 1), stride=(1, 2))
    np.testing.assert_allclose(c, want.numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(im, F.fold(want, x.shape[2:], (3, 2), dilation=(2, 1),
                                          padding=(2, 1), stride=(1, 2)).numpy(),
                               rtol=1e-6, atol=1e-6)
