"""Entries of the gather and scatter families (ops/gather.py): gather, gatherND,
gatherAlongAxis(Tensor), scatter, scatterWithData, scatterND, scatterNDWithData,
scatterAlongAxis(Tensor), every ScatterMode.

References, written from the definitions and never calling mpsgraph: a Python loop over the
result (gathers) or over the updates in row-major order (scatters), applying each update to
its destination in turn in float64 (integers as Python ints wrapped to the type; `div`
divides by the product of a destination's updates, truncating for integers, x / 0 = 0).
Indices are int32 or int64 with negative values (counting from the end), fed (checked at run
time) or constant (checked at build time); along-axis samples include out-of-range indices
(gather 0, skipped update). Scatter samples have duplicate destinations.
"""

from __future__ import annotations

import numpy as np

from opdb import DT, FLOAT, NUMERIC, ErrorInput, OpInfo, Sample, add, arr, f64, is_float, n_samples

from ._common import cycle, size
from ._common import mg_module as _mg

MODES = ("add", "sub", "mul", "div", "min", "max", "set")
_IDX = (np.int32, np.int64)


def _wrapint(v: int, dtype) -> int:
    info = np.iinfo(dtype)
    bits = 8 * np.dtype(dtype).itemsize
    return ((v - int(info.min)) % (1 << bits)) + int(info.min)


def _vals(x):
    return f64(x) if is_float(x) else np.asarray(x).astype(object)


def _out(res, like):
    return res.astype(np.float64) if is_float(like) else res.astype(like.dtype)


def _apply(cur, v, mode, flt, dtype):
    if mode == "add":
        r = cur + v
    elif mode == "sub":
        r = cur - v
    elif mode == "mul":
        r = cur * v
    elif mode == "min":
        r = np.nan if flt and (np.isnan(cur) or np.isnan(v)) else min(cur, v)
    elif mode == "max":
        r = np.nan if flt and (np.isnan(cur) or np.isnan(v)) else max(cur, v)
    else:
        r = v
    return r if flt else _wrapint(int(r), dtype)


def _scatter_ref(res, dests, vals, mode, flt, dtype):
    """Apply (dest, value) pairs in order; div: divide by the product of each dest's values."""
    prods = {}
    for d, v in zip(dests, vals):
        if mode == "div":
            prods[d] = prods.get(d, 1) * v
            if not flt:
                prods[d] = _wrapint(int(prods[d]), dtype)
        else:
            res[d] = _apply(res[d], v, mode, flt, dtype)
    for d, p in prods.items():
        if flt:
            with np.errstate(all="ignore"):
                res[d] = np.float64(res[d]) / np.float64(p)
        else:
            a, b = int(res[d]), int(p)
            res[d] = 0 if b == 0 else _wrapint(int(abs(a) // abs(b)) * (1 if (a < 0) == (b < 0)
                                                                        else -1), dtype)
    return res


# ---------------------------------------------------------------------------- index drawing
def _indices(rng, shp, n, dt, allow_oob=False):
    if n == 0 and not allow_oob:
        return np.zeros(shp, dt)  # shp has a 0 (the sampler makes sure)
    lo, hi = (-n, n - 1) if not allow_oob else (-2, n + 1)
    return rng.integers(lo, hi + 1, size=shp).astype(dt)


def _fix_empty(shp, n):
    """Index shapes for an axis of size 0 must hold no index."""
    if n == 0 and (not shp or 0 not in shp):
        return tuple(shp) + (0,) if not shp else (0,) + tuple(shp[1:])
    return tuple(shp)


# ---------------------------------------------------------------------------- gather / scatter
def _gather_case(rng, dt, k, pick):
    U = int(rng.integers(1, 4))
    full = tuple(size(rng, 0, 4) for _ in range(U))
    axis = int(rng.integers(0, U))
    B = int(rng.integers(0, axis + 1)) if axis and k % 3 == 0 else 0
    q = tuple(size(rng, 0, 3) for _ in range(int(rng.integers(0, 3))))
    if full[axis] == 0 and 0 not in full[:B] + q:
        q = q + (0,)  # an axis of size 0 takes no index
    ishape = full[:B] + q
    idx = _indices(rng, ishape, full[axis], pick(k, "idt", _IDX))
    ax = axis - U if k % 2 else axis  # negative axes too
    return full, idx, ax, B


def _gather_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        full, idx, ax, B = _gather_case(rng, dt, k, pick)
        u = arr(rng, full, dt)
        form = pick(k, "form", ("fed", "const"))
        kw = {"axis": ax, "batchDimensions": B, "form": form}
        if form == "const":
            yield Sample([u], {**kw, "idx": idx}, diff=(0,))
        else:
            yield Sample([u, idx], kw, diff=(0,))


def _build_gather(g, u, *rest, axis, batchDimensions, form, idx=None):
    i = g.constant(idx) if form == "const" else rest[0]
    return g.gather(u, indicesTensor=i, axis=axis, batchDimensions=batchDimensions)


def _ref_gather(u, *rest, axis, batchDimensions, form, idx=None):
    idx = idx if form == "const" else rest[0]
    B, U = batchDimensions, u.ndim
    ax = axis % U
    Qb = idx.ndim - B
    out_shape = u.shape[:ax] + idx.shape[B:] + u.shape[ax + 1:]
    uv = _vals(u)
    out = np.empty(out_shape, object)
    for o in np.ndindex(*out_shape):
        p, i, s = o[:ax], o[ax:ax + Qb], o[ax + Qb:]
        j = int(idx[p[:B] + i])
        out[o] = uv[p + (j % u.shape[ax],) + s]
    return _out(out, u)


def _torch_gather(u, *rest, axis, batchDimensions, form, idx=None):
    import torch

    idx = torch.as_tensor(idx) if form == "const" else rest[0]
    ax = axis % u.dim()
    B = batchDimensions
    n = u.shape[ax]
    i = torch.where(idx < 0, idx + n, idx).long()
    if B == 0:
        out = torch.index_select(u, ax, i.reshape(-1))
        return out.reshape(u.shape[:ax] + i.shape + u.shape[ax + 1:])
    outs = [_torch_gather(u[b], i[b], axis=ax - 1, batchDimensions=B - 1, form="fed")
            for b in range(u.shape[0])]
    if outs:
        return torch.stack(outs)
    return u.reshape(-1)[:0].sum() * 0 + torch.zeros(  # (keeps u in the autograd graph)
        (0,) + u.shape[1:ax] + i.shape[B:] + u.shape[ax + 1:], dtype=u.dtype)


def _scatter_samples(with_data):
    def gen(rng, dt):
        mg = _mg()
        pick = cycle(rng)
        for k in range(n_samples() + 6):
            full, idx, ax, B = _gather_case(rng, dt, k, pick)
            axis = ax % len(full)
            B = 0  # Apple's scatter has no batch dimensions
            idx = _indices(rng, _fix_empty(idx.shape[B:] if B else idx.shape, full[axis]),
                           full[axis], idx.dtype)
            ushape = full[:axis] + idx.shape + full[axis + 1:]
            mode = MODES[k % len(MODES)]
            lo, hi = (0.5, 2.0) if mode in ("mul", "div") else (-3.0, 3.0)
            if dt not in FLOAT and mode in ("mul", "div"):
                lo, hi = 1, 3
            upd = arr(rng, ushape, dt, lo, hi)
            kw = {"axis": ax, "mode": getattr(mg.ScatterMode, mode),
                  "form": pick(k, "form", ("fed", "const"))}
            diff = (0, 1) if with_data else (0,)
            if mode not in ("add", "sub"):
                diff = ()
            if with_data:
                data = arr(rng, full, dt, 0.5, 2.0) if mode in ("mul", "div") else \
                    arr(rng, full, dt)
                ins = [data, upd]
            else:
                kw["shape"] = list(full)
                ins = [upd]
            if kw["form"] == "const":
                yield Sample(ins, {**kw, "idx": idx}, diff=diff)
            else:
                yield Sample(ins + [idx], kw, diff=diff)
    return gen


def _build_scatter(with_data):
    def build(g, *ts, axis, mode, form, shape=None, idx=None):
        ts = list(ts)
        i = g.constant(idx) if form == "const" else ts.pop()
        if with_data:
            return g.scatterWithData(ts[0], updates=ts[1], indices=i, axis=axis, mode=mode)
        return g.scatter(ts[0], indices=i, shape=shape, axis=axis, mode=mode)
    return build


def _ref_scatter(with_data):
    def ref(*arrays, axis, mode, form, shape=None, idx=None):
        arrays = list(arrays)
        idx = idx if form == "const" else arrays.pop()
        upd = arrays[-1]
        flt = is_float(upd)
        full = arrays[0].shape if with_data else tuple(shape)
        res = _vals(arrays[0]).copy() if with_data else np.zeros(full, object)
        if not with_data and flt:
            res = res.astype(np.float64)
        if not with_data and not flt:
            res[...] = 0
        ax = axis % len(full)
        uv = _vals(upd)
        Q = idx.ndim
        dests, vals = [], []
        for o in np.ndindex(*upd.shape):
            p, i, s = o[:ax], o[ax:ax + Q], o[ax + Q:]
            dests.append(p + (int(idx[i]) % full[ax],) + s)
            vals.append(uv[o])
        res = _scatter_ref(res, dests, vals, mode.name, flt, upd.dtype)
        return _out(res, upd)
    return ref


# ---------------------------------------------------------------------------- ND
def _nd_case(rng, dt, k, pick):
    U = int(rng.integers(1, 4))
    full = [size(rng, 0, 3) for _ in range(U)]
    B = int(rng.integers(0, U)) if k % 3 == 0 else 0
    K = int(rng.integers(0, U - B + 1))
    d0 = size(rng, 1, 3)
    full[B:B + K] = [d0] * K  # one size for the indexed axes: shuffled indices stay valid
    full = tuple(full)
    q = tuple(size(rng, 0, 3) for _ in range(int(rng.integers(0, 3))))
    dims = full[B:B + K]
    ishape = full[:B] + q + (K,)
    if any(d == 0 for d in dims) and 0 not in ishape[:-1]:
        ishape = full[:B] + (0,) + (K,)
    idx = np.zeros(ishape, pick(k, "idt", _IDX))
    for c, d in enumerate(dims):
        if d:
            idx[..., c] = rng.integers(-d, d, size=ishape[:-1])
    return full, idx, B


def _gatherND_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        full, idx, B = _nd_case(rng, dt, k, pick)
        u = arr(rng, full, dt)
        yield Sample([u, idx], {"batchDimensions": B}, diff=(0,))


def _ref_gatherND(u, idx, *, batchDimensions):
    B = batchDimensions
    K = idx.shape[-1]
    out_shape = idx.shape[:-1] + u.shape[B + K:]
    uv = _vals(u)
    out = np.empty(out_shape, object)
    Qb = idx.ndim - 1
    for o in np.ndindex(*out_shape):
        vec = tuple(int(v) % u.shape[B + c] for c, v in enumerate(idx[o[:Qb]]))
        out[o] = uv[o[:B] + vec + o[Qb:]]
    return _out(out, u)


def _scatterND_samples(with_data):
    def gen(rng, dt):
        mg = _mg()
        pick = cycle(rng)
        for k in range(n_samples() + 6):
            full, idx, B = _nd_case(rng, dt, k, pick)
            K = idx.shape[-1]
            ushape = idx.shape[:-1] + full[B + K:]
            mode = MODES[(k + 3) % len(MODES)]
            lo, hi = (0.5, 2.0) if mode in ("mul", "div") else (-3.0, 3.0)
            if dt not in FLOAT and mode in ("mul", "div"):
                lo, hi = 1, 3
            upd = arr(rng, ushape, dt, lo, hi)
            kw = {"batchDimensions": B, "mode": getattr(mg.ScatterMode, mode)}
            if k % 7 == 6 and not with_data:
                kw.pop("mode")
                mode = "add"
            diff = ((0, 1) if with_data else (0,)) if mode in ("add", "sub") else ()
            if with_data:
                yield Sample([arr(rng, full, dt, lo, hi), upd, idx], kw, diff=diff)
            else:
                yield Sample([upd, idx], {**kw, "shape": list(full)}, diff=diff)
    return gen


def _build_scatterND(with_data):
    def build(g, *ts, batchDimensions, mode=None, shape=None):
        kw = {} if mode is None else {"mode": mode}
        if with_data:
            return g.scatterNDWithData(ts[0], updates=ts[1], indices=ts[2],
                                       batchDimensions=batchDimensions, **kw)
        return g.scatterND(ts[0], indicesTensor=ts[1], shape=shape,
                           batchDimensions=batchDimensions, **kw)
    return build


def _ref_scatterND(with_data):
    def ref(*arrays, batchDimensions, mode=None, shape=None):
        name = "add" if mode is None else mode.name
        idx = arrays[-1]
        upd = arrays[-2]
        flt = is_float(upd)
        full = arrays[0].shape if with_data else tuple(shape)
        res = _vals(arrays[0]).copy() if with_data else np.zeros(full, np.float64 if flt
                                                                   else object)
        if not with_data and not flt:
            res[...] = 0
        B = batchDimensions
        Qb = idx.ndim - 1
        uv = _vals(upd)
        dests, vals = [], []
        for o in np.ndindex(*upd.shape):
            vec = tuple(int(v) % full[B + c] for c, v in enumerate(idx[o[:Qb]]))
            dests.append(o[:B] + vec + o[Qb:])
            vals.append(uv[o])
        return _out(_scatter_ref(res, dests, vals, name, flt, upd.dtype), upd)
    return ref


# ---------------------------------------------------------------------------- along axis
def _along_samples(scatter, with_axis_tensor):
    def gen(rng, dt):
        mg = _mg()
        pick = cycle(rng)
        for k in range(n_samples() + 6):
            U = int(rng.integers(1, 4))
            full = tuple(size(rng, 0, 4) for _ in range(U))
            axis = int(rng.integers(0, U))
            ishape = tuple(size(rng, 0, 4) if d == axis else full[d] for d in range(U))
            idx = _indices(rng, ishape, full[axis], pick(k, "idt", _IDX), allow_oob=True)
            idx = np.where(idx < 0, idx - 1, idx).astype(idx.dtype)  # negatives: out of range
            ax = axis - U if k % 2 else axis
            kw = {"axis": ax}
            if with_axis_tensor:
                kw["form"] = pick(k, "aform", ("fed", "const"))
            if not scatter:
                ins = [arr(rng, full, dt), idx]
                diff = (0,)
            else:
                mode = MODES[k % len(MODES)]
                lo, hi = (0.5, 2.0) if mode in ("mul", "div") else (-3.0, 3.0)
                if dt not in FLOAT and mode in ("mul", "div"):
                    lo, hi = 1, 3
                upd = arr(rng, ishape, dt, lo, hi)
                kw["mode"] = getattr(mg.ScatterMode, mode)
                diff = () if mode not in ("add", "sub") else None
                if k % 3 == 2:
                    kw["shape"] = list(full)
                    ins = [upd, idx]
                    diff = (0,) if diff is None else diff
                else:
                    ins = [arr(rng, full, dt, lo, hi), upd, idx]
                    diff = (0, 1) if diff is None else diff
            if with_axis_tensor and kw["form"] == "fed":
                ins = ins + [np.array(ax, np.int32)]
            yield Sample(ins, kw, diff=diff)
    return gen


def _build_along(kind):
    def build(g, *ts, axis, form=None, mode=None, shape=None):
        mg = _mg()
        ts = list(ts)
        if form == "fed":
            ax = ts.pop()
        elif form == "const":
            ax = g.constant(axis, dataType=mg.int32)
        else:
            ax = axis
        f = getattr(g, kind)
        if kind.startswith("gather"):
            return f(ax, updates=ts[0], indices=ts[1])
        if shape is not None:
            return f(ax, updates=ts[0], indices=ts[1], shape=shape, mode=mode)
        return f(ax, data=ts[0], updates=ts[1], indices=ts[2], mode=mode)
    return build


def _ref_along(scatter):
    def ref(*arrays, axis, form=None, mode=None, shape=None):
        arrays = list(arrays)
        if form == "fed":
            arrays.pop()
        if not scatter:
            u, idx = arrays
            ax = axis % u.ndim
            uv = _vals(u)
            out = np.empty(idx.shape, object)
            for o in np.ndindex(*idx.shape):
                j = int(idx[o])
                out[o] = uv[o[:ax] + (j,) + o[ax + 1:]] if 0 <= j < u.shape[ax] else 0
            return _out(out, u)
        if shape is not None:
            upd, idx = arrays
            full = tuple(shape)
            flt = is_float(upd)
            res = np.zeros(full, np.float64 if flt else object)
            if not flt:
                res[...] = 0
        else:
            data, upd, idx = arrays
            full = data.shape
            flt = is_float(upd)
            res = _vals(data).copy()
        ax = axis % len(full)
        uv = _vals(upd)
        dests, vals = [], []
        for o in np.ndindex(*idx.shape):
            j = int(idx[o])
            if 0 <= j < full[ax]:
                dests.append(o[:ax] + (j,) + o[ax + 1:])
                vals.append(uv[o])
        return _out(_scatter_ref(res, dests, vals, mode.name, flt, upd.dtype), upd)
    return ref


# ---------------------------------------------------------------------------- errors
def _gather_errors(rng):
    mg = _mg()
    u = np.ones((3, 4), np.float32)
    i = np.array([0, 2], np.int32)
    yield ErrorInput(Sample([u, i.astype(np.float32)], {"axis": 0, "batchDimensions": 0,
                                                         "form": "fed"}),
                     mg.DataTypeError, "indicesTensor")
    yield ErrorInput(Sample([u, i], {"axis": 2, "batchDimensions": 0, "form": "fed"}),
                     mg.ShapeError, "axis")
    yield ErrorInput(Sample([u, i], {"axis": 0, "batchDimensions": 2, "form": "fed"}),
                     mg.ShapeError, "batchDimensions")
    yield ErrorInput(Sample([u, i], {"axis": 0, "batchDimensions": 0.5, "form": "fed"}),
                     mg.GraphError, "batchDimensions")
    # out of range: constant -> ShapeError when built; fed -> GraphError when run
    yield ErrorInput(Sample([u], {"axis": 0, "batchDimensions": 0, "form": "const",
                                  "idx": np.array([3], np.int32)}), mg.ShapeError,
                     "indicesTensor", "3 at position [0]")
    yield ErrorInput(Sample([u, np.array([1, -4], np.int64)], {"axis": 0, "batchDimensions": 0,
                                                               "form": "fed"}),
                     mg.GraphError, "indicesTensor", "-4 at position [1]")


def _scatter_errors(with_data):
    def gen(rng):
        mg = _mg()
        add_ = mg.ScatterMode.add
        d = np.ones((3, 4), np.float32)
        u = np.ones((2, 4), np.float32)
        i = np.array([0, 2], np.int32)
        ins = [d, u] if with_data else [u]
        kw = {} if with_data else {"shape": [3, 4]}
        lab = "updates" if with_data else "updatesTensor"
        yield ErrorInput(Sample(ins + [np.array([0, 3], np.int32)],
                                {**kw, "axis": 0, "mode": add_, "form": "fed"}),
                         mg.GraphError, "indices", "3 at position [1]")
        yield ErrorInput(Sample(ins + [i], {**kw, "axis": 1, "mode": add_, "form": "fed"}),
                         mg.ShapeError, lab)
        yield ErrorInput(Sample(ins + [i], {**kw, "axis": 0, "mode": 9, "form": "fed"}),
                         mg.GraphError, "mode")
        yield ErrorInput(Sample(ins, {**kw, "axis": 0, "mode": add_, "form": "const",
                                      "idx": np.array([0, 5], np.int32)}),
                         mg.ShapeError, "indices")
        b = [x.astype(bool) for x in ins]
        yield ErrorInput(Sample(b + [i], {**kw, "axis": 0, "mode": add_, "form": "fed"}),
                         mg.DataTypeError, lab if not with_data else "updates")
    return gen


def _nd_errors(with_data):
    def gen(rng):
        mg = _mg()
        d = np.ones((3, 4), np.float32)
        if with_data:
            base = [d, np.ones((2,), np.float32)]
            kw = {"batchDimensions": 0, "mode": mg.ScatterMode.add}
        elif with_data is None:  # gatherND
            base = [d]
            kw = {"batchDimensions": 0}
        else:
            base = [np.ones((2,), np.float32)]
            kw = {"batchDimensions": 0, "mode": mg.ScatterMode.add, "shape": [3, 4]}
        lab = "indices" if with_data else "indicesTensor"
        yield ErrorInput(Sample(base + [np.array([[0, 1], [2, 4]], np.int32)], kw),
                         mg.GraphError, lab, "4 at position [1, 1]")
        yield ErrorInput(Sample(base + [np.zeros((2, 3), np.int32)], kw), mg.ShapeError, lab)
        yield ErrorInput(Sample(base + [np.zeros((2, 2), np.float32)], kw), mg.DataTypeError,
                         lab)
    return gen


def _along_errors(scatter):
    def gen(rng):
        mg = _mg()
        u = np.ones((3, 4), np.float32)
        i = np.zeros((3, 2), np.int32)
        kw = {"axis": 1}
        if scatter:
            kw["mode"] = mg.ScatterMode.add
            yield ErrorInput(Sample([u, np.ones((3, 3), np.float32), i], kw), mg.ShapeError,
                             "updates")
            yield ErrorInput(Sample([u, np.ones((3, 2), np.float32), np.zeros((2, 2),
                                                                               np.int32)], kw),
                             mg.ShapeError, "updates")
            yield ErrorInput(Sample([u, np.ones((2, 2), np.float32), np.zeros((2, 2),
                                                                              np.int32)], kw),
                             mg.ShapeError, "indices")
        else:
            yield ErrorInput(Sample([u, np.zeros((2, 2), np.int32)], kw), mg.ShapeError,
                             "indices")
            yield ErrorInput(Sample([u, np.zeros((3,), np.int32)], kw), mg.ShapeError,
                             "indices")
            yield ErrorInput(Sample([u, i], {"axis": 2}), mg.ShapeError, "axis")
            yield ErrorInput(Sample([u, i.astype(np.uint8)], kw), mg.DataTypeError, "indices")
    return gen


ANYT = NUMERIC + (DT.bool,)
add(OpInfo("gather", build=_build_gather, ref=_ref_gather, samples=_gather_samples,
           dtypes=ANYT, differentiable=(0,), torch_ref=_torch_gather, errors=_gather_errors))
add(OpInfo("gatherND", build=lambda g, u, i, batchDimensions: g.gatherND(
    u, indicesTensor=i, batchDimensions=batchDimensions), ref=_ref_gatherND,
    samples=_gatherND_samples, dtypes=ANYT, differentiable=(0,), errors=_nd_errors(None)))
for _k, _t in (("gatherAlongAxis", False), ("gatherAlongAxisTensor", True)):
    add(OpInfo(_k, build=_build_along(_k), ref=_ref_along(False),
               samples=_along_samples(False, _t), dtypes=ANYT, differentiable=(0,),
               errors=_along_errors(False) if not _t else None))
add(OpInfo("scatter", build=_build_scatter(False), ref=_ref_scatter(False),
           samples=_scatter_samples(False), dtypes=NUMERIC, differentiable=(0,),
           errors=_scatter_errors(False)))
add(OpInfo("scatterWithData", build=_build_scatter(True), ref=_ref_scatter(True),
           samples=_scatter_samples(True), dtypes=NUMERIC, differentiable=(0, 1),
           errors=_scatter_errors(True)))
add(OpInfo("scatterND", build=_build_scatterND(False), ref=_ref_scatterND(False),
           samples=_scatterND_samples(False), dtypes=NUMERIC, differentiable=(0,),
           errors=_nd_errors(False)))
add(OpInfo("scatterNDWithData", build=_build_scatterND(True), ref=_ref_scatterND(True),
           samples=_scatterND_samples(True), dtypes=NUMERIC, differentiable=(0, 1),
           errors=_nd_errors(True)))
for _k, _t in (("scatterAlongAxis", False), ("scatterAlongAxisTensor", True)):
    add(OpInfo(_k, build=_build_along(_k), ref=_ref_along(True),
               samples=_along_samples(True, _t), dtypes=NUMERIC, differentiable=(0, 1),
               errors=_along_errors(True) if not _t else None))
