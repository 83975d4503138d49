"""The sort and top-k families (Apple's MPSGraphSortOps.h and MPSGraphTopKOps.h).

  sort(tensor, axis, descending=False)     -> tensor sorted along axis (same shape, type)
  argSort(tensor, axis, descending=False)  -> int32 positions such that
                                              gatherAlongAxis(axis, tensor, argSort) == sort
  topK(source, axis=-1, k)                 -> [values, indices (int32)]: the k largest along
                                              axis, largest first; shape [.., k, ..]
  bottomK(source, axis, k)                 -> [values, indices]: the k smallest, smallest first
  topKGradient(gradient [.., k, ..], source, axis=-1, k) -> [.., n, ..]: `gradient` put back
      at the positions topK(source) took its values from, 0 elsewhere (bottomKGradient alike)

The Swift overloads are one method each (API.md rules 4 and 10): `axis=` an int or a Tensor
(`axisTensor=` too; a scalar int32 / int64, read at run time when it is computed or fed),
`k=` an int or a Tensor (`kTensor=` too). topK / topKGradient without an axis work along the
last (minor) axis, as the macOS 12 overloads `topK(_:k:)`; a negative axis counts from the end.

Decisions (docs/semantics.md, "Gather, scatter, sort and linear algebra decisions (issue 16)"):
both sorts are stable, descending too (equal elements keep their order: torch.sort(stable=
True)); NaN sorts above +inf (last ascending, first descending: NumPy and torch); topK /
bottomK are the first k elements of the stable descending / ascending sort (ties: the lower
position first). k must be in [0, n] (n the axis size): a ShapeError at build time, or at run
time for a fed kTensor; a fed k decides the result's shape when the executable runs.
Accepted types: floating, integer and bool (sort, argSort); floating and integer (top-k).
Gradients: sort -> the incoming gradient scattered back to argSort's positions; topK /
bottomK values -> topKGradient / bottomKGradient; those are linear in `gradient`, whose
gradient is the incoming one gathered at the top-k positions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import DataType, ScatterMode, ShapedType
from ._registry import InferContext, register_op
from .activation import check_int
from .arithmetic import ANY_TYPE, NUMERIC

if TYPE_CHECKING:
    from ..graph import Graph, Tensor

__all__ = ["SortOps", "SortAttrs"]

_INT = (DataType.int32, DataType.int64)


@dataclass(frozen=True)
class SortAttrs:
    """axis (None: the axisTensor's value), descending (sorts; topK True, bottomK False), k
    (None: the kTensor's value; unused by sorts). Kernel attrs have all three resolved, axis
    >= 0."""

    axis: int | None
    descending: bool
    k: int | None = None


def _scalar(ctx: InferContext, label: str) -> int | None:
    t = ctx.type_of(label)
    if t.dataType not in _INT:
        raise ctx.error(DataTypeError, label, "an int32 or int64 scalar tensor", t.dataType)
    if t.shape is not None and all(d >= 0 for d in t.shape) and int(np.prod(t.shape)) != 1:
        raise ctx.error(ShapeError, label, "a scalar tensor", f"shape {t.shape}")
    v = ctx.value_of(label)
    return None if v is None else int(np.asarray(v).reshape(-1)[0])


def _resolve_axis(ctx: InferContext, a: SortAttrs, shape, what: str) -> int | None:
    label, axis = "axis", a.axis
    if "axisTensor" in ctx.input_names:
        label, axis = "axisTensor", _scalar(ctx, "axisTensor")
    if axis is None or shape is None:
        return None
    r = len(shape)
    if not -r <= axis < r:
        raise ctx.error(ShapeError, label, f"an axis in [-{r}, {r}) (the rank of {what})", axis)
    return axis % r


def _infer_sort(ctx: InferContext):
    a: SortAttrs = ctx.attrs
    t = ctx.type_of("tensor")
    if t.dataType not in ANY_TYPE:
        raise ctx.error(DataTypeError, "tensor", "a floating-point, integer or bool type",
                        t.dataType)
    axis = _resolve_axis(ctx, a, t.shape, "tensor")
    dt = t.dataType if ctx.kind == "sort" else DataType.int32
    return [ShapedType(t.shape, dt)], (None if axis is None else replace(a, axis=axis))


def _infer_topk(ctx: InferContext):
    a: SortAttrs = ctx.attrs
    grad = ctx.kind.endswith("Gradient")
    s = ctx.type_of("source")
    if s.dataType not in NUMERIC:
        raise ctx.error(DataTypeError, "source", "a floating-point or integer type (not bool)",
                        s.dataType)
    axis = _resolve_axis(ctx, a, s.shape, "source")
    k, klabel = a.k, "k"
    if "kTensor" in ctx.input_names:
        k, klabel = _scalar(ctx, "kTensor"), "kTensor"
    if k is not None and k < 0:
        raise ctx.error(ShapeError, klabel, "k >= 0", k)
    if s.shape is None:
        out = None
    else:
        out = list(s.shape)
        if axis is None:
            out = [-1] * len(out)
        else:
            n = s.shape[axis]
            if k is not None and n >= 0 and k > n:
                raise ctx.error(ShapeError, klabel, f"k <= {n} (the size of axis {axis} of "
                                f"source {s.shape})", k)
            out[axis] = -1 if k is None else k
    ready = axis is not None and k is not None
    attrs = replace(a, axis=axis, k=k) if ready else None
    if grad:
        gt = ctx.type_of("gradient")
        if gt.dataType != s.dataType:
            raise ctx.error(DataTypeError, "gradient", f"{s.dataType!r} (the dataType of "
                            "source)", gt.dataType)
        if out is not None and gt.shape is not None and (len(gt.shape) != len(out) or any(
                x != y and x >= 0 and y >= 0 for x, y in zip(gt.shape, out))):
            raise ctx.error(ShapeError, "gradient", f"shape {out} (topK's values)", gt.shape)
        return [ShapedType(s.shape, s.dataType)], attrs
    return [ShapedType(out, s.dataType), ShapedType(out, DataType.int32)], attrs


# ---------------------------------------------------------------------------- gradients
def _axis_of(op) -> int | Tensor:
    if "axisTensor" in op.input_names:
        return op.input("axisTensor")
    return op.kernel_attrs.axis if op.kernel_attrs is not None else op.attrs.axis


def _k_of(op) -> int | Tensor:
    return op.input("kTensor") if "kTensor" in op.input_names else op.attrs.k


def _static(op, t: Tensor) -> list[int]:
    if t.shape is None or any(d < 0 for d in t.shape):
        raise op_error(UnsupportedError, op.kind, "gradient", "a static input shape", t.shape)
    return list(t.shape)


def _grad_sort(g, op, dys):
    x = op.input("tensor")
    axis = _axis_of(op)
    desc = op.attrs.descending
    perm = g.argSort(x, axis=axis, descending=desc)
    return {"tensor": g._scatter_along("scatterAlongAxis", axis, None, dys[0], perm,
                                       _static(op, x), ScatterMode.add, None)}


def _grad_topk(g, op, dys):
    if dys[0] is None:
        return {}
    f = g.topKGradient if op.kind == "topK" else g.bottomKGradient
    return {"source": f(dys[0], source=op.input("source"), axis=_axis_of(op), k=_k_of(op))}


def _grad_topk_gradient(g, op, dys):
    f = g.topK if op.kind == "topKGradient" else g.bottomK
    axis = _axis_of(op)
    idx = f(op.input("source"), axis=axis, k=_k_of(op))[1]
    res = g._gather_along("gatherAlongAxis", axis, dys[0], idx, None)
    gt = op.input("gradient")
    if gt.shape is not None and all(d >= 0 for d in gt.shape) and res.shape != gt.shape:
        res = g.reshape(res, list(gt.shape))  # k or axis fed: the shape is gradient's
    return {"gradient": res}


register_op("sort", _infer_sort, _grad_sort, value_inputs=("axisTensor",))
register_op("argSort", _infer_sort, None, value_inputs=("axisTensor",))
for _k in ("topK", "bottomK"):
    register_op(_k, _infer_topk, _grad_topk, value_inputs=("axisTensor", "kTensor"))
for _k in ("topKGradient", "bottomKGradient"):
    register_op(_k, _infer_topk, _grad_topk_gradient, value_inputs=("axisTensor", "kTensor"))
del _k


# ---------------------------------------------------------------------------- builders
def _either(kind, name, label, value, tensor_label, tensor):
    """(int or None, Tensor or None) from an `x=` / `xTensor=` pair (rule 10)."""
    from ..graph import Tensor

    if value is not None and tensor is not None:
        raise op_error(GraphError, kind, tensor_label, f"only one of {label} and "
                       f"{tensor_label}", "both", name)
    if isinstance(value, Tensor):
        return None, value
    if tensor is not None:
        if not isinstance(tensor, Tensor):
            raise op_error(GraphError, kind, tensor_label, "a Tensor", type(tensor).__name__,
                           name)
        return None, tensor
    return (None if value is None else check_int(kind, name, label, value)), None


def _flag(kind, name, label, v) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise op_error(GraphError, kind, label, "a bool", v, name)
    return bool(v)


class SortOps:
    """Graph methods of the sort and top-k families (mixed into `Graph`)."""

    def sort(self: Graph, tensor: Tensor, *, axis=None, descending: bool = False,
             axisTensor: Tensor | None = None, name: str | None = None) -> Tensor:
        """`tensor` sorted along `axis` (stable; NaN above +inf); same shape and type."""
        return self._sort("sort", tensor, axis, axisTensor, descending, name)

    def argSort(self: Graph, tensor: Tensor, *, axis=None, descending: bool = False,
                axisTensor: Tensor | None = None, name: str | None = None) -> Tensor:
        """The int32 positions that sort `tensor` along `axis` (stable: ties keep their
        order, descending too)."""
        return self._sort("argSort", tensor, axis, axisTensor, descending, name)

    def _sort(self: Graph, kind, tensor, axis, axisTensor, descending, name) -> Tensor:
        ax, at = _either(kind, name, "axis", axis, "axisTensor", axisTensor)
        if ax is None and at is None:
            raise op_error(GraphError, kind, "axis", "an int or an axis Tensor", None, name)
        inputs = [("tensor", tensor)] + ([("axisTensor", at)] if at is not None else [])
        a = SortAttrs(ax, _flag(kind, name, "descending", descending))
        return self._add(kind, inputs, a, name)[0]

    def topK(self: Graph, source: Tensor, *, axis=None, k=None, axisTensor=None, kTensor=None,
             name: str | None = None) -> list[Tensor]:
        """[values, indices (int32)]: the k largest of `source` along `axis` (the last axis
        when not given), largest first; ties: the lower position first. Shape [.., k, ..]."""
        return self._topk("topK", None, source, axis, k, axisTensor, kTensor, name)

    def bottomK(self: Graph, source: Tensor, *, axis=None, k=None, axisTensor=None,
                kTensor=None, name: str | None = None) -> list[Tensor]:
        """[values, indices (int32)]: the k smallest of `source` along `axis`, smallest first."""
        return self._topk("bottomK", None, source, axis, k, axisTensor, kTensor, name)

    def topKGradient(self: Graph, gradient: Tensor, *, source: Tensor | None = None,
                     input: Tensor | None = None, axis=None, k=None, axisTensor=None,
                     kTensor=None, name: str | None = None) -> Tensor:
        """The gradient of topK's values: `gradient` [.., k, ..] put back at the positions
        topK(source, axis, k) took its values from, zeros elsewhere; shape of `source`
        (Swift's `input:` label of the macOS 12 overloads is accepted too)."""
        return self._topk("topKGradient", gradient, self._source(
            "topKGradient", source, input, name), axis, k, axisTensor, kTensor, name)

    def bottomKGradient(self: Graph, gradient: Tensor, *, source: Tensor | None = None,
                        axis=None, k=None, axisTensor=None, kTensor=None,
                        name: str | None = None) -> Tensor:
        """The gradient of bottomK's values (as `topKGradient`)."""
        return self._topk("bottomKGradient", gradient, self._source(
            "bottomKGradient", source, None, name), axis, k, axisTensor, kTensor, name)

    @staticmethod
    def _source(kind, source, input_, name):
        if (source is None) == (input_ is None):
            raise op_error(GraphError, kind, "source", "exactly one of source= and input=",
                           "both" if source is not None else "neither", name)
        return source if source is not None else input_

    def _topk(self: Graph, kind, gradient, source, axis, k, axisTensor, kTensor, name):
        ax, at = _either(kind, name, "axis", axis, "axisTensor", axisTensor)
        kv, kt = _either(kind, name, "k", k, "kTensor", kTensor)
        if kv is None and kt is None:
            raise op_error(GraphError, kind, "k", "an int or a k Tensor", None, name)
        inputs = [("source", source)]
        if gradient is not None:
            inputs.insert(0, ("gradient", gradient))
        if at is not None:
            inputs.append(("axisTensor", at))
        if kt is not None:
            inputs.append(("kTensor", kt))
        a = SortAttrs(-1 if ax is None and at is None else ax,
                      kind.startswith("topK"), kv)
        outs = self._add(kind, inputs, a, name)
        return outs[0] if gradient is not None else outs
