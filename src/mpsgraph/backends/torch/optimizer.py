"""torch kernels of the optimizer family (semantics: backends/numpy/optimizer.py; formulas in
ops/optimizer.py). Every operand is computed in float32 and each result is rounded once."""

from __future__ import annotations

import torch

from ...ops.optimizer import AdamAttrs
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
    b1, b2, eps, gr = _f(beta1), _f(beta2), _f(epsilon), _f(g)
    m_t = b1 * _f(m) + (1 - b1) * gr
    v_t = b2 * _f(v) + (1 - b2) * gr * gr
    if a.bias_correction:
        lr_t = _f(lr) * torch.sqrt(1 - _f(beta2_power)) / (1 - _f(beta1_power))
    else:
        lr_t = _f(current_lr)
    vmax_t = torch.maximum(_f(vmax), v_t) if a.amsgrad else None
    denom = torch.sqrt(vmax_t if a.amsgrad else v_t) + eps
    new_values = _f(values) - lr_t * m_t / denom
    shape, dt = values.shape, values.dtype
    outs = [_out(new_values, shape, dt), _out(m_t, shape, dt), _out(v_t, shape, dt)]
    if a.amsgrad:
        outs.append(_out(vmax_t, shape, dt))
    return tuple(outs)
