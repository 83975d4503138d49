"""torch kernels of the reduction family, generated from the rows of ops/reduction.py
(semantics: backends/numpy/reduction.py). `axes` is the normalised tuple from the shape rule;
every result keeps the reduced axes with size 1. An empty `axes` reduces nothing (torch would
read `dim=()` as every axis). Maximum / minimum ignore NaN (NaN loses to a number; all-NaN gives
NaN), the ...PropagateNaN variants propagate it; both give the type's lowest / highest value for
an empty slice. uint16/32/64 compute in int64 (`wide` / `ordered`)."""

from __future__ import annotations

import torch

from ...ops.reduction import REDUCTIONS
from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import finish, ordered, unordered, wide, work


def _kept(x: torch.Tensor, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))


def total(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    if not axes:
        return x.clone()
    return finish(torch.sum(wide(work(x)), dim=axes, keepdim=True), x.dtype)


def product(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    if not axes:
        return x.clone()
    xw = wide(work(x))
    # torch.prod takes one dim: the reduced axes moved last and flattened into one
    keep = [i for i in range(x.dim()) if i not in axes]
    moved = xw.permute(keep + list(axes)).reshape([x.shape[i] for i in keep] +
                                                  [_count(x, axes)])
    p = torch.prod(moved, dim=-1)  # integers: int64, wrapped back by finish
    return finish(p.reshape(_kept(x, axes)), x.dtype)


def _count(x: torch.Tensor, axes: tuple[int, ...]) -> int:
    n = 1
    for i in axes:
        n *= x.shape[i]
    return n


def mean(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    if not axes:
        return x.clone()
    xw = work(x)
    s = torch.sum(xw, dim=axes, keepdim=True)
    n = _count(x, axes)
    return finish(s / torch.full((), float(n), dtype=xw.dtype, device=x.device), x.dtype)


def _extremum(x: torch.Tensor, axes: tuple[int, ...], fn, lowest: bool,
              propagate: bool = False) -> torch.Tensor:
    shape = _kept(x, axes)
    if any(x.shape[i] == 0 for i in axes):  # an empty slice: the identity
        if x.dtype.is_floating_point:
            v = float("-inf") if lowest else float("inf")
            return torch.full(shape, v, dtype=x.dtype, device=x.device)
        o = ordered(torch.zeros((), dtype=x.dtype, device=x.device))
        info = torch.iinfo(o.dtype)
        if x.dtype in (torch.uint16, torch.uint32):  # widened to int64: the unsigned range
            lo, hi = 0, (1 << (8 * x.element_size())) - 1
        else:
            lo, hi = info.min, info.max
        full = torch.full(shape, lo if lowest else hi, dtype=o.dtype, device=x.device)
        return unordered(full, x.dtype)
    if not axes:
        return x.clone()
    if x.dtype.is_floating_point:
        xw = work(x)
        if propagate:  # amax / amin propagate NaN
            return finish(fn(xw, dim=axes, keepdim=True), x.dtype)
        nan = torch.isnan(xw)
        fill = float("-inf") if lowest else float("inf")
        y = fn(torch.where(nan, torch.full((), fill, dtype=xw.dtype, device=x.device), xw),
               dim=axes, keepdim=True)
        all_nan = torch.sum((~nan).to(torch.int32), dim=axes, keepdim=True) == 0
        y = torch.where(all_nan, torch.full((), float("nan"), dtype=y.dtype,
                                            device=x.device), y)
        return finish(y, x.dtype)
    return unordered(fn(ordered(x), dim=axes, keepdim=True), x.dtype)


def maximum(x, axes):
    return _extremum(x, axes, torch.amax, True)


def minimum(x, axes):
    return _extremum(x, axes, torch.amin, False)


def maximum_nan(x, axes):
    return _extremum(x, axes, torch.amax, True, True)


def minimum_nan(x, axes):
    return _extremum(x, axes, torch.amin, False, True)


def _arg(x: torch.Tensor, axes: tuple[int, ...], fn) -> torch.Tensor:
    # torch.argmax / argmin: the first index among ties, NaN counts as the extremum
    xw = work(x) if x.dtype.is_floating_point else ordered(x)
    if xw.dtype == torch.bool:
        xw = xw.to(torch.uint8)
    return fn(xw, dim=axes[0], keepdim=True).to(torch.int32)


def argmax(x, axes):
    return _arg(x, axes, torch.argmax)


def argmin(x, axes):
    return _arg(x, axes, torch.argmin)


def _truth(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.bool else torch.logical_not(torch.eq(x, 0))  # NaN: true


def all_true(x, axes):
    t = _truth(x)
    if axes:
        t = torch.all(t, dim=axes, keepdim=True)
    return t.to(x.dtype)


def any_true(x, axes):
    t = _truth(x)
    if axes:
        t = torch.any(t, dim=axes, keepdim=True)
    return t.to(x.dtype)


for _row in REDUCTIONS.values():  # the row's helper is the kernel itself
    kernel(_row.name)(globals()[_row.torch])
del _row

# uint16/32/64 on a GPU run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
