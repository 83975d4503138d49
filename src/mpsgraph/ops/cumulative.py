"""The cumulative family (Apple's MPSGraphCumulativeOps.h): cumulativeSum, cumulativeProduct,
cumulativeMinimum, cumulativeMaximum, as ONE TABLE (`ROWS`, one row per op) from which this
module generates the Graph methods and OpDefs; backends/numpy/cumulative.py and
backends/torch/cumulative.py generate their kernels from the same rows.

Each op scans `tensor` along one axis; the result has the input's shape and dataType. The Swift
overloads (`axis:` / `axisTensor:`, with or without `exclusive:reverse:`) are one method
(API.md rules 4 and 10): `cumulativeSum(tensor, axis=1)`, `axis=` an int or a Tensor (its Swift
label `axisTensor=` is accepted too: an int32 / int64 scalar or one-element tensor whose value,
when it is computed or fed, is read at run time), `exclusive=False`, `reverse=False`.
A negative axis counts from the end; an axis outside [-rank, rank) is a ShapeError (a rank-0
tensor has no axis to scan).

`exclusive` leaves each element out of its own result: the first result is the identity
(sum 0, product 1, maximum -inf or the integer type's lowest value, as Apple's page says,
minimum +inf or the highest); `reverse` scans from the last element to the first (TensorFlow's
`tf.cumsum(exclusive=, reverse=)`). Numerics (docs/semantics.md, "Reduction and cumulative
decisions (issue 15)"): half types accumulate in float32 and round each result once; integer
sums and products wrap in the input type; a NaN propagates to every later result of
cumulativeMaximum / cumulativeMinimum (NumPy's maximum.accumulate, torch.cummax).

Gradients: sum -> the cumulative sum of the incoming gradient in the other direction; product
-> exact with zeros (the product of the other factors, no division by a zero); maximum /
minimum -> each result's gradient goes to the element it came from (the LAST one among equal
running extrema, torch.cummax's choice).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import DataType, ShapedType
from ._registry import GradFn, InferContext, register_op
from .activation import check_int
from .arithmetic import NUMERIC

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["CumulativeOps", "Cumulative", "CUMULATIVE", "CumAttrs"]

_AXIS_TYPES = (DataType.int32, DataType.int64)


@dataclass(frozen=True)
class CumAttrs:
    axis: int | None  # None: the value of the axisTensor input
    exclusive: bool
    reverse: bool


@dataclass(frozen=True)
class Cumulative:
    """One cumulative op: the single place that defines it."""

    name: str  # the Swift base name: registry kind and Graph method
    dtypes: tuple[DataType, ...]
    numpy: str  # a helper of backends/numpy/cumulative.py
    torch: str  # a helper of backends/torch/cumulative.py
    grad: GradFn | None
    doc: str


# ---------------------------------------------------------------------------- shape rule
def _infer(row: Cumulative):
    def infer(ctx: InferContext):
        t = ctx.type_of("tensor")
        if t.dataType not in row.dtypes:
            raise ctx.error(DataTypeError, "tensor", "a floating-point or integer type (not "
                            "bool)", t.dataType)
        a: CumAttrs = ctx.attrs
        label, axis = "axis", a.axis
        if axis is None:
            label = "axisTensor"
            at = ctx.type_of("axisTensor")
            if at.dataType not in _AXIS_TYPES:
                raise ctx.error(DataTypeError, label, "an int32 or int64 axis tensor",
                                at.dataType)
            if at.shape is not None and all(d >= 0 for d in at.shape) and \
                    int(np.prod(at.shape)) != 1:
                raise ctx.error(ShapeError, label, "a scalar or one-element axis tensor",
                                f"shape {at.shape}")
            v = ctx.value_of("axisTensor")
            if v is None:
                return [ShapedType(t.shape, t.dataType)], None  # read at run time
            axis = int(np.asarray(v).reshape(-1)[0])
        if t.shape is None:
            return [ShapedType(None, t.dataType)], None
        rank = len(t.shape)
        if not -rank <= axis < rank:
            raise ctx.error(ShapeError, label, f"an axis in [-{rank}, {rank}) (the rank of "
                            "tensor)", axis)
        return [ShapedType(t.shape, t.dataType)], (axis % rank, a.exclusive, a.reverse)
    return infer


# ---------------------------------------------------------------------------- gradient rules
def _axis_kw(op: Operation) -> dict:
    a = op.attrs
    return {"axis": a.axis if a.axis is not None else op.input("axisTensor")}


def _grad_sum(g, op, dys):
    a = op.attrs
    return {"tensor": g.cumulativeSum(dys[0], exclusive=a.exclusive, reverse=not a.reverse,
                                      **_axis_kw(op))}


def _grad_product(g, op, dys):
    # dx_j = sum over the results i that include x_j of dy_i * (the product of the other
    # factors of y_i). Before the first zero (in scan order) that is cumsum(dy * y) / x_j in
    # the other direction; at the first zero, the same sum with that zero replaced by 1; after
    # it, 0 (every such product holds the first zero).
    a, kw = op.attrs, _axis_kw(op)
    x, y, dy = op.input("tensor"), op.outputTensors[0], dys[0]
    dt = x.dataType
    one, zero = g.constant(1.0, dataType=dt), g.constant(0.0, dataType=dt)
    is0 = g.equal(x, zero)
    seen = g.cumulativeSum(g.cast(is0, dt), exclusive=True, reverse=a.reverse, **kw)
    clean = g.equal(seen, zero)  # no zero strictly before
    before = g.logicalAND(clean, g.not_(is0))
    first = g.logicalAND(clean, is0)
    back = {"exclusive": a.exclusive, "reverse": not a.reverse, **kw}
    g_before = g.division(g.cumulativeSum(g.multiplication(dy, y), **back),
                          g.select(before, x, one))
    y1 = g.cumulativeProduct(g.select(first, one, x), exclusive=a.exclusive,
                             reverse=a.reverse, **kw)
    g_first = g.cumulativeSum(g.multiplication(dy, y1), **back)
    return {"tensor": g.select(before, g_before, g.select(first, g_first, zero))}


def _grad_extremum(g, op, dys):
    # Each result comes from the last element (in scan order, up to it) equal to the running
    # extremum: the "marks" m_j = (x_j == inclusive running extremum at j). Mark j receives
    # the incoming gradients of the results from its own (inclusive op; the next one for the
    # exclusive op) up to the next mark: C(next mark) - C(j) with C the cumulative sum of dy.
    # C at the next mark is a backward fill, done with a cumulative minimum over the marks of
    # a NONDECREASING C: so dy is split into its positive and negative parts.
    a, kw = op.attrs, _axis_kw(op)
    x, dy = op.input("tensor"), dys[0]
    dt = x.dataType
    scan = g.cumulativeMaximum if op.kind == "cumulativeMaximum" else g.cumulativeMinimum
    z = scan(x, exclusive=False, reverse=a.reverse, **kw)
    m = g.equal(x, z)
    zero, inf = g.constant(0.0, dataType=dt), g.constant(float("inf"), dataType=dt)
    parts = []
    for p in (g.maximum(dy, zero), g.maximum(g.negative(dy), zero)):
        c = g.cumulativeSum(p, exclusive=not a.exclusive, reverse=a.reverse, **kw)
        total = g.addition(g.cumulativeSum(p, exclusive=True, reverse=a.reverse, **kw),
                           g.cumulativeSum(p, exclusive=False, reverse=not a.reverse, **kw))
        nxt = g.cumulativeMinimum(g.select(m, c, inf), exclusive=True, reverse=not a.reverse,
                                  **kw)
        nxt = g.select(g.equal(nxt, inf), total, nxt)
        parts.append(g.select(m, g.subtraction(nxt, c), zero))
    return {"tensor": g.subtraction(parts[0], parts[1])}


# ---------------------------------------------------------------------------- the table
C = Cumulative
ROWS: tuple[Cumulative, ...] = (
    C('cumulativeSum', NUMERIC, 'cumsum', 'cumsum', _grad_sum,
      "Running sum along `axis` (exclusive: starts at 0); integer sums wrap."),
    C('cumulativeProduct', NUMERIC, 'cumprod', 'cumprod', _grad_product,
      "Running product along `axis` (exclusive: starts at 1); integer products wrap. "
      "Gradient exact with zeros."),
    C('cumulativeMinimum', NUMERIC, 'cummin', 'cummin', _grad_extremum,
      "Running minimum along `axis` (exclusive: starts at +inf, integers: the type's highest); "
      "a NaN propagates to every later result."),
    C('cumulativeMaximum', NUMERIC, 'cummax', 'cummax', _grad_extremum,
      "Running maximum along `axis` (exclusive: starts at -inf, integers: the type's lowest "
      "value); a NaN propagates to every later result."),
)

CUMULATIVE: dict[str, Cumulative] = {}
for _row in ROWS:
    CUMULATIVE[_row.name] = _row
    register_op(_row.name, _infer(_row), _row.grad, value_inputs=("axisTensor",))


# ---------------------------------------------------------------------------- builders
def _flag(kind: str, name: str | None, label: str, v: object) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise op_error(GraphError, kind, label, "a bool", v, name)
    return bool(v)


def _builder(row: Cumulative) -> Callable[..., Tensor]:
    src = (f"def {row.name}(self, tensor, *, axis=None, axisTensor=None, exclusive=False, "
           f"reverse=False, name=None):\n"
           f"    return self._cumulative({row.name!r}, tensor, axis, axisTensor, exclusive, "
           f"reverse, name)\n")
    ns: dict = {}
    exec(src, ns)  # noqa: S102 (a fixed template over the table's identifiers)
    fn = ns[row.name]
    fn.__qualname__ = f"CumulativeOps.{row.name}"
    fn.__module__ = __name__
    fn.__doc__ = (f"{row.doc}\n\nSwift `{row.name}(_:axis:exclusive:reverse:name:)` and its "
                  "`axisTensor:` and short overloads: `axis=` an int or a Tensor "
                  "(`axisTensor=` too), `exclusive=False`, `reverse=False`. The result has "
                  "the input's shape and dataType.")
    return fn


class CumulativeOps:
    """Graph methods of the cumulative family (mixed into `Graph`), generated from `ROWS`."""

    def _cumulative(self: Graph, kind: str, tensor: Tensor, axis, axisTensor, exclusive,
                    reverse, name) -> Tensor:
        from ..graph import Tensor

        if axis is not None and axisTensor is not None:
            raise op_error(GraphError, kind, "axisTensor", "only one of axis and axisTensor",
                           "both", name)
        if isinstance(axis, Tensor):
            axis, axisTensor = None, axis
        if axis is None and axisTensor is None:
            raise op_error(GraphError, kind, "axis", "an int or an axis Tensor", None, name)
        attrs = CumAttrs(None if axis is None else check_int(kind, name, "axis", axis),
                         _flag(kind, name, "exclusive", exclusive),
                         _flag(kind, name, "reverse", reverse))
        inputs = [("tensor", tensor)]
        if axisTensor is not None:
            inputs.append(("axisTensor", axisTensor))
        return self._add(kind, inputs, attrs, name)[0]


for _row in ROWS:
    setattr(CumulativeOps, _row.name, _builder(_row))
del _row
