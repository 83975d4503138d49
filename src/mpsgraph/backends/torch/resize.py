"""torch kernels of the resize family (semantics: backends/numpy/resize.py, whose `taps` gives
the coordinates). Bilinear resizes of the two spatial axes of a rank-4 NCHW / NHWC tensor with
centred or corner-aligned coordinates go to `torch.nn.functional.interpolate` and its backward
`aten.upsample_bilinear2d_backward` (the same coordinates: PyTorch's align_corners=False is
centerResult=True); everything else is per-axis `index_select` and, for the gradient,
`index_add_` (vectorised on every device)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ...types import ResizeMode
from ..numpy.resize import taps
from . import device_table, kernel
from .arithmetic import finish, work


def _host(t):
    return None if t is None else t.detach().cpu().double().numpy()


def _fast_axes(x, ka):
    """(h_axis, w_axis) when torch's bilinear2d applies, else None."""
    if ka.mode != ResizeMode.bilinear or ka.form != "flags" or x.dim() != 4 or x.numel() == 0:
        return None
    if any(s[2] == 0 for s in ka.axes):
        return None
    if not (ka.align or ka.center):
        return None
    axes = {s[0] for s in ka.axes}
    if not axes:
        return None
    for hw in ((2, 3), (1, 2)):
        if axes <= set(hw):
            return hw
    return None


def _nchw(t, hw):
    return t if hw == (2, 3) else t.permute(0, 3, 1, 2)


def _back(t, hw):
    return t if hw == (2, 3) else t.permute(0, 2, 3, 1)


@kernel("resize")
def resize(x, size_t, so, sc, off, ka):
    y = work(x)
    hw = _fast_axes(y, ka)
    if hw is not None:
        out = list(y.shape)
        for s in ka.axes:
            out[s[0]] = s[2]
        r = F.interpolate(_nchw(y, hw), size=(out[hw[0]], out[hw[1]]), mode="bilinear",
                          align_corners=bool(ka.align))
        return finish(_back(r, hw), x.dtype)
    so, sc, off = _host(so), _host(sc), _host(off)
    for spec in ka.axes:
        ax = spec[0]
        lo, hi, w = taps(ka, spec, so, sc, off)
        a = y.index_select(ax, device_table(lo, y.device))
        if hi is not None:
            shp = [-1 if k == ax else 1 for k in range(y.dim())]
            wt = device_table(w, y.device, y.dtype).reshape(shp)
            b = y.index_select(ax, device_table(hi, y.device))
            a = torch.where(wt == 0, a, a * (1 - wt) + b * wt)
        y = a
    return finish(y, x.dtype)


@kernel("resizeWithGradient")
def resizeWithGradient(dy, x, so, sc, off, ka):
    g = work(dy)
    hw = _fast_axes(g, ka)
    if hw is not None:
        ins = list(x.shape)
        gn = _nchw(g, hw)
        r = torch.ops.aten.upsample_bilinear2d_backward(
            gn, [gn.shape[2], gn.shape[3]], [ins[0], ins[3] if hw == (1, 2) else ins[1],
                                             ins[hw[0]], ins[hw[1]]], bool(ka.align))
        return finish(_back(r, hw), x.dtype)
    so, sc, off = _host(so), _host(sc), _host(off)
    for spec in reversed(ka.axes):
        ax, i = spec[0], spec[1]
        lo, hi, w = taps(ka, spec, so, sc, off)
        shp = list(g.shape)
        shp[ax] = i
        out = torch.zeros(shp, dtype=g.dtype, device=g.device)
        out.index_add_(ax, device_table(lo, g.device),
                       g if hi is None else g * _w(1 - w, ax, g))
        if hi is not None:
            nz = w != 0  # (selected on the host: no device-to-host read of a nonzero)
            sel = device_table(np.flatnonzero(nz), g.device)
            out.index_add_(ax, device_table(hi[nz], g.device),
                           (g * _w(w, ax, g)).index_select(ax, sel))
        g = out
    return finish(g.contiguous(), x.dtype)


def _w(w, ax, g):
    shp = [-1 if k == ax else 1 for k in range(g.dim())]
    return device_table(w, g.device, g.dtype).reshape(shp)

