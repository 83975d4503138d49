"""Argument checks shared by the shape rules of several op families."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import DataTypeError, ShapeError
from ..types import FLOATING, DataType, TensorNamedDataLayout
from ._registry import InferContext
from ._shape_math import UNKNOWN, to_canonical


def same_float_type(ctx: InferContext, args: Sequence[str]) -> DataType:
    """The one floating dataType (float32, float16 or bFloat16) of the given arguments; an
    absent optional argument is skipped. Raises DataTypeError naming the first offender."""
    dt = first = None
    for a in args:
        t = ctx.type_of(a)
        if t is None:
            continue
        if t.dataType not in FLOATING:
            raise ctx.error(DataTypeError, a, "float32, float16 or bFloat16", t.dataType)
        if dt is None:
            dt, first = t.dataType, a
        elif t.dataType != dt:
            raise ctx.error(DataTypeError, a, f"{dt!r} (the dataType of {first})", t.dataType)
    return dt


def rank4_canonical(ctx: InferContext, arg: str, layout: TensorNamedDataLayout) -> list[int]:
    """A rank-4 argument's shape in canonical order (NCHW data / OIHW weights); all UNKNOWN
    when unranked."""
    t = ctx.type_of(arg)
    if t.shape is None:
        return [UNKNOWN] * 4
    if len(t.shape) != 4:
        raise ctx.error(ShapeError, arg, f"a rank-4 tensor ({layout.name})",
                        f"rank {len(t.shape)} shape {t.shape}")
    return to_canonical(t.shape, layout)


def output_shape_value(ctx: InferContext, rank: int | None) -> list[int] | None:
    """The `outputShape` of a gradient op: the list attr (`ctx.attrs.output_shape`) or the
    int32 / int64 shape tensor `outputShape` (1-D, with `rank` elements when `rank` is given);
    None while the tensor's value is unknown (a fed or computed shape: checked at run time)."""
    if ctx.attrs.output_shape is not None:
        return list(ctx.attrs.output_shape)
    t = ctx.type_of("outputShape")
    if t.dataType not in (DataType.int32, DataType.int64):
        raise ctx.error(DataTypeError, "outputShape", "an int32 or int64 shape tensor",
                        t.dataType)
    if t.shape is not None and (len(t.shape) != 1 or (
            rank is not None and t.shape[0] not in (rank, UNKNOWN))):
        raise ctx.error(ShapeError, "outputShape", "a 1-D shape tensor" + (
            f" with {rank} elements" if rank is not None else ""), f"shape {t.shape}")
    v = ctx.value_of("outputShape")
    return None if v is None else [int(s) for s in np.asarray(v).reshape(-1)]
