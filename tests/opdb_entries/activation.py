"""Entries of the activation family (ops/activation.py).

References are float64 NumPy written from the definitions in the op module's docstring and
docs/semantics.md (never our kernels):

    sigmoid(x) = 1 / (1 + exp(-x)), tanh, reLU(x) = max(x, 0) (NaN stays NaN),
    softMax(x, axis) = exp(x - m) / sum(exp(x - m)) along axis (m the maximum; a row of all
    -inf, or with a +inf or a NaN, is NaN wholly),
    leakyReLU(x, alpha) = x if x >= 0 else alpha * x (alpha a number or a tensor that
    broadcasts with x);
    sigmoidGradient(dy, x) = dy s (1 - s), reLUGradient(dy, x) = dy where x > 0 else 0,
    softMaxGradient(dy, x, axis) = s (dy - sum(s dy, axis)),
    leakyReLUGradient(dy, x, alpha) = dy where x > 0 else alpha dy.

The gradient ops' `sourceTensor` is the forward INPUT. Comparisons with NaN are false, so a NaN
in reLUGradient's / leakyReLUGradient's sourceTensor selects the "else" branch (0 / alpha dy),
as Apple's select would (pinned here; see docs/semantics.md). reLUGradient and
leakyReLUGradient are pinned at x == 0 exactly (0 and alpha dy): those samples carry exact
zeros and are not differentiated in x (the reference jumps there).
"""

from __future__ import annotations

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples, shape

from ._common import broadcast_shapes
from ._common import mg_module as _mg


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------------------- references
def _sigmoid(x):
    with np.errstate(all="ignore"):
        x = f64(x)
        return 1.0 / (1.0 + np.exp(-x))


def _softmax(x, axis):
    x = f64(x)
    if x.size == 0:
        return x
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)  # NaN anywhere in the row: NaN (max of NaN)
        e = np.exp(x - m)  # a row of all -inf: -inf - -inf = NaN
        return e / np.sum(e, axis=axis, keepdims=True)


def _ref_unary(fn):
    def ref(x):
        with np.errstate(all="ignore"):
            return fn(f64(x))
    return ref


def _relu(x):
    return np.where(np.isnan(x), np.nan, np.where(x > 0, x, 0.0))


def _leaky(x, a):
    with np.errstate(all="ignore"):
        return np.where(x >= 0, x, a * x)


def _ref_leaky(x, *alpha_t, alpha=None, form="alpha"):
    a = f64(alpha_t[0]) if alpha_t else float(alpha)
    return _leaky(f64(x), a)


def _ref_sigmoid_grad(dy, x):
    s = _sigmoid(x)
    return f64(dy) * (s * (1.0 - s))


def _ref_relu_grad(dy, x):
    dy, x = np.broadcast_arrays(f64(dy), f64(x))
    return np.where(x > 0, dy, 0.0)


def _ref_softmax_grad(dy, x, axis):
    s = _softmax(x, axis)
    d = f64(dy)
    if s.size == 0:
        return s
    with np.errstate(all="ignore"):
        return s * (d - np.sum(s * d, axis=axis, keepdims=True))


def _ref_leaky_grad(dy, x, a):
    dy, x, a = np.broadcast_arrays(f64(dy), f64(x), f64(a))
    with np.errstate(all="ignore"):
        return np.where(x > 0, dy, a * dy)


# ---------------------------------------------------------------------------- torch references
def _t_leaky(x, *alpha_t, alpha=None, form="alpha"):
    torch = _torch()
    a = alpha_t[0] if alpha_t else float(alpha)
    return torch.where(x >= 0, x, a * x)


def _t_sigmoid_grad(dy, x):
    s = _torch().sigmoid(x)
    return dy * s * (1 - s)


def _t_relu_grad(dy, x):
    torch = _torch()
    return torch.where(x > 0, dy, torch.zeros((), dtype=dy.dtype))


def _t_softmax_grad(dy, x, axis):
    s = _torch().softmax(x, dim=axis)
    return s * (dy - (s * dy).sum(dim=axis, keepdim=True))


def _t_leaky_grad(dy, x, a):
    torch = _torch()
    return torch.where(x > 0, dy, a * dy)


# ---------------------------------------------------------------------------- samples
def _with_zeros(rng, a, p=0.3):
    """`a` with some entries set to exactly 0 (the kink of the ReLUs)."""
    a = np.array(a)
    if a.size:
        a.reshape(-1)[rng.random(a.size) < p] = 0
    return a


def _unary_samples(lo=-3.0, hi=3.0):
    def gen(rng, dt):
        for k in range(n_samples()):
            # one sample with large magnitudes: sigmoid / tanh saturate without overflow
            big = 40.0 if k == 1 else 1.0
            yield Sample([arr(rng, shape(rng), dt, lo * big, hi * big)])
    return gen


def _relu_samples(rng, dt):
    for k in range(n_samples()):
        x = arr(rng, shape(rng), dt)
        if k % 2:  # exact zeros: reLU(0) = 0, not differentiated there
            yield Sample([_with_zeros(rng, x)], diff=(), desc="zeros")
        else:
            yield Sample([x])


def _softmax_samples(rng, dt):
    for k in range(n_samples() + 1):
        shp = shape(rng, int(rng.integers(1, 5)))
        r = len(shp)
        axis = int(rng.integers(-r, r))
        if k == 0:
            # large logits (a naive exp overflows) with some -inf (exp = 0), forward only
            x = arr(rng, shp, dt, -80, 80)
            if x.size:
                x.reshape(-1)[rng.random(x.size) < 0.2] = -np.inf
            yield Sample([x], {"axis": axis}, diff=(), desc="large and -inf logits")
        else:
            yield Sample([arr(rng, shp, dt)], {"axis": axis})
    yield Sample([_inf_rows(rng, dt)], {"axis": 1}, diff=(), desc="rows of -inf / with +inf")


def _inf_rows(rng, dt):
    """Rows that are NaN wholly: all -inf (0 / 0) and one with a +inf (inf - inf); the
    others ordinary, one with a single -inf."""
    x = arr(rng, (4, 3), dt)
    x[1] = -np.inf
    x[2, 1] = np.inf
    x[3, 0] = -np.inf
    return x


_ALPHAS = (0.2, 0, -0.5, 1.5, 0.01)  # (an int too: Swift converts it to Double)


def _leaky_samples(rng, dt):
    for k in range(n_samples() + 2):
        form = ("alpha", "alphaTensor", "alpha", "positional")[k % 4]
        if form == "alpha":
            x = arr(rng, shape(rng), dt)
            # every listed alpha over the three dtypes, then random ones
            alpha = (_ALPHAS[(k // 2 + 3 * FLOAT.index(dt)) % len(_ALPHAS)] if k < 6
                     else float(rng.uniform(-1, 2)))
            yield Sample([x], {"alpha": alpha, "form": form}, diff=(0,))
        else:
            sx, sa = broadcast_shapes(rng, 2)
            yield Sample([arr(rng, sx, dt), arr(rng, sa, dt, -1, 2)], {"form": form},
                         diff=(0, 1))


def _build_leaky(g, x, *alpha_t, alpha=None, form="alpha"):
    if form == "alpha":
        return g.leakyReLU(x, alpha)
    if form == "alphaTensor":
        return g.leakyReLU(x, alphaTensor=alpha_t[0])
    return g.leakyReLU(x, alpha_t[0])


def _grad2_samples(rng, dt):
    for _ in range(n_samples()):
        s1, s2 = broadcast_shapes(rng, 2)
        yield Sample([arr(rng, s1, dt), arr(rng, s2, dt)])


def _relu_grad_samples(rng, dt):
    for k in range(n_samples()):
        s1, s2 = broadcast_shapes(rng, 2)
        dy, x = arr(rng, s1, dt), arr(rng, s2, dt)
        if k % 2:  # exact zeros in x: reLUGradient is 0 there; the reference jumps in x
            yield Sample([dy, _with_zeros(rng, x)], diff=(0,), desc="zeros in x")
        else:
            yield Sample([dy, x], diff=(0, 1))


def _softmax_grad_samples(rng, dt):
    for _ in range(n_samples()):
        shp = shape(rng, int(rng.integers(1, 5)))
        r = len(shp)
        yield Sample([arr(rng, shp, dt), arr(rng, shp, dt)], {"axis": int(rng.integers(-r, r))})
    yield Sample([arr(rng, (4, 3), dt), _inf_rows(rng, dt)], {"axis": -1}, diff=(),
                 desc="rows of -inf / with +inf")


def _leaky_grad_samples(rng, dt):
    for k in range(n_samples()):
        s1, s2, s3 = broadcast_shapes(rng, 3)
        dy, x, a = arr(rng, s1, dt), arr(rng, s2, dt), arr(rng, s3, dt, -1, 2)
        if k % 2:  # exact zeros in x: alpha * dy there (leakyReLU's gradient at 0)
            yield Sample([dy, _with_zeros(rng, x), a], diff=(0, 2), desc="zeros in x")
        else:
            yield Sample([dy, x, a], diff=(0, 1, 2))


# ---------------------------------------------------------------------------- errors
def _unary_errors(rng):
    mg = _mg()
    yield ErrorInput(Sample([np.ones((2, 3), np.int32)]), mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([np.ones((2,), bool)]), mg.DataTypeError, "tensor")


def _softmax_errors(rng):
    mg = _mg()
    yield ErrorInput(Sample([np.ones((2, 3), np.int32)], {"axis": 0}), mg.DataTypeError,
                     "tensor")
    yield ErrorInput(Sample([np.ones((2, 3), np.float32)], {"axis": 2}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([np.ones((2, 3), np.float32)], {"axis": -3}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([np.ones((), np.float32)], {"axis": 0}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([np.ones((2, 3), np.float32)], {"axis": 1.0}), mg.GraphError,
                     "axis")
    yield ErrorInput(Sample([np.ones((2, 3), np.float32)], {"axis": True}), mg.GraphError,
                     "axis")


def _leaky_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([np.ones((2, 3), np.int32)], {"alpha": 0.1}), mg.DataTypeError,
                     "tensor")
    yield ErrorInput(Sample([f], {"alpha": "0.1"}), mg.GraphError, "alpha")
    yield ErrorInput(Sample([f], {"alpha": float("inf")}), mg.GraphError, "alpha")
    yield ErrorInput(Sample([f], {"alpha": float("nan")}), mg.GraphError, "alpha")
    yield ErrorInput(Sample([f], {"alpha": True}), mg.GraphError, "alpha")
    yield ErrorInput(Sample([f, np.ones((3,), np.float16)], {"form": "alphaTensor"}),
                     mg.DataTypeError, "alphaTensor")
    yield ErrorInput(Sample([f, np.ones((4,), np.float32)], {"form": "positional"}),
                     mg.ShapeError, "alphaTensor")
    yield ErrorInput(Sample([f, np.ones((3,), np.float32)], {"form": "both"}), mg.GraphError,
                     "alphaTensor")


def _build_leaky_err(g, x, *alpha_t, alpha=None, form="alpha"):
    if form == "both":
        return g.leakyReLU(x, 0.1, alphaTensor=alpha_t[0])
    return _build_leaky(g, x, *alpha_t, alpha=alpha, form=form)


def _grad2_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([f, np.ones((2, 3), np.float16)]), mg.DataTypeError, "sourceTensor")
    yield ErrorInput(Sample([np.ones((2, 3), np.int32), np.ones((2, 3), np.int32)]),
                     mg.DataTypeError, "incomingGradient")
    yield ErrorInput(Sample([f, np.ones((4,), np.float32)]), mg.ShapeError, "sourceTensor")


def _softmax_grad_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([f, np.ones((2, 3), np.float16)], {"axis": 0}), mg.DataTypeError,
                     "sourceTensor")
    # no broadcasting: incomingGradient must have sourceTensor's shape
    yield ErrorInput(Sample([np.ones((1, 3), np.float32), f], {"axis": 0}), mg.ShapeError,
                     "incomingGradient")
    yield ErrorInput(Sample([np.ones((3,), np.float32), f], {"axis": 0}), mg.ShapeError,
                     "incomingGradient")
    yield ErrorInput(Sample([f, f], {"axis": 2}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f, f], {"axis": "0"}), mg.GraphError, "axis")


def _leaky_grad_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([f, f, np.ones((), np.float16)]), mg.DataTypeError, "alphaTensor")
    yield ErrorInput(Sample([f, np.ones((2, 3), np.float16), f]), mg.DataTypeError,
                     "sourceTensor")
    yield ErrorInput(Sample([f, f, np.ones((2,), np.float32)]), mg.ShapeError, "alphaTensor")


# ---------------------------------------------------------------------------- the table
# name, reference, torch reference, sample domain
_UNARY = (
    ("sigmoid", _sigmoid, lambda x: _torch().sigmoid(x)),
    ("tanh", _ref_unary(np.tanh), lambda x: _torch().tanh(x)),
)
for _name, _ref, _tref in _UNARY:
    add(OpInfo(_name, build=(lambda n: lambda g, x: getattr(g, n)(x))(_name), ref=_ref,
               samples=_unary_samples(), dtypes=FLOAT, differentiable=(0,), torch_ref=_tref,
               errors=_unary_errors))

add(OpInfo("reLU", build=lambda g, x: g.reLU(x), ref=_ref_unary(_relu), samples=_relu_samples,
           dtypes=FLOAT, differentiable=(0,), torch_ref=lambda x: _torch().relu(x),
           errors=_unary_errors))

add(OpInfo("softMax", build=lambda g, x, axis: g.softMax(x, axis),
           ref=lambda x, axis: _softmax(x, axis), samples=_softmax_samples, dtypes=FLOAT,
           differentiable=(0,), torch_ref=lambda x, axis: _torch().softmax(x, dim=axis),
           errors=_softmax_errors))

add(OpInfo("leakyReLU", build=_build_leaky_err, ref=_ref_leaky, samples=_leaky_samples,
           dtypes=FLOAT, differentiable=(0, 1), torch_ref=_t_leaky, errors=_leaky_errors))

add(OpInfo("sigmoidGradient", build=lambda g, dy, x: g.sigmoidGradient(dy, x),
           ref=_ref_sigmoid_grad, samples=_grad2_samples, dtypes=FLOAT, differentiable=(0, 1),
           torch_ref=_t_sigmoid_grad, errors=_grad2_errors))

add(OpInfo("reLUGradient", build=lambda g, dy, x: g.reLUGradient(dy, x), ref=_ref_relu_grad,
           samples=_relu_grad_samples, dtypes=FLOAT, differentiable=(0, 1),
           torch_ref=_t_relu_grad, errors=_grad2_errors))

add(OpInfo("softMaxGradient", build=lambda g, dy, x, axis: g.softMaxGradient(dy, x, axis),
           ref=_ref_softmax_grad, samples=_softmax_grad_samples, dtypes=FLOAT,
           differentiable=(0, 1), torch_ref=_t_softmax_grad, errors=_softmax_grad_errors))

add(OpInfo("leakyReLUGradient",
           build=lambda g, dy, x, a: g.leakyReLUGradient(dy, x, a), ref=_ref_leaky_grad,
           samples=_leaky_grad_samples, dtypes=FLOAT, differentiable=(0, 1, 2),
           torch_ref=_t_leaky_grad, errors=_leaky_grad_errors))
