"""NumPy kernels of the resize family (ops/resize.py): separable per-axis sampling.

Each resized axis is sampled by gathering (`np.take`) along it: nearest takes one index,
bilinear the two neighbours blended by the fraction (a neighbour of weight 0 is not read, so a
NaN or inf there stays out). The gradient is the exact adjoint: per axis, in reverse order,
the incoming values are scatter-added (`np.add.at`, deterministic) to the indices they came
from. `taps` is also the torch backend's coordinate rule (one place for the semantics).
"""

from __future__ import annotations

import numpy as np

from ...types import ResizeMode
from ...types import ResizeNearestRoundingMode as R
from . import kernel
from .arithmetic import finish, work


def source_coords(i: int, o: int, align: bool, center: bool, scale: float | None = None,
                  offset: float | None = None) -> np.ndarray:
    """float64 source coordinates of the o output positions (exact quotients of integers for
    the flag forms, so that halves are exact for the rounding modes)."""
    d = np.arange(o, dtype=np.float64)
    if scale is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            s = (d - offset) / scale
        return np.nan_to_num(s, nan=0.0, posinf=float(i), neginf=-1.0)
    if align:
        return d * (i - 1) / (o - 1) if o > 1 else np.zeros(o)
    if center:
        return ((2 * d + 1) * i - o) / (2 * o)
    return d * i / o


def _round(s: np.ndarray, mode: R) -> np.ndarray:
    if mode == R.roundPreferCeil:
        return np.floor(s + 0.5)
    if mode == R.roundPreferFloor:
        return np.ceil(s - 0.5)
    if mode == R.ceil:
        return np.ceil(s)
    if mode == R.floor:
        return np.floor(s)
    if mode == R.roundToEven:
        return np.rint(s)
    f = np.floor(s)  # roundToOdd
    half = (s - f) == 0.5
    return np.where(half, np.where(f % 2 == 1, f, f + 1), np.rint(s))


def taps(ka, spec, so, sc, off):
    """(lo, hi, w) int64 / int64 / float64 arrays of one axis (hi, w None for nearest)."""
    ax, i, o, _, _ = spec
    if ka.form == "flags":
        s = source_coords(i, o, ka.align, ka.center)
    else:
        k = ka.so_index[[sp[0] for sp in ka.axes].index(ax)]
        if ka.form == "scaleOffset":
            v = np.asarray(so, np.float64).reshape(-1)
            scale, offset = v[k], v[k + 2]
        else:
            scale = float(np.asarray(sc, np.float64).reshape(-1)[k])
            offset = float(np.asarray(off, np.float64).reshape(-1)[k])
        s = source_coords(i, o, False, False, scale, offset)
    if ka.mode == ResizeMode.nearest:
        return np.clip(_round(s, ka.rounding), 0, i - 1).astype(np.int64), None, None
    s = np.clip(s, 0, i - 1)
    lo = np.floor(s).astype(np.int64)
    return lo, np.minimum(lo + 1, i - 1), s - lo


def _wshape(w, ax, rank):
    return w.reshape([-1 if k == ax else 1 for k in range(rank)])


@kernel("resize")
def resize(x, size_t, so, sc, off, ka) -> np.ndarray:
    y = work(x)
    for spec in ka.axes:
        ax = spec[0]
        lo, hi, w = taps(ka, spec, so, sc, off)
        a = np.take(y, lo, axis=ax)
        if hi is not None:
            wt = _wshape(w.astype(y.dtype), ax, y.ndim)
            b = np.take(y, hi, axis=ax)
            a = np.where(wt == 0, a, a * (1 - wt) + b * wt)
        y = a
    return finish(y, x.dtype)


@kernel("resizeWithGradient")
def resizeWithGradient(dy, x, so, sc, off, ka) -> np.ndarray:
    g = work(dy)
    for spec in reversed(ka.axes):
        ax, i = spec[0], spec[1]
        lo, hi, w = taps(ka, spec, so, sc, off)
        gm = np.moveaxis(g, ax, 0)
        out = np.zeros((i,) + gm.shape[1:], g.dtype)
        if hi is None:
            np.add.at(out, lo, gm)
        else:
            wt = w.astype(g.dtype).reshape((-1,) + (1,) * (gm.ndim - 1))
            np.add.at(out, lo, gm * (1 - wt))
            nz = w != 0
            np.add.at(out, hi[nz], gm[nz] * wt[nz])
        g = np.moveaxis(out, 0, ax)
    return finish(np.asarray(g, order="C"), x.dtype)
