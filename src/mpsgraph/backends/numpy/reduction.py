"""NumPy kernels of the reduction family. `axes` is the normalised tuple from the shape rule;
every result keeps the reduced axes with size 1 (keepdims)."""

from __future__ import annotations

import numpy as np

from . import kernel
from .arithmetic import finish, work


@kernel("reductionSum")
def reductionSum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    xw = work(x)
    return finish(np.sum(xw, axis=axes, keepdims=True, dtype=xw.dtype), x.dtype)


@kernel("reductionMean")
def reductionMean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    xw = work(x)
    n = int(np.prod([x.shape[i] for i in axes]))
    with np.errstate(all="ignore"):  # an empty slice: 0 / 0 = NaN
        s = np.sum(xw, axis=axes, keepdims=True, dtype=xw.dtype)
        return finish(s / np.asarray(n, xw.dtype), x.dtype)


def _extremum(x: np.ndarray, axes: tuple[int, ...], ufunc, identity) -> np.ndarray:
    xw = work(x)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    if any(x.shape[i] == 0 for i in axes):  # an empty slice: the identity
        return np.full(shape, identity(xw.dtype), dtype=x.dtype)
    if not axes:
        return x.copy()
    return finish(ufunc.reduce(xw, axis=axes, keepdims=True), x.dtype)


def _lowest(dt: np.dtype):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt: np.dtype):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


@kernel("reductionMaximum")
def reductionMaximum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return _extremum(x, axes, np.fmax, _lowest)  # fmax: NaN loses to a number


@kernel("reductionMinimum")
def reductionMinimum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return _extremum(x, axes, np.fmin, _highest)
