"""torch kernels of the reduction family (semantics: backends/numpy/reduction.py). `axes` is
the normalised tuple from the shape rule; every result keeps the reduced axes with size 1.
An empty `axes` reduces nothing (torch would read `dim=()` as every axis). Maximum / minimum
ignore NaN (NaN loses to a number; all-NaN gives NaN) and give the type's lowest / highest
value for an empty slice."""

from __future__ import annotations

import torch

from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import finish, ordered, unordered, wide, work


@kernel("reductionSum")
def reductionSum(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    if not axes:
        return x.clone()
    return finish(torch.sum(wide(work(x)), dim=axes, keepdim=True), x.dtype)


@kernel("reductionMean")
def reductionMean(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    if not axes:
        return x.clone()
    xw = work(x)
    n = 1
    for i in axes:
        n *= x.shape[i]
    s = torch.sum(xw, dim=axes, keepdim=True)
    return finish(s / torch.full((), float(n), dtype=xw.dtype, device=x.device), x.dtype)


def _extremum(x: torch.Tensor, axes: tuple[int, ...], fn, lowest: bool) -> torch.Tensor:
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    if any(x.shape[i] == 0 for i in axes):  # an empty slice: the identity
        if x.dtype.is_floating_point:
            v = float("-inf") if lowest else float("inf")
            return torch.full(shape, v, dtype=x.dtype, device=x.device)
        o = ordered(torch.zeros((), dtype=x.dtype, device=x.device))
        info = torch.iinfo(o.dtype)
        full = torch.full(shape, info.min if lowest else info.max, dtype=o.dtype,
                          device=x.device)
        return unordered(full, x.dtype)
    if not axes:
        return x.clone()
    if x.dtype.is_floating_point:
        xw = work(x)
        nan = torch.isnan(xw)
        fill = float("-inf") if lowest else float("inf")
        y = fn(torch.where(nan, torch.full((), fill, dtype=xw.dtype, device=x.device), xw),
               dim=axes, keepdim=True)
        all_nan = torch.sum((~nan).to(torch.int32), dim=axes, keepdim=True) == 0
        y = torch.where(all_nan, torch.full((), float("nan"), dtype=y.dtype,
                                            device=x.device), y)
        return finish(y, x.dtype)
    return unordered(fn(ordered(x), dim=axes, keepdim=True), x.dtype)


@kernel("reductionMaximum")
def reductionMaximum(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    return _extremum(x, axes, torch.amax, True)


@kernel("reductionMinimum")
def reductionMinimum(x: torch.Tensor, axes: tuple[int, ...]) -> torch.Tensor:
    return _extremum(x, axes, torch.amin, False)


# uint16/32/64 on a GPU run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
