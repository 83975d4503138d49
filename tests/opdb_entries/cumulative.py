"""Entries of the cumulative family (ops/cumulative.py): cumulativeSum, cumulativeProduct,
cumulativeMinimum, cumulativeMaximum.

References (docs/semantics.md, "Reduction and cumulative decisions (issue 15)"), written from
the definition and never calling mpsgraph: result i combines the elements j <= i (j < i when
exclusive; j >= i / j > i when reverse) of its line along the axis, in a Python loop over the
lines: floats in float64, integers as exact Python integers wrapped to the type. An empty
combination is the identity (0, 1, -inf / the integer type's lowest for the maximum, +inf /
the highest for the minimum). A NaN among the combined elements makes a maximum / minimum NaN.

The axis is given as an int, a NumPy integer, a constant int32 / int64 tensor (`axis=` or
`axisTensor=`) or a FED int32 scalar (an input of the sample, read at run time). Maximum /
minimum samples that are differentiated have distinct values (central differences at a tie
are one-sided); product samples put zeros (one or several per line) in half of the samples.
"""

from __future__ import annotations

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

from ._common import mg_module as _mg

FORMS = ("int", "np", "const", "const64", "axisTensor", "fed")


def _build(name):
    def build(g, x, *fed, axis=None, form="int", exclusive=None, reverse=None, **kw):
        mg = _mg()
        opts = {}
        if exclusive is not None:
            opts["exclusive"] = exclusive
        if reverse is not None:
            opts["reverse"] = reverse
        f = getattr(g, name)
        if form == "both":
            return f(x, axis=0, axisTensor=g.constant(0, dataType=mg.int32), **opts)
        if form == "fed":
            return f(x, axis=fed[0], **opts)
        if form == "const":
            return f(x, axis=g.constant(int(axis), dataType=mg.int32), **opts)
        if form == "const64":
            return f(x, axis=g.constant(np.array([int(axis)], np.int64)), **opts)
        if form == "axisTensor":
            return f(x, axisTensor=g.constant(int(axis), dataType=mg.int32), **opts)
        if form == "none":
            return f(x, **opts)
        return f(x, axis=axis, **opts)
    return build


def _wrap(v: int, dtype) -> int:
    bits = 8 * np.dtype(dtype).itemsize
    lo = int(np.iinfo(dtype).min)
    return ((v - lo) % (1 << bits)) + lo


def _ref(kind):
    def ref(x, *fed, axis=None, form="int", exclusive=None, reverse=None, **kw):
        if form == "fed":
            axis = int(np.asarray(fed[0]))
        a = int(axis) % x.ndim
        flt = is_float(x)
        moved = np.moveaxis(f64(x) if flt else x.astype(object), a, -1)
        n = moved.shape[-1]
        out = np.empty(moved.shape, object)
        for idx in np.ndindex(*moved.shape[:-1]):
            line = [v if flt else int(v) for v in moved[idx]]
            for i in range(n):
                if reverse:
                    js = range(i + 1 if exclusive else i, n)
                else:
                    js = range(0, i if exclusive else i + 1)
                vals = [line[j] for j in js]
                if kind == "sum":
                    r = 0
                    for v in vals:
                        r = r + v
                elif kind == "prod":
                    r = 1
                    for v in vals:
                        r = r * v
                else:
                    if flt and any(np.isnan(v) for v in vals):
                        r = np.nan
                    elif vals:
                        r = max(vals) if kind == "max" else min(vals)
                    elif flt:
                        r = -np.inf if kind == "max" else np.inf
                    else:
                        info = np.iinfo(x.dtype)
                        r = int(info.min if kind == "max" else info.max)
                if not flt:
                    r = _wrap(int(r), x.dtype)
                out[idx + (i,)] = r
        out = np.moveaxis(out, -1, a)
        return out.astype(np.float64) if flt else out.astype(x.dtype)
    return ref


def _torch_ref(kind):
    def ref(x, *fed, axis=None, form="int", exclusive=None, reverse=None, **kw):
        import torch

        if form == "fed":
            axis = int(fed[0])
        a = int(axis) % x.dim()
        t = x.flip(a) if reverse else x
        if kind == "sum":
            y = t.cumsum(a)
        elif kind == "prod":
            y = t.cumprod(a)
        elif kind == "max":
            y = t.cummax(a).values
        else:
            y = t.cummin(a).values
        if exclusive and x.shape[a]:
            v = {"sum": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[kind]
            shp = list(x.shape)
            shp[a] = 1
            y = torch.cat([torch.full(shp, v, dtype=y.dtype), y.narrow(a, 0, x.shape[a] - 1)],
                          dim=a)
        return y.flip(a) if reverse else y
    return ref


def _samples(kind):
    extremum = kind in ("max", "min")

    def gen(rng, dt):
        for k in range(n_samples() + 4):
            r = int(rng.integers(1, 5))
            shp = shape(rng, r, hi=5)
            axis = int(rng.integers(-r, r))
            form = FORMS[k % len(FORMS)]
            kw = {"axis": np.int64(axis) if form == "np" else axis, "form": form}
            if k % 4 == 1:
                kw["exclusive"] = True
            elif k % 4 == 2:
                kw["reverse"] = True
            elif k % 4 == 3:
                kw["exclusive"] = kw["reverse"] = True
            elif k % 8 == 4:
                kw["exclusive"] = kw["reverse"] = False
            if dt in FLOAT:
                if kind == "prod":
                    x = arr(rng, shp, dt, -1.7, 1.7)
                    if x.size and k % 2:
                        x.reshape(-1)[rng.integers(0, x.size, size=1 + k % 3)] = 0
                elif extremum and dt == DT.float32 and x_size(shp):
                    x = (rng.permutation(x_size(shp)).reshape(shp) / x_size(shp) * 6 - 3
                         ).astype(np.float32) + arr(rng, shp, dt, 0, 1e-3)
                else:
                    x = arr(rng, shp, dt)
            else:
                info = np.iinfo(dt.numpy_dtype)
                if k % 2:
                    x = rng.integers(info.min, info.max, size=shp, dtype=dt.numpy_dtype,
                                     endpoint=True)
                else:
                    x = arr(rng, shp, dt, -3, 3)
            inputs = [np.asarray(x)]
            if form == "fed":
                inputs.append(np.array(axis, np.int32))
            yield Sample(inputs, kw, diff=(0,))  # (exclusive extrema too: -inf selected away)
        # ties, NaN and infinities along a line
        x = arr(rng, (2, 6), dt, -2, 2)
        x[:, 2] = x[:, 4] = x[:, 0]
        if dt in FLOAT:
            x[1, 3] = np.nan
            x[0, 5] = np.inf if kind != "prod" else 0
        for excl, rev in ((False, False), (True, True)):
            yield Sample([x], {"axis": 1, "exclusive": excl, "reverse": rev}, diff=(),
                         desc="ties, NaN")
        yield Sample([arr(rng, (3, 0), dt)], {"axis": 1, "exclusive": True}, diff=(),
                     desc="empty axis")
    return gen


def x_size(shp) -> int:
    return int(np.prod(shp))


def _errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([np.ones((2, 3), bool)], {"axis": 0}), mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([f], {"axis": 2}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f], {"axis": -3}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([np.ones((), np.float32)], {"axis": 0}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f], {"axis": 1.0}), mg.GraphError, "axis")
    yield ErrorInput(Sample([f], {"form": "none"}), mg.GraphError, "axis")
    yield ErrorInput(Sample([f], {"form": "both"}), mg.GraphError, "axisTensor")
    yield ErrorInput(Sample([f], {"axis": 2, "form": "const"}), mg.ShapeError, "axisTensor")
    yield ErrorInput(Sample([f], {"axis": 0, "exclusive": 1}), mg.GraphError, "exclusive")
    yield ErrorInput(Sample([f], {"axis": 0, "reverse": "no"}), mg.GraphError, "reverse")
    yield ErrorInput(Sample([f, np.array([0, 1], np.int32)], {"form": "fed"}), mg.ShapeError,
                     "axisTensor")
    yield ErrorInput(Sample([f, np.array(0.0, np.float32)], {"form": "fed"}),
                     mg.DataTypeError, "axisTensor")
    # a fed axis out of range: refused when the value is read (at run time)
    yield ErrorInput(Sample([f, np.array(5, np.int32)], {"form": "fed"}), mg.ShapeError,
                     "axisTensor")


for _name, _kind in (("cumulativeSum", "sum"), ("cumulativeProduct", "prod"),
                     ("cumulativeMinimum", "min"), ("cumulativeMaximum", "max")):
    add(OpInfo(_name, build=_build(_name), ref=_ref(_kind), samples=_samples(_kind),
               dtypes=NUMERIC, differentiable=(0,), torch_ref=_torch_ref(_kind),
               errors=_errors))
