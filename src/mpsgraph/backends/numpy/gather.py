"""NumPy kernels of the gather and scatter families (semantics: ops/gather.py).

Every form reduces to flat positions: a gather reads `updates.reshape(-1)` (or a [Bp, pre, n,
post] view of it) at computed positions; a scatter computes, for each element of `updates`,
the flat position `lin` of its destination in the result and combines with `_combine`, whose
unbuffered `ufunc.at` visits duplicates in row-major order of `updates` (deterministic).
"""

from __future__ import annotations

import numpy as np

from ...errors import GraphError, op_error
from ...ops.gather import GatherAttrs
from ...types import ScatterMode
from . import kernel
from .arithmetic import divide, finish, work


def _c(x: np.ndarray) -> np.ndarray:
    """x as a C-order array (rank 0 stays rank 0, unlike np.ascontiguousarray)."""
    return np.asarray(x, order="C")


def _prod(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def check_indices(idx: np.ndarray, n, a: GatherAttrs, wrap: bool = True) -> None:
    """Raise the run-time GraphError for an index outside [-n, n) ([0, n) without wrap)."""
    n = np.asarray(n, np.int64)
    lo = -n if wrap else 0
    bad = (idx < lo) | (idx >= n)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        nn = int(np.broadcast_to(n, idx.shape)[pos])
        raise op_error(GraphError, a.kind, a.label, f"indices in [{-nn if wrap else 0}, {nn}) "
                       "(the size of the indexed axis; checked at run time)",
                       f"{int(idx[pos])} at position {list(pos)}", a.name)


def _wrapped(idx: np.ndarray, n, a: GatherAttrs) -> np.ndarray:
    idx = idx.astype(np.int64)
    if a.check:
        check_indices(idx, n, a)
    return np.where(idx < 0, idx + np.asarray(n, np.int64), idx)


def _axis_grid(full: tuple[int, ...], idx: np.ndarray, a: GatherAttrs):
    """(Bp, pre, n, post) of the full tensor and the [Bp, I] wrapped indices."""
    B, ax = a.batch, a.axis
    n = full[ax]
    i2 = _wrapped(idx, n, a).reshape(_prod(full[:B]), -1) if idx.size or _prod(full[:B]) \
        else np.zeros((0, 0), np.int64)
    return (_prod(full[:B]), _prod(full[B:ax]), n, _prod(full[ax + 1:])), i2


def _nd_rows(full: tuple[int, ...], idx: np.ndarray, a: GatherAttrs):
    """(Bp, D, post) of the full tensor and the [Bp, Qp] row numbers the index vectors name."""
    B = a.batch
    K = idx.shape[-1]
    dims = full[B:B + K]
    v = _wrapped(idx, np.asarray(dims, np.int64), a) if K else idx.astype(np.int64)
    strides = np.array([_prod(dims[k + 1:]) for k in range(K)], np.int64)
    rows = (v * strides).sum(axis=-1) if K else np.zeros(idx.shape[:-1], np.int64)
    Bp = _prod(full[:B])
    return (Bp, _prod(dims), _prod(full[B + K:])), rows.reshape(Bp, -1) if Bp else \
        rows.reshape(0, 0)


# ---------------------------------------------------------------------------- gathers
def _gather(u: np.ndarray, idx: np.ndarray, a: GatherAttrs) -> np.ndarray:
    (Bp, pre, n, post), i2 = _axis_grid(u.shape, idx, a)
    out_shape = u.shape[:a.axis] + idx.shape[a.batch:] + u.shape[a.axis + 1:]
    if _prod(out_shape) == 0:
        return np.zeros(out_shape, u.dtype)
    u4 = u.reshape(Bp, pre, n, post)
    out = u4[np.arange(Bp)[:, None, None], np.arange(pre)[None, :, None], i2[:, None, :]]
    return _c(out.reshape(out_shape))


def _gatherND(u: np.ndarray, idx: np.ndarray, a: GatherAttrs) -> np.ndarray:
    (Bp, D, post), rows = _nd_rows(u.shape, idx, a)
    K = idx.shape[-1]
    out_shape = idx.shape[:-1] + u.shape[a.batch + K:]
    if _prod(out_shape) == 0:
        return np.zeros(out_shape, u.dtype)
    out = u.reshape(Bp, D, post)[np.arange(Bp)[:, None], rows]
    return _c(out.reshape(out_shape))


def _gatherAlong(u: np.ndarray, idx: np.ndarray, *rest) -> np.ndarray:
    a: GatherAttrs = rest[-1]
    n = u.shape[a.axis]
    ok = (idx >= 0) & (idx < n)
    if idx.size == 0 or n == 0:
        return np.zeros(idx.shape, u.dtype)
    safe = np.where(ok, idx, 0).astype(np.int64)
    out = np.take_along_axis(u, safe, a.axis)
    return np.where(ok, out, np.zeros((), u.dtype))


kernel("gather")(lambda u, idx, a: _gather(u, idx, a))
kernel("gatherND")(lambda u, idx, a: _gatherND(u, idx, a))
kernel("gatherAlongAxis")(_gatherAlong)
kernel("gatherAlongAxisTensor")(_gatherAlong)


# ---------------------------------------------------------------------------- scatters
def _combine(res: np.ndarray, lin: np.ndarray, v: np.ndarray, mode: ScatterMode) -> np.ndarray:
    """res.reshape(-1)[lin] (mode)= v, duplicates in order; res is modified and returned."""
    flat = res.reshape(-1)
    with np.errstate(all="ignore"):
        if mode == ScatterMode.add:
            np.add.at(flat, lin, v)
        elif mode == ScatterMode.sub:
            np.subtract.at(flat, lin, v)
        elif mode == ScatterMode.mul:
            np.multiply.at(flat, lin, v)
        elif mode == ScatterMode.div:
            p = np.ones(flat.shape, flat.dtype)
            np.multiply.at(p, lin, v)
            hit = np.zeros(flat.shape, bool)
            hit[lin] = True
            flat[hit] = divide(flat[hit], p[hit])
        elif mode == ScatterMode.min:
            np.minimum.at(flat, lin, v)
        elif mode == ScatterMode.max:
            np.maximum.at(flat, lin, v)
        else:  # set: the last update of each destination (row-major order of updates)
            sel = last_of_each(lin)
            flat[lin[sel]] = v[sel]
    return res


def last_of_each(lin: np.ndarray) -> np.ndarray:
    """The positions in `lin` of the last occurrence of each distinct value."""
    order = np.argsort(lin, kind="stable")
    ls = lin[order]
    last = np.ones(ls.shape, bool)
    last[:-1] = ls[1:] != ls[:-1]
    return order[last]


def _start(data: np.ndarray | None, upd: np.ndarray, a: GatherAttrs) -> np.ndarray:
    if data is not None:
        return np.array(work(data), order="C", copy=True)  # reshape(-1) must be a view
    return np.zeros(a.shape, work(upd).dtype)


def _scatter(data, upd: np.ndarray, idx: np.ndarray, a: GatherAttrs) -> np.ndarray:
    res = _start(data, upd, a)
    if upd.size:
        (Bp, pre, n, post), i2 = _axis_grid(res.shape, idx, a)
        b = np.arange(Bp, dtype=np.int64)[:, None, None, None]
        p = np.arange(pre, dtype=np.int64)[None, :, None, None]
        q = np.arange(post, dtype=np.int64)[None, None, None, :]
        lin = ((b * pre + p) * n + i2[:, None, :, None]) * post + q
        _combine(res, lin.reshape(-1), work(upd).reshape(-1), a.mode)
    return _c(finish(res, upd.dtype))


def _scatterND(data, upd: np.ndarray, idx: np.ndarray, a: GatherAttrs) -> np.ndarray:
    res = _start(data, upd, a)
    if upd.size:
        (Bp, D, post), rows = _nd_rows(res.shape, idx, a)
        b = np.arange(Bp, dtype=np.int64)[:, None, None]
        q = np.arange(post, dtype=np.int64)[None, None, :]
        lin = (b * D + rows[:, :, None]) * post + q
        _combine(res, lin.reshape(-1), work(upd).reshape(-1), a.mode)
    return _c(finish(res, upd.dtype))


def along_positions(shape: tuple[int, ...], idx: np.ndarray, axis: int):
    """The flat positions in a tensor of `shape` that each element of `idx` (same rank; its
    value replaces the coordinate at `axis`) names, and whether it is in [0, n)."""
    n = shape[axis]
    strides = [_prod(shape[d + 1:]) for d in range(len(shape))]
    lin = np.zeros(idx.shape, np.int64)
    for d in range(idx.ndim):  # one broadcast term per axis (rank <= 16), not per element
        if d == axis:
            continue
        r = np.arange(idx.shape[d], dtype=np.int64).reshape(
            [-1 if e == d else 1 for e in range(idx.ndim)])
        lin = lin + r * strides[d]
    ok = (idx >= 0) & (idx < n)
    return lin + np.where(ok, idx, 0).astype(np.int64) * strides[axis], ok


def _scatterAlong(*args) -> np.ndarray:
    a: GatherAttrs = args[-1]
    ins = list(args[:-1])
    if a.shape is None:  # (data, updates, indices[, axisTensor])
        data, upd, idx = ins[0], ins[1], ins[2]
    else:  # (updates, indices[, axisTensor]) onto zeros of shape
        data, upd, idx = None, ins[0], ins[1]
    res = _start(data, upd, a)
    if upd.size:
        lin, ok = along_positions(res.shape, idx, a.axis)
        _combine(res, lin[ok], work(upd)[ok], a.mode)
    return _c(finish(res, upd.dtype))


kernel("scatter")(lambda u, idx, a: _scatter(None, u, idx, a))
kernel("scatterWithData")(lambda d, u, idx, a: _scatter(d, u, idx, a))
kernel("scatterND")(lambda u, idx, a: _scatterND(None, u, idx, a))
kernel("scatterNDWithData")(lambda d, u, idx, a: _scatterND(d, u, idx, a))
kernel("scatterAlongAxis")(_scatterAlong)
kernel("scatterAlongAxisTensor")(_scatterAlong)
