"""NumPy kernels of the normalization family (ops/normalization.py has the formulas). Half
types compute in float32 and round once; reductions keep the reduced axes (size 1);
`a.axes` are normalised (sorted, unique, non-negative) and `a.count` is N."""

from __future__ import annotations

import numpy as np

from . import kernel
from .arithmetic import finish, work


def _mean(x: np.ndarray, axes, n: int) -> np.ndarray:
    s = np.sum(x, axis=axes, keepdims=True, dtype=x.dtype)
    return s / np.asarray(n if n else np.nan, x.dtype)


def _rstd(v: np.ndarray, eps: float) -> np.ndarray:
    return np.asarray(1.0, v.dtype) / np.sqrt(v + np.asarray(eps, v.dtype))


@kernel("variance")
def variance(x, mean, a):
    xw = work(x)
    with np.errstate(all="ignore"):
        m = _mean(xw, a.axes, a.count) if mean is None else work(mean)
        d = xw - m
        return finish(_mean(d * d, a.axes, a.count), x.dtype)


@kernel("varianceMean")
def varianceMean(x, attrs):
    """(mean, variance) of x over the axes: the plan's fused step of a reductionMean and a
    variance of one x (runtime/plan_fusion.py; attrs = (the variance's attrs, whether it was
    given the mean)); the mean computed once (twice for a half type whose variance was not
    given it: the variance then uses the unrounded mean), the numbers those of the two
    kernels."""
    from .reduction import mean

    a, given = attrs
    m = mean(x, a.axes)
    return m, variance(x, m if given or work(x) is x else None, a)


@kernel("normalize")
def normalize(x, mean, var, gamma, beta, eps):
    with np.errstate(all="ignore"):
        y = (work(x) - work(mean)) * _rstd(work(var), eps)
        if gamma is not None:
            y = y * work(gamma)
        if beta is not None:
            y = y + work(beta)
        return finish(np.array(y), x.dtype)


@kernel("normalizationGammaGradient")
def normalizationGammaGradient(dy, x, mean, var, a):
    with np.errstate(all="ignore"):
        t = work(dy) * ((work(x) - work(mean)) * _rstd(work(var), a.epsilon))
        return finish(np.sum(t, axis=a.axes, keepdims=True, dtype=t.dtype), dy.dtype)


@kernel("normalizationBetaGradient")
def normalizationBetaGradient(dy, x, a):
    d = work(dy)
    return finish(np.sum(d, axis=a.axes, keepdims=True, dtype=d.dtype), dy.dtype)


@kernel("normalizationGradient")
def normalizationGradient(dy, x, mean, var, gamma, gamma_grad, beta_grad, a):
    xw = work(x)
    n = a.count
    with np.errstate(all="ignore"):
        r = _rstd(work(var), a.epsilon)
        xhat = (xw - work(mean)) * r
        d = np.broadcast_to(work(dy), xw.shape)
        g = np.asarray(1.0, xw.dtype) if gamma is None else work(gamma)
        if gamma_grad is None and beta_grad is None:
            dyg = d * g
            dx = r * (dyg - _mean(dyg, a.axes, n) - xhat * _mean(dyg * xhat, a.axes, n))
        else:  # Apple's form, with the sums given (a missing one computed)
            bg = (np.sum(d, axis=a.axes, keepdims=True, dtype=d.dtype) if beta_grad is None
                  else work(beta_grad))
            gg = (np.sum(d * xhat, axis=a.axes, keepdims=True, dtype=d.dtype)
                  if gamma_grad is None else work(gamma_grad))
            inv_n = np.asarray(1.0 / n if n else np.nan, xw.dtype)
            dx = g * r * (d - bg * inv_n - xhat * (gg * inv_n))
        return finish(np.array(np.broadcast_to(dx, xw.shape)), x.dtype)


@kernel("normalizationGradients")
def normalizationGradients(dy, x, mean, var, gamma, a):
    """[dx, dgamma, dbeta] of the fused rule (ops/normalization.py)."""
    dyx = np.broadcast_to(dy, x.shape)
    return (normalizationGradient(dy, x, mean, var, gamma, None, None, a),
            normalizationGammaGradient(dyx, x, mean, var, a),
            normalizationBetaGradient(dyx, x, a))
