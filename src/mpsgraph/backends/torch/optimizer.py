"""torch kernels of the optimizer family (semantics: backends/numpy/optimizer.py; formulas in
ops/optimizer.py). Every operand is computed in float32 and each result is rounded once."""

from __future__ import annotations

import torch

from ...ops.optimizer import AdamAttrs, adam_step
from . import kernel
from .arithmetic import F32


def _f(a: torch.Tensor) -> torch.Tensor:
    return a.to(F32)


def _out(y: torch.Tensor, shape, dtype: torch.dtype) -> torch.Tensor:
    return torch.broadcast_to(y, tuple(shape)).to(dtype, copy=True)


def _sgd(lr, values, g) -> torch.Tensor:
    return _out(_f(values) - _f(lr) * _f(g), values.shape, values.dtype)


@kernel("stochasticGradientDescent")
def stochasticGradientDescent(lr, values, g, attrs: None) -> torch.Tensor:
    return _sgd(lr, values, g)


@kernel("applyStochasticGradientDescent")
def applyStochasticGradientDescent(lr, variable, g, attrs: None) -> torch.Tensor:
    return _sgd(lr, variable, g)


@kernel("adam")
def adam(lr, current_lr, beta1, beta2, epsilon, beta1_power, beta2_power, values, m, v, vmax,
         g, a: AdamAttrs) -> tuple[torch.Tensor, ...]:
    res = adam_step(torch.sqrt, torch.maximum, a, *(
        None if t is None else _f(t) for t in (lr, current_lr, beta1, beta2, epsilon,
                                                 beta1_power, beta2_power, values, m, v, vmax,
                                                 g)))
    n = 4 if a.amsgrad else 3
    return tuple(_out(r, values.shape, values.dtype) for r in res[:n])
