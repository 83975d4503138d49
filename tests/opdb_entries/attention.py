"""Entry of scaledDotProductAttention (ops/attention.py) and, through its gradient, of the
internal kind scaledDotProductAttentionGradient.

The reference is softmax(scale q k^T + mask) v written out in float64 (max-subtracted; a row
with every key masked out is zeros; sinks join the denominator); `torch_ref` is the same in
torch float64 for autograd. Samples: broadcast batch dimensions, sizes 0 and 1 (Lq, Lk, d,
dv), float (additive) and bool (keep) masks that broadcast, the descriptor form with isCausal,
maskTensor and sinksTensor, scale given or None (1/sqrt(d)).
"""

from __future__ import annotations

import math

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples

from ._common import broadcast_shapes, cycle, size
from ._common import mg_module as _mg

mg = _mg()
TOL = {mg.float32: (1e-5, 1e-6), mg.float16: (4e-3, 2e-3), mg.bFloat16: (3e-2, 2e-2)}


def _split(inputs, kw):
    q, k, v = inputs[:3]
    rest = list(inputs[3:])
    mask = rest.pop(0) if kw["mask"] else None
    sinks = rest.pop(0) if kw["sinks"] else None
    return q, k, v, mask, sinks


def _scale(kw, d):
    return kw["scale"] if kw["scale"] is not None else 1.0 / math.sqrt(max(d, 1))


def _ref(*inputs, **kw):
    q, k, v, mask, sinks = _split(inputs, kw)
    q, k, v = f64(q), f64(k), f64(v)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q = np.broadcast_to(q, batch + q.shape[-2:])
    k = np.broadcast_to(k, batch + k.shape[-2:])
    s = np.einsum("...id,...jd->...ij", q, k) * _scale(kw, q.shape[-1])
    lq, lk = s.shape[-2], s.shape[-1]
    keep = np.ones(s.shape, bool)
    if kw["causal"]:
        keep &= np.arange(lk)[None, :] <= np.arange(lq)[:, None]
    if mask is not None:
        if mask.dtype == np.bool_:
            keep = keep & mask
        else:
            s = s + f64(mask)
    s = np.where(keep, s, -np.inf)
    cols = [s]
    if sinks is not None:
        sk = np.broadcast_to(f64(sinks).reshape(-1, 1, 1), s.shape[:-1] + (1,))
        cols.append(sk)
    full = np.concatenate(cols, axis=-1)
    m = np.max(full, axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(full - m)
    den = e.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(den == 0, 0.0, e / den)[..., :lk]
    return np.einsum("...ij,...jd->...id", p, v)


def _torch_ref(*inputs, **kw):
    import torch

    q, k, v, mask, sinks = _split(inputs, kw)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q, k = q.expand(batch + q.shape[-2:]), k.expand(batch + k.shape[-2:])
    s = torch.matmul(q, k.transpose(-1, -2)) * _scale(kw, q.shape[-1])
    lq, lk = s.shape[-2], s.shape[-1]
    keep = torch.ones(s.shape, dtype=torch.bool)
    if kw["causal"]:
        keep = keep & (torch.arange(lk)[None, :] <= torch.arange(lq)[:, None])
    if mask is not None:
        if mask.dtype == torch.bool:
            keep = keep & mask
        else:
            s = s + mask
    s = s.masked_fill(~keep, float("-inf"))
    if sinks is not None:
        s = torch.cat([s, sinks.reshape(-1, 1, 1).expand(s.shape[:-1] + (1,))], dim=-1)
    m = s.amax(dim=-1, keepdim=True).detach() if s.shape[-1] else torch.zeros(s.shape[:-1] + (1,))
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    den = e.sum(dim=-1, keepdim=True)
    p = torch.where(den == 0, torch.zeros_like(e), e / den)[..., :lk]
    return torch.matmul(p, v)


def _build(g, q, k, v, *rest, **kw):
    rest = list(rest)
    mask = rest.pop(0) if kw["mask"] else None
    sinks = rest.pop(0) if kw["sinks"] else None
    if kw["form"] == "descriptor":
        d = mg.SDPADescriptor(scale=kw["scale"], isCausal=kw["causal"], maskTensor=mask,
                              sinksTensor=sinks)
        return g.scaledDotProductAttention(q, k, v, descriptor=d)
    return g.scaledDotProductAttention(q, k, v, mask=mask, scale=kw["scale"])


def _samples(rng, dt):
    pick = cycle(rng)
    for i in range(n_samples() + 2):
        form = pick(i, "form", ["args", "descriptor"])
        bq, bk, bv = broadcast_shapes(rng, 3, rank=int(rng.integers(0, 3)))
        if rng.random() < 0.5:
            bq = bk = bv = (int(rng.integers(1, 3)), int(rng.integers(1, 4)))
        lq, lk, d, dv = size(rng, 0, 5), size(rng, 0, 5), size(rng, 0, 4), size(rng, 0, 4)
        q = arr(rng, bq + (lq, d), dt, -2, 2)
        k = arr(rng, bk + (lk, d), dt, -2, 2)
        v = arr(rng, bv + (lk, dv), dt)
        batch = np.broadcast_shapes(bq, bk, bv)
        scores = batch + (lq, lk)
        causal = form == "descriptor" and bool(rng.random() < 0.5)
        mkind = pick(i, "mask", [None, "float", "bool"])
        if causal:
            mkind = None
        inputs = [q, k, v]
        if mkind is not None:
            ms = list(scores[-int(rng.integers(2, len(scores) + 1)):])
            ms = [1 if rng.random() < 0.3 else n for n in ms]
            inputs.append(arr(rng, ms, dt, -2, 2) if mkind == "float"
                          else np.asarray(rng.random(ms) < 0.75))
        sinks = form == "descriptor" and len(scores) >= 3 and bool(rng.random() < 0.5)
        if sinks:
            inputs.append(arr(rng, (scores[-3],), dt, -1, 1))
        scale = None if rng.random() < 0.4 else float(rng.uniform(0.2, 1.5))
        kw = dict(form=form, mask=mkind is not None, sinks=sinks, causal=causal, scale=scale)
        yield Sample(inputs, kw, diff=(0, 1, 2), desc=f"{form} mask={mkind}")


def _errors(rng):
    f = np.ones((2, 3, 4), np.float32)
    kw = dict(form="args", mask=False, sinks=False, causal=False, scale=None)
    yield ErrorInput(Sample([f, np.ones((2, 3, 5), np.float32), f], kw), mg.ShapeError, "key")
    yield ErrorInput(Sample([f, f, np.ones((2, 4, 4), np.float32)], kw), mg.ShapeError,
                     "value")
    yield ErrorInput(Sample([f, f, f.astype(np.float16)], kw), mg.DataTypeError, "value")
    yield ErrorInput(Sample([np.ones(4, np.float32), f, f], kw), mg.ShapeError, "query")
    yield ErrorInput(Sample([f, f, f, np.ones((2, 5), np.float32)], dict(kw, mask=True)),
                     mg.ShapeError, "mask")
    yield ErrorInput(Sample([f, f, f, np.ones((3, 3), np.int32)], dict(kw, mask=True)),
                     mg.DataTypeError, "mask")
    yield ErrorInput(Sample([f, f, f, np.ones(3, np.float32)],
                            dict(kw, form="descriptor", sinks=True)), mg.ShapeError, "sinks")
    yield ErrorInput(Sample([f, f, f], dict(kw, scale=float("nan"))), mg.GraphError, "scale")


add(OpInfo("scaledDotProductAttention", build=_build, ref=_ref, samples=_samples,
           dtypes=FLOAT, differentiable=(0, 1, 2), torch_ref=_torch_ref, errors=_errors,
           tol=TOL, kinds=("scaledDotProductAttentionGradient",)))
