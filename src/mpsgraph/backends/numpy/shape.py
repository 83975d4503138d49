"""NumPy kernels of the shape family. Shapes, permutations and slices arrive resolved by the
shape rules (kernel attrs); reshape, transpose, slices and identity return views (no op writes
in place), the others new arrays."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ...types import _NUMPY, SUB_BYTE, PaddingMode
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
def sliceTensor(x: np.ndarray, *args) -> np.ndarray:
    # (args: the fed start / end / stride tensors, read by the shape rule; the slices)
    return x[args[-1]]


@kernel("sliceGradientTensor")
def sliceGradientTensor(dy: np.ndarray, shape_tensor: np.ndarray | None, *args) -> np.ndarray:
    shape, slices = args[-1]
    out = np.zeros(shape, dy.dtype)
    out[slices] = dy
    return out


@kernel("concatTensors")
def concatTensors(*args) -> np.ndarray:
    *xs, attrs = args
    axis, targets = attrs[:2]
    xs = [np.broadcast_to(x, t) for x, t in zip(xs, targets)]
    if len(attrs) == 3:  # interleave: element j of each input in turn
        return np.stack(xs, axis=axis + 1).reshape(attrs[2])
    return np.concatenate(xs, axis=axis)


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


# ---------------------------------------------------------------------------- pad, tile
_FILLS = (PaddingMode.constant, PaddingMode.zero)


def pad_index(n: int, lo: int, hi: int, mode: PaddingMode) -> tuple[np.ndarray, np.ndarray | None]:
    """The source index of each of the n + lo + hi padded positions of one axis (a mirror,
    clamp or wrap of i in [-lo, n + hi)), and for antiPeriodic which of them are negated."""
    i = np.arange(-lo, n + hi)
    if mode == PaddingMode.clampToEdge:
        return np.clip(i, 0, n - 1), None
    if mode == PaddingMode.reflect:  # period 2n - 2, x[-1] = x[1]
        p = 2 * n - 2
        m = np.mod(i, p) if p else np.zeros_like(i)
        return np.where(m < n, m, p - m), None
    if mode == PaddingMode.symmetric:  # period 2n, x[-1] = x[0]
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m), None
    p = n - 1  # periodic / antiPeriodic: x[i] = (+-1)^q x[i - q (n - 1)] outside [0, n)
    q, m = np.divmod(i, p)
    inside = (i >= 0) & (i < n)
    neg = (~inside & (q % 2 != 0)) if mode == PaddingMode.antiPeriodic else None
    return np.where(inside, i, m), neg


def _along(v: np.ndarray, axis: int, rank: int) -> np.ndarray:
    return v.reshape((-1,) + (1,) * (rank - axis - 1))


@kernel("padTensor")
def padTensor(x: np.ndarray, attrs) -> np.ndarray:
    mode, left, right, value = attrs
    if mode in _FILLS:
        out = np.full(tuple(n + lo + hi for n, lo, hi in zip(x.shape, left, right)), value,
                      x.dtype)
        out[tuple(slice(lo, lo + n) for n, lo in zip(x.shape, left))] = x
        return out
    y = x
    for d, (n, lo, hi) in enumerate(zip(x.shape, left, right)):
        if lo or hi:
            idx, neg = pad_index(n, lo, hi, mode)
            y = np.take(y, idx, axis=d)
            if neg is not None and neg.any():
                y = np.where(_along(neg, d, y.ndim), -y, y)
    return np.array(y)


def _wide(g: np.ndarray) -> np.ndarray:
    return g.astype(np.float32) if g.dtype != np.float32 else g


@kernel("padGradient")
def padGradient(dy: np.ndarray, src: np.ndarray, attrs) -> np.ndarray:
    mode, left, right, shape = attrs
    if mode in _FILLS:
        return np.array(dy[tuple(slice(lo, lo + n) for n, lo in zip(shape, left))])
    g = _wide(dy)
    for d, (n, lo, hi) in enumerate(zip(shape, left, right)):
        if lo or hi:  # scatter-add each padded position into the element it read
            idx, neg = pad_index(n, lo, hi, mode)
            if neg is not None:
                g = np.where(_along(neg, d, g.ndim), -g, g)
            out = np.zeros(g.shape[:d] + (n,) + g.shape[d + 1:], g.dtype)
            np.add.at(out, (slice(None),) * d + (idx,), g)
            g = out
    return g.astype(dy.dtype)


@kernel("tileTensor")
def tileTensor(x: np.ndarray, mult: tuple[int, ...]) -> np.ndarray:
    return np.tile(x, mult) if mult else x.copy()


@kernel("tileGradient")
def tileGradient(dy: np.ndarray, src: np.ndarray, attrs) -> np.ndarray:
    mult, shape = attrs
    split = [v for m, n in zip(mult, shape) for v in (m, n)]
    g = _wide(dy).reshape(split).sum(axis=tuple(range(0, 2 * len(shape), 2)))
    return g.astype(dy.dtype).reshape(shape)


# ---------------------------------------------------------------------------- split, stack, ...
@kernel("split")
def split(x: np.ndarray, attrs) -> tuple[np.ndarray, ...]:
    axis, offsets, sizes = attrs
    parts = np.split(x, offsets, axis=axis)
    return parts[0] if len(parts) == 1 else tuple(parts)


@kernel("stack")
def stack(*args) -> np.ndarray:
    *xs, (axis, shape) = args
    return np.stack([np.broadcast_to(x, shape) for x in xs], axis=axis)


@kernel("reverse")
def reverse(x: np.ndarray, axes_tensor, axes: tuple[int, ...]) -> np.ndarray:
    return np.flip(x, axes) if axes else x


@kernel("flatten2D")
def flatten2D(x: np.ndarray, axis_tensor, shape: tuple[int, int]) -> np.ndarray:
    return x.reshape(shape)


def _blocks(x: np.ndarray, attrs) -> np.ndarray:
    """space <-> batch / depth: split axes into sub-axes, permute, merge (attrs resolved)."""
    split_shape, perm, out = attrs
    return x.reshape(split_shape).transpose(perm).reshape(out)


for _k in ("spaceToBatch", "batchToSpace", "spaceToDepth2D", "depthToSpace2D"):
    kernel(_k)(_blocks)


@kernel("coordinate")
def coordinate(anchor: np.ndarray, shape_tensor, attrs) -> np.ndarray:
    axis, shape = attrs
    n = shape[axis]
    return np.array(np.broadcast_to(_along(np.arange(n, dtype=np.int32), axis, len(shape)),
                                    shape))


@kernel("reinterpretCast")
def reinterpretCast(x: np.ndarray, attrs) -> np.ndarray:
    to, shape = attrs
    if to == np.bool_:  # a byte is true unless it is 0
        y = np.ascontiguousarray(x).view(np.uint8) != 0
    else:
        y = np.ascontiguousarray(x).view(to)
    return y.reshape(shape) if shape is not None else y


@kernel("sliceUpdateDataTensor")
def sliceUpdateDataTensor(data: np.ndarray, update: np.ndarray, *args) -> np.ndarray:
    slices, shape = args[-1]
    out = data.copy()
    out[slices] = np.broadcast_to(update, shape)
    return out
