"""torch kernels of the gather and scatter families (semantics: ops/gather.py and
backends/numpy/gather.py, which these mirror with the same flat positions).

Gathers are `index_select` (one indexed axis, no batch: the embedding-table case) or one
advanced-indexing read. Scatters work on rows (see `_combine_rows`); scatter-adds are
`index_put_(accumulate=True)` of whole rows, which CUDA implements by sorting the row numbers
and summing each run of equal ones in order: deterministic, unlike `index_add_` /
`scatter_add_` (atomics). Indices that are not build-time constants are checked
with one device -> host read of an "any out of range" flag (so such ops are never captured in
a CUDA graph: ops/_registry.py `host_reads`).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from ...errors import GraphError, op_error
from ...ops.gather import GatherAttrs
from ...types import ScatterMode
from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import U_WIDE, as_signed, divide, finish, ordered, unordered, wide, work

I64 = torch.int64


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _check(idx: torch.Tensor, n: int, a: GatherAttrs, component: int | None = None) -> None:
    """The run-time GraphError for an index outside [-n, n) (`component`: of ND indices)."""
    bad = (idx < -n) | (idx >= n)
    if bool(bad.any()):  # the one device -> host read
        pos = [int(p) for p in torch.nonzero(bad)[0].tolist()]
        v = int(idx[tuple(pos)])
        if component is not None:
            pos.append(component)
        raise op_error(GraphError, a.kind, a.label, f"indices in [{-n}, {n}) (the size of "
                       "the indexed axis; checked at run time)", f"{v} at position {pos}",
                       a.name)


def _wrapped(idx: torch.Tensor, n: int, a: GatherAttrs, dtype=I64,
             component: int | None = None) -> torch.Tensor:
    """`idx` with negative indices wrapped (+ n), as `dtype`. Fed indices are checked with
    ONE kernel (aminmax) and one device -> host read of its two values, which also tell
    whether any index is negative (if none, no wrapping kernel runs)."""
    negative = a.negative
    if a.check and idx.numel():
        lo, hi = torch.stack(torch.aminmax(idx)).tolist()  # the one device -> host read
        if lo < -n or hi >= n:
            _check(idx, n, a, component)  # finds the first offender and raises
        negative = lo < 0
    idx = idx.to(dtype)
    return torch.where(idx < 0, idx + n, idx) if negative else idx


def _nd_rows(full, idx: torch.Tensor, a: GatherAttrs):
    """(Bp, D, post) of the full tensor and the [Bp, Qp] row numbers the index vectors name
    (one term per index component: no host -> device copy, so CUDA graphs can hold it)."""
    B = a.batch
    K = idx.shape[-1]
    dims = list(full[B:B + K])
    Bp = _prod(full[:B])
    rows = torch.zeros(idx.shape[:-1], dtype=I64, device=idx.device)
    for k in range(K):  # K <= rank
        rows = rows + _wrapped(idx[..., k], dims[k], a, component=k) * _prod(dims[k + 1:])
    return (Bp, _prod(dims), _prod(full[B + K:])), rows.reshape(Bp, -1) if Bp else \
        rows.reshape(0, 0)


# ---------------------------------------------------------------------------- gathers
def _gather(u: torch.Tensor, idx: torch.Tensor, a: GatherAttrs) -> torch.Tensor:
    B, ax = a.batch, a.axis
    us = tuple(u.shape)
    n = us[ax]
    out_shape = us[:ax] + tuple(idx.shape[B:]) + us[ax + 1:]
    if _prod(out_shape) == 0:
        if a.check and idx.numel():
            _check(idx, n, a)
        return torch.zeros(out_shape, dtype=u.dtype, device=u.device)
    Bp, pre, post = _prod(us[:B]), _prod(us[B:ax]), _prod(us[ax + 1:])
    if Bp == 1 and pre == 1:  # rows of a table: index_select (int32 indices are fine)
        i1 = _wrapped(idx.reshape(-1), n, a, idx.dtype)
        return torch.index_select(u.reshape(n, post), 0, i1).reshape(out_shape)
    i2 = _wrapped(idx, n, a).reshape(Bp, -1)
    u4 = u.reshape(Bp, pre, n, post)
    b = torch.arange(Bp, device=u.device)[:, None, None]
    p = torch.arange(pre, device=u.device)[None, :, None]
    return u4[b, p, i2[:, None, :]].reshape(out_shape)


def _gatherND(u: torch.Tensor, idx: torch.Tensor, a: GatherAttrs) -> torch.Tensor:
    K = idx.shape[-1]
    out_shape = tuple(idx.shape[:-1]) + tuple(u.shape[a.batch + K:])
    if _prod(out_shape) == 0:
        if a.check and idx.numel():
            _nd_rows(u.shape, idx, a)  # (the check)
        return torch.zeros(out_shape, dtype=u.dtype, device=u.device)
    (Bp, D, post), rows = _nd_rows(u.shape, idx, a)
    b = torch.arange(Bp, device=u.device)[:, None]
    return u.reshape(Bp, D, post)[b, rows].reshape(out_shape)


def _gatherAlong(u: torch.Tensor, idx: torch.Tensor, *rest) -> torch.Tensor:
    a: GatherAttrs = rest[-1]
    n = u.shape[a.axis]
    if idx.numel() == 0 or n == 0:
        return torch.zeros(idx.shape, dtype=u.dtype, device=u.device)
    ok = (idx >= 0) & (idx < n)
    safe = torch.where(ok, idx, torch.zeros((), dtype=idx.dtype, device=idx.device)).to(I64)
    out = torch.gather(u, a.axis, safe)
    return torch.where(ok, out, torch.zeros((), dtype=u.dtype, device=u.device))


kernel("gather")(lambda u, idx, a: _gather(u, idx, a))
kernel("gatherND")(lambda u, idx, a: _gatherND(u, idx, a))
kernel("gatherAlongAxis")(_gatherAlong)
kernel("gatherAlongAxisTensor")(_gatherAlong)


# ---------------------------------------------------------------------------- scatters
# Every scatter is rows: the result viewed as [R, post] plus one DUMP row R (sliced off at
# the end), each update row names its destination row (or the dump row: a skipped
# along-axis update, a set update that is not the last of its destination). No step reads a
# value back to the host, so a scatter with constant indices can be captured in a CUDA graph.
def _combine_rows(ext: torch.Tensor, R: int, rows: torch.Tensor, v: torch.Tensor,
                  mode: ScatterMode) -> torch.Tensor:
    """ext [R (+ 1 dump row), post] (mode)= v [U, post] at rows [U] (int64, in [0, R]; row R
    only where ext has the dump row); returns the first R rows."""
    post = ext.shape[1]
    if mode in (ScatterMode.add, ScatterMode.sub):
        if mode == ScatterMode.sub:
            v = -v
        ext.index_put_((rows,), v, accumulate=True)  # sort-based: deterministic
    elif mode == ScatterMode.set:  # the last update of each destination wins
        pos = torch.arange(rows.numel(), dtype=I64, device=rows.device)
        last = torch.full((R + 1,), -1, dtype=I64, device=rows.device).scatter_reduce_(
            0, rows, pos, "amax")
        ext[torch.where(last[rows] == pos, rows, R)] = v  # distinct rows, except the dump
    else:
        idx = rows[:, None].expand(-1, post)
        if mode == ScatterMode.div:
            p = torch.ones_like(ext).scatter_reduce_(0, idx, v, "prod")
            hit = torch.zeros((ext.shape[0], 1), dtype=torch.bool, device=ext.device)
            hit[rows] = True
            ext = torch.where(hit, divide(ext, p), ext)
        else:
            red = {ScatterMode.mul: "prod", ScatterMode.min: "amin", ScatterMode.max: "amax"}
            ext.scatter_reduce_(0, idx, v, red[mode])
            if mode != ScatterMode.mul and ext.dtype.is_floating_point:  # a NaN update wins
                nan = torch.zeros(ext.shape, dtype=torch.int32, device=ext.device)
                nan.index_put_((rows,), torch.isnan(v).to(torch.int32), accumulate=True)
                ext.masked_fill_(nan > 0, float("nan"))
    return ext[:R]


def _alloc(data, upd: torch.Tensor, a: GatherAttrs, full: tuple[int, ...], post: int,
           dump: bool) -> tuple[torch.Tensor, int]:
    """The result's rows [R, post] (data's values, or a.fill), with one more (dump) row when
    `dump`: (buffer, R). One pass over the result: no copy besides data's."""
    R = _prod(full) // post
    dt = work(upd).dtype
    n = R + (1 if dump else 0)
    if data is None:
        return torch.full((n, post), a.fill, dtype=dt, device=upd.device), R
    ext = torch.empty((n, post), dtype=dt, device=upd.device)
    ext[:R].copy_(work(data).reshape(R, post))
    return ext, R


def _empty_result(data, upd: torch.Tensor, a: GatherAttrs, full) -> torch.Tensor:
    if data is not None:
        return finish(work(data).clone(memory_format=torch.contiguous_format), upd.dtype)
    return finish(torch.full(full, a.fill, dtype=work(upd).dtype, device=upd.device), upd.dtype)


def _full_shape(data, a: GatherAttrs) -> tuple[int, ...]:
    return tuple(data.shape) if data is not None else tuple(a.shape)


def _scatter(data, upd: torch.Tensor, idx: torch.Tensor, a: GatherAttrs) -> torch.Tensor:
    full = _full_shape(data, a)
    if not upd.numel():
        if a.check and idx.numel():
            _check(idx, full[a.axis], a)
        return _empty_result(data, upd, a, full)
    B, ax = a.batch, a.axis
    n = full[ax]
    Bp, pre, post = _prod(full[:B]), _prod(full[B:ax]), _prod(full[ax + 1:])
    i2 = _wrapped(idx, n, a).reshape(Bp, -1)
    if Bp == 1 and pre == 1:  # rows of a table (a gather's gradient): the indices themselves
        rows = i2
    else:
        dev = upd.device
        b = torch.arange(Bp, dtype=I64, device=dev)[:, None, None]
        p = torch.arange(pre, dtype=I64, device=dev)[None, :, None]
        rows = (b * pre + p) * n + i2[:, None, :]  # [Bp, pre, I]: destination rows
    ext, R = _alloc(data, upd, a, full, post, a.mode == ScatterMode.set)
    out = _combine_rows(ext, R, rows.reshape(-1), work(upd).reshape(-1, post), a.mode)
    return finish(out.reshape(full), upd.dtype)


def _scatterND(data, upd: torch.Tensor, idx: torch.Tensor, a: GatherAttrs) -> torch.Tensor:
    full = _full_shape(data, a)
    if not upd.numel():
        return _empty_result(data, upd, a, full)
    (Bp, D, post), rows = _nd_rows(full, idx, a)
    b = torch.arange(Bp, dtype=I64, device=upd.device)[:, None]
    ext, R = _alloc(data, upd, a, full, post, a.mode == ScatterMode.set)
    out = _combine_rows(ext, R, (b * D + rows).reshape(-1), work(upd).reshape(-1, post),
                        a.mode)
    return finish(out.reshape(full), upd.dtype)


def _scatterAlong(*args) -> torch.Tensor:
    a: GatherAttrs = args[-1]
    ins = list(args[:-1])
    if a.shape is None:  # (data, updates, indices[, axisTensor])
        data, upd, idx = ins[0], ins[1], ins[2]
    else:  # (updates, indices[, axisTensor]) onto zeros of shape
        data, upd, idx = None, ins[0], ins[1]
    shape = _full_shape(data, a)
    if not upd.numel():
        return _empty_result(data, upd, a, shape)
    ax = a.axis
    n = shape[ax]
    dev = idx.device
    lin = torch.zeros(idx.shape, dtype=I64, device=dev)
    for d in range(idx.dim()):  # one broadcast term per axis, not per element
        if d != ax:
            r = torch.arange(idx.shape[d], dtype=I64, device=dev).reshape(
                [-1 if e == d else 1 for e in range(idx.dim())])
            lin = lin + r * _prod(shape[d + 1:])
    ok = (idx >= 0) & (idx < n)
    lin = lin + torch.where(ok, idx.to(I64), 0) * _prod(shape[ax + 1:])
    total = _prod(shape)
    lin = torch.where(ok, lin, total)  # out of range: the dump row (skipped)
    ext, R = _alloc(data, upd, a, shape, 1, True)
    out = _combine_rows(ext, R, lin.reshape(-1), work(upd).reshape(-1, 1), a.mode)
    return finish(out.reshape(shape), upd.dtype)


kernel("scatter")(lambda u, idx, a: _scatter(None, u, idx, a))
kernel("scatterWithData")(lambda d, u, idx, a: _scatter(d, u, idx, a))
kernel("scatterND")(lambda u, idx, a: _scatterND(None, u, idx, a))
kernel("scatterNDWithData")(lambda d, u, idx, a: _scatterND(d, u, idx, a))
kernel("scatterAlongAxis")(_scatterAlong)
kernel("scatterAlongAxisTensor")(_scatterAlong)

def _unsigned(fn):
    """uint16/32/64 data (which torch's gather / scatter kernels do not implement): moved as
    the signed type of the same size (gathers, set), combined in int64 (add, sub, mul, div
    wrap back; min / max in the order-preserving `ordered` domain)."""
    def run(*args):
        *ins, a = args
        dts = [t.dtype for t in ins if isinstance(t, torch.Tensor) and t.dtype in U_WIDE]
        if not dts:
            return fn(*args)
        dt = dts[0]
        mode = a.mode
        if mode is None or mode == ScatterMode.set:
            conv, back = as_signed, (lambda y: y.view(dt))
        elif mode in (ScatterMode.min, ScatterMode.max):
            conv, back = ordered, (lambda y: unordered(y, dt))
            if dt == torch.uint64:
                a = replace(a, fill=-(1 << 63))  # 0 in the `ordered` domain
        else:
            conv, back = wide, (lambda y: finish(y, dt))
        return back(fn(*[conv(t) if isinstance(t, torch.Tensor) and t.dtype == dt else t
                         for t in ins], a))
    return run


# uint16/32/64: see _unsigned; on a GPU they run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(_unsigned(KERNELS[_name]))
