"""NumPy kernels of the shape family. Shapes, permutations and slices arrive resolved by the
shape rules (kernel attrs); reshape, transpose, slices and identity return views (no op writes
in place), the others new arrays."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ...types import _NUMPY, SUB_BYTE
from . import kernel
from .arithmetic import HALF

SUB_BYTE_NP = tuple(_NUMPY[d] for d in SUB_BYTE)


@kernel("reshape")
def reshape(x: np.ndarray, shape_tensor: np.ndarray | None, shape: tuple[int, ...]
            ) -> np.ndarray:
    return x.reshape(shape)


@kernel("broadcast")
def broadcast(x: np.ndarray, shape_tensor: np.ndarray | None, shape: tuple[int, ...]
              ) -> np.ndarray:
    return np.array(np.broadcast_to(x, shape))


@kernel("transpose")
def transpose(x: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
    return x.transpose(perm)


@kernel("transposeTensor")
def transposeTensor(x: np.ndarray, dims: tuple[int, int]) -> np.ndarray:
    return np.swapaxes(x, *dims)


@kernel("sliceTensor")
def sliceTensor(x: np.ndarray, slices: tuple[slice, ...]) -> np.ndarray:
    return x[slices]


@kernel("sliceGradientTensor")
def sliceGradientTensor(dy: np.ndarray, shape_tensor: np.ndarray | None, attrs) -> np.ndarray:
    shape, slices = attrs
    out = np.zeros(shape, dy.dtype)
    out[slices] = dy
    return out


@kernel("concatTensors")
def concatTensors(*args) -> np.ndarray:
    *xs, (axis, targets) = args
    return np.concatenate([np.broadcast_to(x, t) for x, t in zip(xs, targets)], axis=axis)


def _is_int(dt: np.dtype) -> bool:
    return dt.kind in "iu" or dt in SUB_BYTE_NP


def _float_to_int(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """Truncate toward zero, saturate to the type's range, NaN -> 0."""
    info = ml_dtypes.iinfo(to)
    xf = np.trunc(x.astype(np.float64))
    xf = np.where(np.isnan(xf), 0.0, xf)
    hi, lo = xf >= float(info.max), xf <= float(info.min)
    out = np.where(hi | lo, 0.0, xf).astype(to)
    out[hi] = info.max
    out[lo] = info.min
    return out


@kernel("cast")
def cast(x: np.ndarray, to: np.dtype) -> np.ndarray:
    if x.dtype == to:
        return x.copy()
    if to == np.bool_:
        return np.asarray(x != 0)
    if (x.dtype.kind == "f" or x.dtype in HALF) and _is_int(to):
        return _float_to_int(x, to)
    # integer -> narrower integer wraps (two's complement), sub-byte types included
    with np.errstate(all="ignore"):  # float -> narrower float overflows to inf
        return x.astype(to)


@kernel("expandDims")
def expandDims(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return x.reshape(shape)


@kernel("squeeze")
def squeeze(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return x.reshape(shape)


@kernel("identity")
def identity(x: np.ndarray, attrs: None) -> np.ndarray:
    return x


@kernel("shapeOf")
def shapeOf(x: np.ndarray, attrs: None) -> np.ndarray:
    return np.array(x.shape, dtype=np.int32)
