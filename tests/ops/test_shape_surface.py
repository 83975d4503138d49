"""The shape surface (issue 16): every Swift base name of Apple's MPSGraphTensorShapeOps header
is a method of mg.Graph that takes every Swift label of every overload, called as API.md says;
and the decisions of docs/semantics.md, "Shape family (issue 16)", each pinned on every
backend (forward values against hand-written expectations, gradients through
gradientForPrimaryTensor).

The header's rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/, so that the test
runs without the shared folder); when the shared file is present, the copy must match it."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mpsgraph as mg
from helpers import API_DATA, DEVICES, api_rows, check_api_copy, swift_base, swift_labels

DT = mg.DataType
PM = mg.PaddingMode
COPY = API_DATA / "MPSGRAPH_API_shape.tsv"
HEADER = "MPSGraphTensorShapeOps"
# Swift labels that are Python keywords take the Objective-C label (API.md rules 3 and 9)
KEYWORD_LABELS = {("padTensor", "with"): "withPaddingMode",
                  ("concatTensor", "with"): "withTensor"}
OBJC_NAMES = {"depth": "depthToSpace2D", "space": "spaceToDepth2D"}  # API.md rule 8


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] == HEADER)


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 57, 27)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_overload_is_callable_by_itsswift_labels(row):
    name = _base(row["swift_signature"])
    for py in {name, OBJC_NAMES.get(name, name)}:
        fn = getattr(mg.Graph, py, None)
        assert callable(fn), f"mg.Graph has no method {py!r}"
        params = list(inspect.signature(fn).parameters.values())[1:]
        # API rule 9: the first argument is positional; the others are keywords named by the
        # Swift labels (every overload's labels are parameters of the one method)
        assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        names = {p.name for p in params}
        labels = swift_labels(row["swift_signature"])
        if name == "coordinate":  # coordinate(alongAxis:) / (alongAxisTensor:): the first
            assert labels[0] in names  # label names the first argument
        for label in labels[1:]:
            if label == "name":
                continue
            label = KEYWORD_LABELS.get((name, label), label)
            assert label in names, (row["swift_signature"], label, sorted(names))
        assert "name" in {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


# ---------------------------------------------------------------------------- helpers
@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def run(build, *arrays, device):
    g = mg.Graph()
    phs = [g.placeholder(list(np.shape(a)), DT.from_numpy(np.asarray(a).dtype))
           for a in arrays]
    out = build(g, *phs)
    outs = out if isinstance(out, list) else [out]
    res = g.run(dict(zip(phs, arrays)), outs, device=device)
    got = [res[o].numpy() for o in outs]
    return got if isinstance(out, list) else got[0]


def grad(build, x, u, device):
    """d sum(build(x) * u) / dx through gradientForPrimaryTensor."""
    g = mg.Graph()
    p = g.placeholder(list(x.shape))
    y = build(g, p)
    loss = g.reductionSum(g.multiplication(y, g.constant(u)))
    d = g.gradientForPrimaryTensor(loss, [p])[p]
    return g.run({p: x}, [d], device=device)[d].numpy()


def f32(*v):
    return np.array(v, np.float32)


ROW = f32(1, 2, 3, 4)


# ---------------------------------------------------------------------------- padTensor
@pytest.mark.parametrize("mode, want", [
    (PM.constant, [9, 9, 1, 2, 3, 4, 9, 9, 9]),
    (PM.zero, [0, 0, 1, 2, 3, 4, 0, 0, 0]),
    (PM.clampToEdge, [1, 1, 1, 2, 3, 4, 4, 4, 4]),
    (PM.reflect, [3, 2, 1, 2, 3, 4, 3, 2, 1]),          # across the edge: x[-1] = x[1]
    (PM.symmetric, [2, 1, 1, 2, 3, 4, 4, 3, 2]),        # repeating it: x[-1] = x[0]
    (PM.periodic, [2, 3, 1, 2, 3, 4, 2, 3, 1]),         # Apple: x[-2] -> x[L-3]
    (PM.antiPeriodic, [-2, -3, 1, 2, 3, 4, -2, -3, 1]),  # Apple: x[-2] -> -x[L-3]
])
def test_pad_modes(device, mode, want):
    got = run(lambda g, x: g.padTensor(x, mode, [2], [3], 9.0), ROW, device=device)
    np.testing.assert_array_equal(got, f32(*want))


def test_pad_periodic_past_one_period(device):
    # period n - 1 = 3 on both sides, any number of periods; antiPeriodic flips per period
    got = run(lambda g, x: g.padTensor(x, PM.periodic, [4], [5]), ROW, device=device)
    np.testing.assert_array_equal(got, f32(3, 1, 2, 3, 1, 2, 3, 4, 2, 3, 1, 2, 3))
    got = run(lambda g, x: g.padTensor(x, PM.antiPeriodic, [4], [5]), ROW, device=device)
    np.testing.assert_array_equal(got, f32(3, -1, -2, -3, 1, 2, 3, 4, -2, -3, 1, 2, 3))


def test_pad_every_axis_at_once(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run(lambda g, t: g.padTensor(t, PM.symmetric, [1, 0], [0, 2]), x, device=device)
    np.testing.assert_array_equal(got, np.pad(x, [(1, 0), (0, 2)], mode="symmetric"))
    got = run(lambda g, t: g.padTensor(t, PM.reflect, [1, 2], [1, 1]), x, device=device)
    np.testing.assert_array_equal(got, np.pad(x, [(1, 1), (2, 1)], mode="reflect"))


def test_pad_constant_in_the_tensors_type(device):
    x = np.array([1, 2], np.uint8)
    for value, fill in ((-3.0, 0), (300.0, 255), (7.9, 7), (float("nan"), 0)):
        got = run(lambda g, t, v=value: g.padTensor(t, PM.constant, [1], [0], v), x,
                  device=device)
        np.testing.assert_array_equal(got, np.array([fill, 1, 2], np.uint8))
    b = run(lambda g, t: g.padTensor(t, PM.constant, [1], [1], 0.5),
            np.array([False], np.bool_), device=device)
    np.testing.assert_array_equal(b, [True, False, True])
    h = run(lambda g, t: g.padTensor(t, PM.constant, [1], [0], 1e6), f32(1).astype(np.float16),
            device=device)
    assert np.isinf(h[0]) and h[1] == 1


def test_pad_reach_and_errors():
    g = mg.Graph()
    x = g.placeholder([3])
    assert g.padTensor(x, PM.reflect, [2], [2]).shape == [7]
    assert g.padTensor(x, PM.symmetric, [3], [3]).shape == [9]
    with pytest.raises(mg.ShapeError, match="padTensor.*leftPadding"):
        g.padTensor(x, PM.reflect, [3], [0])
    with pytest.raises(mg.ShapeError, match="padTensor.*rightPadding"):
        g.padTensor(x, PM.symmetric, [0], [4])
    with pytest.raises(mg.GraphError, match="withPaddingMode"):
        g.padTensor(x, 9, [0], [0])
    assert g.padTensor(x, withPaddingMode=PM.zero, leftPadding=[1], rightPadding=[0]).shape \
        == [4]
    assert g.padTensor(x, paddingMode=PM.zero, leftPadding=[1], rightPadding=[2]).shape == [6]
    with pytest.raises(mg.GraphError, match="padTensor.*paddingMode"):
        g.padTensor(x, PM.zero, [1], [0], paddingMode=PM.zero)
    with pytest.raises(mg.GraphError, match="padTensor.*rightPadding"):
        g.padTensor(x, PM.zero, [1])


@pytest.mark.parametrize("mode", list(PM))
def test_pad_gradient_is_pad_gradient(device, mode):
    x = f32(1, 2, 3, 4)
    u = np.arange(1, 10, dtype=np.float32)
    got = grad(lambda g, t: g.padTensor(t, mode, [2], [3], 5.0), x, u, device)
    want = np.zeros(4, np.float32)  # sum of u over the positions each element was read into
    src = {PM.constant: [None, None, 0, 1, 2, 3, None, None, None],
           PM.zero: [None, None, 0, 1, 2, 3, None, None, None],
           PM.clampToEdge: [0, 0, 0, 1, 2, 3, 3, 3, 3],
           PM.reflect: [2, 1, 0, 1, 2, 3, 2, 1, 0],
           PM.symmetric: [1, 0, 0, 1, 2, 3, 3, 2, 1],
           PM.periodic: [1, 2, 0, 1, 2, 3, 1, 2, 0],
           PM.antiPeriodic: [1, 2, 0, 1, 2, 3, 1, 2, 0]}[mode]
    sign = [-1, -1, 1, 1, 1, 1, -1, -1, 1] if mode == PM.antiPeriodic else [1] * 9
    for j, (i, s) in enumerate(zip(src, sign)):
        if i is not None:
            want[i] += s * u[j]
    np.testing.assert_array_equal(got, want)
    direct = run(lambda g, d, t: g.padGradient(d, sourceTensor=t, paddingMode=mode,
                                               leftPadding=[2], rightPadding=[3]), u, x,
                 device=device)
    np.testing.assert_array_equal(direct, want)


# ---------------------------------------------------------------------------- tile
def test_tile_and_its_gradient(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run(lambda g, t: g.tileTensor(t, [2, 3]), x, device=device),
                                  np.tile(x, (2, 3)))
    u = np.arange(36, dtype=np.float32).reshape(4, 9)
    want = u.reshape(2, 2, 3, 3).sum(axis=(0, 2))
    np.testing.assert_array_equal(grad(lambda g, t: g.tileTensor(t, [2, 3]), x, u, device),
                                  want)
    np.testing.assert_array_equal(
        run(lambda g, d, t: g.tileGradient(d, sourceTensor=t, withMultiplier=[2, 3]), u, x,
            device=device), want)
    z = run(lambda g, t: g.tileTensor(t, [0, 1]), x, device=device)
    assert z.shape == (0, 3)


# ---------------------------------------------------------------------------- split, stack
def test_split_forms_and_gradient(device):
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    a, b, c = run(lambda g, t: g.split(t, numSplits=3, axis=1), x, device=device)
    np.testing.assert_array_equal(np.concatenate([a, b, c], 1), x)
    assert a.shape == (2, 2)
    p, q = run(lambda g, t: g.split(t, [1, 5], axis=-1), x, device=device)
    np.testing.assert_array_equal(q, x[:, 1:])
    (only,) = run(lambda g, t: g.split(t, splitSizesTensor=g.constant(np.array([2], np.int32)),
                                       axis=0), x, device=device)
    np.testing.assert_array_equal(only, x)
    # the gradient of an unused piece is zero
    g = mg.Graph()
    t = g.placeholder([2, 6])
    pieces = g.split(t, [4, 2], axis=1)
    d = g.gradientForPrimaryTensor(g.reductionSum(pieces[1]), [t])[t]
    np.testing.assert_array_equal(g.run({t: x}, [d], device=device)[d].numpy(),
                                  np.repeat([[0, 0, 0, 0, 1, 1]], 2, 0))


def test_stack_broadcasts(device):
    a = f32(1, 2, 3)
    b = np.array([[10], [20]], np.float32)
    got = run(lambda g, x, y: g.stack([x, y], axis=-1), a, b, device=device)
    np.testing.assert_array_equal(got, np.stack(np.broadcast_arrays(a, b), -1))
    assert got.shape == (2, 3, 2)
    gr = grad(lambda g, x: g.stack([x, x, x], axis=0), a, np.ones((3, 3), np.float32), device)
    np.testing.assert_array_equal(gr, f32(3, 3, 3))


# ---------------------------------------------------------------------------- reverse, flatten
def test_reverse_and_flatten(device):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(run(lambda g, t: g.reverse(t), x, device=device),
                                  x[::-1, ::-1, ::-1])
    np.testing.assert_array_equal(run(lambda g, t: g.reverse(t, axes=[-1, 0]), x,
                                      device=device), x[::-1, :, ::-1])
    np.testing.assert_array_equal(
        run(lambda g, t: g.reverse(t, axesTensor=g.constant(np.array([1], np.int32))), x,
            device=device), x[:, ::-1])
    for axis, shp in ((0, (1, 24)), (1, (2, 12)), (-1, (6, 4)), (3, (24, 1))):
        assert run(lambda g, t, a=axis: g.flatten2D(t, a), x, device=device).shape == shp


def test_tensor_arguments_must_be_constant():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    axes = g.placeholder([1], DT.int32)
    with pytest.raises(mg.UnsupportedError, match="squeeze.*axesTensor"):
        g.squeeze(x, axesTensor=axes)
    with pytest.raises(mg.UnsupportedError, match="split.*splitSizesTensor"):
        g.split(x, splitSizesTensor=axes, axis=0)
    with pytest.raises(mg.DataTypeError, match="flatten2D.*axis"):
        g.flatten2D(x, g.constant(np.float32(1)))
    with pytest.raises(mg.GraphError, match="reverse.*axesTensor"):
        g.reverse(x, [0], axesTensor=g.constant(np.array([0], np.int32)))
    with pytest.raises(mg.ShapeError, match="coordinate.*withShapeTensor"):
        g.coordinate(0, withShapeTensor=g.placeholder([-1], DT.int32))
    # shapeOf of a static tensor counts as a constant
    assert g.coordinate(0, g.shapeOf(x)).shape == [2, 3]


def test_fed_axes_of_reverse_flatten2D_coordinate(device):
    """reverse's axesTensor, flatten2D's axisTensor and coordinate's tensors may be fed: the
    shape rule reads their values when the graph runs (a bad value is then a GraphError)."""
    g = mg.Graph()
    x = g.placeholder([2, 3, 4])
    ax = g.placeholder([-1], DT.int32)
    a0 = g.placeholder([], DT.int64)
    shp = g.placeholder([2], DT.int32)
    r, f, c = g.reverse(x, axesTensor=ax), g.flatten2D(x, a0), g.coordinate(a0, shp)
    assert r.shape == [2, 3, 4] and f.shape == [-1, -1] and c.shape == [-1, -1]
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    feeds = {x: xv, ax: np.array([0, -1], np.int32), a0: np.array(1, np.int64),
             shp: np.array([2, 5], np.int32)}
    res = g.run(feeds, [r, f, c], device=device)
    np.testing.assert_array_equal(res[r].numpy(), xv[::-1, :, ::-1])
    assert res[f].numpy().shape == (2, 12)
    np.testing.assert_array_equal(res[c].numpy(), np.tile(np.arange(5, dtype=np.int32), (2, 1)))
    d = g.gradientForPrimaryTensor(g.reductionSum(g.multiplication(r, g.constant(xv))), [x])[x]
    np.testing.assert_array_equal(g.run(feeds, [d], device=device)[d].numpy(),
                                  xv[::-1, :, ::-1])
    with pytest.raises(mg.ShapeError, match="reverse.*axes"):
        g.run({**feeds, ax: np.array([3], np.int32)}, [r], device=device)
    with pytest.raises(mg.ShapeError, match="reverse.*axes"):
        g.run({**feeds, ax: np.array([1, 1], np.int32)}, [r], device=device)


# ---------------------------------------------------------------------------- depth / space
@pytest.mark.parametrize("pixel", [True, False])
def test_depth_to_space_orders(device, pixel):
    torch = pytest.importorskip("torch")
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float32).reshape(2, 8, 2, 3)  # NCHW, C = 2 * 2^2
    got = run(lambda g, t: g.depth(t, widthAxis=3, heightAxis=2, depthAxis=1, blockSize=2,
                                   usePixelShuffleOrder=pixel), x, device=device)
    if pixel:  # PyTorch's pixel_shuffle: channel c * 4 + (i * 2 + j)
        want = torch.nn.functional.pixel_shuffle(torch.from_numpy(x), 2).numpy()
    else:  # TensorFlow's depth_to_space: channel (i * 2 + j) * C + c
        want = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(2, 2, 4, 6)
    np.testing.assert_array_equal(got, want)
    back = run(lambda g, t: g.spaceToDepth2D(g.depthToSpace2D(
        t, widthAxis=3, heightAxis=2, depthAxis=1, blockSize=2, usePixelShuffleOrder=pixel),
        widthAxis=3, heightAxis=2, depthAxis=1, blockSize=2, usePixelShuffleOrder=pixel), x,
        device=device)
    np.testing.assert_array_equal(back, x)


def test_space_to_batch_nhwc_matches_tensorflow_order(device):
    x = np.arange(1 * 4 * 6 * 1, dtype=np.float32).reshape(1, 4, 6, 1)
    got = run(lambda g, t: g.spaceToBatch(t, spatialAxes=[1, 2], batchAxis=0,
                                          blockDimensions=[2, 3], usePixelShuffleOrder=False),
              x, device=device)
    # TensorFlow space_to_batch_nd (no padding): batch index (i * 3 + j) * N + n
    want = x.reshape(1, 2, 2, 2, 3, 1).transpose(2, 4, 0, 1, 3, 5).reshape(6, 2, 2, 1)
    np.testing.assert_array_equal(got, want)
    back = run(lambda g, t: g.batchToSpace(t, spatialAxes=[1, 2], batchAxis=0,
                                           blockDimensions=[2, 3], usePixelShuffleOrder=False),
               got, device=device)
    np.testing.assert_array_equal(back, x)


# ---------------------------------------------------------------------------- the rest
def test_coordinate_apple_examples(device):
    g = mg.Graph()
    a, b = g.coordinate(0, [5]), g.coordinate(alongAxis=0, withShape=[3, 2])
    c = g.coordinate(-1, withShapeTensor=g.constant(np.array([2, 3], np.int64)))
    r = g.run({}, [a, b, c], device=device)
    np.testing.assert_array_equal(r[a].numpy(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(r[b].numpy(), [[0, 0], [1, 1], [2, 2]])
    np.testing.assert_array_equal(r[c].numpy(), [[0, 1, 2], [0, 1, 2]])
    assert r[a].dataType == DT.int32


def test_reinterpret_cast(device):
    x = f32(1.0, -2.0)
    got = run(lambda g, t: g.reinterpretCast(t, DT.uInt8), x, device=device)
    np.testing.assert_array_equal(got, x.view(np.uint8))
    back = run(lambda g, t: g.reinterpretCast(t, DT.float32), got, device=device)
    np.testing.assert_array_equal(back, x)
    wide = run(lambda g, t: g.reinterpretCast(t, DT.int64), np.zeros((3, 2), np.float32),
               device=device)
    assert wide.shape == (3, 1)
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="reinterpretCast"):
        g.reinterpretCast(g.placeholder([3], DT.uInt8), DT.float32)


def test_slice_update_and_masks(device):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    got = run(lambda g, t: g.sliceUpdateDataTensor(t, g.constant(f32(-1, -2, -3)), [1, 0],
                                                   [3, 5], [1, 2]), x, device=device)
    want = x.copy()
    want[1:3, 0:5:2] = f32(-1, -2, -3)
    np.testing.assert_array_equal(got, want)
    # masks: start of axis 0 ignored, end of axis 1 ignored (stride -1: down to 0), axis 0
    # squeezed at index 0
    got = run(lambda g, t: g.sliceTensor(t, starts=[3, 3], ends=[0, 4], strides=[1, -1],
                                         startMask=1, endMask=2, squeezeMask=1), x,
              device=device)
    np.testing.assert_array_equal(got, x[0, 3::-1])
    got = run(lambda g, t: g.sliceTensor(t, start=g.constant(np.array([1, -2], np.int32)),
                                         sizeTensor=g.constant(np.array([-1, 2], np.int32))),
              x, device=device)
    np.testing.assert_array_equal(got, x[1:, -2:])
    u = np.ones((4, 5), np.float32)
    gd = grad(lambda g, t: g.sliceUpdateDataTensor(t, g.constant(np.float32(0)), [0, 0],
                                                   [4, 5], [2, 1]), x, u, device)
    np.testing.assert_array_equal(gd, np.repeat([[0], [1], [0], [1]], 5, 1))


def test_concat_interleave_apple_example(device):
    got = run(lambda g, a, b: g.concatTensors([a, b], 0, interleave=True), f32(1, 2, 3),
              f32(4, 5, 6), device=device)
    np.testing.assert_array_equal(got, f32(1, 4, 2, 5, 3, 6))
    gr = grad(lambda g, a: g.concatTensors([a, g.constant(f32(0, 0, 0))], 0, interleave=True),
              f32(1, 2, 3), f32(1, 2, 3, 4, 5, 6), device)
    np.testing.assert_array_equal(gr, f32(1, 3, 5))


def test_expand_and_squeeze_axes_tensor(device):
    x = np.ones((2, 1, 3), np.float32)
    ax = np.array([1], np.int32)
    assert run(lambda g, t: g.squeeze(t, axesTensor=g.constant(ax)), x,
               device=device).shape == (2, 3)
    assert run(lambda g, t: g.expandDims(t, axesTensor=g.constant(ax)), x,
               device=device).shape == (2, 1, 1, 3)


def test_fed_slice_starts_ends_strides(device):
    """Swift's tensor forms of sliceTensor / sliceGradientTensor / sliceUpdateDataTensor take
    starts, ends and strides known only at run time: the result's sizes are then -1 at build
    time and the shape rule reads the values when the graph runs."""
    g = mg.Graph()
    x = g.placeholder([4, 5])
    b, e, s = (g.placeholder([2], DT.int32) for _ in range(3))
    y = g.sliceTensor(x, start=b, end=e, strideTensor=s, squeezeMask=1)
    assert y.shape == [-1]
    upd = g.sliceUpdateDataTensor(x, g.constant(np.float32(-1)), startsTensor=b,
                                  endsTensor=e, stridesTensor=s)
    assert upd.shape == [4, 5]
    xv = np.arange(20, dtype=np.float32).reshape(4, 5)
    feeds = {x: xv, b: np.array([2, 4], np.int32), e: np.array([3, 0], np.int32),
             s: np.array([1, -2], np.int32)}
    d = g.gradientForPrimaryTensor(g.reductionSum(g.multiplication(y, y)), [x])[x]
    du = g.gradientForPrimaryTensor(g.reductionSum(g.multiplication(upd, upd)), [x])[x]
    res = g.run(feeds, [y, upd, d, du], device=device)
    np.testing.assert_array_equal(res[y].numpy(), xv[2, 4:0:-2])
    want = xv.copy()
    want[2:3, 4:0:-2] = -1
    np.testing.assert_array_equal(res[upd].numpy(), want)
    dw = np.zeros_like(xv)
    dw[2, 4:0:-2] = 2 * xv[2, 4:0:-2]
    np.testing.assert_array_equal(res[d].numpy(), dw)
    duw = 2 * xv
    duw[2:3, 4:0:-2] = 0
    np.testing.assert_array_equal(res[du].numpy(), duw)
    with pytest.raises(mg.ShapeError, match="sliceTensor.*strides"):
        g.run({**feeds, s: np.array([1, 0], np.int32)}, [y], device=device)
    with pytest.raises(mg.ShapeError, match="sliceTensor.*starts"):
        g.run({**feeds, b: np.array([7, 0], np.int32)}, [y], device=device)
