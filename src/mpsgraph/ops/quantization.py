"""The quantization family (Apple's MPSGraphQuantizationOps.h): quantize and dequantize, per
tensor, per axis and with groups, and the lookup-table forms of dequantize.

    quantize(x, scale=, zeroPoint=, dataType=, axis=)   float -> int8 / uInt8 / int4 / uInt4
        result = saturate(roundHalfToEven(x / scale + zeroPoint))
    dequantize(q, scale=, zeroPoint=, dataType=, axis=) int8 / uInt8 / int4 / uInt4 -> float
        result = scale * (q - zeroPoint)
    dequantize(q, LUTTensor=lut)          uInt8 / uInt4 q [..] -> lut[g(..), q]       [..]
    dequantize(q, LUTTensor=lut, axis=a)  -> lut[g(..), q, i_a] with a new result axis a of
                                           size lut.shape[-1]

`scale` and `zeroPoint` are each a Python number or a Tensor (Swift's `scaleTensor:` /
`zeroPointTensor:` overloads; those labels are accepted too). With `axis`, a tensor scale or zero
point is a scalar or 1-D of size x.shape[axis]. Without `axis` (Apple's "groups support"
overloads) a tensor scale / zero point has x's rank (or fewer dimensions, right-aligned) and
each of its dimensions is 1, x's, or a divisor of x's: consecutive blocks of x.shape[d] / s
elements share one value. LUT groups likewise: the LUT's leading dimensions (at most the last 3
of q's; 2 with `axis`) each divide q's matching trailing dimension. Arithmetic runs in float32
(half results round once). Decisions in docs/semantics.md ("Resize, FFT, attention and
quantization decisions"): ties round to even, NaN quantizes to 0, results saturate, no
gradients (Apple defines none).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import FLOATING, DataType, ShapedType
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["QuantizationOps", "QuantAttrs"]

QTYPES = (DataType.int8, DataType.uInt8, DataType.int4, DataType.uInt4)
LUT_INDEX = {DataType.uInt8: 256, DataType.uInt4: 16}
_Q_TEXT = "int8, uInt8, int4 or uInt4"
_F_TEXT = "float32, float16 or bFloat16"
_NUMERIC_PARAM = FLOATING + (DataType.int8, DataType.uInt8, DataType.int16, DataType.int32,
                             DataType.int64, DataType.uInt16, DataType.uInt32, DataType.int4,
                             DataType.uInt4)


@dataclass(frozen=True)
class QuantAttrs:
    dataType: DataType
    axis: int | None
    scale: float | None  # None: the scale input
    zeroPoint: float | None  # None: the zeroPoint input (absent input and None: 0)


@dataclass(frozen=True)
class QuantKernelAttrs:
    dataType: DataType
    axis: int | None  # non-negative
    scale: float | None
    zeroPoint: float | None
    groups_scale: tuple[int, ...] | None  # per-dimension block sizes (groups form)
    groups_zero: tuple[int, ...] | None


def _param(ctx: InferContext, arg: str, shape, axis) -> tuple[int, ...] | None:
    """Check a tensor scale / zero point; the block sizes per dimension for the groups form."""
    t = ctx.type_of(arg)
    if t is None:
        return None
    if t.dataType not in _NUMERIC_PARAM:
        raise ctx.error(DataTypeError, arg, f"a {_F_TEXT} or integer tensor", t.dataType)
    if t.shape is None or shape is None:
        return None
    s = list(t.shape)
    if axis is not None:
        n = shape[axis]
        if len(s) > 1 or (len(s) == 1 and s[0] >= 0 and n >= 0 and s[0] not in (1, n)):
            raise ctx.error(ShapeError, arg, f"a scalar or a 1-D tensor of size {n} "
                            f"(dimension {axis} of the tensor {shape})", f"shape {s}")
        return None
    if len(s) > len(shape):
        raise ctx.error(ShapeError, arg, f"at most rank {len(shape)} (the tensor's {shape})",
                        f"shape {s}")
    s = [1] * (len(shape) - len(s)) + s
    blocks = []
    for d, (n, m) in enumerate(zip(shape, s)):
        if n < 0 or m < 0:
            return None
        if m == 1:
            blocks.append(max(n, 1))
        elif m == 0 and n == 0:
            blocks.append(1)
        elif m == 0 or n % m:
            raise ctx.error(ShapeError, arg, f"dimension {d} of size 1 or a divisor of {n} "
                            f"(groups of the tensor {shape})", f"shape {list(t.shape)}")
        else:
            blocks.append(n // m)
    return tuple(blocks)


def _rule(kind: str):
    def infer(ctx: InferContext):
        a: QuantAttrs = ctx.attrs
        t = ctx.type_of("tensor")
        src_ok, src_text = ((FLOATING, _F_TEXT) if kind == "quantize" else (QTYPES, _Q_TEXT))
        dst_ok, dst_text = ((QTYPES, _Q_TEXT) if kind == "quantize" else (FLOATING, _F_TEXT))
        if t.dataType not in src_ok:
            raise ctx.error(DataTypeError, "tensor", src_text, t.dataType)
        if a.dataType not in dst_ok:
            raise ctx.error(DataTypeError, "dataType", dst_text, a.dataType)
        shape = t.shape
        axis = a.axis
        if axis is not None and shape is not None:
            r = len(shape)
            if not -r <= axis < r:
                raise ctx.error(ShapeError, "axis", f"an axis in [-{r}, {r})", axis)
            axis %= r
        gs = _param(ctx, "scale", shape, axis)
        gz = _param(ctx, "zeroPoint", shape, axis)
        attrs = None
        if shape is not None and all(d >= 0 for d in shape):
            attrs = QuantKernelAttrs(a.dataType, axis, a.scale, a.zeroPoint, gs, gz)
        return [ShapedType(shape, a.dataType)], attrs
    return infer


@dataclass(frozen=True)
class LUTAttrs:
    axis: int | None


@dataclass(frozen=True)
class LUTKernelAttrs:
    axis: int | None
    blocks: tuple[int, ...]  # block size of each group dimension (trailing dims of q)


def _infer_lut(ctx: InferContext):
    a: LUTAttrs = ctx.attrs
    t, lut = ctx.type_of("tensor"), ctx.type_of("LUTTensor")
    if t.dataType not in LUT_INDEX:
        raise ctx.error(DataTypeError, "tensor", "uInt8 or uInt4 (indices into the table)",
                        t.dataType)
    if lut.dataType not in _NUMERIC_PARAM:
        raise ctx.error(DataTypeError, "LUTTensor", "a floating-point or integer table",
                        lut.dataType)
    k = LUT_INDEX[t.dataType]
    extra = 0 if a.axis is None else 1
    max_groups = 3 - extra
    if t.shape is None or lut.shape is None:
        return [ShapedType(None, lut.dataType)], None
    ls = list(lut.shape)
    if len(ls) < 1 + extra or (ls[-1 - extra] >= 0 and ls[-1 - extra] != k):
        where = "last" if extra == 0 else "second-to-last"
        raise ctx.error(ShapeError, "LUTTensor", f"a table whose {where} dimension has {k} "
                        f"entries ({t.dataType.name} indices)", f"shape {ls}")
    groups = ls[:len(ls) - 1 - extra]
    if len(groups) > min(max_groups, len(t.shape)):
        raise ctx.error(ShapeError, "LUTTensor", f"at most {min(max_groups, len(t.shape))} "
                        f"group dimensions (the last of the tensor {t.shape})", f"shape {ls}")
    blocks = []
    for n, m in zip(t.shape[len(t.shape) - len(groups):], groups):
        if n < 0 or m < 0:
            blocks = None
            break
        if m == 0 or (n % m and not (n == 0)):
            raise ctx.error(ShapeError, "LUTTensor", f"group dimensions dividing the tensor's "
                            f"trailing dimensions {list(t.shape)}", f"shape {ls}")
        blocks.append(n // m if n else 1)
    out = list(t.shape)
    axis = a.axis
    if axis is not None:
        r = len(out) + 1
        if not -r <= axis < r:
            raise ctx.error(ShapeError, "axis", f"an axis in [-{r}, {r}) (of the result, rank "
                            f"{r})", axis)
        axis %= r
        out.insert(axis, ls[-1])
    attrs = None
    if blocks is not None and all(d >= 0 for d in out):
        attrs = LUTKernelAttrs(axis, tuple(blocks))
    return [ShapedType(out, lut.dataType)], attrs


register_op("quantize", _rule("quantize"))
register_op("dequantize", _rule("dequantize"))
register_op("dequantizeLUT", _infer_lut)


def _number(op, name, arg, v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise op_error(GraphError, op, arg, "a number or a Tensor", v, name)
    return float(v)


class QuantizationOps:
    """Graph methods of the quantization family (mixed into `Graph`)."""

    def _quant(self, kind, tensor, scale, scaleTensor, zeroPoint, zeroPointTensor, dataType,
               axis, name):
        from ..graph import Tensor

        for a, b, va, vb in (("scale", "scaleTensor", scale, scaleTensor),
                             ("zeroPoint", "zeroPointTensor", zeroPoint, zeroPointTensor)):
            if va is not None and vb is not None:
                raise op_error(GraphError, kind, b, f"only one of {a} and {b}", "both", name)
        scale = scaleTensor if scaleTensor is not None else scale
        zeroPoint = zeroPointTensor if zeroPointTensor is not None else zeroPoint
        if scale is None:
            raise op_error(GraphError, kind, "scale", "a number or a Tensor", None, name)
        if dataType is None or not isinstance(dataType, DataType):
            raise op_error(DataTypeError, kind, "dataType", "a DataType", dataType, name)
        if axis is not None:
            if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
                raise op_error(GraphError, kind, "axis", "an int", axis, name)
            axis = int(axis)
        st = scale if isinstance(scale, Tensor) else None
        zt = zeroPoint if isinstance(zeroPoint, Tensor) else None
        sv = None if st is not None else _number(kind, name, "scale", scale)
        zv = None if zt is not None else (0.0 if zeroPoint is None else
                                          _number(kind, name, "zeroPoint", zeroPoint))
        if sv is not None and axis is not None:
            raise op_error(GraphError, kind, "axis", "None with a scalar scale (axis is for a "
                           "scale tensor)", axis, name)
        return self._add(kind, [("tensor", tensor), ("scale", st), ("zeroPoint", zt)],
                         QuantAttrs(dataType, axis, sv, zv), name,
                         optional=("scale", "zeroPoint"))[0]

    def quantize(self, tensor: Tensor, scale=None, zeroPoint=None, *, dataType=None, axis=None,
                 scaleTensor=None, zeroPointTensor=None, name: str | None = None) -> Tensor:
        """Float [..] -> dataType (int8, uInt8, int4, uInt4) [..]:
        saturate(round-half-even(tensor / scale + zeroPoint)); scale / zeroPoint numbers or
        tensors (per `axis`, or groups without axis)."""
        return self._quant("quantize", tensor, scale, scaleTensor, zeroPoint, zeroPointTensor,
                           dataType, axis, name)

    def dequantize(self, tensor: Tensor, scale=None, zeroPoint=None, *, dataType=None,
                   axis=None, scaleTensor=None, zeroPointTensor=None, LUTTensor=None,
                   name: str | None = None) -> Tensor:
        """int8 / uInt8 / int4 / uInt4 [..] -> float dataType [..]: scale * (tensor -
        zeroPoint). With `LUTTensor=` (uInt8 / uInt4 indices): a table lookup (see module
        docstring; `axis=` writes the table's vectors along a new result axis)."""
        if LUTTensor is not None:
            if any(v is not None for v in (scale, zeroPoint, scaleTensor, zeroPointTensor,
                                           dataType)):
                raise op_error(GraphError, "dequantize", "LUTTensor", "no scale, zeroPoint or "
                               "dataType with a lookup table", "both", name)
            if axis is not None and (isinstance(axis, (bool, np.bool_))
                                     or not isinstance(axis, numbers.Integral)):
                raise op_error(GraphError, "dequantize", "axis", "an int", axis, name)
            return self._add("dequantizeLUT", [("tensor", tensor), ("LUTTensor", LUTTensor)],
                             LUTAttrs(None if axis is None else int(axis)), name)[0]
        return self._quant("dequantize", tensor, scale, scaleTensor, zeroPoint,
                           zeroPointTensor, dataType, axis, name)
