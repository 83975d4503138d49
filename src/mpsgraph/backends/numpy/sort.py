"""NumPy kernels of the sort and top-k families (semantics: ops/sort.py). One stable argsort
per call: ascending is NumPy's (NaN last); descending sorts the reversed axis ascending and
reverses the result back, which keeps ties in their order and puts NaN first. Half types sort
in float32 (exact: the order of the values is the same)."""

from __future__ import annotations

import numpy as np

from ...ops.sort import SortAttrs
from . import kernel
from .arithmetic import finish, work


def _c(x: np.ndarray) -> np.ndarray:
    """x as a C-order array (rank 0 stays rank 0, unlike np.ascontiguousarray)."""
    return np.asarray(x, order="C")


def stable_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    x = work(x)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    rev = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(rev, axis)


@kernel("argSort")
def argSort(x: np.ndarray, *rest) -> np.ndarray:
    a: SortAttrs = rest[-1]
    return _c(stable_argsort(x, a.axis, a.descending).astype(np.int32))


@kernel("sort")
def sort(x: np.ndarray, *rest) -> np.ndarray:
    a: SortAttrs = rest[-1]
    return _c(np.take_along_axis(x, stable_argsort(x, a.axis, a.descending),
                                                   a.axis))


def _topk_indices(x: np.ndarray, a: SortAttrs) -> np.ndarray:
    order = stable_argsort(x, a.axis, a.descending)
    return np.take(order, np.arange(a.k), axis=a.axis)


def _topk(x: np.ndarray, *rest):
    a: SortAttrs = rest[-1]
    idx = _topk_indices(x, a)
    return (_c(np.take_along_axis(x, idx, a.axis)),
            _c(idx.astype(np.int32)))


def _topk_gradient(gr: np.ndarray, x: np.ndarray, *rest) -> np.ndarray:
    a: SortAttrs = rest[-1]
    idx = _topk_indices(x, a)
    res = np.zeros(x.shape, work(gr).dtype)
    np.put_along_axis(res, idx, work(gr), a.axis)  # distinct positions per line
    return finish(res, gr.dtype)


for _k in ("topK", "bottomK"):
    kernel(_k)(_topk)
for _k in ("topKGradient", "bottomKGradient"):
    kernel(_k)(_topk_gradient)
