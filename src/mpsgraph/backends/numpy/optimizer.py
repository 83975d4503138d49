"""NumPy kernels of the optimizer family (formulas in ops/optimizer.py). float16 / bFloat16
are computed in float32 and each result is rounded once."""

from __future__ import annotations

import numpy as np

from ...ops.optimizer import AdamAttrs, adam_step
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
    with np.errstate(divide="ignore", invalid="ignore"):  # beta powers of 1: inf/NaN
        res = adam_step(np.sqrt, np.maximum, a, *(
            None if t is None else _f(t) for t in (lr, current_lr, beta1, beta2, epsilon,
                                                     beta1_power, beta2_power, values, m, v, vmax,
                                                     g)))
    n = 4 if a.amsgrad else 3
    return tuple(_out(r, values.shape, values.dtype) for r in res[:n])
