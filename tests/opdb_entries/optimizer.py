"""Entries of the optimizer family (ops/optimizer.py): stochasticGradientDescent,
applyStochasticGradientDescent, adam.

References are float64 NumPy written from Apple's formulas (MPSGraphOptimizerOps.h, quoted in
ops/optimizer.py): SGD is `values - learningRate * gradient`; Adam is

    lr_t = learningRate * sqrt(1 - beta2Power) / (1 - beta1Power)   (or currentLearningRate)
    m_t = beta1 m + (1 - beta1) g,   v_t = beta2 v + (1 - beta2) g^2
    maxVel_t = max(maxVel, v_t)                                      (AMSGrad form only)
    values_t = values - lr_t m_t / (sqrt(maxVel_t or v_t) + epsilon)

with every operand broadcast to `values`' shape. A NaN in maximumVelocity or in v_t gives a
NaN maxVel_t (and so NaN values): the decision recorded in docs/semantics.md (a corrupted
optimizer state is never silently replaced). Every operand is drawn in a domain where the
update is well conditioned (velocities >= 0, epsilon >= 1e-4, 1 - beta1Power >= 0.1), so that
the default tolerances hold for the single rounding of each result.

applyStochasticGradientDescent runs through OpInfo.run: one run with the returned assign
Operation as a target that also reads the variable (the old value: reads see the start of the
run), then `steps - 1` further update runs and a run that reads the updated variable."""

from __future__ import annotations

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples, shape

from ._common import mg_module as _mg


def _operand_shape(rng, vshape):
    """A shape broadcastable TO vshape: a scalar, vshape itself, or vshape with leading axes
    dropped and some axes set to 1."""
    u = rng.random()
    if u < 0.4:
        return ()
    if u < 0.7:
        return tuple(vshape)
    k = int(rng.integers(0, len(vshape) + 1))
    return tuple(1 if rng.random() < 0.4 else d for d in vshape[k:])


# ---------------------------------------------------------------------------- SGD
def _sgd_samples(rng, dt):
    for _ in range(n_samples()):
        vs = shape(rng)
        lr = arr(rng, _operand_shape(rng, vs), dt, 0.001, 1.0)
        yield Sample([lr, arr(rng, vs, dt), arr(rng, _operand_shape(rng, vs), dt)])


def _sgd_ref(lr, values, gradient):
    out = f64(values) - f64(lr) * f64(gradient)
    return np.broadcast_to(out, np.shape(values)).copy()


def _sgd_errors():
    def gen(rng):
        mg = _mg()
        E = ErrorInput
        v = np.ones((2, 3), np.float32)
        lr = np.ones((), np.float32)
        # values' dataType is the op's: the other operand is named
        yield E(Sample([lr.astype(np.float16), v, v]), mg.DataTypeError, "learningRate")
        yield E(Sample([lr, v, v.astype(np.float16)]), mg.DataTypeError, "gradient")
        yield E(Sample([lr.astype(np.int32), v.astype(np.int32), v.astype(np.int32)]),
                mg.DataTypeError, "values")
        yield E(Sample([lr.astype(np.int32), v, v]), mg.DataTypeError, "learningRate")
        yield E(Sample([lr, v, np.ones((3, 2), np.float32)]), mg.ShapeError, "gradient")
        yield E(Sample([lr, v, np.ones((4, 2, 3), np.float32)]), mg.ShapeError, "gradient")
        yield E(Sample([np.ones((2,), np.float32), v, v]), mg.ShapeError, "learningRate")
        yield E(Sample([lr, v, v], {"bad": "not_a_tensor"}), mg.GraphError, "gradient")
    return gen


def _sgd_build(g, lr, values, gradient, bad=None):
    if bad == "not_a_tensor":
        return g.stochasticGradientDescent(lr, values, np.ones((2, 3), np.float32))
    return g.stochasticGradientDescent(learningRate=lr, values=values, gradient=gradient)


add(OpInfo("stochasticGradientDescent", build=_sgd_build,
           ref=lambda lr, values, gradient, bad=None: _sgd_ref(lr, values, gradient),
           samples=_sgd_samples, dtypes=FLOAT, errors=_sgd_errors()))


def _apply_sgd_samples(rng, dt):
    for k in range(n_samples()):
        s = next(iter(_sgd_samples(rng, dt)))
        s.kwargs = {"steps": 1 + k % 2}
        yield s


def _run_apply_sgd(device, s, inputs):
    """[the variable read in the first update run (its old value), the value after `steps`
    update runs]."""
    mg = _mg()
    steps = s.kwargs.get("steps", 1)
    g = mg.Graph()
    lr_a, v_a, g_a = s.inputs
    lr = g.placeholder(list(lr_a.shape), mg.DataType.from_numpy(lr_a.dtype))
    grad = g.placeholder(list(g_a.shape), mg.DataType.from_numpy(g_a.dtype))
    dt = mg.DataType.from_numpy(v_a.dtype)
    if s.kwargs.get("bad") == "not_variable":
        var = g.placeholder(list(v_a.shape), dt)
    else:
        var = g.variable(inputs[1], dataType=dt)
    op = g.applyStochasticGradientDescent(learningRate=lr, variable=var, gradient=grad,
                                          name="step")
    assert isinstance(op, mg.Operation) and op.name == "step"
    r = g.read(var)
    feeds = {lr: inputs[0], grad: inputs[2]}
    old = g.run(feeds, [r], targetOperations=[op], device=device)[r].numpy()
    for _ in range(steps - 1):
        g.run(feeds, [], targetOperations=[op], device=device)
    new = g.run({}, [r], device=device)[r].numpy()
    return [old, new]


def _apply_sgd_ref(lr, values, gradient, steps=1, bad=None):
    out = values
    for _ in range(steps):  # the variable holds each step's result in its own dataType
        out = _sgd_ref(lr, out, gradient).astype(values.dtype)
    return [f64(values), f64(out)]


def _apply_sgd_errors(rng):
    mg = _mg()
    v = np.ones((2, 3), np.float32)
    lr = np.ones((), np.float32)
    E = ErrorInput
    yield E(Sample([lr, v, v], {"bad": "not_variable"}), mg.GraphError, "variable")
    yield E(Sample([lr, v, v.astype(np.float16)]), mg.DataTypeError, "gradient")
    yield E(Sample([lr.astype(np.float16), v, v]), mg.DataTypeError, "learningRate")
    yield E(Sample([lr, v.astype(np.int32), v.astype(np.int32)]), mg.DataTypeError,
            "variable")
    yield E(Sample([lr, v, v.astype(np.bool_)]), mg.DataTypeError, "gradient")
    yield E(Sample([lr, v, np.ones((2, 2), np.float32)]), mg.ShapeError, "gradient")
    yield E(Sample([np.ones((1, 1, 1), np.float32), v, v]), mg.ShapeError, "learningRate")


add(OpInfo("applyStochasticGradientDescent", build=lambda g, *xs, **kw: None,
           ref=_apply_sgd_ref, samples=_apply_sgd_samples, dtypes=FLOAT, run=_run_apply_sgd,
           errors=_apply_sgd_errors,
           notes="run: [the value read while updating (the old one), the value after]"))


# ---------------------------------------------------------------------------- adam
_FORMS = ((True, False), (True, True), (False, False), (False, True))  # (bias, amsgrad)


def _adam_names(bias: bool, amsgrad: bool) -> tuple[str, ...]:
    names = ["learningRate" if bias else "currentLearningRate", "beta1", "beta2", "epsilon"]
    if bias:
        names += ["beta1Power", "beta2Power"]
    names += ["values", "momentum", "velocity"]
    if amsgrad:
        names.append("maximumVelocity")
    return tuple(names + ["gradient"])


_DOMAIN = {"learningRate": (1e-3, 0.5), "currentLearningRate": (1e-3, 0.5),
           "beta1": (0.5, 0.99), "beta2": (0.8, 0.999), "epsilon": (1e-4, 1e-2),
           "beta1Power": (0.01, 0.9), "beta2Power": (0.3, 0.99), "values": (-3, 3),
           "momentum": (-1, 1), "velocity": (0.05, 2), "maximumVelocity": (0.0, 2.5),
           "gradient": (-3, 3)}
_HYPER = ("learningRate", "currentLearningRate", "beta1", "beta2", "epsilon", "beta1Power",
          "beta2Power")


def _adam_samples(rng, dt):
    for k in range(max(n_samples(), len(_FORMS))):
        bias, amsgrad = _FORMS[k % len(_FORMS)]
        names = _adam_names(bias, amsgrad)
        vs = shape(rng)
        inputs = []
        for n in names:
            if n == "values":
                s = vs
            elif n in _HYPER:
                s = () if rng.random() < 0.7 else _operand_shape(rng, vs)
            else:
                s = _operand_shape(rng, vs) if rng.random() < 0.4 else vs
            inputs.append(arr(rng, s, dt, *_DOMAIN[n]))
        yield Sample(inputs, {"names": names})


def _adam_ref(*xs, names):
    a = {n: f64(x) for n, x in zip(names, xs)}
    m = a["beta1"] * a["momentum"] + (1 - a["beta1"]) * a["gradient"]
    v = a["beta2"] * a["velocity"] + (1 - a["beta2"]) * a["gradient"] ** 2
    if "learningRate" in a:
        lr = a["learningRate"] * np.sqrt(1 - a["beta2Power"]) / (1 - a["beta1Power"])
    else:
        lr = a["currentLearningRate"]
    outs = [m, v]
    if "maximumVelocity" in a:
        vmax = np.maximum(a["maximumVelocity"], v)  # NaN propagates (np.maximum)
        denom = np.sqrt(vmax) + a["epsilon"]
        outs.append(vmax)
    else:
        denom = np.sqrt(v) + a["epsilon"]
    new = a["values"] - lr * m / denom
    shp = np.shape(xs[names.index("values")])
    return [np.broadcast_to(o, shp).copy() for o in [new] + outs]


def _adam_build(g, *xs, names):
    return g.adam(**dict(zip(names, xs)))


def _adam_errors(rng):
    mg = _mg()
    E = ErrorInput
    one = np.ones((), np.float32)
    v = np.ones((2, 3), np.float32)

    def sample(names, **over):
        arrays = {n: (v if n in ("values", "momentum", "velocity", "maximumVelocity",
                                 "gradient") else one) for n in names}
        arrays.update(over)
        return Sample([arrays[n] for n in names], {"names": tuple(names)})

    base = _adam_names(True, False)
    cur = _adam_names(False, True)
    yield E(sample(("learningRate", "currentLearningRate") + base[1:]), mg.GraphError,
            "learningRate")
    yield E(sample(tuple(n for n in base if n != "learningRate")), mg.GraphError,
            "learningRate")
    yield E(sample(tuple(n for n in base if n != "beta1Power")), mg.GraphError, "beta1Power")
    yield E(sample(tuple(n for n in base if n != "beta2Power")), mg.GraphError, "beta2Power")
    yield E(sample(cur[:4] + ("beta2Power",) + cur[4:]), mg.GraphError, "beta2Power")
    yield E(sample(cur, momentum=v.astype(np.float16)), mg.DataTypeError, "momentum")
    yield E(sample(cur, maximumVelocity=v.astype(np.float16)), mg.DataTypeError,
            "maximumVelocity")
    yield E(sample(base, beta1=one.astype(np.bool_)), mg.DataTypeError, "beta1")
    yield E(sample(base, values=v.astype(np.int32)), mg.DataTypeError, "values")
    yield E(sample(base, gradient=np.ones((3, 2), np.float32)), mg.ShapeError, "gradient")
    yield E(sample(cur, velocity=np.ones((2, 2, 3), np.float32)), mg.ShapeError, "velocity")
    yield E(sample(cur, maximumVelocity=np.ones((4,), np.float32)), mg.ShapeError,
            "maximumVelocity")
    yield E(sample(base, epsilon=np.ones((2,), np.float32)), mg.ShapeError, "epsilon")
    yield E(sample(base, beta2Power=np.ones((1, 1, 1), np.float32)), mg.ShapeError,
            "beta2Power")


add(OpInfo("adam", build=_adam_build, ref=_adam_ref, samples=_adam_samples, dtypes=FLOAT,
           errors=_adam_errors,
           notes="each sample is one form: bias-corrected or currentLearningRate, with or "
                 "without maximumVelocity"))
