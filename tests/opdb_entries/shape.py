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


def _axis_range(size: int, b: int, e: int, st: int) -> list[int]:
    """TensorFlow strided_slice (no masks) along one axis of `size`."""
    b = b + size if b < 0 else b
    e = e + size if e < 0 else e
    lo, hi = (0, size) if st > 0 else (-1, size - 1)
    b, e = min(max(b, lo), hi), min(max(e, lo), hi)
    return list(range(b, e, st))


def _strided_lists(shp, starts, ends, strides):
    return [_axis_range(n, b, e, s) for n, b, e, s in zip(shp, starts, ends, strides)]


def _simple_lists(shp, dimension, start, length):
    d = dimension % len(shp)
    s0 = start + shp[d] if start < 0 else start
    lists = [list(range(n)) for n in shp]
    lists[d] = list(range(s0, s0 + length))
    return lists


def _draw_strided(rng, shp):
    starts, ends, strides = [], [], []
    for n in shp:
        st = int(rng.choice([1, 1, 2, 3, -1, -2]))
        near = int(rng.integers(-n - 2, n + 3)), int(rng.integers(-n - 2, n + 3))
        b = near[0] if rng.random() < 0.8 else int(rng.choice([_BIG, -_BIG]))
        e = near[1] if rng.random() < 0.7 else int(rng.choice([_BIG, -_BIG, -n - 1]))
        starts.append(b)
        ends.append(e)
        strides.append(st)
    return starts, ends, strides


def _draw_simple(rng, shp):
    r = len(shp)
    d = int(rng.integers(-r, r))
    size = shp[d % r]
    length = int(rng.integers(0, size + 1))
    s0 = int(rng.integers(0, size - length + 1))
    start = s0 - size if (s0 < size and rng.random() < 0.5) else s0
    return d, start, length


def _slice_samples(rng, dt):
    for k in range(n_samples()):
        if k % 2 == 0:
            x = arr(rng, shape(rng, int(rng.integers(1, 5))), dt)
            d, start, length = _draw_simple(rng, x.shape)
            yield Sample([x], {"dimension": d, "start": start, "length": length})
        else:
            x = arr(rng, shape(rng), dt)
            starts, ends, strides = _draw_strided(rng, x.shape)
            yield Sample([x], {"starts": starts, "ends": ends, "strides": strides})


def _slice_ref(x, **kw):
    x = _val(x)
    if "dimension" in kw:
        return _idx(x, _simple_lists(x.shape, kw["dimension"], kw["start"], kw["length"]))
    return _idx(x, _strided_lists(x.shape, kw["starts"], kw["ends"], kw["strides"]))


def _slice_torch(x, **kw):
    import torch

    if "dimension" in kw:
        lists = _simple_lists(tuple(x.shape), kw["dimension"], kw["start"], kw["length"])
    else:
        lists = _strided_lists(tuple(x.shape), kw["starts"], kw["ends"], kw["strides"])
    for d, ix in enumerate(lists):
        x = torch.index_select(x, d, torch.tensor(ix, dtype=torch.long))
    return x


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


add(OpInfo("sliceTensor", build=lambda g, x, **kw: g.sliceTensor(x, **kw), ref=_slice_ref,
           samples=_slice_samples, dtypes=ALL, differentiable=(0,), torch_ref=_slice_torch,
           errors=_slice_errors))


def _slice_grad_samples(rng, dt):
    forms = ("list", "int32", "shapeOf", "int64")
    for k in range(n_samples()):
        shp = shape(rng)
        starts, ends, strides = _draw_strided(rng, shp)
        out = tuple(len(ix) for ix in _strided_lists(shp, starts, ends, strides))
        form = forms[k % len(forms)]
        inputs = [arr(rng, out, dt)]
        if form == "shapeOf":
            inputs.append(arr(rng, shp, dt))
        yield Sample(inputs, {"shape": shp, "form": form, "starts": starts, "ends": ends,
                              "strides": strides})


def _slice_grad_ref(dy, *rest, shape, form, starts, ends, strides):
    dy = _val(dy)
    out = np.zeros(shape, dy.dtype)
    lists = _strided_lists(shape, starts, ends, strides)
    if out.ndim == 0:
        return np.array(dy)
    out[np.ix_(*[np.asarray(ix, dtype=np.intp) for ix in lists])] = dy
    return out


def _slice_grad_build(g, dy, *rest, shape, form, starts, ends, strides):
    return g.sliceGradientTensor(dy, _shape_value(g, form, shape, rest), starts, ends, strides)


def _slice_grad_torch(dy, *rest, shape, form, starts, ends, strides):
    import torch

    lists = _strided_lists(shape, starts, ends, strides)
    out = torch.zeros(tuple(shape), dtype=dy.dtype)
    if out.dim() == 0:
        return dy * 1
    ix = torch.meshgrid(*[torch.tensor(i, dtype=torch.long) for i in lists], indexing="ij")
    return out.index_put(ix, dy)


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
