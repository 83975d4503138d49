"""Entries of the loss family (ops/loss.py): softMaxCrossEntropy, softMaxCrossEntropyGradient,
the internal softMaxCrossEntropyLabelsGradient (the labels' gradient rule of the loss) and
oneHot.

References are float64 NumPy written from the op module's docstring and docs/semantics.md:

    logp = log_softmax(x, axis) = x - m - log(sum(exp(x - m))),  m = max(x, axis)
    loss = -sum_axis(l * logp)  (a label of 0 contributes 0, even where logp = -inf)
    none -> loss (axis kept as size 1); sum -> sum(loss); mean -> sum(loss) / T, both [1]*rank
    d source = (softmax(x) sum_axis(l) - l) * G,   d labels = -logp * G summed to l's shape

with `l` the labels broadcast to the source's shape, T the number of loss terms (the size of
the `none` loss: every position other than `axis`) and G the incoming gradient broadcast to
the `none` loss's shape, divided by T for mean, then to the source's shape.

oneHot(indices, depth, axis=-1, dataType=float32, onValue=1, offValue=0): a new axis of size
depth at `axis` (in [-(rank+1), rank]); y = onValue where indices == k, else offValue; an index
outside [0, depth) (negative ones, and unsigned values that read as negative in int64) gives an
all-offValue vector. Compared on exact Python integers.
"""

from __future__ import annotations

import numpy as np

from opdb import (
    ALL,
    DT,
    FLOAT,
    INTEGER,
    ErrorInput,
    OpInfo,
    Sample,
    add,
    arr,
    f64,
    n_samples,
    np_dtype,
    shape,
)

from ._common import mg_module as _mg

R_NONE, R_SUM, R_MEAN = 0, 1, 2  # LossReductionType's raw values (Apple's)


def _red(v):
    return _mg().LossReductionType(v)


# ---------------------------------------------------------------------------- references
def _log_softmax(x, axis):
    x = f64(x)
    if x.size == 0:
        return x
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        z = x - m
        return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def _terms(shp, axis) -> int:
    """The number of loss terms: every position other than `axis`."""
    return int(np.prod([d for i, d in enumerate(shp) if i != axis % len(shp)]))


def _one_hot(idx, depth, axis, on=1.0, off=0.0, dtype=np.float64):
    idx = np.asarray(idx).astype(object)  # exact integers (uInt64 included)
    r = idx.ndim + 1
    ax = axis % r
    k = np.arange(depth).astype(object).reshape([depth if i == ax else 1 for i in range(r)])
    eq = np.expand_dims(idx, ax) == k
    on, off = np.asarray(on).astype(dtype), np.asarray(off).astype(dtype)
    return np.where(eq.astype(bool), on, off).astype(dtype)


def _labels_of(x, lab, axis, labels):
    """The labels as float64 of the source's shape (the oneHot form: from class indices)."""
    if labels == "onehot":
        return _one_hot(lab, x.shape[axis], axis)
    return np.broadcast_to(f64(lab), x.shape)


def _ce(x, lab, axis, red, labels="dense", form=None):
    logp = _log_softmax(x, axis)
    lb = _labels_of(x, lab, axis, labels)
    with np.errstate(all="ignore"):
        loss = -np.sum(np.where(lb != 0, lb * logp, 0.0), axis=axis, keepdims=True)
        if red == R_NONE:
            return loss
        total = np.sum(loss)
        if red == R_MEAN:
            t = _terms(x.shape, axis)
            total = total / t if t else np.nan
        return np.full([1] * x.ndim, total)


def _loss_shape(shp, axis, red):
    if red == R_NONE:
        return tuple(1 if i == axis % len(shp) else d for i, d in enumerate(shp))
    return (1,) * len(shp)


def _scaled(gr, x, axis, red):
    gb = np.broadcast_to(f64(gr), _loss_shape(x.shape, axis, red))
    if red == R_MEAN:
        t = _terms(x.shape, axis)
        with np.errstate(all="ignore"):
            gb = gb / t if t else gb * np.nan
    return np.broadcast_to(gb, x.shape)


def _ce_grad(gr, x, lab, axis, red, form=None):
    lb = np.broadcast_to(f64(lab), x.shape)
    with np.errstate(all="ignore"):
        p = np.exp(_log_softmax(x, axis))
        return (p * np.sum(lb, axis=axis, keepdims=True) - lb) * _scaled(gr, x, axis, red)


def _sum_to(a, shp):
    lead = a.ndim - len(shp)
    a = np.sum(a, axis=tuple(range(lead))) if lead else a
    axes = tuple(i for i, d in enumerate(shp) if d == 1 and a.shape[i] != 1)
    return np.sum(a, axis=axes, keepdims=True) if axes else a


def _ce_labels_grad(gr, x, lab, axis, red):
    with np.errstate(all="ignore"):
        return _sum_to(-_log_softmax(x, axis) * _scaled(gr, x, axis, red), lab.shape)


# ---------------------------------------------------------------------------- torch reference
def _torch_ce(x, lab, axis, red, labels="dense", form=None):
    import torch

    logp = torch.log_softmax(x, dim=axis)
    if labels == "onehot":
        lb = torch.from_numpy(_one_hot(lab.numpy(), x.shape[axis], axis))
    else:
        lb = torch.broadcast_to(lab, x.shape)
    loss = -(lb * logp).sum(dim=axis, keepdim=True)
    if red == R_NONE:
        return loss
    total = loss.sum()
    if red == R_MEAN:
        total = total / _terms(x.shape, axis)
    return total.reshape([1] * x.dim())


# ---------------------------------------------------------------------------- builders
def _build_ce(g, x, lab, axis, red, labels="dense", form="positional"):
    if labels == "onehot":
        lab = g.oneHot(lab, x.shape[axis], axis=axis, dataType=x.dataType)
    if form == "positional":
        return g.softMaxCrossEntropy(x, lab, axis, _red(red))
    if form == "reductionType":
        return g.softMaxCrossEntropy(x, lab, axis, reductionType=_red(red))
    if form == "int":  # the raw value (Swift's enum's rawValue)
        return g.softMaxCrossEntropy(x, labels=lab, axis=axis, reuctionType=red)
    if form == "both":
        return g.softMaxCrossEntropy(x, lab, axis, _red(red), reductionType=_red(red))
    return g.softMaxCrossEntropy(x, lab, axis, reuctionType=_red(red))


def _build_ce_grad(g, gr, x, lab, axis, red, form="positional"):
    if form == "positional":
        return g.softMaxCrossEntropyGradient(gr, x, lab, axis, _red(red))
    if form == "objc":  # the Objective-C labels
        return g.softMaxCrossEntropyGradient(gr, sourceTensor=x, labelsTensor=lab, axis=axis,
                                             reductionType=_red(red))
    if form == "no-axis":
        return g.softMaxCrossEntropyGradient(gr, x, lab, reuctionType=_red(red))
    return g.softMaxCrossEntropyGradient(gr, source=x, labels=lab, axis=axis,
                                         reuctionType=_red(red))


def _build_labels_grad(g, gr, x, lab, axis, red):
    # not a Graph method: the op the loss's gradient rule emits for the labels
    from mpsgraph.ops.loss import _CEOpAttrs

    return g._add("softMaxCrossEntropyLabelsGradient",
                  [("gradient", gr), ("source", x), ("labels", lab)],
                  _CEOpAttrs(axis, _red(red)))[0]


# ---------------------------------------------------------------------------- samples
_CE_FORMS = ("positional", "reuctionType", "reductionType", "int")


def _source_shape(rng):
    shp = shape(rng, int(rng.integers(1, 4)))
    r = len(shp)
    return shp, int(rng.integers(-r, r))


def _label_shape(rng, shp):
    """A shape broadcastable to `shp` (never growing it): some leading axes dropped, some
    axes set to 1."""
    k = int(rng.integers(0, len(shp) + 1)) if rng.random() < 0.5 else 0
    return tuple(1 if rng.random() < 0.3 else d for d in shp[k:])


def _soft_labels(rng, shp, dt):
    """Non-negative labels that need not sum to 1, with exact zeros."""
    lab = arr(rng, shp, dt, 0, 1)
    if lab.size:
        lab.reshape(-1)[rng.random(lab.size) < 0.3] = 0
    return lab


def _ce_samples(rng, dt):
    for k in range(n_samples() + 2):
        shp, axis = _source_shape(rng)
        red = k % 3
        form = _CE_FORMS[k % len(_CE_FORMS)]
        x = arr(rng, shp, dt)
        diff = None if red != R_MEAN or _terms(shp, axis) else ()  # mean of no terms: NaN
        kind = (k + 2 * (k // 3) + FLOAT.index(dt)) % 3  # every (labels, reduction) pair
        if kind == 0:  # labels of the source's shape
            yield Sample([x, _soft_labels(rng, shp, dt)],
                         {"axis": axis, "red": red, "form": form}, diff=diff)
        elif kind == 1:  # labels broadcast to the source's shape
            yield Sample([x, _soft_labels(rng, _label_shape(rng, shp), dt)],
                         {"axis": axis, "red": red, "form": form}, diff=diff,
                         desc="broadcast labels")
        else:  # class indices through oneHot (-1 and C out of range: rows of 0)
            c = shp[axis]
            idx_shape = tuple(d for i, d in enumerate(shp) if i != axis % len(shp))
            idx = rng.integers(-1, c + 1, size=idx_shape).astype(np.int32)
            yield Sample([x, idx], {"axis": axis, "red": red, "form": form,
                                    "labels": "onehot"}, diff=(0,) if diff is None else (),
                         desc="oneHot labels")
    # every reduction with -inf logits: a zero label there contributes 0, a non-zero one +inf
    for red in (R_NONE, R_SUM, R_MEAN):
        x = arr(rng, (3, 4), dt)
        x[:, 1] = -np.inf
        lab = _soft_labels(rng, (3, 4), dt)
        lab[:, 1] = 0
        lab[2, 1] = 0.5
        yield Sample([x, lab], {"axis": 1, "red": red, "form": "positional"}, diff=(),
                     desc="-inf logits")


def _grad_shape(rng, shp, axis, red):
    """A gradient shape broadcastable to the forward loss's shape."""
    out = _loss_shape(shp, axis, red)
    u = rng.random()
    if u < 0.2:
        return ()
    if u < 0.3:
        return (1,)
    return _label_shape(rng, out)


def _ce_grad_samples(rng, dt):
    forms = ("positional", "objc", "keywords")
    for k in range(n_samples() + 2):
        shp, axis = _source_shape(rng)
        red = k % 3
        lab = _soft_labels(rng, shp if k % 2 else _label_shape(rng, shp), dt)
        yield Sample([arr(rng, _grad_shape(rng, shp, axis, red), dt), arr(rng, shp, dt), lab],
                     {"axis": axis, "red": red, "form": forms[k % len(forms)]})


def _labels_grad_samples(rng, dt):
    for k in range(n_samples() + 2):
        shp, axis = _source_shape(rng)
        red = k % 3
        lab = _soft_labels(rng, shp if k % 3 == 0 else _label_shape(rng, shp), dt)
        yield Sample([arr(rng, _grad_shape(rng, shp, axis, red), dt), arr(rng, shp, dt), lab],
                     {"axis": axis, "red": red})


# ---------------------------------------------------------------------------- errors
def _ce_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    kw = {"axis": 1, "red": R_MEAN, "form": "positional"}
    yield ErrorInput(Sample([f, np.ones((2, 3), np.float16)], kw), mg.DataTypeError, "labels")
    yield ErrorInput(Sample([f.astype(np.int32), f.astype(np.int32)], kw), mg.DataTypeError,
                     "source")
    yield ErrorInput(Sample([f, np.ones((2, 4), np.float32)], kw), mg.ShapeError, "labels")
    # labels never grow the source
    yield ErrorInput(Sample([f, np.ones((5, 2, 3), np.float32)], kw), mg.ShapeError, "labels")
    yield ErrorInput(Sample([np.ones((), np.float32), np.ones((), np.float32)],
                            {"axis": 0, "red": R_SUM, "form": "positional"}), mg.ShapeError,
                     "source")
    yield ErrorInput(Sample([f, f], dict(kw, axis=2)), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f, f], dict(kw, axis=-3)), mg.ShapeError, "axis")
    yield ErrorInput(Sample([f, f], dict(kw, axis=1.0)), mg.GraphError, "axis")
    yield ErrorInput(Sample([f, f], dict(kw, red=3, form="int")), mg.GraphError, "reuctionType")
    yield ErrorInput(Sample([f, f], dict(kw, red="mean", form="int")), mg.GraphError,
                     "reuctionType")
    yield ErrorInput(Sample([f, f], dict(kw, form="both")), mg.GraphError, "reductionType")


def _build_ce_err(g, x, lab, axis, red, labels="dense", form="positional"):
    if form == "int" and red not in (R_NONE, R_SUM, R_MEAN):  # a bad value, as given
        return g.softMaxCrossEntropy(x, lab, axis, reuctionType=red)
    return _build_ce(g, x, lab, axis, red, labels, form)


def _ce_grad_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    kw = {"axis": 1, "red": R_NONE, "form": "positional"}
    g1 = np.ones((2, 1), np.float32)
    yield ErrorInput(Sample([g1, f, np.ones((2, 3), np.float16)], kw), mg.DataTypeError,
                     "labels")
    yield ErrorInput(Sample([g1.astype(np.float16), f, f], kw), mg.DataTypeError, "source")
    # the none loss is [2, 1]: a gradient of the source's shape does not broadcast to it
    yield ErrorInput(Sample([f, f, f], kw), mg.ShapeError, "gradient")
    yield ErrorInput(Sample([np.ones((2, 1), np.float32), f, f], dict(kw, red=R_SUM)),
                     mg.ShapeError, "gradient")
    yield ErrorInput(Sample([g1, f, np.ones((3, 1), np.float32)], kw), mg.ShapeError, "labels")
    yield ErrorInput(Sample([g1, f, f], dict(kw, axis=5)), mg.ShapeError, "axis")
    yield ErrorInput(Sample([g1, f, f], dict(kw, form="no-axis")), mg.GraphError, "axis")
    yield ErrorInput(Sample([g1, f, f], dict(kw, red=7)), mg.GraphError, "reuctionType")


def _build_ce_grad_err(g, gr, x, lab, axis, red, form="positional"):
    if isinstance(red, int) and red not in (0, 1, 2):
        return g.softMaxCrossEntropyGradient(gr, x, lab, axis, red)
    return _build_ce_grad(g, gr, x, lab, axis, red, form)


def _labels_grad_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    kw = {"axis": 1, "red": R_NONE}
    yield ErrorInput(Sample([np.ones((2, 1), np.float32), f, np.ones((3,), np.float16)], kw),
                     mg.DataTypeError, "labels")
    yield ErrorInput(Sample([f, f, f], kw), mg.ShapeError, "gradient")
    yield ErrorInput(Sample([np.ones((2, 1), np.float32), f, np.ones((2,), np.float32)], kw),
                     mg.ShapeError, "labels")


# ---------------------------------------------------------------------------- oneHot
def _one_hot_value(rng, dt):
    if dt == DT.bool:
        return bool(rng.random() < 0.5)
    if dt in FLOAT:
        return float(rng.uniform(-5, 5))
    info = np.iinfo(np_dtype(dt))
    return int(rng.integers(max(info.min, -100), min(info.max, 200) + 1))


def _indices(rng, shp, dt, depth):
    npdt = np_dtype(dt)
    info = np.iinfo(npdt)
    x = arr(rng, shp, dt, -2, depth + 2)  # in range, negative, >= depth
    if x.size and rng.random() < 0.5:  # the type's extremes (uInt64's max reads -1 in int64)
        flat = x.reshape(-1)
        flat[rng.random(x.size) < 0.2] = info.max
        flat[rng.random(x.size) < 0.1] = info.min
        if info.min == 0 and x.size:
            flat[0] = np.array(info.max // 2 + 1, npdt)  # 2^(bits-1): negative if signed
    return x


def _one_hot_samples(rng, dt):
    for k in range(n_samples() + 2):
        shp = shape(rng, int(rng.integers(0, 4)))
        r = len(shp)
        depth = int(rng.integers(0, 6))
        kw = {"depth": depth}
        if k > 0:
            kw["axis"] = int(rng.integers(-(r + 1), r + 1))
        if k > 1:
            odt = ALL[int(rng.integers(len(ALL)))]
            kw["dataType"] = odt
            kw["onValue"] = _one_hot_value(rng, odt)
            if k > 2:
                kw["offValue"] = _one_hot_value(rng, odt)
        yield Sample([_indices(rng, shp, dt, depth)], kw)


def _ref_one_hot(idx, depth, axis=-1, dataType=DT.float32, onValue=1.0, offValue=0.0):
    out = _one_hot(idx, depth, axis, onValue, offValue, np_dtype(dataType))
    return out if dataType not in FLOAT else f64(out)


def _one_hot_errors(rng):
    mg = _mg()
    i = np.zeros((3,), np.int32)
    yield ErrorInput(Sample([np.zeros((3,), np.float32)], {"depth": 4}), mg.DataTypeError,
                     "indices")
    yield ErrorInput(Sample([np.zeros((3,), bool)], {"depth": 4}), mg.DataTypeError, "indices")
    yield ErrorInput(Sample([i], {"depth": -1}), mg.ShapeError, "depth")
    yield ErrorInput(Sample([i], {"depth": 2.0}), mg.GraphError, "depth")
    yield ErrorInput(Sample([i], {"depth": True}), mg.GraphError, "depth")
    yield ErrorInput(Sample([i], {"depth": 4, "axis": 2}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([i], {"depth": 4, "axis": -3}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([i], {"depth": 4, "axis": 0.0}), mg.GraphError, "axis")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": "float32"}), mg.DataTypeError,
                     "dataType")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": 12345}), mg.DataTypeError,
                     "dataType")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.int32, "onValue": 1.5}),
                     mg.DataTypeError, "onValue")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.uInt8, "offValue": 256}),
                     mg.DataTypeError, "offValue")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.uInt8, "offValue": -1}),
                     mg.DataTypeError, "offValue")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.bool, "onValue": 2}),
                     mg.DataTypeError, "onValue")
    yield ErrorInput(Sample([i], {"depth": 4, "onValue": "1"}), mg.DataTypeError, "onValue")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.int8, "onValue": float("nan")}),
                     mg.DataTypeError, "onValue")
    # finite values that would round to inf, and Python ints beyond float's range
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.float16, "onValue": 1e5}),
                     mg.DataTypeError, "onValue")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.float32, "offValue": 10 ** 400}),
                     mg.DataTypeError, "offValue")
    yield ErrorInput(Sample([i], {"depth": 4, "dataType": DT.int64, "onValue": -10 ** 400}),
                     mg.DataTypeError, "onValue")


# ---------------------------------------------------------------------------- the table
add(OpInfo("softMaxCrossEntropy", build=_build_ce_err, ref=_ce, samples=_ce_samples,
           dtypes=FLOAT, differentiable=(0, 1), torch_ref=_torch_ce, errors=_ce_errors,
           kinds=("oneHot", "softMaxCrossEntropyGradient",
                  "softMaxCrossEntropyLabelsGradient")))
add(OpInfo("softMaxCrossEntropyGradient", build=_build_ce_grad_err, ref=_ce_grad,
           samples=_ce_grad_samples, dtypes=FLOAT, errors=_ce_grad_errors))
add(OpInfo("softMaxCrossEntropyLabelsGradient", build=_build_labels_grad, ref=_ce_labels_grad,
           samples=_labels_grad_samples, dtypes=FLOAT, errors=_labels_grad_errors,
           notes="internal: the labels' gradient of softMaxCrossEntropy (no Graph method)"))
add(OpInfo("oneHot", build=lambda g, idx, **kw: g.oneHot(idx, **kw), ref=_ref_one_hot,
           samples=_one_hot_samples, dtypes=INTEGER, errors=_one_hot_errors))
