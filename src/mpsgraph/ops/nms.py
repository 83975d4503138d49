"""The non-maximum suppression family (Apple's MPSGraphNonMaximumSuppressionOps.h):
nonMaximumSuppression, with or without classIndicesTensor.

    boxes [N, B, 4] float32, scores [N, B, K] float32 (with classIndices [N, B] int32: K = 1)
    -> int32 [N, B * K]: the kept candidates' indices c = b * K + k (box b = c // K, class
       k = c % K, or classIndices[n, b]) in descending score order, padded with -1.

Apple's page does not say what the result holds; this is the decision (docs/semantics.md):
candidates with score > scoreThreshold are visited in descending score (ties: lower index
first); one is kept when its IoU with every kept candidate (of the same class when
perClassSuppression) is <= iouThreshold. Boxes are read in `coordinateMode` (corners or
centres, height or width first; a box's corners may come in either order); IoU of boxes whose
union is empty is 0. The greedy pass is sequential over the B * K candidates (vectorised over
the batch and the kept set), as every NMS is.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import DataType, NonMaximumSuppressionCoordinateMode, ShapedType
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["NonMaximumSuppressionOps", "NMSAttrs"]


@dataclass(frozen=True)
class NMSAttrs:
    iou: float
    score: float
    perClass: bool
    mode: NonMaximumSuppressionCoordinateMode


def _infer(ctx: InferContext):
    b, s, c = ctx.type_of("boxes"), ctx.type_of("scores"), ctx.type_of("classIndices")
    for arg, t in (("boxes", b), ("scores", s)):
        if t.dataType != DataType.float32:
            raise ctx.error(DataTypeError, arg, "float32", t.dataType)
        if t.shape is not None and len(t.shape) != 3:
            raise ctx.error(ShapeError, arg, "a rank-3 tensor", f"shape {t.shape}")
    if b.shape is not None and b.shape[2] not in (4, -1):
        raise ctx.error(ShapeError, "boxes", "shape [N, B, 4]", f"shape {b.shape}")
    if c is not None:
        if c.dataType != DataType.int32:
            raise ctx.error(DataTypeError, "classIndices", "int32", c.dataType)
        if c.shape is not None and len(c.shape) != 2:
            raise ctx.error(ShapeError, "classIndices", "shape [N, B]", f"shape {c.shape}")
    if b.shape is None or s.shape is None:
        return [ShapedType([-1, -1], DataType.int32)], ctx.attrs
    if c is not None and s.shape[2] not in (1, -1):
        raise ctx.error(ShapeError, "scores", "shape [N, B, 1] with classIndicesTensor",
                        f"shape {s.shape}")
    for arg, t in (("scores", s), ("classIndices", c)):
        if t is not None and t.shape is not None and any(
                x >= 0 and y >= 0 and x != y for x, y in zip(t.shape[:2], b.shape[:2])):
            raise ctx.error(ShapeError, arg, f"[N, B] = {b.shape[:2]} leading (the boxes')",
                            f"shape {t.shape}")
    n, nb, k = b.shape[0], b.shape[1], s.shape[2]
    m = nb * k if nb >= 0 and k >= 0 else -1
    return [ShapedType([n, m], DataType.int32)], ctx.attrs


register_op("nonMaximumSuppression", _infer)


def _real(op, name, arg, v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or v != v:
        raise op_error(GraphError, op, arg, "a float", v, name)
    return float(v)


class NonMaximumSuppressionOps:
    """nonMaximumSuppression (mixed into `Graph`)."""

    def nonMaximumSuppression(self, boxesTensor: Tensor, scoresTensor: Tensor, *,
                              classIndicesTensor: Tensor | None = None, iouThreshold=0.5,
                              scoreThreshold=float("-inf"), perClassSuppression=False,
                              coordinateMode=NonMaximumSuppressionCoordinateMode
                              .cornersHeightFirst, name: str | None = None) -> Tensor:
        """Greedy NMS: boxes [N, B, 4], scores [N, B, K] (or [N, B, 1] with
        classIndicesTensor [N, B]) -> int32 [N, B * K] kept candidate indices (b * K + k) by
        descending score, -1 padded. Swift's `iouThreshold:` (ObjC `IOUThreshold:`)."""
        op = "nonMaximumSuppression"
        iou = _real(op, name, "iouThreshold", iouThreshold)
        if not 0.0 <= iou <= 1.0:
            raise op_error(GraphError, op, "iouThreshold", "a value in [0, 1]", iou, name)
        sc = _real(op, name, "scoreThreshold", scoreThreshold)
        if not isinstance(perClassSuppression, (bool, np.bool_)):
            raise op_error(GraphError, op, "perClassSuppression", "a bool",
                           perClassSuppression, name)
        M = NonMaximumSuppressionCoordinateMode
        if isinstance(coordinateMode, bool) or coordinateMode not in [int(m) for m in M]:
            raise op_error(GraphError, op, "coordinateMode", "a "
                           "NonMaximumSuppressionCoordinateMode", coordinateMode, name)
        attrs = NMSAttrs(iou, sc, bool(perClassSuppression), M(int(coordinateMode)))
        return self._add(op, [("boxes", boxesTensor), ("scores", scoresTensor),
                              ("classIndices", classIndicesTensor)], attrs, name,
                         optional=("classIndices",))[0]
