"""Entries of the control-flow family (ops/control_flow.py): if_, while_, for_,
controlDependency, call.

The blocks are small fixed programs chosen by a sample keyword; the references run the same
programs in float64 NumPy with Python control flow (never our kernels). if_ is differentiable
through both branches (the gradient test checks the rule against central differences and
torch autograd); while_ and for_ are not (tests/ops/test_control_flow.py pins the GraphError).
controlDependency and call run through OpInfo.run: controlDependency orders an assign before a
read of the variable in its block; call runs an Executable (the callee) from a graph, through
an ExecutionDescriptor's compilationDescriptor."""

from __future__ import annotations

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples, shape

from ._common import mg_module as _mg

# ---------------------------------------------------------------------------- if_
_IF_FORMS = ("arith", "passthrough", "reduce")


def _if_build(g, p, x, y, form):
    if form == "arith":
        # no cancellation: the half types' roundings stay relative
        then = lambda: [g.multiplication(x, g.exponent(y))]  # noqa: E731
        other = lambda: [g.division(x, g.addition(g.square(y), g.constant(  # noqa: E731
            1.0, [], x.dataType)))]
    elif form == "passthrough":
        then, other = (lambda: [x]), (lambda: [g.square(y)])
    else:  # two results, one of them a reduction
        then = lambda: [g.reductionSum(g.multiplication(x, x), axes=None), g.tanh(y)]  # noqa
        other = lambda: [g.reductionSum(y, axes=None), g.negative(x)]  # noqa: E731
    return g.if_(p, then=then, elseBlock=other)


def _if_ref(p, x, y, form):
    x, y, take = f64(x), f64(y), bool(np.asarray(p).reshape(-1)[0])
    if form == "arith":
        return [x * np.exp(y)] if take else [x / (y * y + 1)]
    if form == "passthrough":
        return [x] if take else [y * y]
    return ([np.sum(x * x, keepdims=True), np.tanh(y)] if take
            else [np.sum(y, keepdims=True), -x])  # reductionSum keeps the rank


def _if_torch(p, x, y, form):
    import torch

    take = bool(p.reshape(-1)[0])
    if form == "arith":
        return [x * torch.exp(y)] if take else [x / (y * y + 1)]
    if form == "passthrough":
        return [x] if take else [y * y]
    one = [1] * x.dim()
    return ([torch.sum(x * x).reshape(one), torch.tanh(y)] if take
            else [torch.sum(y).reshape(one), -x])


def _if_samples(rng, dt):
    for k in range(max(n_samples(), 2 * len(_IF_FORMS))):
        shp = shape(rng)
        pshape = () if rng.random() < 0.6 else (1,) * int(rng.integers(1, 3))
        p = np.full(pshape, k % 2 == 0)
        yield Sample([p, arr(rng, shp, dt, -2, 2), arr(rng, shp, dt, -2, 2)],
                     {"form": _IF_FORMS[(k // 2) % len(_IF_FORMS)]})


def _if_errors(rng):
    mg = _mg()
    E = ErrorInput
    f = np.ones((2, 3), np.float32)
    t = np.array(True)
    yield E(Sample([np.array([True, False]), f, f], {"form": "arith"}), mg.ShapeError,
            "predicate")
    yield E(Sample([t, f, np.ones((3, 2), np.float32)], {"form": "passthrough"}), mg.ShapeError,
            "elseBlock[0]")
    yield E(Sample([t, f, f.astype(np.float16)], {"form": "passthrough"}), mg.DataTypeError,
            "elseBlock[0]")
    yield E(Sample([np.array(1 + 1j, np.complex64), f, f], {"form": "arith"}),
            mg.DataTypeError, "predicate")


add(OpInfo("if_", build=_if_build, ref=_if_ref, samples=_if_samples, dtypes=FLOAT,
           differentiable=(1, 2), torch_ref=_if_torch, errors=_if_errors,
           notes="the predicate (input 0) is a one-element bool tensor, fed"))


# ---------------------------------------------------------------------------- while_
def _while_build(g, x, n):
    mg = _mg()
    one = g.constant(1, [], mg.int32)
    half = g.constant(0.5, [], x.dataType)

    def before(ins, results):
        results.extend(ins)
        return g.lessThan(ins[0], n)

    i, s = g.while_([g.constant(0, [], mg.int32), x], before=before,
                    after=lambda a: [g.addition(a[0], one),
                                     g.addition(g.multiplication(a[1], half), g.sin(a[1]))])
    return [i, s]


def _while_ref(x, n):
    s, i = f64(x), 0
    while i < int(n):
        s, i = s * 0.5 + np.sin(s), i + 1
    return [np.array(i, np.int32), s]


def _while_samples(rng, dt):
    for k in range(n_samples()):
        yield Sample([arr(rng, shape(rng), dt, -2, 2), np.array(k % 4, np.int32)])


def _while_errors(rng):
    mg = _mg()
    yield ErrorInput(Sample([np.ones((2, 2), np.float32), np.array([1, 2], np.int32)]),
                     mg.ShapeError, "before")


add(OpInfo("while_", build=_while_build, ref=_while_ref, samples=_while_samples, dtypes=FLOAT,
           errors=_while_errors,
           notes="state (counter, x): x <- x / 2 + sin(x) while counter < n (fed)"))


# ---------------------------------------------------------------------------- for_
def _for_build(g, x, *bounds, form):
    third = g.constant(1.0 / 3.0, [], x.dataType)
    if form == "noindex":
        return g.for_(bounds[0], [x], lambda a: [g.multiplication(g.sin(a[0]), third)])[0]

    def body(i, a):
        return [g.addition(g.multiplication(a[0], third), g.cast(i, x.dataType))]

    if form == "count":
        return g.for_(bounds[0], [x], body)[0]
    return g.for_(lowerBound=bounds[0], upperBound=bounds[1], step=bounds[2],
                  initialBodyArguments=[x], body=body)[0]


def _for_ref(x, *bounds, form):
    s = f64(x)
    if form == "noindex":
        for _ in range(max(0, int(bounds[0]))):
            s = np.sin(s) / 3.0
        return s
    idx = range(max(0, int(bounds[0]))) if form == "count" else range(*map(int, bounds))
    for i in idx:
        s = s / 3.0 + i
    return s


def _for_samples(rng, dt):
    forms = ("count", "range", "noindex")
    for k in range(max(n_samples(), len(forms))):
        form = forms[k % len(forms)]
        x = arr(rng, shape(rng), dt, -2, 2)
        if form == "range":
            lo, hi = int(rng.integers(-3, 4)), int(rng.integers(-3, 4))
            st = int(rng.choice([-2, -1, 1, 2]))
            b = [np.array(v, np.int32) for v in (lo, hi, st)]
        else:
            b = [np.array(int(rng.integers(-1, 4)), np.int32)]
        yield Sample([x] + b, {"form": form})


def _for_errors(rng):
    mg = _mg()
    E = ErrorInput
    f = np.ones((2,), np.float32)
    yield E(Sample([f, np.array(2.0, np.float32)], {"form": "count"}), mg.DataTypeError,
            "numberOfIterations")
    yield E(Sample([f, np.array([2, 3], np.int32)], {"form": "count"}), mg.ShapeError,
            "numberOfIterations")
    yield E(Sample([f, np.array(0, np.int32), np.array(3, np.int64), np.array(1, np.int32)],
                   {"form": "range"}), mg.DataTypeError, "upperBound")
    yield E(Sample([f, np.array(0, np.int32), np.array(3, np.int32), np.array(0, np.int32)],
                   {"form": "range"}), mg.GraphError, "step")


add(OpInfo("for_", build=_for_build, ref=_for_ref, samples=_for_samples, dtypes=FLOAT,
           errors=_for_errors,
           notes="count: index 0..n-1; range: Python's range(lo, hi, step); noindex: body(args)"))


# ---------------------------------------------------------------------------- controlDependency
def _cd_run(device, s, inputs):
    """[the block's read (the assigned value), the block's other result, the variable after]."""
    mg = _mg()
    dt = mg.DataType.from_numpy(s.inputs[0].dtype)
    g = mg.Graph()
    v = g.variable(inputs[0], dataType=dt)
    x = g.placeholder(list(s.inputs[1].shape), dt)
    ops = s.kwargs.get("operations")
    if ops is None:
        ops = [g.assign(v, g.addition(v, x))]
    r, q = g.controlDependency(ops, dependentBlock=lambda: [
        g.read(v), g.multiplication(v, g.constant(2.0, [], dt))])
    out = g.run({x: inputs[1]}, [r, q], device=device)
    after = g.run({}, [v], device=device)[v]
    return [out[r].numpy(), out[q].numpy(), after.numpy()]


def _cd_ref(init, x, **kw):
    new = (f64(init) + f64(x)).astype(init.dtype)  # the variable holds its own dtype
    return [f64(new), f64(new) * 2, f64(new)]


def _cd_samples(rng, dt):
    for _ in range(n_samples()):
        shp = shape(rng)
        yield Sample([arr(rng, shp, dt), arr(rng, shp, dt)])


def _cd_errors(rng):
    mg = _mg()
    f = np.ones((2,), np.float32)
    yield ErrorInput(Sample([f, f], {"operations": [3]}), mg.GraphError, "operations[0]")


add(OpInfo("controlDependency", build=lambda g, *xs, **kw: None, ref=_cd_ref,
           samples=_cd_samples, dtypes=FLOAT, run=_cd_run, errors=_cd_errors,
           notes="run: an assign (not targeted) ordered before the block's reads"))


# ---------------------------------------------------------------------------- call
def _call_run(device, s, inputs):
    mg = _mg()
    dt = mg.DataType.from_numpy(s.inputs[0].dtype)
    shp = list(s.inputs[0].shape)
    h = mg.Graph()
    a, b = h.placeholder(shp, dt), h.placeholder(shp, dt)
    callee = h.compile({a: mg.ShapedType(shp, dt), b: mg.ShapedType(shp, dt)},
                       [h.multiplication(h.exponent(a), b), h.exponent(b)])
    g = mg.Graph()
    x, y = g.placeholder(shp, dt), g.placeholder(shp, dt)
    types = s.kwargs.get("outputTypes", [mg.ShapedType(shp, dt)] * 2)
    outs = g.call(s.kwargs.get("symbolName", "f"), inputTensors=[x, y], outputTypes=types)
    ed = mg.ExecutionDescriptor(compilationDescriptor=mg.CompilationDescriptor(
        callables={"f": callee}))
    res = g.run({x: inputs[0], y: inputs[1]}, outs, device=device, executionDescriptor=ed)
    return [res[t].numpy() for t in outs]


def _call_ref(x, y, **kw):
    return [np.exp(f64(x)) * f64(y), np.exp(f64(y))]


def _call_samples(rng, dt):
    for _ in range(n_samples()):
        shp = shape(rng)
        yield Sample([arr(rng, shp, dt, -2, 2), arr(rng, shp, dt, -2, 2)])


def _call_errors(rng):
    mg = _mg()
    f = np.ones((2,), np.float32)
    E = ErrorInput
    yield E(Sample([f, f], {"symbolName": ""}), mg.GraphError, "symbolName")
    yield E(Sample([f, f], {"outputTypes": [3]}), mg.GraphError, "outputTypes[0]")
    yield E(Sample([f, f], {"outputTypes": [mg.ShapedType([3], mg.float32)] * 2}),
            mg.GraphError, "outputTypes[0]")
    yield E(Sample([f, f], {"symbolName": "g"}), mg.GraphError, "compilationDescriptor")


add(OpInfo("call", build=lambda g, *xs, **kw: None, ref=_call_ref, samples=_call_samples,
           dtypes=FLOAT, run=_call_run, errors=_call_errors,
           notes="run: the callee (exp(x) * y, exp(y)) resolved through callables"))
