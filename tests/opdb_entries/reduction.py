"""Entries of the reduction family (ops/reduction.py): reductionSum, reductionMaximum,
reductionMinimum, reductionMean.

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


def _mg():
    import mpsgraph as mg

    return mg


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
