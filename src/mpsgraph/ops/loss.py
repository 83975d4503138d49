"""The loss family (Apple's MPSGraphLossOps.h and the oneHot op): softMaxCrossEntropy,
softMaxCrossEntropyGradient, oneHot.

softMaxCrossEntropy(source, labels, axis, reductionType), with `logp = log_softmax(source,
axis)` computed stably (x - max - log(sum(exp(x - max)))) and `l` the labels broadcast to the
source's shape::

    loss[.., 0, ..] = -sum_axis(l * logp)          shape: source's with the `axis` dim set to 1
    none  -> loss
    sum   -> sum(loss)                              shape [1] * rank
    mean  -> sum(loss) / T, T = prod(source.shape[i] for i != axis)  shape [1] * rank

Decisions where Apple's documentation is silent:

* Output shapes keep the rank (MPSGraph reductions keep reduced axes as size 1). `none` keeps
  the softmax axis as size 1: Apple's own Swift wrapper around this op (public decompilation of
  a framework built on MPSGraph) squeezes exactly one axis after a `none` loss and none after
  sum/mean; a training example feeding a `mean` loss to `meanOfTensor(axes: [0])` also needs
  rank > 0. `sum` / `mean` give [1] * rank.
* `mean` divides by the number of loss terms, i.e. every position other than `axis` (the batch
  for [N, C] logits), not by all elements: Apple's parameter page says the reduction is
  "across all other axes than axis". It is the mean of the `none` loss: with an empty softmax
  axis (C = 0) each term is an empty sum, 0, and the mean is 0; only T = 0 terms give NaN.
* `labels` must have the source's dataType and be broadcastable to the source's shape (e.g.
  [C] shared by every row); they need not sum to 1.
* Gradients are exact for any labels: d/dsource = (softmax(x) * sum_axis(l) - l) * g (which is
  the familiar softmax - labels when the labels sum to 1); d/dlabels = -logp * g, summed over
  the axes along which the labels were broadcast. `g` is the incoming gradient broadcast to the
  source's shape (divided by the term count for `mean`). The gradient rule emits
  softMaxCrossEntropyGradient for the source and the internal op
  `softMaxCrossEntropyLabelsGradient` (not an Apple method) for the labels.
* A label of 0 contributes 0 even where logp is -inf (no 0 * inf = NaN).
* PyTorch's MPS backend gives no evidence here: its LossOps.mm never calls this op (its
  cross-entropy is log_softmax + nll_loss, whose backward uses oneHot).

oneHot(indices, depth, axis=-1, dataType=float32, onValue=1, offValue=0): a new axis of size
`depth` inserted at `axis` (-1 = appended, as Apple documents; axis in [-(rank+1), rank]).
Indices outside [0, depth) give an all-`offValue` vector (PyTorch's MPS backend relies on this
to ignore an index, by setting it to depth + 1). Indices are any integer type; `dataType` any
type with data (floating, integer or bool); onValue / offValue must be representable in it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import FLOATING, DataType, LossReductionType, ShapedType
from ._checks import same_float_type
from ._registry import InferContext, register_op
from ._shape_math import known

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["LossOps", "SoftMaxCEAttrs", "OneHotAttrs"]

INTEGER = (DataType.int8, DataType.int16, DataType.int32, DataType.int64, DataType.uInt8,
           DataType.uInt16, DataType.uInt32, DataType.uInt64)


@dataclass(frozen=True)
class _CEOpAttrs:
    axis: int  # as given (may be negative)
    reduction: LossReductionType


@dataclass(frozen=True)
class SoftMaxCEAttrs:
    """Kernel attributes of the softmax cross-entropy ops (all three)."""

    axis: int  # normalised, >= 0
    reduction: LossReductionType
    out_shape: tuple[int, ...]  # the forward loss's shape
    result_shape: tuple[int, ...]  # the shape this op returns


@dataclass(frozen=True)
class OneHotAttrs:
    depth: int
    axis: int  # normalised against the result's rank when the rank is known, else as given
    dataType: DataType
    onValue: Any
    offValue: Any


# ---------------------------------------------------------------------------- helpers
def broadcastable_to(ctx: InferContext, arg: str, target: list[int] | None,
                     target_desc: str) -> None:
    """Raise ShapeError unless `arg`'s shape broadcasts (NumPy rules) to `target` exactly
    (the target never grows). Unknown dims (-1) and unranked shapes pass until known."""
    shape = ctx.type_of(arg).shape
    if shape is None or target is None:
        return
    ok = len(shape) <= len(target)
    if ok:
        for s, t in zip(reversed(shape), reversed(target)):
            if known(s, t) and s != 1 and s != t:
                ok = False
                break
    if not ok:
        raise ctx.error(ShapeError, arg, f"a shape broadcastable to {target} ({target_desc})",
                        shape)


def _norm_axis(ctx: InferContext, axis: int, rank: int | None, arg: str = "axis") -> int | None:
    if rank is None:
        return None
    if not -rank <= axis < rank:
        raise ctx.error(ShapeError, arg, f"an axis in [{-rank}, {rank - 1}] (the source's rank "
                        f"is {rank})", axis)
    return axis % rank


def _loss_shapes(ctx: InferContext, src_arg: str):
    """(normalised axis, forward loss shape) from the source's type; None when unranked."""
    a: _CEOpAttrs = ctx.attrs
    shape = ctx.type_of(src_arg).shape
    if shape is None:
        return None, None
    if len(shape) == 0:
        raise ctx.error(ShapeError, src_arg, "a tensor of rank >= 1 (the softmax needs an axis)",
                        "a scalar (shape [])")
    ax = _norm_axis(ctx, a.axis, len(shape))
    if a.reduction == LossReductionType.none:
        out = list(shape)
        out[ax] = 1
    else:
        out = [1] * len(shape)
    return ax, out


def _ce_attrs(ctx: InferContext, ax, out, result) -> SoftMaxCEAttrs | None:
    if not ctx.static:
        return None
    return SoftMaxCEAttrs(ax, ctx.attrs.reduction, tuple(out), tuple(result))


# ---------------------------------------------------------------------------- shape rules
def _infer_softMaxCrossEntropy(ctx: InferContext):
    dt = same_float_type(ctx, ("source", "labels"))
    ax, out = _loss_shapes(ctx, "source")
    broadcastable_to(ctx, "labels", ctx.type_of("source").shape, "the source's shape")
    return [ShapedType(out, dt)], _ce_attrs(ctx, ax, out, out)


def _infer_softMaxCrossEntropyGradient(ctx: InferContext):
    dt = same_float_type(ctx, ("gradient", "source", "labels"))
    ax, out = _loss_shapes(ctx, "source")
    src = ctx.type_of("source").shape
    broadcastable_to(ctx, "labels", src, "the source's shape")
    broadcastable_to(ctx, "gradient", out, "the forward loss's shape for "
                     f"{ctx.attrs.reduction!r}")
    return [ShapedType(src, dt)], _ce_attrs(ctx, ax, out, src)


def _infer_softMaxCrossEntropyLabelsGradient(ctx: InferContext):
    dt = same_float_type(ctx, ("gradient", "source", "labels"))
    ax, out = _loss_shapes(ctx, "source")
    lab = ctx.type_of("labels").shape
    broadcastable_to(ctx, "labels", ctx.type_of("source").shape, "the source's shape")
    broadcastable_to(ctx, "gradient", out, "the forward loss's shape")
    return [ShapedType(lab, dt)], _ce_attrs(ctx, ax, out, lab)


def _infer_oneHot(ctx: InferContext):
    a: OneHotAttrs = ctx.attrs
    t = ctx.type_of("indices")
    if t.dataType not in INTEGER:
        raise ctx.error(DataTypeError, "indices", "an integer tensor (int8..int64, "
                        "uInt8..uInt64)", t.dataType)
    if t.shape is None:
        return [ShapedType(None, a.dataType)], None
    r = len(t.shape)
    if not -(r + 1) <= a.axis <= r:
        raise ctx.error(ShapeError, "axis", f"an axis in [{-(r + 1)}, {r}] (the indices' rank "
                        f"is {r}; -1 appends the new axis)", a.axis)
    ax = a.axis if a.axis >= 0 else a.axis + r + 1
    out = list(t.shape)
    out.insert(ax, a.depth)
    attrs = OneHotAttrs(a.depth, ax, a.dataType, a.onValue, a.offValue) if ctx.static else None
    return [ShapedType(out, a.dataType)], attrs


# ---------------------------------------------------------------------------- gradient rules
def _grad_softMaxCrossEntropy(g: Graph, op: Operation, dys):
    x, lab = op.input("source"), op.input("labels")
    a: _CEOpAttrs = op.attrs
    return {
        "source": g.softMaxCrossEntropyGradient(dys[0], x, lab, a.axis, a.reduction),
        "labels": g._add("softMaxCrossEntropyLabelsGradient",
                         [("gradient", dys[0]), ("source", x), ("labels", lab)], a)[0],
    }


register_op("softMaxCrossEntropy", _infer_softMaxCrossEntropy, _grad_softMaxCrossEntropy)
register_op("softMaxCrossEntropyGradient", _infer_softMaxCrossEntropyGradient)
register_op("softMaxCrossEntropyLabelsGradient", _infer_softMaxCrossEntropyLabelsGradient)
register_op("oneHot", _infer_oneHot, lambda g, op, dys: {})


# ---------------------------------------------------------------------------- builders
def _int_arg(op: str, name: str | None, arg: str, value: Any, minimum: int | None = None
             ) -> int:
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if not is_int or (minimum is not None and value < minimum):
        raise op_error(ShapeError if is_int else GraphError, op, arg,
                       "an int" + ("" if minimum is None else f" >= {minimum}"),
                       repr(value) if isinstance(value, str) else value, name)
    return int(value)


def _reduction_arg(op: str, name: str | None, reuctionType: Any, reductionType: Any
                   ) -> LossReductionType:
    if reuctionType is not None and reductionType is not None:
        raise op_error(GraphError, op, "reductionType", "one of reuctionType (Swift's label) "
                       "and reductionType", "both", name)
    v = reuctionType if reuctionType is not None else reductionType
    arg = "reuctionType" if reuctionType is not None else "reductionType"
    if (not isinstance(v, (bool, np.bool_)) and isinstance(v, numbers.Integral)
            and int(v) in (0, 1, 2)):
        return LossReductionType(int(v))
    raise op_error(GraphError, op, arg, "a LossReductionType (none, sum or mean)",
                   repr(v) if isinstance(v, str) else v, name)


def _value_in_type(op: str, name: str | None, arg: str, value: Any, dt: DataType) -> Any:
    """onValue / offValue as a NumPy scalar of `dt`; refuse what the type cannot hold: a
    non-integer or out-of-range value for an integer type, other than 0 / 1 for bool, a finite
    value that rounds to +-inf for a floating type (1e40 in float16; a Python int beyond
    float's range). Explicit inf / NaN are floating values like any other."""
    ok = isinstance(value, (numbers.Real, np.bool_)) and not isinstance(value, str)
    integral = ok and isinstance(value, (numbers.Integral, np.bool_))
    f = 0.0
    if ok:
        try:
            f = float(value)
        except OverflowError:  # a Python int beyond float's range
            f = math.inf if value > 0 else -math.inf
    if ok and dt == DataType.bool:
        ok = (integral and int(value) in (0, 1)) or (not integral and f in (0.0, 1.0))
        if ok:
            return np.bool_(f == 1.0)
    elif ok and dt not in FLOATING:
        iv = int(value) if integral else (int(f) if np.isfinite(f) and f.is_integer()
                                           else None)
        info = np.iinfo(dt.numpy_dtype)
        ok = iv is not None and info.min <= iv <= info.max
        if ok:
            return np.array(iv, dtype=dt.numpy_dtype)[()]
    elif ok:
        with np.errstate(over="ignore"):
            v = np.asarray(f).astype(dt.numpy_dtype)[()]
        ok = bool(np.isfinite(v)) or not (integral or np.isfinite(f))
        if ok:
            return v
    raise op_error(DataTypeError, op, arg, f"a number representable in {dt!r}",
                   repr(value) if isinstance(value, str) else value, name)


class LossOps:
    """Graph methods of the loss family (mixed into `Graph`)."""

    def softMaxCrossEntropy(self, source: Tensor, labels: Tensor, axis: int,
                            reuctionType: LossReductionType | None = None, *,
                            reductionType: LossReductionType | None = None,
                            name: str | None = None) -> Tensor:
        """Softmax cross-entropy loss (Swift `softMaxCrossEntropy(_:labels:axis:reuctionType:
        name:)`; `reductionType=` is accepted for Apple's misspelt label).

        source [..., C, ...] (C at `axis`), labels broadcastable to it, same float type::

            loss = reduction(-sum_axis(labels * log_softmax(source, axis)))

        result: `none` -> the source's shape with `axis` of size 1; `sum` / `mean` -> [1] *
        rank; `mean` divides by the number of loss terms, the product of the source's dimensions
        other than `axis` (see the module docstring)."""
        op = "softMaxCrossEntropy"
        axis = _int_arg(op, name, "axis", axis)
        red = _reduction_arg(op, name, reuctionType, reductionType)
        return self._add(op, [("source", source), ("labels", labels)], _CEOpAttrs(axis, red),
                         name)[0]

    def softMaxCrossEntropyGradient(self, gradient: Tensor, source: Tensor | None = None,
                                    labels: Tensor | None = None, axis: int | None = None,
                                    reuctionType: LossReductionType | None = None, *,
                                    reductionType: LossReductionType | None = None,
                                    sourceTensor: Tensor | None = None,
                                    labelsTensor: Tensor | None = None,
                                    name: str | None = None) -> Tensor:
        """dLoss/dsource of softMaxCrossEntropy (Swift `softMaxCrossEntropyGradient(_:source:
        labels:axis:reuctionType:name:)`; the Objective-C labels `sourceTensor=` /
        `labelsTensor=` and `reductionType=` are accepted too).

        `gradient` is broadcastable to the forward loss's shape (often the constant 1); the
        result has the source's shape::

            (softmax(source) * sum_axis(labels) - labels) * gradient  [/ count for mean]"""
        op = "softMaxCrossEntropyGradient"
        source = _alias(op, name, "source", source, "sourceTensor", sourceTensor)
        labels = _alias(op, name, "labels", labels, "labelsTensor", labelsTensor)
        if axis is None:
            raise op_error(GraphError, op, "axis", "an int", None, name)
        axis = _int_arg(op, name, "axis", axis)
        red = _reduction_arg(op, name, reuctionType, reductionType)
        return self._add(op, [("gradient", gradient), ("source", source), ("labels", labels)],
                         _CEOpAttrs(axis, red), name)[0]

    def oneHot(self, indices: Tensor, depth: int, *, axis: int = -1,
               dataType: DataType = DataType.float32, onValue: float = 1.0,
               offValue: float = 0.0, name: str | None = None) -> Tensor:
        """One-hot encoding (Swift `oneHot(withIndicesTensor:depth:axis:dataType:onValue:
        offValue:name:)` and its shorter overloads, whose defaults these are).

        indices [d0, .., dr-1] (integer) -> [d0, .., depth, .., dr-1] with the new axis at
        `axis` (-1: last)::

            y[.., k, ..] = onValue if indices[..] == k else offValue

        An index outside [0, depth) gives a vector of offValue."""
        op = "oneHot"
        depth = _int_arg(op, name, "depth", depth, 0)
        axis = _int_arg(op, name, "axis", axis)
        try:
            if isinstance(dataType, (bool, np.bool_)):
                raise ValueError
            dt = DataType(dataType)
            dt.numpy_dtype  # noqa: B018 - raises TypeError for types without data
            if dt == DataType.complexFloat32:
                raise ValueError
        except (ValueError, TypeError):
            raise op_error(DataTypeError, op, "dataType", "a floating, integer or bool "
                           "DataType", repr(dataType) if isinstance(dataType, str)
                           else dataType, name) from None
        on = _value_in_type(op, name, "onValue", onValue, dt)
        off = _value_in_type(op, name, "offValue", offValue, dt)
        return self._add(op, [("indices", indices)], OneHotAttrs(depth, axis, dt, on, off),
                         name)[0]


def _alias(op: str, name: str | None, arg: str, value: Any, alias: str, alias_value: Any):
    if alias_value is not None:
        if value is not None:
            raise op_error(GraphError, op, alias, f"only one of {arg} and {alias}", "both",
                           name)
        return alias_value
    if value is None:
        raise op_error(GraphError, op, arg, "a Tensor", None, name)
    return value

