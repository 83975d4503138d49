"""NumPy kernels of the optimizer family (formulas in ops/optimizer.py). float16 / bFloat16
are computed in float32 and each result is rounded once."""

from __future__ import annotations

import numpy as np

from ...ops.optimizer import AdamAttrs
from . import kernel

_F32 = np.dtype(np.float32)


def _f(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.asarray(a, dtype=_F32)


def _out(y: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    out = np.empty(shape, dtype)
    np.copyto(out, np.broadcast_to(y, shape), casting="unsafe")
    return out


def _sgd(lr: np.ndarray, values: np.ndarray, g: np.ndarray) -> np.ndarray:
    return _out(_f(values) - _f(lr) * _f(g), values.shape, values.dtype)


@kernel("stochasticGradientDescent")
def stochasticGradientDescent(lr, values, g, attrs: None) -> np.ndarray:
    return _sgd(lr, values, g)


@kernel("applyStochasticGradientDescent")
def applyStochasticGradientDescent(lr, variable, g, attrs: None) -> np.ndarray:
    return _sgd(lr, variable, g)


@kernel("adam")
def adam(lr, current_lr, beta1, beta2, epsilon, beta1_power, beta2_power, values, m, v, vmax,
         g, a: AdamAttrs) -> tuple[np.ndarray, ...]:
    b1, b2, eps, gr = _f(beta1), _f(beta2), _f(epsilon), _f(g)
    m_t = b1 * _f(m) + (1 - b1) * gr
    v_t = b2 * _f(v) + (1 - b2) * gr * gr
    if a.bias_correction:
        with np.errstate(divide="ignore", invalid="ignore"):
            lr_t = _f(lr) * np.sqrt(1 - _f(beta2_power)) / (1 - _f(beta1_power))
    else:
        lr_t = _f(current_lr)
    vmax_t = np.maximum(_f(vmax), v_t) if a.amsgrad else None
    denom = np.sqrt(vmax_t if a.amsgrad else v_t) + eps
    new_values = _f(values) - lr_t * m_t / denom
    shape, dt = values.shape, values.dtype
    outs = [_out(new_values, shape, dt), _out(m_t, shape, dt), _out(v_t, shape, dt)]
    if a.amsgrad:
        outs.append(_out(vmax_t, shape, dt))
    return tuple(outs)
