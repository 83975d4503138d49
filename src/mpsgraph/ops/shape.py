"""The shape family (Apple's MPSGraphTensorShapeOps.h, plus `cast` and `identity`):
reshape, broadcast, transpose, transposeTensor, sliceTensor, sliceGradientTensor,
sliceUpdateDataTensor, concatTensors / concatTensor, cast, reinterpretCast, expandDims, squeeze,
identity, shapeOf, padTensor, padGradient, tileTensor, tileGradient, split, stack, reverse,
flatten2D, depth (depthToSpace2D), space (spaceToDepth2D), spaceToBatch, batchToSpace,
coordinate.

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
    padTensor(x, mode, left, right)      -> [l_i + d_i + r_i]
    padGradient(dy, x, mode, left, right) -> x.shape (dy: the padded shape)
    tileTensor(x, m)                     -> [d_i * m_i];  tileGradient(dy, x, m) -> x.shape
    split(x, splitSizes= / numSplits=, axis=) -> a list of x.shape with the piece's size at axis
    stack([x0, x1, ...], axis)           -> broadcast shape s with k inserted at axis
    reverse(x[, axes])                   -> x.shape
    flatten2D(x, axis)                   -> [prod(d[:axis]), prod(d[axis:])]
    spaceToDepth2D(x, w, h, d, b)        -> H / b, W / b, D * b^2 (depthToSpace2D: inverse)
    spaceToBatch(x, axes, batch, B)      -> spatial d_i / B_i, batch * prod(B) (batchToSpace:
                                            inverse)
    coordinate(axis, shape)              -> shape, int32
    reinterpretCast(x, to)               -> last dimension * sizeof(x) / sizeof(to)
    sliceUpdateDataTensor(x, u, ...)     -> x.shape (u broadcasts to the slice)

The decisions of the ops added for issue 16 are in docs/semantics.md, "Shape family (issue 16)".

Shape arguments given as tensors (`reshape(x, shapeTensor)`, `broadcast(x, shapeTensor)`,
`sliceGradientTensor`'s `fwdInShapeTensor`) are 1-D int32 / int64 tensors; their value is used
at build time when it is a constant, otherwise at run time (the op's rule runs again then). When
the shape tensor is `shapeOf(y)`, the result takes y's (possibly partly dynamic) shape at build
time.

Decisions where Apple's documentation is silent (each tested):

- sliceTensor(dimension:start:length:): `start` may be negative (Apple: counts from the end);
  the slice must lie inside the dimension (start + length <= size, length >= 0), else
  ShapeError. The strided form follows TensorFlow's strided_slice (Apple's reference): one
  start, end and stride per axis (exactly rank entries), negative starts/ends count from the
  end, out-of-range values are clamped, a stride may be negative but not 0; start / end /
  squeeze masks as TensorFlow's begin / end / shrink-axis masks.
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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import FLOATING, SUB_BYTE, DataType, PaddingMode, ShapedType
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
    startMask: int = 0
    endMask: int = 0
    squeezeMask: int = 0


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
    vals = [_now(ctx, v) for v in (a.starts, a.ends, a.strides)]
    if any(isinstance(v, _Fed) for v in vals):  # fed starts / ends / strides: sizes at run time
        return [-1 for d in range(r) if not a.squeezeMask & (1 << d)], None
    a = replace(a, starts=vals[0], ends=vals[1], strides=vals[2])
    for label, v in (("starts", a.starts), ("ends", a.ends), ("strides", a.strides)):
        if len(v) != r:
            raise ctx.error(ShapeError, label, f"{r} entries (one per dimension of {arg} "
                            f"{shape})", list(v))
    if 0 in a.strides:  # (a fed stride: checked here, at run time)
        raise ctx.error(ShapeError, "strides", "strides != 0", list(a.strides))
    out, sl = [], []
    for d, (size, b, e, st) in enumerate(zip(shape, a.starts, a.ends, a.strides)):
        bit = 1 << d
        if a.squeezeMask & bit:  # the element at start (0 under startMask); the axis goes
            i = 0 if a.startMask & bit else b
            if size >= 0:
                i0 = i + size if i < 0 else i
                if not 0 <= i0 < size:
                    raise ctx.error(ShapeError, "starts", f"an index inside dimension {d} of "
                                    f"size {size} (squeezeMask keeps one element; {arg} shape "
                                    f"{shape})", list(a.starts))
                sl.append(i0)
            continue
        if size < 0:
            out.append(-1)
            continue
        # a masked start / end is the first / past-the-last element in the stride's direction
        idx = slice(None if a.startMask & bit else b, None if a.endMask & bit else e,
                    st).indices(size)
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


_FED_SLICE_LABELS = {"starts": "start", "ends": "end", "strides": "strideTensor"}


def _tf_slice_args(op_attrs: SliceAttrs, rank: int, op=None) -> dict[str, Any]:
    """The strided form of a slice, as sliceTensor / sliceGradientTensor keywords (a fed
    argument as its tensor, the input of `op`)."""
    a = op_attrs
    if a.starts is not None:
        kw: dict[str, Any] = {"startMask": a.startMask, "endMask": a.endMask,
                              "squeezeMask": a.squeezeMask}
        for f in ("starts", "ends", "strides"):
            v = getattr(a, f)
            if isinstance(v, _Fed):
                kw[_FED_SLICE_LABELS[f]] = op.input(v.input)
            else:
                kw[f] = list(v)
        return kw
    d = a.dimension % rank
    starts, ends, strides = [0] * rank, [_BIG] * rank, [1] * rank
    starts[d] = a.start
    end = a.start + a.length
    ends[d] = end if (a.start >= 0 or end < 0) else _BIG
    return {"starts": starts, "ends": ends, "strides": strides}


def _grad_sliceTensor(g, op, dys):
    x = op.input("tensor")
    if x.shape is None:
        raise UnsupportedError(f"sliceTensor: gradient of an unranked tensor ({x.name})")
    kw = _tf_slice_args(op.attrs, len(x.shape), op)
    return {"tensor": g.sliceGradientTensor(dys[0], _shape_of(g, x), **kw)}


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
    return {"inputGradientTensor": g.sliceTensor(dys[0], **_tf_slice_args(op.attrs.slice, 0,
                                                                          op))}


# ---------------------------------------------------------------------------- concat
@dataclass(frozen=True)
class _ConcatAttrs:
    dimension: int
    interleave: bool = False


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
    d = normalize_axis(ctx, names[0], ctx.attrs.dimension, r, "dimension")
    if any(t.shape is None for t in types):
        return [ShapedType(None, dt)], None
    if ctx.attrs.interleave:  # every dimension broadcasts, `dimension` too
        full: list[int] | None = [1] * r
        for n, t in zip(names, types):
            full = broadcast_pair(full, t.shape)
            if full is None:
                raise ctx.error(ShapeError, n, "shapes broadcast-compatible in every dimension "
                                f"(interleave; shapes {[t.shape for t in types]})", t.shape)
        k = len(types)
        out = full[:d] + [full[d] * k if full[d] >= 0 else -1] + full[d + 1:]
        if not _static(out):
            return [ShapedType(out, dt)], None
        return [ShapedType(out, dt)], (d, (tuple(full),) * k, tuple(out))
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
    d = op.attrs.dimension % r
    out, offset = {}, 0
    if op.attrs.interleave:  # dy [..., n * k, ...] -> [..., n, k, ...]: input i is [:, i]
        k = len(op.inputs)
        if not _static(dy.shape):
            raise UnsupportedError(f"concatTensors: the gradient of an interleave needs static "
                                   f"shapes, given {dy.shape}")
        full = list(dy.shape)
        full[d] //= k
        split = g.reshape(dy, full[:d + 1] + [k] + full[d + 1:])
        for i, (n, x) in enumerate(zip(op.input_names, op.inputs)):
            piece = g.reshape(g.sliceTensor(split, dimension=d + 1, start=i, length=1), full)
            out[n] = sum_to_shape(g, piece, x)
        return out
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
_SLICE_INPUTS = ("start", "end", "strideTensor")  # fed strided arguments (Swift's labels)
_UPDATE_INPUTS = ("startsTensor", "endsTensor", "stridesTensor")
register_op("sliceTensor", _infer_sliceTensor, _grad_sliceTensor, value_inputs=_SLICE_INPUTS)
register_op("sliceGradientTensor", _infer_sliceGradientTensor, _grad_sliceGradientTensor,
            value_inputs=("fwdInShapeTensor",) + _SLICE_INPUTS)
register_op("concatTensors", _infer_concat, _grad_concat)
register_op("cast", _infer_cast, _grad_cast)
register_op("identity", _infer_identity, lambda g, op, dys: {"tensor": dys[0]})
register_op("shapeOf", _infer_shapeOf)
register_op("expandDims", _infer_expandDims, _grad_reshape_like)
register_op("squeeze", _infer_squeeze, _grad_reshape_like)


# ---------------------------------------------------------------------------- fed arguments
@dataclass(frozen=True)
class _Fed:
    """An int argument given by a tensor input (named `input`) whose value is known only when
    the graph runs (a placeholder's, a computed one's): the shape rule reads it then."""

    input: str
    scalar: bool = False


def _now(ctx: InferContext, v: Any) -> Any:
    """A possibly fed argument's value as the rule sees it now (still `_Fed` if unknown)."""
    if not isinstance(v, _Fed):
        return v
    val = ctx.value_of(v.input)
    if val is None:
        return v
    val = np.asarray(val).reshape(-1)
    if v.scalar:
        return int(val[0])
    return tuple(int(a) for a in val)


# ---------------------------------------------------------------------------- pad
_PAD_MIRRORS = (PaddingMode.reflect, PaddingMode.symmetric)
_PAD_FILLS = (PaddingMode.constant, PaddingMode.zero)


@dataclass(frozen=True)
class _PadAttrs:
    mode: PaddingMode
    left: tuple[int, ...]
    right: tuple[int, ...]
    constantValue: float = 0.0


def _pad_shape(ctx: InferContext, arg: str, shape: list[int], a: _PadAttrs) -> list[int]:
    """The padded shape; checks the paddings against `shape` (its known sizes)."""
    r = len(shape)
    for label, v in (("leftPadding", a.left), ("rightPadding", a.right)):
        if len(v) != r:
            raise ctx.error(ShapeError, label, f"{r} entries (one per dimension of {arg} "
                            f"{shape})", list(v))
        if any(p < 0 for p in v):
            raise ctx.error(ShapeError, label, "paddings >= 0", list(v))
    for d, (n, lo, hi) in enumerate(zip(shape, a.left, a.right)):
        if n < 0 or a.mode in _PAD_FILLS or lo == hi == 0:
            continue
        if a.mode in _PAD_MIRRORS:  # reflect reaches n - 1 elements, symmetric n
            most = n - 1 if a.mode == PaddingMode.reflect else n
            if max(lo, hi) > most:
                label = "leftPadding" if lo > most else "rightPadding"
                raise ctx.error(ShapeError, label, f"paddings <= {most} on dimension {d} of size "
                                f"{n} ({a.mode.name} mirrors inside the dimension; {arg} shape "
                                f"{shape})", list(a.left if lo > most else a.right))
        else:
            least = 1 if a.mode == PaddingMode.clampToEdge else 2  # periodic: period n - 1
            if n < least:
                raise ctx.error(ShapeError, arg, f"a size >= {least} on padded dimension {d} "
                                f"({a.mode.name} padding reads the dimension's elements)",
                                f"shape {shape}")
    return [n + lo + hi if n >= 0 else -1 for n, lo, hi in zip(shape, a.left, a.right)]


def _pad_value(a: _PadAttrs, dt: DataType):
    """constantValue in the tensor's dataType (0 unless the mode is constant)."""
    v = a.constantValue if a.mode == PaddingMode.constant else 0.0
    if dt == DataType.bool:
        return np.array(v != 0)
    npdt = dt.numpy_dtype
    if npdt.kind in "iu":
        info = np.iinfo(npdt)  # truncate toward zero and saturate, as cast
        v = 0 if math.isnan(v) else min(max(math.trunc(v) if math.isfinite(v) else
                                            (info.max if v > 0 else info.min), info.min),
                                        info.max)
        return np.array(v, npdt)
    with np.errstate(over="ignore"):
        return np.array(v).astype(npdt)


def _infer_padTensor(ctx: InferContext):
    t = ctx.type_of("tensor")
    a = ctx.attrs
    if a.mode == PaddingMode.antiPeriodic and (t.dataType == DataType.bool or t.dataType.name
                                                .startswith("uInt")):
        raise ctx.error(DataTypeError, "tensor", "a signed or floating dataType (antiPeriodic "
                        "negates)", t.dataType)
    if t.shape is None:
        return [t], None
    out = _pad_shape(ctx, "tensor", t.shape, a)
    return [ShapedType(out, t.dataType)], (a.mode, a.left, a.right, _pad_value(a, t.dataType))


def _grad_padTensor(g, op, dys):
    a = op.attrs
    return {"tensor": g.padGradient(dys[0], sourceTensor=op.input("tensor"), paddingMode=a.mode,
                                    leftPadding=list(a.left), rightPadding=list(a.right))}


def _infer_padGradient(ctx: InferContext):
    dy = ctx.type_of("incomingGradientTensor")
    src = ctx.type_of("sourceTensor")
    a = ctx.attrs
    if dy.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "incomingGradientTensor", "float32, float16 or bFloat16",
                        dy.dataType)
    if src.shape is None:
        return [ShapedType(None, dy.dataType)], None
    padded = _pad_shape(ctx, "sourceTensor", src.shape, a)
    if dy.shape is not None and (len(dy.shape) != len(padded) or any(
            p >= 0 and q >= 0 and p != q for p, q in zip(dy.shape, padded))):
        raise ctx.error(ShapeError, "incomingGradientTensor", f"shape {padded} (the padded shape "
                        f"of sourceTensor {src.shape})", dy.shape)
    return [ShapedType(src.shape, dy.dataType)], (a.mode, a.left, a.right, tuple(src.shape))


def _grad_padGradient(g, op, dys):
    a = op.attrs
    mode = PaddingMode.zero if a.mode in _PAD_FILLS else a.mode  # (the linear part)
    return {"incomingGradientTensor": g.padTensor(dys[0], mode, list(a.left), list(a.right))}


# ---------------------------------------------------------------------------- tile
def _check_multiplier(ctx: InferContext, arg: str, shape: list[int], m: tuple[int, ...]):
    if len(m) != len(shape):
        raise ctx.error(ShapeError, "withMultiplier", f"{len(shape)} entries (one per dimension "
                        f"of {arg} {shape})", list(m))
    if any(k < 0 for k in m):
        raise ctx.error(ShapeError, "withMultiplier", "multipliers >= 0", list(m))
    return [n * k if n >= 0 else -1 for n, k in zip(shape, m)]


def _infer_tileTensor(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [t], None
    out = _check_multiplier(ctx, "tensor", t.shape, ctx.attrs)
    return [ShapedType(out, t.dataType)], ctx.attrs


def _infer_tileGradient(ctx: InferContext):
    dy = ctx.type_of("incomingGradientTensor")
    src = ctx.type_of("sourceTensor")
    if dy.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "incomingGradientTensor", "float32, float16 or bFloat16",
                        dy.dataType)
    if src.shape is None:
        return [ShapedType(None, dy.dataType)], None
    tiled = _check_multiplier(ctx, "sourceTensor", src.shape, ctx.attrs)
    if dy.shape is not None and (len(dy.shape) != len(tiled) or any(
            p >= 0 and q >= 0 and p != q for p, q in zip(dy.shape, tiled))):
        raise ctx.error(ShapeError, "incomingGradientTensor", f"shape {tiled} (the tiled shape "
                        f"of sourceTensor {src.shape})", dy.shape)
    return [ShapedType(src.shape, dy.dataType)], (ctx.attrs, tuple(src.shape))


# ---------------------------------------------------------------------------- split, stack
@dataclass(frozen=True)
class _SplitAttrs:
    axis: int
    sizes: tuple[int, ...] | None = None
    num: int | None = None


def _split_sizes(ctx: InferContext, shape: list[int]) -> tuple[int, list[int]]:
    a = ctx.attrs
    d = normalize_axis(ctx, "tensor", a.axis, len(shape))
    n = shape[d]
    if a.num is not None:
        if n >= 0 and n % a.num:
            raise ctx.error(ShapeError, "numSplits", f"a divisor of {n} (the size of dimension "
                            f"{d} of tensor {shape})", a.num)
        return d, [n // a.num if n >= 0 else -1] * a.num
    if n >= 0 and sum(a.sizes) != n:
        raise ctx.error(ShapeError, "splitSizes", f"sizes summing to {n} (the size of dimension "
                        f"{d} of tensor {shape})", list(a.sizes))
    return d, list(a.sizes)


def _infer_split(ctx: InferContext):
    t = ctx.type_of("tensor")
    a = ctx.attrs
    if t.shape is None:
        k = a.num if a.num is not None else len(a.sizes)
        return [ShapedType(None, t.dataType)] * k, None
    if not t.shape:
        raise ctx.error(ShapeError, "tensor", "a tensor of rank >= 1", "rank 0")
    d, sizes = _split_sizes(ctx, t.shape)
    outs = [ShapedType(t.shape[:d] + [k] + t.shape[d + 1:], t.dataType) for k in sizes]
    return outs, (d, tuple(int(v) for v in np.cumsum(sizes)[:-1]) if sizes else (), tuple(sizes))


def _grad_split(g, op, dys):
    x = op.input("tensor")
    parts = []
    for y, dy in zip(op.outputTensors, dys):
        if dy is None:
            if not _static(y.shape):
                raise UnsupportedError(f"split: gradient needs static shapes, given {y.shape}")
            dy = g.constant(np.zeros(y.shape, y.dataType.numpy_dtype))
        parts.append(dy)
    return {"tensor": g.concatTensors(parts, op.attrs.axis % len(x.shape))}


def _infer_stack(ctx: InferContext):
    names, types = ctx.input_names, ctx.in_types
    dt = types[0].dataType
    for n, t in zip(names, types):
        if t.dataType != dt:
            raise ctx.error(DataTypeError, n, f"{dt!r} (the dataType of {names[0]})", t.dataType)
    if any(t.shape is None for t in types):
        return [ShapedType(None, dt)], None
    full: list[int] | None = []
    for n, t in zip(names, types):
        full = broadcast_pair(full, t.shape)
        if full is None:
            raise ctx.error(ShapeError, n, f"shapes that broadcast together (shapes "
                            f"{[t.shape for t in types]})", t.shape)
    r = len(full) + 1
    d = normalize_axis(ctx, names[0], ctx.attrs, r, "axis")
    out = full[:d] + [len(types)] + full[d:]
    return [ShapedType(out, dt)], ((d, tuple(full)) if _static(full) else None)


def _grad_stack(g, op, dys):
    d = op.attrs % len(dys[0].shape)
    out = {}
    for i, (n, x) in enumerate(zip(op.input_names, op.inputs)):
        piece = g.squeeze(g.sliceTensor(dys[0], dimension=d, start=i, length=1), axis=d)
        out[n] = sum_to_shape(g, piece, x)
    return out


# ---------------------------------------------------------------------------- reverse, flatten2D
def _infer_reverse(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [t], None
    r = len(t.shape)
    axes = _now(ctx, ctx.attrs)
    if isinstance(axes, _Fed):  # a fed axesTensor: checked when its value comes
        return [t], None
    if axes is None:
        return [t], tuple(range(r))
    norm = [normalize_axis(ctx, "tensor", a, r, "axes") for a in axes]
    if len(set(norm)) != len(norm):
        raise ctx.error(ShapeError, "axes", "distinct axes", list(axes))
    return [t], tuple(sorted(norm))


def _infer_flatten2D(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None:
        return [ShapedType([-1, -1], t.dataType)], None
    r = len(t.shape)
    a = _now(ctx, ctx.attrs)
    if isinstance(a, _Fed):
        return [ShapedType([-1, -1], t.dataType)], None
    if not -r <= a <= r:
        raise ctx.error(ShapeError, "axis", f"an axis in [-{r}, {r}] (the rank of tensor "
                        f"{t.shape})", a)
    a = a + r if a < 0 else a
    head, tail = t.shape[:a], t.shape[a:]
    out = [math.prod(p) if _static(p) else -1 for p in (head, tail)]
    return [ShapedType(out, t.dataType)], (tuple(out) if _static(out) else None)


# ---------------------------------------------------------------------------- space <-> batch
@dataclass(frozen=True)
class _BlockAttrs:
    """spaceToBatch / batchToSpace (and the 2-D depth forms): `spatial` axes in block order
    (the last runs fastest), the `batch` (depth) axis, the block size along each spatial axis,
    and the argument labels for errors."""

    spatial: tuple[int, ...]
    batch: int
    block: tuple[int, ...]
    pixelShuffle: bool
    labels: tuple[tuple[str, ...], str, str] = (("spatialAxes",), "batchAxis",
                                                "blockDimensions")


_TO_BATCH = {"spaceToBatch": True, "spaceToDepth2D": True, "batchToSpace": False,
             "depthToSpace2D": False}
_INVERSE = {"spaceToBatch": "batchToSpace", "batchToSpace": "spaceToBatch",
            "spaceToDepth2D": "depthToSpace2D", "depthToSpace2D": "spaceToDepth2D"}


def _infer_blocks(ctx: InferContext):
    t = ctx.type_of("tensor")
    a = ctx.attrs
    sp_labels, b_label, blk_label = a.labels
    if len(a.block) != len(a.spatial):
        raise ctx.error(ShapeError, blk_label, f"{len(a.spatial)} entries (one per spatial axis)",
                        list(a.block))
    if any(k < 1 for k in a.block):
        raise ctx.error(ShapeError, blk_label, "block sizes >= 1", list(a.block)
                        if len(a.block) > 1 else a.block[0])
    if t.shape is None:
        return [t], None
    r, shape = len(t.shape), list(t.shape)
    labs = sp_labels * len(a.spatial) if len(sp_labels) == 1 else sp_labels
    sp = [normalize_axis(ctx, "tensor", s, r, lab) for s, lab in zip(a.spatial, labs)]
    b = normalize_axis(ctx, "tensor", a.batch, r, b_label)
    if len(set(sp)) != len(sp):
        raise ctx.error(ShapeError, labs[-1], "distinct spatial axes", list(a.spatial))
    if b in sp:
        raise ctx.error(ShapeError, b_label, f"an axis other than the spatial axes {sp}", a.batch)
    P = math.prod(a.block)
    out = list(shape)
    to_batch = _TO_BATCH[ctx.kind]
    if to_batch:
        for ax, k, lab in zip(sp, a.block, labs):
            if shape[ax] >= 0 and shape[ax] % k:
                raise ctx.error(ShapeError, lab, f"an axis whose size is divisible by the block "
                                f"size {k} (tensor shape {shape})", ax)
            out[ax] = shape[ax] // k if shape[ax] >= 0 else -1
        out[b] = shape[b] * P if shape[b] >= 0 else -1
    else:
        if shape[b] >= 0 and shape[b] % P:
            raise ctx.error(ShapeError, b_label, f"an axis whose size is divisible by {P} (the "
                            f"block's element count; tensor shape {shape})", a.batch)
        out[b] = shape[b] // P if shape[b] >= 0 else -1
        for ax, k in zip(sp, a.block):
            out[ax] = shape[ax] * k if shape[ax] >= 0 else -1
    if not _static(shape):
        return [ShapedType(out, t.dataType)], None
    # the data as sub-axes: ("o", i) the block grid of spatial axis i, ("k", j) the offset in
    # block j, ("a", i) a whole other axis; the batch axis is ("a", b) plus the offsets
    ks = [("k", j) for j in range(len(sp))]
    bsub = [("a", b)] + ks if a.pixelShuffle else ks + [("a", b)]
    space = {ax: [("o", ax), ("k", j)] for j, ax in enumerate(sp)}
    sizes = {("k", j): k for j, k in enumerate(a.block)}
    small = out if to_batch else shape  # the grid sizes live in the space-to-batch result
    for i in range(r):
        sizes[("o", i)] = small[i]
        sizes[("a", i)] = small[i] if i != b else (shape[b] if to_batch else out[b])
    spaced = [s for i in range(r) for s in (space[i] if i in space else [("a", i)])]
    batched = [s for i in range(r) for s in (bsub if i == b else [("o", i)] if i in space
                                             else [("a", i)])]
    src, dst = (spaced, batched) if to_batch else (batched, spaced)
    perm = tuple(src.index(s) for s in dst)
    return [ShapedType(out, t.dataType)], (tuple(sizes[s] for s in src), perm, tuple(out))


def _grad_blocks(g, op, dys):
    return {"tensor": g._add(_INVERSE[op.kind], [("tensor", dys[0])], op.attrs)[0]}


# ---------------------------------------------------------------------------- coordinate
@dataclass(frozen=True)
class _CoordAttrs:
    axis: int
    shape: tuple[int, ...]


def _infer_coordinate(ctx: InferContext):
    a = _CoordAttrs(_now(ctx, ctx.attrs.axis), _now(ctx, ctx.attrs.shape))
    if isinstance(a.shape, _Fed):  # a fed withShapeTensor: its length is the rank
        n = ctx.type_of("withShapeTensor").shape
        return [ShapedType([-1] * n[0] if n and n[0] >= 0 else None, DataType.int32)], None
    if any(s < 0 for s in a.shape):
        raise ctx.error(ShapeError, "withShape", "sizes >= 0", list(a.shape))
    r = len(a.shape)
    if r == 0:
        raise ctx.error(ShapeError, "withShape", "a shape of rank >= 1 (the result has an axis "
                        "to count along)", list(a.shape))
    if isinstance(a.axis, _Fed):
        return [ShapedType(list(a.shape), DataType.int32)], None
    d = normalize_axis(ctx, "withShape", a.axis, r, "alongAxis")
    return [ShapedType(list(a.shape), DataType.int32)], (d, a.shape)


# ---------------------------------------------------------------------------- reinterpretCast
def _infer_reinterpretCast(ctx: InferContext):
    t = ctx.type_of("tensor")
    to = ctx.attrs
    # sub-byte types pack 2 or 4 values per byte on Apple GPUs but take one byte each here:
    # their bits cannot be reinterpreted faithfully (docs/semantics.md, "Sub-byte integer types")
    for arg, dt in (("to", to), ("tensor", t.dataType)):
        if dt in SUB_BYTE:
            raise ctx.error(DataTypeError, arg, "a type of one byte or more (sub-byte types are "
                            "not reinterpreted: cast them)", dt)
    a, b = t.dataType.numpy_dtype.itemsize, to.numpy_dtype.itemsize
    if t.shape is None or a == b:
        return [ShapedType(t.shape, to)], (to.numpy_dtype, tuple(t.shape) if _static(t.shape)
                                           else None)
    if not t.shape:
        raise ctx.error(ShapeError, "tensor", f"a tensor of rank >= 1 (its last dimension is "
                        f"scaled by {a}/{b} bytes)", "rank 0")
    n = t.shape[-1]
    if n >= 0 and (n * a) % b:
        raise ctx.error(ShapeError, "tensor", f"a last dimension of a multiple of {b} bytes "
                        f"({to!r} elements; {t.dataType!r} is {a} bytes)", f"shape {t.shape}")
    out = t.shape[:-1] + [n * a // b if n >= 0 else -1]
    return [ShapedType(out, to)], (to.numpy_dtype, tuple(out) if _static(out) else None)


# ---------------------------------------------------------------------------- sliceUpdate
def _infer_sliceUpdate(ctx: InferContext):
    t = ctx.type_of("dataTensor")
    u = ctx.type_of("updateTensor")
    if u.dataType != t.dataType:
        raise ctx.error(DataTypeError, "updateTensor", f"{t.dataType!r} (the dataType of "
                        "dataTensor)", u.dataType)
    if t.shape is None:
        return [t], None
    out, sl = _slices(ctx, "dataTensor", ctx.attrs, t.shape)
    if u.shape is not None:
        res = broadcast_pair(out, u.shape)
        if res is None or len(u.shape) > len(out) or any(
                x >= 0 and y >= 0 and x != y for x, y in zip(res, out)):
            raise ctx.error(ShapeError, "updateTensor", f"a shape that broadcasts to {out} (the "
                            f"slice of dataTensor {t.shape})", u.shape)
    return [t], ((sl, tuple(out)) if sl is not None else None)


def _grad_sliceUpdate(g, op, dys):
    dy = dys[0]
    a = op.attrs
    kw = _tf_slice_args(a, 0, op)
    zero = g.constant(np.zeros((), dy.dataType.numpy_dtype))
    upd = {dict(zip(_SLICE_INPUTS, _UPDATE_INPUTS)).get(k, k): v for k, v in kw.items()}
    return {"dataTensor": g.sliceUpdateDataTensor(dy, zero, **upd),
            "updateTensor": sum_to_shape(g, g.sliceTensor(dy, **kw), op.input("updateTensor"))}


def _grad_tile(g, op, dys):
    return {"tensor": g.tileGradient(dys[0], sourceTensor=op.input("tensor"),
                                     withMultiplier=list(op.attrs))}


def _grad_tileGradient(g, op, dys):
    return {"incomingGradientTensor": g.tileTensor(dys[0], list(op.attrs))}


register_op("padTensor", _infer_padTensor, _grad_padTensor)
register_op("padGradient", _infer_padGradient, _grad_padGradient)
register_op("tileTensor", _infer_tileTensor, _grad_tile)
register_op("tileGradient", _infer_tileGradient, _grad_tileGradient)
register_op("split", _infer_split, _grad_split)
register_op("stack", _infer_stack, _grad_stack)
register_op("reverse", _infer_reverse,
            lambda g, op, dys: {"tensor": g.reverse(dys[0], axes=op.attrs) if not isinstance(
                op.attrs, _Fed) else g.reverse(dys[0], axesTensor=op.input("axesTensor"))},
            value_inputs=("axesTensor",))
register_op("flatten2D", _infer_flatten2D, _grad_reshape_like, value_inputs=("axisTensor",))
for _kind in _TO_BATCH:
    register_op(_kind, _infer_blocks, _grad_blocks)
register_op("coordinate", _infer_coordinate, value_inputs=("alongAxisTensor", "withShapeTensor"))
register_op("reinterpretCast", _infer_reinterpretCast)
register_op("sliceUpdateDataTensor", _infer_sliceUpdate, _grad_sliceUpdate,
            value_inputs=_UPDATE_INPUTS)


# ---------------------------------------------------------------------------- builders
def _pad_mode(op: str, name: str | None, label: str, mode: Any) -> PaddingMode:
    try:
        if isinstance(mode, (bool, np.bool_)) or not isinstance(mode, (int, np.integer)):
            raise ValueError
        return PaddingMode(mode)
    except ValueError:
        raise op_error(GraphError, op, label, "a PaddingMode", mode, name) from None


def _float(op: str, name: str | None, label: str, v: Any) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                            np.floating)):
        raise op_error(GraphError, op, label, "a number", v, name)
    return float(v)


def _bool(op: str, name: str | None, label: str, v: Any) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise op_error(GraphError, op, label, "a bool", v, name)
    return bool(v)


def _pick(op: str, name: str | None, label: str, value: Any, tensor_label: str,
          tensor: Any) -> Any:
    """An argument given by its value label or by its Swift tensor label (not both)."""
    if tensor is not None:
        if value is not None:
            raise op_error(GraphError, op, tensor_label, f"only one of {label} and "
                           f"{tensor_label}", "both", name)
        return tensor
    return value


def _mask(op: str, name: str | None, label: str, value: Any) -> int:
    m = check_int(op, name, label, value)
    if not 0 <= m < 2**32:
        raise op_error(GraphError, op, label, "a uint32 bit mask", m, name)
    return m


def _tensor_ints(g: Graph, op: str, name: str | None, label: str, t: Tensor,
                 scalar: bool = False):
    """The value of a Tensor argument needed when the graph is built (axes, sizes, starts):
    a constant's, or shapeOf(y) of a statically shaped y; int32 / int64."""
    from ..graph import _known_value

    g._check_tensor(op, name, label, t)
    if t.dataType not in _SHAPE_DTYPES:
        raise op_error(DataTypeError, op, label, "an int32 or int64 tensor", t.dataType, name)
    v = _known_value(t)
    if v is None and t.operation.kind == "shapeOf" and _static(t.operation.inputs[0].shape):
        v = np.array(t.operation.inputs[0].shape, np.int64)
    if v is None:
        raise op_error(UnsupportedError, op, label, "a constant tensor (its value is needed "
                       "when the graph is built)", f"a tensor made by {t.operation.kind}", name)
    v = np.asarray(v)
    if scalar:
        if v.size != 1 or v.ndim > 1:
            raise op_error(ShapeError, op, label, "a scalar tensor", f"shape {list(v.shape)}",
                           name)
        return int(v.reshape(-1)[0])
    if v.ndim != 1:
        raise op_error(ShapeError, op, label, "a 1-D tensor", f"shape {list(v.shape)}", name)
    return tuple(int(a) for a in v)


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
                    start: int | Sequence[int] | Tensor | None = None,
                    length: int | None = None, starts: Sequence[int] | Tensor | None = None,
                    ends: Sequence[int] | Tensor | None = None,
                    strides: Sequence[int] | Tensor | None = None, startMask: int = 0,
                    endMask: int = 0, squeezeMask: int = 0,
                    end: Sequence[int] | Tensor | None = None,
                    strideTensor: Sequence[int] | Tensor | None = None,
                    sizeTensor: Sequence[int] | Tensor | None = None,
                    name: str | None = None) -> Tensor:
        """The Swift overloads of sliceTensor:

        - `sliceTensor(x, dimension=d, start=s, length=n)`: elements s .. s+n-1 of dimension d
          (s < 0 counts from the end); the result has size n there.
        - `sliceTensor(x, starts=, ends=, strides=[, startMask=, endMask=, squeezeMask=])`:
          TensorFlow's strided_slice, one entry per dimension (ends exclusive, negatives count
          from the end, clamped, strides != 0). Bit i of `startMask` / `endMask` ignores
          starts[i] / ends[i] (the slice runs from the first / to the last element in the
          stride's direction); bit i of `squeezeMask` keeps the one element starts[i] (0 under
          startMask) and removes axis i from the result.
        - `sliceTensor(x, start=, end=, strideTensor=, startMask=, endMask=, squeezeMask=)`
          (macOS 15.2): the same with 1-D int32/int64 tensors (or lists).
        - `sliceTensor(x, start=, sizeTensor=, squeezeMask=)`: starts and sizes per dimension
          (a size of -1: to the end); strides 1.

        start / end / strideTensor given as tensors may be fed or computed: the result's sizes
        are then -1 until the graph runs (the shape rule reads their values then); the sizes
        of the sizeTensor form must be constants."""
        op = "sliceTensor"
        if dimension is not None:
            extra = {k: v for k, v in (("starts", starts), ("ends", ends), ("strides", strides),
                                       ("end", end), ("strideTensor", strideTensor),
                                       ("sizeTensor", sizeTensor)) if v is not None}
            if start is None or length is None or extra or startMask or endMask or squeezeMask:
                raise op_error(GraphError, op, "dimension", "either dimension, start and "
                               "length, or starts, ends and strides (with masks)",
                               {"dimension": dimension, "start": start, "length": length,
                                **extra}, name)
            length = check_int(op, name, "length", length)
            if length < 0:
                raise op_error(ShapeError, op, "length", "a length >= 0", length, name)
            attrs = SliceAttrs(check_int(op, name, "dimension", dimension),
                               check_int(op, name, "start", start), length)
        else:
            if length is not None:
                raise op_error(GraphError, op, "dimension", "either dimension, start and "
                               "length, or starts, ends and strides (with masks)",
                               {"length": length}, name)
            fed: dict[str, Tensor] = {}
            attrs = self._strided_args(op, name, starts, ends, strides, startMask, endMask,
                                       squeezeMask, start, end, strideTensor, sizeTensor,
                                       fed=fed)
            return self._add(op, [("tensor", tensor)] + [(k, fed.get(k)) for k in _SLICE_INPUTS],
                             attrs, name, optional=_SLICE_INPUTS)[0]
        return self._add(op, [("tensor", tensor)] + [(k, None) for k in _SLICE_INPUTS], attrs,
                         name, optional=_SLICE_INPUTS)[0]

    def _strided_args(self, op, name, starts, ends, strides, startMask, endMask, squeezeMask,
                      start=None, end=None, strideTensor=None, sizeTensor=None,
                      labels=("starts", "ends", "strides"), fed=None,
                      inputs=_SLICE_INPUTS) -> SliceAttrs:
        """SliceAttrs of the strided forms (lists or tensors; start/size form too). Errors
        name the label the caller used. With a dict `fed`, starts / ends / strides may be
        tensors known only at run time: they go into fed[inputs[i]] (`_Fed` in the attrs)."""
        ls = "start" if start is not None else labels[0]
        le = "end" if end is not None else labels[1]
        lt = "strideTensor" if strideTensor is not None else labels[2]
        starts = _pick(op, name, "starts", starts, "start", start)
        ends = _pick(op, name, "ends", ends, "end", end)
        strides = _pick(op, name, "strides", strides, "strideTensor", strideTensor)
        masks = [_mask(op, name, lab, m) for lab, m in (("startMask", startMask),
                                                         ("endMask", endMask),
                                                         ("squeezeMask", squeezeMask))]
        if sizeTensor is not None:
            if ends is not None or strides is not None or masks[0] or masks[1]:
                raise op_error(GraphError, op, "sizeTensor", "start and sizeTensor alone (with "
                               "squeezeMask)", "ends, strides or masks as well", name)
            if starts is None:
                raise op_error(GraphError, op, "start", "the starts of the sizeTensor form",
                               None, name)
            b = self._ints(op, name, ls, starts)
            n = self._ints(op, name, "sizeTensor", sizeTensor)
            if len(n) != len(b):
                raise op_error(ShapeError, op, "sizeTensor", f"{len(b)} entries (one per start)",
                               list(n), name)
            if any(k < -1 for k in n):
                raise op_error(ShapeError, op, "sizeTensor", "sizes >= 0 (or -1: to the end)",
                               list(n), name)
            e = tuple(_BIG if (k == -1 or (s < 0 <= s + k)) else s + k for s, k in zip(b, n))
            end_mask = sum(1 << i for i, k in enumerate(n) if k == -1)
            return SliceAttrs(starts=b, ends=e, strides=(1,) * len(b), endMask=end_mask,
                              squeezeMask=masks[2])
        if starts is None or ends is None or strides is None:
            raise op_error(GraphError, op, "starts", "starts, ends and strides (or dimension, "
                           "start and length)", {"starts": starts, "ends": ends,
                                                 "strides": strides}, name)
        fed_ok = {} if fed is None else None
        vals = []
        for label, v, key in ((ls, starts, inputs[0]), (le, ends, inputs[1]),
                              (lt, strides, inputs[2])):
            got = self._arg(op, name, label, v, key, None, fed=fed_ok if fed is None else fed)
            if isinstance(got, _Fed) and fed is None:
                raise op_error(UnsupportedError, op, label, "a constant tensor (its value is "
                               "needed when the graph is built)", "a fed or computed tensor",
                               name)
            vals.append(got if isinstance(got, _Fed) else tuple(got))
        if isinstance(vals[2], tuple) and 0 in vals[2]:
            raise op_error(ShapeError, op, lt, "strides != 0", list(vals[2]), name)
        return SliceAttrs(starts=vals[0], ends=vals[1], strides=vals[2],
                          startMask=masks[0], endMask=masks[1], squeezeMask=masks[2])

    def _arg(self, op, name, label, value, tensor_label, tensor, scalar=False, fed=None):
        """An int argument (or list) given by `label` or by its Swift tensor label (a constant
        Tensor); None when neither is given. Errors name the label used. With a dict `fed`,
        a non-constant int tensor is accepted: it goes into fed[tensor_label] (an input of
        the op) and the result is a `_Fed` read when the graph runs."""
        from ..graph import Tensor, _known_value

        v = _pick(op, name, label, value, tensor_label, tensor)
        if v is None:
            return None
        used = tensor_label if tensor is not None else label
        if fed is not None and isinstance(v, Tensor) and _known_value(v) is None and not (
                v.operation.kind == "shapeOf" and _static(v.operation.inputs[0].shape)):
            self._check_tensor(op, name, used, v)
            if v.dataType not in _SHAPE_DTYPES:
                raise op_error(DataTypeError, op, used, "an int32 or int64 tensor", v.dataType,
                               name)
            ok = v.shape is None or (len(v.shape) <= 1 and (not v.shape or v.shape[0] in (1, -1))
                                     if scalar else len(v.shape) == 1)
            if not ok:
                raise op_error(ShapeError, op, used, "a scalar tensor" if scalar else
                               "a 1-D tensor", f"shape {v.shape}", name)
            fed[tensor_label] = v
            return _Fed(tensor_label, scalar)
        return self._ints(op, name, used, v, scalar)

    def _ints(self, op, name, label, value, scalar=False):
        """An int (scalar) or a list of ints given as such or as a constant Tensor."""
        from ..graph import Tensor

        if isinstance(value, Tensor):
            return _tensor_ints(self, op, name, label, value, scalar)
        if scalar:
            return check_int(op, name, label, value)
        return _int_list(op, name, label, value)

    def sliceGradientTensor(self, inputGradientTensor: Tensor,
                            fwdInShapeTensor: Sequence[int] | Tensor,
                            starts: Sequence[int] | Tensor | None = None,
                            ends: Sequence[int] | Tensor | None = None,
                            strides: Sequence[int] | Tensor | None = None, *,
                            startMask: int = 0, endMask: int = 0, squeezeMask: int = 0,
                            start: Sequence[int] | Tensor | None = None,
                            end: Sequence[int] | Tensor | None = None,
                            strideTensor: Sequence[int] | Tensor | None = None,
                            sizeTensor: Sequence[int] | Tensor | None = None,
                            name: str | None = None) -> Tensor:
        """The gradient of a strided slice (every strided form of `sliceTensor`, masks
        included): zeros of the forward input's shape (`fwdInShapeTensor`: a 1-D int32/int64
        tensor or a list) with `inputGradientTensor` (the slice's shape) written at the sliced
        positions."""
        op = "sliceGradientTensor"
        shape_attrs, t = _split_shape(op, name, fwdInShapeTensor, None, "fwdInShapeTensor",
                                      "fwdInShapeTensor")
        fed: dict[str, Tensor] = {}
        sl = self._strided_args(op, name, starts, ends, strides, startMask, endMask,
                                squeezeMask, start, end, strideTensor, sizeTensor, fed=fed)
        return self._add(op, [("inputGradientTensor", inputGradientTensor),
                              ("fwdInShapeTensor", t)] + [(k, fed.get(k)) for k in _SLICE_INPUTS],
                         _SliceGradAttrs(shape_attrs, sl), name,
                         optional=("fwdInShapeTensor",) + _SLICE_INPUTS)[0]

    def concatTensors(self, tensors: Sequence[Tensor], dimension: int, *,
                      interleave: bool = False, name: str | None = None) -> Tensor:
        """Concatenate along `dimension` (negative counts from the end). Same rank and dataType;
        the other dimensions broadcast. [..., n_i, ...] -> [..., sum n_i, ...].

        `interleave=True` (Swift `concatTensors(_:dimension:interleave:name:)`): every
        dimension broadcasts (`dimension` too) to [..., n, ...] and the result [..., k * n, ...]
        takes element j of each input in turn: [a0, b0, a1, b1, ...]."""
        op = "concatTensors"
        if isinstance(tensors, (str, bytes)) or not hasattr(tensors, "__iter__"):
            raise op_error(GraphError, op, "tensors", "a list of Tensors", type(tensors).__name__,
                           name)
        tensors = list(tensors)
        if not tensors:
            raise op_error(GraphError, op, "tensors", "at least one tensor", "an empty list",
                           name)
        d = check_int(op, name, "dimension", dimension)
        if not isinstance(interleave, (bool, np.bool_)):
            raise op_error(GraphError, op, "interleave", "a bool", interleave, name)
        return self._add(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)],
                         _ConcatAttrs(d, bool(interleave)), name)[0]

    def concatTensor(self, tensor: Tensor, withTensor: Tensor, dimension: int, *,
                     name: str | None = None) -> Tensor:
        """Swift `concatTensor(_:with:dimension:)` (Objective-C label `withTensor`): two tensors
        concatenated along `dimension`, as concatTensors."""
        d = check_int("concatTensors", name, "dimension", dimension)
        return self._add("concatTensors", [("tensor", tensor), ("withTensor", withTensor)],
                         _ConcatAttrs(d), name)[0]

    def cast(self, tensor: Tensor, to: DataType, *, name: str | None = None) -> Tensor:
        """The values converted to dataType `to` (same shape). float -> int truncates toward
        zero and saturates (NaN -> 0); -> bool is x != 0; see the module notes."""
        return self._add("cast", [("tensor", tensor)], _data_type("cast", name, to), name)[0]

    def expandDims(self, tensor: Tensor, *, axis: int | None = None,
                   axes: Sequence[int] | Tensor | None = None,
                   axesTensor: Tensor | None = None, name: str | None = None) -> Tensor:
        """Insert size-1 dimensions at `axis` / `axes` (positions in the result, negative
        from its end); `axesTensor=` (or `axes=` a Tensor): a constant 1-D int tensor."""
        axes = self._arg("expandDims", name, "axes", axes, "axesTensor", axesTensor)
        attrs = _axes_args("expandDims", name, axis, axes)
        if attrs.axes is None:
            raise op_error(GraphError, "expandDims", "axis", "an axis or a list of axes", None,
                           name)
        return self._add("expandDims", [("tensor", tensor)], attrs, name)[0]

    def squeeze(self, tensor: Tensor, *, axis: int | None = None,
                axes: Sequence[int] | Tensor | None = None, axesTensor: Tensor | None = None,
                name: str | None = None) -> Tensor:
        """Remove size-1 dimensions: the given `axis` / `axes` / `axesTensor` (a constant 1-D
        int tensor; each axis must have size 1), or every size-1 dimension when none is given
        (Swift `squeeze(_:name:)`)."""
        axes = self._arg("squeeze", name, "axes", axes, "axesTensor", axesTensor)
        attrs = _axes_args("squeeze", name, axis, axes)
        return self._add("squeeze", [("tensor", tensor)], attrs, name)[0]

    def identity(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """The same values (a new tensor of the graph)."""
        return self._add("identity", [("tensor", tensor)], None, name)[0]

    def shapeOf(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """The shape of `tensor` as a 1-D int32 tensor [rank] (known at run time)."""
        return self._add("shapeOf", [("tensor", tensor)], None, name)[0]

    # ------------------------------------------------------------------ pad, tile
    def padTensor(self, tensor: Tensor, withPaddingMode: PaddingMode | None = None,
                  leftPadding: Sequence[int] | None = None,
                  rightPadding: Sequence[int] | None = None, constantValue: float = 0.0, *,
                  name: str | None = None, paddingMode: PaddingMode | None = None) -> Tensor:
        """Swift `padTensor(_:with:leftPadding:rightPadding:constantValue:name:)` (`with` is a
        Python keyword: the Objective-C label `withPaddingMode`). [d_i] -> [l_i + d_i + r_i];
        one padding per dimension on each side (>= 0). Modes (`PaddingMode`), at a position i
        outside [0, n) of an axis of size n:

        - constant: `constantValue` (in the tensor's dataType); zero: 0;
        - clampToEdge: x[clamp(i, 0, n - 1)];
        - reflect: the mirror across the edge element, x[-1] = x[1] (padding <= n - 1);
        - symmetric: the mirror repeating the edge, x[-1] = x[0] (padding <= n);
        - periodic: Apple's `x[-2] -> x[L-3]`: period n - 1, x[i] = x[i mod (n - 1)];
        - antiPeriodic: `x[-2] -> -x[L-3]`: x[q (n - 1) + m] = (-1)^q x[m] (signed types).

        Any dataType (antiPeriodic: signed integer or floating). `paddingMode=` (the name of
        Apple's parameter, and padGradient's label) is accepted for `withPaddingMode`."""
        op = "padTensor"
        mode = _pick(op, name, "withPaddingMode", withPaddingMode, "paddingMode", paddingMode)
        for label, v in (("withPaddingMode", mode), ("leftPadding", leftPadding),
                         ("rightPadding", rightPadding)):
            if v is None:
                raise op_error(GraphError, op, label, f"a {label}", None, name)
        attrs = _PadAttrs(_pad_mode(op, name, "withPaddingMode", mode),
                          _int_list(op, name, "leftPadding", leftPadding),
                          _int_list(op, name, "rightPadding", rightPadding),
                          _float(op, name, "constantValue", constantValue))
        return self._add(op, [("tensor", tensor)], attrs, name)[0]

    def padGradient(self, incomingGradientTensor: Tensor, sourceTensor: Tensor,
                    paddingMode: PaddingMode, leftPadding: Sequence[int],
                    rightPadding: Sequence[int], *, name: str | None = None) -> Tensor:
        """dL/dsource of `padTensor(sourceTensor, paddingMode, leftPadding, rightPadding)`
        (Swift `padGradient(withIncomingGradientTensor:...)`): the incoming gradient has the
        padded shape; the result has sourceTensor's shape, each element the sum of the incoming
        gradient over every position the pad read it into (negated where antiPeriodic negated
        it). Float types."""
        op = "padGradient"
        attrs = _PadAttrs(_pad_mode(op, name, "paddingMode", paddingMode),
                          _int_list(op, name, "leftPadding", leftPadding),
                          _int_list(op, name, "rightPadding", rightPadding))
        return self._add(op, [("incomingGradientTensor", incomingGradientTensor),
                              ("sourceTensor", sourceTensor)], attrs, name)[0]

    def tileTensor(self, tensor: Tensor, withMultiplier: Sequence[int], *,
                   name: str | None = None) -> Tensor:
        """`withMultiplier[i]` copies along each dimension i (numpy.tile with one multiplier
        per dimension, each >= 0): [d_i] -> [d_i * m_i]. Any dataType."""
        m = _int_list("tileTensor", name, "withMultiplier", withMultiplier)
        return self._add("tileTensor", [("tensor", tensor)], m, name)[0]

    def tileGradient(self, incomingGradientTensor: Tensor, sourceTensor: Tensor,
                     withMultiplier: Sequence[int], *, name: str | None = None) -> Tensor:
        """dL/dsource of `tileTensor(sourceTensor, withMultiplier)` (Swift
        `tileGradient(withIncomingGradientTensor:sourceTensor:withMultiplier:name:)`): the
        incoming gradient [d_i * m_i] summed over the copies -> [d_i]. Float types."""
        m = _int_list("tileGradient", name, "withMultiplier", withMultiplier)
        return self._add("tileGradient", [("incomingGradientTensor", incomingGradientTensor),
                                          ("sourceTensor", sourceTensor)], m, name)[0]

    # ------------------------------------------------------------------ split, stack, reverse
    def split(self, tensor: Tensor, splitSizes: Sequence[int] | Tensor | None = None, *,
              numSplits: int | None = None, splitSizesTensor: Tensor | None = None,
              axis: int, name: str | None = None) -> list[Tensor]:
        """Pieces of `tensor` along `axis`: of the given `splitSizes` (summing to the axis's
        size; `splitSizesTensor=`: a constant 1-D int tensor), or `numSplits` equal pieces (the
        size divisible by it). Returns a list of tensors, in order; views of the data."""
        op = "split"
        sizes = self._arg(op, name, "splitSizes", splitSizes, "splitSizesTensor",
                          splitSizesTensor)
        ax = check_int(op, name, "axis", axis)
        if (sizes is None) == (numSplits is None):
            raise op_error(GraphError, op, "splitSizes", "exactly one of splitSizes and "
                           "numSplits", "both" if sizes is not None else "neither", name)
        if numSplits is not None:
            k = check_int(op, name, "numSplits", numSplits)
            if k < 1:
                raise op_error(ShapeError, op, "numSplits", "numSplits >= 1", k, name)
            attrs = _SplitAttrs(ax, num=k)
        else:
            sz = sizes
            if not sz or any(v < 0 for v in sz):
                raise op_error(ShapeError, op, "splitSizes", "one or more sizes >= 0", list(sz),
                               name)
            attrs = _SplitAttrs(ax, sizes=sz)
        return list(self._add(op, [("tensor", tensor)], attrs, name))

    def stack(self, tensors: Sequence[Tensor], axis: int, *, name: str | None = None
              ) -> Tensor:
        """The tensors (same dataType, shapes broadcast together, NumPy rules) stacked along a
        new dimension `axis` of the result (in [-(r + 1), r], r the broadcast rank):
        k x [s] -> [s[:axis], k, s[axis:]]."""
        op = "stack"
        if isinstance(tensors, (str, bytes)) or not hasattr(tensors, "__iter__"):
            raise op_error(GraphError, op, "tensors", "a list of Tensors", type(tensors).__name__,
                           name)
        tensors = list(tensors)
        if not tensors:
            raise op_error(GraphError, op, "tensors", "at least one tensor", "an empty list",
                           name)
        ax = check_int(op, name, "axis", axis)
        return self._add(op, [(f"tensors[{i}]", t) for i, t in enumerate(tensors)], ax, name)[0]

    def reverse(self, tensor: Tensor, axes: Sequence[int] | Tensor | None = None, *,
                axesTensor: Tensor | None = None, name: str | None = None) -> Tensor:
        """The elements in reverse order along `axes` (distinct, negative from the end;
        `axesTensor=`: a constant 1-D int tensor), or along every axis when none are given
        (Swift `reverse(_:name:)`). Same shape; TensorFlow's reverse."""
        fed: dict[str, Tensor] = {}
        axes = self._arg("reverse", name, "axes", axes, "axesTensor", axesTensor, fed=fed)
        return self._add("reverse", [("tensor", tensor), ("axesTensor", fed.get("axesTensor"))],
                         axes, name, optional=("axesTensor",))[0]

    def flatten2D(self, tensor: Tensor, axis: int | Tensor | None = None, *,
                  axisTensor: Tensor | None = None, name: str | None = None) -> Tensor:
        """The rank-2 tensor [prod(shape[:axis]), prod(shape[axis:])] (axis in [-r, r],
        negative from the end; `axisTensor=`: a constant scalar int tensor)."""
        fed: dict[str, Tensor] = {}
        a = self._arg("flatten2D", name, "axis", axis, "axisTensor", axisTensor, scalar=True,
                      fed=fed)
        if a is None:
            raise op_error(GraphError, "flatten2D", "axis", "an axis", None, name)
        return self._add("flatten2D", [("tensor", tensor), ("axisTensor", fed.get("axisTensor"))],
                         a, name, optional=("axisTensor",))[0]

    # ------------------------------------------------------------------ space <-> depth, batch
    def spaceToBatch(self, tensor: Tensor, *, spatialAxes: Sequence[int] | Tensor | None = None,
                     batchAxis: int | Tensor | None = None,
                     blockDimensions: Sequence[int] | Tensor | None = None,
                     usePixelShuffleOrder: bool, spatialAxesTensor: Tensor | None = None,
                     batchAxisTensor: Tensor | None = None,
                     blockDimensionsTensor: Tensor | None = None,
                     name: str | None = None) -> Tensor:
        """Blocks of blockDimensions[j] elements along each spatialAxes[j] move into
        `batchAxis`: the spatial sizes divide by their block size, the batch axis multiplies by
        the block's element count P. Within a block, offsets run row-major over the spatial
        axes in the order given (the last fastest). usePixelShuffleOrder=True: batch index
        c * P + offset (a block's values contiguous); False: offset * C + c (interleaved with
        the existing values; TensorFlow's space_to_batch without padding). The tensor forms
        (`spatialAxesTensor=`, ...) take constant int tensors."""
        return self._blocks("spaceToBatch", tensor, spatialAxes, batchAxis, blockDimensions,
                            usePixelShuffleOrder, spatialAxesTensor, batchAxisTensor,
                            blockDimensionsTensor, name)

    def batchToSpace(self, tensor: Tensor, *, spatialAxes: Sequence[int] | Tensor | None = None,
                     batchAxis: int | Tensor | None = None,
                     blockDimensions: Sequence[int] | Tensor | None = None,
                     usePixelShuffleOrder: bool, spatialAxesTensor: Tensor | None = None,
                     batchAxisTensor: Tensor | None = None,
                     blockDimensionsTensor: Tensor | None = None,
                     name: str | None = None) -> Tensor:
        """The inverse of `spaceToBatch` with the same arguments: the batch axis divides by P,
        each spatial axis multiplies by its block size."""
        return self._blocks("batchToSpace", tensor, spatialAxes, batchAxis, blockDimensions,
                            usePixelShuffleOrder, spatialAxesTensor, batchAxisTensor,
                            blockDimensionsTensor, name)

    def _blocks(self, op, tensor, spatial, batch, block, pixel, spatial_t, batch_t, block_t,
                name):
        spatial = self._arg(op, name, "spatialAxes", spatial, "spatialAxesTensor", spatial_t)
        batch = self._arg(op, name, "batchAxis", batch, "batchAxisTensor", batch_t,
                          scalar=True)
        block = self._arg(op, name, "blockDimensions", block, "blockDimensionsTensor",
                          block_t)
        for label, v in (("spatialAxes", spatial), ("batchAxis", batch),
                         ("blockDimensions", block)):
            if v is None:
                raise op_error(GraphError, op, label, f"{label} (or its tensor form)", None,
                               name)
        attrs = _BlockAttrs(spatial, batch, block, _bool(op, name, "usePixelShuffleOrder",
                                                         pixel))
        return self._add(op, [("tensor", tensor)], attrs, name)[0]

    def space(self, tensor: Tensor, *, widthAxis: int | Tensor | None = None,
              heightAxis: int | Tensor | None = None, depthAxis: int | Tensor | None = None,
              blockSize: int, usePixelShuffleOrder: bool, widthAxisTensor: Tensor | None = None,
              heightAxisTensor: Tensor | None = None, depthAxisTensor: Tensor | None = None,
              name: str | None = None) -> Tensor:
        """Swift `space(toDepth2DTensor:widthAxis:heightAxis:depthAxis:blockSize:
        usePixelShuffleOrder:name:)`, Objective-C `spaceToDepth2D`: blockSize x blockSize
        spatial blocks (heightAxis, widthAxis; width fastest) move into depthAxis: H, W divide
        by b, the depth multiplies by b^2. usePixelShuffleOrder=True: depth index
        c * b^2 + (i * b + j) (PyTorch pixel_unshuffle); False: (i * b + j) * C + c
        (TensorFlow space_to_depth). `spaceToBatch` with spatialAxes [heightAxis, widthAxis]."""
        return self._depth2D("spaceToDepth2D", tensor, widthAxis, heightAxis, depthAxis,
                             blockSize, usePixelShuffleOrder, widthAxisTensor,
                             heightAxisTensor, depthAxisTensor, name)

    def depth(self, tensor: Tensor, *, widthAxis: int | Tensor | None = None,
              heightAxis: int | Tensor | None = None, depthAxis: int | Tensor | None = None,
              blockSize: int, usePixelShuffleOrder: bool, widthAxisTensor: Tensor | None = None,
              heightAxisTensor: Tensor | None = None, depthAxisTensor: Tensor | None = None,
              name: str | None = None) -> Tensor:
        """Swift `depth(toSpace2DTensor:...)`, Objective-C `depthToSpace2D`: the inverse of
        `space` (spaceToDepth2D) with the same arguments (PyTorch pixel_shuffle for
        usePixelShuffleOrder=True, TensorFlow depth_to_space for False)."""
        return self._depth2D("depthToSpace2D", tensor, widthAxis, heightAxis, depthAxis,
                             blockSize, usePixelShuffleOrder, widthAxisTensor,
                             heightAxisTensor, depthAxisTensor, name)

    spaceToDepth2D = space
    depthToSpace2D = depth

    def _depth2D(self, op, tensor, w, h, d, blockSize, pixel, w_t, h_t, d_t, name):
        axes = []
        for label, v, vt in (("widthAxis", w, w_t), ("heightAxis", h, h_t),
                             ("depthAxis", d, d_t)):
            v = self._arg(op, name, label, v, label + "Tensor", vt, scalar=True)
            if v is None:
                raise op_error(GraphError, op, label, f"{label} (or {label}Tensor)", None, name)
            axes.append(v)
        b = check_int(op, name, "blockSize", blockSize)
        attrs = _BlockAttrs((axes[1], axes[0]), axes[2], (b, b),
                            _bool(op, name, "usePixelShuffleOrder", pixel),
                            (("heightAxis", "widthAxis"), "depthAxis", "blockSize"))
        return self._add(op, [("tensor", tensor)], attrs, name)[0]

    # ------------------------------------------------------------------ coordinate, casts
    def coordinate(self, alongAxis: int | Tensor | None = None,
                   withShape: Sequence[int] | Tensor | None = None, *,
                   alongAxisTensor: Tensor | None = None, withShapeTensor: Tensor | None = None,
                   name: str | None = None) -> Tensor:
        """An int32 tensor of shape `withShape` whose element [i_0, ..., i_N] is i_alongAxis
        (negative axes count from the end). The tensor forms take constant int tensors (a
        scalar axis, a 1-D shape)."""
        op = "coordinate"
        fed: dict[str, Tensor] = {}
        axis = self._arg(op, name, "alongAxis", alongAxis, "alongAxisTensor", alongAxisTensor,
                         scalar=True, fed=fed)
        shape = self._arg(op, name, "withShape", withShape, "withShapeTensor", withShapeTensor,
                          fed=fed)
        if axis is None or shape is None:
            raise op_error(GraphError, op, "alongAxis" if axis is None else "withShape",
                           "an axis and a shape", None, name)
        if isinstance(shape, _Fed) and (fed["withShapeTensor"].shape is None
                                        or fed["withShapeTensor"].shape[0] < 0):
            raise op_error(ShapeError, op, "withShapeTensor", "a 1-D tensor of static length "
                           "(the result's rank)", f"shape {fed['withShapeTensor'].shape}", name)
        # the first input is also the kernel's handle on the run's device (the result is made
        # there): the fed axis tensor, or a scalar constant
        anchor = fed.get("alongAxisTensor", None)
        if anchor is None:
            anchor = self.constant(np.zeros((), np.int32))
        return self._add(op, [("alongAxisTensor", anchor),
                              ("withShapeTensor", fed.get("withShapeTensor"))],
                         _CoordAttrs(axis, shape), name, optional=("withShapeTensor",))[0]

    def reinterpretCast(self, tensor: Tensor, to: DataType, *, name: str | None = None
                        ) -> Tensor:
        """The same bytes read as dataType `to` (native byte order); the last dimension is
        scaled by sizeof(tensor's type) / sizeof(to) and must divide exactly (rank >= 1 when
        the sizes differ). A byte read as bool is true unless it is 0."""
        to = _data_type("reinterpretCast", name, to)
        return self._add("reinterpretCast", [("tensor", tensor)], to, name)[0]

    def sliceUpdateDataTensor(self, dataTensor: Tensor, update: Tensor,
                              starts: Sequence[int] | Tensor | None = None,
                              ends: Sequence[int] | Tensor | None = None,
                              strides: Sequence[int] | Tensor | None = None, *,
                              startMask: int = 0, endMask: int = 0, squeezeMask: int = 0,
                              startsTensor: Tensor | None = None,
                              endsTensor: Tensor | None = None,
                              stridesTensor: Tensor | None = None,
                              name: str | None = None) -> Tensor:
        """`dataTensor` with the strided slice (sliceTensor's starts / ends / strides and
        masks; the `...Tensor` forms take int tensors, fed ones read when the graph runs)
        replaced by `update`, which broadcasts to the slice's shape (NumPy rules). Same shape
        and dataType as dataTensor."""
        op = "sliceUpdateDataTensor"
        attrs = self._strided_args(op, name, _pick(op, name, "starts", starts, "startsTensor",
                                                   startsTensor),
                                   _pick(op, name, "ends", ends, "endsTensor", endsTensor),
                                   _pick(op, name, "strides", strides, "stridesTensor",
                                         stridesTensor), startMask, endMask, squeezeMask,
                                   labels=tuple(t if v is not None else t[:-6] for t, v in (
                                       ("startsTensor", startsTensor),
                                       ("endsTensor", endsTensor),
                                       ("stridesTensor", stridesTensor))),
                                   fed=(fed := {}), inputs=_UPDATE_INPUTS)
        return self._add(op, [("dataTensor", dataTensor), ("updateTensor", update)]
                         + [(k, fed.get(k)) for k in _UPDATE_INPUTS], attrs, name,
                         optional=_UPDATE_INPUTS)[0]
