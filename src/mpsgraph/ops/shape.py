"""The shape family (Apple's MPSGraphTensorShapeOps.h, plus `cast` and `identity`):
reshape, broadcast, transpose, transposeTensor, sliceTensor, sliceGradientTensor,
concatTensors / concatTensor, cast, expandDims, squeeze, identity, shapeOf.

Shapes (r = rank of `tensor`; negative axes count from the end everywhere):

    reshape(x, shape)                    -> shape (one -1 inferred from the element count)
    broadcast(x, shape)                  -> shape (x broadcastable TO shape, NumPy rules)
    transpose(x, permutation)            -> [x.shape[p] for p in permutation]
    transposeTensor(x, d1, d2)           -> x.shape with d1 and d2 swapped
    sliceTensor(x, dimension=, start=, length=)   -> x.shape with `length` at `dimension`
    sliceTensor(x, starts=, ends=, strides=)      -> per axis len(range(start, end, stride))
    sliceGradientTensor(dy, fwdInShape, starts, ends, strides) -> fwdInShape
    concatTensors([x0, x1, ...], dimension)       -> sizes summed along `dimension`
    cast(x, to)                          -> x.shape, dataType `to`
    expandDims(x, axis= / axes=)         -> size-1 axes inserted (positions in the result)
    squeeze(x[, axis= / axes=])          -> size-1 axes removed (all of them if none given)
    identity(x)                          -> x
    shapeOf(x)                           -> [r] int32, the shape as a tensor

Shape arguments given as tensors (`reshape(x, shapeTensor)`, `broadcast(x, shapeTensor)`,
`sliceGradientTensor`'s `fwdInShapeTensor`) are 1-D int32 / int64 tensors; their value is used
at build time when it is a constant, otherwise at run time (the op's rule runs again then). When
the shape tensor is `shapeOf(y)`, the result takes y's (possibly partly dynamic) shape at build
time.

Decisions where Apple's documentation is silent (each tested):

- sliceTensor(dimension:start:length:): `start` may be negative (Apple: counts from the end);
  the slice must lie inside the dimension (start + length <= size, length >= 0), else
  ShapeError. The strided form follows TensorFlow's strided_slice (Apple's reference) without
  masks: one start, end and stride per axis (exactly rank entries), negative starts/ends count
  from the end, out-of-range values are clamped, a stride may be negative but not 0.
- concatTensors: every input has the same rank and dataType; the other dimensions must be
  broadcast compatible (Apple: "Tensors must be broadcast compatible along all other
  dimensions") and are broadcast.
- cast: float -> integer truncates toward zero and SATURATES (NaN -> 0, out-of-range values ->
  the type's min / max), a defined choice where a GPU's result is undefined; -> bool is
  `x != 0` (NaN is true); integer -> narrower integer wraps; float -> float rounds to nearest
  even. Complex sources cast only to complex. Gradient: cast back for float -> float; none
  through integer or bool results.
- broadcast: the result shape is exactly `shape` (x must broadcast to it; `shape` never shrinks).
- reshape: at most one -1; the -1 must be inferable (the other sizes' product > 0).
- expandDims with several axes: the axes are positions in the result (as numpy.expand_dims);
  a repeated axis is an error. squeeze of an axis whose size is not 1 is a ShapeError.
- Kernels may return views of their input (reshape, transpose, slices, identity): no op writes
  in place.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import DataType, ShapedType
from ._registry import InferContext, register_op
from .activation import check_int, normalize_axis
from .arithmetic import broadcast_pair, sum_to_shape

if TYPE_CHECKING:
    from ..graph import Graph, Tensor

__all__ = ["ShapeOps", "ShapeArgAttrs", "SliceAttrs"]

_BIG = 2**31 - 1  # "to the end" in a TF-style slice (clamped)
_SHAPE_DTYPES = (DataType.int32, DataType.int64)


def _static(shape: Sequence[int] | None) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


# ---------------------------------------------------------------------------- shape arguments
@dataclass(frozen=True)
class ShapeArgAttrs:
    """A shape given as a list (`shape`) or by a tensor input; `hint` is the build-time shape
    of y when the tensor is shapeOf(y)."""

    shape: tuple[int, ...] | None
    hint: tuple[int, ...] | None = None


def _shape_arg(ctx: InferContext, arg: str, attrs: ShapeArgAttrs, label: str
               ) -> tuple[list[int] | None, bool]:
    """(the target shape, whether its VALUE is known). The shape is None if even its length is
    unknown; entries are -1 where unknown."""
    if attrs.shape is not None:
        return list(attrs.shape), True
    t = ctx.type_of(arg)
    if t.dataType not in _SHAPE_DTYPES:
        raise ctx.error(DataTypeError, label, "an int32 or int64 shape tensor", t.dataType)
    if t.shape is not None and len(t.shape) != 1:
        raise ctx.error(ShapeError, label, "a 1-D shape tensor", f"shape {t.shape}")
    v = ctx.value_of(arg)
    if v is not None:
        return [int(s) for s in np.asarray(v).reshape(-1)], True
    if attrs.hint is not None:
        return list(attrs.hint), False
    if t.shape is None or t.shape[0] < 0:
        return None, False
    return [-1] * t.shape[0], False


def _split_shape(op: str, name: str | None, shape: Any, tensor: Any, label: str,
                 tensor_label: str) -> tuple[ShapeArgAttrs, Tensor | None]:
    """A `shape` argument given as a list of ints or a Tensor (or the Swift tensor label)."""
    from ..graph import Tensor

    if tensor is not None:
        if shape is not None:
            raise op_error(GraphError, op, tensor_label, f"only one of {label} and "
                           f"{tensor_label}", "both", name)
        shape = tensor
    if isinstance(shape, Tensor):
        src = shape.operation
        hint = None
        if src.kind == "shapeOf" and src.inputs[0].shape is not None:
            hint = tuple(src.inputs[0].shape)
        return ShapeArgAttrs(None, hint), shape
    ok = shape is not None and not isinstance(shape, (str, bytes)) and hasattr(shape, "__iter__")
    if ok:
        shape = list(shape)
        ok = all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
                 for s in shape)
    if not ok:
        raise op_error(ShapeError, op, label, "a list of ints or a shape Tensor",
                       repr(shape) if isinstance(shape, str) else shape, name)
    return ShapeArgAttrs(tuple(int(s) for s in shape)), None


def _int_list(op: str, name: str | None, argument: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise op_error(GraphError, op, argument, "a list of ints",
                       repr(value) if isinstance(value, str) else value, name)
    return tuple(check_int(op, name, argument, v) for v in value)


def _shape_of(g: Graph, x: Tensor) -> list[int] | Tensor:
    """x's shape as a list when static, else the tensor shapeOf(x) (for gradient rules)."""
    return list(x.shape) if _static(x.shape) else g.shapeOf(x)


def _reshape_to(g: Graph, t: Tensor, x: Tensor) -> Tensor:
    if t.shape == x.shape and _static(x.shape):
        return t
    return g.reshape(t, _shape_of(g, x))


# ---------------------------------------------------------------------------- reshape
def _infer_reshape(ctx: InferContext):
    t = ctx.type_of("tensor")
    target, known = _shape_arg(ctx, "shapeTensor", ctx.attrs, "shape")
    if target is None:
        return [ShapedType(None, t.dataType)], None
    n = math.prod(t.shape) if _static(t.shape) else None
    if known:
        if any(s < -1 for s in target) or target.count(-1) > 1:
            raise ctx.error(ShapeError, "shape", "sizes >= 0 with at most one -1", target)
        if -1 in target:
            rest = math.prod(s for s in target if s != -1)
            if rest == 0:
                raise ctx.error(ShapeError, "shape", "a -1 that can be inferred (the other "
                                "sizes' product is 0)", target)
            if n is not None:
                if n % rest:
                    raise ctx.error(ShapeError, "shape", f"a shape with {n} elements (tensor "
                                    f"shape {t.shape}); {n} is not divisible by {rest}", target)
                target = [n // rest if s == -1 else s for s in target]
        elif n is not None and math.prod(target) != n:
            raise ctx.error(ShapeError, "shape", f"a shape with {n} elements (the tensor's, "
                            f"shape {t.shape})", f"{target} ({math.prod(target)} elements)")
    out = ShapedType(target, t.dataType)
    return [out], (tuple(target) if _static(target) else None)


def _grad_reshape(g, op, dys):
    x = op.input("tensor")
    return {"tensor": _reshape_to(g, dys[0], x)}


# ---------------------------------------------------------------------------- broadcast
def _infer_broadcast(ctx: InferContext):
    t = ctx.type_of("tensor")
    target, known = _shape_arg(ctx, "shapeTensor", ctx.attrs, "shape")
    if target is None:
        return [ShapedType(None, t.dataType)], None
    # -1 marks a size not known yet (a shape tensor's value comes at run time); in a shape
    # whose value is known it is no size (broadcast infers nothing, unlike reshape)
    if any(s < -1 for s in target) or (known and any(s < 0 for s in target)):
        raise ctx.error(ShapeError, "shape", "sizes >= 0", target)
    if t.shape is not None:
        ok = len(t.shape) <= len(target)
        if ok:
            for s, d in zip(t.shape[::-1], target[::-1]):
                if not (s == d or s == 1 or s == -1 or d == -1):
                    ok = False
        if not ok:
            raise ctx.error(ShapeError, "shape", f"a shape that tensor {t.shape} broadcasts to "
                            "(NumPy rules; trailing sizes equal, or 1 in the tensor)", target)
    return [ShapedType(target, t.dataType)], (tuple(target) if _static(target) else None)


def _grad_broadcast(g, op, dys):
    return {"tensor": sum_to_shape(g, dys[0], op.input("tensor"))}


# ---------------------------------------------------------------------------- transposes
@dataclass(frozen=True)
class _PermAttrs:
    permutation: tuple[int, ...]


@dataclass(frozen=True)
class _SwapAttrs:
    dimension: int
    withDimension: int


def _infer_transpose(ctx: InferContext):
    t = ctx.type_of("tensor")
    perm = ctx.attrs.permutation
    if t.shape is None:
        return [t], None
    r = len(t.shape)
    norm = [p % r if -r <= p < r else None for p in perm]
    if len(perm) != r or sorted(n for n in norm if n is not None) != list(range(r)):
        raise ctx.error(ShapeError, "permutation", f"a permutation of range({r}) (the rank of "
                        f"tensor {t.shape})", list(perm))
    return [ShapedType([t.shape[p] for p in norm], t.dataType)], tuple(norm)


def _grad_transpose(g, op, dys):
    x = op.input("tensor")
    r = len(x.shape)
    perm = [p % r for p in op.attrs.permutation]
    return {"tensor": g.transpose(dys[0], list(np.argsort(perm)))}


def _infer_transposeTensor(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [t], None
    r = len(t.shape)
    a = normalize_axis(ctx, "tensor", ctx.attrs.dimension, r, "dimension")
    b = normalize_axis(ctx, "tensor", ctx.attrs.withDimension, r, "withDimension")
    s = list(t.shape)
    s[a], s[b] = s[b], s[a]
    return [ShapedType(s, t.dataType)], (a, b)


def _grad_transposeTensor(g, op, dys):
    return {"tensor": g.transposeTensor(dys[0], op.attrs.dimension, op.attrs.withDimension)}


# ---------------------------------------------------------------------------- slices
@dataclass(frozen=True)
class SliceAttrs:
    """Either (dimension, start, length) or (starts, ends, strides)."""

    dimension: int | None = None
    start: int | None = None
    length: int | None = None
    starts: tuple[int, ...] | None = None
    ends: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None


def _slices(ctx: InferContext, arg: str, a: SliceAttrs, shape: list[int]
            ) -> tuple[list[int], tuple[slice, ...] | None]:
    """(result shape, Python slices when every size is known) of a slice of `shape`."""
    r = len(shape)
    if a.starts is None:  # dimension / start / length
        d = normalize_axis(ctx, arg, a.dimension, r, "dimension")
        size = shape[d]
        s = a.start
        if size >= 0:
            s0 = s + size if s < 0 else s
            if not (0 <= s0 <= size and s0 + a.length <= size):
                raise ctx.error(ShapeError, "start", f"a slice inside dimension {d} of size "
                                f"{size} (start in [-{size}, {size}], start + length <= "
                                f"{size}; {arg} shape {shape})",
                                f"start {s}, length {a.length}")
        out = list(shape)
        out[d] = a.length
        if not _static(shape):
            return out, None
        sl = [slice(None)] * r
        sl[d] = slice(s0, s0 + a.length)
        return out, tuple(sl)
    for label, v in (("starts", a.starts), ("ends", a.ends), ("strides", a.strides)):
        if len(v) != r:
            raise ctx.error(ShapeError, label, f"{r} entries (one per dimension of {arg} "
                            f"{shape})", list(v))
    out, sl = [], []
    for size, b, e, st in zip(shape, a.starts, a.ends, a.strides):
        if size < 0:
            out.append(-1)
            continue
        idx = slice(b, e, st).indices(size)
        n = len(range(*idx))
        out.append(n)
        # as a NumPy slice: a stop of -1 (past index 0 going down) would read as "the last"
        sl.append(slice(0, 0) if n == 0 else slice(idx[0], idx[1] if idx[1] >= 0 else None,
                                                    idx[2]))
    return out, (tuple(sl) if _static(shape) else None)


def _infer_sliceTensor(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [t], None
    out, sl = _slices(ctx, "tensor", ctx.attrs, t.shape)
    return [ShapedType(out, t.dataType)], sl


def _tf_slice_args(op_attrs: SliceAttrs, rank: int):
    """(starts, ends, strides) of a slice, in the strided form."""
    a = op_attrs
    if a.starts is not None:
        return list(a.starts), list(a.ends), list(a.strides)
    d = a.dimension % rank
    starts, ends, strides = [0] * rank, [_BIG] * rank, [1] * rank
    starts[d] = a.start
    end = a.start + a.length
    ends[d] = end if (a.start >= 0 or end < 0) else _BIG
    return starts, ends, strides


def _grad_sliceTensor(g, op, dys):
    x = op.input("tensor")
    if x.shape is None:
        raise UnsupportedError(f"sliceTensor: gradient of an unranked tensor ({x.name})")
    starts, ends, strides = _tf_slice_args(op.attrs, len(x.shape))
    return {"tensor": g.sliceGradientTensor(dys[0], _shape_of(g, x), starts, ends, strides)}


@dataclass(frozen=True)
class _SliceGradAttrs:
    shape: ShapeArgAttrs
    slice: SliceAttrs


def _infer_sliceGradientTensor(ctx: InferContext):
    dy = ctx.type_of("inputGradientTensor")
    target, known = _shape_arg(ctx, "fwdInShapeTensor", ctx.attrs.shape, "fwdInShapeTensor")
    if target is None:
        return [ShapedType(None, dy.dataType)], None
    if known and any(s < 0 for s in target):
        raise ctx.error(ShapeError, "fwdInShapeTensor", "sizes >= 0", target)
    out, sl = _slices(ctx, "fwdInShapeTensor", ctx.attrs.slice, target)
    if dy.shape is not None and (len(dy.shape) != len(out) or any(
            a != b and a >= 0 and b >= 0 for a, b in zip(dy.shape, out))):
        raise ctx.error(ShapeError, "inputGradientTensor", f"shape {out} (the slice of "
                        f"fwdInShape {target})", dy.shape)
    return [ShapedType(target, dy.dataType)], ((tuple(target), sl) if sl is not None else None)


def _grad_sliceGradientTensor(g, op, dys):
    a = op.attrs.slice
    return {"inputGradientTensor": g.sliceTensor(dys[0], starts=list(a.starts),
                                                 ends=list(a.ends), strides=list(a.strides))}


# ---------------------------------------------------------------------------- concat
def _infer_concat(ctx: InferContext):
    names = ctx.input_names
    types = ctx.in_types
    dt = types[0].dataType
    for n, t in zip(names, types):
        if t.dataType != dt:
            raise ctx.error(DataTypeError, n, f"{dt!r} (the dataType of {names[0]})",
                            t.dataType)
    ranks = {len(t.shape) for t in types if t.shape is not None}
    if len(ranks) > 1:
        first = next(t for t in types if t.shape is not None)
        bad = next(n for n, t in zip(names, types)
                   if t.shape is not None and len(t.shape) != len(first.shape))
        raise ctx.error(ShapeError, bad, f"rank {len(first.shape)} (every input's rank equal; "
                        f"shapes {[t.shape for t in types]})",
                        f"rank {len(ctx.type_of(bad).shape)}")
    if not ranks:
        return [ShapedType(None, dt)], None
    r = ranks.pop()
    if r == 0:
        raise ctx.error(ShapeError, names[0], "tensors of rank >= 1", "rank 0")
    d = normalize_axis(ctx, names[0], ctx.attrs, r, "dimension")
    if any(t.shape is None for t in types):
        return [ShapedType(None, dt)], None
    other: list[int] = [1] * (r - 1)
    total = 0
    for n, t in zip(names, types):
        rest = t.shape[:d] + t.shape[d + 1:]
        res = broadcast_pair(other, rest)
        if res is None:
            raise ctx.error(ShapeError, n, f"dimensions other than {d} broadcast-compatible "
                            f"with the other inputs' (shapes {[t.shape for t in types]})",
                            t.shape)
        other = res
        total = -1 if (total < 0 or t.shape[d] < 0) else total + t.shape[d]
    out = other[:d] + [total] + other[d:]
    if not _static(out):
        return [ShapedType(out, dt)], None
    targets = tuple(tuple(out[:d] + [t.shape[d]] + out[d + 1:]) for t in types)
    return [ShapedType(out, dt)], (d, targets)


def _grad_concat(g, op, dys):
    dy = dys[0]
    r = len(dy.shape)
    d = op.attrs % r
    out, offset = {}, 0
    for n, x in zip(op.input_names, op.inputs):
        size = x.shape[d]
        if size < 0:
            raise UnsupportedError(f"concatTensors: gradient needs static sizes along dimension "
                                   f"{d}, given {x.shape} for {x.name}")
        piece = g.sliceTensor(dy, dimension=d, start=offset, length=size)
        out[n] = sum_to_shape(g, piece, x)
        offset += size
    return out


# ---------------------------------------------------------------------------- cast, identity
def _infer_cast(ctx: InferContext):
    t = ctx.type_of("tensor")
    to = ctx.attrs
    if t.dataType == DataType.complexFloat32 and to != DataType.complexFloat32:
        raise ctx.error(DataTypeError, "tensor", f"a real tensor (a complex tensor casts only "
                        f"to complex; to={to!r})", t.dataType)
    return [ShapedType(t.shape, to)], to.numpy_dtype


def _grad_cast(g, op, dys):
    x = op.input("tensor")
    if x.dataType.is_floating and op.attrs.is_floating:
        return {"tensor": g.cast(dys[0], x.dataType)}
    return {}


def _infer_identity(ctx: InferContext):
    return [ctx.type_of("tensor")], None


def _infer_shapeOf(ctx: InferContext):
    t = ctx.type_of("tensor")
    return [ShapedType([len(t.shape) if t.shape is not None else -1], DataType.int32)], None


# ---------------------------------------------------------------------------- expandDims, squeeze
@dataclass(frozen=True)
class _AxesAttrs:
    axes: tuple[int, ...] | None
    label: str


def _infer_expandDims(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [t], None
    axes, label = ctx.attrs.axes, ctx.attrs.label
    R = len(t.shape) + len(axes)
    norm = []
    for a in axes:
        if not -R <= a < R:
            raise ctx.error(ShapeError, label, f"axes in [-{R}, {R}) (positions in the result "
                            f"of rank {R})", a if label == "axis" else list(axes))
        norm.append(a % R)
    if len(set(norm)) != len(norm):
        raise ctx.error(ShapeError, label, "distinct axes", list(axes))
    it = iter(t.shape)
    out = [1 if i in norm else next(it) for i in range(R)]
    return [ShapedType(out, t.dataType)], (tuple(out) if _static(out) else None)


def _infer_squeeze(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [t], None
    axes, label = ctx.attrs.axes, ctx.attrs.label
    r = len(t.shape)
    if axes is None:
        if not _static(t.shape):
            return [ShapedType(None, t.dataType)], None
        drop = {i for i, d in enumerate(t.shape) if d == 1}
    else:
        drop = set()
        for a in axes:
            i = normalize_axis(ctx, "tensor", a, r, label)
            if t.shape[i] not in (1, -1):
                raise ctx.error(ShapeError, label, f"axes of size 1 (tensor shape {t.shape})",
                                a if label == "axis" else list(axes))
            drop.add(i)
    out = [d for i, d in enumerate(t.shape) if i not in drop]
    return [ShapedType(out, t.dataType)], (tuple(out) if _static(out) else None)


def _grad_reshape_like(g, op, dys):
    return {"tensor": _reshape_to(g, dys[0], op.input("tensor"))}


register_op("reshape", _infer_reshape, _grad_reshape, value_inputs=("shapeTensor",))
register_op("broadcast", _infer_broadcast, _grad_broadcast, value_inputs=("shapeTensor",))
register_op("transpose", _infer_transpose, _grad_transpose)
register_op("transposeTensor", _infer_transposeTensor, _grad_transposeTensor)
register_op("sliceTensor", _infer_sliceTensor, _grad_sliceTensor)
register_op("sliceGradientTensor", _infer_sliceGradientTensor, _grad_sliceGradientTensor,
            value_inputs=("fwdInShapeTensor",))
register_op("concatTensors", _infer_concat, _grad_concat)
register_op("cast", _infer_cast, _grad_cast)
register_op("identity", _infer_identity, lambda g, op, dys: {"tensor": dys[0]})
register_op("shapeOf", _infer_shapeOf)
register_op("expandDims", _infer_expandDims, _grad_reshape_like)
register_op("squeeze", _infer_squeeze, _grad_reshape_like)


# ---------------------------------------------------------------------------- builders
def _axes_args(op: str, name: str | None, axis: Any, axes: Any) -> _AxesAttrs:
    if axis is not None and axes is not None:
        raise op_error(GraphError, op, "axes", "only one of axis and axes", "both", name)
    if axis is not None:
        return _AxesAttrs((check_int(op, name, "axis", axis),), "axis")
    if axes is None:
        return _AxesAttrs(None, "axes")
    return _AxesAttrs(_int_list(op, name, "axes", axes), "axes")


def _data_type(op: str, name: str | None, to: Any) -> DataType:
    try:
        if isinstance(to, (bool, np.bool_)):
            raise ValueError
        dt = DataType(to)
        dt.numpy_dtype  # noqa: B018 - raises TypeError for types without data
    except (ValueError, TypeError):
        raise op_error(DataTypeError, op, "to", "a DataType with a NumPy representation",
                       repr(to) if isinstance(to, str) else to, name) from None
    return dt


class ShapeOps:
    """Graph methods of the shape family (mixed into `Graph`). Any dataType unless noted."""

    def reshape(self, tensor: Tensor, shape: Sequence[int] | Tensor | None = None, *,
                name: str | None = None, shapeTensor: Tensor | None = None) -> Tensor:
        """The same elements (row-major) in `shape`: a list of ints with at most one -1
        (inferred), or a 1-D int32/int64 tensor (Swift `reshape(_:shapeTensor:)`; keyword
        `shapeTensor=` also accepted). [any] -> shape; the element count must not change."""
        attrs, t = _split_shape("reshape", name, shape, shapeTensor, "shape", "shapeTensor")
        return self._add("reshape", [("tensor", tensor), ("shapeTensor", t)], attrs, name,
                         optional=("shapeTensor",))[0]

    def broadcast(self, tensor: Tensor, shape: Sequence[int] | Tensor | None = None, *,
                  name: str | None = None, shapeTensor: Tensor | None = None) -> Tensor:
        """`tensor` broadcast (NumPy rules, from the trailing dimensions) to exactly `shape`
        (a list of ints or a 1-D int32/int64 tensor)."""
        attrs, t = _split_shape("broadcast", name, shape, shapeTensor, "shape", "shapeTensor")
        return self._add("broadcast", [("tensor", tensor), ("shapeTensor", t)], attrs, name,
                         optional=("shapeTensor",))[0]

    def transpose(self, tensor: Tensor, permutation: Sequence[int], *,
                  name: str | None = None) -> Tensor:
        """Permute the dimensions: result dimension i is tensor dimension permutation[i]
        (as numpy.transpose); [d0..dr-1] -> [d_p0, ..., d_p(r-1)]."""
        perm = _int_list("transpose", name, "permutation", permutation)
        return self._add("transpose", [("tensor", tensor)], _PermAttrs(perm), name)[0]

    def transposeTensor(self, tensor: Tensor, dimension: int, withDimension: int, *,
                        name: str | None = None) -> Tensor:
        """Swap two dimensions (negative values count from the end); same rank."""
        op = "transposeTensor"
        attrs = _SwapAttrs(check_int(op, name, "dimension", dimension),
                           check_int(op, name, "withDimension", withDimension))
        return self._add(op, [("tensor", tensor)], attrs, name)[0]

    def sliceTensor(self, tensor: Tensor, *, dimension: int | None = None,
                    start: int | None = None, length: int | None = None,
                    starts: Sequence[int] | None = None, ends: Sequence[int] | None = None,
                    strides: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Two Swift overloads:

        - `sliceTensor(x, dimension=d, start=s, length=n)`: elements s .. s+n-1 of dimension d
          (s < 0 counts from the end); the result has size n there.
        - `sliceTensor(x, starts=[...], ends=[...], strides=[...])`: a strided slice, one entry
          per dimension, TensorFlow strided_slice semantics without masks (ends exclusive,
          negatives count from the end, clamped, strides != 0)."""
        op = "sliceTensor"
        simple = (dimension, start, length)
        strided = (starts, ends, strides)
        if all(v is None for v in strided) and all(v is not None for v in simple):
            length = check_int(op, name, "length", length)
            if length < 0:
                raise op_error(ShapeError, op, "length", "a length >= 0", length, name)
            attrs = SliceAttrs(check_int(op, name, "dimension", dimension),
                               check_int(op, name, "start", start), length)
        elif all(v is None for v in simple) and all(v is not None for v in strided):
            st = _int_list(op, name, "strides", strides)
            if 0 in st:
                raise op_error(ShapeError, op, "strides", "strides != 0", list(st), name)
            attrs = SliceAttrs(starts=_int_list(op, name, "starts", starts),
                               ends=_int_list(op, name, "ends", ends), strides=st)
        else:
            raise op_error(GraphError, op, "dimension", "either dimension, start and length, "
                           "or starts, ends and strides",
                           {k: v for k, v in zip(("dimension", "start", "length", "starts",
                                                  "ends", "strides"), simple + strided)
                            if v is not None}, name)
        return self._add(op, [("tensor", tensor)], attrs, name)[0]

    def sliceGradientTensor(self, inputGradientTensor: Tensor,
                            fwdInShapeTensor: Sequence[int] | Tensor, starts: Sequence[int],
                            ends: Sequence[int], strides: Sequence[int], *,
                            name: str | None = None) -> Tensor:
        """The gradient of the strided slice `sliceTensor(x, starts=, ends=, strides=)`: zeros
        of the forward input's shape (`fwdInShapeTensor`: a 1-D int32/int64 tensor or a list)
        with `inputGradientTensor` (the slice's shape) written at the sliced positions."""
        op = "sliceGradientTensor"
        shape_attrs, t = _split_shape(op, name, fwdInShapeTensor, None, "fwdInShapeTensor",
                                      "fwdInShapeTensor")
        st = _int_list(op, name, "strides", strides)
        if 0 in st:
            raise op_error(ShapeError, op, "strides", "strides != 0", list(st), name)
        sl = SliceAttrs(starts=_int_list(op, name, "starts", starts),
                        ends=_int_list(op, name, "ends", ends), strides=st)
        return self._add(op, [("inputGradientTensor", inputGradientTensor),
                              ("fwdInShapeTensor", t)], _SliceGradAttrs(shape_attrs, sl),
                         name, optional=("fwdInShapeTensor",))[0]

    def concatTensors(self, tensors: Sequence[Tensor], dimension: int, *,
                      name: str | None = None) -> Tensor:
        """Concatenate along `dimension` (negative counts from the end). Same rank and dataType;
        the other dimensions broadcast. [..., n_i, ...] -> [..., sum n_i, ...]."""
        op = "concatTensors"
        if isinstance(tensors, (str, bytes)) or not hasattr(tensors, "__iter__"):
            raise op_error(GraphError, op, "tensors", "a list of Tensors", type(tensors).__name__,
                           name)
        tensors = list(tensors)
        if not tensors:
            raise op_error(GraphError, op, "tensors", "at least one tensor", "an empty list",
                           name)
        d = check_int(op, name, "dimension", dimension)
        return self._add(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)], d, name)[0]

    def concatTensor(self, tensor: Tensor, withTensor: Tensor, dimension: int, *,
                     name: str | None = None) -> Tensor:
        """Swift `concatTensor(_:with:dimension:)` (Objective-C label `withTensor`): two tensors
        concatenated along `dimension`, as concatTensors."""
        d = check_int("concatTensors", name, "dimension", dimension)
        return self._add("concatTensors", [("tensor", tensor), ("withTensor", withTensor)], d,
                         name)[0]

    def cast(self, tensor: Tensor, to: DataType, *, name: str | None = None) -> Tensor:
        """The values converted to dataType `to` (same shape). float -> int truncates toward
        zero and saturates (NaN -> 0); -> bool is x != 0; see the module notes."""
        return self._add("cast", [("tensor", tensor)], _data_type("cast", name, to), name)[0]

    def expandDims(self, tensor: Tensor, *, axis: int | None = None,
                   axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Insert size-1 dimensions at `axis` / `axes` (positions in the result, negative
        from its end)."""
        attrs = _axes_args("expandDims", name, axis, axes)
        if attrs.axes is None:
            raise op_error(GraphError, "expandDims", "axis", "an axis or a list of axes", None,
                           name)
        return self._add("expandDims", [("tensor", tensor)], attrs, name)[0]

    def squeeze(self, tensor: Tensor, *, axis: int | None = None,
                axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Remove size-1 dimensions: the given `axis` / `axes` (each must have size 1), or every
        size-1 dimension when neither is given (Swift `squeeze(_:name:)`)."""
        attrs = _axes_args("squeeze", name, axis, axes)
        return self._add("squeeze", [("tensor", tensor)], attrs, name)[0]

    def identity(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """The same values (a new tensor of the graph)."""
        return self._add("identity", [("tensor", tensor)], None, name)[0]

    def shapeOf(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """The shape of `tensor` as a 1-D int32 tensor [rank] (known at run time)."""
        return self._add("shapeOf", [("tensor", tensor)], None, name)[0]
