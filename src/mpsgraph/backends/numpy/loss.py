"""NumPy kernels of the loss family (softmax cross-entropy and its gradients, oneHot).

The log-softmax is computed stably: z = x - max_axis(x), logp = z - log(sum_axis(exp(z))).
float16 / bFloat16 are computed in float32 and rounded once.
"""

from __future__ import annotations

import numpy as np

from ...ops.loss import OneHotAttrs, SoftMaxCEAttrs
from ...types import LossReductionType
from . import kernel

_F32 = np.dtype(np.float32)


def _cast_out(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = np.empty(y.shape, dtype)
    np.copyto(out, y, casting="unsafe")
    return out


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    x = np.asarray(x, dtype=_F32)
    if x.size == 0:
        return x.copy()
    with np.errstate(divide="ignore", invalid="ignore"):  # +-inf logits: inf - inf = NaN
        z = x - np.max(x, axis=axis, keepdims=True)
        return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def _count(shape: tuple[int, ...], axis: int) -> int:
    """Number of loss terms: every position other than the softmax axis (the size of the
    `none` loss; not numel // C, which is 0 for an empty softmax axis C = 0)."""
    return int(np.prod([d for i, d in enumerate(shape) if i != axis], dtype=np.int64))


def _scaled_gradient(g: np.ndarray, x_shape: tuple[int, ...], a: SoftMaxCEAttrs) -> np.ndarray:
    """The incoming gradient broadcast to the source's shape, divided by the term count for
    mean."""
    g = np.broadcast_to(np.asarray(g, dtype=_F32), a.out_shape)
    if a.reduction == LossReductionType.mean:
        c = _count(x_shape, a.axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = g / np.float32(c)
    return np.broadcast_to(g, x_shape)


@kernel("softMaxCrossEntropy")
def softMaxCrossEntropy(x: np.ndarray, labels: np.ndarray, a: SoftMaxCEAttrs) -> np.ndarray:
    logp = _log_softmax(x, a.axis)
    lab = np.broadcast_to(np.asarray(labels, dtype=_F32), x.shape)
    with np.errstate(invalid="ignore"):
        terms = np.where(lab != 0, lab * logp, 0.0)
    loss = -np.sum(terms, axis=a.axis, keepdims=True, dtype=_F32)
    if a.reduction != LossReductionType.none:
        total = np.sum(loss, dtype=_F32)
        if a.reduction == LossReductionType.mean:
            with np.errstate(divide="ignore", invalid="ignore"):
                total = total / np.float32(_count(x.shape, a.axis))
        loss = np.full(a.out_shape, total, _F32)
    return _cast_out(loss, x.dtype)


@kernel("softMaxCrossEntropyGradient")
def softMaxCrossEntropyGradient(g: np.ndarray, x: np.ndarray, labels: np.ndarray,
                                a: SoftMaxCEAttrs) -> np.ndarray:
    p = np.exp(_log_softmax(x, a.axis))
    lab = np.broadcast_to(np.asarray(labels, dtype=_F32), x.shape)
    total = np.sum(lab, axis=a.axis, keepdims=True, dtype=_F32)
    dx = (p * total - lab) * _scaled_gradient(g, x.shape, a)
    return _cast_out(dx, x.dtype)


@kernel("softMaxCrossEntropyLabelsGradient")
def softMaxCrossEntropyLabelsGradient(g: np.ndarray, x: np.ndarray, labels: np.ndarray,
                                      a: SoftMaxCEAttrs) -> np.ndarray:
    dl = -_log_softmax(x, a.axis) * _scaled_gradient(g, x.shape, a)
    # sum over the axes along which the labels were broadcast to the source's shape
    shape = labels.shape
    lead = dl.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and dl.shape[lead + i] != 1)
    if axes:
        dl = np.sum(dl, axis=axes, dtype=_F32).reshape(shape)
    return _cast_out(dl, labels.dtype)


@kernel("oneHot")
def oneHot(indices: np.ndarray, a: OneHotAttrs) -> np.ndarray:
    r = indices.ndim + 1
    k = np.arange(a.depth).reshape([a.depth if i == a.axis else 1 for i in range(r)])
    eq = np.expand_dims(indices, a.axis) == k
    npdt = a.dataType.numpy_dtype
    return np.where(eq, np.asarray(a.onValue, npdt), np.asarray(a.offValue, npdt)).astype(
        npdt, copy=False)
