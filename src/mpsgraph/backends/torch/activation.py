"""torch kernels of the activation family (semantics: backends/numpy/activation.py; float32
math, half types rounded once).

    softMax   m = max(x, axis); e = exp(x - m); e / sum(e, axis)   (a row with +inf, NaN
              or only -inf is NaN)
"""

from __future__ import annotations

import torch

from . import kernel
from .arithmetic import F32, finish, work


def _softmax(x: torch.Tensor, axis: int) -> torch.Tensor:
    if x.numel() == 0:
        return x.clone()
    m = torch.amax(x, dim=axis, keepdim=True)  # not finite: the row is NaN (see NumPy's)
    e = torch.exp(x - m)
    return e / torch.sum(e, dim=axis, keepdim=True)


@kernel("sigmoid")
def sigmoid(x: torch.Tensor, attrs: None) -> torch.Tensor:
    """exp(x) / (1 + exp(x)) for x < 0 (as the NumPy kernel), so that tiny results keep their
    value instead of 1 / (1 + inf) = 0."""
    v = work(x)
    e = torch.exp(-v.abs())
    return finish(torch.where(v >= 0, 1 / (1 + e), e / (1 + e)), x.dtype)


@kernel("tanh")
def tanh(x: torch.Tensor, attrs: None) -> torch.Tensor:
    return finish(torch.tanh(work(x)), x.dtype)


@kernel("reLU")
def reLU(x: torch.Tensor, attrs: None) -> torch.Tensor:
    # NaN stays NaN (clamp propagates it)
    return finish(torch.clamp_min(work(x), 0.0), x.dtype)


@kernel("softMax")
def softMax(x: torch.Tensor, axis: int) -> torch.Tensor:
    return finish(_softmax(work(x), axis), x.dtype)


@kernel("leakyReLU")
def leakyReLU(x: torch.Tensor, alphaTensor: torch.Tensor | None, alpha: float | None
              ) -> torch.Tensor:
    xw = work(x)
    if alphaTensor is None:
        a = torch.full((), alpha, dtype=F32, device=x.device)
    else:
        a = work(alphaTensor)
    return finish(torch.where(xw >= 0, xw, a * xw), x.dtype)


@kernel("sigmoidGradient")
def sigmoidGradient(dy: torch.Tensor, x: torch.Tensor, attrs: None) -> torch.Tensor:
    s = torch.sigmoid(work(x))
    return finish(work(dy) * (s * (1 - s)), dy.dtype)


@kernel("reLUGradient")
def reLUGradient(dy: torch.Tensor, x: torch.Tensor, attrs: None) -> torch.Tensor:
    zero = torch.zeros((), dtype=dy.dtype, device=dy.device)
    return torch.where(work(x) > 0, dy, zero)


@kernel("softMaxGradient")
def softMaxGradient(dy: torch.Tensor, x: torch.Tensor, axis: int) -> torch.Tensor:
    s = _softmax(work(x), axis)
    d = work(dy)
    return finish(s * (d - torch.sum(s * d, dim=axis, keepdim=True)), dy.dtype)


@kernel("leakyReLUGradient")
def leakyReLUGradient(dy: torch.Tensor, x: torch.Tensor, alpha: torch.Tensor,
                      attrs: None) -> torch.Tensor:
    d = work(dy)
    return finish(torch.where(work(x) > 0, d, work(alpha) * d), dy.dtype)
