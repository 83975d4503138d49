"""The stencil family (Apple's MPSGraphStencilOps.h): stencil(withSourceTensor:weightsTensor:
descriptor:name:).

    source [..., d0, d1, d2, d3] (rank >= 4), weights [k0, k1, k2, k3]
    y[..., i] = reduction_{j in window} ( x[..., i * stride + j * dilation - padBefore] * w[j] )

over the last four dimensions, with StencilOpDescriptor's reductionMode (sum, product, min, max;
argumentMin / argumentMax give the int32 row-major index of the chosen window element, first of
ties), strides, dilationRates, paddingStyle (explicit: explicitPadding [before0, after0, ...];
TF_VALID; TF_SAME; ONNX_SAME_LOWER; explicitOffset: no padding, the first window starts at
`offsets`) and boundaryMode for the padded positions (zero, constant = paddingConstant,
clampToEdge, reflect, symmetric, periodic, antiPeriodic = periodic with the sign flipped on
each wrap). Output size per dimension: floor((n + padBefore + padAfter - e) / s) + 1 with
e = (k - 1) * dilation + 1 (explicitOffset: n - offset in place of n + pads). No gradient
(Apple documents none). Decisions in docs/semantics.md.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..descriptors import StencilOpDescriptor
from ..errors import DataTypeError, DescriptorError, ShapeError, op_error
from ..types import FLOATING, DataType, PaddingMode, PaddingStyle, ReductionMode, ShapedType
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["StencilOps", "StencilKernelAttrs"]


@dataclass(frozen=True)
class StencilKernelAttrs:
    reduction: ReductionMode
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]  # (before, after) per window dimension (may be < 0)
    starts: tuple[int, ...]  # explicitOffset: the first window's start; else 0
    out: tuple[int, ...]
    boundary: PaddingMode
    constant: float


def _ints(op, name, prop, v, n, minimum):
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != n or not all(
            isinstance(i, numbers.Integral) and not isinstance(i, (bool, np.bool_))
            and i >= minimum for i in v):
        raise op_error(DescriptorError, op, f"descriptor.{prop}", f"{n} ints >= {minimum}", v,
                       name)
    return tuple(int(i) for i in v)


def _enum(op, name, prop, v, enum):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or \
            int(v) not in enum._value2member_map_:
        raise op_error(DescriptorError, op, f"descriptor.{prop}", f"a {enum.__name__}", v, name)
    return enum(int(v))


def validated(d, op, name):
    if not isinstance(d, StencilOpDescriptor):
        raise op_error(DescriptorError, op, "descriptor", "a StencilOpDescriptor",
                       type(d).__name__, name)
    d = dataclasses.replace(d)
    d.reductionMode = _enum(op, name, "reductionMode", d.reductionMode, ReductionMode)
    d.offsets = _ints(op, name, "offsets", d.offsets, 4, 0)
    d.strides = _ints(op, name, "strides", d.strides, 4, 1)
    d.dilationRates = _ints(op, name, "dilationRates", d.dilationRates, 4, 1)
    d.explicitPadding = _ints(op, name, "explicitPadding", d.explicitPadding, 8, 0)
    d.boundaryMode = _enum(op, name, "boundaryMode", d.boundaryMode, PaddingMode)
    d.paddingStyle = _enum(op, name, "paddingStyle", d.paddingStyle, PaddingStyle)
    c = d.paddingConstant
    if isinstance(c, (bool, np.bool_)) or not isinstance(c, numbers.Real):
        raise op_error(DescriptorError, op, "descriptor.paddingConstant", "a float", c, name)
    d.paddingConstant = float(c)
    return d


def _infer(ctx: InferContext):
    d: StencilOpDescriptor = ctx.attrs
    x, w = ctx.type_of("source"), ctx.type_of("weights")
    if x.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "source", "float32, float16 or bFloat16", x.dataType)
    if w.dataType != x.dataType:
        raise ctx.error(DataTypeError, "weights", f"{x.dataType!r} (the source's)", w.dataType)
    if x.shape is not None and len(x.shape) < 4:
        raise ctx.error(ShapeError, "source", "a tensor of rank >= 4", f"shape {x.shape}")
    if w.shape is not None and len(w.shape) != 4:
        raise ctx.error(ShapeError, "weights", "a rank-4 window [k0, k1, k2, k3]",
                        f"shape {w.shape}")
    arg = ReductionMode.argumentMin, ReductionMode.argumentMax
    out_dt = DataType.int32 if d.reductionMode in arg else x.dataType
    if x.shape is None or w.shape is None:
        return [ShapedType(None, out_dt)], None
    lead, dims = list(x.shape[:-4]), list(x.shape[-4:])
    if any(n < 0 for n in dims + list(w.shape)):
        return [ShapedType(lead + [-1] * 4, out_dt)], None
    out, pads, starts = [], [], []
    st = d.paddingStyle
    for a in range(4):
        n, k, s, dl = dims[a], w.shape[a], d.strides[a], d.dilationRates[a]
        if k == 0:
            raise ctx.error(ShapeError, "weights", "a window of size >= 1 on every dimension",
                            f"shape {w.shape}")
        e = (k - 1) * dl + 1
        start = 0
        if st == PaddingStyle.explicit:
            b, af = d.explicitPadding[2 * a], d.explicitPadding[2 * a + 1]
        elif st == PaddingStyle.TF_VALID:
            b = af = 0
        elif st == PaddingStyle.explicitOffset:
            b = af = 0
            start = d.offsets[a]
        else:  # TF_SAME / ONNX_SAME_LOWER: out = ceil(n / s)
            o = -(-n // s)
            total = max((o - 1) * s + e - n, 0)
            b = total // 2 if st == PaddingStyle.TF_SAME else total - total // 2
            af = total - b
        span = n + b + af - start
        o = (span - e) // s + 1 if span >= e else 0
        out.append(o)
        pads.append((b, af))
        starts.append(start)
    if any(n == 0 for n in dims) and any(o > 0 for o in out) and d.boundaryMode not in (
            PaddingMode.zero, PaddingMode.constant):
        raise ctx.error(ShapeError, "source", f"non-empty window dimensions (boundaryMode "
                        f"{d.boundaryMode!r} reads the source)", f"shape {x.shape}")
    attrs = StencilKernelAttrs(d.reductionMode, d.strides, d.dilationRates, tuple(pads),
                               tuple(starts), tuple(out), d.boundaryMode, d.paddingConstant)
    return [ShapedType(lead + out, out_dt)], attrs


register_op("stencil", _infer)


class StencilOps:
    """stencil (mixed into `Graph`)."""

    def stencil(self, source: Tensor, weightsTensor: Tensor | None = None, *,
                descriptor: StencilOpDescriptor | None = None, name: str | None = None
                ) -> Tensor:
        """Weighted window reduction over the last 4 dimensions of `source` [..., d0..d3]
        with `weightsTensor` [k0..k3] -> [..., o0..o3] (int32 for the argument reductions).
        `descriptor` None: StencilOpDescriptor()'s defaults."""
        op = "stencil"
        d = validated(StencilOpDescriptor() if descriptor is None else descriptor, op, name)
        if weightsTensor is None:
            raise op_error(ShapeError, op, "weightsTensor", "a rank-4 Tensor", None, name)
        return self._add(op, [("source", source), ("weights", weightsTensor)], d, name)[0]


