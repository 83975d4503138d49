"""torch kernels of the sort and top-k families (semantics: ops/sort.py). `torch.sort(stable=
True)` (NaN above +inf, as NumPy; stable descending too); top-k is the first k of that sort
(torch.topk orders ties arbitrarily). uint16/32/64 sort in int64 (`ordered`) on the host when
on a GPU; bool sorts as uint8."""

from __future__ import annotations

import torch

from ...ops.sort import SortAttrs
from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import as_signed, finish, ordered, work


def stable_argsort(x: torch.Tensor, axis: int, descending: bool) -> torch.Tensor:
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    elif not x.dtype.is_floating_point:
        x = ordered(x)
    return torch.sort(x, dim=axis, descending=descending, stable=True).indices


@kernel("argSort")
def argSort(x: torch.Tensor, *rest) -> torch.Tensor:
    a: SortAttrs = rest[-1]
    return stable_argsort(x, a.axis, a.descending).to(torch.int32)


@kernel("sort")
def sort(x: torch.Tensor, *rest) -> torch.Tensor:
    a: SortAttrs = rest[-1]
    return torch.gather(as_signed(x), a.axis, stable_argsort(x, a.axis, a.descending)
                        ).view(x.dtype)


def _topk_indices(x: torch.Tensor, a: SortAttrs) -> torch.Tensor:
    return stable_argsort(x, a.axis, a.descending).narrow(a.axis, 0, a.k)


def _topk(x: torch.Tensor, *rest):
    a: SortAttrs = rest[-1]
    idx = _topk_indices(x, a)
    return torch.gather(as_signed(x), a.axis, idx).view(x.dtype), idx.to(torch.int32)


def _topk_gradient(gr: torch.Tensor, x: torch.Tensor, *rest) -> torch.Tensor:
    a: SortAttrs = rest[-1]
    idx = _topk_indices(x, a)
    w = as_signed(work(gr))
    res = torch.zeros(x.shape, dtype=w.dtype, device=w.device).scatter_(a.axis, idx, w)
    return finish(res.view(gr.dtype) if gr.dtype != w.dtype and not gr.dtype.is_floating_point
                  else res, gr.dtype)


for _k in ("topK", "bottomK"):
    kernel(_k)(_topk)
for _k in ("topKGradient", "bottomKGradient"):
    kernel(_k)(_topk_gradient)

for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
