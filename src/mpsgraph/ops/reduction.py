"""The reduction family (Apple's MPSGraphReductionOps.h): reductionSum, reductionMaximum,
reductionMinimum, and the mean (Apple's `mean(of:axes:)`, which lives in
MPSGraphNormalizationOps.h; also spelled `reductionMean` here).

Shapes: `tensor` [d0, ..., dn-1] reduced over `axes` -> the SAME RANK, with every reduced axis
of size 1 (MPSGraph reductions keep the reduced dimensions). Evidence: PyTorch's MPS backend
allocates MPSGraph's result with an "apparent output shape" that has 1 at each reduced axis and
then drops them itself (`pytorch/pytorch aten/src/ATen/native/mps/operations/ReduceOps.mm`,
`set_apparent_shapes` / `reduction_out_mps`), and its log-softmax backward multiplies a
full-shape tensor by `reductionSumWithTensor:axis:` directly, relying on that size-1 axis
broadcasting (`Activation.mm`). A published test harness run on the real framework records the
same: `reductionSumWithTensor:axis:1` of a 2x4 answers a 2x1, `axes:@[@0, @1]` a 1x1.

Axes (Swift overloads `reductionSum(with:axis:name:)` and `reductionSum(with:axes:name:)`):
`axis=` one int or `axes=` a list of ints; negative axes count from the end. Decisions, the first
three as measured in that harness: `axes=None` (Apple's `axes: nil`) and no axis at all reduce
EVERY axis; `axes=[]` reduces none (the result is the input); an axis listed twice is reduced
once; an axis outside [-rank, rank) is a ShapeError.

Types: reductionSum / reductionMaximum / reductionMinimum accept floating and integer types
(integer sums wrap in the input type); the mean is floating only. Half types accumulate in
float32 and round once. reductionMaximum / reductionMinimum ignore NaN unless a whole slice is
NaN (Apple has separate `...PropagateNaN` variants); over an empty slice they give the
identity: -inf / +inf for floats, the type's min / max for integers. The mean of an empty slice
is NaN. Gradients: sum -> the incoming gradient broadcast back; mean -> that divided by the
count; maximum / minimum -> the incoming gradient goes to the positions equal to the result,
SPLIT EVENLY among ties (PyTorch's amax/amin and JAX's choice).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import FLOATING, ShapedType
from ._registry import InferContext, register_op
from .activation import check_int
from .arithmetic import NUMERIC

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ReductionOps", "ReduceAttrs", "normalize_axes"]


@dataclass(frozen=True)
class ReduceAttrs:
    axes: tuple[int, ...] | None  # as given (may be negative or repeated); None = every axis
    label: str = "axes"  # the user's argument name, for messages


def normalize_axes(ctx: InferContext, arg: str, axes: Sequence[int] | None, rank: int,
                   label: str) -> tuple[int, ...]:
    """Sorted unique non-negative axes (every axis for None); ShapeError if out of range."""
    if axes is None:
        return tuple(range(rank))
    out = set()
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(ShapeError, label, f"axes in [-{rank}, {rank}) (the rank of {arg})",
                            list(axes) if label == "axes" else a)
        out.add(a % rank)
    return tuple(sorted(out))


def _reduce_rule(allowed, text):
    def infer(ctx: InferContext):
        t = ctx.type_of("tensor")
        if t.dataType not in allowed:
            raise ctx.error(DataTypeError, "tensor", text, t.dataType)
        if t.shape is None:
            return [ShapedType(None, t.dataType)], None
        axes = normalize_axes(ctx, "tensor", ctx.attrs.axes, len(t.shape), ctx.attrs.label)
        shape = [1 if i in axes else d for i, d in enumerate(t.shape)]
        return [ShapedType(shape, t.dataType)], axes
    return infer


# ---------------------------------------------------------------------------- gradient rules
def _axes_of(op: Operation) -> list[int]:
    x = op.input("tensor")
    if x.shape is None:
        raise UnsupportedError(f"{op.kind}: gradient of an unranked tensor ({x.name})")
    rank = len(x.shape)
    a = op.attrs.axes
    return sorted({i % rank for i in a}) if a is not None else list(range(rank))


def broadcast_back(g: Graph, dy: Tensor, x: Tensor) -> Tensor:
    """dy (x's shape with size-1 axes) broadcast to x's shape (a shape tensor if dynamic)."""
    if x.shape is not None and all(d >= 0 for d in x.shape):
        return dy if dy.shape == x.shape else g.broadcast(dy, x.shape)
    return g.broadcast(dy, shapeTensor=g.shapeOf(x))


def _grad_sum(g, op, dys):
    return {"tensor": broadcast_back(g, dys[0], op.input("tensor"))}


def _grad_mean(g, op, dys):
    x = op.input("tensor")
    dims = [x.shape[i] for i in _axes_of(op)]
    if any(d < 0 for d in dims):
        # a dynamic reduced dimension: the count is known at run time only, as the sum of
        # ones over the reduced axes (ones even where x is NaN or infinite)
        one = g.constant(1.0, dataType=x.dataType)
        count = g.reductionSum(g.select(g.isNaN(x), one, one), axes=list(_axes_of(op)))
        return {"tensor": broadcast_back(g, g.division(dys[0], count), x)}
    n = math.prod(dims)
    scale = g.constant(1.0 / n if n else float("nan"), dataType=x.dataType)
    return {"tensor": broadcast_back(g, g.multiplication(dys[0], scale), x)}


def _grad_extremum(g, op, dys):
    # mask of the positions equal to the result; the gradient is shared evenly among them
    x, y = op.input("tensor"), op.outputTensors[0]
    axes = _axes_of(op)
    mask = g.cast(g.equal(x, y), x.dataType)
    count = g.reductionSum(mask, axes=axes)
    return {"tensor": g.multiplication(mask, g.division(dys[0], count))}


_FLOAT_TEXT = "float32, float16 or bFloat16"
_NUM_TEXT = "a floating-point or integer type (not bool)"
register_op("reductionSum", _reduce_rule(NUMERIC, _NUM_TEXT), _grad_sum)
register_op("reductionMaximum", _reduce_rule(NUMERIC, _NUM_TEXT), _grad_extremum)
register_op("reductionMinimum", _reduce_rule(NUMERIC, _NUM_TEXT), _grad_extremum)
register_op("reductionMean", _reduce_rule(FLOATING, _FLOAT_TEXT), _grad_mean)


# ---------------------------------------------------------------------------- builders
def axes_attr(op: str, name: str | None, axis: object, axes: object) -> ReduceAttrs:
    """The axes of a call with `axis=` or `axes=` (not both); checked to be ints."""
    if axis is not None and axes is not None:
        raise op_error(GraphError, op, "axes", "only one of axis and axes", "both", name)
    if axis is not None:
        return ReduceAttrs((check_int(op, name, "axis", axis),), "axis")
    if axes is None:
        return ReduceAttrs(None)
    if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__"):
        raise op_error(GraphError, op, "axes", "a list of ints or None",
                       repr(axes) if isinstance(axes, str) else axes, name)
    return ReduceAttrs(tuple(check_int(op, name, "axes", a) for a in axes))


class ReductionOps:
    """Graph methods of the reduction family (mixed into `Graph`). Each reduces `tensor`
    [d0, ..., dn-1] over `axis=` (an int) or `axes=` (a list; None = every axis) and KEEPS the
    rank: reduced axes have size 1 in the result."""

    def _reduce(self, kind: str, tensor: Tensor, axis, axes, name) -> Tensor:
        return self._add(kind, [("tensor", tensor)], axes_attr(kind, name, axis, axes), name)[0]

    def reductionSum(self, tensor: Tensor, *, axis: int | None = None,
                     axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Sum over the axes; reduced axes kept with size 1. Integer sums wrap."""
        return self._reduce("reductionSum", tensor, axis, axes, name)

    def reductionMaximum(self, tensor: Tensor, *, axis: int | None = None,
                         axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Maximum over the axes (NaN ignored unless the whole slice is NaN); size-1 axes kept.
        Gradient: to the maximal positions, split evenly among ties."""
        return self._reduce("reductionMaximum", tensor, axis, axes, name)

    def reductionMinimum(self, tensor: Tensor, *, axis: int | None = None,
                         axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Minimum over the axes (NaN ignored unless the whole slice is NaN); size-1 axes kept."""
        return self._reduce("reductionMinimum", tensor, axis, axes, name)

    def reductionMean(self, tensor: Tensor, *, axis: int | None = None,
                      axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Arithmetic mean over the axes (floating types); size-1 axes kept."""
        return self._reduce("reductionMean", tensor, axis, axes, name)

    def mean(self, of: Tensor, axes: Sequence[int] | None, *, name: str | None = None
             ) -> Tensor:
        """Swift `mean(of:axes:name:)`: the same op as `reductionMean(of, axes=axes)`."""
        return self._reduce("reductionMean", of, None, axes, name)
