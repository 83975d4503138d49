"""torch kernels of scaledDotProductAttention (semantics: backends/numpy/attention.py):
`torch.nn.functional.scaled_dot_product_attention` (flash / memory-efficient attention on CUDA,
in the input's dtype there; float32 on the CPU), and the gradient by torch autograd through the
same call (flash attention's backward on CUDA). Sinks, bool masks, causal masks off CUDA and
empty sizes take a matmul-softmax path written like the NumPy kernel."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from . import kernel
from .arithmetic import finish, work


def _math(q, k, v, mask, sinks, ka):
    s = torch.matmul(q, k.transpose(-1, -2)) * ka.scale
    lq, lk = s.shape[-2], s.shape[-1]
    keep = torch.ones(lq, lk, dtype=torch.bool, device=s.device).tril() if ka.causal else None
    if mask is not None:
        if mask.dtype == torch.bool:
            keep = mask
        else:
            s = s + mask
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    m = s.amax(dim=-1, keepdim=True) if lk else torch.full(
        s.shape[:-1] + (1,), float("-inf"), dtype=s.dtype, device=s.device)
    if sinks is not None:
        sk = sinks.reshape(-1, 1, 1)
        m = torch.maximum(m, sk)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    den = e.sum(dim=-1, keepdim=True)
    if sinks is not None:
        den = den + torch.exp(sk - m)
    p = torch.where(den == 0, torch.zeros_like(e), e / den)
    return torch.matmul(p, v)


def _forward(q, k, v, mask, sinks, ka):
    native = q.device.type == "cuda"
    dt = q.dtype
    if not native:
        q, k, v = work(q), work(k), work(v)
        if mask is not None and mask.dtype != torch.bool:
            mask = work(mask)
        if sinks is not None:
            sinks = work(sinks)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q = q.expand(batch + q.shape[-2:])
    k = k.expand(batch + k.shape[-2:])
    v = v.expand(batch + v.shape[-2:])
    # masked-out keys are never read (a NaN there stays out): bool masks, and causal masks off
    # CUDA, take the matmul path (torch's math path adds -inf to a NaN score); flash attention
    # overwrites masked scores, so causal CUDA runs go to torch
    masked = (mask is not None and mask.dtype == torch.bool) or (ka.causal and not native)
    if masked or sinks is not None or 0 in q.shape or 0 in k.shape or 0 in v.shape \
            or q.dim() < 3:
        y = _math(q, k, v, mask, sinks, ka)
    else:
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=ka.causal,
                                           scale=ka.scale)
    return finish(y, dt)


@kernel("scaledDotProductAttention")
def scaledDotProductAttention(q, k, v, mask, sinks, ka):
    return _forward(q, k, v, mask, sinks, ka)


@kernel("scaledDotProductAttentionGradient")
def scaledDotProductAttentionGradient(dy, q, k, v, mask, sinks, ka):
    with torch.enable_grad():
        ins = [t.detach().requires_grad_() for t in (q, k, v)]
        y = _forward(*ins, mask, sinks, ka)
        grads = torch.autograd.grad(y, ins, dy.to(y.dtype), allow_unused=True)
    return tuple(torch.zeros_like(t) if g is None else g.detach().to(t.dtype)
                 for g, t in zip(grads, (q, k, v)))
