"""torch kernels of the loss family (semantics: backends/numpy/loss.py): softmax cross-entropy
and its gradients, oneHot. The log-softmax is computed stably in float32:
z = x - max_axis(x), logp = z - log(sum_axis(exp(z))); results are rounded once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

from ...ops.loss import OneHotAttrs, SoftMaxCEAttrs
from ...types import LossReductionType
from . import kernel
from .arithmetic import F32, finish, torch_dtype, where


def _log_softmax(x: torch.Tensor, axis: int) -> torch.Tensor:
    x = x.to(F32)
    if x.numel() == 0:
        return x.clone()
    z = x - torch.amax(x, dim=axis, keepdim=True)
    return z - torch.log(torch.sum(torch.exp(z), dim=axis, keepdim=True))


def _count(shape, axis: int) -> int:
    """Number of loss terms: every position other than the softmax axis (the size of the
    `none` loss; not numel // C, which is 0 for an empty softmax axis C = 0)."""
    n = 1
    for i, s in enumerate(shape):
        if i != axis:
            n *= s
    return n


def _scaled_gradient(g: torch.Tensor, x_shape, a: SoftMaxCEAttrs) -> torch.Tensor:
    """The incoming gradient broadcast to the source's shape, divided by the term count for
    mean."""
    g = torch.broadcast_to(g.to(F32), a.out_shape)
    if a.reduction == LossReductionType.mean:
        g = g / torch.full((), float(_count(x_shape, a.axis)), dtype=F32, device=g.device)
    return torch.broadcast_to(g, tuple(x_shape))


@kernel("softMaxCrossEntropy")
def softMaxCrossEntropy(x: torch.Tensor, labels: torch.Tensor, a: SoftMaxCEAttrs
                        ) -> torch.Tensor:
    logp = _log_softmax(x, a.axis)
    lab = torch.broadcast_to(labels.to(F32), x.shape)
    terms = torch.where(lab != 0, lab * logp, torch.zeros((), dtype=F32, device=x.device))
    loss = -torch.sum(terms, dim=a.axis, keepdim=True)
    if a.reduction != LossReductionType.none:
        total = torch.sum(loss)
        if a.reduction == LossReductionType.mean:
            total = total / torch.full((), float(_count(x.shape, a.axis)), dtype=F32,
                                         device=x.device)
        loss = torch.broadcast_to(total, a.out_shape).clone()
    return finish(loss, x.dtype)


@kernel("softMaxCrossEntropyGradient")
def softMaxCrossEntropyGradient(g: torch.Tensor, x: torch.Tensor, labels: torch.Tensor,
                                a: SoftMaxCEAttrs) -> torch.Tensor:
    p = torch.exp(_log_softmax(x, a.axis))
    lab = torch.broadcast_to(labels.to(F32), x.shape)
    total = torch.sum(lab, dim=a.axis, keepdim=True)
    dx = (p * total - lab) * _scaled_gradient(g, x.shape, a)
    return finish(dx, x.dtype)


@kernel("softMaxCrossEntropyLabelsGradient")
def softMaxCrossEntropyLabelsGradient(g: torch.Tensor, x: torch.Tensor, labels: torch.Tensor,
                                      a: SoftMaxCEAttrs) -> torch.Tensor:
    dl = -_log_softmax(x, a.axis) * _scaled_gradient(g, x.shape, a)
    # sum over the axes along which the labels were broadcast to the source's shape
    shape = tuple(labels.shape)
    lead = dl.dim() - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and dl.shape[lead + i] != 1)
    if axes:
        dl = torch.sum(dl, dim=axes).reshape(shape)
    return finish(dl.contiguous(), labels.dtype)


@kernel("oneHot")
def oneHot(indices: torch.Tensor, a: OneHotAttrs) -> torch.Tensor:
    r = indices.dim() + 1
    dt = torch_dtype(a.dataType.numpy_dtype)
    k = torch.arange(a.depth, device=indices.device).reshape(
        [a.depth if i == a.axis else 1 for i in range(r)])
    idx = indices.unsqueeze(a.axis)
    if idx.dtype.is_floating_point:
        eq = idx == k.to(idx.dtype)
    else:  # compare in int64 (torch lacks uint16/32/64 comparisons)
        eq = idx.to(torch.int64) == k
    on = _scalar(a.onValue, dt, indices.device)
    off = _scalar(a.offValue, dt, indices.device)
    return where(eq, on, off)


def _scalar(v, dt: torch.dtype, device) -> torch.Tensor:
    """`v` rounded to `dt` as NumPy does, as a 0-d tensor."""
    arr = np.asarray(v, ml_dtypes.bfloat16 if dt == torch.bfloat16
                     else str(dt).removeprefix("torch."))
    # torch.full launches a fill kernel (no host-to-device copy), so it may be captured into a
    # CUDA graph
    if dt == torch.bfloat16:
        return torch.full((), float(arr), dtype=torch.float32, device=device).to(dt)
    if dt == torch.uint64:
        return torch.full((), int(arr.view(np.int64)), dtype=torch.int64,
                          device=device).view(torch.uint64)
    return torch.full((), arr.item(), dtype=dt, device=device)

