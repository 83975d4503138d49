"""Entries of the shape family (ops/shape.py): reshape, broadcast, transpose, transposeTensor,
sliceTensor, sliceGradientTensor, concatTensors, cast, identity, shapeOf, expandDims, squeeze.

References are NumPy written from the definitions in ops/shape.py's docstring and
docs/semantics.md, never through our kernels: data movement is done with explicit index lists
(a strided slice is TensorFlow's strided_slice without masks: negative starts / ends count from
the end, then clamp to [0, size] for a positive stride and [-1, size - 1] for a negative one);
cast is written value by value from its rules (float -> int truncates toward zero and
saturates, NaN -> 0; -> bool is x != 0, NaN included; integer -> integer wraps modulo 2^bits;
-> float rounds to nearest, |x| past the type's rounding threshold is +-inf). Floating results
are float64, integer and bool results their own type.

Every shape argument comes in each form the builder takes: a list (with -1 for reshape), a
NumPy int array, a constant int32 / int64 shape tensor (positional and as `shapeTensor=`), and
`shapeOf(y)` of a further input y (whose shape is the target). A FED int shape tensor (a
placeholder) cannot go through tests/test_opdb.py: the result's build-time shape is then
[-1, ...], and the harness asserts that every result has its tensor's build-time shape; it is
covered by tests/regressions/test_opdb_found_shape_source_optimizer.py instead."""

from __future__ import annotations

import numpy as np

from opdb import (
    ALL,
    DT,
    FLOAT,
    ErrorInput,
    OpInfo,
    Sample,
    add,
    arr,
    f64,
    is_float,
    n_samples,
    np_dtype,
    shape,
)

from ._common import cycle
from ._common import mg_module as _mg
from ._common import ref_value as _val


def _idx(x: np.ndarray, lists) -> np.ndarray:
    """x at the index lists of each axis (an outer product of indices, as np.ix_)."""
    if x.ndim == 0:
        return np.array(x)
    return x[np.ix_(*[np.asarray(ix, dtype=np.intp) for ix in lists])]


def _ones_like_shape(shp, dt=DT.int32):
    return np.zeros(shp, np_dtype(dt))


# ---------------------------------------------------------------------------- shape arguments
# "list": a Python list; "ndarray": a NumPy int array (not a Tensor); "int32" / "int64": a
# constant 1-D shape tensor; "keyword": the int32 tensor as the Swift label `shapeTensor=`;
# "shapeOf": shapeOf(y) of the sample's last input y (its shape is the target)
_SHAPE_FORMS = ("list", "int32", "ndarray", "int64", "keyword", "shapeOf")


def _shape_value(g, form, shp, rest):
    if form == "list":
        return list(shp)
    if form == "ndarray":
        return np.array(shp, dtype=np.int64).reshape(len(shp))
    if form in ("int32", "int64", "keyword"):
        dt = np.int64 if form == "int64" else np.int32
        return g.constant(np.array(shp, dtype=dt).reshape(len(shp)))
    if form == "shapeOf":
        return g.shapeOf(rest[-1])
    if form == "float32":  # an error form: a float shape tensor
        return g.constant(np.array(shp, dtype=np.float32).reshape(len(shp)))
    if form == "2d":  # an error form: a 2-D shape tensor
        return g.constant(np.array(shp, dtype=np.int32).reshape(1, len(shp)))
    raise AssertionError(form)


def _shape_sample(rng, dt, x, target, form, ref_target=None):
    """A sample of x with a target shape in `form` (shapeOf: an extra input of that shape)."""
    inputs = [x]
    if form == "shapeOf":
        inputs.append(arr(rng, ref_target if ref_target is not None else target, dt))
    return Sample(inputs, {"shape": tuple(target), "form": form})


# ---------------------------------------------------------------------------- reshape
def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def _shape_of_size(rng, n: int) -> tuple[int, ...]:
    """A random shape of rank 0..4 with n elements."""
    if n == 0:
        s = list(shape(rng, int(rng.integers(1, 5))))
        if 0 not in s:
            s[int(rng.integers(len(s)))] = 0
        return tuple(s)
    r = int(rng.integers(0 if n == 1 else 1, 5))
    dims = [1] * r
    for f in _prime_factors(n):
        dims[int(rng.integers(r))] *= f
    return tuple(dims)


def _reshape_samples(rng, dt):
    for k in range(max(n_samples(), len(_SHAPE_FORMS))):
        x = arr(rng, shape(rng), dt)
        form = _SHAPE_FORMS[k % len(_SHAPE_FORMS)]
        target = list(_shape_of_size(rng, x.size))
        full = tuple(target)
        if form != "shapeOf" and x.size and target and rng.random() < 0.6:
            target[int(rng.integers(len(target)))] = -1
        yield _shape_sample(rng, dt, x, target, form, full)


def _reshape_ref(x, *rest, shape, form):
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape = tuple(x.size // known if s == -1 else s for s in shape)
    return _val(x).reshape(shape)


def _reshape_build(g, x, *rest, shape, form):
    if form == "both":  # an error form: a list and a tensor
        return g.reshape(x, list(shape), shapeTensor=g.constant(np.array(shape, np.int32)))
    v = _shape_value(g, form, shape, rest)
    if form == "keyword":
        return g.reshape(x, shapeTensor=v)
    return g.reshape(x, v)


def _reshape_torch(x, *rest, shape, form):
    return x.reshape(tuple(shape))


def _reshape_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    for form in ("list", "int32"):
        yield ErrorInput(Sample([x], {"shape": (-1, -1), "form": form}), mg.ShapeError, "shape")
        yield ErrorInput(Sample([x], {"shape": (4, 2), "form": form}), mg.ShapeError, "shape")
        yield ErrorInput(Sample([x], {"shape": (-1, 4), "form": form}), mg.ShapeError, "shape")
        yield ErrorInput(Sample([x], {"shape": (2, -3), "form": form}), mg.ShapeError, "shape")
    yield ErrorInput(Sample([np.ones((0, 3), np.float32)], {"shape": (-1, 0), "form": "list"}),
                     mg.ShapeError, "shape", "inferred")
    yield ErrorInput(Sample([x], {"shape": (6,), "form": "float32"}), mg.DataTypeError, "shape")
    yield ErrorInput(Sample([x], {"shape": (6,), "form": "2d"}), mg.ShapeError, "shape")
    yield ErrorInput(Sample([x], {"shape": "abc", "form": "list"}), mg.ShapeError, "shape")
    yield ErrorInput(Sample([x], {"shape": (6.0,), "form": "list"}), mg.ShapeError, "shape")
    yield ErrorInput(Sample([x], {"shape": (6,), "form": "both"}), mg.GraphError, "shapeTensor")


add(OpInfo("reshape", build=_reshape_build, ref=_reshape_ref, samples=_reshape_samples,
           dtypes=ALL, differentiable=(0,), torch_ref=_reshape_torch, errors=_reshape_errors))


# ---------------------------------------------------------------------------- broadcast
def _broadcast_samples(rng, dt):
    for k in range(max(n_samples(), len(_SHAPE_FORMS))):
        target = shape(rng)
        drop = int(rng.integers(0, len(target) + 1)) if rng.random() < 0.4 else 0
        xs = tuple(1 if rng.random() < 0.35 else d for d in target[drop:])
        form = _SHAPE_FORMS[k % len(_SHAPE_FORMS)]
        yield _shape_sample(rng, dt, arr(rng, xs, dt), target, form)


def _broadcast_ref(x, *rest, shape, form):
    shape = tuple(shape)
    x = _val(x)
    # NumPy rules from the trailing axis: each axis of x is the target's or 1 (repeated)
    xs = (1,) * (len(shape) - x.ndim) + x.shape
    x = x.reshape(xs)
    idx = [np.zeros(n, np.intp) if s == 1 else np.arange(n) for s, n in zip(xs, shape)]
    return _idx(x, idx) if shape else np.array(x)


def _broadcast_build(g, x, *rest, shape, form):
    v = _shape_value(g, form, shape, rest)
    if form == "keyword":
        return g.broadcast(x, shapeTensor=v)
    return g.broadcast(x, v)


def _broadcast_torch(x, *rest, shape, form):
    import torch

    return torch.broadcast_to(x, tuple(shape))


def _broadcast_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    for form in ("list", "int64"):
        yield ErrorInput(Sample([x], {"shape": (2, 4), "form": form}), mg.ShapeError, "shape")
        yield ErrorInput(Sample([x], {"shape": (3,), "form": form}), mg.ShapeError, "shape")
        yield ErrorInput(Sample([x], {"shape": (4, 1, 3), "form": form}), mg.ShapeError,
                         "shape")
        yield ErrorInput(Sample([x], {"shape": (2, -2), "form": form}), mg.ShapeError, "shape")
        # -1 is no size: a known shape must be static (was a bare TypeError, see the
        # regressions file)
        yield ErrorInput(Sample([x], {"shape": (-1, 3), "form": form}), mg.ShapeError, "shape")
    yield ErrorInput(Sample([x], {"shape": (2, 3), "form": "float32"}), mg.DataTypeError,
                     "shape")
    yield ErrorInput(Sample([x], {"shape": (2, 3), "form": "2d"}), mg.ShapeError, "shape")


add(OpInfo("broadcast", build=_broadcast_build, ref=_broadcast_ref, samples=_broadcast_samples,
           dtypes=ALL, differentiable=(0,), torch_ref=_broadcast_torch,
           errors=_broadcast_errors))


# ---------------------------------------------------------------------------- transpose
def _transpose_samples(rng, dt):
    for _ in range(n_samples()):
        x = arr(rng, shape(rng), dt)
        r = x.ndim
        perm = [int(p) - r if rng.random() < 0.3 else int(p) for p in rng.permutation(r)]
        yield Sample([x], {"permutation": perm})


def _transpose_ref(x, permutation):
    x = _val(x)
    r = x.ndim
    perm = [p % r for p in permutation]
    out_shape = tuple(x.shape[p] for p in perm)
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):  # out[i0, i1, ...] = x[i at the inverse positions]
        src = [0] * r
        for k, p in enumerate(perm):
            src[p] = idx[k]
        out[idx] = x[tuple(src)]
    return out


def _transpose_errors(rng):
    mg = _mg()
    x = np.ones((2, 3, 4), np.float32)
    for perm in ([0, 1], [0, 1, 1], [0, 1, 3], [0, -2, 1], [0, 1, 2, 3], [-4, 0, 1]):
        yield ErrorInput(Sample([x], {"permutation": perm}), mg.ShapeError, "permutation")
    yield ErrorInput(Sample([x], {"permutation": [0, 1.0, 2]}), mg.GraphError, "permutation")
    yield ErrorInput(Sample([x], {"permutation": 3}), mg.GraphError, "permutation")


add(OpInfo("transpose", build=lambda g, x, permutation: g.transpose(x, permutation),
           ref=_transpose_ref, samples=_transpose_samples, dtypes=ALL, differentiable=(0,),
           torch_ref=lambda x, permutation: x.permute([p % x.dim() for p in permutation])
           if x.dim() else x * 1,
           errors=_transpose_errors))


def _transposeTensor_samples(rng, dt):
    for _ in range(n_samples()):
        x = arr(rng, shape(rng, int(rng.integers(1, 5))), dt)
        r = x.ndim
        d1, d2 = (int(rng.integers(-r, r)) for _ in range(2))
        yield Sample([x], {"dimension": d1, "withDimension": d2})


def _transposeTensor_ref(x, dimension, withDimension):
    r = x.ndim
    perm = list(range(r))
    a, b = dimension % r, withDimension % r
    perm[a], perm[b] = perm[b], perm[a]
    return _transpose_ref(x, perm)


def _transposeTensor_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([x], {"dimension": 2, "withDimension": 0}), mg.ShapeError,
                     "dimension")
    yield ErrorInput(Sample([x], {"dimension": 0, "withDimension": -3}), mg.ShapeError,
                     "withDimension")
    yield ErrorInput(Sample([np.ones((), np.float32)], {"dimension": 0, "withDimension": 0}),
                     mg.ShapeError, "dimension")
    yield ErrorInput(Sample([x], {"dimension": 0.0, "withDimension": 1}), mg.GraphError,
                     "dimension")
    yield ErrorInput(Sample([x], {"dimension": 0, "withDimension": True}), mg.GraphError,
                     "withDimension")


add(OpInfo("transposeTensor",
           build=lambda g, x, dimension, withDimension: g.transposeTensor(x, dimension,
                                                                          withDimension),
           ref=_transposeTensor_ref, samples=_transposeTensor_samples, dtypes=ALL,
           differentiable=(0,),
           torch_ref=lambda x, dimension, withDimension: x.transpose(dimension, withDimension),
           errors=_transposeTensor_errors))


# ---------------------------------------------------------------------------- slices
_BIG = 2**31 - 1


def _axis_range(size: int, b: int, e: int, st: int, bm: bool = False, em: bool = False
                ) -> list[int]:
    """TensorFlow strided_slice along one axis of `size`; bm / em: the start / end masked (the
    first / past-the-last element in the stride's direction)."""
    lo, hi = (0, size) if st > 0 else (-1, size - 1)
    if bm:
        b = 0 if st > 0 else size - 1
    else:
        b = b + size if b < 0 else b
        b = min(max(b, lo), hi)
    if em:
        e = size if st > 0 else -1
    else:
        e = e + size if e < 0 else e
        e = min(max(e, lo), hi)
    return list(range(b, e, st))


def _strided_lists(shp, starts, ends, strides, startMask=0, endMask=0, squeezeMask=0):
    """Index lists per axis (a squeezed axis: [its one index]) and the result shape."""
    lists, out = [], []
    for d, (n, b, e, s) in enumerate(zip(shp, starts, ends, strides)):
        bit = 1 << d
        if squeezeMask & bit:
            i = 0 if startMask & bit else b
            lists.append([i + n if i < 0 else i])
            continue
        ix = _axis_range(n, b, e, s, bool(startMask & bit), bool(endMask & bit))
        lists.append(ix)
        out.append(len(ix))
    return lists, tuple(out)


def _size_lists(shp, start, sizeTensor, squeezeMask=0):
    lists, out = [], []
    for d, (n, s, k) in enumerate(zip(shp, start, sizeTensor)):
        s0 = s + n if s < 0 else s
        if squeezeMask & (1 << d):
            lists.append([s0])
            continue
        ix = list(range(s0, n if k == -1 else s0 + k))
        lists.append(ix)
        out.append(len(ix))
    return lists, tuple(out)


def _simple_lists(shp, dimension, start, length):
    d = dimension % len(shp)
    s0 = start + shp[d] if start < 0 else start
    lists = [list(range(n)) for n in shp]
    lists[d] = list(range(s0, s0 + length))
    return lists


def _draw_strided(rng, shp, masks=True):
    starts, ends, strides = [], [], []
    bm = em = sq = 0
    for d, n in enumerate(shp):
        st = int(rng.choice([1, 1, 2, 3, -1, -2]))
        near = int(rng.integers(-n - 2, n + 3)), int(rng.integers(-n - 2, n + 3))
        b = near[0] if rng.random() < 0.8 else int(rng.choice([_BIG, -_BIG]))
        e = near[1] if rng.random() < 0.7 else int(rng.choice([_BIG, -_BIG, -n - 1]))
        if masks:
            u = rng.random()
            if u < 0.15 and n > 0:  # squeeze: one valid index
                sq |= 1 << d
                b = int(rng.integers(-n, n))
                if rng.random() < 0.3:
                    bm |= 1 << d
            else:
                bm |= (1 << d) if rng.random() < 0.25 else 0
                em |= (1 << d) if rng.random() < 0.25 else 0
        starts.append(b)
        ends.append(e)
        strides.append(st)
    kw = {"starts": starts, "ends": ends, "strides": strides}
    if masks:
        kw.update(startMask=bm, endMask=em, squeezeMask=sq)
    return kw


def _draw_simple(rng, shp):
    r = len(shp)
    d = int(rng.integers(-r, r))
    size = shp[d % r]
    length = int(rng.integers(0, size + 1))
    s0 = int(rng.integers(0, size - length + 1))
    start = s0 - size if (s0 < size and rng.random() < 0.5) else s0
    return d, start, length


def _draw_sized(rng, shp):
    start, sizes, sq = [], [], 0
    for d, n in enumerate(shp):
        s0 = int(rng.integers(0, n + 1))
        if n > 0 and s0 < n and rng.random() < 0.2:
            sq |= 1 << d
            sizes.append(1)
        else:
            sizes.append(-1 if rng.random() < 0.3 else int(rng.integers(0, n - s0 + 1)))
        start.append(s0 - n if (s0 < n and rng.random() < 0.4) else s0)
    return {"start": start, "sizeTensor": sizes, "squeezeMask": sq}


# forms of the strided arguments: "lists" (starts=, ends=, strides=), "tensors" (Swift's
# start:end:strideTensor: as constant int32 tensors), "size" (start:sizeTensor: tensors)
def _slice_samples(rng, dt):
    for k in range(max(n_samples(), 6)):
        x = arr(rng, shape(rng, int(rng.integers(1, 5)) if k % 3 == 0 else None), dt)
        if k % 3 == 0:
            d, start, length = _draw_simple(rng, x.shape)
            yield Sample([x], {"dimension": d, "start": start, "length": length})
        elif k % 3 == 1:
            kw = _draw_strided(rng, x.shape, masks=k % 2 == 1)
            yield Sample([x], {**kw, "form": "lists" if k % 4 == 1 else "tensors"})
        else:
            yield Sample([x], {**_draw_sized(rng, x.shape), "form": "size"})


def _lists_of(shp, kw):
    kw = dict(kw)
    kw.pop("form", None)
    if "dimension" in kw:
        lists = _simple_lists(shp, kw["dimension"], kw["start"], kw["length"])
        return lists, tuple(len(ix) for ix in lists)
    if "sizeTensor" in kw:
        return _size_lists(shp, **kw)
    return _strided_lists(shp, **kw)


def _slice_ref(x, **kw):
    lists, out = _lists_of(x.shape, kw)
    return _idx(_val(x), lists).reshape(out)


def _c32(g, v):
    return g.constant(np.array(v, np.int32).reshape(len(v)))


def _slice_kwargs(g, kw):
    """The builder's keywords of a sample (its lists as tensors in the tensor forms)."""
    kw = dict(kw)
    form = kw.pop("form", "lists")
    if form == "tensors":
        kw = {"start": _c32(g, kw.pop("starts")), "end": _c32(g, kw.pop("ends")),
              "strideTensor": _c32(g, kw.pop("strides")), **kw}
    elif form == "size":
        kw = {**kw, "start": _c32(g, kw["start"]), "sizeTensor": _c32(g, kw["sizeTensor"])}
    return kw


def _slice_torch(x, **kw):
    import torch

    lists, out = _lists_of(tuple(x.shape), kw)
    for d, ix in enumerate(lists):
        x = torch.index_select(x, d, torch.tensor(ix, dtype=torch.long))
    return x.reshape(out)


def _slice_errors(rng):
    mg = _mg()
    x = np.ones((4, 5), np.float32)
    E = ErrorInput
    yield E(Sample([x], {"dimension": 0, "start": 3, "length": 2}), mg.ShapeError, "start")
    yield E(Sample([x], {"dimension": 0, "start": -5, "length": 1}), mg.ShapeError, "start")
    yield E(Sample([x], {"dimension": 0, "start": 5, "length": 0}), mg.ShapeError, "start")
    yield E(Sample([x], {"dimension": 1, "start": 0, "length": -1}), mg.ShapeError, "length")
    yield E(Sample([x], {"dimension": 2, "start": 0, "length": 1}), mg.ShapeError, "dimension")
    yield E(Sample([x], {"dimension": -3, "start": 0, "length": 1}), mg.ShapeError,
            "dimension")
    yield E(Sample([x], {"dimension": 0, "start": 0.5, "length": 1}), mg.GraphError, "start")
    yield E(Sample([np.ones((), np.float32)], {"dimension": 0, "start": 0, "length": 0}),
            mg.ShapeError, "dimension")
    yield E(Sample([x], {"starts": [0], "ends": [1, 1], "strides": [1, 1]}), mg.ShapeError,
            "starts")
    yield E(Sample([x], {"starts": [0, 0], "ends": [1], "strides": [1, 1]}), mg.ShapeError,
            "ends")
    yield E(Sample([x], {"starts": [0, 0], "ends": [1, 1], "strides": [1, 1, 1]}),
            mg.ShapeError, "strides")
    yield E(Sample([x], {"starts": [0, 0], "ends": [1, 1], "strides": [1, 0]}), mg.ShapeError,
            "strides")
    yield E(Sample([x], {"starts": [0, 0], "ends": [1, 1.0], "strides": [1, 1]}),
            mg.GraphError, "ends")
    yield E(Sample([x], {"dimension": 0, "start": 0, "length": 1, "strides": [1, 1]}),
            mg.GraphError, "dimension")
    yield E(Sample([x], {"dimension": 0, "start": 0}), mg.GraphError, "dimension")
    # masks
    strided = {"starts": [0, 0], "ends": [4, 5], "strides": [1, 1]}
    yield E(Sample([x], {**strided, "squeezeMask": 1, "starts": [4, 0]}), mg.ShapeError,
            "starts")
    yield E(Sample([x], {**strided, "squeezeMask": 2, "starts": [0, -6]}), mg.ShapeError,
            "starts")
    yield E(Sample([x], {**strided, "startMask": -1}), mg.GraphError, "startMask")
    yield E(Sample([x], {**strided, "endMask": 2**32}), mg.GraphError, "endMask")
    yield E(Sample([x], {**strided, "squeezeMask": 1.0}), mg.GraphError, "squeezeMask")
    yield E(Sample([x], {**strided, "dimension": 0, "start": 0, "length": 1}), mg.GraphError,
            "dimension")
    yield E(Sample([x], {"dimension": 0, "start": 0, "length": 1, "squeezeMask": 1}),
            mg.GraphError, "dimension")
    # the tensor forms
    yield E(Sample([x], {**strided, "form": "tensors", "starts": [0]}), mg.ShapeError, "starts")
    yield E(Sample([x], {"start": [0, 0], "sizeTensor": [1], "form": "size"}), mg.ShapeError,
            "sizeTensor")
    yield E(Sample([x], {"start": [0, 0], "sizeTensor": [1, -2], "form": "size"}),
            mg.ShapeError, "sizeTensor")
    yield E(Sample([x], {**strided, "form": "fed"}), mg.UnsupportedError, "sizeTensor")
    yield E(Sample([x], {**strided, "form": "float"}), mg.DataTypeError, "start")


def _slice_build(g, x, **kw):
    form = kw.get("form")
    if form == "fed":  # an error form: the sizes of the start / size form fed
        return g.sliceTensor(x, start=_c32(g, kw["starts"]),
                             sizeTensor=g.placeholder([2], mg_int32()))
    if form == "float":  # an error form: a float tensor as start
        return g.sliceTensor(x, start=g.constant(np.zeros(2, np.float32)),
                             end=_c32(g, kw["ends"]), strideTensor=_c32(g, kw["strides"]))
    return g.sliceTensor(x, **_slice_kwargs(g, kw))


def mg_int32():
    return _mg().int32


add(OpInfo("sliceTensor", build=_slice_build, ref=_slice_ref,
           samples=_slice_samples, dtypes=ALL, differentiable=(0,), torch_ref=_slice_torch,
           errors=_slice_errors))


def _slice_grad_samples(rng, dt):
    forms = ("list", "int32", "shapeOf", "int64")
    for k in range(max(n_samples(), 4)):
        shp = shape(rng)
        kw = _draw_strided(rng, shp, masks=k % 2 == 1)
        if k % 4 == 3:
            kw = {**_draw_sized(rng, shp), "sform": "size"}
        _, out = _lists_of(shp, {k2: v for k2, v in kw.items() if k2 != "sform"})
        form = forms[k % len(forms)]
        inputs = [arr(rng, out, dt)]
        if form == "shapeOf":
            inputs.append(arr(rng, shp, dt))
        yield Sample(inputs, {"shape": shp, "form": form, **kw})


def _slice_grad_ref(dy, *rest, shape, form, sform=None, **kw):
    dy = _val(dy)
    out = np.zeros(shape, dy.dtype)
    lists, _ = _lists_of(shape, kw)
    if out.ndim == 0:
        return np.array(dy)
    out[np.ix_(*[np.asarray(ix, dtype=np.intp) for ix in lists])] = dy.reshape(
        [len(ix) for ix in lists])
    return out


def _slice_grad_build(g, dy, *rest, shape, form, sform=None, **kw):
    if sform == "size":
        kw = _slice_kwargs(g, {**kw, "form": "size"})
    return g.sliceGradientTensor(dy, _shape_value(g, form, shape, rest), **kw)


def _slice_grad_torch(dy, *rest, shape, form, sform=None, **kw):
    import torch

    lists, _ = _lists_of(shape, kw)
    out = torch.zeros(tuple(shape), dtype=dy.dtype)
    if out.dim() == 0:
        return dy * 1
    ix = torch.meshgrid(*[torch.tensor(i, dtype=torch.long) for i in lists], indexing="ij")
    return out.index_put(ix, dy.reshape([len(i) for i in lists]))


def _slice_grad_errors(rng):
    mg = _mg()
    dy = np.ones((2, 5), np.float32)
    kw = {"shape": (4, 5), "form": "list", "starts": [0, 0], "ends": [2, 5], "strides": [1, 1]}
    E = ErrorInput
    yield E(Sample([np.ones((3, 5), np.float32)], kw), mg.ShapeError, "inputGradientTensor")
    yield E(Sample([np.ones((2,), np.float32)], kw), mg.ShapeError, "inputGradientTensor")
    yield E(Sample([dy], {**kw, "starts": [0]}), mg.ShapeError, "starts")
    yield E(Sample([dy], {**kw, "strides": [1, 0]}), mg.ShapeError, "strides")
    yield E(Sample([dy], {**kw, "shape": (4, -5)}), mg.ShapeError, "fwdInShapeTensor")
    yield E(Sample([dy], {**kw, "form": "float32"}), mg.DataTypeError, "fwdInShapeTensor")
    yield E(Sample([dy], {**kw, "form": "2d"}), mg.ShapeError, "fwdInShapeTensor")
    yield E(Sample([dy], {**kw, "shape": "ab"}), mg.ShapeError, "fwdInShapeTensor")
    # squeezeMask 1: the gradient has the squeezed shape [5]
    yield E(Sample([dy], {**kw, "squeezeMask": 1}), mg.ShapeError, "inputGradientTensor")
    yield E(Sample([dy], {**kw, "endMask": -3}), mg.GraphError, "endMask")


add(OpInfo("sliceGradientTensor", build=_slice_grad_build, ref=_slice_grad_ref,
           samples=_slice_grad_samples, dtypes=ALL, differentiable=(0,),
           torch_ref=_slice_grad_torch, errors=_slice_grad_errors))


# ---------------------------------------------------------------------------- concat
def _concat_samples(rng, dt):
    for k in range(n_samples()):
        r = int(rng.integers(1, 5))
        other = shape(rng, r)
        d = int(rng.integers(-r, r))
        n = 2 if k % 3 == 1 else int(rng.integers(1, 5))
        xs = []
        for _ in range(n):
            s = [1 if rng.random() < 0.2 else o for o in other]
            s[d % r] = int(rng.choice([0, 1, 2, 3]))
            xs.append(arr(rng, s, dt))
        yield Sample(xs, {"dimension": d, "form": "pair" if k % 3 == 1 else "list"},
                     diff=tuple(range(n)))


def _concat_ref(*xs, dimension, form):
    xs = [_val(x) for x in xs]
    r = xs[0].ndim
    d = dimension % r
    other = []  # the other axes broadcast (NumPy rules: each is that size or 1)
    for a in range(r):
        sizes = {x.shape[a] for x in xs} - {1}
        other.append(sizes.pop() if sizes else 1)
    pieces = []
    for x in xs:
        idx = [np.arange(x.shape[a]) if a == d else
               (np.zeros(other[a], np.intp) if x.shape[a] == 1 else np.arange(other[a]))
               for a in range(r)]
        pieces.append(_idx(x, idx))
    out_shape = list(other)
    out_shape[d] = sum(x.shape[d] for x in xs)
    out = np.empty(out_shape, xs[0].dtype)
    off = 0
    for p in pieces:
        sl = [slice(None)] * r
        sl[d] = slice(off, off + p.shape[d])
        out[tuple(sl)] = p
        off += p.shape[d]
    return out


def _concat_build(g, *xs, dimension, form):
    if form == "pair":
        return g.concatTensor(xs[0], withTensor=xs[1], dimension=dimension)
    return g.concatTensors(list(xs), dimension=dimension)


def _concat_torch(*xs, dimension, form):
    import torch

    r = xs[0].dim()
    d = dimension % r
    other = []
    for a in range(r):
        sizes = {x.shape[a] for x in xs} - {1}
        other.append(sizes.pop() if sizes else 1)
    pieces = [torch.broadcast_to(x, tuple(x.shape[a] if a == d else other[a]
                                          for a in range(r))) for x in xs]
    return torch.cat(pieces, dim=d)


def _concat_errors(rng):
    mg = _mg()
    a = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([a, np.ones((2, 3), np.float16)], {"dimension": 0, "form": "list"}),
            mg.DataTypeError, "tensors[1]")
    yield E(Sample([a, np.ones((2, 3), np.int32)], {"dimension": 0, "form": "pair"}),
            mg.DataTypeError, "withTensor")
    yield E(Sample([a, a, np.ones((2, 3, 1), np.float32)], {"dimension": 0, "form": "list"}),
            mg.ShapeError, "tensors[2]")
    yield E(Sample([a, np.ones((4, 3), np.float32)], {"dimension": 1, "form": "list"}),
            mg.ShapeError, "tensors[1]")
    yield E(Sample([a, a], {"dimension": 2, "form": "list"}), mg.ShapeError, "dimension")
    yield E(Sample([a, a], {"dimension": -3, "form": "pair"}), mg.ShapeError, "dimension")
    yield E(Sample([np.ones((), np.float32)] * 2, {"dimension": 0, "form": "list"}),
            mg.ShapeError, "tensors[0]")
    yield E(Sample([a], {"dimension": 0.0, "form": "list"}), mg.GraphError, "dimension")
    yield E(Sample([], {"dimension": 0, "form": "list"}), mg.GraphError, "tensors")


add(OpInfo("concatTensors", build=_concat_build, ref=_concat_ref, samples=_concat_samples,
           dtypes=ALL, differentiable=(0, 1, 2, 3), torch_ref=_concat_torch,
           errors=_concat_errors))


# ---------------------------------------------------------------------------- cast
_TARGETS = ALL  # every source dtype is cast to every one of these in each sample


def _round_threshold(dt: DT) -> float:
    """|x| from which rounding to the float type `dt` (to nearest, ties to even) gives inf:
    halfway between its largest finite value and the next power of two."""
    import ml_dtypes

    fi = ml_dtypes.finfo(np_dtype(dt))
    top = 2.0 ** (int(fi.maxexp))  # the first power of two past the largest finite value
    return top - 2.0 ** (int(fi.maxexp) - int(fi.nmant) - 2)


def _cast_value(x: np.ndarray, to: DT) -> np.ndarray:
    """cast's rules, value by value (exact Python integers)."""
    npdt = np_dtype(to)
    flt = is_float(x)
    if to == DT.bool:
        return f64(x) != 0 if flt else np.asarray(x) != 0  # NaN != 0: true
    if to in FLOAT:
        y = f64(x)
        with np.errstate(invalid="ignore"):
            big = np.abs(y) >= _round_threshold(to)
        return np.where(big, np.copysign(np.inf, y), y)
    info = np.iinfo(npdt)
    flat = x.reshape(-1)
    out = []
    for v in flat:
        if flt:
            fv = float(v)
            if np.isnan(fv):
                q = 0
            elif np.isinf(fv):
                q = info.max if fv > 0 else info.min
            else:
                q = min(max(int(fv), info.min), info.max)  # int() truncates toward zero
        else:
            q = int(v)
            bits = npdt.itemsize * 8
            q %= 2 ** bits
            if info.min < 0 and q >= 2 ** (bits - 1):
                q -= 2 ** bits
        out.append(q)
    return np.array(out, dtype=object).reshape(x.shape).astype(npdt)


# values at the edges of the rules: ties of truncation, the integer types' limits, float16's
# and bFloat16's overflow thresholds, infinities, negative zero
_SPECIALS = [0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, 127.0, 127.5, 128.0, -128.0,
             -128.5, -129.0, 255.0, 255.9, 256.0, 32767.0, 32767.5, -32768.0, -32769.0,
             65504.0, 65519.0, 65520.0, 65535.0, 65536.0, -65536.0, 2.0**31, -2.0**31,
             2.0**31 - 128, 2.0**32, 2.0**32 - 256, 2.0**63, -2.0**63, 2.0**63 - 2.0**39,
             2.0**64, 2.0**64 - 2.0**40, 1e30, -1e30, 3.3e38, -3.3e38, np.inf, -np.inf]
_INT_SPECIALS = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, 65535, 65536,
                 65519, 65520, 2**31 - 1, 2**31, -2**31, 2**32 - 1, 2**32, 2**53 + 1,
                 2**63 - 1, -2**63, 2**64 - 1]


def _cast_input(rng, dt, shp, scale):
    npdt = np_dtype(dt)
    if dt == DT.bool:
        return arr(rng, shp, dt)
    if dt in FLOAT:
        top = float(np.finfo(np.float32).max) if dt != DT.float16 else 65504.0
        lim = min(scale, top)
        x = arr(rng, shp, dt, -lim, lim)
        if scale > 10 and x.size:
            vals = np.array(_SPECIALS, np.float64)
            with np.errstate(over="ignore"):
                picks = rng.choice(vals, size=x.size).astype(npdt)
            mask = rng.random(x.size) < 0.5
            flat = x.reshape(-1)
            flat[mask] = picks[mask]
        return x
    info = np.iinfo(npdt)
    x = arr(rng, shp, dt, -min(scale, 2.0**62), min(scale, 2.0**62))  # (rng.integers' range)
    if scale > 10 and x.size:
        picks = [v for v in _INT_SPECIALS if info.min <= v <= info.max]
        flat = x.reshape(-1)
        for i in np.nonzero(rng.random(x.size) < 0.5)[0]:
            flat[i] = picks[int(rng.integers(len(picks)))]
    return x


def _cast_samples(rng, dt):
    halves = (DT.float16, DT.bFloat16)
    for k in range(n_samples()):
        # even samples: every target, values at every scale and at the rules' edges; odd
        # samples: small values, and (for float32) only targets whose gradient the harness can
        # check (it multiplies each float result by a float32 constant: no half-type results)
        scale = 4.0 if k % 2 else float(rng.choice([1e3, 1e6, 1e20, 1e39]))
        x = _cast_input(rng, dt, shape(rng), scale)
        tos = _TARGETS if (k % 2 == 0 or dt != DT.float32) else tuple(
            t for t in _TARGETS if t not in halves)
        diff = (0,) if (dt == DT.float32 and k % 2) else ()
        yield Sample([x], {"to": tos}, diff=diff)


def _cast_ref(x, to):
    return [_cast_value(np.asarray(x), t) for t in to]


def _cast_torch(x, to):
    # float results only (the harness takes gradients of float results): the identity
    return [x * 1 for _ in to]


def _cast_build(g, x, to):
    return [g.cast(x, t) for t in to]


def _cast_errors(rng):
    mg = _mg()
    x = np.ones((2,), np.float32)
    for to in (DT.invalid, DT.complexFloat16, DT.unorm1, DT.unorm8, "float32", True,
               None, 0x12345):
        yield ErrorInput(Sample([x], {"to": [to]}), mg.DataTypeError, "to")
    yield ErrorInput(Sample([np.ones((2,), np.complex64)], {"to": [DT.float32]}),
                     mg.DataTypeError, "tensor")


add(OpInfo("cast", build=_cast_build, ref=_cast_ref, samples=_cast_samples, dtypes=ALL,
           differentiable=(0,), errors=_cast_errors,
           notes="each sample casts its input to every dataType (a list of results)"))


# ---------------------------------------------------------------------------- identity, shapeOf
def _unary_samples(rng, dt):
    for _ in range(n_samples()):
        yield Sample([arr(rng, shape(rng), dt)])


def _not_a_tensor_errors(op):
    def gen(rng):
        mg = _mg()
        yield ErrorInput(Sample([np.ones((2,), np.float32)], {"bad": True}), mg.GraphError,
                         "tensor")
    return gen


def _identity_build(g, x, bad=False):
    return g.identity(np.ones(2) if bad else x)


def _shapeOf_build(g, x, bad=False):
    return g.shapeOf([1, 2] if bad else x)


add(OpInfo("identity", build=_identity_build, ref=lambda x, bad=False: _val(x),
           samples=_unary_samples, dtypes=ALL, differentiable=(0,),
           torch_ref=lambda x, bad=False: x * 1, errors=_not_a_tensor_errors("identity")))

add(OpInfo("shapeOf", build=_shapeOf_build,
           ref=lambda x, bad=False: np.array(x.shape, dtype=np.int32).reshape(x.ndim),
           samples=_unary_samples, dtypes=ALL, errors=_not_a_tensor_errors("shapeOf")))


# ---------------------------------------------------------------------------- expandDims, squeeze
def _expand_samples(rng, dt):
    for k in range(n_samples()):
        x = arr(rng, shape(rng, int(rng.integers(0, 4))), dt)
        n = 1 if k % 2 == 0 else int(rng.integers(1, 3))
        R = x.ndim + n
        pos = [int(p) for p in rng.choice(R, size=n, replace=False)]
        axes = [p - R if rng.random() < 0.4 else p for p in pos]
        if k % 2 == 0:
            yield Sample([x], {"axis": axes[0]})
        else:
            yield Sample([x], {"axes": axes})


def _expand_ref(x, axis=None, axes=None):
    axes = [axis] if axes is None else list(axes)
    R = x.ndim + len(axes)
    norm = {a % R for a in axes}
    it = iter(x.shape)
    out = tuple(1 if i in norm else next(it) for i in range(R))
    return _val(x).reshape(out)


def _expand_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([x], {"axis": 3}), mg.ShapeError, "axis")
    yield E(Sample([x], {"axis": -4}), mg.ShapeError, "axis")
    yield E(Sample([x], {"axes": [0, 0]}), mg.ShapeError, "axes")
    yield E(Sample([x], {"axes": [1, -3]}), mg.ShapeError, "axes")  # both position 1
    yield E(Sample([x], {"axes": [0, 4]}), mg.ShapeError, "axes")
    yield E(Sample([x], {}), mg.GraphError, "axis")
    yield E(Sample([x], {"axis": 0, "axes": [1]}), mg.GraphError, "axes")
    yield E(Sample([x], {"axis": 0.0}), mg.GraphError, "axis")
    yield E(Sample([x], {"axes": 1}), mg.GraphError, "axes")


add(OpInfo("expandDims", build=lambda g, x, **kw: g.expandDims(x, **kw), ref=_expand_ref,
           samples=_expand_samples, dtypes=ALL, differentiable=(0,),
           torch_ref=lambda x, axis=None, axes=None: x.reshape(
               _expand_ref(np.zeros(tuple(x.shape)), axis, axes).shape),
           errors=_expand_errors))


def _squeeze_samples(rng, dt):
    for k in range(n_samples()):
        x = arr(rng, shape(rng, p_edge=0.6), dt)
        ones = [i for i, n in enumerate(x.shape) if n == 1]
        r = x.ndim

        def neg(i, r=r):
            return i - r if rng.random() < 0.4 else i

        form = k % 3
        if form == 0 or not ones:
            yield Sample([x], {})
        elif form == 1:
            yield Sample([x], {"axis": neg(int(rng.choice(ones)))})
        else:
            pick = [i for i in ones if rng.random() < 0.6]
            yield Sample([x], {"axes": [neg(i) for i in pick]})


def _squeeze_ref(x, axis=None, axes=None):
    if axis is None and axes is None:
        drop = {i for i, n in enumerate(x.shape) if n == 1}
    else:
        drop = {a % x.ndim for a in ([axis] if axes is None else axes)}
    return _val(x).reshape(tuple(n for i, n in enumerate(x.shape) if i not in drop))


def _squeeze_errors(rng):
    mg = _mg()
    x = np.ones((2, 1, 3), np.float32)
    E = ErrorInput
    yield E(Sample([x], {"axis": 0}), mg.ShapeError, "axis")
    yield E(Sample([x], {"axis": 3}), mg.ShapeError, "axis")
    yield E(Sample([x], {"axis": -4}), mg.ShapeError, "axis")
    yield E(Sample([x], {"axes": [1, 2]}), mg.ShapeError, "axes")
    yield E(Sample([np.ones((0, 1), np.float32)], {"axes": [0]}), mg.ShapeError, "axes")
    yield E(Sample([x], {"axis": 1, "axes": [1]}), mg.GraphError, "axes")
    yield E(Sample([x], {"axis": "1"}), mg.GraphError, "axis")


add(OpInfo("squeeze", build=lambda g, x, **kw: g.squeeze(x, **kw), ref=_squeeze_ref,
           samples=_squeeze_samples, dtypes=ALL, differentiable=(0,),
           torch_ref=lambda x, axis=None, axes=None: x.reshape(
               _squeeze_ref(np.zeros(tuple(x.shape)), axis, axes).shape),
           errors=_squeeze_errors))


# ---------------------------------------------------------------------------- padTensor
def _pm():
    return _mg().PaddingMode


def _pad_source(n: int, i: int, mode) -> tuple[int | None, int]:
    """(source index or None for the fill value, sign) of position i of an axis of size n,
    from the modes' definitions (docs/semantics.md, "Shape family")."""
    PM = _pm()
    if 0 <= i < n:
        return i, 1
    if mode in (PM.constant, PM.zero):
        return None, 1
    if mode == PM.clampToEdge:
        return min(max(i, 0), n - 1), 1
    if mode == PM.reflect:  # bounce off the edge elements: x[-1] = x[1], x[n] = x[n - 2]
        while not 0 <= i < n:
            i = -i if i < 0 else 2 * (n - 1) - i
        return i, 1
    if mode == PM.symmetric:  # bounce off the edges themselves: x[-1] = x[0], x[n] = x[n - 1]
        while not 0 <= i < n:
            i = -1 - i if i < 0 else 2 * n - 1 - i
        return i, 1
    p = n - 1  # periodic / antiPeriodic: period n - 1 (Apple: x[-2] -> x[L-3])
    q, m = i // p, i % p
    return m, (-1) ** q if mode == PM.antiPeriodic else 1


def _pad_lists(shp, left, right, mode):
    lists = []
    for n, lo, hi in zip(shp, left, right):
        lists.append([_pad_source(n, i, mode) for i in range(-lo, n + hi)])
    return lists


def _pad_fill(x, mode, value):
    PM = _pm()
    if mode != PM.constant:
        value = 0.0
    if x.dtype == np.bool_:
        return bool(value != 0)
    if x.dtype.kind in "iu":
        return int(value)
    return float(value)


def _pad_ref(x, *, mode, left, right, value=0.0):
    xv = _val(x)
    lists = _pad_lists(x.shape, left, right, mode)
    out_shape = tuple(len(ls) for ls in lists)
    idx = [np.array([0 if j is None else j for j, _ in ls], np.intp) for ls in lists]
    valid = [np.array([j is not None for j, _ in ls]) for ls in lists]
    sign = [np.array([s for _, s in ls]) for ls in lists]
    if not out_shape:
        return np.array(xv)
    if xv.size == 0:
        return np.full(out_shape, _pad_fill(x, mode, value), xv.dtype)
    got = _idx(xv, idx)
    ok = np.ones(out_shape, bool)
    sg = np.ones(out_shape, np.int64)
    for d in range(len(out_shape)):
        sh = [1] * len(out_shape)
        sh[d] = -1
        ok = ok & valid[d].reshape(sh)
        sg = sg * sign[d].reshape(sh)
    if (sg < 0).any():
        got = np.where(sg < 0, -got, got)
    return np.where(ok, got, np.array(_pad_fill(x, mode, value)).astype(xv.dtype))


def _pad_draw(rng, shp, mode):
    PM = _pm()
    left, right = [], []
    for n in shp:
        if mode in (PM.constant, PM.zero):
            most = 3
        elif mode == PM.reflect:
            most = max(n - 1, 0)
        elif mode == PM.symmetric:
            most = n
        elif mode == PM.clampToEdge:
            most = 3 if n >= 1 else 0
        else:
            most = 2 * n if n >= 2 else 0  # periodic: more than one period too
        left.append(int(rng.integers(0, most + 1)))
        right.append(int(rng.integers(0, most + 1)))
    return left, right


def _pad_samples(rng, dt):
    PM = _pm()
    modes = [m for m in PM if not (m == PM.antiPeriodic and dt in _NO_NEG)]
    pick = cycle(rng)
    for k in range(max(n_samples(), len(modes))):
        mode = pick(k, "mode", modes)
        x = arr(rng, shape(rng), dt)
        left, right = _pad_draw(rng, x.shape, mode)
        lo = 0 if dt in _NO_NEG else -5  # (in the type's range: no saturation here)
        value = float(rng.integers(lo, 6)) if dt != DT.bool else float(rng.integers(0, 2))
        if dt in FLOAT:
            value = float(np.asarray(rng.uniform(-3, 3)).astype(np_dtype(dt)))
        yield Sample([x], {"mode": mode, "left": left, "right": right, "value": value})


def _pad_build(g, x, *, mode, left, right, value=0.0):
    return g.padTensor(x, mode, left, right, value)


def _pad_errors(rng):
    mg = _mg()
    PM = mg.PaddingMode
    x = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([x], {"mode": PM.zero, "left": [1], "right": [1, 1]}), mg.ShapeError,
            "leftPadding")
    yield E(Sample([x], {"mode": PM.zero, "left": [1, 1], "right": [1, 1, 1]}), mg.ShapeError,
            "rightPadding")
    yield E(Sample([x], {"mode": PM.constant, "left": [-1, 0], "right": [0, 0]}),
            mg.ShapeError, "leftPadding")
    yield E(Sample([x], {"mode": PM.reflect, "left": [2, 0], "right": [0, 0]}), mg.ShapeError,
            "leftPadding")  # reflect reaches n - 1
    yield E(Sample([x], {"mode": PM.symmetric, "left": [0, 0], "right": [0, 4]}),
            mg.ShapeError, "rightPadding")  # symmetric reaches n
    yield E(Sample([np.ones((1, 3), np.float32)], {"mode": PM.periodic, "left": [1, 0],
                                                   "right": [0, 0]}), mg.ShapeError, "tensor")
    yield E(Sample([np.ones((0, 3), np.float32)], {"mode": PM.clampToEdge, "left": [1, 0],
                                                   "right": [0, 0]}), mg.ShapeError, "tensor")
    yield E(Sample([np.ones((2,), np.uint8)], {"mode": PM.antiPeriodic, "left": [1],
                                               "right": [0]}), mg.DataTypeError, "tensor")
    yield E(Sample([np.ones((2,), np.bool_)], {"mode": PM.antiPeriodic, "left": [1],
                                               "right": [0]}), mg.DataTypeError, "tensor")
    yield E(Sample([x], {"mode": 7, "left": [0, 0], "right": [0, 0]}), mg.GraphError,
            "withPaddingMode")
    yield E(Sample([x], {"mode": "reflect", "left": [0, 0], "right": [0, 0]}), mg.GraphError,
            "withPaddingMode")
    yield E(Sample([x], {"mode": PM.zero, "left": [0, 0.5], "right": [0, 0]}), mg.GraphError,
            "leftPadding")
    yield E(Sample([x], {"mode": PM.zero, "left": [0, 0], "right": [0, 0], "value": "1"}),
            mg.GraphError, "constantValue")


_NO_NEG = (DT.bool, DT.uInt8, DT.uInt16, DT.uInt32, DT.uInt64)

add(OpInfo("padTensor", build=_pad_build, ref=_pad_ref, samples=_pad_samples, dtypes=ALL,
           differentiable=(0,), errors=_pad_errors,
           notes="every PaddingMode; paddings up to each mode's reach (periodic: > 1 period)"))


def _pad_grad_samples(rng, dt):
    PM = _pm()
    pick = cycle(rng)
    for k in range(max(n_samples(), len(PM))):
        mode = pick(k, "mode", list(PM))
        shp = shape(rng)
        left, right = _pad_draw(rng, shp, mode)
        out = tuple(n + lo + hi for n, lo, hi in zip(shp, left, right))
        yield Sample([arr(rng, out, dt), arr(rng, shp, dt)],
                     {"mode": mode, "left": left, "right": right}, diff=(0,))


def _pad_grad_ref(dy, src, *, mode, left, right):
    """Each padded position's gradient added into the element it was read from (times its
    sign); fill positions add nothing."""
    g = _val(dy)
    out = np.zeros(src.shape, np.float64)
    if not src.shape:
        return g.copy()
    lists = _pad_lists(src.shape, left, right, mode)
    for pos in np.ndindex(*g.shape):
        srcpos, sign = [], 1
        for d, j in enumerate(pos):
            i, s = lists[d][j]
            if i is None:
                break
            srcpos.append(i)
            sign *= s
        else:
            out[tuple(srcpos)] += sign * g[pos]
    return out


def _pad_grad_errors(rng):
    mg = _mg()
    PM = mg.PaddingMode
    src = np.ones((2, 3), np.float32)
    E = ErrorInput
    kw = {"mode": PM.reflect, "left": [1, 1], "right": [0, 1]}
    yield E(Sample([np.ones((3, 4), np.float32), src], kw), mg.ShapeError,
            "incomingGradientTensor")
    yield E(Sample([np.ones((3, 5), np.int32), src], kw), mg.DataTypeError,
            "incomingGradientTensor")
    yield E(Sample([np.ones((3, 5), np.float32), src], {**kw, "left": [1]}), mg.ShapeError,
            "leftPadding")
    yield E(Sample([np.ones((4, 5), np.float32), src], {**kw, "left": [2, 1]}),
            mg.ShapeError, "leftPadding")
    yield E(Sample([np.ones((3, 5), np.float32), src], {**kw, "mode": -1}), mg.GraphError,
            "paddingMode")


add(OpInfo("padGradient",
           build=lambda g, dy, src, *, mode, left, right: g.padGradient(
               dy, sourceTensor=src, paddingMode=mode, leftPadding=left, rightPadding=right),
           ref=_pad_grad_ref, samples=_pad_grad_samples, dtypes=FLOAT, differentiable=(0,),
           errors=_pad_grad_errors, tol={DT.float16: (4e-3, 1e-3), DT.bFloat16: (3e-2, 1e-2)}))


# ---------------------------------------------------------------------------- tile
def _tile_samples(rng, dt):
    for _ in range(n_samples()):
        x = arr(rng, shape(rng, hi=3), dt)
        yield Sample([x], {"withMultiplier": [int(rng.choice([0, 1, 1, 2, 3]))
                                              for _ in x.shape]})


def _tile_ref(x, withMultiplier):
    lists = [[j % n for j in range(n * m)] if n else [] for n, m in zip(x.shape, withMultiplier)]
    return _idx(_val(x), lists).reshape([n * m for n, m in zip(x.shape, withMultiplier)])


def _tile_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([x], {"withMultiplier": [2]}), mg.ShapeError, "withMultiplier")
    yield ErrorInput(Sample([x], {"withMultiplier": [1, -1]}), mg.ShapeError, "withMultiplier")
    yield ErrorInput(Sample([x], {"withMultiplier": [1, 1.5]}), mg.GraphError, "withMultiplier")


add(OpInfo("tileTensor", build=lambda g, x, withMultiplier: g.tileTensor(x, withMultiplier),
           ref=_tile_ref, samples=_tile_samples, dtypes=ALL, differentiable=(0,),
           torch_ref=lambda x, withMultiplier: x.repeat(withMultiplier) if withMultiplier
           else x * 1, errors=_tile_errors))


def _tile_grad_samples(rng, dt):
    for _ in range(n_samples()):
        shp = shape(rng, hi=3)
        m = [int(rng.choice([0, 1, 2, 3])) for _ in shp]
        yield Sample([arr(rng, [n * k for n, k in zip(shp, m)], dt), arr(rng, shp, dt)],
                     {"withMultiplier": m}, diff=(0,))


def _tile_grad_ref(dy, src, withMultiplier):
    g = _val(dy)
    out = np.zeros(src.shape, np.float64)
    for pos in np.ndindex(*g.shape):
        out[tuple(j % n for j, n in zip(pos, src.shape))] += g[pos]
    return out if src.shape else g.copy()


def _tile_grad_errors(rng):
    mg = _mg()
    src = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([np.ones((2, 3), np.float32), src], {"withMultiplier": [2, 1]}),
            mg.ShapeError, "incomingGradientTensor")
    yield E(Sample([np.ones((4, 3), np.float32), src], {"withMultiplier": [2]}), mg.ShapeError,
            "withMultiplier")
    yield E(Sample([np.ones((4, 3), np.int32), src], {"withMultiplier": [2, 1]}),
            mg.DataTypeError, "incomingGradientTensor")


add(OpInfo("tileGradient",
           build=lambda g, dy, src, withMultiplier: g.tileGradient(
               dy, sourceTensor=src, withMultiplier=withMultiplier),
           ref=_tile_grad_ref, samples=_tile_grad_samples, dtypes=FLOAT, differentiable=(0,),
           errors=_tile_grad_errors, tol={DT.float16: (4e-3, 1e-3), DT.bFloat16: (3e-2, 1e-2)}))


# ---------------------------------------------------------------------------- split
def _split_samples(rng, dt):
    forms = ("sizes", "num", "tensor", "keyword")
    for k in range(max(n_samples(), len(forms))):
        x = arr(rng, shape(rng, int(rng.integers(1, 4))), dt)
        r = x.ndim
        axis = int(rng.integers(-r, r))
        n = x.shape[axis % r]
        form = forms[k % len(forms)]
        if form == "num":
            divs = [d for d in range(1, n + 1) if n % d == 0] or [1, 2, 3]
            yield Sample([x], {"axis": axis, "numSplits": int(rng.choice(divs))})
            continue
        cuts = sorted(int(c) for c in rng.integers(0, n + 1, size=int(rng.integers(0, 4))))
        sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
        yield Sample([x], {"axis": axis, "splitSizes": sizes, "form": form})


def _split_ref(x, axis, numSplits=None, splitSizes=None, form=None):
    d = axis % x.ndim
    n = x.shape[d]
    sizes = [n // numSplits] * numSplits if numSplits else splitSizes
    out, off = [], 0
    for s in sizes:
        out.append(np.take(_val(x), np.arange(off, off + s, dtype=np.intp), axis=d))
        off += s
    return out


def _split_build(g, x, axis, numSplits=None, splitSizes=None, form=None):
    if numSplits is not None:
        return g.split(x, numSplits=numSplits, axis=axis)
    if form == "tensor":
        return g.split(x, g.constant(np.array(splitSizes, np.int64).reshape(-1)), axis=axis)
    if form == "keyword":
        return g.split(x, splitSizesTensor=_c32(g, splitSizes), axis=axis)
    if form == "both":  # an error form
        return g.split(x, splitSizes, numSplits=2, axis=axis)
    return g.split(x, splitSizes, axis=axis)


def _split_torch(x, axis, numSplits=None, splitSizes=None, form=None):
    import torch

    d = axis % x.dim()
    sizes = [x.shape[d] // numSplits] * numSplits if numSplits else splitSizes
    return list(torch.split(x, sizes, dim=d))


def _split_errors(rng):
    mg = _mg()
    x = np.ones((4, 6), np.float32)
    E = ErrorInput
    yield E(Sample([x], {"axis": 1, "numSplits": 4}), mg.ShapeError, "numSplits")
    yield E(Sample([x], {"axis": 1, "numSplits": 0}), mg.ShapeError, "numSplits")
    yield E(Sample([x], {"axis": 0, "splitSizes": [1, 2]}), mg.ShapeError, "splitSizes")
    yield E(Sample([x], {"axis": 0, "splitSizes": [5, -1]}), mg.ShapeError, "splitSizes")
    yield E(Sample([x], {"axis": 0, "splitSizes": []}), mg.ShapeError, "splitSizes")
    yield E(Sample([x], {"axis": 2, "splitSizes": [4]}), mg.ShapeError, "axis")
    yield E(Sample([x], {"axis": 0, "splitSizes": [2, 2], "form": "both"}), mg.GraphError,
            "splitSizes")
    yield E(Sample([np.ones((), np.float32)], {"axis": 0, "numSplits": 1}), mg.ShapeError,
            "tensor")


add(OpInfo("split", build=_split_build, ref=_split_ref, samples=_split_samples, dtypes=ALL,
           differentiable=(0,), torch_ref=_split_torch, errors=_split_errors,
           notes="a list of results"))


# ---------------------------------------------------------------------------- stack
def _stack_samples(rng, dt):
    from ._common import broadcast_shapes

    for _ in range(n_samples()):
        n = int(rng.integers(1, 4))
        shapes = broadcast_shapes(rng, n)
        xs = [arr(rng, s, dt) for s in shapes]
        r = max(len(s) for s in shapes) + 1
        yield Sample(xs, {"axis": int(rng.integers(-r, r))}, diff=tuple(range(n)))


def _stack_ref(*xs, axis):
    xs = [_val(x) for x in xs]
    full = np.broadcast_shapes(*[x.shape for x in xs])
    bs = [_broadcast_ref(x, shape=full, form=None) for x in xs]
    r = len(full) + 1
    d = axis % r
    out = np.empty(full[:d] + (len(xs),) + full[d:], bs[0].dtype)
    for i, b in enumerate(bs):
        out[(slice(None),) * d + (i,)] = b
    return out


def _stack_torch(*xs, axis):
    import torch

    full = torch.broadcast_shapes(*[x.shape for x in xs])
    return torch.stack([torch.broadcast_to(x, full) for x in xs], dim=axis % (len(full) + 1))


def _stack_errors(rng):
    mg = _mg()
    a = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([a, np.ones((2, 3), np.int32)], {"axis": 0}), mg.DataTypeError, "tensors[1]")
    yield E(Sample([a, np.ones((4, 3), np.float32)], {"axis": 0}), mg.ShapeError, "tensors[1]")
    yield E(Sample([a, a], {"axis": 3}), mg.ShapeError, "axis")
    yield E(Sample([a, a], {"axis": -4}), mg.ShapeError, "axis")
    yield E(Sample([], {"axis": 0}), mg.GraphError, "tensors")
    yield E(Sample([a], {"axis": 0.0}), mg.GraphError, "axis")


add(OpInfo("stack", build=lambda g, *xs, axis: g.stack(list(xs), axis=axis), ref=_stack_ref,
           samples=_stack_samples, dtypes=ALL, differentiable=(0, 1, 2), torch_ref=_stack_torch,
           errors=_stack_errors))


# ---------------------------------------------------------------------------- reverse
def _reverse_samples(rng, dt):
    forms = ("all", "axes", "tensor", "keyword")
    for k in range(max(n_samples(), len(forms))):
        x = arr(rng, shape(rng), dt)
        r = x.ndim
        form = forms[k % len(forms)]
        axes = [int(a) - (r if rng.random() < 0.4 else 0) for a in range(r)
                if rng.random() < 0.6]
        yield Sample([x], {"form": form, "axes": None if form == "all" else axes})


def _reverse_ref(x, form, axes):
    r = x.ndim
    flip = set(range(r)) if axes is None else {a % r for a in axes}
    lists = [list(range(n))[::-1] if d in flip else list(range(n))
             for d, n in enumerate(x.shape)]
    return _idx(_val(x), lists)


def _reverse_build(g, x, form, axes):
    if form == "all":
        return g.reverse(x)
    if form == "tensor":
        return g.reverse(x, g.constant(np.array(axes, np.int32).reshape(-1)))
    if form == "keyword":
        return g.reverse(x, axesTensor=g.constant(np.array(axes, np.int64).reshape(-1)))
    return g.reverse(x, axes=axes)


def _reverse_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    E = ErrorInput
    yield E(Sample([x], {"form": "axes", "axes": [0, -2]}), mg.ShapeError, "axes")
    yield E(Sample([x], {"form": "axes", "axes": [2]}), mg.ShapeError, "axes")
    yield E(Sample([x], {"form": "tensor", "axes": [-3]}), mg.ShapeError, "axes")
    yield E(Sample([x], {"form": "axes", "axes": [0.0]}), mg.GraphError, "axes")


add(OpInfo("reverse", build=_reverse_build, ref=_reverse_ref, samples=_reverse_samples,
           dtypes=ALL, differentiable=(0,), errors=_reverse_errors,
           torch_ref=lambda x, form, axes: x.flip(list(range(x.dim())) if axes is None
                                                  else [a % x.dim() for a in axes])
           if x.dim() else x * 1))


# ---------------------------------------------------------------------------- flatten2D
def _flatten_samples(rng, dt):
    for k in range(max(n_samples(), 3)):
        x = arr(rng, shape(rng), dt)
        r = x.ndim
        yield Sample([x], {"axis": int(rng.integers(-r, r + 1)), "form": ("int", "tensor",
                                                                          "keyword")[k % 3]})


def _flatten_ref(x, axis, form):
    a = axis + x.ndim if axis < 0 else axis
    return _val(x).reshape(int(np.prod(x.shape[:a], dtype=np.int64)),
                           int(np.prod(x.shape[a:], dtype=np.int64)))


def _flatten_build(g, x, axis, form):
    if form == "tensor":
        return g.flatten2D(x, g.constant(np.int32(axis)))
    if form == "keyword":
        return g.flatten2D(x, axisTensor=g.constant(np.array([axis], np.int64)))
    return g.flatten2D(x, axis)


def _flatten_errors(rng):
    mg = _mg()
    x = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([x], {"axis": 3, "form": "int"}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([x], {"axis": -3, "form": "tensor"}), mg.ShapeError, "axis")
    yield ErrorInput(Sample([x], {"axis": 0.5, "form": "int"}), mg.GraphError, "axis")


add(OpInfo("flatten2D", build=_flatten_build, ref=_flatten_ref, samples=_flatten_samples,
           dtypes=ALL, differentiable=(0,), errors=_flatten_errors,
           torch_ref=lambda x, axis, form: x.reshape(_flatten_ref(np.zeros(tuple(x.shape)),
                                                                  axis, form).shape)))


# ---------------------------------------------------------------------------- space <-> batch
def _to_batch_index(pos, shape, spatial, batch, block, pixel):
    """Where element `pos` of the SPACE-shaped tensor lands in the batch-shaped one: each
    spatial coordinate i splits into (i // B, i % B); the offsets form a row-major number k
    over the spatial axes in order (the last fastest); the batch coordinate c becomes
    c * P + k (pixel shuffle order) or k * C + c."""
    out = list(pos)
    k = 0
    for ax, b in zip(spatial, block):
        out[ax] = pos[ax] // b
        k = k * b + pos[ax] % b
    P = int(np.prod(block))
    C = shape[batch]
    out[batch] = pos[batch] * P + k if pixel else k * C + pos[batch]
    return tuple(out)


def _space_shape(shape, spatial, batch, block, to_batch):
    out = list(shape)
    P = int(np.prod(block))
    for ax, b in zip(spatial, block):
        out[ax] = shape[ax] // b if to_batch else shape[ax] * b
    out[batch] = shape[batch] * P if to_batch else shape[batch] // P
    return tuple(out)


def _blocks_ref_fn(to_batch):
    def ref(x, *, spatial, batch, block, pixel, form):
        r = x.ndim
        sp = [a % r for a in spatial]
        b = batch % r
        xv = _val(x)
        out = np.empty(_space_shape(x.shape, sp, b, block, to_batch), xv.dtype)
        space = x.shape if to_batch else out.shape
        for pos in np.ndindex(*space):
            q = _to_batch_index(pos, space, sp, b, block, pixel)
            if to_batch:
                out[q] = xv[pos]
            else:
                out[pos] = xv[q]
        return out
    return ref


def _blocks_draw(rng, dt, to_batch, two_d):
    r = int(rng.integers(2, 5)) if not two_d else int(rng.integers(3, 5))
    axes = [int(a) for a in rng.permutation(r)]
    k = 2 if two_d else int(rng.integers(1, r))
    sp, b = axes[:k], axes[k]
    if two_d:
        bs = int(rng.choice([1, 2, 3]))
        block = [bs, bs]
    else:
        block = [int(rng.choice([1, 2, 3])) for _ in sp]
    shp = [int(rng.integers(0, 3)) if rng.random() < 0.2 else int(rng.integers(1, 3))
           for _ in range(r)]
    for ax, bl in zip(sp, block):  # the sizes the space side needs
        shp[ax] *= bl
    if not to_batch:
        shp = list(_space_shape(shp, sp, b, block, True))
    neg = [a - r if rng.random() < 0.3 else a for a in sp]
    return arr(rng, shp, dt), neg, b - r if rng.random() < 0.3 else b, block


def _blocks_entry(kind, to_batch, two_d):
    forms = ("values", "tensors")

    def samples(rng, dt):
        for k in range(max(n_samples(), 4)):
            x, sp, b, block = _blocks_draw(rng, dt, to_batch, two_d)
            yield Sample([x], {"spatial": sp, "batch": b, "block": block, "pixel": k % 2 == 0,
                               "form": forms[(k // 2) % 2]})

    def build(g, x, *, spatial, batch, block, pixel, form):
        if two_d:  # spatial = [heightAxis, widthAxis]
            kw = {"heightAxis": spatial[0], "widthAxis": spatial[1], "depthAxis": batch}
            if form == "tensors":
                kw = {k + "Tensor": g.constant(np.int32(v)) for k, v in kw.items()}
            fn = getattr(g, {"spaceToDepth2D": "space", "depthToSpace2D": "depth"}[kind]
                         if form == "tensors" else kind)
            return fn(x, blockSize=block[0], usePixelShuffleOrder=pixel, **kw)
        if form == "tensors":
            kw = {"spatialAxesTensor": _c32(g, spatial),
                  "batchAxisTensor": g.constant(np.int32(batch)),
                  "blockDimensionsTensor": _c32(g, block)}
        else:
            kw = {"spatialAxes": spatial, "batchAxis": batch, "blockDimensions": block}
        return getattr(g, kind)(x, usePixelShuffleOrder=pixel, **kw)

    def errors(rng):
        mg = _mg()
        x = np.ones((1, 4, 6, 6), np.float32) if to_batch else np.ones((1, 36, 2, 2),
                                                                       np.float32)
        E = ErrorInput
        base = {"spatial": [2, 3], "batch": 1, "block": [2, 2], "pixel": True,
                "form": "values"}
        sp_label = "heightAxis" if two_d else "spatialAxes"
        b_label = "depthAxis" if two_d else "batchAxis"
        yield E(Sample([x], {**base, "batch": 2}), mg.ShapeError, b_label)
        yield E(Sample([x], {**base, "batch": 4}), mg.ShapeError, b_label)
        yield E(Sample([x], {**base, "spatial": [5, 3]}), mg.ShapeError, sp_label)
        if not two_d:
            yield E(Sample([x], {**base, "spatial": [2, 2], "block": [2, 2]}), mg.ShapeError,
                    "spatialAxes")
            yield E(Sample([x], {**base, "block": [2]}), mg.ShapeError, "blockDimensions")
        yield E(Sample([x], {**base, "block": [0, 0]}), mg.ShapeError,
                "blockSize" if two_d else "blockDimensions")
        if to_batch:
            yield E(Sample([x], {**base, "block": [4, 4]}), mg.ShapeError, sp_label)
        else:
            yield E(Sample([x], {**base, "block": [5, 5]}), mg.ShapeError, b_label)
        yield E(Sample([x], {**base, "pixel": 1}), mg.GraphError, "usePixelShuffleOrder")

    add(OpInfo(kind, build=build, ref=_blocks_ref_fn(to_batch), samples=samples, dtypes=ALL,
               differentiable=(0,), errors=errors))


for _kind, _to_batch, _two_d in (("spaceToBatch", True, False), ("batchToSpace", False, False),
                                  ("spaceToDepth2D", True, True),
                                  ("depthToSpace2D", False, True)):
    _blocks_entry(_kind, _to_batch, _two_d)


# ---------------------------------------------------------------------------- coordinate
def _coordinate_samples(rng, dt):
    for k in range(max(n_samples(), 4)):
        shp = shape(rng, int(rng.integers(1, 5)))
        r = len(shp)
        yield Sample([], {"axis": int(rng.integers(-r, r)), "shape": list(shp),
                          "form": ("values", "axisTensor", "shapeTensor", "both")[k % 4]})


def _coordinate_ref(*, axis, shape, form):
    d = axis % len(shape)
    out = np.zeros(shape, np.int32)
    for pos in np.ndindex(*shape):
        out[pos] = pos[d]
    return out


def _coordinate_build(g, *, axis, shape, form):
    if form == "axisTensor":
        return g.coordinate(g.constant(np.int32(axis)), shape)
    if form == "shapeTensor":
        return g.coordinate(axis, withShapeTensor=_c32(g, shape))
    if form == "both":
        return g.coordinate(alongAxisTensor=g.constant(np.int32(axis)),
                            withShapeTensor=g.constant(np.array(shape, np.int64)))
    return g.coordinate(axis, withShape=shape)


def _coordinate_errors(rng):
    mg = _mg()
    E = ErrorInput
    yield E(Sample([], {"axis": 2, "shape": [2, 3], "form": "values"}), mg.ShapeError,
            "alongAxis")
    yield E(Sample([], {"axis": 0, "shape": [2, -3], "form": "values"}), mg.ShapeError,
            "withShape")
    yield E(Sample([], {"axis": 0, "shape": [], "form": "values"}), mg.ShapeError, "withShape")
    yield E(Sample([], {"axis": 0.0, "shape": [2], "form": "values"}), mg.GraphError,
            "alongAxis")


add(OpInfo("coordinate", build=_coordinate_build, ref=_coordinate_ref,
           samples=_coordinate_samples, dtypes=(DT.int32,), errors=_coordinate_errors,
           notes="no tensor inputs: the sample's dtype is the result's (int32)"))


# ---------------------------------------------------------------------------- reinterpretCast
def _reinterpret_samples(rng, dt):
    size = np_dtype(dt).itemsize
    for _ in range(n_samples()):
        shp = list(shape(rng, int(rng.integers(1, 4))))
        shp[-1] = (8 // size) * int(rng.integers(0, 3))  # a multiple of 8 bytes
        x = arr(rng, shp, dt, -100, 100)
        tos = [t for t in ALL + (DT.complexFloat32,)]
        yield Sample([x], {"to": tos})


def _reinterpret_ref(x, to):
    raw = np.ascontiguousarray(x).tobytes()
    outs = []
    for t in to:
        npdt = np_dtype(t)
        shp = x.shape[:-1] + (x.shape[-1] * x.dtype.itemsize // npdt.itemsize,)
        if t == DT.bool:
            outs.append(np.frombuffer(raw, np.uint8).reshape(shp) != 0)
        else:
            outs.append(np.frombuffer(raw, npdt).reshape(shp).copy())
    return outs


def _reinterpret_errors(rng):
    mg = _mg()
    E = ErrorInput
    yield E(Sample([np.ones((2, 3), np.uint8)], {"to": [DT.float32]}), mg.ShapeError, "tensor")
    yield E(Sample([np.ones((), np.float32)], {"to": [DT.uInt8]}), mg.ShapeError, "tensor")
    for to in (DT.int4, DT.uInt2, DT.invalid, "float32", None):
        yield E(Sample([np.ones((4,), np.float32)], {"to": [to]}), mg.DataTypeError, "to")
    yield E(Sample([np.ones((4,), DT.int4.numpy_dtype)], {"to": [DT.int8]}), mg.DataTypeError,
            "tensor", "sub-byte")


add(OpInfo("reinterpretCast", build=lambda g, x, to: [g.reinterpretCast(x, t) for t in to],
           ref=_reinterpret_ref, samples=_reinterpret_samples, dtypes=ALL,
           errors=_reinterpret_errors, tol={d: (0.0, 0.0) for d in FLOAT}, views=True,
           notes="each sample reads its input as every dataType (a list of results); exact"))


# ---------------------------------------------------------------------------- sliceUpdate
def _slice_update_samples(rng, dt):
    for k in range(max(n_samples(), 4)):
        data = arr(rng, shape(rng), dt)
        kw = _draw_strided(rng, data.shape, masks=k % 2 == 1)
        _, out = _strided_lists(data.shape, **kw)
        ushp = list(out)
        if ushp and rng.random() < 0.5:  # broadcast: drop leading axes, set some to 1
            ushp = ushp[int(rng.integers(0, len(ushp) + 1)):]
            ushp = [1 if rng.random() < 0.3 else n for n in ushp]
        yield Sample([data, arr(rng, ushp, dt)], {**kw, "form": ("lists", "tensors")[k % 2]},
                     diff=(0, 1))


def _slice_update_ref(data, update, form, **kw):
    out = np.array(_val(data))
    lists, shp = _strided_lists(data.shape, **kw)
    if not data.shape:
        return np.array(_val(update)).reshape(())
    piece = _broadcast_ref(update, shape=shp, form=None)
    out[np.ix_(*[np.asarray(ix, dtype=np.intp) for ix in lists])] = piece.reshape(
        [len(ix) for ix in lists])
    return out


def _slice_update_build(g, data, update, form, **kw):
    if form == "tensors":
        kw = {"startsTensor": _c32(g, kw.pop("starts")), "endsTensor": _c32(g, kw.pop("ends")),
              "stridesTensor": _c32(g, kw.pop("strides")), **kw}
    return g.sliceUpdateDataTensor(data, update, **kw)


def _slice_update_errors(rng):
    mg = _mg()
    d = np.ones((4, 5), np.float32)
    kw = {"starts": [0, 0], "ends": [2, 5], "strides": [1, 2], "form": "lists"}
    E = ErrorInput
    yield E(Sample([d, np.ones((2, 2), np.float32)], kw), mg.ShapeError, "updateTensor")
    yield E(Sample([d, np.ones((1, 2, 3), np.float32)], kw), mg.ShapeError, "updateTensor")
    yield E(Sample([d, np.ones((2, 3), np.int32)], kw), mg.DataTypeError, "updateTensor")
    yield E(Sample([d, np.ones((2, 3), np.float32)], {**kw, "starts": [0]}), mg.ShapeError,
            "starts")
    yield E(Sample([d, np.ones((2, 3), np.float32)], {**kw, "form": "tensors",
                                                      "strides": [1, 0]}), mg.ShapeError,
            "stridesTensor")
    yield E(Sample([d, np.ones((2, 1), np.float32)], {**kw, "squeezeMask": 1}), mg.ShapeError,
            "updateTensor")


add(OpInfo("sliceUpdateDataTensor", build=_slice_update_build, ref=_slice_update_ref,
           samples=_slice_update_samples, dtypes=ALL, differentiable=(0, 1),
           errors=_slice_update_errors))
