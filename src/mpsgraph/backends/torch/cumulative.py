"""torch kernels of the cumulative family, generated from the rows of ops/cumulative.py
(semantics: backends/numpy/cumulative.py). Half types scan in float32; integer sums and
products run in int64 and wrap back to the input type; maximum / minimum of uint16/32/64 scan
in int64 (`ordered`)."""

from __future__ import annotations

import torch

from ...ops.cumulative import CUMULATIVE
from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import finish, ordered, unordered, wide, work

_I64_MIN, _I64_MAX = -(2 ** 63), 2 ** 63 - 1


def cumsum(x: torch.Tensor, axis: int) -> torch.Tensor:
    return torch.cumsum(x, dim=axis)


def cumprod(x: torch.Tensor, axis: int) -> torch.Tensor:
    return torch.cumprod(x, dim=axis)


def cummax(x: torch.Tensor, axis: int) -> torch.Tensor:
    return torch.cummax(x, dim=axis).values  # NaN propagates


def cummin(x: torch.Tensor, axis: int) -> torch.Tensor:
    return torch.cummin(x, dim=axis).values


def _bounds(dt: torch.dtype) -> tuple[int, int]:
    """The lowest and highest value of `dt` in its `ordered` domain."""
    if dt == torch.uint64:
        return _I64_MIN, _I64_MAX
    if dt in (torch.uint16, torch.uint32):
        return 0, (1 << (8 * torch.empty((), dtype=dt).element_size())) - 1
    info = torch.iinfo(dt)
    return info.min, info.max


def _make_kernel(row):
    fn = globals()[row.torch]
    extremum = fn in (cummax, cummin)

    def k(x: torch.Tensor, *rest) -> torch.Tensor:
        axis, exclusive, reverse = rest[-1]  # (rest[0], if any, is the axisTensor's value)
        n = x.shape[axis]
        if n == 0:
            return x.clone()
        if x.dtype.is_floating_point:
            xw = work(x)
        else:
            xw = ordered(x) if extremum else wide(x)
        if reverse:
            xw = torch.flip(xw, [axis])
        y = fn(xw, axis)
        if exclusive:
            if fn is cumsum:
                v = 0
            elif fn is cumprod:
                v = 1
            elif x.dtype.is_floating_point:
                v = float("-inf") if fn is cummax else float("inf")
            else:
                v = _bounds(x.dtype)[0 if fn is cummax else 1]
            shp = list(x.shape)
            shp[axis] = 1
            first = torch.full(shp, v, dtype=y.dtype, device=y.device)
            y = torch.cat([first, y.narrow(axis, 0, n - 1)], dim=axis)
        if reverse:
            y = torch.flip(y, [axis])
        return unordered(y, x.dtype) if extremum and not x.dtype.is_floating_point \
            else finish(y, x.dtype).contiguous()
    k.__name__ = row.name
    return k


for _row in CUMULATIVE.values():
    kernel(_row.name)(_make_kernel(_row))
del _row

# uint16/32/64 on a GPU run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
