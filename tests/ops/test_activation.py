"""The activation family against plain-NumPy expectations: sigmoid, tanh, reLU, softMax,
leakyReLU and Apple's gradient ops (sigmoidGradient, reLUGradient, softMaxGradient,
leakyReLUGradient, whose sourceTensor is the forward INPUT); numerical stability; half types;
gradients (first and second order) against finite differences; bad inputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect, grad_check, run

DT = mg.DataType
BF16 = np.dtype(ml_dtypes.bfloat16)


def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x.astype(np.float64)))


def np_softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------------------- forward
def test_forward_float32(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32) * 3
    np.testing.assert_allclose(run(lambda g, t: g.sigmoid(t), x), np_sigmoid(x), rtol=1e-6)
    np.testing.assert_allclose(run(lambda g, t: g.tanh(t), x), np.tanh(x), rtol=1e-6)
    np.testing.assert_array_equal(run(lambda g, t: g.reLU(t), x), np.maximum(x, 0))
    for axis in (0, 1, -1):
        np.testing.assert_allclose(run(lambda g, t, a=axis: g.softMax(t, a), x),
                                   np_softmax(x, axis), rtol=1e-6, atol=1e-7)
    lr = run(lambda g, t: g.leakyReLU(t, 0.2), x)
    np.testing.assert_allclose(lr, np.where(x >= 0, x, np.float32(0.2) * x), rtol=1e-7)


def test_numerical_stability():
    x = np.array([[-1000.0, 0.0, 1000.0], [88.0, 89.0, 90.0], [-np.inf, 0.0, 1.0]], np.float32)
    s = run(lambda g, t: g.sigmoid(t), x)
    assert np.all(np.isfinite(s))
    np.testing.assert_allclose(s, np_sigmoid(x), rtol=1e-6)
    assert s[0, 0] == 0.0 and s[0, 2] == 1.0
    assert run(lambda g, t: g.sigmoid(t), np.array([-100.0], np.float32))[0] > 0  # no underflow
    sm = run(lambda g, t: g.softMax(t, 1), x)
    assert np.all(np.isfinite(sm))
    np.testing.assert_allclose(sm, np_softmax(x, 1), rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(sm.sum(1), 1, rtol=1e-6)
    big = np.full((2, 4), 1e30, np.float32)
    np.testing.assert_allclose(run(lambda g, t: g.softMax(t, 1), big), 0.25)


def test_nan_and_empty():
    x = np.array([np.nan, -1.0, 2.0], np.float32)
    r = run(lambda g, t: g.reLU(t), x)
    assert np.isnan(r[0]) and r[1] == 0 and r[2] == 2
    assert np.isnan(run(lambda g, t: g.sigmoid(t), x)[0])
    assert run(lambda g, t: g.softMax(t, 0), np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert run(lambda g, t: g.softMax(t, 1), np.zeros((0, 3), np.float32)).shape == (0, 3)


@pytest.mark.parametrize("dt,tol", [(np.float16, 1e-3), (BF16, 8e-3)], ids=["f16", "bf16"])
def test_half_types_round_once(rng, dt, tol):
    x = (rng.standard_normal((4, 6)) * 2).astype(dt)
    x32 = x.astype(np.float32)
    for build, want in (
            (lambda g, t: g.sigmoid(t), np_sigmoid(x32)),
            (lambda g, t: g.tanh(t), np.tanh(x32)),
            (lambda g, t: g.reLU(t), np.maximum(x32, 0)),
            (lambda g, t: g.softMax(t, -1), np_softmax(x32, -1)),
            (lambda g, t: g.leakyReLU(t, 0.1), np.where(x32 >= 0, x32, np.float32(0.1) * x32))):
        got = run(build, x)
        assert got.dtype == np.dtype(dt)
        # float32 math on the rounded input, rounded once: within half a unit of the type
        np.testing.assert_allclose(got.astype(np.float64), want.astype(dt).astype(np.float64),
                                   rtol=tol, atol=1e-6)


def test_leakyReLU_alpha_tensor_broadcasts_and_keyword(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    a = np.array([0.1, 0.2, 0.3, 2.0], np.float32)
    want = np.where(x >= 0, x, a * x)
    np.testing.assert_allclose(run(lambda g, t, al: g.leakyReLU(t, al), x, a), want)
    np.testing.assert_allclose(run(lambda g, t, al: g.leakyReLU(t, alphaTensor=al), x, a),
                               want)
    # alpha > 1: x if x >= 0 else alpha x (not max(x, alpha x))
    y = np.array([-1.0, 1.0], np.float32)
    np.testing.assert_allclose(run(lambda g, t: g.leakyReLU(t, 3.0), y), [-3.0, 1.0])


def test_gradient_ops_forward(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    x[0, 0] = 0.0
    dy = rng.standard_normal((3, 5)).astype(np.float32)
    s = np_sigmoid(x)
    np.testing.assert_allclose(run(lambda g, d, t: g.sigmoidGradient(d, t), dy, x),
                               dy * s * (1 - s), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(run(lambda g, d, t: g.reLUGradient(d, t), dy, x),
                                  np.where(x > 0, dy, 0))
    for axis in (0, 1):
        sm = np_softmax(x, axis)
        want = sm * (dy - (sm * dy).sum(axis, keepdims=True))
        np.testing.assert_allclose(
            run(lambda g, d, t, a=axis: g.softMaxGradient(d, t, a), dy, x), want, rtol=1e-5,
            atol=1e-6)
    al = np.array([0.25], np.float32)
    np.testing.assert_allclose(
        run(lambda g, d, t, a: g.leakyReLUGradient(d, t, a), dy, x, al),
        np.where(x > 0, dy, 0.25 * dy), rtol=1e-7)


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("build", [
    lambda g, x: g.sigmoid(x), lambda g, x: g.tanh(x), lambda g, x: g.reLU(x),
    lambda g, x: g.softMax(x, 1), lambda g, x: g.softMax(x, 0), lambda g, x: g.softMax(x, -1),
    lambda g, x: g.leakyReLU(x, 0.3),
], ids=["sigmoid", "tanh", "reLU", "softMax1", "softMax0", "softMax-1", "leakyReLU"])
def test_gradients_match_finite_differences(rng, build):
    x = rng.standard_normal((3, 4))
    x = np.where(np.abs(x) < 0.05, 0.5, x)  # keep away from the kinks of reLU / leakyReLU
    grad_check(build, [(3, 4)], rng, args=[x])


def test_leakyReLU_alpha_tensor_gradient(rng):
    x = rng.standard_normal((3, 4))
    x = np.where(np.abs(x) < 0.05, 0.5, x)
    grad_check(lambda g, t, a: g.leakyReLU(t, a), [(3, 4), (4,)], rng,
               args=[x, rng.uniform(0.1, 0.5, 4)])


def test_relu_gradient_at_zero_is_zero_and_leaky_is_alpha():
    g = mg.Graph()
    x = g.placeholder([3])
    gr = g.gradientForPrimaryTensor(g.reLU(x), [x])[x]
    gl = g.gradientForPrimaryTensor(g.leakyReLU(x, 0.5), [x])[x]
    out = g.run({x: np.array([-1.0, 0.0, 1.0], np.float32)}, [gr, gl])
    np.testing.assert_array_equal(out[gr].numpy(), [0, 0, 1])
    np.testing.assert_array_equal(out[gl].numpy(), [0.5, 0.5, 1])


def test_gradient_rules_emit_apple_gradient_ops():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    for build, kind in ((lambda t: g.sigmoid(t), "sigmoidGradient"),
                        (lambda t: g.reLU(t), "reLUGradient"),
                        (lambda t: g.softMax(t, 1), "softMaxGradient"),
                        (lambda t: g.leakyReLU(t, 0.1), "leakyReLUGradient")):
        gx = g.gradientForPrimaryTensor(build(x), [x])[x]
        kinds = set()
        stack = [gx.operation]
        while stack:
            op = stack.pop()
            kinds.add(op.kind)
            stack.extend(t.operation for t in op.inputTensors)
        assert kind in kinds


@pytest.mark.parametrize("op", ["sigmoidGradient", "softMaxGradient", "leakyReLUGradient",
                                "reLUGradient"])
def test_second_order_gradients(rng, op):
    x = rng.standard_normal((2, 4))
    x = np.where(np.abs(x) < 0.05, 0.5, x)

    def build(g, d, t):
        if op == "softMaxGradient":
            return g.softMaxGradient(d, t, 1)
        if op == "leakyReLUGradient":
            return g.leakyReLUGradient(d, t, g.constant(0.2, dataType=mg.float32))
        return getattr(g, op)(d, t)

    grad_check(build, [(2, 4), (2, 4)], rng, args=[rng.standard_normal((2, 4)), x])


# ---------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("op", ["sigmoid", "tanh", "reLU"])
def test_error_integer_input(op):
    g = mg.Graph()
    expect(mg.DataTypeError, lambda: getattr(g, op)(g.placeholder([2], mg.int32), name="a"),
           op, "tensor", "int32", name="a")


def test_error_softmax_axis():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    expect(mg.ShapeError, lambda: g.softMax(x, 2), "softMax", "axis", "[-2, 2)", "2")
    expect(mg.GraphError, lambda: g.softMax(x, 1.0), "softMax", "axis", "1.0")
    expect(mg.ShapeError, lambda: g.softMaxGradient(x, x, -3), "softMaxGradient", "axis")


def test_error_gradient_op_operands():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    h = g.placeholder([2, 3], mg.float16)
    expect(mg.DataTypeError, lambda: g.sigmoidGradient(x, h), "sigmoidGradient",
           "sourceTensor", "float16", "incomingGradient")
    expect(mg.ShapeError, lambda: g.reLUGradient(x, g.placeholder([4])), "reLUGradient",
           "sourceTensor", "[4]")
    expect(mg.ShapeError, lambda: g.softMaxGradient(g.placeholder([1, 3]), x, 1),
           "softMaxGradient", "incomingGradient", "[1, 3]", "[2, 3]")


def test_error_leakyReLU_alpha():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    expect(mg.GraphError, lambda: g.leakyReLU(x, "0.1"), "leakyReLU", "alpha", "'0.1'")
    expect(mg.GraphError, lambda: g.leakyReLU(x, float("nan")), "leakyReLU", "alpha")
    expect(mg.GraphError, lambda: g.leakyReLU(x, 0.1, alphaTensor=x), "leakyReLU",
           "alphaTensor", "both")
    expect(mg.DataTypeError, lambda: g.leakyReLU(x, g.placeholder([3], mg.float16)),
           "leakyReLU", "alphaTensor", "float16")
    expect(mg.ShapeError, lambda: g.leakyReLU(x, g.placeholder([2])), "leakyReLU",
           "alphaTensor", "[2]")
