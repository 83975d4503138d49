"""NumPy kernel of stencil (ops/stencil.py): the padded source is gathered per window
dimension through an index map (one `np.take` per dimension: every boundary mode is an index
map, antiPeriodic with a sign), the windows are a strided view (`sliding_window_view`), and
the weighted values are reduced over the window axes in one call."""

from __future__ import annotations

import numpy as np

from ...types import PaddingMode as P
from ...types import ReductionMode as R
from . import kernel
from .arithmetic import finish, work


def index_map(n, before, after, start, mode):
    """(source index, sign, valid) per padded position along one dimension."""
    p = np.arange(start - before, n + after, dtype=np.int64)
    valid = (p >= 0) & (p < n)
    sign = np.ones(p.shape, np.int64)
    if n == 0:
        return np.zeros_like(p), sign, valid
    if mode in (P.zero, P.constant):
        idx = np.clip(p, 0, n - 1)
    elif mode == P.clampToEdge:
        idx = np.clip(p, 0, n - 1)
        valid[:] = True
    elif mode == P.reflect:
        per = 2 * (n - 1)
        m = np.mod(p, per) if per else np.zeros_like(p)
        idx = np.where(m >= n, per - m, m)
        valid[:] = True
    elif mode == P.symmetric:
        m = np.mod(p, 2 * n)
        idx = np.where(m >= n, 2 * n - 1 - m, m)
        valid[:] = True
    else:  # periodic, antiPeriodic
        idx = np.mod(p, n)
        if mode == P.antiPeriodic:
            sign = np.where(np.floor_divide(p, n) % 2 == 0, 1, -1)
        valid[:] = True
    return idx, sign, valid


@kernel("stencil")
def stencil(x, w, ka):
    y = work(x)
    r = y.ndim
    if 0 in ka.out or y.size == 0:
        dt = np.int32 if ka.reduction in (R.argumentMin, R.argumentMax) else x.dtype
        lead = tuple(x.shape[:-4])
        if y.size == 0 and 0 not in ka.out and 0 not in lead:  # windows of padding only
            return _padding_only(x, w, ka, dt)
        return np.zeros(lead + tuple(ka.out), dt)
    fill = np.float32(0 if ka.boundary == P.zero else ka.constant)
    for a in range(4):
        ax = r - 4 + a
        idx, sign, valid = index_map(y.shape[ax], *ka.pads[a], ka.starts[a], ka.boundary)
        shp = [1] * r
        shp[ax] = -1
        t = np.take(y, idx, axis=ax) * sign.astype(y.dtype).reshape(shp)
        y = np.where(valid.reshape(shp), t, fill)
    k = w.shape
    eff = [(k[a] - 1) * ka.dilations[a] + 1 for a in range(4)]
    win = np.lib.stride_tricks.sliding_window_view(y, eff, axis=tuple(range(r - 4, r)))
    sl = (Ellipsis,) + tuple(slice(None, o * s, s) for o, s in zip(ka.out, ka.strides)) + \
        tuple(slice(None, None, d) for d in ka.dilations)
    win = win[(slice(None),) * (r - 4) + sl[1:]]
    v = win * work(w)
    flat = v.reshape(v.shape[:r] + (-1,))
    if ka.reduction == R.sum:
        out = flat.sum(axis=-1)
    elif ka.reduction == R.product:
        out = flat.prod(axis=-1)
    elif ka.reduction == R.min:
        out = flat.min(axis=-1)
    elif ka.reduction == R.max:
        out = flat.max(axis=-1)
    else:
        f = np.argmin if ka.reduction == R.argumentMin else np.argmax
        return np.asarray(f(flat, axis=-1), np.int32)
    return finish(np.asarray(out, order="C"), x.dtype)


def _padding_only(x, w, ka, dt):
    """An empty window dimension with zero / constant padding: every window reads only the
    padding value."""
    c = 0.0 if ka.boundary == P.zero else ka.constant
    v = (np.float64(c) * w.astype(np.float64)).reshape(-1)
    red = {R.sum: v.sum, R.product: v.prod, R.min: v.min, R.max: v.max,
           R.argumentMin: v.argmin, R.argumentMax: v.argmax}[ka.reduction]()
    return np.full(tuple(x.shape[:-4]) + tuple(ka.out), red).astype(dt)
