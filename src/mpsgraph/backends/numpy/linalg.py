"""NumPy kernels of the linear-algebra family (semantics: ops/linalg.py)."""

from __future__ import annotations

import numpy as np

from ...ops.linalg import BandAttrs
from . import kernel
from .arithmetic import finish, work


def _c(x: np.ndarray) -> np.ndarray:
    """x as a C-order array (rank 0 stays rank 0, unlike np.ascontiguousarray)."""
    return np.asarray(x, order="C")


def _bounds(rest, a: BandAttrs):
    ts = list(rest)
    lo = a.numLower if a.numLower is not None else int(np.asarray(ts.pop(0)).reshape(-1)[0])
    up = a.numUpper if a.numUpper is not None else int(np.asarray(ts.pop(0)).reshape(-1)[0])
    return lo, up


@kernel("bandPart")
def bandPart(x: np.ndarray, *rest) -> np.ndarray:
    lo, up = _bounds(rest[:-1], rest[-1])
    m, n = x.shape[-2:]
    d = np.arange(m)[:, None] - np.arange(n)[None, :]  # i - j
    keep = ((lo < 0) | (d <= lo)) & ((up < 0) | (-d <= up))
    return np.where(keep, x, np.zeros((), x.dtype))


@kernel("inverse")
def inverse(x: np.ndarray, attrs: None) -> np.ndarray:
    w = work(x)
    if w.size == 0:
        return np.zeros(x.shape, x.dtype)
    # exactly singular (LAPACK's LU meets a zero pivot), or a NaN anywhere: all NaN
    sing = (np.linalg.det(np.nan_to_num(w)) == 0) | np.isnan(w).any(axis=(-2, -1))
    eye = np.eye(x.shape[-1], dtype=w.dtype)
    safe = np.where(sing[..., None, None], eye, w)
    with np.errstate(all="ignore"):
        y = np.linalg.inv(safe)
    y = np.where(sing[..., None, None], np.nan, y)
    return _c(finish(y, x.dtype))


_POP8 = np.array([bin(i).count("1") for i in range(256)], np.uint32)


def popcount(v: np.ndarray) -> np.ndarray:
    """Set bits of each element (any integer or bool dtype), as uint32."""
    if v.dtype == np.bool_:
        return v.astype(np.uint32)
    b = _c(v).view(np.uint8).reshape(v.shape + (v.dtype.itemsize,))
    return _POP8[b].sum(axis=-1, dtype=np.uint32)


@kernel("HammingDistance")
def HammingDistance(a: np.ndarray, b: np.ndarray, dt) -> np.ndarray:
    x = np.bitwise_xor(a[..., :, None, :], b[..., None, :, :])  # [.., M, N, K]
    return popcount(x).sum(axis=-1, dtype=np.uint32).astype(dt.numpy_dtype)


@kernel("nonZeroIndices")
def nonZeroIndices(x: np.ndarray, attrs: None) -> np.ndarray:
    return _c(np.argwhere(x != 0).astype(np.int32))
