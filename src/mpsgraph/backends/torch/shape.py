"""torch kernels of the shape family (semantics: backends/numpy/shape.py). Shapes,
permutations and slices arrive resolved by the shape rules (kernel attrs); reshape, transpose,
positive-stride slices and identity return views (no op writes in place), the others new
tensors. torch has no negative-stride views: such a slice reads the same elements with a
positive stride and flips them."""

from __future__ import annotations

import numpy as np
import torch

from ...types import _NUMPY, SUB_BYTE, PaddingMode
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


def _positive(slices: tuple[slice | int, ...], shape) -> tuple[tuple[slice | int, ...],
                                                                 list[int]]:
    """Slices with positive steps selecting the same elements, and the dims (of the result:
    an int index removes its axis) to flip after."""
    out, flips, d = [], [], 0
    for sl, size in zip(slices, shape):
        if isinstance(sl, int):
            out.append(sl)
            continue
        start, stop, step = sl.indices(size)
        n = len(range(start, stop, step))
        if step > 0:
            out.append(slice(start, stop, step))
        elif n == 0:
            out.append(slice(0, 0))
        else:
            last = start + (n - 1) * step
            out.append(slice(last, start + 1, -step))
            flips.append(d)
        d += 1
    return tuple(out), flips


def _flip(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """torch.flip (uint16/32/64 through a same-size signed view: torch has no flip for them)."""
    return as_signed(x).flip(dims).view(x.dtype) if dims else x


@kernel("sliceTensor")
def sliceTensor(x: torch.Tensor, *args) -> torch.Tensor:
    sl, flips = _positive(args[-1], x.shape)
    y = x[sl]
    return _flip(y, flips)


@kernel("sliceGradientTensor")
def sliceGradientTensor(dy: torch.Tensor, shape_tensor, *args) -> torch.Tensor:
    shape, slices = args[-1]
    out = torch.zeros(shape, dtype=dy.dtype, device=dy.device)
    sl, flips = _positive(slices, shape)
    out[sl] = _flip(dy, flips)
    return out


@kernel("concatTensors")
def concatTensors(*args) -> torch.Tensor:
    *xs, attrs = args
    axis, targets = attrs[:2]
    xs_s = [as_signed(torch.broadcast_to(x, t)) for x, t in zip(xs, targets)]
    if len(attrs) == 3:  # interleave
        return torch.stack(xs_s, dim=axis + 1).reshape(attrs[2]).view(xs[0].dtype)
    return torch.cat(xs_s, dim=axis).view(xs[0].dtype)


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


# ---------------------------------------------------------------------------- pad, tile
_FILLS = (PaddingMode.constant, PaddingMode.zero)


def _pad_index(n: int, lo: int, hi: int, mode: PaddingMode, device):
    """numpy/shape.py's pad_index, computed on the device (no host copy: CUDA-graph safe)."""
    i = torch.arange(-lo, n + hi, device=device)
    if mode == PaddingMode.clampToEdge:
        return i.clamp(0, n - 1), None
    if mode == PaddingMode.reflect:
        p = 2 * n - 2
        m = torch.remainder(i, p) if p else torch.zeros_like(i)
        return torch.where(m < n, m, p - m), None
    if mode == PaddingMode.symmetric:
        m = torch.remainder(i, 2 * n)
        return torch.where(m < n, m, 2 * n - 1 - m), None
    p = n - 1
    q = torch.div(i, p, rounding_mode="floor")
    m = i - q * p
    inside = (i >= 0) & (i < n)
    neg = (~inside & (torch.remainder(q, 2) != 0)) if mode == PaddingMode.antiPeriodic else None
    return torch.where(inside, i, m), neg


def _along(v: torch.Tensor, axis: int, rank: int) -> torch.Tensor:
    return v.reshape((-1,) + (1,) * (rank - axis - 1))


@kernel("padTensor")
def padTensor(x: torch.Tensor, attrs) -> torch.Tensor:
    mode, left, right, value = attrs
    xs = as_signed(x)
    if mode in _FILLS:
        shape = tuple(n + lo + hi for n, lo, hi in zip(x.shape, left, right))
        v = np.asarray(value)
        if x.dtype in _WIDE:  # filled through the same-size signed type (the bit pattern)
            v = v.view(v.dtype.str.replace("u", "i"))
        out = torch.full(shape, v.item(), dtype=xs.dtype, device=x.device)
        out[tuple(slice(lo, lo + n) for n, lo in zip(x.shape, left))] = xs
        return out.view(x.dtype) if out.dtype != x.dtype else out
    y = xs
    for d, (n, lo, hi) in enumerate(zip(x.shape, left, right)):
        if lo or hi:
            idx, neg = _pad_index(n, lo, hi, mode, x.device)
            y = y.index_select(d, idx)
            if neg is not None:
                y = torch.where(_along(neg, d, y.dim()), -y, y)
    return y.view(x.dtype) if y.dtype != x.dtype else y.contiguous()


def _wide(g: torch.Tensor) -> torch.Tensor:
    return g.float() if g.dtype != torch.float32 else g


@kernel("padGradient")
def padGradient(dy: torch.Tensor, src, attrs) -> torch.Tensor:
    mode, left, right, shape = attrs
    if mode in _FILLS:
        return dy[tuple(slice(lo, lo + n) for n, lo in zip(shape, left))].clone()
    g = _wide(dy)
    for d, (n, lo, hi) in enumerate(zip(shape, left, right)):
        if lo or hi:
            idx, neg = _pad_index(n, lo, hi, mode, dy.device)
            if neg is not None:
                g = torch.where(_along(neg, d, g.dim()), -g, g)
            out = torch.zeros(g.shape[:d] + (n,) + g.shape[d + 1:], dtype=g.dtype,
                              device=g.device)
            g = out.index_add_(d, idx, g)
    return g.to(dy.dtype)


_WIDE = tuple(getattr(torch, n) for n in ("uint16", "uint32", "uint64") if hasattr(torch, n))


@kernel("tileTensor")
def tileTensor(x: torch.Tensor, mult: tuple[int, ...]) -> torch.Tensor:
    return as_signed(x).repeat(mult).view(x.dtype) if mult else x.clone()


@kernel("tileGradient")
def tileGradient(dy: torch.Tensor, src, attrs) -> torch.Tensor:
    mult, shape = attrs
    split = [v for m, n in zip(mult, shape) for v in (m, n)]
    g = _wide(dy).reshape(split).sum(dim=tuple(range(0, 2 * len(shape), 2))) if shape else \
        _wide(dy)
    return g.to(dy.dtype).reshape(shape)


# ---------------------------------------------------------------------------- split, stack, ...
@kernel("split")
def split(x: torch.Tensor, attrs) -> tuple[torch.Tensor, ...]:
    axis, offsets, sizes = attrs
    parts = torch.split(x, list(sizes), dim=axis)
    return parts[0] if len(parts) == 1 else tuple(parts)


@kernel("stack")
def stack(*args) -> torch.Tensor:
    *xs, (axis, shape) = args
    y = torch.stack([as_signed(torch.broadcast_to(x, shape)) for x in xs], dim=axis)
    return y.view(xs[0].dtype)


@kernel("reverse")
def reverse(x: torch.Tensor, axes_tensor, axes: tuple[int, ...]) -> torch.Tensor:
    return _flip(x, list(axes))


@kernel("flatten2D")
def flatten2D(x: torch.Tensor, axis_tensor, shape: tuple[int, int]) -> torch.Tensor:
    return x.reshape(shape)


def _blocks(x: torch.Tensor, attrs) -> torch.Tensor:
    split_shape, perm, out = attrs
    y = as_signed(x).reshape(split_shape).permute(perm).reshape(out)
    return y.view(x.dtype) if y.dtype != x.dtype else y


for _k in ("spaceToBatch", "batchToSpace", "spaceToDepth2D", "depthToSpace2D"):
    kernel(_k)(_blocks)


@kernel("coordinate")
def coordinate(anchor: torch.Tensor, shape_tensor, attrs) -> torch.Tensor:
    axis, shape = attrs
    v = torch.arange(shape[axis], dtype=torch.int32, device=anchor.device)
    return _along(v, axis, len(shape)).expand(shape).contiguous()


@kernel("reinterpretCast")
def reinterpretCast(x: torch.Tensor, attrs) -> torch.Tensor:
    to, shape = attrs
    to = torch_dtype(to)
    flat = x.contiguous().reshape(-1)  # (a flat view: dtype views need stride-1 rows)
    if flat.numel() == 0:
        return torch.empty(shape, dtype=to, device=x.device)
    if flat.stride(0) != 1:
        flat = torch.empty(flat.shape, dtype=flat.dtype, device=flat.device).copy_(flat)
    y = flat.view(torch.uint8) != 0 if to == torch.bool else flat.view(to)
    return y.reshape(shape) if shape is not None else y


@kernel("sliceUpdateDataTensor")
def sliceUpdateDataTensor(data: torch.Tensor, update: torch.Tensor, *args) -> torch.Tensor:
    slices, shape = args[-1]
    out = data.clone()
    sl, flips = _positive(slices, data.shape)
    as_signed(out)[sl] = _flip(as_signed(torch.broadcast_to(update, shape)), flips)
    return out
