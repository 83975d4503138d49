"""Entries of the sort and top-k families (ops/sort.py): sort, argSort, topK, bottomK,
topKGradient, bottomKGradient.

References never call mpsgraph: each line along the axis is ordered by Python's `sorted`
(stable) with the key (is NaN, value) ascending, or (not NaN, value) reversed... written
out below as an explicit rank: for descending order an element precedes another when it is
NaN and the other is not, or greater, or equal with a lower position. Samples have ties
(small integer ranges), NaN where the dtype has it, axes as ints, negative ints, constant and
fed tensors, k as an int, a constant and a fed tensor.
"""

from __future__ import annotations

import functools

import numpy as np

from opdb import (
    DT,
    FLOAT,
    NUMERIC,
    ErrorInput,
    OpInfo,
    Sample,
    add,
    arr,
    f64,
    is_float,
    n_samples,
    shape,
)

from ._common import cycle
from ._common import mg_module as _mg


def _line_order(vals, descending):
    flt = any(isinstance(v, float) for v in vals)

    def cmp(i, j):
        a, b = vals[i], vals[j]
        an = flt and np.isnan(a)
        bn = flt and np.isnan(b)
        if an != bn:  # NaN above everything
            big_first = an if descending else bn
            return -1 if big_first else 1
        if not an and a != b:
            return (-1 if a > b else 1) if descending else (-1 if a < b else 1)
        return -1 if i < j else (1 if i > j else 0)
    return sorted(range(len(vals)), key=functools.cmp_to_key(cmp))


def _order(x, axis, descending):
    ax = axis % x.ndim
    moved = np.moveaxis(x, ax, -1)
    out = np.zeros(moved.shape, np.int64)
    for idx in np.ndindex(*moved.shape[:-1]):
        vals = [float(v) if is_float(x) else int(v) for v in moved[idx]]
        out[idx] = _line_order(vals, descending)
    return np.moveaxis(out, -1, ax)


def _ax(kw, fed):
    return int(np.asarray(fed.pop(0))) if kw.get("aform") == "fed" else kw["axis"]


def _vals(x):
    return f64(x) if is_float(x) else x


# ---------------------------------------------------------------------------- sort
def _sort_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        r = int(rng.integers(1, 4))
        shp = shape(rng, r, hi=5)
        axis = int(rng.integers(-r, r))
        if dt == DT.bool:
            x = arr(rng, shp, dt)
        elif dt in FLOAT and k % 2:
            x = arr(rng, shp, dt)
        else:
            x = arr(rng, shp, dt, -2, 2).astype(dt.numpy_dtype)  # ties
            if dt in FLOAT:
                x = np.round(f64(x)).astype(dt.numpy_dtype)
        if dt in FLOAT and x.size and k % 3 == 0:
            x.reshape(-1)[rng.integers(0, x.size, size=2)] = np.nan
        kw = {"axis": axis, "aform": pick(k, "aform", ("int", "const", "fed", "kw")),
              "descending": pick(k, "desc", (None, False, True))}
        ins = [x] + ([np.array(axis, np.int32)] if kw["aform"] == "fed" else [])
        distinct = dt == DT.float32 and k % 2 and not np.isnan(f64(x)).any()
        yield Sample(ins, kw, diff=(0,) if distinct else ())


def _build_sort(kind):
    def build(g, x, *fed, axis, aform, descending):
        mg = _mg()
        kw = {} if descending is None else {"descending": descending}
        if aform == "fed":
            kw["axis"] = fed[0]
        elif aform == "const":
            kw["axis"] = g.constant(axis, dataType=mg.int32)
        elif aform == "kw":
            kw["axisTensor"] = g.constant(np.array([axis], np.int64))
        else:
            kw["axis"] = axis
        return getattr(g, kind)(x, **kw)
    return build


def _ref_sort(kind):
    def ref(x, *fed, axis, aform, descending):
        fed = list(fed)
        ax = _ax({"axis": axis, "aform": aform}, fed)
        order = _order(x, ax, bool(descending))
        if kind == "argSort":
            return order.astype(np.int32)
        return np.take_along_axis(_vals(x), order, ax % x.ndim)
    return ref


# ---------------------------------------------------------------------------- top-k
def _topk_samples(grad):
    def gen(rng, dt):
        pick = cycle(rng)
        for k in range(n_samples() + 4):
            r = int(rng.integers(1, 4))
            shp = list(shape(rng, r, hi=5))
            axis = int(rng.integers(-r, r))
            n = shp[axis]
            kk = int(rng.integers(0, n + 1))
            if dt in FLOAT and k % 2 == 0:
                x = np.asarray(rng.permutation(int(np.prod(shp))).reshape(shp) - 3.0
                               ).astype(dt.numpy_dtype)  # distinct (gradients)
            else:
                x = arr(rng, shp, dt, -2, 2)
            kw = {"axis": axis, "k": kk, "aform": pick(k, "aform", ("int", "const", "fed",
                                                                     "none")),
                  "kform": pick(k, "kform", ("int", "const", "fed"))}
            if kw["aform"] == "none":
                kw["axis"] = -1
                kk = min(kk, shp[-1])
                kw["k"] = kk
            oshape = list(shp)
            oshape[kw["axis"]] = kk
            ins = [x]
            if grad:
                ins = [arr(rng, oshape, dt), x]
            if kw["aform"] == "fed":
                ins.append(np.array(kw["axis"], np.int32))
            if kw["kform"] == "fed":
                ins.append(np.array(kk, np.int32))
            distinct = dt == DT.float32 and k % 2 == 0
            static = kw["aform"] != "fed" and kw["kform"] != "fed"  # else shapes are -1
            yield Sample(ins, kw, diff=(0,) if (distinct or grad) and (static or grad)
                         else ())
    return gen


def _build_topk(kind):
    def build(g, *ts, axis, k, aform, kform):
        mg = _mg()
        ts = list(ts)
        kw = {}
        fed_k = ts.pop() if kform == "fed" else None
        fed_a = ts.pop() if aform == "fed" else None
        if aform == "fed":
            kw["axis"] = fed_a
        elif aform == "const":
            kw["axisTensor"] = g.constant(axis, dataType=mg.int32)
        elif aform == "int":
            kw["axis"] = axis
        if kform == "fed":
            kw["k"] = fed_k
        elif kform == "const":
            kw["kTensor"] = g.constant(k, dataType=mg.int32)
        else:
            kw["k"] = k
        f = getattr(g, kind)
        if kind.endswith("Gradient"):
            return f(ts[0], source=ts[1], **kw)
        return f(ts[0], **kw)
    return build


def _ref_topk(kind):
    def ref(*arrays, axis, k, aform, kform):
        arrays = list(arrays)
        x = arrays[1] if kind.endswith("Gradient") else arrays[0]
        ax = axis % x.ndim
        order = np.take(_order(x, ax, kind.startswith("topK")), np.arange(k), axis=ax)
        if kind.endswith("Gradient"):
            gr = _vals(arrays[0])
            res = np.zeros(x.shape, np.float64 if is_float(gr) else gr.dtype)
            for o in np.ndindex(*order.shape):
                res[o[:ax] + (int(order[o]),) + o[ax + 1:]] = gr[o]
            return res
        return [np.take_along_axis(_vals(x), order, ax), order.astype(np.int32)]
    return ref


def _torch_topk(kind):
    def ref(*ts, axis, k, aform, kform):
        import torch

        x = ts[1] if kind.endswith("Gradient") else ts[0]
        ax = axis % x.dim()
        idx = torch.sort(x.detach(), dim=ax, descending=kind.startswith("topK"),
                         stable=True).indices.narrow(ax, 0, k)
        if kind.endswith("Gradient"):
            return torch.zeros(x.shape, dtype=ts[0].dtype).scatter(ax, idx, ts[0])
        return [torch.gather(x, ax, idx), idx]
    return ref


def _sort_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([x], {"axis": 2, "aform": "int", "descending": None}),
                     mg.ShapeError, "axis")
    yield ErrorInput(Sample([x], {"axis": 0, "aform": "int", "descending": 1}),
                     mg.GraphError, "descending")
    yield ErrorInput(Sample([x, np.array(3, np.int32)], {"axis": 0, "aform": "fed",
                                                         "descending": None}),
                     mg.ShapeError, "axisTensor")
    yield ErrorInput(Sample([x, np.array(0.0, np.float32)], {"axis": 0, "aform": "fed",
                                                             "descending": None}),
                     mg.DataTypeError, "axisTensor")


def _topk_errors(grad):
    def gen(rng):
        mg = _mg()
        x = np.ones((2, 3), np.float32)
        pre = [np.ones((2, 2), np.float32)] if grad else []
        base = {"axis": 1, "aform": "int", "kform": "int"}
        yield ErrorInput(Sample(pre + [x], {**base, "k": 4}), mg.ShapeError, "k")
        yield ErrorInput(Sample(pre + [x], {**base, "k": -1}), mg.ShapeError, "k")
        yield ErrorInput(Sample(pre + [x], {**base, "k": 2, "axis": 2}), mg.ShapeError, "axis")
        yield ErrorInput(Sample(pre + [x, np.array(5, np.int32)], {**base, "k": 2,
                                                                   "kform": "fed"}),
                         mg.ShapeError, "kTensor")
        if not grad:
            yield ErrorInput(Sample([x.astype(bool)], {**base, "k": 1}), mg.DataTypeError,
                             "source")
        else:
            yield ErrorInput(Sample([np.ones((2, 1), np.float32), x], {**base, "k": 2}),
                             mg.ShapeError, "gradient")
    return gen


ANYT = NUMERIC + (DT.bool,)
for _k in ("sort", "argSort"):
    add(OpInfo(_k, build=_build_sort(_k), ref=_ref_sort(_k), samples=_sort_samples,
               dtypes=ANYT, differentiable=(0,) if _k == "sort" else (), errors=_sort_errors))
for _k in ("topK", "bottomK", "topKGradient", "bottomKGradient"):
    _g = _k.endswith("Gradient")
    add(OpInfo(_k, build=_build_topk(_k), ref=_ref_topk(_k), samples=_topk_samples(_g),
               dtypes=NUMERIC, differentiable=(0,), torch_ref=_torch_topk(_k),
               errors=_topk_errors(_g)))
