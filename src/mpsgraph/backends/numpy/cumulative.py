"""NumPy kernels of the cumulative family, generated from the rows of ops/cumulative.py. The
kernel attrs are (axis >= 0, exclusive, reverse); an axisTensor input (when the op has one) was
read by the shape rule. Half types scan in float32 and round each result once; integers scan
in their own type (sums and products wrap)."""

from __future__ import annotations

import numpy as np

from ...ops.cumulative import CUMULATIVE
from . import kernel
from .arithmetic import finish, work


def cumsum(x: np.ndarray, axis: int) -> np.ndarray:
    return np.cumsum(x, axis=axis, dtype=x.dtype)


def cumprod(x: np.ndarray, axis: int) -> np.ndarray:
    return np.cumprod(x, axis=axis, dtype=x.dtype)


def cummax(x: np.ndarray, axis: int) -> np.ndarray:
    return np.maximum.accumulate(x, axis=axis)  # NaN propagates


def cummin(x: np.ndarray, axis: int) -> np.ndarray:
    return np.minimum.accumulate(x, axis=axis)


def _identity(fn, dt: np.dtype):
    if fn is cumsum:
        return 0
    if fn is cumprod:
        return 1
    if dt.kind == "f":
        return -np.inf if fn is cummax else np.inf
    info = np.iinfo(dt)
    return info.min if fn is cummax else info.max


def _make_kernel(row):
    fn = globals()[row.numpy]

    def k(x: np.ndarray, *rest) -> np.ndarray:
        axis, exclusive, reverse = rest[-1]  # (rest[0], if any, is the axisTensor's value)
        n = x.shape[axis]
        if n == 0:
            return x.copy()
        xw = work(x)
        if reverse:
            xw = np.flip(xw, axis)
        with np.errstate(all="ignore"):  # overflow to inf, inf * 0
            y = fn(xw, axis)
        if exclusive:
            shp = list(x.shape)
            shp[axis] = 1
            first = np.full(shp, _identity(fn, xw.dtype), xw.dtype)
            y = np.concatenate([first, np.take(y, np.arange(n - 1), axis=axis)], axis=axis)
        if reverse:
            y = np.flip(y, axis)
        return np.ascontiguousarray(finish(y, x.dtype))
    k.__name__ = row.name
    return k


for _row in CUMULATIVE.values():
    kernel(_row.name)(_make_kernel(_row))
del _row
