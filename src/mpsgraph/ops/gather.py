"""The gather and scatter families (Apple's MPSGraphGatherOps.h and MPSGraphScatterNDOps.h).

Letters: U the rank of the gathered tensor, B `batchDimensions`, Q the rank of the indices,
K `indices.shape[-1]` (ND forms), n the size of the indexed axis.

  gather(updatesTensor [.., n, ..], indicesTensor [b.., q..], axis, batchDimensions)
      res[p.., i.., s..] = updates[p.., indices[p_0..p_{B-1}, i..], s..]
      res.shape = updates.shape[:axis] + indices.shape[B:] + updates.shape[axis+1:]
      (B <= axis; updates.shape[:B] == indices.shape[:B]; TensorFlow's tf.gather(batch_dims))
  gatherND(updatesTensor, indicesTensor [b.., q.., K], batchDimensions)
      res[b.., q.., s..] = updates[b.., indices[b.., q.., 0], ..., indices[b.., q.., K-1], s..]
      res.shape = indices.shape[:-1] + updates.shape[B+K:]      (tf.gather_nd(batch_dims))
  gatherAlongAxis(axis, updates, indices)            (torch.gather, np.take_along_axis)
      res[.., i, ..] = updates[.., indices[.., i, ..], ..]; res.shape = indices.shape
      (indices.shape equals updates.shape except at axis)

The scatters are their inverses: `updates` is laid out like a gather's result, and each
element goes to the position the gather would have read it from, combined with the value
there by `mode` (ScatterMode: add, sub, mul, div, min, max, set). The WithData forms start
from `data` (the result has its shape and type); the others from zeros of `shape`:

  scatter(updates, indices, shape, axis, mode) / scatterWithData(data, updates, ...)
  scatterND(updates, indices, shape, batchDimensions, mode=add) / scatterNDWithData(data, ...)
  scatterAlongAxis(axis, data= or shape=, updates, indices, mode)   (updates.shape ==
      indices.shape; data.shape equals it except at axis)

Duplicate destinations combine in a fixed order on every backend: add / sub add (subtract)
the sum of the updates, mul multiplies by their product, div divides by their product, min /
max take the extremum (a NaN among them wins), set keeps the LAST update in row-major order
of `updates`. Adds are deterministic (no atomics: the torch backend's sort-based
`index_put_(accumulate=True)`). Half types accumulate in float32 and round once.

Indices (int32 or int64). Gather / gatherND / scatter / scatterND: an index in [-n, n) is
valid, a negative one counts from the end (Python's and torch's rule); any other index is an
error (Apple's pages give it no meaning): a ShapeError when the op is built, for constant
indices, else a GraphError when the op runs (the torch backend then reads one flag back from
the device, so such an op is not captured in a CUDA graph). Along-axis forms follow Apple's
pages: an index outside [0, n) gathers a 0 and its scatter update is skipped.

`axisTensor` (the ...Tensor forms): a scalar int32 / int64 tensor; negative values wrap.

Gradients: gather -> scatter-add of the incoming gradient (duplicates summed); scatter with
add / sub / set -> the incoming gradient gathered at the same positions (negated for sub;
with set every duplicate update receives its destination's gradient, as TensorFlow's
tensor_scatter_nd_update) and, for the data, the incoming gradient (zeroed where set wrote);
mul / div / min / max have no gradient rule (UnsupportedError).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import DataType, ScatterMode, ShapedType
from ._registry import InferContext, register_op
from .activation import check_int
from .arithmetic import ANY_TYPE, NUMERIC

if TYPE_CHECKING:
    from ..graph import Graph, Tensor

__all__ = ["GatherOps", "GatherAttrs", "INDEX_TYPES"]

INDEX_TYPES = (DataType.int32, DataType.int64)
_UNKNOWN = -1


@dataclass(frozen=True)
class GatherAttrs:
    """What a gather / scatter kernel needs, fully resolved.

    form: "axis" (gather / scatter), "nd" (gatherND / scatterND) or "along" (...AlongAxis).
    axis >= 0 (None: the axisTensor's value, read by the shape rule at run time); batch = B;
    shape: the result shape of a scatter; mode: the ScatterMode (scatters); check: the kernel
    must check the index values (they are not constants checked at build time); kind / name /
    label: for the run-time error message."""

    form: str
    axis: int | None = 0
    batch: int = 0
    shape: tuple[int, ...] | None = None
    mode: ScatterMode | None = None
    check: bool = True
    kind: str = ""
    name: str | None = None
    label: str = "indices"
    fill: int = 0  # the start value of a scatter without data (a backend's internal domain)
    negative: bool = True  # indices may be negative (False: constant ones, all >= 0)


# the Swift labels of each op's inputs: (data, updates, indices)
_LABELS = {
    "gather": (None, "updatesTensor", "indicesTensor"),
    "gatherND": (None, "updatesTensor", "indicesTensor"),
    "gatherAlongAxis": (None, "updates", "indices"),
    "gatherAlongAxisTensor": (None, "updates", "indices"),
    "scatter": (None, "updatesTensor", "indices"),
    "scatterWithData": ("dataTensor", "updates", "indices"),
    "scatterND": (None, "updatesTensor", "indicesTensor"),
    "scatterNDWithData": ("dataTensor", "updates", "indices"),
    "scatterAlongAxis": ("data", "updates", "indices"),
    "scatterAlongAxisTensor": ("data", "updates", "indices"),
}
_FORM = {"gather": "axis", "gatherND": "nd", "gatherAlongAxis": "along",
         "gatherAlongAxisTensor": "along", "scatter": "axis", "scatterWithData": "axis",
         "scatterND": "nd", "scatterNDWithData": "nd", "scatterAlongAxis": "along",
         "scatterAlongAxisTensor": "along"}


def _eq(a: int, b: int) -> bool:
    return a == b or a == _UNKNOWN or b == _UNKNOWN


def _index_type(ctx: InferContext, label: str) -> ShapedType:
    t = ctx.type_of(label)
    if t.dataType not in INDEX_TYPES:
        raise ctx.error(DataTypeError, label, "int32 or int64 indices", t.dataType)
    return t


def _axis_value(ctx: InferContext, a: GatherAttrs, rank: int | None, what: str) -> int | None:
    """The resolved axis (>= 0), or None while an axisTensor's value or the rank is unknown."""
    label, axis = "axis", a.axis
    if "axisTensor" in ctx.input_names:
        label = "axisTensor"
        at = ctx.type_of("axisTensor")
        if at.dataType not in INDEX_TYPES:
            raise ctx.error(DataTypeError, label, "an int32 or int64 axis tensor", at.dataType)
        if at.shape is not None and all(d >= 0 for d in at.shape) and \
                int(np.prod(at.shape)) != 1:
            raise ctx.error(ShapeError, label, "a scalar axis tensor", f"shape {at.shape}")
        v = ctx.value_of("axisTensor")
        if v is None:
            return None
        axis = int(np.asarray(v).reshape(-1)[0])
    if rank is None:
        return None
    if not -rank <= axis < rank:
        raise ctx.error(ShapeError, label, f"an axis in [-{rank}, {rank}) (the rank of {what})",
                        axis)
    return axis % rank


def _infer(ctx: InferContext):
    a: GatherAttrs = ctx.attrs
    kind = ctx.kind
    dlab, ulab, ilab = _LABELS[kind]
    scatter = kind.startswith("scatter")
    ut = ctx.type_of(ulab)
    it = _index_type(ctx, ilab)
    dt_ = ctx.type_of(dlab) if dlab in ctx.input_names else None
    allowed = ANY_TYPE if not scatter or a.mode == ScatterMode.set else NUMERIC
    text = ("a floating-point, integer or bool type" if allowed is ANY_TYPE else
            "a floating-point or integer type (bool takes only ScatterMode.set)")
    if ut.dataType not in allowed:
        raise ctx.error(DataTypeError, ulab, text, ut.dataType)
    if dt_ is not None and dt_.dataType != ut.dataType:
        raise ctx.error(DataTypeError, ulab, f"{dt_.dataType!r} (the dataType of {dlab})",
                        ut.dataType)
    out_dt = ut.dataType
    a = replace(a, kind=kind, name=ctx.name, label=ilab)
    # the "full" tensor: the gathered one, or the scatter's result (data or shape)
    if scatter:
        full = dt_.shape if dt_ is not None else (list(a.shape) if a.shape is not None else None)
        part = ut.shape
        flab = dlab if dt_ is not None else "shape"
    else:
        full, part, flab = ut.shape, None, ulab
    ish = it.shape
    if a.form == "along":
        axis = _axis_value(ctx, a, None if full is None else len(full), flab)
        if scatter:
            if part is not None and ish is not None and (
                    len(part) != len(ish) or not all(map(_eq, part, ish))):
                raise ctx.error(ShapeError, ulab, f"the shape of {ilab} {ish}", part)
            other = ish if ish is not None else part
        else:
            other = ish
        if full is not None and other is not None:
            if len(other) != len(full):
                raise ctx.error(ShapeError, ilab, f"rank {len(full)} (the rank of {flab})",
                                f"rank {len(other)} shape {other}")
            for d, (x, y) in enumerate(zip(full, other)):
                if axis is not None and d != axis and not _eq(x, y):
                    raise ctx.error(ShapeError, ilab, f"the shape of {flab} {full} except at "
                                    f"axis {axis}", other)
        res = full if scatter else ish
        a = replace(a, axis=axis)
        return [ShapedType(res, out_dt)], (a if axis is not None else None)
    if full is None or ish is None or (scatter and part is None):
        return [ShapedType(full if scatter else None, out_dt)], None
    B = a.batch
    U, Q = len(full), len(ish)
    if not 0 <= B <= Q:
        raise ctx.error(ShapeError, "batchDimensions", f"a count in [0, {Q}] (the rank of "
                        f"{ilab})", B)
    for d in range(B):
        if d >= U or not _eq(full[d], ish[d]):
            raise ctx.error(ShapeError, ilab, f"batch dimensions {full[:B]} (the first {B} of "
                            f"{flab} {full})", ish)
    if a.form == "axis":
        axis = _axis_value(ctx, a, U, flab)
        if axis < B:
            raise ctx.error(ShapeError, "axis", f"an axis >= batchDimensions ({B})", a.axis)
        res = list(full[:axis]) + list(ish[B:]) + list(full[axis + 1:])
        a = replace(a, axis=axis)
    else:
        if Q - B < 1:
            raise ctx.error(ShapeError, ilab, f"a rank > batchDimensions ({B}): the last axis "
                            "holds the index vectors", f"rank {Q} shape {ish}")
        K = ish[-1]
        if K == _UNKNOWN:
            return [ShapedType(full if scatter else None, out_dt)], None
        if K > U - B:
            raise ctx.error(ShapeError, ilab, f"index vectors of length <= {U - B} (the rank of "
                            f"{flab} {full} minus batchDimensions)", f"length {K}")
        res = list(ish[:-1]) + list(full[B + K:])
    if scatter:
        if len(part) != len(res) or not all(map(_eq, part, res)):
            raise ctx.error(ShapeError, ulab, f"shape {res} (from {flab} {full} and {ilab} "
                            f"{ish})", part)
        return [ShapedType(full, out_dt)], replace(a, shape=tuple(full))
    return [ShapedType(res, out_dt)], a


# ---------------------------------------------------------------------------- gradients
def _static(kind: str, t: Tensor) -> list[int]:
    if t.shape is None or any(d < 0 for d in t.shape):
        raise op_error(UnsupportedError, kind, "gradient", "a static shape of the gathered "
                       "tensor", t.shape)
    return list(t.shape)


def _grad_gather(g, op, dys):
    a: GatherAttrs = op.attrs
    kind = op.kind
    u, idx = op.inputs[0], op.inputs[1]
    dy = dys[0]
    if a.form == "axis":
        at = op.kernel_attrs
        axis = at.axis if at is not None else a.axis
        attrs = GatherAttrs("axis", axis % len(u.shape), a.batch, tuple(_static(kind, u)),
                            ScatterMode.add, a.check)
        res = g._add("scatter", [("updatesTensor", dy), ("indices", idx)], attrs)[0]
    elif a.form == "nd":
        res = g.scatterND(dy, indicesTensor=idx, shape=_static(kind, u),
                          batchDimensions=a.batch, mode=ScatterMode.add)
    else:
        axis = op.input("axisTensor") if "axisTensor" in op.input_names else a.axis
        res = g._scatter_along("scatterAlongAxis", axis, None, dy, idx, _static(kind, u),
                               ScatterMode.add, None)
    return {op.input_names[0]: res}


def _grad_scatter(g, op, dys):
    a: GatherAttrs = op.attrs
    kind = op.kind
    dlab, ulab, ilab = _LABELS[kind]
    mode = a.mode
    if mode not in (ScatterMode.add, ScatterMode.sub, ScatterMode.set):
        raise op_error(UnsupportedError, kind, "mode", "add, sub or set (the modes with a "
                       "gradient rule)", mode, op.name)
    dy = dys[0]
    idx, upd = op.input(ilab), op.input(ulab)
    if a.form == "axis":
        axis = op.kernel_attrs.axis if op.kernel_attrs is not None else a.axis
        du = g._add("gather", [("updatesTensor", dy), ("indicesTensor", idx)],
                    GatherAttrs("axis", axis, a.batch, check=a.check))[0]
    elif a.form == "nd":
        du = g.gatherND(dy, indicesTensor=idx, batchDimensions=a.batch)
    else:
        axis = op.input("axisTensor") if "axisTensor" in op.input_names else a.axis
        du = g._gather_along("gatherAlongAxis", axis, dy, idx, None)
    out = {ulab: g.negative(du) if mode == ScatterMode.sub else du}
    if dlab in op.input_names and op.input(dlab) is not None:
        dd = dy
        if mode == ScatterMode.set:
            zeros = g.constant(0.0, shape=_static(kind, upd), dataType=dy.dataType)
            if a.form == "axis":
                dd = g._add(kind, [(dlab, dy), (ulab, zeros), (ilab, idx)],
                            replace(a, shape=None))[0]
            elif a.form == "nd":
                dd = g.scatterNDWithData(dy, updates=zeros, indices=idx,
                                         batchDimensions=a.batch, mode=ScatterMode.set)
            else:
                axis = op.input("axisTensor") if "axisTensor" in op.input_names else a.axis
                dd = g._scatter_along("scatterAlongAxis", axis, dy, zeros, idx, None,
                                      ScatterMode.set, None)
        out[dlab] = dd
    return out


def _host_reads(op) -> bool:
    return op.attrs.form != "along" and op.attrs.check  # the run-time index check


for _k in _LABELS:
    register_op(_k, _infer, _grad_scatter if _k.startswith("scatter") else _grad_gather,
                value_inputs=("axisTensor",) if _k.endswith("Tensor") else (),
                host_reads=_host_reads)
del _k


# ---------------------------------------------------------------------------- builders
def _mode(kind: str, name: str | None, mode: Any) -> ScatterMode:
    try:
        if isinstance(mode, (bool, np.bool_)) or mode is None:
            raise ValueError
        return ScatterMode(mode)
    except (ValueError, TypeError):
        raise op_error(GraphError, kind, "mode", "a ScatterMode (add, sub, mul, div, min, max, "
                       "set)", mode, name) from None


def _shape_arg(kind: str, name: str | None, shape: Any) -> tuple[int, ...]:
    ok = not isinstance(shape, (str, bytes)) and hasattr(shape, "__iter__")
    if ok:
        shape = list(shape)
        ok = all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
                 and s >= 0 for s in shape)
    if not ok:
        raise op_error(ShapeError, kind, "shape", "a static shape (a list of ints >= 0)", shape,
                       name)
    return tuple(int(s) for s in shape)


def check_constant_indices(kind: str, name: str | None, label: str, idx: Tensor,
                           bound: Any, wrap: bool = True) -> bool:
    """Check a constant `idx` against `bound` (the size n of the indexed axis, or an array of
    sizes along the last axis of ND indices) at build time; returns True when the kernel must
    check at run time instead (the indices are not a constant or a size is unknown)."""
    if idx.operation.kind != "constant":
        return True
    v = np.asarray(idx.operation.attrs).astype(np.int64)
    n = np.asarray(bound, np.int64)
    if np.any(n < 0):
        return True
    lo = -n if wrap else np.zeros_like(n)
    bad = (v < lo) | (v >= n)
    if bad.any():
        pos = tuple(int(p) for p in np.argwhere(bad)[0])
        nn = int(np.broadcast_to(n, v.shape)[pos]) if v.ndim else int(n)
        raise op_error(ShapeError, kind, label, f"indices in [{-nn if wrap else 0}, {nn}) (the "
                       "size of the indexed axis)", f"{int(v[pos])} at position {list(pos)}",
                       name)
    return False


class GatherOps:
    """Graph methods of the gather and scatter families (mixed into `Graph`)."""

    # ------------------------------------------------------------------ gathers
    def gather(self: Graph, updatesTensor: Tensor, *, indicesTensor: Tensor, axis: int,
               batchDimensions: int = 0, name: str | None = None) -> Tensor:
        """Gather slices along `axis`: updates [.., n, ..], indices [b.., q..] ->
        updates.shape[:axis] + indices.shape[B:] + updates.shape[axis+1:] (module docstring).
        Indices in [-n, n); negative ones count from the end."""
        kind = "gather"
        a = GatherAttrs("axis", check_int(kind, name, "axis", axis),
                        check_int(kind, name, "batchDimensions", batchDimensions))
        out = self._add(kind, [("updatesTensor", updatesTensor),
                               ("indicesTensor", indicesTensor)], a, name)[0]
        k = out.operation.kernel_attrs
        n = updatesTensor.shape[k.axis] if k is not None else -1
        self._constant_check(out, "indicesTensor", indicesTensor, n)
        return out

    def gatherND(self: Graph, updatesTensor: Tensor, *, indicesTensor: Tensor,
                 batchDimensions: int = 0, name: str | None = None) -> Tensor:
        """Gather slices by index vectors: updates [b.., d_0..d_{K-1}, s..], indices
        [b.., q.., K] -> [b.., q.., s..] (module docstring). Each component in [-d_k, d_k)."""
        kind = "gatherND"
        a = GatherAttrs("nd", None, check_int(kind, name, "batchDimensions", batchDimensions))
        out = self._add(kind, [("updatesTensor", updatesTensor),
                               ("indicesTensor", indicesTensor)], a, name)[0]
        self._nd_constant_check(out, a, updatesTensor.shape, indicesTensor, "indicesTensor")
        return out

    def _constant_check(self: Graph, out: Tensor, label: str, idx: Tensor, bound) -> None:
        """Check constant indices now (the op is taken out of the graph again if they are
        out of range); valid ones need no run-time check."""
        op = out.operation
        try:
            run_time = check_constant_indices(op.kind, op.name, label, idx, bound)
        except GraphError:
            self._ops.remove(op)
            raise
        if not run_time and op.kernel_attrs is not None:
            neg = bool((np.asarray(idx.operation.attrs) < 0).any())
            op.attrs = replace(op.attrs, check=False, negative=neg)
            op.kernel_attrs = replace(op.kernel_attrs, check=False, negative=neg)

    def _nd_constant_check(self, out: Tensor, a: GatherAttrs, full, idx: Tensor,
                           label: str) -> None:
        if out.operation.kernel_attrs is None or idx.operation.kind != "constant":
            return
        K = idx.shape[-1]
        self._constant_check(out, label, idx, full[a.batch:a.batch + K])

    def gatherAlongAxis(self: Graph, axis: int, *, updates: Tensor, indices: Tensor,
                        name: str | None = None) -> Tensor:
        """res[.., i, ..] = updates[.., indices[.., i, ..], ..] along `axis` (negative wraps);
        indices.shape equals updates.shape except at axis and is the result's shape. An index
        outside [0, n) gathers 0 (Apple's page)."""
        return self._gather_along("gatherAlongAxis", axis, updates, indices, name)

    def gatherAlongAxisTensor(self: Graph, axisTensor: Tensor, *, updates: Tensor,
                              indices: Tensor, name: str | None = None) -> Tensor:
        """`gatherAlongAxis` with the axis given as a scalar int32 / int64 tensor."""
        return self._gather_along("gatherAlongAxisTensor", axisTensor, updates, indices, name)

    def _gather_along(self: Graph, kind: str, axis, updates, indices, name) -> Tensor:
        from ..graph import Tensor

        inputs = [("updates", updates), ("indices", indices)]
        if isinstance(axis, Tensor):
            if kind == "gatherAlongAxis":  # an axis given as a Tensor (API.md rule 10)
                kind = "gatherAlongAxisTensor"
            inputs.append(("axisTensor", axis))
            a = GatherAttrs("along", None, check=False)
        else:
            if kind.endswith("Tensor"):
                raise op_error(GraphError, kind, "axisTensor", "a Tensor", type(axis).__name__,
                               name)
            a = GatherAttrs("along", check_int(kind, name, "axis", axis), check=False)
        return self._add(kind, inputs, a, name)[0]

    # ------------------------------------------------------------------ scatters
    def scatter(self: Graph, updatesTensor: Tensor, *, indices: Tensor, shape, axis: int,
                mode: ScatterMode, name: str | None = None) -> Tensor:
        """Scatter slices of `updatesTensor` into zeros of `shape` along `axis` (the inverse
        of `gather`: updates.shape = shape[:axis] + indices.shape + shape[axis+1:]),
        combining with `mode`. Indices in [-n, n)."""
        kind = "scatter"
        a = GatherAttrs("axis", check_int(kind, name, "axis", axis), 0,
                        _shape_arg(kind, name, shape), _mode(kind, name, mode))
        return self._scatter_axis(kind, a, [("updatesTensor", updatesTensor),
                                            ("indices", indices)], indices, name)

    def scatterWithData(self: Graph, dataTensor: Tensor, *, updates: Tensor, indices: Tensor,
                        axis: int, mode: ScatterMode, name: str | None = None) -> Tensor:
        """`scatter` onto `dataTensor` (its shape and values are the starting result)."""
        kind = "scatterWithData"
        a = GatherAttrs("axis", check_int(kind, name, "axis", axis), 0, None,
                        _mode(kind, name, mode))
        return self._scatter_axis(kind, a, [("dataTensor", dataTensor), ("updates", updates),
                                            ("indices", indices)], indices, name)

    def _scatter_axis(self: Graph, kind, a, inputs, indices, name) -> Tensor:
        out = self._add(kind, inputs, a, name)[0]
        k = out.operation.kernel_attrs
        n = out.shape[k.axis] if k is not None else -1
        self._constant_check(out, "indices", indices, n)
        return out

    def scatterND(self: Graph, updatesTensor: Tensor, *, indicesTensor: Tensor, shape,
                  batchDimensions: int = 0, mode: ScatterMode = ScatterMode.add,
                  name: str | None = None) -> Tensor:
        """Scatter by index vectors into zeros of `shape` (the inverse of `gatherND`:
        updates.shape = indices.shape[:-1] + shape[B+K:]), combining with `mode` (add when
        not given, as the Swift overload without `mode:`)."""
        kind = "scatterND"
        a = GatherAttrs("nd", None, check_int(kind, name, "batchDimensions", batchDimensions),
                        _shape_arg(kind, name, shape), _mode(kind, name, mode))
        out = self._add(kind, [("updatesTensor", updatesTensor),
                               ("indicesTensor", indicesTensor)], a, name)[0]
        self._nd_constant_check(out, a, list(a.shape), indicesTensor, "indicesTensor")
        return out

    def scatterNDWithData(self: Graph, dataTensor: Tensor, *, updates: Tensor, indices: Tensor,
                          batchDimensions: int = 0, mode: ScatterMode = ScatterMode.add,
                          name: str | None = None) -> Tensor:
        """`scatterND` onto `dataTensor` (its shape and values are the starting result)."""
        kind = "scatterNDWithData"
        a = GatherAttrs("nd", None, check_int(kind, name, "batchDimensions", batchDimensions),
                        None, _mode(kind, name, mode))
        out = self._add(kind, [("dataTensor", dataTensor), ("updates", updates),
                               ("indices", indices)], a, name)[0]
        self._nd_constant_check(out, a, dataTensor.shape, indices, "indices")
        return out

    def scatterAlongAxis(self: Graph, axis: int, *, data: Tensor | None = None,
                         updates: Tensor, indices: Tensor, shape=None,
                         mode: ScatterMode, name: str | None = None) -> Tensor:
        """Scatter `updates` (shape == indices.shape) along `axis` onto `data` (its shape
        equals updates' except at axis), or onto zeros of `shape`: res[.., indices[.., i, ..],
        ..] (mode) updates[.., i, ..]. An index outside [0, n) is skipped (Apple's page).
        Exactly one of `data` and `shape` (the two Swift overloads)."""
        return self._scatter_along("scatterAlongAxis", axis, data, updates, indices, shape,
                                   mode, name)

    def scatterAlongAxisTensor(self: Graph, axisTensor: Tensor, *, data: Tensor | None = None,
                               updates: Tensor, indices: Tensor, shape=None,
                               mode: ScatterMode, name: str | None = None) -> Tensor:
        """`scatterAlongAxis` with the axis given as a scalar int32 / int64 tensor."""
        return self._scatter_along("scatterAlongAxisTensor", axisTensor, data, updates,
                                   indices, shape, mode, name)

    def _scatter_along(self: Graph, kind, axis, data, updates, indices, shape, mode,
                       name) -> Tensor:
        from ..graph import Tensor

        if (data is None) == (shape is None):
            raise op_error(GraphError, kind, "data", "exactly one of data= and shape=",
                           "both" if data is not None else "neither", name)
        m = _mode(kind, name, mode)
        shp = _shape_arg(kind, name, shape) if shape is not None else None
        inputs = [("updates", updates), ("indices", indices)]
        if data is not None:
            inputs.insert(0, ("data", data))
        if isinstance(axis, Tensor):
            if kind == "scatterAlongAxis":  # an axis given as a Tensor (API.md rule 10)
                kind = "scatterAlongAxisTensor"
            inputs.append(("axisTensor", axis))
            a = GatherAttrs("along", None, 0, shp, m, check=False)
        else:
            if kind.endswith("Tensor"):
                raise op_error(GraphError, kind, "axisTensor", "a Tensor", type(axis).__name__,
                               name)
            a = GatherAttrs("along", check_int(kind, name, "axis", axis), 0, shp, m,
                            check=False)
        return self._add(kind, inputs, a, name)[0]
