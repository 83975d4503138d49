"""Entries of the normalization family (ops/normalization.py): variance (with and without a
given mean), normalize (plus its batch-statistics form: normalize(x, mean(x), variance(x)),
whose gradient is the fused rule), normalizationGammaGradient, normalizationBetaGradient and
normalizationGradient. (`mean(of:axes:)` is reductionMean's entry.)

References are float64 NumPy from the definitions (A the reduced axes, N their element count,
results keep the rank with the reduced axes of size 1; N = 0 gives NaN):

    variance(x, A)       = sum_A((x - sum_A(x) / N)^2) / N
    variance(x, m, A)    = sum_A((x - m)^2) / N
    normalize            = (x - m) / sqrt(v + e) * g + b      (broadcast; g / b absent: 1 / 0)
    gammaGradient        = sum_A(dy (x - m) / sqrt(v + e)),   betaGradient = sum_A(dy)
    normalizationGradient: r = 1 / sqrt(v + e), xhat = (x - m) r, dyg = dy g,
        no gg / bg:  r (dyg - sum_A(dyg) / N - xhat sum_A(dyg xhat) / N)
        gg or bg:    g r (dy - bg / N - xhat gg / N)  (a missing one: sum_A(dy), sum_A(dy xhat))
"""

from __future__ import annotations

import numpy as np

from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples, shape

from ._common import cycle
from ._common import mg_module as _mg

_EPS = (1e-5, 1e-3, 0.1)


def _red(shp, axes):
    r = len(shp)
    if axes is None:
        return tuple(range(r))
    return tuple(sorted({a % r for a in axes}))


def _kept(shp, axes):
    ax = _red(shp, axes)
    return tuple(1 if i in ax else d for i, d in enumerate(shp))


def _axes_choice(rng, rank, k, pick):
    """axes of a sample: None, [], every axis, or a random subset (some negative, one
    repeated now and then)."""
    form = pick(k, "axes", ("none", "subset", "all", "empty"))
    if form == "none" or rank == 0 and form != "empty":
        return None
    if form == "empty":
        return []
    if form == "all":
        return [int(a) - (rank if rng.random() < 0.3 else 0) for a in range(rank)]
    sub = [int(a) for a in range(rank) if rng.random() < 0.5] or [int(rng.integers(rank))]
    sub = [a - rank if rng.random() < 0.3 else a for a in sub]
    if rng.random() < 0.2:
        sub.append(sub[0])
    return sub


def _nsum(a, axes):
    return np.sum(a, axis=axes, keepdims=True)


def _nmean(a, axes):
    n = int(np.prod([a.shape[i] for i in axes]))
    with np.errstate(all="ignore"):
        return _nsum(a, axes) / (n if n else np.nan)


def _count(shp, axes):
    return int(np.prod([shp[i] for i in axes]))


# ---------------------------------------------------------------------------- variance
def _build_variance(g, x, m=None, *, axes):
    return g.variance(x, mean=m, axes=axes)


def _ref_variance(x, m=None, *, axes):
    x = f64(x)
    ax = _red(x.shape, axes)
    c = _nmean(x, ax) if m is None else f64(m)
    with np.errstate(all="ignore"):
        return _nmean((x - c) ** 2, ax)


def _torch_variance(x, m=None, *, axes):
    ax = _red(tuple(x.shape), axes)
    if not ax:
        c = x if m is None else m
        return (x - c) ** 2
    n = _count(tuple(x.shape), ax)
    c = x.sum(dim=ax, keepdim=True) / n if m is None else m
    return ((x - c) ** 2).sum(dim=ax, keepdim=True) / n


def _variance_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        shp = shape(rng)
        axes = _axes_choice(rng, len(shp), k, pick)
        x = arr(rng, shp, dt)
        ins = [x]
        if pick(k, "mean", (False, True)):
            kept = _kept(shp, axes)
            drop = int(rng.integers(0, len(kept) + 1)) if rng.random() < 0.3 else 0
            ins.append(arr(rng, kept[drop:], dt, -1, 1))
        n = _count(shp, _red(shp, axes))
        yield Sample(ins, {"axes": axes}, diff=tuple(range(len(ins))) if n and x.size else ())


def _variance_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([np.ones((2, 3), np.int32)], {"axes": [0]}), mg.DataTypeError,
                     "tensor")
    yield ErrorInput(Sample([f, np.ones((1, 3), np.float16)], {"axes": [0]}),
                     mg.DataTypeError, "mean")
    yield ErrorInput(Sample([f, np.ones((4, 3), np.float32)], {"axes": [0]}), mg.ShapeError,
                     "mean")
    yield ErrorInput(Sample([f], {"axes": [2]}), mg.ShapeError, "axes")
    yield ErrorInput(Sample([f], {"axes": [-3]}), mg.ShapeError, "axes")
    yield ErrorInput(Sample([f], {"axes": "0"}), mg.GraphError, "axes")


add(OpInfo("variance", build=_build_variance, ref=_ref_variance, samples=_variance_samples,
           dtypes=FLOAT, differentiable=(0, 1), torch_ref=_torch_variance,
           errors=_variance_errors, tol={DT.float32: (5e-5, 1e-6)}))


# ---------------------------------------------------------------------------- normalize
def _build_normalize(g, x, *rest, form, eps, axes=None, has_gamma=False, has_beta=False,
                     vmean=False):
    rest = list(rest)
    if form == "batch":  # the batch-norm training pattern: statistics of x itself
        m = g.mean(x, axes)
        v = g.variance(x, mean=m if vmean else None, axes=axes)
    else:
        m, v = rest.pop(0), rest.pop(0)
    gamma = rest.pop(0) if has_gamma else None
    beta = rest.pop(0) if has_beta else None
    return g.normalize(x, m, v, gamma=gamma, beta=beta, epsilon=eps)


def _ref_normalize(x, *rest, form, eps, axes=None, has_gamma=False, has_beta=False,
                   vmean=False):
    rest = [f64(a) for a in rest]
    dt, x = np.asarray(x).dtype, f64(x)
    if form == "batch":  # (the mean and variance ops' results are of x's dataType)
        ax = _red(x.shape, axes)
        m = f64(_nmean(x, ax).astype(dt))
        with np.errstate(all="ignore"):
            v = f64(_nmean((x - (m if vmean else _nmean(x, ax))) ** 2, ax).astype(dt))
    else:
        m, v = rest.pop(0), rest.pop(0)
    with np.errstate(all="ignore"):
        y = (x - m) / np.sqrt(v + np.float64(np.float32(eps)))
        if has_gamma:
            y = y * rest.pop(0)
        if has_beta:
            y = y + rest.pop(0)
    return y


def _torch_normalize(x, *rest, form, eps, axes=None, has_gamma=False, has_beta=False,
                     vmean=False):
    import torch

    rest = list(rest)
    eps = float(np.float32(eps))
    if form == "batch":
        ax = _red(tuple(x.shape), axes)
        if ax:
            n = _count(tuple(x.shape), ax)
            m = x.sum(dim=ax, keepdim=True) / n
            v = ((x - m) ** 2).sum(dim=ax, keepdim=True) / n
        else:
            m, v = x, torch.zeros_like(x)
    else:
        m, v = rest.pop(0), rest.pop(0)
    y = (x - m) / torch.sqrt(v + eps)
    if has_gamma:
        y = y * rest.pop(0)
    if has_beta:
        y = y + rest.pop(0)
    return y


def _bshape(rng, out):
    """A shape that broadcasts to `out` (some leading axes dropped, some axes set to 1)."""
    k = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.4 else 0
    return tuple(1 if rng.random() < 0.4 else d for d in out[k:])


def _normalize_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 4):
        form = pick(k, "form", ("plain", "batch", "plain", "batch_nchw"))
        has_gamma = bool(pick(k, "gamma", (True, False, True)))
        has_beta = bool(pick(k, "beta", (True, True, False)))
        eps = pick(k, "eps", _EPS)
        if form == "batch_nchw":  # the batch-norm layout: statistics over N, H, W
            shp = (int(rng.integers(2, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                   int(rng.integers(2, 4)))
            axes = [0, 2, 3] if rng.random() < 0.5 else [0, -2, -1]
            pshape = (shp[1], 1, 1) if rng.random() < 0.5 else (1, shp[1], 1, 1)
            x = arr(rng, shp, dt)
            ins = [x] + [arr(rng, pshape, dt, 0.5, 2) for _ in range(has_gamma + has_beta)]
            yield Sample(ins, {"form": "batch", "eps": eps, "axes": axes,
                               "has_gamma": has_gamma, "has_beta": has_beta,
                               "vmean": bool(rng.random() < 0.5)},
                         diff=tuple(range(len(ins))))
            continue
        shp = shape(rng)
        if form == "batch":
            axes = _axes_choice(rng, len(shp), k, pick)
            ax = _red(shp, axes)
            x = arr(rng, shp, dt)
            # gamma of the statistics' shape (a batch norm's), or varying along the axes
            ps = ([_kept(shp, axes) if rng.random() < 0.6 else shp] if has_gamma else []) + \
                ([_kept(shp, axes)] if has_beta else [])
            ins = [x] + [arr(rng, p, dt, 0.5, 2) for p in ps]
            n = _count(shp, ax)
            # N = 1 or a constant slice: a variance of 0 (finite with epsilon, but float32
            # noise in the differences); N = 0: NaN
            yield Sample(ins, {"form": "batch", "eps": max(eps, 1e-3), "axes": axes,
                               "has_gamma": has_gamma, "has_beta": has_beta,
                               "vmean": bool(rng.random() < 0.5)},
                         diff=tuple(range(len(ins))) if n > 1 and x.size else ())
            continue
        x = arr(rng, shp, dt)
        ins = [x, arr(rng, _bshape(rng, shp), dt, -1, 1), arr(rng, _bshape(rng, shp), dt, 0.2, 3)]
        ins += [arr(rng, _bshape(rng, shp), dt, -2, 2) for _ in range(has_gamma + has_beta)]
        yield Sample(ins, {"form": "plain", "eps": eps, "has_gamma": has_gamma,
                           "has_beta": has_beta}, diff=tuple(range(len(ins))))


def _normalize_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    kw = {"form": "plain", "eps": 1e-5}
    yield ErrorInput(Sample([np.ones((2, 3), np.int32), f, f], kw), mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([f, f, np.ones((2, 3), np.float16)], kw), mg.DataTypeError,
                     "variance")
    yield ErrorInput(Sample([f, np.ones((4,), np.float32), f], kw), mg.ShapeError, "mean")
    yield ErrorInput(Sample([f, f, f, np.ones((5,), np.float32)], {**kw, "has_gamma": True}),
                     mg.ShapeError, "gamma")
    yield ErrorInput(Sample([f, f, f], {**kw, "eps": -1.0}), mg.GraphError, "epsilon")
    yield ErrorInput(Sample([f, f, f], {**kw, "eps": float("nan")}), mg.GraphError, "epsilon")


add(OpInfo("normalize", build=_build_normalize, ref=_ref_normalize,
           samples=_normalize_samples, dtypes=FLOAT, differentiable=(0, 1, 2, 3, 4),
           torch_ref=_torch_normalize, errors=_normalize_errors,
           tol={DT.float32: (5e-5, 2e-5), DT.float16: (4e-3, 4e-3), DT.bFloat16: (3e-2, 3e-2)},
           grad_tol=(3e-4, 1e-5), kinds=("reductionMean", "variance", "normalizationGradients",
                                          "normalizationGradient", "varianceMean")))


# ---------------------------------------------------------------------------- gradient ops
def _stats(rng, shp, axes, dt):
    kept = _kept(shp, axes)
    return arr(rng, kept, dt, -1, 1), arr(rng, kept, dt, 0.2, 3)


def _build_gamma_grad(g, dy, x, m, v, *, axes, eps):
    return g.normalizationGammaGradient(dy, x, m, v, reductionAxes=axes, epsilon=eps)


def _ref_gamma_grad(dy, x, m, v, *, axes, eps):
    dy, x, m, v = map(f64, (dy, x, m, v))
    out = np.broadcast_shapes(dy.shape, x.shape, m.shape, v.shape)
    ax = _red(out, axes)
    t = np.broadcast_to(dy * (x - m) / np.sqrt(v + np.float64(np.float32(eps))), out)
    return _nsum(t, ax)


def _gamma_grad_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        shp = shape(rng)
        axes = _axes_choice(rng, len(shp), k, pick)
        if axes is None:
            axes = list(range(len(shp)))
        m, v = _stats(rng, shp, axes, dt)
        yield Sample([arr(rng, shp, dt), arr(rng, shp, dt), m, v],
                     {"axes": axes, "eps": pick(k, "eps", _EPS)})


def _build_beta_grad(g, dy, x, *, axes):
    return g.normalizationBetaGradient(dy, x, reductionAxes=axes)


def _ref_beta_grad(dy, x, *, axes):
    return _nsum(f64(dy), _red(dy.shape, axes))


def _beta_grad_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        shp = shape(rng)
        axes = _axes_choice(rng, len(shp), k, pick)
        if axes is None:
            axes = list(range(len(shp)))
        yield Sample([arr(rng, shp, dt), arr(rng, shp, dt)], {"axes": axes})


_GRAD_OPT = ("gamma", "gamma_grad", "beta_grad")


def _build_grad(g, dy, x, m, v, *rest, axes, eps, given=()):
    rest = list(rest)
    kw = {}
    for key, arg in zip(_GRAD_OPT, ("gammaTensor", "gammaGradientTensor",
                                    "betaGradientTensor")):
        if key in given:
            kw[arg] = rest.pop(0)
    return g.normalizationGradient(dy, x, m, v, reductionAxes=axes, epsilon=eps, **kw)


def _ref_grad(dy, x, m, v, *rest, axes, eps, given=()):
    dy, x, m, v = map(f64, (dy, x, m, v))
    rest = [f64(a) for a in rest]
    opt = {key: rest.pop(0) if key in given else None for key in _GRAD_OPT}
    ax = _red(x.shape, axes)
    n = _count(x.shape, ax)
    with np.errstate(all="ignore"):
        r = 1.0 / np.sqrt(v + np.float64(np.float32(eps)))
        xhat = (x - m) * r
        d = np.broadcast_to(dy, x.shape)
        g = 1.0 if opt["gamma"] is None else opt["gamma"]
        if opt["gamma_grad"] is None and opt["beta_grad"] is None:
            dyg = d * g
            dx = r * (dyg - _nmean(dyg, ax) - xhat * _nmean(dyg * xhat, ax))
        else:
            bg = _nsum(d, ax) if opt["beta_grad"] is None else opt["beta_grad"]
            gg = _nsum(d * xhat, ax) if opt["gamma_grad"] is None else opt["gamma_grad"]
            inv = 1.0 / n if n else np.nan
            dx = g * r * (d - bg * inv - xhat * gg * inv)
        return np.broadcast_to(dx, x.shape)


def _grad_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        layout = pick(k, "layout", ("random", "nchw"))
        if layout == "nchw":
            shp = (int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4)),
                   int(rng.integers(1, 4)))
            axes = [0, 2, 3]
        else:
            shp = shape(rng)
            axes = _axes_choice(rng, len(shp), k, pick)
            if axes is None:
                axes = list(range(len(shp)))
        given = pick(k, "given", ((), ("gamma",), ("gamma", "gamma_grad", "beta_grad"),
                                  ("gamma_grad",), ("beta_grad",)))
        x = arr(rng, shp, dt)
        m, v = _stats(rng, shp, axes, dt)
        kept = _kept(shp, axes)
        ins = [arr(rng, shp, dt), x, m, v]
        for key in _GRAD_OPT:
            if key in given:
                ins.append(arr(rng, kept, dt, 0.5, 2) if key == "gamma" else
                           arr(rng, kept, dt, -3, 3))
        yield Sample(ins, {"axes": axes, "eps": pick(k, "eps", _EPS), "given": given})


def _grad_op_errors(kind):
    def gen(rng):
        mg = _mg()
        f = np.ones((2, 3), np.float32)
        s = np.ones((1, 3), np.float32)
        if kind == "beta":
            yield ErrorInput(Sample([np.ones((2, 3), np.int32), f], {"axes": [0]}),
                             mg.DataTypeError, "incomingGradient")
            yield ErrorInput(Sample([f, f], {"axes": [3]}), mg.ShapeError, "reductionAxes")
            yield ErrorInput(Sample([np.ones((4, 3), np.float32), f], {"axes": [0]}),
                             mg.ShapeError, "incomingGradient")
            return
        base = {"axes": [0], "eps": 1e-5}
        yield ErrorInput(Sample([f, f, s, np.ones((1, 3), np.float16)], base),
                         mg.DataTypeError, "varianceTensor")
        yield ErrorInput(Sample([f, f, s, s], {**base, "axes": [-3]}), mg.ShapeError,
                         "reductionAxes")
        yield ErrorInput(Sample([f, f, s, s], {**base, "eps": -0.5}), mg.GraphError,
                         "epsilon")
        yield ErrorInput(Sample([f, f, np.ones((5,), np.float32), s], base), mg.ShapeError,
                         "mean")
        if kind == "dx":
            yield ErrorInput(Sample([f, f, s, s, np.ones((3, 3), np.float32)],
                                    {**base, "given": ("gamma",)}), mg.ShapeError,
                             "gammaTensor")
    return gen


add(OpInfo("normalizationGammaGradient", build=_build_gamma_grad, ref=_ref_gamma_grad,
           samples=_gamma_grad_samples, dtypes=FLOAT, errors=_grad_op_errors("gamma"),
           tol={DT.float32: (5e-5, 1e-5)}))
add(OpInfo("normalizationBetaGradient", build=_build_beta_grad, ref=_ref_beta_grad,
           samples=_beta_grad_samples, dtypes=FLOAT, errors=_grad_op_errors("beta")))
add(OpInfo("normalizationGradient", build=_build_grad, ref=_ref_grad, samples=_grad_samples,
           dtypes=FLOAT, errors=_grad_op_errors("dx"),
           tol={DT.float32: (1e-4, 2e-5), DT.float16: (4e-3, 4e-3), DT.bFloat16: (3e-2, 3e-2)}))


# ---------------------------------------------------------------------------- the fused op
def _build_fused(g, dy, x, m, v, *rest, axes, eps, given=()):
    from mpsgraph.ops.normalization import NormAttrs

    gamma = rest[0] if "gamma" in given else None
    return g._add("normalizationGradients", [
        ("incomingGradient", dy), ("sourceTensor", x), ("mean", m), ("varianceTensor", v),
        ("gammaTensor", gamma)], NormAttrs(tuple(axes), eps, "reductionAxes"), None,
        optional=("gammaTensor",))


def _ref_fused(dy, x, m, v, *rest, axes, eps, given=()):
    dx = _ref_grad(dy, x, m, v, *rest, axes=axes, eps=eps, given=given)
    return [dx, _ref_gamma_grad(np.broadcast_to(dy, x.shape), x, m, v, axes=axes, eps=eps),
            _ref_beta_grad(np.broadcast_to(dy, x.shape), x, axes=axes)]


def _fused_samples(rng, dt):
    for s in _grad_samples(rng, dt):
        if s.kwargs["given"] in ((), ("gamma",)):
            yield s


def _fused_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    s = np.ones((1, 3), np.float32)
    base = {"axes": [0], "eps": 1e-5}
    yield ErrorInput(Sample([f, f, s, np.ones((1, 3), np.float16)], base), mg.DataTypeError,
                     "varianceTensor")
    yield ErrorInput(Sample([f, f, np.ones((5,), np.float32), s], base), mg.ShapeError, "mean")
    yield ErrorInput(Sample([f, f, s, s], {**base, "axes": [2]}), mg.ShapeError,
                     "reductionAxes")


add(OpInfo("normalizationGradients", build=_build_fused, ref=_ref_fused,
           samples=_fused_samples, dtypes=FLOAT, errors=_fused_errors,
           tol={DT.float32: (1e-4, 2e-5), DT.float16: (4e-3, 4e-3), DT.bFloat16: (3e-2, 3e-2)},
           notes="internal: [dx, dgamma, dbeta] of normalize's fused batch-statistics rule"))
