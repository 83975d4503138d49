"""Misuse of convolution2D, convolution2DDataGradient and convolution2DWeightsGradient (SPEC 2,
0.3, API.md "Errors"): one test per kind of bad input, each checking the GraphError SUBCLASS
and that the message names the op, the user's `name=`, the argument and the given value.
Also: zero-sized dimensions (SPEC 2.8), NaN propagation, and descriptor copy semantics (2.2)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mpsgraph as mg
from oracles import conv_f64 as ref

L = mg.TensorNamedDataLayout
PS = mg.PaddingStyle
DT = mg.DataType
Desc = mg.Convolution2DOpDescriptor
FWD, DGRAD, WGRAD = "convolution2D", "convolution2DDataGradient", "convolution2DWeightsGradient"
OPS = (FWD, DGRAD, WGRAD)

# a valid configuration: x [N, C, H, W], w [O, C/g, kH, kW], dy [N, O, Ho, Wo] (NCHW / OIHW)
X, W, DY = [2, 4, 6, 6], [6, 4, 3, 3], [2, 6, 4, 4]


@pytest.fixture(params=[None, "myop"], ids=["unnamed", "named"])
def name(request):
    return request.param


def expect(cls, fn, op, name, argument, *given):
    """fn() raises exactly `cls`; the message reads "<op>[ '<name>']: argument '<argument>':
    ..." and contains every string of `given`."""
    with pytest.raises(mg.GraphError) as info:
        fn()
    err = info.value
    msg = str(err)
    assert type(err) is cls, f"{type(err).__name__} instead of {cls.__name__}: {msg}"
    who = f"{op} {name!r}" if name else op
    assert msg.startswith(f"{who}: argument '{argument}'"), msg
    for s in given:
        assert s in msg, f"{s!r} not in {msg!r}"
    return msg


def call(op, a, b, out=None, d=None, name=None, a_dt=DT.float32, b_dt=DT.float32, g=None):
    """Build `op` on placeholders of shapes `a` and `b` (forward: source, weights; data
    gradient: incomingGradient, weights; weights gradient: incomingGradient, source)."""
    g = g or mg.Graph()
    d = Desc() if d is None else d
    ta = g.placeholder(a, a_dt, name="a")
    tb = g.placeholder(b, b_dt, name="b")
    if op == FWD:
        return g.convolution2D(ta, tb, d, name=name)
    return getattr(g, op)(ta, tb, out, d, name=name)


def args(op, x=X, w=W, dy=DY):
    """The (a, b, outputShape) of `op` for forward shapes x, w and incoming gradient dy."""
    return {FWD: (x, w, None), DGRAD: (dy, w, x), WGRAD: (dy, x, w)}[op]


# ------------------------------------------------------------------ shapes
@pytest.mark.parametrize("op,arg,pos", [
    (FWD, "source", 0), (FWD, "weights", 1), (DGRAD, "incomingGradient", 0),
    (DGRAD, "weights", 1), (WGRAD, "incomingGradient", 0), (WGRAD, "source", 1)])
def test_wrong_rank(name, op, arg, pos):
    a, b, out = args(op)
    bad = [6, 6, 3]
    a, b = (bad, b) if pos == 0 else (a, bad)
    expect(mg.ShapeError, lambda: call(op, a, b, out, name=name), op, name, arg,
           "rank-4", "rank 3", "[6, 6, 3]")


@pytest.mark.parametrize("op,arg", [(FWD, "source"), (DGRAD, "outputShape"),
                                    (WGRAD, "source")])
def test_channels_not_divisible_by_groups(name, op, arg):
    d = Desc(groups=3)  # C = 4; O = 6 is divisible
    a, b, out = args(op, w=[6, 1, 3, 3])
    expect(mg.ShapeError, lambda: call(op, a, b, out, d, name), op, name, arg,
           "divisible by groups=3", "4 channels", "[2, 4, 6, 6]")


@pytest.mark.parametrize("op,arg", [(FWD, "weights"), (DGRAD, "outputShape"),
                                    (WGRAD, "outputShape")])
def test_weights_input_channels_not_C_over_groups(name, op, arg):
    d = Desc(groups=2)  # C / g = 2, weights say 3
    a, b, out = args(op, w=[6, 3, 3, 3])
    expect(mg.ShapeError, lambda: call(op, a, b, out, d, name), op, name, arg,
           "input channels per group", "[6, 3, 3, 3]", "[2, 4, 6, 6]")


@pytest.mark.parametrize("op,arg", [(FWD, "weights"), (DGRAD, "weights"),
                                    (WGRAD, "outputShape")])
def test_output_channels_not_divisible_by_groups(name, op, arg):
    d = Desc(groups=4)  # C = 4, O = 6
    a, b, out = args(op, w=[6, 1, 3, 3])
    expect(mg.ShapeError, lambda: call(op, a, b, out, d, name), op, name, arg,
           "divisible by groups=4", "6 output channels", "[6, 1, 3, 3]")


@pytest.mark.parametrize("op", [DGRAD, WGRAD])
@pytest.mark.parametrize("bad", [[2, 4, 6], [2, 4, 6, 6, 1], [2, 4, -6, 6], [2, 4, 6.0, 6],
                                 [2, 4, True, 6], "2466", 4])
def test_output_shape_list_malformed(name, op, bad):
    a, b, _ = args(op)
    expect(mg.ShapeError, lambda: call(op, a, b, bad, name=name), op, name, "outputShape",
           repr(bad) if isinstance(bad, str) else str(bad))


def test_output_shape_missing_or_given_twice(name):
    g = mg.Graph()
    dy, w = g.placeholder(DY), g.placeholder(W)
    s = g.constant(np.array(X, np.int32), dataType=DT.int32)
    expect(mg.ShapeError, lambda: g.convolution2DDataGradient(
        dy, w, forwardConvolutionDescriptor=Desc(), name=name), DGRAD, name, "outputShape",
        "None")
    expect(mg.GraphError, lambda: g.convolution2DDataGradient(
        dy, w, X, Desc(), outputShapeTensor=s, name=name), DGRAD, name, "outputShapeTensor",
        "both")


def test_data_gradient_output_shape_inconsistent(name):
    run = lambda out, d=None: call(DGRAD, DY, W, out, d, name)  # noqa: E731
    # batch size differs from the incoming gradient's
    expect(mg.ShapeError, lambda: run([3, 4, 6, 6]), DGRAD, name, "outputShape",
           "batch size 2", "[3, 4, 6, 6]", str(DY))
    # channels differ from groups * the weights' input channels per group
    expect(mg.ShapeError, lambda: run([2, 5, 6, 6]), DGRAD, name, "outputShape",
           "4 channels", "[2, 5, 6, 6]", str(W))
    # a spatial size whose forward output (5x5) is not the incoming gradient's (4x4)
    expect(mg.ShapeError, lambda: run([2, 4, 7, 7]), DGRAD, name, "outputShape",
           "4x4", "[2, 4, 7, 7]", "5x5")
    # in the user's layout (NHWC): shapes are shown as given
    d = Desc(dataLayout=L.NHWC)
    expect(mg.ShapeError, lambda: call(DGRAD, [2, 4, 4, 6], W, [2, 6, 7, 4], d, name),
           DGRAD, name, "outputShape", "[2, 6, 7, 4]", "4x4", "4x5")
    # stride 2: several source sizes give the same output; every one of them is accepted
    d = Desc(strideInX=2, strideInY=2)
    for hw in (7, 8):
        assert call(DGRAD, [2, 6, 3, 3], W, [2, 4, hw, hw], d).shape == [2, 4, hw, hw]
    expect(mg.ShapeError, lambda: call(DGRAD, [2, 6, 3, 3], W, [2, 4, 9, 9], d, name),
           DGRAD, name, "outputShape", "3x3", "[2, 4, 9, 9]", "4x4")


def test_data_gradient_incoming_gradient_channels(name):
    expect(mg.ShapeError, lambda: call(DGRAD, [2, 5, 4, 4], W, X, name=name), DGRAD, name,
           "incomingGradient", "6 channels", "5 channels", "[2, 5, 4, 4]")


def test_weights_gradient_inconsistent(name):
    run = lambda dy, x, out: call(WGRAD, dy, x, out, name=name)  # noqa: E731
    # output channels of outputShape differ from the incoming gradient's
    expect(mg.ShapeError, lambda: run(DY, X, [5, 4, 3, 3]), WGRAD, name, "outputShape",
           "6 output channels", "[5, 4, 3, 3]", str(DY))
    # a kernel whose forward output (5x5) is not the incoming gradient's (4x4)
    expect(mg.ShapeError, lambda: run(DY, X, [6, 4, 2, 2]), WGRAD, name, "outputShape",
           "4x4", "[6, 4, 2, 2]", "5x5")
    # batch of the source differs from the incoming gradient's
    expect(mg.ShapeError, lambda: run(DY, [3, 4, 6, 6], W), WGRAD, name, "incomingGradient",
           "batch size 3", str(DY))
    # HWIO: outputShape is in the weights layout
    d = Desc(weightsLayout=L.HWIO)
    expect(mg.ShapeError, lambda: call(WGRAD, DY, X, [2, 2, 4, 6], d, name), WGRAD, name,
           "outputShape", "[2, 2, 4, 6]", "5x5")


# ------------------------------------------------------------------ shape tensors
def _shape_tensor(g, kind, value, dtype):
    """A shape tensor made by a constant (value known at build time) or a placeholder."""
    value = np.asarray(value, dtype)
    if kind == "constant":
        return g.constant(value, dataType=DT.from_numpy(dtype))
    return g.placeholder(list(value.shape), DT.from_numpy(dtype))


@pytest.mark.parametrize("op", [DGRAD, WGRAD])
@pytest.mark.parametrize("kind", ["constant", "placeholder"])
def test_output_shape_tensor_wrong_dtype(name, op, kind):
    a, b, out = args(op)
    g = mg.Graph()
    s = _shape_tensor(g, kind, out, np.float32)
    expect(mg.DataTypeError, lambda: call(op, a, b, s, name=name, g=g), op, name,
           "outputShape", "int32 or int64", "float32")


@pytest.mark.parametrize("op", [DGRAD, WGRAD])
@pytest.mark.parametrize("kind", ["constant", "placeholder"])
@pytest.mark.parametrize("shape", [[2, 2], [3], [5], []])
def test_output_shape_tensor_wrong_rank_or_length(name, op, kind, shape):
    a, b, _ = args(op)
    g = mg.Graph()
    s = _shape_tensor(g, kind, np.ones(shape), np.int32 if kind == "constant" else np.int64)
    expect(mg.ShapeError, lambda: call(op, a, b, s, name=name, g=g), op, name,
           "outputShape", "4 elements", f"shape {shape}")


@pytest.mark.parametrize("op", [DGRAD, WGRAD])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_fed_output_shape_tensor_checked_at_run_time(rng, name, op, dtype):
    a, b, out = args(op)
    g = mg.Graph()
    ta, tb = g.placeholder(a, name="a"), g.placeholder(b, name="b")
    s = g.placeholder([4], DT.from_numpy(dtype), name="s")
    t = getattr(g, op)(ta, tb, s, Desc(), name=name)
    assert t.shape == [-1, -1, -1, -1]
    t_list = getattr(g, op)(ta, tb, out, Desc())
    va = rng.standard_normal(a).astype(np.float32)
    vb = rng.standard_normal(b).astype(np.float32)
    res = g.run({ta: va, tb: vb, s: np.array(out, dtype)}, [t, t_list])
    assert res[t].shape == out
    np.testing.assert_array_equal(res[t].numpy(), res[t_list].numpy())
    bad = [2, 4, 7, 7] if op == DGRAD else [6, 4, 2, 2]
    expect(mg.ShapeError, lambda: g.run({ta: va, tb: vb, s: np.array(bad, dtype)}, [t]),
           op, name, "outputShape", str(bad), "4x4")
    exe = g.compile({ta: mg.ShapedType(a), tb: mg.ShapedType(b),
                     s: mg.ShapedType([4], DT.from_numpy(dtype))}, [t])
    np.testing.assert_array_equal(exe.run([va, vb, np.array(out, dtype)])[0].numpy(),
                                  res[t_list].numpy())
    expect(mg.ShapeError, lambda: exe.run([va, vb, np.array(bad, dtype)]), op, name,
           "outputShape", str(bad))


@pytest.mark.parametrize("op", [DGRAD, WGRAD])
def test_constant_output_shape_tensor_checked_at_build_time(name, op):
    a, b, out = args(op)
    g = mg.Graph()
    good = call(op, a, b, g.constant(np.array(out, np.int64), dataType=DT.int64), g=g)
    assert good.shape == out  # known at build time
    bad = [2, 4, 7, 7] if op == DGRAD else [6, 4, 2, 2]
    bad_tensor = g.constant(np.array(bad, np.int32), dataType=DT.int32)
    expect(mg.ShapeError, lambda: call(op, a, b, bad_tensor, name=name, g=g), op, name,
           "outputShape", str(bad))
    shape_tensor = g.constant(np.array(bad, np.int32), dataType=DT.int32)
    ta, tb = g.placeholder(a), g.placeholder(b)
    kw = {"outputShapeTensor": shape_tensor, "forwardConvolutionDescriptor": Desc()}
    expect(mg.ShapeError, lambda: getattr(g, op)(ta, tb, name=name, **kw), op, name,
           "outputShape", str(bad))


# ------------------------------------------------------------------ data types
@pytest.mark.parametrize("op,arg", [(FWD, "weights"), (DGRAD, "weights"), (WGRAD, "source")])
def test_mixed_float_types(name, op, arg):
    a, b, out = args(op)
    expect(mg.DataTypeError, lambda: call(op, a, b, out, name=name, b_dt=DT.float16), op,
           name, arg, "DataType.float32", "DataType.float16")


@pytest.mark.parametrize("op,arg", [(FWD, "source"), (DGRAD, "incomingGradient"),
                                    (WGRAD, "incomingGradient")])
def test_integer_operand(name, op, arg):
    a, b, out = args(op)
    expect(mg.DataTypeError, lambda: call(op, a, b, out, name=name, a_dt=DT.int32, b_dt=DT.int32),
           op, name, arg, "float32, float16 or bFloat16", "DataType.int32")


# ------------------------------------------------------------------ descriptors
DESCRIPTOR_ERRORS = [
    ("strideInX", 0, "an int >= 1", "given 0"),
    ("strideInY", 0, "an int >= 1", "given 0"),
    ("dilationRateInX", 0, "an int >= 1", "given 0"),
    ("dilationRateInY", -1, "an int >= 1", "given -1"),
    ("groups", 0, "an int >= 1", "given 0"),
    ("paddingLeft", -1, "an int >= 0", "given -1"),
    ("paddingBottom", -2, "an int >= 0", "given -2"),
    ("strideInX", 1.0, "an int >= 1", "given 1.0"),
    ("strideInY", "2", "an int >= 1", "given '2'"),
    ("groups", True, "an int >= 1", "given True"),
    ("paddingStyle", PS.explicitOffset, "explicitOffset applies only to stencil ops",
     "given PaddingStyle.explicitOffset"),
    ("paddingStyle", 9, "PaddingStyle", "given 9"),
    ("paddingStyle", "TF_SAME", "PaddingStyle", "given 'TF_SAME'"),
    ("dataLayout", L.OIHW, "NCHW or NHWC", "given TensorNamedDataLayout.OIHW"),
    ("dataLayout", L.CHW, "NCHW or NHWC", "given TensorNamedDataLayout.CHW"),
    ("weightsLayout", L.NCHW, "OIHW or HWIO", "given TensorNamedDataLayout.NCHW"),
    ("weightsLayout", True, "OIHW or HWIO", "given True"),
]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("prop,value,expected,given", DESCRIPTOR_ERRORS,
                         ids=[f"{p}={v!r}" for p, v, *_ in DESCRIPTOR_ERRORS])
def test_descriptor_property_errors(name, op, prop, value, expected, given):
    a, b, out = args(op)
    d = Desc()
    setattr(d, prop, value)
    argument = "descriptor" if op == FWD else "forwardConvolutionDescriptor"
    expect(mg.DescriptorError, lambda: call(op, a, b, out, d, name), op, name,
           f"{argument}.{prop}", expected, given)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("bad", [None, mg.LSTMDescriptor(), {"strideInX": 1}])
def test_descriptor_of_wrong_type(name, op, bad):
    a, b, out = args(op)
    argument = "descriptor" if op == FWD else "forwardConvolutionDescriptor"
    g = mg.Graph()
    ta, tb = g.placeholder(a), g.placeholder(b)
    fn = ((lambda: g.convolution2D(ta, tb, bad, name=name)) if op == FWD else
          (lambda: getattr(g, op)(ta, tb, out, bad, name=name)))
    expect(mg.DescriptorError, fn, op, name, argument, "Convolution2DOpDescriptor",
           type(bad).__name__)


def test_numpy_integer_descriptor_properties_are_accepted():
    d = Desc(strideInX=np.int64(2), strideInY=np.int32(2), groups=np.int64(2),
             paddingStyle=int(PS.TF_SAME), dataLayout=1, weightsLayout=3)
    g = mg.Graph()
    y = g.convolution2D(g.placeholder([1, 6, 6, 4]), g.placeholder([3, 3, 2, 6]), d)
    assert y.shape == [1, 3, 3, 6]
    kept = y.operation.attrs.descriptor
    assert type(kept.strideInX) is int and kept.paddingStyle is PS.TF_SAME
    assert kept.dataLayout is L.NHWC and kept.weightsLayout is L.HWIO


# ------------------------------------------------------------------ spatial sizes
@pytest.mark.parametrize("op,arg", [(FWD, "source"), (DGRAD, "outputShape"),
                                    (WGRAD, "source")])
@pytest.mark.parametrize("style", ["explicit", "TF_VALID"])
def test_padded_input_smaller_than_dilated_kernel(name, op, arg, style):
    # H = 6, kernel 3 with dilation 4 spans 9 rows; 1 row of padding is still too little
    d = Desc(dilationRateInY=4, paddingStyle=getattr(PS, style), paddingTop=1)
    a, b, out = args(op, dy=[2, 6, 1, 4])
    msg = expect(mg.ShapeError, lambda: call(op, a, b, out, d, name), op, name, arg,
                 "dilated kernel extent 9", "height 6", style)
    assert ("paddings 1 + 0" in msg) == (style == "explicit")
    # TF_SAME pads as needed: the same sizes are fine
    d.paddingStyle = PS.TF_SAME
    a, b, out = args(op, dy=[2, 6, 6, 6])
    assert call(op, a, b, out, d).shape == (out or [2, 6, 6, 6])


@pytest.mark.parametrize("op,arg", [(FWD, "weights"), (DGRAD, "weights"),
                                    (WGRAD, "outputShape")])
def test_kernel_of_spatial_size_zero(name, op, arg):
    a, b, out = args(op, w=[6, 4, 0, 3])
    expect(mg.ShapeError, lambda: call(op, a, b, out, name=name), op, name, arg,
           "spatial size >= 1", "[0, 3]", "[6, 4, 0, 3]")


# ------------------------------------------------------------------ arguments
@pytest.mark.parametrize("op", OPS)
def test_tensor_of_another_graph(name, op):
    a, b, out = args(op)
    g, h = mg.Graph(), mg.Graph()
    ta, tb, tb_other = g.placeholder(a), g.placeholder(b, name="b"), h.placeholder(b, name="b")
    arg_b = {FWD: "weights", DGRAD: "weights", WGRAD: "source"}[op]
    fn = ((lambda: g.convolution2D(ta, tb_other, Desc(), name=name)) if op == FWD else
          (lambda: getattr(g, op)(ta, tb_other, out, Desc(), name=name)))
    expect(mg.GraphMismatchError, fn, op, name, arg_b, "another graph")
    if op != FWD:
        s = h.constant(np.array(out, np.int32), dataType=DT.int32)
        expect(mg.GraphMismatchError, lambda: getattr(g, op)(ta, tb, s, Desc(), name=name),
               op, name, "outputShape", "another graph")


@pytest.mark.parametrize("op", OPS)
def test_non_tensor_argument(name, op):
    a, b, out = args(op)
    g = mg.Graph()
    tb = g.placeholder(b)
    arr = np.zeros(a, np.float32)
    arg_a = "source" if op == FWD else "incomingGradient"
    fn = ((lambda: g.convolution2D(arr, tb, Desc(), name=name)) if op == FWD else
          (lambda: getattr(g, op)(arr, tb, out, Desc(), name=name)))
    expect(mg.GraphError, fn, op, name, arg_a, "a Tensor", "ndarray")


# ------------------------------------------------------------------ zero sizes (SPEC 2.8)
def _run3(x_shape, w_shape, d, rng):
    """Run the three ops on random data; shapes in the descriptor's layouts."""
    y_shape = call(FWD, x_shape, w_shape, d=d).shape
    g = mg.Graph()
    x, w, dy = g.placeholder(x_shape), g.placeholder(w_shape), g.placeholder(y_shape)
    ts = [g.convolution2D(x, w, d), g.convolution2DDataGradient(dy, w, x_shape, d),
          g.convolution2DWeightsGradient(dy, x, w_shape, d)]
    feeds = {t: rng.standard_normal(s).astype(np.float32)
             for t, s in ((x, x_shape), (w, w_shape), (dy, y_shape))}
    out = g.run(feeds, ts)
    return [out[t].numpy() for t in ts]


ZERO_N_STRIDED = pytest.param(Desc(strideInX=2, strideInY=2), id="strided")
ZERO_N_STRIDE1 = pytest.param(Desc(), id="stride1")


@pytest.mark.parametrize("d", [ZERO_N_STRIDED, ZERO_N_STRIDE1, pytest.param(
    Desc(groups=4), id="depthwise")])
def test_zero_batch(rng, d):
    y, dx, dw = _run3([0, 4, 6, 6], [8, 4 // d.groups, 3, 3], d, rng)
    assert y.size == 0 and y.shape[:2] == (0, 8)
    assert dx.shape == (0, 4, 6, 6)
    assert dw.shape == (8, 4 // d.groups, 3, 3) and dw.dtype == np.float32
    np.testing.assert_array_equal(dw, 0)


def test_zero_output_channels(rng):
    y, dx, dw = _run3([2, 4, 6, 6], [0, 2, 3, 3], Desc(groups=2), rng)
    assert y.shape == (2, 0, 4, 4) and dw.shape == (0, 2, 3, 3)
    assert dx.shape == (2, 4, 6, 6)
    np.testing.assert_array_equal(dx, 0)


@pytest.mark.parametrize("stride", [1, 2])
def test_zero_input_channels(rng, stride):
    d = Desc(strideInX=stride, strideInY=stride, dataLayout=L.NHWC)
    y, dx, dw = _run3([2, 6, 6, 0], [3, 0, 3, 3], d, rng)
    assert y.shape == (2, 4 // stride, 4 // stride, 3)
    np.testing.assert_array_equal(y, 0)
    assert dx.shape == (2, 6, 6, 0) and dw.shape == (3, 0, 3, 3)


@pytest.mark.parametrize("style", ["TF_SAME", "ONNX_SAME_LOWER"])
@pytest.mark.parametrize("hw", [(0, 5), (5, 0), (0, 0)])
def test_same_padding_with_empty_spatial_input(rng, style, hw):
    d = Desc(paddingStyle=getattr(PS, style), strideInX=2)
    y, dx, dw = _run3([2, 3, *hw], [4, 3, 3, 2], d, rng)
    assert y.shape == (2, 4, hw[0], -(-hw[1] // 2)) and y.size == 0
    assert dx.shape == (2, 3, *hw)
    np.testing.assert_array_equal(dw, np.zeros((4, 3, 3, 2)))


# ------------------------------------------------------------------ NaN
@pytest.mark.parametrize("style,stride,dilation,groups", [
    ("explicit", 1, 1, 1), ("TF_SAME", 2, 1, 2), ("TF_VALID", 1, 2, 4),
    ("ONNX_SAME_LOWER", 2, 2, 1)])
def test_nan_propagates_only_to_dependent_outputs(rng, style, stride, dilation, groups):
    """A NaN in the source makes NaN exactly the outputs whose sums contain it (forward and
    weights gradient); a NaN in the incoming gradient does the same for the data gradient.
    The oracle is the f64 loops of conv_f64, which propagate NaN by construction."""
    N, C, O, hw, k, pads = 2, 4, 4, (7, 6), (3, 2), (1, 0, 2, 1)
    (ho, wo), rp = ref.resolve_pads(style, hw, k, (stride,) * 2, (dilation,) * 2, pads)
    x = rng.standard_normal((N, C, *hw))
    x[1, 2, 3, 2] = x[0, 0, 2, 3] = np.nan  # (3, 2) is in a stride gap of the last case
    w = rng.standard_normal((O, C // groups, *k))
    dy = rng.standard_normal((N, O, ho, wo))
    d = Desc(strideInX=stride, strideInY=stride, dilationRateInX=dilation,
             dilationRateInY=dilation, groups=groups, paddingTop=pads[0],
             paddingBottom=pads[1], paddingLeft=pads[2], paddingRight=pads[3],
             paddingStyle=getattr(PS, style))
    g = mg.Graph()
    tx, tw, tdy = g.placeholder(list(x.shape)), g.placeholder(list(w.shape)), \
        g.placeholder(list(dy.shape))
    y = g.convolution2D(tx, tw, d)
    dw = g.convolution2DWeightsGradient(tdy, tx, list(w.shape), d)
    dx = g.convolution2DDataGradient(tdy, tw, list(x.shape), d)
    kw = dict(stride=(stride,) * 2, dilation=(dilation,) * 2, pads=rp, groups=groups)
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    out = g.run({tx: f32(x), tw: f32(w), tdy: f32(dy)}, [y, dw])
    for t, want in ((y, ref.conv2d_ref(x, w, **kw)),
                    (dw, ref.conv2d_weights_grad_ref(dy, x, w.shape, **kw))):
        got = out[t].numpy()
        assert np.isnan(want).any()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        assert np.isfinite(got[~np.isnan(want)]).all()
    dy2 = dy.copy()
    dy2[0, 1, 0, :] = np.nan
    dy2[1, 2, -1, -1] = np.nan
    got = g.run({tdy: f32(dy2), tw: f32(w)}, [dx])[dx].numpy()
    want = ref.conv2d_data_grad_ref(dy2, w, x.shape, **kw)
    assert np.isnan(want).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


# ------------------------------------------------------------------ descriptor semantics
def test_default_descriptor():
    d = Desc()
    assert (d.strideInX, d.strideInY, d.dilationRateInX, d.dilationRateInY, d.groups) == \
        (1, 1, 1, 1, 1)
    assert (d.paddingLeft, d.paddingRight, d.paddingTop, d.paddingBottom) == (0, 0, 0, 0)
    assert d.paddingStyle is PS.explicit
    assert d.dataLayout is L.NCHW and d.weightsLayout is L.OIHW
    assert d == Desc(strideInX=1, strideInY=1, dilationRateInX=1, dilationRateInY=1, groups=1,
                     paddingLeft=0, paddingRight=0, paddingTop=0, paddingBottom=0,
                     paddingStyle=PS.explicit, dataLayout=L.NCHW, weightsLayout=L.OIHW)


def test_set_explicit_padding():
    d = Desc(paddingStyle=PS.TF_SAME)
    d.setExplicitPaddingWithPaddingLeft(1, paddingRight=2, paddingTop=3, paddingBottom=4)
    assert d.paddingStyle is PS.explicit
    assert (d.paddingLeft, d.paddingRight, d.paddingTop, d.paddingBottom) == (1, 2, 3, 4)
    assert call(FWD, [1, 1, 5, 5], [1, 1, 3, 3], d=d).shape == [1, 1, 10, 6]


def test_descriptor_mutation_after_build_changes_nothing(rng):
    d = Desc(strideInX=1, strideInY=1, paddingStyle=PS.TF_SAME)
    g = mg.Graph()
    x, w = g.placeholder([2, 4, 7, 6], name="x"), g.placeholder([6, 4, 3, 2], name="w")
    dy = g.placeholder([2, 6, 7, 6], name="dy")
    ops_before = [g.convolution2D(x, w, d),
                  g.convolution2DDataGradient(dy, w, [2, 4, 7, 6], d),
                  g.convolution2DWeightsGradient(dy, x, [6, 4, 3, 2], d)]
    reference = dataclasses.replace(d)
    d.strideInX = d.strideInY = 2
    d.setExplicitPaddingWithPaddingLeft(2, paddingRight=0, paddingTop=1, paddingBottom=0)
    d.dataLayout, d.weightsLayout = L.NHWC, L.HWIO
    g2 = mg.Graph()
    x2, w2 = g2.placeholder([2, 4, 7, 6]), g2.placeholder([6, 4, 3, 2])
    dy2 = g2.placeholder([2, 6, 7, 6])
    fresh = [g2.convolution2D(x2, w2, reference),
             g2.convolution2DDataGradient(dy2, w2, [2, 4, 7, 6], reference),
             g2.convolution2DWeightsGradient(dy2, x2, [6, 4, 3, 2], reference)]
    vals = {s: rng.standard_normal(s).astype(np.float32)
            for s in ((2, 4, 7, 6), (6, 4, 3, 2), (2, 6, 7, 6))}
    got = g.run({x: vals[2, 4, 7, 6], w: vals[6, 4, 3, 2], dy: vals[2, 6, 7, 6]}, ops_before)
    want = g2.run({x2: vals[2, 4, 7, 6], w2: vals[6, 4, 3, 2], dy2: vals[2, 6, 7, 6]}, fresh)
    for a, b in zip(ops_before, fresh):
        assert a.shape == b.shape
        np.testing.assert_array_equal(got[a].numpy(), want[b].numpy())
    assert ops_before[0].operation.attrs.descriptor == reference
    # an op built from the mutated descriptor is a different convolution (NHWC / HWIO)
    y_new = g.convolution2D(g.placeholder([2, 7, 6, 4]), g.placeholder([3, 2, 4, 6]), d)
    assert y_new.shape == [2, 3, 4, 6] != ops_before[0].shape
    assert y_new.operation.attrs.descriptor == d
    assert y_new.operation.attrs.descriptor is not d
