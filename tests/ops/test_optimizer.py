"""stochasticGradientDescent, applyStochasticGradientDescent and adam against plain NumPy
update rules written here, several Adam steps through variables, end-to-end training loops
(gradientForPrimaryTensor + applyStochasticGradientDescent run as target operations), and the
bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect_named

R = mg.LossReductionType


def _c(g, v, dt=mg.float32):
    return g.constant(v, dataType=dt)


# ------------------------------------------------------------------ SGD
@pytest.mark.parametrize("lr_shape,g_shape", [((), (2, 3)), ((1,), (3,)), ((2, 1), (2, 3)),
                                              ((), ())])
def test_sgd_matches_numpy_with_broadcasting(rng, lr_shape, g_shape):
    values = rng.standard_normal((2, 3)).astype(np.float32)
    lr = rng.random(lr_shape).astype(np.float32)
    grad = rng.standard_normal(g_shape).astype(np.float32)
    g = mg.Graph()
    tl, tv, tg = (g.placeholder(list(a.shape)) for a in (lr, values, grad))
    y = g.stochasticGradientDescent(tl, tv, tg)
    assert y.shape == [2, 3] and y.dataType == mg.float32
    got = g.run({tl: lr, tv: values, tg: grad}, [y])[y].numpy()
    np.testing.assert_allclose(got, values - lr * grad, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [mg.float16, mg.bFloat16])
def test_sgd_half_types_round_once(rng, dtype):
    npdt = dtype.numpy_dtype
    values = rng.standard_normal((5,)).astype(npdt)
    grad = rng.standard_normal((5,)).astype(npdt)
    lr = np.asarray(0.1, npdt)
    g = mg.Graph()
    tl, tv, tg = (g.placeholder(list(a.shape), dtype) for a in (lr, values, grad))
    y = g.stochasticGradientDescent(tl, tv, tg)
    got = g.run({tl: lr, tv: values, tg: grad}, [y])[y].numpy()
    assert got.dtype == npdt
    f32 = values.astype(np.float32) - lr.astype(np.float32) * grad.astype(np.float32)
    np.testing.assert_array_equal(got, f32.astype(npdt))


def test_apply_sgd_assigns_only_when_targeted(rng):
    init = rng.standard_normal((3,)).astype(np.float32)
    grad = rng.standard_normal((3,)).astype(np.float32)
    g = mg.Graph()
    v = g.variable(init, shape=[3], dataType=mg.float32, name="w")
    tg = g.placeholder([3])
    op = g.applyStochasticGradientDescent(_c(g, 0.5), v, tg, name="step")
    assert isinstance(op, mg.Operation) and op.name == "step"
    read = g.read(v)
    # not targeted: nothing changes
    np.testing.assert_array_equal(g.run({tg: grad}, [read])[read].numpy(), init)
    out = g.run({tg: grad}, [read], targetOperations=[op])
    np.testing.assert_array_equal(out[read].numpy(), init)  # reads see the start of the run
    now = g.run({}, [read])[read].numpy()
    np.testing.assert_allclose(now, init - 0.5 * grad, rtol=1e-6)
    g.run({tg: grad}, [], targetOperations=[op])
    np.testing.assert_allclose(g.run({}, [read])[read].numpy(), init - grad, rtol=1e-6)


# ------------------------------------------------------------------ Adam
def numpy_adam(values, m, v, vmax, grad, t, lr, b1, b2, eps, current_lr=None):
    """One step of Apple's formulas, float64; t is the step being taken (1 = first)."""
    m = b1 * m + (1 - b1) * grad
    v = b2 * v + (1 - b2) * grad * grad
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) if current_lr is None else current_lr
    if vmax is not None:
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax) + eps
    else:
        denom = np.sqrt(v) + eps
    return values - lr_t * m / denom, m, v, vmax


@pytest.mark.parametrize("amsgrad", [False, True], ids=["adam", "amsgrad"])
@pytest.mark.parametrize("overload", ["learningRate", "currentLearningRate"])
def test_adam_several_steps_against_numpy(rng, amsgrad, overload):
    shape = (3, 4)
    lr, b1, b2, eps = 0.05, 0.9, 0.99, 1e-6
    g = mg.Graph()
    w0 = rng.standard_normal(shape).astype(np.float32)
    vw = g.variable(w0, dataType=mg.float32)
    vm = g.variable(np.zeros(shape, np.float32), dataType=mg.float32)
    vv = g.variable(np.zeros(shape, np.float32), dataType=mg.float32)
    vmax = g.variable(np.zeros(shape, np.float32), dataType=mg.float32) if amsgrad else None
    tg = g.placeholder(list(shape), name="grad")
    tb1p, tb2p, tclr = g.placeholder([]), g.placeholder([]), g.placeholder([])
    kw = dict(beta1=_c(g, b1), beta2=_c(g, b2), epsilon=_c(g, eps), values=vw, momentum=vm,
              velocity=vv, maximumVelocity=vmax, gradient=tg, name="adam")
    if overload == "learningRate":
        outs = g.adam(learningRate=_c(g, lr), beta1Power=tb1p, beta2Power=tb2p, **kw)
    else:
        outs = g.adam(currentLearningRate=tclr, **kw)
    assert len(outs) == (4 if amsgrad else 3)
    assert all(o.shape == list(shape) and o.dataType == mg.float32 for o in outs)
    states = [vw, vm, vv] + ([vmax] if amsgrad else [])
    ops = [g.assign(s, o) for s, o in zip(states, outs)]
    ref = [w0.astype(np.float64), np.zeros(shape), np.zeros(shape),
           np.zeros(shape) if amsgrad else None]
    for t in range(1, 6):
        grad = rng.standard_normal(shape).astype(np.float32) * (3.0 if t == 2 else 1.0)
        clr = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        feeds = {tg: grad}
        if overload == "learningRate":
            feeds |= {tb1p: np.float32(b1 ** t), tb2p: np.float32(b2 ** t)}
        else:
            feeds |= {tclr: np.float32(clr)}
        out = g.run(feeds, outs, targetOperations=ops)
        ref = list(numpy_adam(*ref[:3], ref[3], grad.astype(np.float64), t, lr, b1, b2, eps,
                              None if overload == "learningRate" else clr))
        for o, r in zip(outs, ref):
            np.testing.assert_allclose(out[o].numpy(), r, rtol=2e-5, atol=1e-6)
    if amsgrad:  # the max velocity really is a running maximum (step 2 had big gradients)
        assert (ref[3] > ref[2]).any()


def test_adam_broadcast_hyper_parameters_and_half_type(rng):
    npdt = np.float16
    values = rng.standard_normal((2, 3)).astype(npdt)
    grad = rng.standard_normal((2, 3)).astype(npdt)
    m = rng.standard_normal((2, 3)).astype(npdt)
    v = rng.random((2, 3)).astype(npdt)
    b1 = np.array([0.9, 0.8, 0.7], npdt)  # one beta1 per column
    g = mg.Graph()
    H = mg.float16
    outs = g.adam(learningRate=_c(g, 0.1, H), beta1=_c(g, b1, H), beta2=_c(g, 0.99, H),
                  epsilon=_c(g, 1e-3, H), beta1Power=_c(g, 0.9, H), beta2Power=_c(g, 0.99, H),
                  values=_c(g, values, H), momentum=_c(g, m, H), velocity=_c(g, v, H),
                  gradient=_c(g, grad, H))
    res = g.run({}, outs)
    f = [a.astype(np.float32) for a in (values, m, v, grad)]
    c = [np.asarray(a, npdt).astype(np.float32) for a in (0.1, b1, 0.99, 1e-3, 0.9, 0.99)]
    lr, b1_, b2_, eps, b1p, b2p = c
    m_t = b1_ * f[1] + (1 - b1_) * f[3]
    v_t = b2_ * f[2] + (1 - b2_) * f[3] ** 2
    w_t = f[0] - lr * np.sqrt(1 - b2p) / (1 - b1p) * m_t / (np.sqrt(v_t) + eps)
    for o, want in zip(outs, (w_t, m_t, v_t)):
        got = res[o].numpy()
        assert got.dtype == npdt
        np.testing.assert_array_equal(got, want.astype(npdt))


# ------------------------------------------------------------------ training loops
def test_training_loop_converges_to_the_known_minimum(rng):
    """min over logits of softmax cross-entropy with soft labels p: the minimum is the
    entropy H(p), reached at softmax(logits) = p. Variable + gradientForPrimaryTensor +
    applyStochasticGradientDescent run as a target operation, repeatedly."""
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [0.3, 0.3, 0.4]], np.float32)
    g = mg.Graph()
    w = g.variable(rng.standard_normal((3, 3)).astype(np.float32), dataType=mg.float32)
    loss = g.softMaxCrossEntropy(w, _c(g, p), 1, R.sum)
    grad = g.gradientForPrimaryTensor(loss, [w])[w]
    step = g.applyStochasticGradientDescent(_c(g, 1.0), w, grad)
    exe = g.compile({}, [loss], targetOperations=[step])
    losses = [float(exe.run([])[0].numpy().reshape(())) for _ in range(300)]
    assert all(b <= a + 1e-6 for a, b in zip(losses, losses[1:]))  # monotone for this lr
    entropy = float(-(p * np.log(p)).sum())
    assert losses[0] - entropy > 0.1
    assert abs(losses[-1] - entropy) < 1e-4
    w_now = g.run({}, [g.read(w)])
    final = list(w_now.values())[0].numpy()
    sm = np.exp(final - final.max(1, keepdims=True))
    np.testing.assert_allclose(sm / sm.sum(1, keepdims=True), p, atol=2e-3)


def test_adam_training_loop_with_pooling_and_one_hot(rng):
    """A tiny classifier: logits = avgPooling2D(w) (a linear map), oneHot labels, mean loss,
    Adam updates through variables; the loss falls towards 0."""
    g = mg.Graph()
    w0 = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)  # 4 samples, 3 classes
    w = g.variable(w0, dataType=mg.float32)
    m = g.variable(np.zeros_like(w0), dataType=mg.float32)
    v = g.variable(np.zeros_like(w0), dataType=mg.float32)
    d = mg.Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
    logits = g.avgPooling2D(w, descriptor=d)  # [4, 3, 1, 1]
    cls = np.array([0, 2, 1, 2]).reshape(4, 1, 1)
    labels = g.oneHot(_c(g, cls, mg.int32), 3, axis=1)  # [4, 3, 1, 1]
    loss = g.softMaxCrossEntropy(logits, labels, 1, R.mean)
    grad = g.gradientForPrimaryTensor(loss, [w])[w]
    tb1p, tb2p = g.placeholder([]), g.placeholder([])
    nw, nm, nv = g.adam(learningRate=_c(g, 0.1), beta1=_c(g, 0.9), beta2=_c(g, 0.999),
                        epsilon=_c(g, 1e-8), beta1Power=tb1p, beta2Power=tb2p, values=w,
                        momentum=m, velocity=v, gradient=grad)
    ops = [g.assign(w, nw), g.assign(m, nm), g.assign(v, nv)]
    losses = []
    for t in range(1, 101):
        out = g.run({tb1p: np.float32(0.9 ** t), tb2p: np.float32(0.999 ** t)}, [loss],
                    targetOperations=ops)
        losses.append(float(out[loss].numpy().reshape(())))
    assert losses[-1] < 0.05 < losses[0]


def test_quadratic_training_loop_if_arithmetic_ops_exist(rng):
    """0.5 * (w - t)^2 elementwise (the primary is not a scalar: its gradient is the gradient
    of the sum); SGD with lr 0.5 converges to w = t. Uses the arithmetic family, which another
    module provides: skipped while it is absent."""
    g = mg.Graph()
    if not (hasattr(g, "subtraction") and hasattr(g, "multiplication")):
        pytest.skip("arithmetic ops not available")
    target = rng.standard_normal((5,)).astype(np.float32)
    w = g.variable(np.zeros(5, np.float32), dataType=mg.float32)
    diff = g.subtraction(w, _c(g, target))
    loss = g.multiplication(_c(g, 0.5), g.multiplication(diff, diff))
    grad = g.gradientForPrimaryTensor(loss, [w])[w]
    step = g.applyStochasticGradientDescent(_c(g, 0.5), w, grad)
    first = None
    for _ in range(60):
        out = g.run({}, [loss], targetOperations=[step])
        total = float(out[loss].numpy().sum())
        first = total if first is None else first
    assert first > 0.1 and total < 1e-10
    np.testing.assert_allclose(g.run({}, [g.read(w)]).popitem()[1].numpy(), target, atol=1e-5)


# ------------------------------------------------------------------ errors
@pytest.fixture(params=[None, "myopt"], ids=["unnamed", "named"])
def name(request):
    return request.param


SGD = "stochasticGradientDescent"


def test_error_sgd_dtypes(name):
    g = mg.Graph()
    v = g.placeholder([3])
    expect_named(mg.DataTypeError, lambda: g.stochasticGradientDescent(
        _c(g, 0.1, mg.float16), v, v, name=name), SGD, name, "learningRate", "float16")
    iv = g.placeholder([3], mg.int32)
    expect_named(mg.DataTypeError, lambda: g.stochasticGradientDescent(_c(g, 1, mg.int32), iv, iv,
                                                                 name=name),
           SGD, name, "values", "int32")


def test_error_sgd_shapes(name):
    g = mg.Graph()
    v = g.placeholder([2, 3])
    expect_named(mg.ShapeError, lambda: g.stochasticGradientDescent(_c(g, 0.1), v,
                                                              g.placeholder([3, 3]), name=name),
           SGD, name, "gradient", "[2, 3]", "[3, 3]")
    expect_named(mg.ShapeError, lambda: g.stochasticGradientDescent(g.placeholder([2, 3, 1]), v, v,
                                                              name=name),
           SGD, name, "learningRate", "[2, 3]")


def test_error_apply_sgd_needs_a_variable(name):
    g = mg.Graph()
    p = g.placeholder([3])
    expect_named(mg.GraphError, lambda: g.applyStochasticGradientDescent(_c(g, 0.1), p, p,
                                                                   name=name),
           "applyStochasticGradientDescent", name, "variable", "variable(...)", "placeholder")
    w = g.variable(np.zeros(3, np.float32), dataType=mg.float32)
    expect_named(mg.ShapeError, lambda: g.applyStochasticGradientDescent(
        _c(g, 0.1), w, g.placeholder([4]), name=name),
        "applyStochasticGradientDescent", name, "gradient", "variable's shape", "[4]")


def _adam_kw(g, shape=(3,)):
    f = lambda: g.placeholder(list(shape))  # noqa: E731
    return dict(beta1=_c(g, 0.9), beta2=_c(g, 0.99), epsilon=_c(g, 1e-8), values=f(),
                momentum=f(), velocity=f(), gradient=f())


def test_error_adam_learning_rate_overloads(name):
    g = mg.Graph()
    kw = _adam_kw(g)
    lr = _c(g, 0.1)
    expect_named(mg.GraphError, lambda: g.adam(name=name, **kw), "adam", name, "learningRate",
           "exactly one", "neither")
    expect_named(mg.GraphError, lambda: g.adam(learningRate=lr, currentLearningRate=lr, name=name,
                                         **kw), "adam", name, "learningRate", "both")
    expect_named(mg.GraphError, lambda: g.adam(learningRate=lr, beta1Power=lr, name=name, **kw),
           "adam", name, "beta2Power", "required with learningRate")
    expect_named(mg.GraphError, lambda: g.adam(currentLearningRate=lr, beta1Power=lr, name=name,
                                         **kw), "adam", name, "beta1Power", "None with")


def test_error_adam_shapes_and_types(name):
    g = mg.Graph()
    kw = _adam_kw(g)
    lr = _c(g, 0.1)
    bad = dict(kw, momentum=g.placeholder([4]))
    expect_named(mg.ShapeError, lambda: g.adam(currentLearningRate=lr, name=name, **bad), "adam",
           name, "momentum", "[3]", "[4]")
    bad = dict(kw, maximumVelocity=g.placeholder([3], mg.float16))
    expect_named(mg.DataTypeError, lambda: g.adam(currentLearningRate=lr, name=name, **bad), "adam",
           name, "maximumVelocity", "float16")
    bad = dict(kw, epsilon=g.placeholder([2]))
    expect_named(mg.ShapeError, lambda: g.adam(currentLearningRate=lr, name=name, **bad), "adam",
           name, "epsilon", "[3]")


def test_error_adam_arguments_are_keyword_only():
    g = mg.Graph()
    with pytest.raises(TypeError):
        g.adam(_c(g, 0.1))  # type: ignore[misc]


def test_optimizer_ops_have_no_gradient_rule():
    g = mg.Graph()
    x = g.placeholder([3])
    y = g.stochasticGradientDescent(_c(g, 0.1), x, x)
    with pytest.raises(mg.UnsupportedError, match="stochasticGradientDescent"):
        g.gradientForPrimaryTensor(y, [x])
