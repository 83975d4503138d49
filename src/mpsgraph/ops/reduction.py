"""The reduction family (Apple's MPSGraphReductionOps.h) as ONE TABLE (`ROWS`, one row per
op: Swift name, accepted dataTypes, result dataType rule, NumPy helper, torch helper, gradient
rule, doc), from which this module generates the Graph methods and OpDefs and both backends
their kernels: reductionSum, reductionProduct, reductionMaximum, reductionMinimum, their
...PropagateNaN variants, reductionArgMaximum / reductionArgMinimum (one `axis=`, int32
result), reductionAnd / reductionOr, and the mean `reductionMean` (whose Swift spelling
`mean(of:axes:)`, of MPSGraphNormalizationOps.h, is a method of ops/normalization.py).
`grep -n "'reductionProduct'" src` finds its row. The decisions of issue 15 (empty slices,
ties, NaN, wrapping) are in docs/semantics.md, "Reduction and cumulative decisions (issue 15)".

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
from ..types import FLOATING, DataType, ShapedType
from ._registry import GradFn, InferContext, register_op
from .activation import check_int
from .arithmetic import ANY_TYPE, NUMERIC

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ReductionOps", "ReduceAttrs", "Reduction", "REDUCTIONS", "normalize_axes"]


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


def _reduce_rule(row: Reduction):
    text = _TEXTS.get(tuple(row.dtypes), ", ".join(d.name for d in row.dtypes))

    def infer(ctx: InferContext):
        t = ctx.type_of("tensor")
        if t.dataType not in row.dtypes:
            raise ctx.error(DataTypeError, "tensor", text, t.dataType)
        out_dt = DataType.int32 if row.result == "int32" else t.dataType
        if t.shape is None:
            return [ShapedType(None, out_dt)], None
        axes = normalize_axes(ctx, "tensor", ctx.attrs.axes, len(t.shape), ctx.attrs.label)
        if row.single_axis:
            a = axes[0]
            if t.shape[a] == 0:
                raise ctx.error(ShapeError, "axis", f"an axis of size >= 1 ({row.name} of an "
                                "empty axis has no index: NumPy and TensorFlow refuse it too)",
                                f"axis {ctx.attrs.axes[0]} of size 0 in shape {t.shape}")
        shape = [1 if i in axes else d for i, d in enumerate(t.shape)]
        return [ShapedType(shape, out_dt)], axes
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
    # (for the ...PropagateNaN ops, a NaN result's gradient goes to the NaN positions)
    x, y = op.input("tensor"), op.outputTensors[0]
    axes = _axes_of(op)
    hit = g.equal(x, y)
    if op.kind.endswith("PropagateNaN"):
        hit = g.logicalOR(hit, g.logicalAND(g.isNaN(x), g.isNaN(y)))
    mask = g.cast(hit, x.dataType)
    count = g.reductionSum(mask, axes=axes)
    return {"tensor": g.multiplication(mask, g.division(dys[0], count))}


def _grad_product(g, op, dys):
    # d prod / d x_i = the product of the OTHER elements, computed without dividing by zero:
    # no zero in the slice: prod / x_i; exactly one zero: the product of the non-zero
    # elements at the zero, 0 elsewhere; two zeros or more: 0 everywhere (PyTorch's rule).
    x = op.input("tensor")
    axes = _axes_of(op)
    dt = x.dataType
    one, zero = g.constant(1.0, dataType=dt), g.constant(0.0, dataType=dt)
    is0 = g.equal(x, zero)
    zeros = g.reductionSum(g.cast(is0, dt), axes=axes)
    safe = g.select(is0, one, x)
    p_nz = g.reductionProduct(safe, axes=axes)  # the product of the non-zero elements
    none = g.division(p_nz, safe)
    grad = g.select(g.equal(zeros, zero), none,
                    g.select(g.logicalAND(g.equal(zeros, one), is0), p_nz, zero))
    return {"tensor": g.multiplication(broadcast_back(g, dys[0], x), grad)}


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Reduction:
    """One reduction: the single place that defines it (registry kind, Graph method, kernels).
    `numpy` / `torch` name helpers of backends/numpy/reduction.py / backends/torch/reduction.py;
    the kernels receive the input and the normalised axes (sorted, unique, non-negative)."""

    name: str  # the Swift base name
    dtypes: tuple[DataType, ...]  # the accepted dataTypes
    result: str  # 'same' (the input's dataType) | 'int32' (the arg reductions)
    numpy: str
    torch: str
    grad: GradFn | None  # None: no gradient
    doc: str
    single_axis: bool = False  # only `axis:` (Swift has no `axes:` overload)
    builder: bool = True  # False: written by hand below


_TEXTS = {FLOATING: "float32, float16 or bFloat16",
          NUMERIC: "a floating-point or integer type (not bool)",
          ANY_TYPE: "a floating-point, integer or bool type"}
R = Reduction
ROWS: tuple[Reduction, ...] = (
    R('reductionSum', NUMERIC, 'same', 'total', 'total', _grad_sum,
      "Sum over the axes (0 over an empty slice); integer sums wrap in the input type."),
    R('reductionProduct', NUMERIC, 'same', 'product', 'product', _grad_product,
      "Product over the axes (1 over an empty slice); integer products wrap in the input type. "
      "Gradient: the product of the other elements (exact with zeros in the slice)."),
    R('reductionMaximum', NUMERIC, 'same', 'maximum', 'maximum', _grad_extremum,
      "Maximum over the axes; NaN is ignored unless the whole slice is NaN; -inf (integers: the "
      "type's lowest) over an empty slice. Gradient: to the maximal positions, split evenly "
      "among ties."),
    R('reductionMinimum', NUMERIC, 'same', 'minimum', 'minimum', _grad_extremum,
      "Minimum over the axes; NaN is ignored unless the whole slice is NaN; +inf (integers: "
      "the type's highest) over an empty slice."),
    R('reductionMaximumPropagateNaN', NUMERIC, 'same', 'maximum_nan', 'maximum_nan',
      _grad_extremum,
      "Maximum over the axes; NaN if any element of the slice is NaN; -inf / the type's lowest "
      "over an empty slice."),
    R('reductionMinimumPropagateNaN', NUMERIC, 'same', 'minimum_nan', 'minimum_nan',
      _grad_extremum,
      "Minimum over the axes; NaN if any element of the slice is NaN; +inf / the type's highest "
      "over an empty slice."),
    R('reductionArgMaximum', NUMERIC, 'int32', 'argmax', 'argmax', None,
      "The index (int32) of the maximum along `axis`: the FIRST one among ties; a NaN counts "
      "as the maximum (the first NaN's index; NumPy's and PyTorch's argmax). An empty axis is a "
      "ShapeError. No gradient.", single_axis=True),
    R('reductionArgMinimum', NUMERIC, 'int32', 'argmin', 'argmin', None,
      "The index (int32) of the minimum along `axis`: the FIRST one among ties; a NaN counts "
      "as the minimum (the first NaN's index). An empty axis is a ShapeError. No gradient.",
      single_axis=True),
    R('reductionAnd', ANY_TYPE, 'same', 'all_true', 'all_true', None,
      "Logical AND over the axes (non-zero, NaN included, is true), as 1 / 0 in the input's "
      "dataType (true / false for bool); true over an empty slice. No gradient."),
    R('reductionOr', ANY_TYPE, 'same', 'any_true', 'any_true', None,
      "Logical OR over the axes (non-zero, NaN included, is true), as 1 / 0 in the input's "
      "dataType; false over an empty slice. No gradient."),
    R('reductionMean', FLOATING, 'same', 'mean', 'mean', _grad_mean,
      "Arithmetic mean over the axes (floating types); NaN over an empty slice.",
      builder=False),
)

REDUCTIONS: dict[str, Reduction] = {}
for _row in ROWS:
    REDUCTIONS[_row.name] = _row
    register_op(_row.name, _reduce_rule(_row), _row.grad)


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


def _builder(row: Reduction):
    """The Graph method of a row (generated source, so that its signature is a real one):
    `tensor` positional, then `axis=` / `axes=` (or `axis=` alone) and `name=` keyword-only."""
    if row.single_axis:
        src = (f"def {row.name}(self, tensor, *, axis, name=None):\n"
               f"    return self._reduce({row.name!r}, tensor, axis, None, name)\n")
    else:
        src = (f"def {row.name}(self, tensor, *, axis=None, axes=None, name=None):\n"
               f"    return self._reduce({row.name!r}, tensor, axis, axes, name)\n")
    ns: dict = {}
    exec(src, ns)  # noqa: S102 (a fixed template over the table's identifiers)
    fn = ns[row.name]
    fn.__qualname__ = f"ReductionOps.{row.name}"
    fn.__module__ = __name__
    form = ("over `axis=` (one int)" if row.single_axis else
            "over `axis=` (an int) or `axes=` (a list; None or nothing: every axis)")
    fn.__doc__ = (f"{row.doc}\n\nSwift `{row.name}(with:...)`, {form}; the result keeps the "
                  f"rank, reduced axes of size 1. Result dataType: "
                  f"{'int32' if row.result == 'int32' else 'the input' + chr(39) + 's'}.")
    return fn


class ReductionOps:
    """Graph methods of the reduction family (mixed into `Graph`), generated from `ROWS`.
    Each reduces `tensor` [d0, ..., dn-1] over `axis=` (an int) or `axes=` (a list; None =
    every axis) and KEEPS the rank: reduced axes have size 1 in the result."""

    def _reduce(self, kind: str, tensor: Tensor, axis, axes, name) -> Tensor:
        if REDUCTIONS[kind].single_axis:
            check_int(kind, name, "axis", axis)
        return self._add(kind, [("tensor", tensor)], axes_attr(kind, name, axis, axes), name)[0]

    def reductionMean(self, tensor: Tensor, *, axis: int | None = None,
                      axes: Sequence[int] | None = None, name: str | None = None) -> Tensor:
        """Arithmetic mean over the axes (floating types); size-1 axes kept."""
        return self._reduce("reductionMean", tensor, axis, axes, name)


for _row in ROWS:
    if _row.builder:
        setattr(ReductionOps, _row.name, _builder(_row))
del _row
