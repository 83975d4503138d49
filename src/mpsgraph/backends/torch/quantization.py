"""torch kernels of the quantization family (semantics: backends/numpy/quantization.py).
int4 / uInt4 live in int8 / uint8 tensors (always in range)."""

from __future__ import annotations

import torch

from ..numpy.quantization import RANGE, expand_param, lut_index
from . import kernel, torch_dtype


def _param(p, value, shape, axis, blocks):
    if p is None:
        return float(value)
    return expand_param(p, value, shape, axis, blocks, xp=torch)


@kernel("quantize")
def quantize(x, sc, zp, ka):
    s = _param(sc, ka.scale, x.shape, ka.axis, ka.groups_scale)
    z = _param(zp, ka.zeroPoint, x.shape, ka.axis, ka.groups_zero)
    y = torch.round(x.float() / s + z)  # round half to even
    lo, hi = RANGE[ka.dataType]
    y = torch.nan_to_num(y, nan=0.0, posinf=hi, neginf=lo).clamp(lo, hi)
    return y.to(torch_dtype(ka.dataType))


@kernel("dequantize")
def dequantize(q, sc, zp, ka):
    s = _param(sc, ka.scale, q.shape, ka.axis, ka.groups_scale)
    z = _param(zp, ka.zeroPoint, q.shape, ka.axis, ka.groups_zero)
    y = (q.to(torch.int64).float() - z) * s
    return y.to(torch_dtype(ka.dataType))


@kernel("dequantizeLUT")
def dequantizeLUT(q, lut, ka):
    idx = lut_index(q.shape, ka.blocks, xp=torch, device=q.device)
    y = lut[(*idx, q.to(torch.int64))]
    if ka.axis is not None:
        y = torch.movedim(y, -1, ka.axis)
    return y.contiguous()
