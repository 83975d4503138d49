"""Argument checks shared by the shape rules of several op families."""

from __future__ import annotations

from collections.abc import Sequence

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
