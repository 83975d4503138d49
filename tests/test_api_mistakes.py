"""Mistakes made at the API get clear answers (issue 14, item 5; docs/semantics.md "API
mistakes"):

1. a descriptor property that does not exist (set, read, or a constructor keyword) raises an
   AttributeError (also a DescriptorError) naming the nearest real property;
2. data of the wrong dtype fed for a placeholder raises a FeedError saying how to cast it (no
   implicit casts for arrays);
3. a Python list / nested list / scalar feed is converted to the placeholder's dtype, and a
   value that does not fit gives a FeedError naming the feed;
4. `gradients` / `gradientForPrimaryTensor` accept a bare Tensor for `withTensors`;
5. a layout mix-up in convolution2D, its gradients and pooling names the axis the descriptor
   read as channels and, when the other layout fits, asks about it.

Each runs on cpu and, with torch installed, torch-cpu (and cuda where present)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import re

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES
from mpsgraph import descriptors

L = mg.TensorNamedDataLayout
DT = mg.DataType
Conv = mg.Convolution2DOpDescriptor
Pool = mg.Pooling2DOpDescriptor

# "op[ 'name']: argument 'x': expected ..., given ..."
FORMAT = re.compile(r"^[A-Za-z0-9.]+( '[^']*')?: argument '[^']+': expected .+, given .+$", re.S)


def message(cls, fn):
    """fn() raises `cls` (exactly); its message."""
    with pytest.raises(mg.GraphError) as info:
        fn()
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    return str(info.value)


# ====================================================================== 1. descriptors
DESCRIPTOR_CLASSES = [c for _, c in inspect.getmembers(descriptors, inspect.isclass)
                      if dataclasses.is_dataclass(c) and c.__module__ == descriptors.__name__]


def test_every_descriptor_class_refuses_unknown_properties():
    assert {c.__name__ for c in DESCRIPTOR_CLASSES} >= {
        "Convolution2DOpDescriptor", "LSTMDescriptor", "Pooling2DOpDescriptor"}
    for cls in DESCRIPTOR_CLASSES:
        assert issubclass(cls, descriptors.Descriptor), cls.__name__


def _unknown(fn):
    with pytest.raises(AttributeError) as info:
        fn()
    err = info.value
    assert isinstance(err, mg.DescriptorError) and isinstance(err, mg.GraphError)
    assert type(err) is descriptors.UnknownPropertyError
    return str(err)


@pytest.mark.parametrize("cls", DESCRIPTOR_CLASSES, ids=lambda c: c.__name__)
def test_misspelt_property_names_the_real_one(cls):
    for f in dataclasses.fields(cls):
        typos = {f.name.lower(), f.name.upper(), f.name[:-1] + "x" + f.name[-1]}
        for typo in typos - {f.name}:
            want = f"{cls.__name__} has no property {typo!r}; did you mean {f.name!r}?"
            d = cls()
            assert _unknown(lambda: setattr(d, typo, 1)) == want  # noqa: B023
            assert _unknown(lambda: getattr(d, typo)) == want  # noqa: B023
            assert _unknown(lambda: cls(**{typo: 1})) == want  # noqa: B023
            assert not hasattr(d, typo) and getattr(d, typo, "dflt") == "dflt"
            assert d == cls() and typo not in vars(d)  # nothing was stored


def test_the_issue_examples():
    d = mg.LSTMDescriptor()
    msg = _unknown(lambda: setattr(d, "bidirectonal", True))
    assert msg == "LSTMDescriptor has no property 'bidirectonal'; did you mean 'bidirectional'?"
    assert d.bidirectional is False
    msg = _unknown(lambda: setattr(Conv(), "paddingstyle", mg.PaddingStyle.TF_SAME))
    assert msg == ("Convolution2DOpDescriptor has no property 'paddingstyle'; did you mean "
                   "'paddingStyle'?")
    msg = _unknown(lambda: mg.LSTMDescriptor(bidirectonal=True))
    assert "did you mean 'bidirectional'?" in msg
    assert "did you mean 'strideInX'?" in _unknown(lambda: Conv(strideX=2))
    assert "did you mean 'kernelWidth'?" in _unknown(lambda: Pool(kernelwidth=2))
    assert "did you mean 'dataLayout'?" in _unknown(lambda: Pool().datalayout)
    # nothing near: the message lists the properties
    msg = _unknown(lambda: setattr(mg.LSTMDescriptor(), "zzz", 1))
    assert msg.startswith("LSTMDescriptor has no property 'zzz'; its properties are reverse, "
                          "bidirectional,")


@pytest.mark.parametrize("cls", DESCRIPTOR_CLASSES, ids=lambda c: c.__name__)
def test_descriptors_stay_plain_dataclasses(cls):
    d = cls()
    name = dataclasses.fields(cls)[0].name
    setattr(d, name, getattr(d, name))  # real properties are set as usual
    assert dataclasses.replace(d) == d
    assert copy.copy(d) == d and copy.deepcopy(d) == d
    assert pickle.loads(pickle.dumps(d)) == d
    assert cls(**{f.name: getattr(d, f.name) for f in dataclasses.fields(cls)}) == d
    assert getattr(d, "__no_such_dunder__", None) is None


def test_positional_constructors_and_methods_still_work():
    p = Pool(2, 3, 2, 2)
    assert (p.kernelWidth, p.kernelHeight, p.strideInX, p.strideInY) == (2, 3, 2, 2)
    c = Conv()
    c.setExplicitPaddingWithPaddingLeft(1, 2, 3, 4)
    assert (c.paddingLeft, c.paddingBottom, c.paddingStyle) == (1, 4, mg.PaddingStyle.explicit)
    assert len(mg.LSTMDescriptor().activations()) == 5


@pytest.mark.parametrize("device", DEVICES)
def test_a_refused_property_leaves_the_op_unchanged(device):
    d = Conv(strideInX=2, strideInY=2)
    with pytest.raises(AttributeError):
        d.paddingstyle = mg.PaddingStyle.TF_SAME
    g = mg.Graph()
    x, w = g.placeholder([1, 1, 5, 5], name="x"), g.placeholder([1, 1, 3, 3], name="w")
    y = g.convolution2D(x, w, d)
    assert y.shape == [1, 1, 2, 2]  # explicit (unpadded), as if the typo had never happened
    out = g.run({x: np.ones((1, 1, 5, 5), np.float32), w: np.ones((1, 1, 3, 3), np.float32)},
                [y], device=device)[y]
    np.testing.assert_array_equal(out.numpy(), np.full((1, 1, 2, 2), 9, np.float32))


# ====================================================================== 2. cast hints
def _graph(dt=DT.float32, shape=(2, 3)):
    g = mg.Graph()
    x = g.placeholder(list(shape), dt, name="x")
    y = g.multiplication(x, x, name="y")
    return g, x, y


def _both_runs(g, x, y, device, value):
    """The messages of Graph.run and Executable.run for feed `value`."""
    exe = g.compile({x: mg.ShapedType(x.shape, x.dataType)}, [y], device=device)
    return [message(mg.FeedError, lambda: g.run({x: value}, [y], device=device)),
            message(mg.FeedError, lambda: exe.run([value]))]


@pytest.mark.parametrize("device", DEVICES)
def test_float64_array_for_float32_says_how_to_cast(device):
    g, x, y = _graph()
    a = np.arange(6.0).reshape(2, 3)
    for msg in _both_runs(g, x, y, device, a):
        assert FORMAT.match(msg), msg
        assert msg.startswith("run: argument 'feeds[x]': expected DataType.float32 data")
        assert "no implicit casts" in msg
        assert msg.endswith("given float64 data; cast it with arr.astype(np.float32)")
    out = g.run({x: a.astype(np.float32)}, [y], device=device)[y]  # the advice works
    np.testing.assert_array_equal(out.numpy(), (a * a).astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt,given,cast", [
    (DT.bFloat16, np.float32, "arr.astype(ml_dtypes.bfloat16)"),
    (DT.float16, np.float32, "arr.astype(np.float16)"),
    (DT.int32, np.int64, "arr.astype(np.int32)"),
    (DT.float32, np.int32, "arr.astype(np.float32)")])
def test_other_dtype_mismatches_say_how_to_cast(device, dt, given, cast):
    g, x, y = _graph(dt)
    for msg in _both_runs(g, x, y, device, np.ones((2, 3), given)):
        assert f"given {np.dtype(given)} data; cast it with {cast}" in msg, msg
    good = eval(cast.replace("arr", "np.ones((2, 3), given)"), {"np": np, "ml_dtypes": ml_dtypes,
                                                                "given": given})
    assert g.run({x: good}, [y], device=device)[y].dataType == dt


@pytest.mark.parametrize("device", DEVICES)
def test_tensordata_of_another_dtype_says_how_to_convert(device):
    g, x, y = _graph()
    td = mg.TensorData(np.ones((2, 3), np.float16), device=device)
    for msg in _both_runs(g, x, y, device, td):
        assert "given" in msg and "float16 data" in msg
        assert "mg.TensorData(data, dataType=mg.DataType.float32)" in msg
    fixed = mg.TensorData(td, dataType=mg.DataType.float32)
    assert g.run({x: fixed}, [y], device=device)[y].numpy().dtype == np.float32


@pytest.mark.parametrize("device", DEVICES)
def test_torch_tensor_of_another_dtype_says_to_use_to(device):
    torch = pytest.importorskip("torch")
    g, x, y = _graph()
    t = torch.ones(2, 3, dtype=torch.float64)
    for msg in _both_runs(g, x, y, device, t):
        assert FORMAT.match(msg), msg
        assert msg.endswith("given torch.float64 data; cast it with t.to(torch.float32)"), msg
    g2, b, yb = _graph(DT.bFloat16)
    for msg in _both_runs(g2, b, yb, device, torch.ones(2, 3)):
        assert msg.endswith("given torch.float32 data; cast it with t.to(torch.bfloat16)"), msg
    assert g.run({x: t.to(torch.float32)}, [y], device=device)[y].shape == [2, 3]


def test_compile_with_a_wrong_shaped_type_is_still_plain():
    g, x, y = _graph()
    msg = message(mg.FeedError, lambda: g.compile({x: mg.ShapedType([2, 3], DT.float16)}, [y]))
    assert "no implicit casts" in msg and "float16" in msg


# ====================================================================== 3. Python data
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt,shape,value", [
    (DT.float32, [2, 2], [[1, 2], [3, 4.5]]),
    (DT.float32, [2], (1, 2)),
    (DT.float32, [], 2.5),
    (DT.float32, [], True),
    (DT.float16, [3], [0.1, 65504, -2]),
    (DT.bFloat16, [2], [1.5, -3]),
    (DT.int32, [3], [1, 2.0, -7]),
    (DT.int64, [1], [2 ** 62 + 1]),
    (DT.uInt8, [], 255),
    (DT.int8, [2], [-128, 127]),
    (DT.bool, [3], [True, False, 1]),
    (DT.complexFloat32, [2], [1 + 2j, 3]),
    (DT.float32, [0], []),
    (DT.float32, [2], [2 ** 70, 1]),
])
def test_python_data_takes_the_placeholders_dtype(device, dt, shape, value):
    g = mg.Graph()
    x = g.placeholder(shape, dt, name="x")
    want = np.array(value).astype(dt.numpy_dtype)
    got = g.run({x: value}, [x], device=device)[x]
    assert got.dataType == dt and got.shape == shape and got.device == mg.Device(device)
    np.testing.assert_array_equal(got.numpy(), want)
    exe = g.compile({x: mg.ShapedType(shape, dt)}, [x], device=device)
    np.testing.assert_array_equal(exe.run([value])[0].numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_python_data_in_a_computation(device):
    g = mg.Graph()
    x = g.placeholder([2, 2], mg.float32, name="x")
    k = g.placeholder([2], mg.int32, name="k")
    y = g.addition(x, g.cast(k, mg.float32), name="y")
    out = g.run({x: [[1, 2], [3, 4]], k: [10, 20]}, [y], device=device)[y]
    np.testing.assert_array_equal(out.numpy(), np.array([[11, 22], [13, 24]], np.float32))


BAD_PYTHON = [
    (DT.int32, [2], [1.5, 2], "1.5 does not fit in DataType.int32"),
    (DT.int32, [2], [float("nan"), 2], "nan does not fit in DataType.int32"),
    (DT.int32, [1], [2 ** 40], f"{2 ** 40} does not fit in DataType.int32"),
    (DT.int64, [2], [2 ** 70, 1], f"{2 ** 70} does not fit in DataType.int64"),
    (DT.uInt8, [], 300, "300 does not fit in DataType.uInt8"),
    (DT.uInt8, [2], [1, -1], "-1 does not fit in DataType.uInt8"),
    (DT.uInt64, [1], [-1], "-1 does not fit in DataType.uInt64"),
    (DT.bool, [2], [2, 1], "2 does not fit in DataType.bool"),
    (DT.float32, [1], [1e39], "1e+39 does not fit in DataType.float32"),
    (DT.float16, [1], [70000], "70000 does not fit in DataType.float16"),
    (DT.float32, [2], [1j, 2], "complex values do not fit in DataType.float32"),
    (DT.float32, [2, 2], [[1, 2], [3]], "a ragged nested list"),
    (DT.float32, [2], [1, None], "None is not a number"),
    (DT.float32, [2], [1, "a"], "are not numbers"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt,shape,value,why", BAD_PYTHON,
                         ids=[f"{d.name}-{v!r}"[:40] for d, _, v, _ in BAD_PYTHON])
def test_python_values_that_do_not_fit(device, dt, shape, value, why):
    g = mg.Graph()
    x = g.placeholder(shape, dt, name="x")
    exe = g.compile({x: mg.ShapedType(shape, dt)}, [x], device=device)
    for fn in (lambda: g.run({x: value}, [x], device=device), lambda: exe.run([value])):
        msg = message(mg.FeedError, fn)
        assert FORMAT.match(msg), msg
        assert msg.startswith(f"run: argument 'feeds[x]': expected Python values that fit in "
                              f"{dt!r}"), msg
        assert why in msg, msg


@pytest.mark.parametrize("device", DEVICES)
def test_python_data_of_the_wrong_shape(device):
    g = mg.Graph()
    x = g.placeholder([2, 2], mg.float32, name="x")
    exe = g.compile({x: mg.ShapedType([2, 2])}, [x], device=device)
    msg = message(mg.FeedError, lambda: g.run({x: [1, 2, 3, 4]}, [x], device=device))
    assert "feeds[x]" in msg and "[2, 2]" in msg and "[4]" in msg
    msg = message(mg.FeedError, lambda: exe.run([[1, 2, 3, 4]]))
    assert "feeds[x]" in msg and "[2, 2]" in msg and "[4]" in msg


@pytest.mark.parametrize("device", DEVICES)
def test_numpy_scalars_keep_their_dtype(device):
    g = mg.Graph()
    s = g.placeholder([], mg.float32, name="s")
    assert g.run({s: np.float32(2)}, [s], device=device)[s].numpy() == 2
    msg = message(mg.FeedError, lambda: g.run({s: np.float64(2)}, [s], device=device))
    assert "cast it with arr.astype(np.float32)" in msg


# ====================================================================== 4. gradients
def _loss_graph():
    g = mg.Graph()
    w = g.placeholder([3], mg.float32, name="w")
    v = g.placeholder([3], mg.float32, name="v")
    loss = g.reductionSum(g.multiplication(g.multiplication(w, w), v), name="loss")
    return g, w, v, loss


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["gradients", "gradientForPrimaryTensor"])
def test_gradients_of_a_bare_tensor(device, method):
    g, w, v, loss = _loss_graph()
    grads = getattr(g, method)(loss, w)
    assert isinstance(grads, dict) and list(grads) == [w]
    listed = getattr(g, method)(loss, [w])
    wv, vv = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
    out = g.run({w: wv, v: vv}, [grads[w], listed[w]], device=device)
    np.testing.assert_allclose(out[grads[w]].numpy(), 2 * wv * vv)
    np.testing.assert_array_equal(out[grads[w]].numpy(), out[listed[w]].numpy())
    assert list(getattr(g, method)(loss, (w, v))) == [w, v]  # any sequence


@pytest.mark.parametrize("method", ["gradients", "gradientForPrimaryTensor"])
@pytest.mark.parametrize("bad,argument,given", [
    (3, "withTensors", "int"), (None, "withTensors", "NoneType"),
    ("w", "withTensors", "str"), ("BAD1", "withTensors[1]", "ndarray"),
    ("BAD2", "withTensors[0]", "float")])
def test_non_tensors_in_with_tensors(method, bad, argument, given):
    g, w, v, loss = _loss_graph()
    bad = {"BAD1": [w, np.zeros(3, np.float32)], "BAD2": [1.0]}.get(bad, bad) \
        if isinstance(bad, str) else bad
    msg = message(mg.GraphError, lambda: getattr(g, method)(loss, bad))
    assert msg.startswith(f"{method}: argument '{argument}': expected a Tensor"), msg
    assert msg.endswith(f"given {given}"), msg


def test_gradients_names_its_own_arguments():
    g, w, v, loss = _loss_graph()
    msg = message(mg.GraphError, lambda: g.gradients(np.zeros(3), w))
    assert msg.startswith("gradients: argument 'of': expected a Tensor")
    msg = message(mg.GraphError, lambda: g.gradientForPrimaryTensor(np.zeros(3), w))
    assert msg.startswith("gradientForPrimaryTensor: argument 'primaryTensor'")
    i = g.placeholder([3], mg.int32, name="i")
    msg = message(mg.DataTypeError, lambda: g.gradients(loss, i))
    assert msg.startswith("gradients: argument 'withTensors[0]': expected a floating-point")


# ====================================================================== 5. layouts
def _conv_case(op, x_shape, w_shape, d, dy_shape=None):
    """A thunk building `op` from placeholders of the FORWARD shapes x and w (and the
    incoming gradient dy), and the placeholders."""
    g = mg.Graph()
    x, w = g.placeholder(x_shape, name="x"), g.placeholder(w_shape, name="w")
    if op == "convolution2D":
        return (lambda: g.convolution2D(x, w, d)), [x, w]
    dy = g.placeholder(dy_shape, name="dy")
    if op == "convolution2DDataGradient":
        return (lambda: g.convolution2DDataGradient(dy, w, x_shape, d)), [x, w, dy]
    return (lambda: g.convolution2DWeightsGradient(dy, x, w_shape, d)), [x, w, dy]


NCHW_X, NHWC_X = [1, 3, 8, 8], [1, 8, 8, 3]
OIHW_W, HWIO_W = [16, 3, 5, 5], [5, 5, 3, 16]
NCHW_Y, NHWC_Y = [1, 16, 4, 4], [1, 4, 4, 16]

LAYOUT_CASES = [
    # op, x, w, dy, descriptor, argument, phrases that must appear, the layouts that fit
    ("convolution2D", NCHW_X, OIHW_W, None, Conv(dataLayout=L.NHWC), "weights",
     ["expected 8 input channels per group (axis 3 of source [1, 3, 8, 8], read as C by "
      "dataLayout NHWC)", "given 3 input channels per group (axis 1 of weights "
      "[16, 3, 5, 5], read as I by weightsLayout OIHW)",
      "; is the source NCHW? set dataLayout=TensorNamedDataLayout.NCHW"], {"dataLayout": L.NCHW}),
    ("convolution2D", NHWC_X, OIHW_W, None, Conv(), "weights",
     ["expected 8 input channels per group (axis 1 of source [1, 8, 8, 3], read as C by "
      "dataLayout NCHW)", "; is the source NHWC? set dataLayout=TensorNamedDataLayout.NHWC"],
     {"dataLayout": L.NHWC}),
    ("convolution2D", NCHW_X, HWIO_W, None, Conv(), "weights",
     ["given 5 input channels per group (axis 1 of weights [5, 5, 3, 16], read as I by "
      "weightsLayout OIHW)", "; are the weights HWIO? set "
      "weightsLayout=TensorNamedDataLayout.HWIO"], {"weightsLayout": L.HWIO}),
    ("convolution2D", NHWC_X, HWIO_W, None, Conv(), "weights",
     ["read as C by dataLayout NCHW", "; are the source NHWC and the weights HWIO? set "
      "dataLayout=TensorNamedDataLayout.NHWC and weightsLayout=TensorNamedDataLayout.HWIO"],
     {"dataLayout": L.NHWC, "weightsLayout": L.HWIO}),
    ("convolution2DDataGradient", NCHW_X, OIHW_W, NCHW_Y, Conv(dataLayout=L.NHWC),
     "outputShape", ["given 8 channels (axis 3 of outputShape [1, 3, 8, 8], read as C by "
                     "dataLayout NHWC)", "; are incomingGradient and outputShape NCHW? set "
                     "dataLayout=TensorNamedDataLayout.NCHW"], {"dataLayout": L.NCHW}),
    ("convolution2DDataGradient", NCHW_X, HWIO_W, NCHW_Y, Conv(), "outputShape",
     ["expected 5 channels (groups=1 x 5 input channels per group: axis 1 of weights "
      "[5, 5, 3, 16], read as I by weightsLayout OIHW)", "given 3 channels (axis 1 of "
      "outputShape [1, 3, 8, 8], read as C by dataLayout NCHW)", "; are the weights HWIO? "
      "set weightsLayout=TensorNamedDataLayout.HWIO"], {"weightsLayout": L.HWIO}),
    # HWIO [3, 3, 3, 16] read as OIHW: 3 input channels fit, 3 output channels do not
    ("convolution2DDataGradient", NCHW_X, [3, 3, 3, 16], [1, 16, 6, 6], Conv(),
     "incomingGradient", ["expected 3 channels (the weights' output channels: axis 0 of "
                          "weights [3, 3, 3, 16], read as O by weightsLayout OIHW)",
                          "given 16 channels (axis 1 of incomingGradient [1, 16, 6, 6], read "
                          "as C by dataLayout NCHW)", "; are the weights HWIO? set "
                          "weightsLayout=TensorNamedDataLayout.HWIO"], {"weightsLayout": L.HWIO}),
    ("convolution2DWeightsGradient", NCHW_X, OIHW_W, NCHW_Y, Conv(dataLayout=L.NHWC),
     "outputShape", ["expected 8 input channels per group (axis 3 of source [1, 3, 8, 8], "
                     "read as C by dataLayout NHWC)", "; are incomingGradient and source "
                     "NCHW? set dataLayout=TensorNamedDataLayout.NCHW"], {"dataLayout": L.NCHW}),
    ("convolution2DWeightsGradient", NCHW_X, HWIO_W, NCHW_Y, Conv(), "outputShape",
     ["expected 3 input channels per group (axis 1 of source [1, 3, 8, 8], read as C by "
      "dataLayout NCHW)", "given 5 input channels per group (axis 1 of outputShape "
      "[5, 5, 3, 16], read as I by weightsLayout OIHW)", "; is outputShape HWIO? set "
      "weightsLayout=TensorNamedDataLayout.HWIO"], {"weightsLayout": L.HWIO}),
    ("convolution2DWeightsGradient", NCHW_X, [3, 3, 3, 16], [1, 16, 6, 6], Conv(),
     "outputShape", ["expected 16 output channels (the incomingGradient's: axis 1 of "
                     "incomingGradient [1, 16, 6, 6], read as C by dataLayout NCHW)",
                     "given [3, 3, 3, 16] (3 output channels at axis 0, read as O by "
                     "weightsLayout OIHW)", "; is outputShape HWIO? set "
                     "weightsLayout=TensorNamedDataLayout.HWIO"], {"weightsLayout": L.HWIO}),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,x,w,dy,d,argument,phrases,fix", LAYOUT_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYOUT_CASES)])
def test_convolution_layout_mix_ups(device, rng, op, x, w, dy, d, argument, phrases, fix):
    msg = message(mg.ShapeError, _conv_case(op, x, w, d, dy)[0])
    assert FORMAT.match(msg), msg
    assert msg.startswith(f"{op}: argument '{argument}': expected "), msg
    for p in phrases:
        assert p in msg, f"{p!r} not in {msg!r}"
    # the suggested layouts build and run
    build, placeholders = _conv_case(op, x, w, dataclasses.replace(d, **fix), dy)
    t = build()
    feeds = {p: rng.standard_normal(p.shape).astype(np.float32) for p in placeholders}
    out = t.graph.run(feeds, [t], device=device)[t]
    assert out.shape == t.shape == (w if op == "convolution2DWeightsGradient" else out.shape)


def test_no_hint_when_no_layout_fits():
    d = Conv()
    msg = message(mg.ShapeError, _conv_case("convolution2D", [1, 3, 8, 8], [16, 4, 5, 5], d)[0])
    assert "(axis 1 of source [1, 3, 8, 8], read as C by dataLayout NCHW)" in msg
    assert "set dataLayout" not in msg and "set weightsLayout" not in msg
    # groups > 1 keeps the per-group arithmetic in the message
    msg = message(mg.ShapeError, _conv_case("convolution2D", [1, 8, 8, 6], [4, 3, 3, 3],
                                            Conv(groups=2))[0])
    assert "expected 4 input channels per group (C=8 / groups=2; C is axis 1 of source " \
           "[1, 8, 8, 6], read as C by dataLayout NCHW)" in msg
    assert msg.endswith("; is the source NHWC? set dataLayout=TensorNamedDataLayout.NHWC")


@pytest.mark.parametrize("device", DEVICES)
def test_layout_hint_at_compile_time(device):
    g = mg.Graph()
    x = g.placeholder([1, -1, -1, -1], name="x")
    w = g.placeholder([16, 3, 5, 5], name="w")
    y = g.convolution2D(x, w, Conv(dataLayout=L.NHWC))  # fine while C is unknown
    msg = message(mg.ShapeError, lambda: g.compile(
        {x: mg.ShapedType([1, 3, 8, 8]), w: mg.ShapedType([16, 3, 5, 5])}, [y], device=device))
    assert "axis 3 of source [1, 3, 8, 8], read as C by dataLayout NHWC" in msg
    assert msg.endswith("; is the source NCHW? set dataLayout=TensorNamedDataLayout.NCHW")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["maxPooling2D", "avgPooling2D"])
def test_pooling_layout_mix_up(device, op):
    g = mg.Graph()
    x = g.placeholder([1, 3, 8, 8], name="x")
    d = Pool(kernelWidth=4, kernelHeight=4, dataLayout=L.NHWC)
    msg = message(mg.ShapeError, lambda: getattr(g, op)(x, d))
    assert FORMAT.match(msg), msg
    assert msg.startswith(f"{op}: argument 'source': expected a padded height"), msg
    assert ("given height 3 + paddings 0 + 0 (axis 1 of shape [1, 3, 8, 8], read as H by "
            "dataLayout NHWC, which reads C from axis 3)") in msg
    assert msg.endswith("; is the source NCHW? set dataLayout=TensorNamedDataLayout.NCHW")
    d.dataLayout = L.NCHW
    y = getattr(g, op)(x, d)
    assert g.run({x: np.ones((1, 3, 8, 8), np.float32)}, [y], device=device)[y].shape == \
        [1, 3, 5, 5]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["maxPooling2DGradient", "avgPooling2DGradient"])
def test_pooling_gradient_layout_mix_up(device, op):
    g = mg.Graph()
    x = g.placeholder([1, 3, 8, 8], name="x")
    dy = g.placeholder([1, 3, 4, 4], name="dy")
    d = Pool(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2, dataLayout=L.NHWC)
    msg = message(mg.ShapeError, lambda: getattr(g, op)(dy, x, d))
    assert msg.startswith(f"{op}: argument 'gradient': expected the forward result's shape "
                          "[1, 1, 4, 8] (of sourceTensor [1, 3, 8, 8], NHWC: C at axis 3"), msg
    assert msg.endswith("; are gradient and sourceTensor NCHW? set "
                        "dataLayout=TensorNamedDataLayout.NCHW"), msg
    d.dataLayout = L.NCHW
    y = getattr(g, op)(dy, x, d)
    feeds = {x: np.ones((1, 3, 8, 8), np.float32), dy: np.ones((1, 3, 4, 4), np.float32)}
    assert g.run(feeds, [y], device=device)[y].shape == [1, 3, 8, 8]
