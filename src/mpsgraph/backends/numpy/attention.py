"""NumPy kernels of scaledDotProductAttention (ops/attention.py) and its gradient: batched
`matmul` in float32 (the half types widened), a max-subtracted softmax over the keys (a row
with every key masked out gives zeros), the gradient by the softmax identity
dS = P * (dP - rowsum(dP * P)), each input's gradient summed over the batch dimensions it was
broadcast along."""

from __future__ import annotations

import numpy as np

from . import kernel
from .arithmetic import finish, work


def _probs(q, k, mask, sinks, ka):
    qf, kf = work(q), work(k)
    s = np.matmul(qf, np.swapaxes(kf, -1, -2)) * np.float32(ka.scale)
    lq, lk = s.shape[-2], s.shape[-1]
    keep = np.tril(np.ones((lq, lk), bool)) if ka.causal else None
    if mask is not None:
        if mask.dtype == np.bool_:
            keep = mask
        else:
            s = s + work(mask)
    if keep is not None:
        s = np.where(keep, s, np.float32(-np.inf))
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    if sinks is not None:
        sk = work(sinks).reshape(-1, 1, 1)
        m = np.maximum(m, sk)
    m = np.where(np.isneginf(m), np.float32(0), m)
    e = np.exp(s - m)
    den = e.sum(axis=-1, keepdims=True)
    if sinks is not None:
        den = den + np.exp(sk - m)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den == 0, np.float32(0), e / den)


def _reduce_to(a, shape):
    lead = a.ndim - len(shape)
    if lead:
        a = a.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=axes, keepdims=True) if axes else a


@kernel("scaledDotProductAttention")
def scaledDotProductAttention(q, k, v, mask, sinks, ka):
    p = _probs(q, k, mask, sinks, ka)
    return finish(np.matmul(p, work(v)), q.dtype)


@kernel("scaledDotProductAttentionGradient")
def scaledDotProductAttentionGradient(dy, q, k, v, mask, sinks, ka):
    p = _probs(q, k, mask, sinks, ka)
    do, vf = work(dy), work(v)
    dv = np.matmul(np.swapaxes(p, -1, -2), do)
    dp = np.matmul(do, np.swapaxes(vf, -1, -2))
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * np.float32(ka.scale)
    dq = np.matmul(ds, work(k))
    dk = np.matmul(np.swapaxes(ds, -1, -2), work(q))
    return tuple(finish(np.asarray(_reduce_to(g, x.shape), order="C"), x.dtype)
                 for g, x in ((dq, q), (dk, k), (dv, v)))
