"""NumPy kernels of the quantization family (ops/quantization.py): float32 arithmetic, ties to
even (`np.rint`), NaN -> 0, saturation to the integer type's range; scale / zero point tensors
broadcast along `axis` or repeated over their groups; the lookup tables by advanced indexing
(one gather, no loop)."""

from __future__ import annotations

import numpy as np

from ...types import DataType
from . import kernel

F32 = np.float32
RANGE = {DataType.int8: (-128, 127), DataType.uInt8: (0, 255), DataType.int4: (-8, 7),
         DataType.uInt4: (0, 15)}


def expand_param(p, value, shape, axis, blocks, xp=np):
    """The scale / zero point as a float32 array broadcastable to `shape` (a number if given
    as one)."""
    if p is None:
        return F32(value)
    p = p.astype(F32) if xp is np else p.float()
    if axis is not None:
        s = [1] * len(shape)
        s[axis] = -1
        return p.reshape(s)
    p = p.reshape((1,) * (len(shape) - p.ndim) + tuple(p.shape))
    if blocks is not None:
        for d, b in enumerate(blocks):
            if p.shape[d] != 1 and b > 1:
                p = np.repeat(p, b, axis=d) if xp is np else p.repeat_interleave(b, dim=d)
    return p


@kernel("quantize")
def quantize(x, sc, zp, ka):
    s = expand_param(sc, ka.scale, x.shape, ka.axis, ka.groups_scale)
    z = expand_param(zp, ka.zeroPoint, x.shape, ka.axis, ka.groups_zero)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        y = np.rint(x.astype(F32) / s + z)
    lo, hi = RANGE[ka.dataType]
    y = np.clip(np.nan_to_num(y, nan=0.0, posinf=hi, neginf=lo), lo, hi)
    return y.astype(np.int64).astype(ka.dataType.numpy_dtype)


@kernel("dequantize")
def dequantize(q, sc, zp, ka):
    s = expand_param(sc, ka.scale, q.shape, ka.axis, ka.groups_scale)
    z = expand_param(zp, ka.zeroPoint, q.shape, ka.axis, ka.groups_zero)
    y = (q.astype(np.int64).astype(F32) - z) * s
    return np.asarray(y, F32).astype(ka.dataType.numpy_dtype)


def lut_index(shape, blocks, xp=np, device=None):
    """Index arrays of the group dimensions (the last len(blocks) dimensions of `shape`)."""
    r, g = len(shape), len(blocks)
    out = []
    for j, b in enumerate(blocks):
        d = r - g + j
        s = [1] * r
        s[d] = shape[d]
        if xp is np:
            out.append((np.arange(shape[d]) // b).reshape(s))
        else:
            out.append((xp.arange(shape[d], device=device) // b).reshape(s))
    return out


@kernel("dequantizeLUT")
def dequantizeLUT(q, lut, ka):
    idx = lut_index(q.shape, ka.blocks)
    y = lut[(*idx, q.astype(np.int64))]
    if ka.axis is not None:
        y = np.moveaxis(y, -1, ka.axis)
    return np.asarray(y, order="C")
