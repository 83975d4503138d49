"""The sample-grid family (Apple's MPSGraphSampleGridOps.h): sampleGrid with samplingMode
(nearest uses roundPreferCeil; bilinear) or nearestRoundingMode.

    source (N, H, W, C) NHWC or (N, C, H, W) NCHW, coordinates (N, Ho, Wo, 2)
    -> (N, Ho, Wo, C) or (N, C, Ho, Wo)

Decisions where Apple's page is silent (docs/semantics.md): the coordinate pair is (x, y) =
(width, height), as torch.nn.functional.grid_sample's grid (Apple's PyTorch backend passes
that grid through); normalized coordinates map -1 / +1 to the centres of the edge pixels with
alignCorners, else to their outer edges (p = ((c + 1) n - 1) / 2); relativeCoordinates adds
the coordinates (in pixels, or normalized deltas scaled by n / 2, (n - 1) / 2 with
alignCorners) to the output pixel's centre mapped onto the input, (i + 0.5) n / n_out - 0.5.
Padding: constant (every tap outside reads constantValue), clampToEdge, reflect (about the
edge pixel centres) and symmetric (about the outer edges), as grid_sample's padding modes; the
other modes are refused, as Apple says. Gradient: to `source` (the adjoint scatter, kind
sampleGridGradient); none to the coordinates (documented).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import FLOATING, PaddingMode, ResizeMode, ResizeNearestRoundingMode, ShapedType
from ..types import TensorNamedDataLayout as L
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["SampleGridOps", "SampleGridAttrs"]

_PADS = (PaddingMode.constant, PaddingMode.reflect, PaddingMode.symmetric,
         PaddingMode.clampToEdge)
_ROUNDS = tuple(ResizeNearestRoundingMode)[:4]


@dataclass(frozen=True)
class SampleGridAttrs:
    layout: L
    normalize: bool
    relative: bool
    align: bool
    padding: PaddingMode
    mode: ResizeMode
    rounding: ResizeNearestRoundingMode
    constant: float


def _nhwc(shape, layout):
    return list(shape) if layout == L.NHWC else [shape[0], shape[2], shape[3], shape[1]]


def _check(ctx: InferContext, src_arg: str):
    a: SampleGridAttrs = ctx.attrs
    x, c = ctx.type_of(src_arg), ctx.type_of("coordinates")
    if x.dataType not in FLOATING:
        raise ctx.error(DataTypeError, src_arg, "float32, float16 or bFloat16", x.dataType)
    if c.dataType != x.dataType:
        raise ctx.error(DataTypeError, "coordinates", f"{x.dataType!r} (the source's)",
                        c.dataType)
    if x.shape is not None and len(x.shape) != 4:
        raise ctx.error(ShapeError, src_arg, f"a rank-4 tensor ({a.layout.name})",
                        f"shape {x.shape}")
    if c.shape is not None and (len(c.shape) != 4 or c.shape[3] not in (2, -1)):
        raise ctx.error(ShapeError, "coordinates", "a tensor (N, Hout, Wout, 2)",
                        f"shape {c.shape}")
    if x.shape is not None and c.shape is not None and x.shape[0] >= 0 and c.shape[0] >= 0 \
            and x.shape[0] != c.shape[0]:
        raise ctx.error(ShapeError, "coordinates", f"batch {x.shape[0]} (the source's)",
                        f"shape {c.shape}")
    return x, c


def _out(x, c, layout):
    n, h, w, ch = _nhwc(x.shape, layout)
    ho, wo = c.shape[1], c.shape[2]
    return [n, ho, wo, ch] if layout == L.NHWC else [n, ch, ho, wo]


def _infer(ctx: InferContext):
    x, c = _check(ctx, "source")
    if x.shape is None or c.shape is None:
        return [ShapedType(None if x.shape is None else [-1] * 4, x.dataType)], ctx.attrs
    n, h, w, ch = _nhwc(x.shape, ctx.attrs.layout)
    if (h == 0 or w == 0) and c.shape[1] * c.shape[2] > 0 and n * ch > 0 and \
            ctx.attrs.padding != PaddingMode.constant:
        raise ctx.error(ShapeError, "source", "non-empty H and W (only constant padding "
                        "samples an empty image)", f"shape {x.shape}")
    return [ShapedType(_out(x, c, ctx.attrs.layout), x.dataType)], ctx.attrs


def _infer_grad(ctx: InferContext):
    x, c = _check(ctx, "source")
    g = ctx.type_of("incomingGradient")
    if g.dataType != x.dataType:
        raise ctx.error(DataTypeError, "incomingGradient", f"{x.dataType!r}", g.dataType)
    return [ShapedType(x.shape, x.dataType)], ctx.attrs


def _grad(g, op, dys):
    return {"source": g._add("sampleGridGradient", [("incomingGradient", dys[0]),
                                                     ("source", op.input("source")),
                                                     ("coordinates", op.input("coordinates"))],
                             op.attrs, None)[0]}


register_op("sampleGrid", _infer, _grad)
register_op("sampleGridGradient", _infer_grad)


def _flag(op, name, arg, v):
    if not isinstance(v, (bool, np.bool_)):
        raise op_error(GraphError, op, arg, "a bool", v, name)
    return bool(v)


class SampleGridOps:
    """sampleGrid (mixed into `Graph`)."""

    def sampleGrid(self, source: Tensor, coordinateTensor: Tensor, *,
                   layout=L.NHWC, normalizeCoordinates=True, relativeCoordinates=False,
                   alignCorners=False, paddingMode=PaddingMode.constant, samplingMode=None,
                   nearestRoundingMode=None, constantValue=0.0, name: str | None = None
                   ) -> Tensor:
        """Sample `source` (NHWC (N, H, W, C) or NCHW) at `coordinateTensor` (N, Ho, Wo, 2)
        -> (N, Ho, Wo, C) / (N, C, Ho, Wo). `samplingMode` (ResizeMode; default bilinear) or
        `nearestRoundingMode` (nearest with roundPreferCeil, roundPreferFloor, ceil or floor),
        not both. Defaults (Swift requires every argument): NHWC, normalized absolute
        coordinates, alignCorners False, constant padding with 0."""
        op = "sampleGrid"
        try:
            layout = L(int(layout))
        except (TypeError, ValueError):
            layout = None
        if layout not in (L.NHWC, L.NCHW):
            raise op_error(GraphError, op, "layout", "TensorNamedDataLayout.NHWC or NCHW",
                           layout, name)
        if samplingMode is not None and nearestRoundingMode is not None:
            raise op_error(GraphError, op, "nearestRoundingMode", "only one of samplingMode "
                           "and nearestRoundingMode", "both", name)
        if nearestRoundingMode is not None:
            if isinstance(nearestRoundingMode, bool) or nearestRoundingMode not in [
                    int(r) for r in _ROUNDS]:
                raise op_error(GraphError, op, "nearestRoundingMode", "roundPreferCeil, "
                               "roundPreferFloor, ceil or floor", nearestRoundingMode, name)
            mode = ResizeMode.nearest
            rounding = ResizeNearestRoundingMode(int(nearestRoundingMode))
        else:
            sm = ResizeMode.bilinear if samplingMode is None else samplingMode
            if isinstance(sm, bool) or sm not in (0, 1):
                raise op_error(GraphError, op, "samplingMode", "a ResizeMode", sm, name)
            mode, rounding = ResizeMode(int(sm)), ResizeNearestRoundingMode.roundPreferCeil
        if isinstance(paddingMode, bool) or paddingMode not in [int(p) for p in _PADS]:
            raise op_error(GraphError, op, "paddingMode", "PaddingMode.constant, reflect, "
                           "symmetric or clampToEdge", paddingMode, name)
        if isinstance(constantValue, bool) or not isinstance(constantValue, (int, float)):
            raise op_error(GraphError, op, "constantValue", "a float", constantValue, name)
        attrs = SampleGridAttrs(layout, _flag(op, name, "normalizeCoordinates",
                                              normalizeCoordinates),
                                _flag(op, name, "relativeCoordinates", relativeCoordinates),
                                _flag(op, name, "alignCorners", alignCorners),
                                PaddingMode(int(paddingMode)), mode, rounding,
                                float(constantValue))
        return self._add(op, [("source", source), ("coordinates", coordinateTensor)], attrs,
                         name)[0]
