"""Entries of the reduction family (ops/reduction.py): reductionSum, reductionMaximum,
reductionMinimum, reductionMean; and (issue 15, at the end) reductionProduct, the
...PropagateNaN extrema, reductionArgMaximum / reductionArgMinimum, reductionAnd / reductionOr.

References (float64 NumPy, from the op module's docstring and docs/semantics.md): the result
KEEPS the rank, every reduced axis of size 1; `axis=` an int or `axes=` a list (negative axes
count from the end, an axis listed twice is reduced once, `[]` reduces none), `axes=None` or
no axis at all reduce every axis. Integer sums wrap in the input type (computed exactly on
Python integers, then taken modulo 2^bits). Maximum / minimum ignore NaN unless the whole
slice is NaN, and give the identity over an empty slice (-inf / +inf for floats, the type's
lowest / highest for integers). The mean of an empty slice is NaN.

Gradients: maximum / minimum split the gradient evenly among ties, but central differences at
a tie measure a one-sided max, so differentiated samples of those have distinct float32
values (ties are exercised in the forward samples of every dtype: integers and the half
types tie often). Over an empty slice the max / min / mean are +-inf / NaN, whose central
differences are NaN: such samples are not differentiated.
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


def _axes(x: np.ndarray, axis=None, axes=None, form=None) -> tuple[int, ...]:
    r = x.ndim
    if axis is not None:
        return (axis % r,)
    if axes is None:
        return tuple(range(r))
    return tuple(sorted({a % r for a in axes}))


def _call_kwargs(axis=None, axes=None, form=None) -> dict:
    if form == "axis":
        return {"axis": axis}
    if form == "axes":
        return {"axes": axes}
    if form == "none":
        return {"axes": None}
    return {}  # form == "default": no axis argument at all


def _build(name):
    def build(g, x, **kw):
        return getattr(g, name)(x, **_call_kwargs(**kw))
    return build


def _kept(x, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(x.shape))


def _wrap_int(v, dtype):
    """Exact Python integers `v` (object array) modulo 2^bits, in `dtype`."""
    bits = 8 * np.dtype(dtype).itemsize
    m = 1 << bits
    lo = np.iinfo(dtype).min
    flat = [((int(t) - lo) % m) + lo for t in np.asarray(v).reshape(-1)]
    return np.array(flat, dtype=dtype).reshape(np.shape(v))


def _ref_sum(x, **kw):
    ax = _axes(x, **kw)
    if is_float(x):
        return np.sum(f64(x), axis=ax, keepdims=True)
    s = np.sum(x.astype(object), axis=ax, keepdims=True) if x.size else np.zeros(
        _kept(x, ax), object)
    return _wrap_int(np.asarray(s, dtype=object).reshape(_kept(x, ax)), x.dtype)


def _ref_mean(x, **kw):
    ax = _axes(x, **kw)
    n = int(np.prod([x.shape[i] for i in ax]))
    with np.errstate(all="ignore"):
        return np.sum(f64(x), axis=ax, keepdims=True) / n if n else np.full(
            _kept(x, ax), np.nan)


def _ref_extremum(pick):
    """pick: max or min of a list of Python numbers (NaN already removed)."""
    def ref(x, **kw):
        ax = _axes(x, **kw)
        out_shape = _kept(x, ax)
        flt = is_float(x)
        xs = f64(x) if flt else x.astype(object)
        if pick is max:
            ident = -np.inf if flt else int(np.iinfo(x.dtype).min)
        else:
            ident = np.inf if flt else int(np.iinfo(x.dtype).max)
        # move the reduced axes last (keeping them as size 1 in the result)
        keep = [i for i in range(x.ndim) if i not in ax]
        moved = np.transpose(xs, keep + list(ax)).reshape(
            [x.shape[i] for i in keep] + [int(np.prod([x.shape[i] for i in ax]))])
        out = np.empty(moved.shape[:-1], object)
        for idx in np.ndindex(*moved.shape[:-1]):
            vals = [v for v in moved[idx]]
            if flt:
                nums = [v for v in vals if not np.isnan(v)]
                out[idx] = pick(nums) if nums else (np.nan if vals else ident)
            else:
                out[idx] = pick(vals) if vals else ident
        out = out.reshape(out_shape)
        return out.astype(np.float64) if flt else out.astype(x.dtype)
    return ref


def _torch_sum(x, **kw):
    ax = _axes(x.detach().numpy(), **kw)
    return x.sum(dim=ax, keepdim=True) if ax else x  # (torch reads dim=() as every axis)


def _torch_mean(x, **kw):
    ax = _axes(x.detach().numpy(), **kw)
    return x.mean(dim=ax, keepdim=True) if ax else x


def _torch_amax(x, **kw):
    ax = _axes(x.detach().numpy(), **kw)
    return x.amax(dim=ax, keepdim=True) if ax else x


def _torch_amin(x, **kw):
    ax = _axes(x.detach().numpy(), **kw)
    return x.amin(dim=ax, keepdim=True) if ax else x


# ---------------------------------------------------------------------------- samples
def _axis_kwargs(rng, r: int, k: int) -> dict:
    """The k-th form of the axes of a rank-r call, cycling through every form."""
    forms = ("axis", "axes", "none", "default", "axes-empty", "axes-repeated")
    form = forms[k % len(forms)]
    if r == 0 and form in ("axis", "axes", "axes-repeated"):
        form = "none" if form == "axis" else "axes-empty"
    if form == "axis":  # a Python int, or a NumPy integer now and then
        a = int(rng.integers(-r, r))
        return {"form": "axis", "axis": a if rng.random() < 0.7 else np.int64(a)}
    if form == "axes":
        n = int(rng.integers(1, r + 1))
        picked = rng.choice(r, size=n, replace=False)
        # each picked axis spelt positive or negative at random; a list or a tuple
        axes = [int(a) - r if rng.random() < 0.5 else int(a) for a in picked]
        return {"form": "axes", "axes": axes if rng.random() < 0.7 else tuple(axes)}
    if form == "axes-repeated":
        a = int(rng.integers(0, r))
        return {"form": "axes", "axes": [a, a - r, a]}
    if form == "axes-empty":
        return {"form": "axes", "axes": []}
    return {"form": form}


def _values(rng, shp, dt, distinct: bool):
    if dt in FLOAT:
        x = arr(rng, shp, dt)
        if distinct and x.size:  # no ties (the max / min gradient at a tie is one-sided)
            x = (rng.permutation(x.size).reshape(shp) / max(x.size, 1) * 6 - 3).astype(
                x.dtype) + arr(rng, shp, dt, 0, 1e-3)
        return x
    # integers over their whole range (so that sums wrap), or small ones
    info = np.iinfo(dt.numpy_dtype)
    if rng.random() < 0.5:
        return rng.integers(info.min, info.max, size=shp, dtype=dt.numpy_dtype, endpoint=True)
    return arr(rng, shp, dt, -3, 3)


def _samples(kind: str):
    extremum = kind in ("max", "min")

    def gen(rng, dt):
        for k in range(n_samples() + 2):
            shp = shape(rng)
            kw = _axis_kwargs(rng, len(shp), k)
            x = _values(rng, shp, dt, distinct=extremum and dt == DT.float32)
            diff = None
            if kind != "sum" and x.size == 0:
                diff = ()  # +-inf / NaN results: no central differences
            yield Sample([x], kw, diff=diff)
        if extremum:
            # ties and NaN handling: a slice of all NaN gives NaN, one NaN is ignored
            x = arr(rng, (3, 4), dt, -2, 2)
            if dt in FLOAT:
                x[0, :] = np.nan
                x[1, 2] = np.nan
                x[2, 1] = x[2, 3]
            yield Sample([x], {"form": "axis", "axis": -1}, diff=(), desc="NaN and ties")
            # an empty reduced axis: the identity
            yield Sample([arr(rng, (2, 0, 3), dt)], {"form": "axes", "axes": [1]}, diff=(),
                         desc="empty slices")
    return gen


# ---------------------------------------------------------------------------- errors
def _errors(float_only: bool):
    def gen(rng):
        mg = _mg()
        f = np.ones((2, 3), np.float32)
        yield ErrorInput(Sample([np.ones((2, 3), bool)], {"form": "default"}),
                         mg.DataTypeError, "tensor")
        if float_only:
            yield ErrorInput(Sample([np.ones((2, 3), np.int32)], {"form": "default"}),
                             mg.DataTypeError, "tensor")
        yield ErrorInput(Sample([f], {"form": "axis", "axis": 2}), mg.ShapeError, "axis")
        yield ErrorInput(Sample([f], {"form": "axis", "axis": -3}), mg.ShapeError, "axis")
        yield ErrorInput(Sample([np.ones((), np.float32)], {"form": "axis", "axis": 0}),
                         mg.ShapeError, "axis")
        yield ErrorInput(Sample([f], {"form": "axes", "axes": [0, 2]}), mg.ShapeError, "axes")
        yield ErrorInput(Sample([f], {"form": "axes", "axes": [-3]}), mg.ShapeError, "axes")
        yield ErrorInput(Sample([f], {"form": "axis", "axis": 1.0}), mg.GraphError, "axis")
        yield ErrorInput(Sample([f], {"form": "axis", "axis": True}), mg.GraphError, "axis")
        yield ErrorInput(Sample([f], {"form": "axes", "axes": "01"}), mg.GraphError, "axes")
        yield ErrorInput(Sample([f], {"form": "axes", "axes": 1}), mg.GraphError, "axes")
        yield ErrorInput(Sample([f], {"form": "axes", "axes": [0, 0.5]}), mg.GraphError, "axes")
        yield ErrorInput(Sample([f], {"form": "both"}), mg.GraphError, "axes")
    return gen


def _build_err(name):
    def build(g, x, form=None, **kw):
        if form == "both":
            return getattr(g, name)(x, axis=0, axes=[0])
        return _build(name)(g, x, form=form, **kw)
    return build


# ---------------------------------------------------------------------------- the table
add(OpInfo("reductionSum", build=_build_err("reductionSum"), ref=_ref_sum,
           samples=_samples("sum"), dtypes=NUMERIC, differentiable=(0,), torch_ref=_torch_sum,
           errors=_errors(False)))
add(OpInfo("reductionMean", build=_build_err("reductionMean"), ref=_ref_mean,
           samples=_samples("mean"), dtypes=FLOAT, differentiable=(0,), torch_ref=_torch_mean,
           errors=_errors(True)))
add(OpInfo("reductionMaximum", build=_build_err("reductionMaximum"), ref=_ref_extremum(max),
           samples=_samples("max"), dtypes=NUMERIC, differentiable=(0,),
           torch_ref=_torch_amax, errors=_errors(False)))
add(OpInfo("reductionMinimum", build=_build_err("reductionMinimum"), ref=_ref_extremum(min),
           samples=_samples("min"), dtypes=NUMERIC, differentiable=(0,),
           torch_ref=_torch_amin, errors=_errors(False)))


# ---------------------------------------------------------------------------- issue 15 rows
# reductionProduct, the NaN-propagating extrema, the arg reductions and the truth folds
# (docs/semantics.md, "Reduction and cumulative decisions (issue 15)"). References loop over
# the slices in Python (exact integers, float64), never calling mpsgraph.
def _slices(x, ax):
    """(the kept shape, the slices as lists: the reduced axes moved last and flattened)."""
    keep = [i for i in range(x.ndim) if i not in ax]
    moved = np.transpose(x, keep + list(ax)).reshape(
        [x.shape[i] for i in keep] + [int(np.prod([x.shape[i] for i in ax]))])
    return moved


def _ref_product(x, **kw):
    ax = _axes(x, **kw)
    if is_float(x):
        with np.errstate(all="ignore"):
            return np.prod(f64(x), axis=ax, keepdims=True)
    moved = _slices(x.astype(object), ax)
    out = np.empty(moved.shape[:-1], object)
    for idx in np.ndindex(*moved.shape[:-1]):
        p = 1
        for v in moved[idx]:
            p *= int(v)
        out[idx] = p
    return _wrap_int(out.reshape(_kept(x, ax)), x.dtype)


def _ref_extremum_nan(pick):
    def ref(x, **kw):
        ax = _axes(x, **kw)
        flt = is_float(x)
        moved = _slices(f64(x) if flt else x.astype(object), ax)
        if pick is max:
            ident = -np.inf if flt else int(np.iinfo(x.dtype).min)
        else:
            ident = np.inf if flt else int(np.iinfo(x.dtype).max)
        out = np.empty(moved.shape[:-1], object)
        for idx in np.ndindex(*moved.shape[:-1]):
            vals = list(moved[idx])
            if flt and any(np.isnan(v) for v in vals):
                out[idx] = np.nan
            else:
                out[idx] = pick(vals) if vals else ident
        out = out.reshape(_kept(x, ax))
        return out.astype(np.float64) if flt else out.astype(x.dtype)
    return ref


def _ref_arg(largest: bool):
    """The first index of the extremum; a NaN is the extremum (its first occurrence)."""
    def ref(x, axis, **kw):
        a = axis % x.ndim
        flt = is_float(x)
        moved = np.moveaxis(f64(x) if flt else x.astype(object), a, -1)
        out = np.zeros(moved.shape[:-1], np.int64)
        for idx in np.ndindex(*moved.shape[:-1]):
            vals = list(moved[idx])
            nans = [i for i, v in enumerate(vals) if flt and np.isnan(v)]
            if nans:
                out[idx] = nans[0]
                continue
            best = 0
            for i, v in enumerate(vals):
                if (v > vals[best]) if largest else (v < vals[best]):
                    best = i
            out[idx] = best
        return np.expand_dims(out, a).astype(np.int32)
    return ref


def _ref_truth(every: bool):
    def ref(x, **kw):
        ax = _axes(x, **kw)
        t = f64(x) != 0  # NaN != 0: true
        moved = _slices(t, ax)
        out = np.zeros(moved.shape[:-1], bool)
        for idx in np.ndindex(*moved.shape[:-1]):
            vals = [bool(v) for v in moved[idx]]
            out[idx] = all(vals) if every else any(vals)
        return out.reshape(_kept(x, ax)).astype(x.dtype)
    return ref


def _torch_prod(x, **kw):
    ax = _axes(x.detach().numpy(), **kw)
    out = x
    for a in ax:
        out = out.prod(dim=a, keepdim=True)
    return out


def _product_samples(rng, dt):
    for k in range(n_samples() + 2):
        shp = shape(rng, hi=4)
        kw = _axis_kwargs(rng, len(shp), k)
        if dt in FLOAT:
            x = arr(rng, shp, dt, -1.6, 1.6)
            if x.size and k % 2:  # zeros: one, or several, in the slices
                x.reshape(-1)[rng.integers(0, x.size, size=1 + k % 3)] = 0
        else:
            x = _values(rng, shp, dt, distinct=False)
        yield Sample([x], kw)
    yield Sample([arr(rng, (2, 0, 3), dt)], {"form": "axes", "axes": [1]}, diff=(),
                 desc="empty slices: 1")


def _nan_extremum_samples(rng, dt):
    gen = _samples("max")
    yield from gen(rng, dt)
    if dt in FLOAT:
        x = arr(rng, (3, 4), dt, -2, 2)
        x[0, 1] = np.nan
        x[2, :] = np.nan
        yield Sample([x], {"form": "axes", "axes": [1]}, diff=(), desc="one NaN propagates")


def _arg_samples(rng, dt):
    for k in range(n_samples() + 2):
        r = int(rng.integers(1, 5))
        shp = list(shape(rng, r))
        a = int(rng.integers(-r, r))
        shp[a % r] = max(shp[a % r], 1)
        if k % 2 and dt not in FLOAT:
            x = arr(rng, shp, dt, -1, 1)  # many ties
        elif k % 2:
            x = (np.round(arr(rng, shp, DT.float32, -2, 2)) / 2).astype(dt.numpy_dtype)
        else:
            x = _values(rng, shp, dt, distinct=False)
        yield Sample([x], {"axis": a if k % 3 else np.int32(a)})
    x = arr(rng, (3, 5), dt, -1, 1)
    x[:, 1] = x[:, 3] = np.array(100 if dt not in FLOAT else 2.5).astype(x.dtype)
    if dt in FLOAT:
        x[1, 2] = x[1, 4] = np.nan
        x[2, 0] = -np.inf
        x[2, 4] = -np.inf
    yield Sample([x], {"axis": -1}, desc="ties: the first; NaN: the first NaN")
    yield Sample([x], {"axis": 0}, desc="ties along axis 0")
    yield Sample([arr(rng, (4, 0), dt)], {"axis": 0}, desc="size-0 other axis")


def _truth_samples(rng, dt):
    for k in range(n_samples() + 2):
        shp = shape(rng)
        kw = _axis_kwargs(rng, len(shp), k)
        if dt == DT.bool:
            x = rng.random(shp) < (0.85 if k % 2 else 0.15)
        else:
            x = arr(rng, shp, dt, -1, 1)
            if dt in FLOAT:
                x = np.round(x).astype(x.dtype)
            if k % 2 and x.size:
                x = np.where(x == 0, np.ones((), x.dtype), x)
        yield Sample([np.asarray(x)], kw)
    if dt in FLOAT:
        x = np.array([[np.nan, 0], [np.nan, np.nan], [-0.0, 0.0]], dt.numpy_dtype)
        yield Sample([x], {"form": "axis", "axis": 1}, desc="NaN is true, -0 false")
    yield Sample([arr(rng, (2, 0), dt)], {"form": "axis", "axis": 1}, desc="empty slices")


def _arg_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([np.ones((2, 3), bool)], {"axis": 0}), mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([np.ones((2, 0), np.float32)], {"axis": 1}), mg.ShapeError, "axis",
                     "size 0")
    yield ErrorInput(Sample([f], {"axis": 2}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f], {"axis": -3}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([np.ones((), np.float32)], {"axis": 0}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f], {"axis": 1.0}), mg.GraphError, "axis")
    yield ErrorInput(Sample([f], {"axis": None}), mg.GraphError, "axis")


def _build_arg(name):
    def build(g, x, axis):
        return getattr(g, name)(x, axis=axis)
    return build


def _truth_errors(rng):
    for e in _errors(False)(rng):
        if e.cls.__name__ != "DataTypeError":  # bool is accepted
            yield e


add(OpInfo("reductionProduct", build=_build_err("reductionProduct"), ref=_ref_product,
           samples=_product_samples, dtypes=NUMERIC, differentiable=(0,),
           torch_ref=_torch_prod, errors=_errors(False)))
add(OpInfo("reductionMaximumPropagateNaN", build=_build_err("reductionMaximumPropagateNaN"),
           ref=_ref_extremum_nan(max), samples=_nan_extremum_samples, dtypes=NUMERIC,
           differentiable=(0,), torch_ref=_torch_amax, errors=_errors(False)))
add(OpInfo("reductionMinimumPropagateNaN", build=_build_err("reductionMinimumPropagateNaN"),
           ref=_ref_extremum_nan(min), samples=_nan_extremum_samples, dtypes=NUMERIC,
           differentiable=(0,), torch_ref=_torch_amin, errors=_errors(False)))
add(OpInfo("reductionArgMaximum", build=_build_arg("reductionArgMaximum"), ref=_ref_arg(True),
           samples=_arg_samples, dtypes=NUMERIC, errors=_arg_errors))
add(OpInfo("reductionArgMinimum", build=_build_arg("reductionArgMinimum"),
           ref=_ref_arg(False), samples=_arg_samples, dtypes=NUMERIC, errors=_arg_errors))
add(OpInfo("reductionAnd", build=_build_err("reductionAnd"), ref=_ref_truth(True),
           samples=_truth_samples, dtypes=NUMERIC + (DT.bool,), errors=_truth_errors))
add(OpInfo("reductionOr", build=_build_err("reductionOr"), ref=_ref_truth(False),
           samples=_truth_samples, dtypes=NUMERIC + (DT.bool,), errors=_truth_errors))
