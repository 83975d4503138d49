"""torch kernels of sampleGrid and its source gradient (semantics and taps:
backends/numpy/sample_grid.py): gathers by advanced indexing, the gradient by index_put_ with
accumulate=True."""

from __future__ import annotations

import torch

from ...types import TensorNamedDataLayout as L
from ..numpy.sample_grid import taps
from . import kernel
from .arithmetic import finish, work


def _to(x, layout):
    return x if layout == L.NHWC else x.movedim(1, -1)


def _back(y, layout):
    return y if layout == L.NHWC else y.movedim(-1, 1)


@kernel("sampleGrid")
def sampleGrid(x, coords, a):
    xs = _to(work(x), a.layout)
    n, h, w, c = xs.shape
    cd = coords.double()
    out = torch.zeros((n, cd.shape[1], cd.shape[2], c), dtype=xs.dtype, device=xs.device)
    if out.numel() == 0:
        return finish(_back(out, a.layout).contiguous(), x.dtype)
    nidx = torch.arange(n, device=xs.device).reshape(-1, 1, 1)
    const = torch.full((), a.constant, dtype=xs.dtype, device=xs.device)  # (capturable)
    for iy, ix, wt, valid in taps(torch, cd, h, w, a):
        v = xs[nidx, iy, ix] if h * w else torch.zeros(iy.shape + (c,), dtype=xs.dtype,
                                                        device=xs.device)
        v = torch.where(valid[..., None], v, const)
        out = out + v * wt[..., None].to(xs.dtype)
    return finish(_back(out, a.layout).contiguous(), x.dtype)


@kernel("sampleGridGradient")
def sampleGridGradient(dy, x, coords, a):
    g = _to(work(dy), a.layout)
    xs = _to(x, a.layout)
    n, h, w, c = xs.shape
    dx = torch.zeros((n, h, w, c), dtype=g.dtype, device=g.device)
    if g.numel() and dx.numel():
        nidx = torch.arange(n, device=g.device).reshape(-1, 1, 1).expand(g.shape[:3])
        for iy, ix, wt, valid in taps(torch, coords.double(), h, w, a):
            contrib = g * wt[..., None].to(g.dtype)
            dx.index_put_((nidx[valid], iy[valid], ix[valid]), contrib[valid], accumulate=True)
    return finish(_back(dx, a.layout).contiguous(), x.dtype)
