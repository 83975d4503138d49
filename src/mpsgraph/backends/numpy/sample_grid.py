"""NumPy kernels of sampleGrid and its source gradient (ops/sample_grid.py): the taps (one
for nearest, four for bilinear) are computed for every output pixel at once (`taps`, written
for NumPy and torch alike through `xp`), gathered by advanced indexing and blended; the
gradient scatter-adds the same weighted taps (`np.add.at`)."""

from __future__ import annotations

import numpy as np

from ...types import PaddingMode as P
from ...types import ResizeMode
from ...types import ResizeNearestRoundingMode as R
from ...types import TensorNamedDataLayout as L
from . import kernel
from .arithmetic import finish, work


def _reflect(xp, p, lo, hi):
    span = hi - lo
    if span <= 0:
        return p * 0
    q = xp.abs(p - lo)
    flips = xp.floor(q / span)
    extra = q - flips * span
    return xp.where(flips % 2 == 0, extra + lo, span - extra + lo)


def _pixels(xp, c, n, n_out, a, positions):
    """Coordinates along one axis (of input size n) in pixels."""
    if a.normalize:
        p = (c + 1) * (n - 1) / 2 if a.align else ((c + 1) * n - 1) / 2
        if a.relative:
            p = c * ((n - 1) / 2 if a.align else n / 2)
    else:
        p = c
    if a.relative:
        p = p + ((positions + 0.5) * n / max(n_out, 1) - 0.5)
    return p


def _resolve(xp, p, n, a):
    if a.padding == P.reflect:
        p = _reflect(xp, p, 0.0, n - 1.0)
    elif a.padding == P.symmetric:
        p = _reflect(xp, p, -0.5, n - 0.5)
    if a.padding != P.constant:
        p = xp.clip(p, 0, n - 1) if xp is np else p.clamp(0, n - 1)
    return p


def _round(xp, p, mode):
    if mode == R.roundPreferCeil:
        return xp.floor(p + 0.5)
    if mode == R.roundPreferFloor:
        return xp.ceil(p - 0.5)
    return xp.ceil(p) if mode == R.ceil else xp.floor(p)


def taps(xp, coords, h, w, a):
    """[(iy, ix, weight, valid)] with arrays of shape (N, Ho, Wo)."""
    ho, wo = coords.shape[1], coords.shape[2]
    ar = (lambda m: np.arange(m, dtype=np.float64)) if xp is np else (
        lambda m: xp.arange(m, dtype=coords.dtype, device=coords.device))
    py = _pixels(xp, coords[..., 1], h, ho, a, ar(ho).reshape(1, -1, 1))
    px = _pixels(xp, coords[..., 0], w, wo, a, ar(wo).reshape(1, 1, -1))
    py, px = _resolve(xp, py, h, a), _resolve(xp, px, w, a)
    if a.mode == ResizeMode.nearest:
        cand = [(_round(xp, py, a.rounding), _round(xp, px, a.rounding), py * 0 + 1)]
    else:
        y0, x0 = xp.floor(py), xp.floor(px)
        fy, fx = py - y0, px - x0
        cand = [(y0, x0, (1 - fy) * (1 - fx)), (y0, x0 + 1, (1 - fy) * fx),
                (y0 + 1, x0, fy * (1 - fx)), (y0 + 1, x0 + 1, fy * fx)]
    out = []
    for iy, ix, wt in cand:
        valid = (iy >= 0) & (iy <= h - 1) & (ix >= 0) & (ix <= w - 1)
        if xp is np:
            iy = np.clip(np.nan_to_num(iy), 0, max(h - 1, 0)).astype(np.int64)
            ix = np.clip(np.nan_to_num(ix), 0, max(w - 1, 0)).astype(np.int64)
        else:
            iy = xp.nan_to_num(iy).clamp(0, max(h - 1, 0)).long()
            ix = xp.nan_to_num(ix).clamp(0, max(w - 1, 0)).long()
        out.append((iy, ix, wt, valid))
    return out


def _to_nhwc(x, layout):
    return x if layout == L.NHWC else np.moveaxis(x, 1, -1)


def _from_nhwc(y, layout):
    return y if layout == L.NHWC else np.moveaxis(y, -1, 1)


@kernel("sampleGrid")
def sampleGrid(x, coords, a):
    xs = _to_nhwc(work(x), a.layout)
    n, h, w, c = xs.shape
    cd = coords.astype(np.float64)
    out = np.zeros((n, cd.shape[1], cd.shape[2], c), xs.dtype)
    if out.size == 0:
        return finish(np.asarray(_from_nhwc(out, a.layout), order="C"), x.dtype)
    nidx = np.arange(n).reshape(-1, 1, 1)
    const = xs.dtype.type(a.constant)
    for iy, ix, wt, valid in taps(np, cd, h, w, a):
        v = xs[nidx, iy, ix] if h * w else np.zeros(iy.shape + (c,), xs.dtype)
        v = np.where(valid[..., None], v, const)
        out = out + v * wt[..., None].astype(xs.dtype)
    return finish(np.asarray(_from_nhwc(out, a.layout), order="C"), x.dtype)


@kernel("sampleGridGradient")
def sampleGridGradient(dy, x, coords, a):
    g = _to_nhwc(work(dy), a.layout)
    xs = _to_nhwc(x, a.layout)
    n, h, w, c = xs.shape
    dx = np.zeros((n, h, w, c), g.dtype)
    if g.size and dx.size:
        nidx = np.broadcast_to(np.arange(n).reshape(-1, 1, 1), g.shape[:3])
        for iy, ix, wt, valid in taps(np, coords.astype(np.float64), h, w, a):
            contrib = g * wt[..., None].astype(g.dtype)
            np.add.at(dx, (nidx[valid], iy[valid], ix[valid]), contrib[valid])
    return finish(np.asarray(_from_nhwc(dx, a.layout), order="C"), x.dtype)
