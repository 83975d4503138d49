"""The resize family (Apple's MPSGraphResizeOps.h): resize, resizeNearest, resizeBilinear and
their gradient forms (the same Swift base names with a `withGradientTensor` first argument and
an `input=` keyword).

    images [..., H, ..., W, ...] -> the same shape with the resized axes set to `size`

Two registry kinds do all 22 Swift overloads: `resize` (forward) and `resizeWithGradient` (its
adjoint: the gradient of `input` given the gradient of the result). The forms:

- layout form (`layout=` NCHW, NHWC, CHW, HWC or HW): `size` is [newHeight, newWidth]; with
  `scaleOffsetTensor` a float tensor [scaleY, scaleX, offsetY, offsetX].
- rank form (no layout, Swift `resize(_:sizeTensor:mode:centerResult:alignCorners:name:)` and
  the scaleTensor / offsetTensor overloads): `size` has one entry per input axis, and every
  axis is resampled; `scale` / `offset` are float tensors [rank].

Source coordinates (per resized axis, input size I, output size O, output index d):
  direct (centerResult False):      s = d * I / O
  centred (centerResult True):      s = (d + 0.5) * I / O - 0.5
  alignCorners (centerResult ignored, as Apple says): s = d * (I - 1) / (O - 1)  (0 when O = 1)
  scale / offset:                   s = (d - offset) / scale  (Apple: dst = src * scale + offset)
Bilinear interpolates the two neighbours floor(s), floor(s) + 1 with weights from the fraction;
nearest rounds s by `nearestRoundingMode` (roundPreferCeil when Apple's `resize(mode: .nearest)`
is used). Coordinates outside [0, I - 1] are clamped to the edge (TensorFlow and PyTorch do the
same). See docs/semantics.md, "Resize, FFT, attention and quantization decisions".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import FLOATING, DataType, ResizeMode, ResizeNearestRoundingMode, ShapedType
from ..types import TensorNamedDataLayout as L
from ._registry import InferContext, register_op
from .shape import ShapeArgAttrs, _shape_arg, _split_shape

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["ResizeOps", "ResizeAttrs", "ResizeKernelAttrs", "LAYOUT_HW"]

# the (H, W) axes of each layout Apple accepts, and the rank it implies
LAYOUT_HW = {L.NCHW: (4, (2, 3)), L.NHWC: (4, (1, 2)), L.CHW: (3, (1, 2)), L.HWC: (3, (0, 1)),
             L.HW: (2, (0, 1))}
_SIZE_DTYPES = (DataType.int32, DataType.int64)
_FLOAT_TEXT = "float32, float16 or bFloat16"


@dataclass(frozen=True)
class ResizeAttrs:
    method: str  # the Swift base name called (resize / resizeNearest / resizeBilinear)
    mode: ResizeMode
    rounding: ResizeNearestRoundingMode
    centerResult: bool
    alignCorners: bool
    layout: L | None  # None: the rank form
    form: str  # "flags" | "scaleOffset" | "scaleAndOffset"
    size: ShapeArgAttrs | None = None  # forward only


@dataclass(frozen=True)
class ResizeKernelAttrs:
    """What the kernels get: per resized axis (axis, I, O, a, b) with s = a * d + b for the
    flags form (a, b None for the tensor forms, whose kernels read scale / offset at run time:
    `so_index` is the position of each axis's scale in the scale(Offset) vector)."""

    mode: ResizeMode
    rounding: ResizeNearestRoundingMode
    form: str
    axes: tuple[tuple[int, int, int, Any, Any], ...]
    so_index: tuple[int, ...]
    align: bool = False
    center: bool = False


def _axes_of(ctx: InferContext, arg: str, rank: int | None, layout: L | None
             ) -> tuple[int, ...] | None:
    if layout is None:
        return None if rank is None else tuple(range(rank))
    want, hw = LAYOUT_HW[layout]
    if rank is not None and rank != want:
        raise ctx.error(ShapeError, arg, f"a rank-{want} tensor (layout {layout.name})",
                        f"rank {rank}")
    return hw


def _check_float_vector(ctx: InferContext, arg: str, n: int | None) -> None:
    t = ctx.type_of(arg)
    if t.dataType not in FLOATING:
        raise ctx.error(DataTypeError, arg, f"a {_FLOAT_TEXT} tensor", t.dataType)
    if t.shape is not None and (len(t.shape) != 1 or (n is not None and t.shape[0] >= 0
                                                      and t.shape[0] != n)):
        raise ctx.error(ShapeError, arg, f"a 1-D tensor of {n} entries" if n is not None
                        else "a 1-D tensor", f"shape {t.shape}")


def _coords(ctx: InferContext, a: ResizeAttrs, axes, in_shape, out_shape):
    """The kernel attrs once every size is known."""
    specs = []
    for ax in axes:
        i, o = in_shape[ax], out_shape[ax]
        if i == 0 and o > 0:
            raise ctx.error(ShapeError, "images", f"a non-empty axis {ax} to sample from "
                            f"(resized to {o})", f"shape {list(in_shape)}")
        if a.form != "flags":
            specs.append((ax, i, o, None, None))
            continue
        if a.alignCorners:
            if i == o:
                continue
            specs.append((ax, i, o, None, None))  # exact rational coordinates in the kernel
        elif i == o:
            continue  # direct and centred coordinates are the identity when I == O
        else:
            specs.append((ax, i, o, None, None))
    if a.form == "scaleOffset":
        so = (0, 1)
    elif a.form == "scaleAndOffset":
        so = tuple(s[0] for s in specs)
    else:
        so = ()
    return ResizeKernelAttrs(a.mode, a.rounding, a.form, tuple(specs), so, a.alignCorners,
                             a.centerResult)


def _check_form_inputs(ctx: InferContext, a: ResizeAttrs, rank: int | None) -> None:
    if a.form == "scaleOffset":
        _check_float_vector(ctx, "scaleOffset", 4)
    elif a.form == "scaleAndOffset":
        _check_float_vector(ctx, "scale", rank)
        _check_float_vector(ctx, "offset", rank)


def _infer_resize(ctx: InferContext):
    a: ResizeAttrs = ctx.attrs
    t = ctx.type_of("images")
    if t.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "images", _FLOAT_TEXT, t.dataType)
    rank = None if t.shape is None else len(t.shape)
    axes = _axes_of(ctx, "images", rank, a.layout)
    _check_form_inputs(ctx, a, rank)
    target, _ = _shape_arg(ctx, "sizeTensor", a.size, "size")
    want = 2 if a.layout is not None else rank
    if target is not None and want is not None and len(target) != want:
        what = "[newHeight, newWidth]" if a.layout is not None else f"{want} sizes (one per axis)"
        raise ctx.error(ShapeError, "size", what, target)
    if any(s < -1 for s in (target or ())) or (a.size is not None and a.size.shape is not None
                                                and any(s < 0 for s in a.size.shape)):
        raise ctx.error(ShapeError, "size", "sizes >= 0", target)
    if t.shape is None or target is None:
        return [ShapedType(None if t.shape is None else [-1] * rank, t.dataType)], None
    out = list(t.shape)
    for ax, s in zip(axes, target):
        out[ax] = s
    attrs = None
    if all(d >= 0 for d in out) and all(d >= 0 for d in t.shape):
        attrs = _coords(ctx, a, axes, t.shape, out)
    return [ShapedType(out, t.dataType)], attrs


def _infer_resizeWithGradient(ctx: InferContext):
    a: ResizeAttrs = ctx.attrs
    gt, it = ctx.type_of("gradient"), ctx.type_of("input")
    if gt.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "gradient", _FLOAT_TEXT, gt.dataType)
    if it.dataType != gt.dataType:
        raise ctx.error(DataTypeError, "input", f"{gt.dataType!r} (the gradient's dataType)",
                        it.dataType)
    rank = None if it.shape is None else len(it.shape)
    axes = _axes_of(ctx, "input", rank, a.layout)
    if gt.shape is not None and rank is not None:
        if len(gt.shape) != rank:
            raise ctx.error(ShapeError, "gradient", f"rank {rank} (the input's)",
                            f"shape {gt.shape}")
        for d in range(rank):
            if d not in axes and gt.shape[d] >= 0 and it.shape[d] >= 0 and \
                    gt.shape[d] != it.shape[d]:
                raise ctx.error(ShapeError, "gradient", f"dimension {d} of size {it.shape[d]} "
                                f"(the input's {it.shape}; only the resized axes may differ)",
                                f"shape {gt.shape}")
    _check_form_inputs(ctx, a, rank)
    attrs = None
    if it.shape is not None and gt.shape is not None and all(
            d >= 0 for d in list(it.shape) + list(gt.shape)):
        attrs = _coords(ctx, a, axes, it.shape, gt.shape)
    return [ShapedType(it.shape, it.dataType)], attrs


def _grad_resize(g, op, dys):
    a: ResizeAttrs = op.attrs
    x = op.input("images")
    kw = _grad_kwargs(op)
    return {"images": g._add("resizeWithGradient", [("gradient", dys[0]), ("input", x)] + kw,
                             ResizeAttrs(a.method, a.mode, a.rounding, a.centerResult,
                                         a.alignCorners, a.layout, a.form), None,
                             optional=("scaleOffset", "scale", "offset"))[0]}


def _grad_kwargs(op):
    return [(n, op.input(n)) for n in ("scaleOffset", "scale", "offset")]


def _grad_resizeWithGradient(g, op, dys):
    # the op is linear in `gradient`: its adjoint is the forward resize to gradient's shape
    a: ResizeAttrs = op.attrs
    gr = op.input("gradient")
    if gr.shape is None or any(d < 0 for d in gr.shape):
        raise UnsupportedError(f"{op.kind}: the second-order gradient needs the static shape "
                               f"of the gradient ({gr.shape})")
    axes = LAYOUT_HW[a.layout][1] if a.layout is not None else range(len(gr.shape))
    size, st = ShapeArgAttrs(tuple(gr.shape[i] for i in axes)), None
    out = g._add("resize", [("images", dys[0]), ("sizeTensor", st)] + _grad_kwargs(op),
                 ResizeAttrs(a.method, a.mode, a.rounding, a.centerResult, a.alignCorners,
                             a.layout, a.form, size), None,
                 optional=("sizeTensor", "scaleOffset", "scale", "offset"))[0]
    return {"gradient": out}


register_op("resize", _infer_resize, _grad_resize, value_inputs=("sizeTensor",))
register_op("resizeWithGradient", _infer_resizeWithGradient, _grad_resizeWithGradient)


def _bool(method, name, arg, v):
    if not isinstance(v, (bool, np.bool_)):
        raise op_error(GraphError, method, arg, "a bool", v, name)
    return bool(v)


def _enum(method, name, arg, v, enum):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or \
            int(v) not in enum._value2member_map_:
        raise op_error(GraphError, method, arg, f"a {enum.__name__} ("
                       f"{', '.join(m.name for m in enum)})", v, name)
    return enum(int(v))


class ResizeOps:
    """Graph methods of the resize family (mixed into `Graph`)."""

    def _resize(self, method: str, first: Tensor, size, sizeTensor, mode, rounding,
                centerResult, alignCorners, layout, scaleOffsetTensor, scale, offset, input,
                name):
        mode = _enum(method, name, "mode", mode, ResizeMode)
        rounding = _enum(method, name, "nearestRoundingMode", rounding,
                         ResizeNearestRoundingMode)
        if layout is not None:
            layout = _enum(method, name, "layout", layout, L)
            if layout not in LAYOUT_HW:
                raise op_error(GraphError, method, "layout", "NCHW, NHWC, CHW, HWC or HW",
                               layout, name)
        if scaleOffsetTensor is not None:
            if scale is not None or offset is not None:
                raise op_error(GraphError, method, "scaleOffsetTensor", "either scaleOffsetTensor"
                               " or scale and offset", "both", name)
            if layout is None:
                raise op_error(GraphError, method, "layout", "a layout (scaleOffsetTensor "
                               "holds [scaleY, scaleX, offsetY, offsetX])", None, name)
            form = "scaleOffset"
        elif scale is not None or offset is not None:
            if scale is None or offset is None:
                raise op_error(GraphError, method, "scale" if scale is None else "offset",
                               "a Tensor (scale and offset come together)", None, name)
            if layout is not None:
                raise op_error(GraphError, method, "layout", "None (scale and offset have one "
                               "entry per axis)", layout, name)
            form = "scaleAndOffset"
        else:
            form = "flags"
        cr = _bool(method, name, "centerResult", True if centerResult is None else centerResult)
        ac = _bool(method, name, "alignCorners", False if alignCorners is None else alignCorners)
        if form != "flags" and (centerResult is not None or alignCorners is not None):
            raise op_error(GraphError, method, "centerResult" if centerResult is not None else
                           "alignCorners", "None with scale / offset tensors", True, name)
        extra = [("scaleOffset", scaleOffsetTensor), ("scale", scale), ("offset", offset)]
        opt = ("sizeTensor", "scaleOffset", "scale", "offset")
        if input is not None:
            if size is not None or sizeTensor is not None:
                raise op_error(GraphError, method, "size", "None in the gradient form "
                               "(the size is the gradient's)", size, name)
            attrs = ResizeAttrs(method, mode, rounding, cr, ac, layout, form)
            return self._add("resizeWithGradient", [("gradient", first), ("input", input)]
                             + extra, attrs, name, optional=opt)[0]
        if size is None and sizeTensor is None:
            raise op_error(GraphError, method, "size", "a list of ints or a size Tensor", None,
                           name)
        sattrs, st = _split_shape(method, name, size, sizeTensor, "size", "sizeTensor")
        attrs = ResizeAttrs(method, mode, rounding, cr, ac, layout, form, sattrs)
        return self._add("resize", [("images", first), ("sizeTensor", st)] + extra, attrs,
                         name, optional=opt)[0]

    def resize(self, imagesTensor: Tensor, size=None, *, mode=None, centerResult=None,
               alignCorners=None, layout=None, sizeTensor=None, scaleOffsetTensor=None,
               scaleTensor=None, scale=None, offsetTenor=None, offsetTensor=None, input=None,
               name: str | None = None) -> Tensor:
        """Resample images [..] to `size` (nearest with roundPreferCeil, or bilinear).

        Forward: `resize(images, size=[newH, newW] or a 1-D int tensor, mode=, centerResult=,
        alignCorners=, layout=)`; without `layout` the size has one entry per axis. With
        `scaleOffsetTensor=` [scaleY, scaleX, offsetY, offsetX] (layout form) or
        `scaleTensor=`/`offsetTenor=` (rank form; Apple's misspelt label, `offsetTensor=` also
        accepted) the coordinates are src = (dst - offset) / scale. Gradient form (Swift
        `resize(withGradientTensor:input:...)`): `resize(gradient, input=x, ...)` returns the
        gradient of x ([x's shape]). centerResult defaults to True, alignCorners to False."""
        if mode is None:
            raise op_error(GraphError, "resize", "mode", "a ResizeMode", None, name)
        rounding = ResizeNearestRoundingMode.roundPreferCeil
        return self._resize("resize", imagesTensor, size, sizeTensor, mode, rounding,
                            centerResult, alignCorners, layout, scaleOffsetTensor,
                            _one("resize", name, "scaleTensor", scaleTensor, "scale", scale),
                            _one("resize", name, "offsetTenor", offsetTenor, "offsetTensor",
                                 offsetTensor), input, name)

    def resizeNearest(self, imagesTensor: Tensor, size=None, *,
                      nearestRoundingMode=ResizeNearestRoundingMode.roundPreferCeil,
                      centerResult=None, alignCorners=None, layout=None, sizeTensor=None,
                      scaleOffsetTensor=None, scaleTensor=None, scale=None, offsetTensor=None,
                      input=None, name: str | None = None) -> Tensor:
        """`resize` with ResizeMode.nearest and a rounding mode (default roundPreferCeil);
        the same forms, including the gradient form `resizeNearest(gradient, input=x, ...)`."""
        return self._resize("resizeNearest", imagesTensor, size, sizeTensor, ResizeMode.nearest,
                            nearestRoundingMode, centerResult, alignCorners, layout,
                            scaleOffsetTensor, _one("resizeNearest", name, "scaleTensor",
                                                    scaleTensor, "scale", scale),
                            offsetTensor, input, name)

    def resizeBilinear(self, imagesTensor: Tensor, size=None, *, centerResult=None,
                       alignCorners=None, layout=None, sizeTensor=None, scaleOffsetTensor=None,
                       scaleTensor=None, scale=None, offsetTensor=None, input=None,
                       name: str | None = None) -> Tensor:
        """`resize` with ResizeMode.bilinear; the same forms, including the gradient form
        `resizeBilinear(gradient, input=x, ...)`."""
        return self._resize("resizeBilinear", imagesTensor, size, sizeTensor,
                            ResizeMode.bilinear, ResizeNearestRoundingMode.roundPreferCeil,
                            centerResult, alignCorners, layout, scaleOffsetTensor,
                            _one("resizeBilinear", name, "scaleTensor", scaleTensor, "scale",
                                 scale), offsetTensor, input, name)


def _one(method, name, a, va, b, vb):
    if va is not None and vb is not None:
        raise op_error(GraphError, method, a, f"only one of {a} and {b}", "both", name)
    return va if va is not None else vb
