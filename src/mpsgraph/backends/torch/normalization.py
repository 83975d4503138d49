"""torch kernels of the normalization family (semantics and formulas: ops/normalization.py;
reference: backends/numpy/normalization.py). Half types compute in float32 and round once.

Fast paths, in the batch-norm layout (float32; every axis reduced but one, the channel axis c;
the statistics, gamma and beta of size 1 except along c):

- Triton (kernels/batchnorm.py; CUDA, or the CPU under TRITON_INTERPRET=1; x contiguous):
  `varianceMean` (the plan's mean + variance step, runtime/plan_fusion.py) is one pass over x,
  `normalize` one pass, `normalizationGradients` / `normalizationGradient` two passes over
  (x, dy) (per-channel sums, then dx) - the passes of torch's own batch norm;
- else ATen: `batch_norm_update_stats` (its batch-norm statistics kernel) for the statistics,
  `native_batch_norm` in inference mode (x, per-channel mean and variance) for normalize, and
  `native_batch_norm_backward` (cuDNN's or ATen's fused kernel) for the gradients, which
  computes exactly r (dyg - mean_A(dyg) - xhat mean_A(dyg xhat)) from the saved mean and
  1/sqrt(v + e).

Elsewhere: `torch.var_mean` (one Welford pass) for the statistics over any axes, and plain
elementwise torch code."""

from __future__ import annotations

import torch

from . import kernel
from . import kernels as _triton
from .arithmetic import finish, work


def _bn_kernels(x: torch.Tensor, c: int):
    """kernels/batchnorm.py when its Triton kernels take x with channel axis c on x's device
    (CUDA, or the CPU under TRITON_INTERPRET=1; MPSGRAPH_NO_TRITON=1 turns them off), else
    None (ATen's batch-norm kernels then)."""
    if not _triton.available(x.device) or not x.is_contiguous():
        return None
    from .kernels import batchnorm

    return batchnorm if batchnorm.supported(x, c) else None


def _mean(x: torch.Tensor, axes, n: int) -> torch.Tensor:
    if not axes:
        return x.clone()
    s = torch.sum(x, dim=axes, keepdim=True)
    return s / (n if n else float("nan"))


def _sum(x: torch.Tensor, axes) -> torch.Tensor:
    return torch.sum(x, dim=axes, keepdim=True) if axes else x.clone()


def _rstd(v: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.rsqrt(v + eps)


def _channel(x: torch.Tensor, axes, *others) -> int | None:
    """The one axis not reduced, when every other tensor is of size 1 except along it (and
    x is float32 with at least one element per channel slice); else None."""
    if x.dtype != torch.float32 or x.dim() < 2 or len(axes) != x.dim() - 1 or x.numel() == 0:
        return None  # (ATen's kernels divide by the channel count: no empty tensors there)
    c = next(i for i in range(x.dim()) if i not in axes)
    for t in others:
        if t is None:
            continue
        off = x.dim() - t.dim()
        if t.dtype != torch.float32 or any(t.shape[i - off] != 1 for i in axes if i >= off):
            return None
    return c


def _per_channel(t: torch.Tensor | None, x: torch.Tensor, c: int) -> torch.Tensor | None:
    """A per-channel tensor (size 1 off axis c) as a 1-D tensor of x.shape[c] elements."""
    if t is None:
        return None
    off = x.dim() - t.dim()
    n = t.shape[c - off] if c >= off else 1
    return t.reshape(n).expand(x.shape[c]).contiguous()


@kernel("variance")
def variance(x, mean, a):
    xw = work(x)
    if mean is None and a.axes and a.count > 0 and x.numel() > 0:
        return finish(torch.var(xw, dim=a.axes, keepdim=True, correction=0), x.dtype)
    m = _mean(xw, a.axes, a.count) if mean is None else work(mean)
    d = xw - m
    if a.axes and a.count > 0:  # (not vector_norm squared: its sqrt and square round twice)
        return finish(torch.sum(d * d, dim=a.axes, keepdim=True) / a.count, x.dtype)
    return finish(_mean(d * d, a.axes, a.count), x.dtype)


@kernel("varianceMean")
def varianceMean(x, attrs):
    """(mean, variance) of x over the axes: the plan's fused step of a reductionMean and a
    variance of one x (runtime/plan_fusion.py; attrs = (the variance's attrs, whether it was
    given the mean)). Something to reduce: `torch.var_mean`, one Welford pass over x (half
    types in float32, each result rounded once; a half variance given the rounded mean may
    differ from the separate kernels within rounding); else the two kernels."""
    a, given = attrs
    c = _channel(x, a.axes)
    bn = _bn_kernels(x, c) if c is not None and a.count > 0 else None
    if bn is not None:  # one Triton pass over x (kernels/batchnorm.py)
        kept = [x.shape[i] if i == c else 1 for i in range(x.dim())]
        m, v = bn.statistics(x, c)
        return m.reshape(kept), v.reshape(kept)
    if c is not None and a.count > 0:
        # the batch-norm layout (float32): ATen's batch-norm statistics kernel (one Welford
        # pass; NCHW and channels-last NHWC have dedicated kernels), the biased variance
        xs = x if c == 1 else x.movedim(c, 1)
        m, v = torch.ops.aten.batch_norm_update_stats(xs, None, None, 0.0)
        kept = [x.shape[i] if i == c else 1 for i in range(x.dim())]
        return m.reshape(kept), v.reshape(kept)
    if a.axes and a.count > 0 and x.numel() > 0 and x.dtype in (torch.float32, torch.float16,
                                                                 torch.bfloat16):
        v, m = torch.var_mean(work(x), dim=a.axes, correction=0, keepdim=True)
        return finish(m, x.dtype), finish(v, x.dtype)
    from .reduction import mean

    m = mean(x, a.axes)
    return m, variance(x, m if given or work(x) is x else None, a)


def _channel_of(x: torch.Tensor, *others) -> int | None:
    """The axis c of x (float32, rank >= 2, not empty) along which alone the other tensors
    (float32) may have a size other than 1 (axis 1 when none has one); else None."""
    if x.dtype != torch.float32 or x.dim() < 2 or x.numel() == 0:
        return None
    big: set[int] = set()
    for t in others:
        if t is None:
            continue
        if t.dtype != torch.float32 or t.dim() > x.dim():
            return None
        off = x.dim() - t.dim()
        big.update(i + off for i, d in enumerate(t.shape) if d != 1)
    if len(big) > 1:
        return None
    return big.pop() if big else 1


@kernel("normalize")
def normalize(x, mean, var, gamma, beta, eps):
    out = torch.broadcast_shapes(x.shape, mean.shape, var.shape,
                                 *(t.shape for t in (gamma, beta) if t is not None))
    c = _channel_of(x, mean, var, gamma, beta) if tuple(out) == tuple(x.shape) else None
    if c is not None:
        # per-channel statistics (the batch-norm layout): ATen's inference batch norm, one
        # kernel over x (plus 1/sqrt(v + e) of the C channels)
        bn = _bn_kernels(x, c)
        if bn is not None:  # one Triton pass (kernels/batchnorm.py)
            return bn.normalize(x, c, *(_per_channel(t, x, c) for t in (mean, var, gamma, beta)),
                                eps)
        xs = x if c == 1 else x.movedim(c, 1)
        y = torch.ops.aten.native_batch_norm(
            xs, _per_channel(gamma, x, c), _per_channel(beta, x, c), _per_channel(mean, x, c),
            _per_channel(var, x, c), False, 0.0, eps)[0]
        return y if c == 1 else y.movedim(1, c).contiguous()
    xw, mw, vw = work(x), work(mean), work(var)
    scale = _rstd(vw, eps)
    if gamma is not None:
        scale = scale * work(gamma)
    shift = -mw * scale
    if beta is not None:
        shift = shift + work(beta)
    if scale.numel() < xw.numel() and tuple(out) == tuple(x.shape):
        # one pass over x: x * scale + shift, scale / shift the small broadcast tensors
        y = torch.addcmul(shift, xw, scale)
    else:
        y = (xw - mw) * scale if gamma is None else (xw - mw) * _rstd(vw, eps) * work(gamma)
        if beta is not None:
            y = y + work(beta)
    return finish(y.expand(out).contiguous() if tuple(y.shape) != tuple(out) else y, x.dtype)


@kernel("normalizationGammaGradient")
def normalizationGammaGradient(dy, x, mean, var, a):
    if a.count > 0 and dy.shape == x.shape and dy.dtype == torch.float32:
        c = _channel(x, a.axes, mean, var)
        if c is not None:  # ATen's fused reduction of dy * xhat (one read of x and dy)
            mv = _per_channel(mean, x, c)
            invstd = _per_channel(_rstd(var, a.epsilon), x, c)
            xs, dys = (x, dy) if c == 1 else (x.movedim(c, 1), dy.movedim(c, 1))
            w = torch.ones(x.shape[c], dtype=x.dtype, device=x.device)
            gg = torch.ops.aten.native_batch_norm_backward(
                dys, xs, w, None, None, mv, invstd, True, a.epsilon, [False, True, False])[1]
            return gg.reshape([x.shape[i] if i == c else 1 for i in range(x.dim())])
    t = work(dy) * ((work(x) - work(mean)) * _rstd(work(var), a.epsilon))
    return finish(_sum(t, a.axes), dy.dtype)


@kernel("normalizationBetaGradient")
def normalizationBetaGradient(dy, x, a):
    return finish(_sum(work(dy), a.axes), dy.dtype)


@kernel("normalizationGradient")
def normalizationGradient(dy, x, mean, var, gamma, gamma_grad, beta_grad, a):
    n = a.count
    if gamma_grad is None and beta_grad is None and n > 0:
        c = _channel(x, a.axes, dy if dy.shape != x.shape else None, mean, var, gamma)
        bn = (_bn_kernels(x, c) if c is not None and dy.shape == x.shape
              and dy.dtype == torch.float32 else None)
        if bn is not None:
            return bn.backward(dy.contiguous(), x, c, *(_per_channel(t, x, c) for t in (
                mean, var, gamma)), a.epsilon)[0]
        if c is not None and dy.shape == x.shape and dy.dtype == torch.float32:
            mv = _per_channel(mean, x, c)
            invstd = _per_channel(_rstd(var, a.epsilon), x, c)
            w = _per_channel(gamma, x, c)
            xs, dys = (x, dy) if c == 1 else (x.movedim(c, 1), dy.movedim(c, 1))
            dx = torch.ops.aten.native_batch_norm_backward(
                dys, xs, w, None, None, mv, invstd, True, a.epsilon, [True, False, False])[0]
            return dx if c == 1 else dx.movedim(1, c).contiguous()
    xw = work(x)
    r = _rstd(work(var), a.epsilon)
    xhat = (xw - work(mean)) * r
    d = work(dy).expand(xw.shape)
    g = 1.0 if gamma is None else work(gamma)
    if gamma_grad is None and beta_grad is None:
        dyg = d * g
        dx = r * (dyg - _mean(dyg, a.axes, n) - xhat * _mean(dyg * xhat, a.axes, n))
    else:
        bg = _sum(d, a.axes) if beta_grad is None else work(beta_grad)
        gg = _sum(d * xhat, a.axes) if gamma_grad is None else work(gamma_grad)
        inv_n = 1.0 / n if n else float("nan")
        dx = g * r * (d - bg * inv_n - xhat * (gg * inv_n))
    dx = dx.expand(xw.shape)
    return finish(dx.contiguous(), x.dtype)


@kernel("normalizationGradients")
def normalizationGradients(dy, x, mean, var, gamma, a):
    """[dx, dgamma, dbeta] of the fused rule: one ATen batch-norm backward in the batch-norm
    layout (float32), else the three kernels above."""
    if a.count > 0 and dy.shape == x.shape and dy.dtype == torch.float32:
        c = _channel(x, a.axes, mean, var, gamma)
        bn = _bn_kernels(x, c) if c is not None else None
        if bn is not None:  # Triton: two passes over (x, dy) for dx, dgamma and dbeta
            kept = [x.shape[i] if i == c else 1 for i in range(x.dim())]
            dx, gg, bg = bn.backward(dy.contiguous(), x, c, *(_per_channel(t, x, c) for t in (
                mean, var, gamma)), a.epsilon)
            return dx, gg.reshape(kept), bg.reshape(kept)
        if c is not None:
            mv = _per_channel(mean, x, c)
            invstd = _per_channel(_rstd(var, a.epsilon), x, c)
            w = (_per_channel(gamma, x, c) if gamma is not None else
                 torch.ones(x.shape[c], dtype=x.dtype, device=x.device))
            xs, dys = (x, dy) if c == 1 else (x.movedim(c, 1), dy.movedim(c, 1))
            dx, gg, bg = torch.ops.aten.native_batch_norm_backward(
                dys, xs, w, None, None, mv, invstd, True, a.epsilon, [True, True, True])
            kept = [x.shape[i] if i == c else 1 for i in range(x.dim())]
            dx = dx if c == 1 else dx.movedim(1, c).contiguous()
            return dx, gg.reshape(kept), bg.reshape(kept)
    dyx = dy.expand(x.shape)
    return (normalizationGradient(dy, x, mean, var, gamma, None, None, a),
            normalizationGammaGradient(dyx, x, mean, var, a),
            normalizationBetaGradient(dyx, x, a))
