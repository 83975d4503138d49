"""NumPy kernels of the reduction family, generated from the rows of ops/reduction.py: each
row names one helper below. `axes` is the normalised tuple from the shape rule; every result
keeps the reduced axes with size 1 (keepdims). Half types compute in float32 and round once;
integers compute in their own type (sums and products wrap)."""

from __future__ import annotations

import numpy as np

from ...ops.reduction import REDUCTIONS
from . import kernel
from .arithmetic import finish, work


def _kept(x: np.ndarray, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))


def total(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    xw = work(x)
    return finish(np.sum(xw, axis=axes, keepdims=True, dtype=xw.dtype), x.dtype)


def product(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    xw = work(x)
    with np.errstate(all="ignore"):  # overflow to inf, inf * 0
        return finish(np.prod(xw, axis=axes, keepdims=True, dtype=xw.dtype), x.dtype)


def mean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    xw = work(x)
    n = int(np.prod([x.shape[i] for i in axes]))
    with np.errstate(all="ignore"):  # an empty slice: 0 / 0 = NaN
        s = np.sum(xw, axis=axes, keepdims=True, dtype=xw.dtype)
        return finish(s / np.asarray(n, xw.dtype), x.dtype)


def _lowest(dt: np.dtype):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt: np.dtype):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


def _extremum(x: np.ndarray, axes: tuple[int, ...], ufunc, identity) -> np.ndarray:
    xw = work(x)
    if any(x.shape[i] == 0 for i in axes):  # an empty slice: the identity
        return np.full(_kept(x, axes), identity(xw.dtype), dtype=x.dtype)
    if not axes:
        return x.copy()
    return finish(ufunc.reduce(xw, axis=axes, keepdims=True), x.dtype)


def maximum(x, axes):
    return _extremum(x, axes, np.fmax, _lowest)  # fmax: NaN loses to a number


def minimum(x, axes):
    return _extremum(x, axes, np.fmin, _highest)


def maximum_nan(x, axes):
    return _extremum(x, axes, np.maximum, _lowest)  # maximum: NaN wins


def minimum_nan(x, axes):
    return _extremum(x, axes, np.minimum, _highest)


def argmax(x, axes):  # ties: the first index; NaN: the first NaN (NumPy's argmax)
    return np.argmax(work(x), axis=axes[0], keepdims=True).astype(np.int32)


def argmin(x, axes):
    return np.argmin(work(x), axis=axes[0], keepdims=True).astype(np.int32)


def _truth(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == np.bool_ else work(x) != 0  # NaN != 0: true


def all_true(x, axes):
    return np.all(_truth(x), axis=axes, keepdims=True).astype(x.dtype)


def any_true(x, axes):
    return np.any(_truth(x), axis=axes, keepdims=True).astype(x.dtype)


for _row in REDUCTIONS.values():  # the row's helper is the kernel itself
    kernel(_row.name)(globals()[_row.numpy])
del _row
