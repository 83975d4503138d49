"""torch kernels of the shape family (semantics: backends/numpy/shape.py). Shapes,
permutations and slices arrive resolved by the shape rules (kernel attrs); reshape, transpose,
positive-stride slices and identity return views (no op writes in place), the others new
tensors. torch has no negative-stride views: such a slice reads the same elements with a
positive stride and flips them."""

from __future__ import annotations

import numpy as np
import torch

from ...types import _NUMPY, SUB_BYTE
from . import kernel
from .arithmetic import HALF, as_signed, torch_dtype, where

SUB_BYTE_NP = {_NUMPY[d]: spec for d, spec in SUB_BYTE.items()}


@kernel("reshape")
def reshape(x: torch.Tensor, shape_tensor, shape: tuple[int, ...]) -> torch.Tensor:
    return x.reshape(shape)


@kernel("broadcast")
def broadcast(x: torch.Tensor, shape_tensor, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.broadcast_to(x, shape).clone()


@kernel("transpose")
def transpose(x: torch.Tensor, perm: tuple[int, ...]) -> torch.Tensor:
    return x.permute(perm)


@kernel("transposeTensor")
def transposeTensor(x: torch.Tensor, dims: tuple[int, int]) -> torch.Tensor:
    return x.transpose(*dims)


def _positive(slices: tuple[slice, ...], shape) -> tuple[tuple[slice, ...], list[int]]:
    """Slices with positive steps selecting the same elements, and the dims to flip after."""
    out, flips = [], []
    for d, (sl, size) in enumerate(zip(slices, shape)):
        start, stop, step = sl.indices(size)
        if step > 0:
            out.append(slice(start, stop, step))
            continue
        n = len(range(start, stop, step))
        if n == 0:
            out.append(slice(0, 0))
            continue
        last = start + (n - 1) * step
        out.append(slice(last, start + 1, -step))
        flips.append(d)
    return tuple(out), flips


def _flip(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """torch.flip (uint16/32/64 through a same-size signed view: torch has no flip for them)."""
    return as_signed(x).flip(dims).view(x.dtype) if dims else x


@kernel("sliceTensor")
def sliceTensor(x: torch.Tensor, slices: tuple[slice, ...]) -> torch.Tensor:
    sl, flips = _positive(slices, x.shape)
    y = x[sl]
    return _flip(y, flips)


@kernel("sliceGradientTensor")
def sliceGradientTensor(dy: torch.Tensor, shape_tensor, attrs) -> torch.Tensor:
    shape, slices = attrs
    out = torch.zeros(shape, dtype=dy.dtype, device=dy.device)
    sl, flips = _positive(slices, shape)
    out[sl] = _flip(dy, flips)
    return out


@kernel("concatTensors")
def concatTensors(*args) -> torch.Tensor:
    *xs, (axis, targets) = args
    y = torch.cat([as_signed(torch.broadcast_to(x, t)) for x, t in zip(xs, targets)], dim=axis)
    return y.view(xs[0].dtype)


def _float_to_int(x: torch.Tensor, to: torch.dtype) -> torch.Tensor:
    """Truncate toward zero, saturate to the type's range, NaN -> 0."""
    info = np.iinfo(str(to).removeprefix("torch."))
    xf = torch.trunc(x.to(torch.float64))
    xf = torch.where(torch.isnan(xf), torch.zeros((), dtype=xf.dtype, device=xf.device), xf)
    hi, lo = xf >= float(info.max), xf <= float(info.min)
    out = torch.where(hi | lo, torch.zeros((), dtype=xf.dtype, device=xf.device), xf).to(to)
    if to == torch.uint64:  # 2^64 - 1 is no int64: its bit pattern
        vmax = torch.full((), -1, dtype=torch.int64, device=x.device).to(to)
    else:
        vmax = torch.full((), int(info.max), dtype=to, device=x.device)
    vmin = torch.full((), int(info.min), dtype=to, device=x.device)
    return where(hi, vmax, where(lo, vmin, out))


def _to_sub_byte(x: torch.Tensor, bits: int, signed: bool) -> torch.Tensor:
    """A cast to a sub-byte integer type, kept in its int8 / uint8 storage: floats truncate and
    saturate to [-2^(bits-1), 2^(bits-1) - 1] or [0, 2^bits - 1] (NaN -> 0), integers wrap
    (two's complement), bools give 0 / 1."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    store = torch.int8 if signed else torch.uint8
    if x.is_complex():
        x = x.real
    if x.dtype.is_floating_point:
        xf = torch.trunc(x.to(torch.float32))
        xf = torch.nan_to_num(xf, nan=0.0, posinf=float(hi), neginf=float(lo))
        return xf.clamp(lo, hi).to(store)
    v = as_signed(x).to(torch.int64) & ((1 << bits) - 1)
    if signed:
        v = torch.where(v > hi, v - (1 << bits), v)
    return v.to(store)


@kernel("cast")
def cast(x: torch.Tensor, to) -> torch.Tensor:
    sub = SUB_BYTE_NP.get(np.dtype(to)) if not isinstance(to, torch.dtype) else None
    if sub is not None:
        return _to_sub_byte(x, *sub)
    to = torch_dtype(to)
    if x.dtype == to:
        return x.clone()
    if to == torch.bool:
        return x != 0
    if x.is_complex() and not to.is_complex:
        x = x.real
    if (x.dtype.is_floating_point or x.dtype in HALF) and not to.is_floating_point \
            and not to.is_complex:
        return _float_to_int(x, to)
    return x.to(to)


@kernel("expandDims")
def expandDims(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    return x.reshape(shape)


@kernel("squeeze")
def squeeze(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    return x.reshape(shape)


@kernel("identity")
def identity(x: torch.Tensor, attrs: None) -> torch.Tensor:
    return x


@kernel("shapeOf")
def shapeOf(x: torch.Tensor, attrs: None) -> torch.Tensor:
    # filled on the device, one size at a time (fill_ of a Python number): torch.tensor(list)
    # and `out[i] = n` copy from the host, which a CUDA-graph capture refuses (the executable
    # then fell back to running op by op)
    out = torch.empty(x.dim(), dtype=torch.int32, device=x.device)
    for i, n in enumerate(x.shape):
        out[i].fill_(n)
    return out
