"""The graph model (SPEC section 1): DataType, ShapedType, placeholder, constant, variables,
run, compile / Executable, TensorData, Device, and the Tensor / Operation objects.

Needs no op beyond the graph's own; convolution2D serves as a sample op where one is needed."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from mpsgraph.ops import _registry
from mpsgraph.runtime.device import resolve_device

DT = mg.DataType
D1 = mg.Convolution2DOpDescriptor()  # stride 1, no padding, NCHW / OIHW


def _conv_graph(x_shape=(1, 2, 4, 4), w_shape=(3, 2, 2, 2)):
    g = mg.Graph()
    x = g.placeholder(list(x_shape), name="x")
    w = g.placeholder(list(w_shape), name="w")
    return g, x, w, g.convolution2D(x, w, D1, name="y")


def _conv_ref(x, w):
    """Unpadded stride-1 NCHW/OIHW correlation, float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    y = np.zeros((n, o, h - kh + 1, wd - kw + 1))
    for p in range(kh):
        for q in range(kw):
            y += np.einsum("nchw,oc->nohw", x[:, :, p:p + h - kh + 1, q:q + wd - kw + 1],
                           w[:, :, p, q])
    return y


# ------------------------------------------------------------------ DataType / ShapedType
RAW = {
    "invalid": 0, "float32": 0x10000020, "float16": 0x10000010, "bFloat16": 0x90000010,
    "complexFloat32": 0x11000040, "complexFloat16": 0x11000020,
    "int8": 0x20000008, "int16": 0x20000010, "int32": 0x20000020, "int64": 0x20000040,
    "uInt8": 8, "uInt16": 16, "uInt32": 32, "uInt64": 64, "bool": 0x80000008,
    "int4": 0x20000004, "uInt4": 4, "int2": 0x20000002, "uInt2": 2,
    "unorm1": 0x40000001, "unorm8": 0x40000008,
}
NUMPY = {
    "float32": np.float32, "float16": np.float16, "bFloat16": ml_dtypes.bfloat16,
    "complexFloat32": np.complex64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uInt8": np.uint8, "uInt16": np.uint16, "uInt32": np.uint32,
    "uInt64": np.uint64, "bool": np.bool_, "int4": ml_dtypes.int4, "uInt4": ml_dtypes.uint4,
    "int2": ml_dtypes.int2, "uInt2": ml_dtypes.uint2,
}


def test_datatype_raw_values_and_numpy_dtypes():
    for name, raw in RAW.items():
        assert int(getattr(DT, name)) == raw, name
        assert DT(raw).name == name
    for name, npdt in NUMPY.items():
        dt = getattr(DT, name)
        assert dt.numpy_dtype == np.dtype(npdt)
        assert DT.from_numpy(npdt) is dt
    assert DT.bFloat16.numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    assert DT.bFloat16.itemsize == 2 and DT.float32.itemsize == 4
    for name in ("invalid", "complexFloat16", "unorm1", "unorm8"):
        with pytest.raises(TypeError):
            getattr(DT, name).numpy_dtype
    with pytest.raises(TypeError):
        DT.from_numpy(np.float64)
    assert [d for d in DT if d.is_floating] == [DT.float32, DT.float16, DT.bFloat16]


def test_module_level_datatypes_and_all():
    for name in ("float32", "float16", "bFloat16", "int8", "int16", "int32", "int64", "uInt8"):
        assert getattr(mg, name) is getattr(DT, name)
        assert name in mg.__all__
    assert mg.bool is DT.bool
    assert "bool" not in mg.__all__
    ns: dict = {}
    exec("from mpsgraph import *", ns)
    assert "bool" not in ns and ns["float32"] is DT.float32
    for name in mg.__all__:
        assert hasattr(mg, name), name


def test_shapedtype():
    st = mg.ShapedType()
    assert st.shape is None and st.dataType is DT.float32 and st.rank is None
    assert mg.ShapedType([2, -1, 3], DT.int32).shape == [2, -1, 3]
    assert mg.ShapedType((2, 3)) == mg.ShapedType([2, 3], DT.float32)
    assert mg.ShapedType([2, 3]).isEqual(mg.ShapedType([np.int64(2), 3]))
    assert mg.ShapedType([2, -1]) == mg.ShapedType([2, -1])
    assert mg.ShapedType([2, -1]) != mg.ShapedType([2, 3])
    assert mg.ShapedType(None) == mg.ShapedType(None)
    assert mg.ShapedType(None) != mg.ShapedType([])
    assert mg.ShapedType([2]) != mg.ShapedType([2], DT.float16)
    assert not mg.ShapedType([2]).isEqual([2])
    assert hash(mg.ShapedType([2, 3])) == hash(mg.ShapedType([2, 3]))
    assert mg.ShapedType([2, -1]).is_static is False and mg.ShapedType([]).is_static
    for bad in ([2, None], [2, -2], [1.5], [True], "ab", 3):
        with pytest.raises(mg.ShapeError, match="ShapedType.*shape"):
            mg.ShapedType(bad)
    with pytest.raises(mg.DataTypeError, match="dataType.*'float32'"):
        mg.ShapedType([2], "float32")


# ------------------------------------------------------------------ placeholder / constant
def test_placeholder():
    g = mg.Graph()
    p = g.placeholder([2, 3])
    assert p.dataType is DT.float32 and p.shape == [2, 3] and p.operation.name is None
    q = g.placeholder([-1, 3], DT.float16, name="q")
    assert q.shape == [-1, 3] and q.dataType is DT.float16
    assert q.operation.name == "q" and q.name == "q"
    u = g.placeholder(None, DT.int32, name="u")
    assert u.shape is None
    s = g.placeholder([], name="s")
    assert s.shape == []
    with pytest.raises(mg.ShapeError, match="placeholder 'b': argument 'shape'.*-2"):
        g.placeholder([2, -2], name="b")
    with pytest.raises(mg.DataTypeError, match="placeholder 'b': argument 'dataType'.*invalid"):
        g.placeholder([2], DT.invalid, name="b")
    with pytest.raises(mg.DataTypeError, match="argument 'dataType'"):
        g.placeholder([2], "float32")
    with pytest.raises(mg.GraphError, match="argument 'name'"):
        g.placeholder([2], name=3)


def _value(g, t):
    return g.run({}, [t])[t].numpy()


def test_constant_from_bytes():
    g = mg.Graph()
    data = np.arange(6, dtype="<f4").tobytes()
    c = g.constant(data, [2, 3], DT.float32)
    assert c.shape == [2, 3] and c.dataType is DT.float32
    np.testing.assert_array_equal(_value(g, c), np.arange(6, dtype=np.float32).reshape(2, 3))
    b = g.constant(np.array([1.5, -2.0], ml_dtypes.bfloat16).tobytes(), [2], DT.bFloat16)
    np.testing.assert_array_equal(_value(g, b).astype(np.float32), [1.5, -2.0])
    with pytest.raises(mg.ShapeError, match=r"constant 'k'.*'data'.*24 bytes.*given 20 bytes"):
        g.constant(data[:20], [2, 3], DT.float32, name="k")
    with pytest.raises(mg.ShapeError, match="'shape'"):
        g.constant(data, None, DT.float32)
    with pytest.raises(mg.DataTypeError, match="'dataType'"):
        g.constant(data, [2, 3])


def test_constant_from_array_sequence_and_scalar():
    g = mg.Graph()
    a = np.arange(6.0)  # float64: cast to the requested type
    c = g.constant(a, [2, 3], DT.float16)
    assert c.shape == [2, 3] and c.dataType is DT.float16
    out = _value(g, c)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, a.reshape(2, 3))
    a[0] = 100.0  # the constant keeps its own copy
    assert _value(g, c)[0, 0] == 0
    assert g.constant(np.ones((2, 2), np.int32)).dataType is DT.int32  # type from the array
    n = g.constant([[1, 2, 3], [4, 5, 6]], dataType=DT.int32)
    assert n.shape == [2, 3]
    np.testing.assert_array_equal(_value(g, n), [[1, 2, 3], [4, 5, 6]])
    assert g.constant([1.7, -2.7], dataType=DT.int32).shape == [2]
    s = g.constant(2.5, dataType=DT.float32)
    assert s.shape == [] and _value(g, s).shape == ()
    f = g.constant(2.5, [2, 2], DT.float32)
    np.testing.assert_array_equal(_value(g, f), np.full((2, 2), 2.5, np.float32))
    with pytest.raises(mg.ShapeError, match=r"constant 'c'.*'shape'.*6 elements.*\[4\]"):
        g.constant(np.arange(6.0), [4], DT.float32, name="c")
    with pytest.raises(mg.ShapeError, match="'shape'.*-1"):
        g.constant(1.0, [-1, 2], DT.float32)
    with pytest.raises(mg.ShapeError, match="'shape'"):
        g.constant(1.0, [2.5], DT.float32)
    with pytest.raises(mg.DataTypeError, match="'data'"):
        g.constant([[1, 2], [3]], dataType=DT.float32)
    with pytest.raises(mg.DataTypeError, match="'data'"):
        g.constant("abc", dataType=DT.float32)
    with pytest.raises(mg.DataTypeError, match="'dataType'"):
        g.constant(1.0)


# ------------------------------------------------------------------ variables
def test_variable_read_assign_semantics():
    g = mg.Graph()
    v = g.variable(np.zeros(3, np.float32), [3], DT.float32, name="v")
    r = g.read(v, name="r")
    one = g.constant(1.0, [3], DT.float32)
    p = g.placeholder([3], name="p")
    a_one = g.assign(v, tensor=one, name="a_one")
    a_p = g.assign(v, tensor=p, name="a_p")
    assert isinstance(a_one, mg.Operation) and a_one.outputTensors == []
    assert a_one.name == "a_one" and a_one.inputTensors == [v, one]

    # not targeted: no assign happens
    out = g.run({}, [v, r])
    np.testing.assert_array_equal(out[v].numpy(), 0)
    np.testing.assert_array_equal(out[r].numpy(), 0)
    # reads in the run that assigns see the start-of-run value; the commit is at the end
    out = g.run({}, [v, r], targetOperations=[a_one])
    np.testing.assert_array_equal(out[r].numpy(), 0)
    np.testing.assert_array_equal(out[v].numpy(), 0)
    np.testing.assert_array_equal(_value(g, r), 1)
    # two assigns in one run: targetOperations order, the later wins (either build order)
    g.run({p: np.full(3, 7, np.float32)}, [], targetOperations=[a_p, a_one])
    np.testing.assert_array_equal(_value(g, v), 1)
    g.run({p: np.full(3, 7, np.float32)}, [], targetOperations=[a_one, a_p])
    np.testing.assert_array_equal(_value(g, v), 7)
    # the assigned value is a copy: changing the fed array later changes nothing
    fed = np.full(3, 5, np.float32)
    g.run({p: fed}, [], targetOperations=[a_p])
    fed[:] = -1
    np.testing.assert_array_equal(_value(g, v), 5)
    # state is shared by every executable compiled from the graph
    exe_read = g.compile({}, [r])
    exe_set = g.compile({p: mg.ShapedType([3])}, [], targetOperations=[a_p])
    np.testing.assert_array_equal(exe_read.run([])[0].numpy(), 5)
    exe_set.run([np.full(3, 9, np.float32)])
    np.testing.assert_array_equal(exe_read.run([])[0].numpy(), 9)
    np.testing.assert_array_equal(_value(g, v), 9)
    # a variable initialised from a Python scalar filling its shape
    w = g.variable(3, [2], DT.int32)
    np.testing.assert_array_equal(_value(g, w), [3, 3])


def test_variable_errors():
    g = mg.Graph()
    v = g.variable(np.zeros((2, 2), np.float32), [2, 2], DT.float32, name="v")
    with pytest.raises(mg.DataTypeError, match=r"assign 'a'.*'tensor'.*float32.*float16"):
        g.assign(v, tensor=g.constant(0.0, [2, 2], DT.float16), name="a")
    with pytest.raises(mg.ShapeError, match=r"assign 'a'.*'tensor'.*\[2, 2\].*\[4\]"):
        g.assign(v, tensor=g.constant(0.0, [4], DT.float32), name="a")
    x = g.placeholder([2, -1])
    a = g.assign(v, tensor=x)  # checked once the size is known
    with pytest.raises(mg.ShapeError, match=r"'tensor'.*\[2, 3\]"):
        g.run({x: np.zeros((2, 3), np.float32)}, [], targetOperations=[a])
    with pytest.raises(mg.GraphError, match="read.*'variable'.*made by constant"):
        g.read(g.constant(0.0, [2], DT.float32))
    with pytest.raises(mg.ShapeError, match="variable.*'shape'"):
        g.variable(0.0, [-1], DT.float32)


# ------------------------------------------------------------------ run
def test_run_feeds_and_results(rng):
    g, x, w, y = _conv_graph()
    unused = g.placeholder([5], name="unused")
    xs = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    ws = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    out = g.run({x: xs, w: mg.TensorData(ws), unused: np.zeros(7)}, [y, y, x])
    assert list(out) == [y, x]  # a target listed twice appears once
    assert isinstance(out[y], mg.TensorData) and out[y].shape == [1, 3, 3, 3]
    np.testing.assert_allclose(out[y].numpy(), _conv_ref(xs, ws), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[x].numpy(), xs)
    # only the needed subgraph runs: the missing `unused` feed is no error
    assert list(g.run({x: xs}, [x])) == [x]
    # a single Tensor is accepted as targetTensors, as for compile
    assert list(g.run({x: xs, w: ws}, y)) == [y]


def test_run_feed_errors(rng):
    g, x, w, y = _conv_graph()
    xs = np.zeros((1, 2, 4, 4), np.float32)
    ws = np.zeros((3, 2, 2, 2), np.float32)
    with pytest.raises(mg.FeedError, match=r"placeholder w \(shape \[3, 2, 2, 2\]"):
        g.run({x: xs}, [y])
    with pytest.raises(mg.FeedError, match="float32.*float64"):
        g.run({x: xs.astype(np.float64), w: ws}, [y])
    with pytest.raises(mg.FeedError, match=r"feeds\[x\].*\[1, 2, 4, 4\].*\[1, 2, 4, 5\]"):
        g.run({x: np.zeros((1, 2, 4, 5), np.float32), w: ws}, [y])
    with pytest.raises(mg.FeedError, match=r"feeds\[x\].*float32.*float16"):
        g.run({x: mg.TensorData(xs.astype(np.float16)), w: ws}, [y])
    with pytest.raises(mg.FeedError, match=r"feeds\[y\].*placeholder.*convolution2D"):
        g.run({x: xs, w: ws, y: np.zeros((1, 3, 3, 3), np.float32)}, [y])
    with pytest.raises(mg.FeedError, match="feeds"):
        g.run({"x": xs}, [y])
    with pytest.raises(mg.FeedError, match="feeds"):
        g.run([xs, ws], [y])
    # an unranked placeholder takes any shape
    u = g.placeholder(None, name="u")
    assert g.run({u: np.zeros((2, 3, 1), np.float32)}, [u])[u].shape == [2, 3, 1]
    # a scalar placeholder
    s = g.placeholder([], name="s")
    assert g.run({s: np.float32(2)}, [s])[s].numpy() == 2


def test_other_graph_and_non_tensor_arguments():
    g1, x1, w1, y1 = _conv_graph()
    g2, x2, w2, y2 = _conv_graph()
    with pytest.raises(mg.GraphMismatchError, match=r"convolution2D 'z'.*'weights'.*another"):
        g1.convolution2D(x1, w2, D1, name="z")
    with pytest.raises(mg.GraphMismatchError, match="'tensor'.*another graph"):
        g1.assign(g1.variable(0.0, [2], DT.float32), tensor=g2.constant(0.0, [2], DT.float32))
    with pytest.raises(mg.GraphMismatchError, match="'feeds'.*another graph"):
        g1.run({x2: np.zeros((1, 2, 4, 4), np.float32)}, [x1])
    with pytest.raises(mg.GraphMismatchError, match="'targetTensors'.*another graph"):
        g1.run({x1: np.zeros((1, 2, 4, 4), np.float32)}, [x2])
    with pytest.raises(mg.GraphMismatchError, match="'targetTensors'.*another graph"):
        g1.compile({x1: mg.ShapedType([1, 2, 4, 4])}, [x2])
    a2 = g2.assign(g2.variable(0.0, [2], DT.float32), tensor=g2.constant(1.0, [2], DT.float32))
    with pytest.raises(mg.GraphMismatchError, match="'targetOperations'.*another graph"):
        g1.run({}, [], targetOperations=[a2])
    with pytest.raises(mg.GraphError, match=r"convolution2D: argument 'source'.*Tensor.*ndarray"):
        g1.convolution2D(np.zeros((1, 2, 4, 4), np.float32), w1, D1)
    with pytest.raises(mg.GraphError, match="'targetTensors'"):
        g1.run({}, ["y"])


def test_tensor_identity_and_operation_properties():
    g, x, w, y = _conv_graph()
    assert type(y).__eq__ is object.__eq__ and type(y).__ne__ is object.__ne__
    assert type(y).__hash__ is object.__hash__
    y2 = g.convolution2D(x, w, D1)
    assert y != y2 and y == y and len({y: 1, y2: 2}) == 2
    op = y.operation
    assert isinstance(op, mg.Operation) and op.graph is g
    assert op.name == "y" and op.kind == "convolution2D"
    assert op.inputTensors == [x, w] and op.outputTensors == [y]
    assert y.graph is g and y.dataType is DT.float32 and y.shape == [1, 3, 3, 3]
    assert y.shapedType == mg.ShapedType([1, 3, 3, 3])
    assert x.operation.inputTensors == [] and x.operation.outputTensors == [x]
    assert y2.operation.name is None and "convolution2D" in y2.name


# ------------------------------------------------------------------ compile / Executable
@pytest.fixture
def count_conv_infer(monkeypatch):
    """Counts calls of convolution2D's shape rule (OpDef is frozen: swap the dict entry)."""
    calls = []
    orig = _registry.OPS["convolution2D"]

    def infer(ctx):
        calls.append(ctx.static)
        return orig.infer(ctx)

    monkeypatch.setitem(_registry.OPS, "convolution2D", dataclasses.replace(orig, infer=infer))
    return calls  # monkeypatch restores the entry after the test


def test_compile_and_executable_run(rng, count_conv_infer):
    g, x, w, y = _conv_graph()
    assert count_conv_infer == [False]  # built once
    other = g.placeholder([2], name="other")
    feeds = {w: mg.ShapedType([3, 2, 2, 2]), x: mg.ShapedType([1, 2, 4, 4])}
    exe = g.compile(feeds, [y, x])
    assert count_conv_infer == [False, True]  # checked once, with the static shapes
    assert exe.feedTensors == [w, x] and exe.targetTensors == [y, x]
    xs = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    ws = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    for _ in range(3):
        res = exe.run([ws, xs])
        assert isinstance(res, list) and len(res) == 2
        np.testing.assert_allclose(res[0].numpy(), _conv_ref(xs, ws), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(res[1].numpy(), xs)
    assert exe.run([mg.TensorData(ws), xs])[1].shape == [1, 2, 4, 4]
    assert count_conv_infer == [False, True]  # no shape rule ran again
    # Graph.run caches its executable: the same feed types are not planned twice
    g.run({x: xs, w: ws, other: np.zeros(2, np.float32)}, [y])
    g.run({x: xs, w: ws}, [y])
    g.run({x: xs, w: ws}, [y])
    assert count_conv_infer == [False, True, True]
    g.run({w: ws, x: xs}, [y])  # the order of the feeds dict does not matter to the cache
    g.run({x: xs}, [x])  # only the needed subgraph is planned and run
    assert count_conv_infer == [False, True, True]

    with pytest.raises(mg.FeedError, match=r"Executable.run.*'inputs'.*2 values.*1 values"):
        exe.run([ws])
    with pytest.raises(mg.FeedError, match="'inputs'.*list of 2 values.*dict"):
        exe.run({w: ws, x: xs})
    with pytest.raises(mg.FeedError, match="float32.*float64"):
        exe.run([ws.astype(np.float64), xs])
    with pytest.raises(mg.FeedError, match=r"feeds\[x\].*\[1, 2, 4, 4\].*\[1, 2, 4, 3\]"):
        exe.run([ws, xs[..., :3]])
    assert count_conv_infer == [False, True, True]


def test_compile_errors():
    g, x, w, y = _conv_graph()
    sx, sw = mg.ShapedType([1, 2, 4, 4]), mg.ShapedType([3, 2, 2, 2])
    with pytest.raises(mg.FeedError, match="compile.*placeholder w"):
        g.compile({x: sx}, [y])
    with pytest.raises(mg.FeedError, match=r"compile.*feeds\[x\].*float32.*float16"):
        g.compile({x: mg.ShapedType([1, 2, 4, 4], DT.float16), w: sw}, [y])
    with pytest.raises(mg.FeedError, match=r"compile.*feeds\[x\].*\[1, 2, 4, 4\].*\[1, 2, 4\]"):
        g.compile({x: mg.ShapedType([1, 2, 4]), w: sw}, [y])
    with pytest.raises(mg.FeedError, match="static shape"):
        g.compile({x: mg.ShapedType([1, 2, -1, 4]), w: sw}, [y])
    with pytest.raises(mg.FeedError, match="ShapedType"):
        g.compile({x: np.zeros((1, 2, 4, 4), np.float32), w: sw}, [y])
    with pytest.raises(mg.FeedError, match=r"feeds\[y\].*placeholder"):
        g.compile({x: sx, w: sw, y: mg.ShapedType([1, 3, 3, 3])}, [y])
    # shape rules run again at compile time, with the static shapes
    g = mg.Graph()
    x = g.placeholder([1, 2, -1, -1], name="x")
    w = g.placeholder([3, 2, 3, 3], name="w")
    y = g.convolution2D(x, w, D1, name="y")
    with pytest.raises(mg.ShapeError, match=r"convolution2D 'y'.*'source'.*height 2"):
        g.compile({x: mg.ShapedType([1, 2, 2, 5]), w: mg.ShapedType([3, 2, 3, 3])}, [y])


def test_dynamic_placeholder_shapes_compile_per_shape(rng, count_conv_infer):
    g = mg.Graph()
    x = g.placeholder([-1, 2, -1, -1], name="x")
    w = g.placeholder([3, 2, 2, 2], name="w")
    y = g.convolution2D(x, w, D1, name="y")
    assert y.shape == [-1, 3, -1, -1]
    ws = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    calls = len(count_conv_infer)
    for shape in [(1, 2, 4, 4), (3, 2, 5, 2), (1, 2, 4, 4), (2, 2, 2, 7)]:
        xs = rng.standard_normal(shape).astype(np.float32)
        out = g.run({x: xs, w: ws}, [y])[y]
        np.testing.assert_allclose(out.numpy(), _conv_ref(xs, ws), rtol=1e-5, atol=1e-5)
    assert len(count_conv_infer) - calls == 3  # one plan per distinct shape
    with pytest.raises(mg.FeedError, match=r"feeds\[x\].*\[-1, 2, -1, -1\].*\[1, 3, 4, 4\]"):
        g.run({x: np.zeros((1, 3, 4, 4), np.float32), w: ws}, [y])
    with pytest.raises(mg.ShapeError, match=r"convolution2D 'y'.*'source'.*height 1"):
        g.run({x: np.zeros((1, 2, 1, 4), np.float32), w: ws}, [y])
    exe = g.compile({x: mg.ShapedType([2, 2, 3, 3]), w: mg.ShapedType([3, 2, 2, 2])}, [y])
    assert exe.run([np.zeros((2, 2, 3, 3), np.float32), ws])[0].shape == [2, 3, 2, 2]


# ------------------------------------------------------------------ TensorData
def test_tensordata_basics(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_DEVICE", raising=False)  # the default device is the CPU
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    td = mg.TensorData(a)
    assert td.shape == [2, 3] and td.dataType is DT.float32 and td.device == mg.Device("cpu")
    assert td.numpy() is a  # no copy on the CPU
    np.testing.assert_array_equal(np.asarray(td), a)
    assert np.asarray(td, dtype=np.float64).dtype == np.float64
    assert np.array(td, copy=True) is not a
    np.testing.assert_array_equal(np.from_dlpack(td), a)
    assert td.__dlpack_device__() == a.__dlpack_device__()
    b = mg.TensorData(a.tobytes(), shape=[3, 2], dataType=DT.float32)
    np.testing.assert_array_equal(b.numpy(), a.reshape(3, 2))
    c = mg.TensorData(a, dataType=DT.float16)
    assert c.dataType is DT.float16 and c.numpy().dtype == np.float16
    assert mg.TensorData(a, shape=[6]).shape == [6]
    h = mg.TensorData(np.ones(3, ml_dtypes.bfloat16))
    assert h.dataType is DT.bFloat16 and h.numpy().dtype == ml_dtypes.bfloat16
    assert mg.TensorData(td).numpy() is a
    with pytest.raises(mg.ShapeError, match="bytes"):
        mg.TensorData(a.tobytes())
    with pytest.raises(mg.ShapeError, match="24 bytes.*given 20 bytes"):
        mg.TensorData(a.tobytes()[:20], shape=[2, 3], dataType=DT.float32)
    with pytest.raises(mg.ShapeError, match="'shape'.*6 elements"):
        mg.TensorData(a, shape=[4])
    with pytest.raises(mg.ShapeError, match="'shape'"):
        mg.TensorData(a, shape=[-1, 3])
    with pytest.raises(mg.DataTypeError, match="float64"):
        mg.TensorData(np.zeros(2))
    with pytest.raises(mg.DataTypeError, match="'dataType'"):
        mg.TensorData(a, dataType=DT.complexFloat16)
    # results of run are TensorData with the same interface (read-only storage included)
    g = mg.Graph()
    v = g.variable(a, dataType=DT.float32)
    out = g.run({}, [v])[v]
    assert out.shape == [2, 3] and out.dataType is DT.float32
    np.testing.assert_array_equal(np.from_dlpack(out), a)


def test_tensordata_from_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    td = mg.TensorData(t)
    assert td.shape == [2, 3] and td.dataType is DT.float32
    np.testing.assert_array_equal(td.numpy(), t.numpy())
    tb = torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16)
    tdb = mg.TensorData(tb)
    assert tdb.dataType is DT.bFloat16 and tdb.numpy().dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(tdb.numpy().astype(np.float32), [1.5, -2.0, 3.0])
    back = torch.from_dlpack(tdb)  # DLPack export of bFloat16 (NumPy alone cannot)
    # (on the default device: MPSGRAPH_DEVICE=cuda moves the tensors there)
    assert back.dtype == torch.bfloat16 and torch.equal(back.cpu(), tb)
    assert torch.equal(torch.from_dlpack(td).cpu(), t)
    # torch tensors feed placeholders directly; a non-contiguous one too
    g = mg.Graph()
    p = g.placeholder([3, 2], DT.bFloat16)
    q = g.placeholder([3, 2])
    out = g.run({p: torch.zeros(3, 2, dtype=torch.bfloat16), q: t.T}, [p, q])
    assert out[p].dataType is DT.bFloat16
    np.testing.assert_array_equal(out[q].numpy(), t.numpy().T)


# ------------------------------------------------------------------ Device
def test_device_parsing_and_default(monkeypatch):
    cpu = mg.Device("cpu")
    assert cpu.type == "cpu" and cpu.index is None and cpu == mg.Device()
    d = mg.Device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and d == mg.Device("CUDA:1")
    assert mg.Device("cuda").index is None and mg.Device("torch-cpu").type == "torch-cpu"
    assert mg.Device(d) == d and hash(mg.Device("cuda:1")) == hash(d)
    for bad in ("tpu", "cuda:", "cuda:-1", "cuda:x", "", 3, None):
        with pytest.raises(mg.GraphError, match="Device"):
            mg.Device(bad)
    monkeypatch.delenv("MPSGRAPH_DEVICE", raising=False)
    assert resolve_device(None) == cpu
    monkeypatch.setenv("MPSGRAPH_DEVICE", "cuda:1")
    assert resolve_device(None) == d
    assert resolve_device("cpu") == cpu and resolve_device(cpu) is cpu
    monkeypatch.setenv("MPSGRAPH_DEVICE", "bogus")
    g = mg.Graph()
    s = g.constant(1.0, dataType=DT.float32)
    with pytest.raises(mg.GraphError, match="MPSGRAPH_DEVICE='bogus'"):
        g.run({}, [s])
    assert g.run({}, [s], device="cpu")[s].device == cpu  # an explicit device wins
    monkeypatch.setenv("MPSGRAPH_DEVICE", "cpu")
    assert g.run({}, [s])[s].device == cpu


def test_cuda_graph_calibration_keeps_the_faster_way():
    """The automatic CUDA-graph mode's choice: warm-up runs alternate, then timed runs decide
    (here with a fake clock: the graph replay is slower, so op by op wins)."""
    from mpsgraph.runtime import executable as ex

    syncs = []
    c = ex._Calibration(lambda: syncs.append(1))
    clock = iter(range(1000))
    real = ex.time.perf_counter
    ex.time.perf_counter = lambda: float(next(clock))
    try:
        ways = []
        while c.decided is None:
            way = c.way()
            ways.append(way)
            w = "graph" if way == "graph" else "eager"
            with c.timing(w):
                if w == "graph":  # the replay "takes" two ticks more
                    ex.time.perf_counter(), ex.time.perf_counter()
    finally:
        ex.time.perf_counter = real
    assert ways == ["eager_timed", "graph"] * 5
    assert len(syncs) == 2 * ex._Calibration.TIMED and c.decided == "eager"
    assert c.way() == "eager"


def test_auto_replay_falls_back_to_op_by_op_when_the_capture_fails():
    """The automatic mode (runtime/executable._AutoReplay): alternates op by op / replay while
    calibrating; a replay that raises (a failed capture) means op by op from then on."""
    from mpsgraph.runtime import executable as ex

    calls = []

    def eager(feeds):
        calls.append("eager")
        return ["e"]

    def replayer(feeds, bindable):
        calls.append("graph")
        raise RuntimeError("capture failed")

    auto = ex._AutoReplay(replayer, eager, ex._Calibration(lambda: None))
    assert auto([1]) == ["e"]  # run 0: op by op (timed)
    with pytest.warns(RuntimeWarning, match="capture failed .RuntimeError: capture failed"):
        assert auto([1]) == ["e"]  # run 1: the replay fails (said once), op by op answers
    assert calls == ["eager", "graph", "eager"] and auto.calibration.decided == "eager"
    calls.clear()
    assert [auto([1]) for _ in range(3)] == [["e"]] * 3 and calls == ["eager"] * 3
