"""The torch backend's elementwise, matrix, reduction, shape, loss, pooling and optimizer kernels
against the NumPy backend (the reference): the same graphs run on Device("cpu") and on the torch
device, results compared (float32 tight, halves looser, integers and bools exact), gradients
through gradientForPrimaryTensor included."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mpsgraph as mg  # noqa: E402
from mpsgraph.types import LossReductionType, PaddingStyle  # noqa: E402
from mpsgraph.types import TensorNamedDataLayout as L  # noqa: E402

DEVICES = ["torch-cpu"] + ([pytest.param("cuda", marks=pytest.mark.gpu)]
                           if torch.cuda.is_available() else [])
FAMILIES = ("arithmetic", "activation", "matrix", "reduction", "shape", "loss", "pooling",
            "optimizer")
BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
FLOATS = [F32, F16, BF16]
INTS = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                              np.uint32, np.uint64)]

pytestmark = pytest.mark.parametrize("device", DEVICES)


# ---------------------------------------------------------------------------- helpers
def _tol(dt: np.dtype) -> dict:
    if dt == F32:
        return dict(rtol=2e-5, atol=2e-6)
    if dt == F16:
        return dict(rtol=2e-3, atol=1e-3)
    return dict(rtol=1.6e-2, atol=1e-2)


def check(ref: np.ndarray, got: np.ndarray, what: str = "") -> None:
    assert got.dtype == ref.dtype, what
    assert got.shape == ref.shape, what
    if ref.dtype in FLOATS:
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64),
                                   err_msg=what, **_tol(ref.dtype))
    else:
        np.testing.assert_array_equal(got, ref, err_msg=what)


def both(device, build, *arrays, grads: bool = False):
    """Build a graph on placeholders for `arrays`, run it on NumPy and on `device`, compare.
    With grads, also the gradients of sum(out * w) (w fixed, random) w.r.t. every float input.
    Returns the NumPy results."""
    g = mg.Graph()
    phs = [g.placeholder(shape=list(a.shape), dataType=mg.DataType.from_numpy(a.dtype))
           for a in arrays]
    outs = build(g, *phs)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    targets = list(outs)
    if grads:
        y = outs[0]
        w = np.random.default_rng(7).uniform(0.5, 1.5, y.shape).astype(
            y.dataType.numpy_dtype)
        loss = g.reductionSum(g.multiplication(y, g.constant(w, dataType=y.dataType)))
        wrt = [p for p, a in zip(phs, arrays) if a.dtype in FLOATS]
        gr = g.gradientForPrimaryTensor(loss, wrt)
        targets += [gr[p] for p in wrt]
    feeds = dict(zip(phs, arrays))
    ref = g.run(feeds, targets, device="cpu")
    got = g.run(feeds, targets, device=device)
    for i, t in enumerate(targets):
        check(ref[t].numpy(), np.asarray(got[t].numpy()), f"target {i}")
    return [ref[t].numpy() for t in targets]


def rand(rng, shape, dt, special: bool = False) -> np.ndarray:
    dt = np.dtype(dt)
    if dt in FLOATS:
        x = rng.uniform(-3, 3, shape).astype(np.float32)
        if special and x.size >= 4:
            f = x.reshape(-1)
            f[:4] = [np.nan, np.inf, -np.inf, 0.0]
        return x.astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    x = rng.integers(max(info.min, -50), min(info.max, 50), shape, endpoint=True).astype(dt)
    if special and x.size >= 4:
        f = x.reshape(-1)
        f[:4] = [info.min, info.max, 0, info.max - 1 if info.min == 0 else -1]
    return x


# ---------------------------------------------------------------------------- meta
def test_every_numpy_kernel_has_a_torch_kernel(device):
    from mpsgraph.backends import torch as tb

    tb.Backend.for_device(mg.Device("torch-cpu"))
    root = Path(importlib.import_module("mpsgraph.backends.numpy").__file__).parent
    names = set()
    for fam in FAMILIES:
        text = (root / f"{fam}.py").read_text()
        names |= set(re.findall(r'@kernel\("(\w+)"\)', text))
        for tup in re.findall(r"for _name, _fn in \((.*?)\):\n", text, re.S):
            names |= set(re.findall(r'\("(\w+)",', tup))
    from mpsgraph.backends import numpy as nb  # kernels generated from tables (the arithmetic
                                               # rows) have no literal name to find above
    nb.Backend.for_device(mg.Device("cpu"))
    names |= set(nb.KERNELS)
    assert len(names) > 40
    missing = sorted(n for n in names if n not in tb.KERNELS)
    assert not missing


# ---------------------------------------------------------------------------- arithmetic
BINARY = ["addition", "subtraction", "multiplication", "division", "maximum", "minimum"]


@pytest.mark.parametrize("dt", FLOATS + INTS, ids=str)
def test_binary(device, rng, dt):
    a = rand(rng, (3, 1, 4), dt, special=True)
    b = rand(rng, (2, 4), dt, special=True)
    b.reshape(-1)[5] = 0  # x / 0
    if dt.kind == "i":
        b.reshape(-1)[6] = -1  # INT_MIN / -1 wraps
        a.reshape(-1)[6] = np.iinfo(dt).min
    ops = BINARY + (["power"] if dt in FLOATS else [])
    both(device, lambda g, x, y: [getattr(g, op)(x, y) for op in ops], a, b)


def test_uint64_division_full_range(device, rng):
    a = rng.integers(0, 2 ** 64 - 1, (64,), dtype=np.uint64, endpoint=True)
    b = rng.integers(1, 2 ** 64 - 1, (64,), dtype=np.uint64, endpoint=True)
    b[:8] = [1, 2, 3, 2 ** 63, 2 ** 63 + 1, 2 ** 64 - 1, 0, 7]
    a[:8] = [2 ** 64 - 1, 2 ** 64 - 1, 2 ** 64 - 2, 2 ** 64 - 1, 2 ** 63, 2 ** 64 - 1, 5, 0]
    b[8:16] = rng.integers(1, 2 ** 20, 8, dtype=np.uint64)
    both(device, lambda g, x, y: [g.division(x, y), g.maximum(x, y), g.greaterThan(x, y)], a, b)


@pytest.mark.parametrize("dt", FLOATS + INTS, ids=str)
def test_unary(device, rng, dt):
    x = rand(rng, (2, 5), dt, special=True)
    ops = ["negative", "absolute", "square"]
    if dt in FLOATS:
        ops += ["exponent", "logarithm", "squareRoot", "reciprocal"]
    both(device, lambda g, t: [getattr(g, op)(t) for op in ops], x)


@pytest.mark.parametrize("dt", FLOATS + INTS + [np.dtype(bool)], ids=str)
def test_comparisons_and_select(device, rng, dt):
    a = rand(rng, (3, 4), dt, special=True)
    b = a.copy()
    b[1] = rand(rng, (4,), dt)
    p = rand(rng, (4,), F32, special=True)  # NaN is true, 0 false
    both(device, lambda g, x, y, q: [g.equal(x, y), g.greaterThan(x, y), g.greaterThan(y, x),
                                      g.select(q, x, y), g.select(g.equal(x, y), y, x)],
         a, b, p)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_arithmetic_gradients(device, rng, dt):
    a = rng.uniform(0.5, 2, (3, 1, 4)).astype(dt)
    b = rng.uniform(0.5, 2, (2, 4)).astype(dt)
    a[0, 0, :2] = b[0, :2]  # max/min ties split the gradient
    for op in BINARY + ["power"]:
        both(device, lambda g, x, y, op=op: getattr(g, op)(x, y), a, b, grads=True)
    x = rng.uniform(-2, 2, (2, 3)).astype(dt)
    x[0, 0] = 0
    for op in ["negative", "absolute", "square", "exponent"]:
        both(device, lambda g, t, op=op: getattr(g, op)(t), x, grads=True)
    y = np.abs(x) + np.asarray(0.5, dt)
    for op in ["logarithm", "squareRoot", "reciprocal"]:
        both(device, lambda g, t, op=op: getattr(g, op)(t), y, grads=True)
    p = rand(rng, (3,), np.bool_)
    both(device, lambda g, q, t, f: g.select(q, t, f), p, x, y[:1], grads=True)


def test_zero_size_elementwise(device, rng):
    a = np.zeros((0, 3), np.float32)
    b = np.ones((1, 3), np.float32)
    both(device, lambda g, x, y: [g.addition(x, y), g.division(x, y), g.exponent(x),
                                  g.equal(x, y), g.select(x, x, y)], a, b)


def test_scalars(device):
    a = np.asarray(2.5, np.float32)
    b = np.arange(3, dtype=np.float32)
    both(device, lambda g, x, y: [g.addition(x, y), g.division(x, x), g.maximum(x, y),
                                  g.reductionSum(x), g.reductionMaximum(x), g.square(x),
                                  g.reshape(x, [1, 1]), g.cast(x, mg.int32), g.shapeOf(x)],
         a, b, grads=True)


# ---------------------------------------------------------------------------- activation
@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_activations(device, rng, dt):
    x = rand(rng, (3, 5), dt, special=True)
    both(device, lambda g, t: [g.sigmoid(t), g.tanh(t), g.reLU(t), g.softMax(t, axis=1),
                               g.softMax(t, axis=0), g.leakyReLU(t, alpha=0.1)], x)
    alpha = rng.uniform(0, 0.5, (5,)).astype(dt)
    dy = rand(rng, (3, 5), dt)
    xs = rng.uniform(-3, 3, (3, 5)).astype(dt)
    both(device, lambda g, t, al, d: [
        g.leakyReLU(t, al), g.sigmoidGradient(d, t), g.reLUGradient(d, t),
        g.softMaxGradient(d, t, axis=-1), g.leakyReLUGradient(d, t, al)], xs, alpha, dy)
    for fn in (lambda g, t: g.sigmoid(t), lambda g, t: g.tanh(t), lambda g, t: g.reLU(t),
               lambda g, t: g.softMax(t, axis=1), lambda g, t: g.leakyReLU(t, alpha=0.2)):
        both(device, fn, xs, grads=True)
    both(device, lambda g, t, al: g.leakyReLU(t, al), xs, alpha, grads=True)


def test_softmax_infinite_rows_and_empty(device):
    x = np.array([[np.inf, 1.0, 2.0], [-np.inf] * 3, [np.nan, 0.0, 1.0], [1.0, 2.0, 3.0]],
                 np.float32)
    both(device, lambda g, t: [g.softMax(t, axis=1), g.softMax(t, axis=0)], x)
    both(device, lambda g, t: [g.softMax(t, axis=1), g.sigmoid(t)], np.zeros((0, 3), np.float32))


# ---------------------------------------------------------------------------- matrix
@pytest.mark.parametrize("dt", FLOATS + [np.dtype(np.int8), np.dtype(np.int32),
                                         np.dtype(np.uint16), np.dtype(np.uint64)], ids=str)
def test_matrixMultiplication(device, rng, dt):
    a = rand(rng, (2, 1, 3, 4), dt)
    b = rand(rng, (5, 4, 2), dt)
    both(device, lambda g, x, y: g.matrixMultiplication(x, y), a, b, grads=dt in FLOATS)
    both(device, lambda g, x, y: g.matrixMultiplication(x, y), rand(rng, (3, 0), dt),
         rand(rng, (0, 2), dt))


# ---------------------------------------------------------------------------- reduction
REDUCE = ["reductionSum", "reductionMaximum", "reductionMinimum"]


@pytest.mark.parametrize("dt", FLOATS + INTS, ids=str)
def test_reductions(device, rng, dt):
    x = rand(rng, (3, 4, 5), dt, special=True)
    ops = REDUCE + (["reductionMean"] if dt in FLOATS else [])
    for axes in ([], [0], [1, 2], [-1], None):
        both(device, lambda g, t, axes=axes: [getattr(g, op)(t, axes=axes) for op in ops], x)
    e = rand(rng, (3, 0, 2), dt)
    both(device, lambda g, t: [getattr(g, op)(t, axes=[1]) for op in ops]
         + [getattr(g, op)(t, axes=[0]) for op in ops], e)


def test_reduction_nan_rules(device):
    x = np.array([[np.nan, 1.0, np.nan], [np.nan, np.nan, np.nan]], np.float32)
    both(device, lambda g, t: [getattr(g, op)(t, axis=1) for op in REDUCE + ["reductionMean"]],
         x)


@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_reduction_gradients(device, rng, dt):
    x = rng.uniform(-2, 2, (3, 4)).astype(dt)
    x[1, 2] = x[1, 0] = 5  # a tie
    for op in REDUCE + ["reductionMean"]:
        for axes in ([1], [0, 1]):
            both(device, lambda g, t, op=op, axes=axes: getattr(g, op)(t, axes=axes), x, grads=True)


# ---------------------------------------------------------------------------- shape
@pytest.mark.parametrize("dt", [F32, BF16, np.dtype(np.int16), np.dtype(np.uint32),
                                np.dtype(bool)], ids=str)
def test_shape_ops(device, rng, dt):
    x = rand(rng, (2, 3, 4), dt)
    y = rand(rng, (3, 1), dt)
    both(device, lambda g, t, u: [
        g.reshape(t, [4, 6]), g.reshape(t, [-1, 2]), g.broadcast(u, [2, 3, 5]),
        g.transpose(t, [2, 0, 1]), g.transposeTensor(t, 0, 2),
        g.sliceTensor(t, dimension=1, start=1, length=2),
        g.sliceTensor(t, starts=[1, 2, -1], ends=[-3, -5, 0], strides=[-1, -1, -2]),
        g.sliceTensor(t, starts=[0, 0, 1], ends=[2, 3, 4], strides=[1, 2, 2]),
        g.sliceTensor(t, starts=[0, 2, 0], ends=[2, 2, 4], strides=[1, 1, 1]),
        g.concatTensors([t, g.reshape(u, [1, 3, 1])], 2), g.concatTensors([u, u, u], 0),
        g.expandDims(t, axes=[0, 3]), g.squeeze(g.expandDims(t, axis=1), axis=1),
        g.identity(t), g.shapeOf(t)], x, y)


def test_shape_gradients(device, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 1)).astype(np.float32)
    for fn in (lambda g, t, u: g.reshape(t, [4, 6]), lambda g, t, u: g.broadcast(u, [2, 3, 5]),
               lambda g, t, u: g.transpose(t, [2, 0, 1]),
               lambda g, t, u: g.transposeTensor(t, 1, 2),
               lambda g, t, u: g.sliceTensor(t, starts=[1, 2, -1], ends=[-3, -5, 0],
                                             strides=[-1, -1, -2]),
               lambda g, t, u: g.sliceTensor(t, dimension=2, start=1, length=3),
               lambda g, t, u: g.concatTensors([t, g.reshape(u, [1, 3, 1])], 2),
               lambda g, t, u: g.squeeze(g.expandDims(t, axis=0), axis=0),
               lambda g, t, u: g.cast(g.cast(t, mg.float16), mg.float32)):
        both(device, fn, x, y, grads=True)


CAST_TO = [getattr(mg.DataType, n) for n in ("float32", "float16", "bFloat16", "int8", "int16",
                                                "int32", "int64", "uInt8", "uInt16", "uInt32",
                                                "uInt64", "bool")]


@pytest.mark.parametrize("dt", FLOATS + INTS + [np.dtype(bool)], ids=str)
def test_cast(device, rng, dt):
    if dt in FLOATS:
        with np.errstate(over="ignore"):
            x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.7, -0.7, 1.5, -2.5, 127.9,
                          128.0, -129.0, 255.5, 256.0, 40000.0, -40000.0, 3e9, -3e9, 1e19, 2e19,
                          -1e19, 65504.0, 70000.0, 1e-8], np.float32).astype(dt)
    else:
        x = rand(rng, (20,), dt, special=True)
    both(device, lambda g, t: [g.cast(t, to) for to in CAST_TO], x)


# ---------------------------------------------------------------------------- loss
@pytest.mark.parametrize("red", list(LossReductionType), ids=str)
@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_softMaxCrossEntropy(device, rng, dt, red):
    x = rng.standard_normal((4, 5)).astype(dt)
    lab = rng.uniform(0, 1, (4, 5)).astype(dt)
    lab[0] = 0
    lab_b = rng.uniform(0, 1, (1, 5)).astype(dt)
    for axis in (1, 0, -1):
        both(device, lambda g, s, lb, axis=axis: g.softMaxCrossEntropy(
            s, lb, axis, reductionType=red), x, lab, grads=True)
    both(device, lambda g, s, lb: g.softMaxCrossEntropy(s, lb, 1, reductionType=red),
         x, lab_b, grads=True)
    gshape = (4, 1) if red == LossReductionType.none else ()
    gr = rng.standard_normal(gshape).astype(dt)
    both(device, lambda g, d, s, lb: g.softMaxCrossEntropyGradient(
        d, s, lb, 1, reductionType=red), gr, x, lab)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the NumPy reference's inf - inf
def test_softMaxCrossEntropy_edge_cases(device):
    x = np.array([[np.inf, 0, 1], [np.nan, 0, 1], [1, 2, 3]], np.float32)
    lab = np.array([[1, 0, 0], [0, 1, 0], [0.2, 0.3, 0.5]], np.float32)
    for red in LossReductionType:
        both(device, lambda g, s, lb, red=red: g.softMaxCrossEntropy(s, lb, 1, reductionType=red),
             x, lab)
    e = np.zeros((0, 3), np.float32)
    for red in LossReductionType:
        both(device, lambda g, s, lb, red=red: g.softMaxCrossEntropy(s, lb, 1, reductionType=red),
             e, e, grads=True)


@pytest.mark.parametrize("idt", [np.int32, np.int64, np.uint8, np.uint32, np.int8])
def test_oneHot(device, idt):
    info = np.iinfo(idt)
    idx = np.array([[0, 3, 4], [1, 5, max(info.min, -1)]], idt)  # 5, -1: out of range -> off
    outs = lambda g, t: [  # noqa: E731
        g.oneHot(t, 5), g.oneHot(t, 4, axis=0), g.oneHot(t, 3, axis=1, dataType=mg.int32,
                                                          onValue=7, offValue=-2),
        g.oneHot(t, 5, dataType=mg.float16, onValue=0.1, offValue=0.3),
        g.oneHot(t, 5, dataType=mg.bFloat16, onValue=0.1),
        g.oneHot(t, 2, dataType=mg.DataType.uInt64, onValue=2 ** 64 - 1, offValue=3),
        g.oneHot(t, 2, dataType=mg.DataType.bool)]
    both(device, outs, idx)
    both(device, lambda g, t: g.oneHot(t, 3), np.zeros((0, 2), idt))


# ---------------------------------------------------------------------------- pooling
POOL_CASES = [  # (kernel hw, stride, dilation, padding style, pads (l, r, t, b), ceil, zero pad)
    ((2, 2), (2, 2), (1, 1), PaddingStyle.TF_VALID, (0, 0, 0, 0), False, False),
    ((3, 3), (1, 1), (1, 1), PaddingStyle.explicit, (1, 1, 1, 1), False, True),
    ((3, 3), (2, 2), (1, 1), PaddingStyle.explicit, (1, 1, 1, 1), True, False),
    ((3, 2), (2, 1), (2, 1), PaddingStyle.TF_SAME, (0, 0, 0, 0), False, False),
    ((3, 3), (2, 3), (1, 1), PaddingStyle.TF_SAME, (0, 0, 0, 0), False, True),
    ((2, 3), (3, 2), (1, 2), PaddingStyle.ONNX_SAME_LOWER, (0, 0, 0, 0), False, True),
    ((3, 3), (2, 2), (1, 1), PaddingStyle.explicit, (1, 1, 1, 1), True, True),
    ((2, 2), (1, 2), (1, 1), PaddingStyle.explicit, (0, 2, 1, 0), True, True),  # asymmetric
    ((2, 2), (1, 1), (1, 1), PaddingStyle.explicit, (3, 3, 2, 2), False, False),  # empty windows
    ((3, 3), (2, 2), (2, 2), PaddingStyle.TF_VALID, (0, 0, 0, 0), True, False),
    ((1, 1), (2, 2), (1, 1), PaddingStyle.explicit, (0, 0, 0, 0), True, True),
]


def _pool_desc(case, layout):
    (kh, kw), (sy, sx), (ry, rx), style, (pl, pr, pt, pb), ceil, zp = case
    return mg.Pooling2DOpDescriptor(
        kernelWidth=kw, kernelHeight=kh, strideInX=sx, strideInY=sy, dilationRateInX=rx,
        dilationRateInY=ry, paddingLeft=pl, paddingRight=pr, paddingTop=pt, paddingBottom=pb,
        paddingStyle=style, dataLayout=layout, ceilMode=ceil, includeZeroPadToAverage=zp)


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
@pytest.mark.parametrize("layout", [L.NCHW, L.NHWC], ids=str)
def test_pooling(device, rng, case, layout):
    d = _pool_desc(POOL_CASES[case], layout)
    shape = (2, 3, 7, 6) if layout == L.NCHW else (2, 7, 6, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::7] = 0.5  # ties inside windows
    for op in ("maxPooling2D", "avgPooling2D"):
        both(device, lambda g, t, op=op: getattr(g, op)(t, descriptor=d), x, grads=True)
    xn = x.copy()
    xn.reshape(-1)[5] = np.nan
    both(device, lambda g, t: [g.maxPooling2D(t, descriptor=d), g.avgPooling2D(t, descriptor=d)],
         xn)


@pytest.mark.parametrize("dt", [F16, BF16], ids=str)
def test_pooling_halves_and_empty(device, rng, dt):
    d = _pool_desc(POOL_CASES[2], L.NCHW)
    x = rng.standard_normal((1, 2, 5, 5)).astype(dt)
    for op in ("maxPooling2D", "avgPooling2D"):
        both(device, lambda g, t, op=op: getattr(g, op)(t, descriptor=d), x, grads=True)
    e = np.zeros((0, 2, 5, 5), dt)
    for op in ("maxPooling2D", "avgPooling2D"):
        both(device, lambda g, t, op=op: getattr(g, op)(t, descriptor=d), e, grads=True)


# ---------------------------------------------------------------------------- optimizer
@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_sgd(device, rng, dt):
    v = rng.standard_normal((3, 4)).astype(dt)
    gr = rng.standard_normal((4,)).astype(dt)
    lr = np.asarray(0.1, dt)
    both(device, lambda g, a, b, c: g.stochasticGradientDescent(a, b, c), lr, v, gr)


def test_apply_sgd(device, rng):
    init = rng.standard_normal((3,)).astype(np.float32)
    grad = rng.standard_normal((3,)).astype(np.float32)
    res = []
    for dev in ("cpu", device):
        g = mg.Graph()
        v = g.variable(init, shape=[3], dataType=mg.float32)
        tg = g.placeholder([3])
        op = g.applyStochasticGradientDescent(g.constant(0.5, dataType=mg.float32), v, tg)
        g.run({tg: grad}, [], targetOperations=[op], device=dev)
        r = g.read(v)
        res.append(g.run({}, [r], device=dev)[r].numpy())
    check(res[0], np.asarray(res[1]))


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_adam(device, rng, dt, amsgrad, bias):
    shape = (3, 4)
    vals = [rng.standard_normal(shape).astype(dt), (rng.standard_normal(shape) * 0.1).astype(dt),
            rng.uniform(0, 1, shape).astype(dt), rng.uniform(0, 1, shape).astype(dt),
            rng.standard_normal(shape).astype(dt)]
    scal = [np.asarray(s, dt) for s in (0.05, 0.9, 0.99, 1e-3, 0.9 ** 3, 0.99 ** 3)]

    def build(g, values, m, v, vmax, gr, lr, b1, b2, eps, b1p, b2p):
        kw = dict(beta1=b1, beta2=b2, epsilon=eps, values=values, momentum=m, velocity=v,
                  maximumVelocity=vmax if amsgrad else None, gradient=gr)
        if bias:
            return g.adam(learningRate=lr, beta1Power=b1p, beta2Power=b2p, **kw)
        return g.adam(currentLearningRate=lr, **kw)

    both(device, build, *vals, *scal)
