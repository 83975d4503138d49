"""The convolution family (Apple's MPSGraphConvolutionOps.h): convolution2D,
convolution2DDataGradient, convolution2DWeightsGradient.

Shapes, with g = descriptor.groups, Cg = C / g (canonical NCHW data, OIHW weights; every
user-visible shape is in the descriptor's `dataLayout` / `weightsLayout`):

    convolution2D                 source [N, C, H, W], weights [O, Cg, kH, kW] -> [N, O, Ho, Wo]
    convolution2DDataGradient     incomingGradient [N, O, Ho, Wo], weights [O, Cg, kH, kW],
                                  outputShape = source shape [N, C, H, W] -> [N, C, H, W]
    convolution2DWeightsGradient  incomingGradient [N, O, Ho, Wo], source [N, C, H, W],
                                  outputShape = WEIGHTS shape [O, Cg, kH, kW] -> that shape

Ho, Wo follow docs/semantics.md ("Spatial arithmetic"). Decisions where Apple's documentation is
silent or wrong (all in docs/semantics.md): the weights gradient's `outputShape` is the weights
shape; the data gradient's `outputShape` must reproduce the incoming gradient's spatial size
(MPSGraph does not check; we refuse a mismatch); `explicitOffset` is refused; a kernel of spatial
size 0 is refused.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..descriptors import Convolution2DOpDescriptor
from ..errors import GraphError, ShapeError
from ..types import PaddingStyle, ShapedType, TensorNamedDataLayout
from ._checks import output_shape_value
from ._checks import rank4_canonical as _rank4
from ._checks import same_float_type as _check_float
from ._registry import InferContext, register_op
from ._shape_math import UNKNOWN, conv_output_size, from_canonical, known, to_canonical

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ConvolutionOps", "Conv2DAttrs", "layout_hint", "read_as", "with_layout_hint"]


@dataclass(frozen=True)
class Conv2DAttrs:
    """Fully resolved parameters for kernels: no kernel ever sees a PaddingStyle."""

    stride: tuple[int, int]  # (y, x)
    dilation: tuple[int, int]  # (y, x)
    pads: tuple[int, int, int, int]  # (top, bottom, left, right)
    groups: int
    data_layout: TensorNamedDataLayout  # NCHW | NHWC
    weights_layout: TensorNamedDataLayout  # OIHW | HWIO
    out_shape: tuple[int, ...]  # the op's result shape, in its user layout


@dataclass(frozen=True)
class _ConvOpAttrs:
    descriptor: Convolution2DOpDescriptor  # the op's private, validated copy
    output_shape: tuple[int, ...] | None  # outputShape given as a list (gradient ops)


# ---------------------------------------------------------------------------- layouts
def read_as(arg: str, shape, layout: TensorNamedDataLayout, letter: str) -> str:
    """Where the descriptor's layout reads dimension `letter` (C, H, W of data; O, I of
    weights) of `arg`: "axis 3 of source [1, 8, 8, 3], read as C by dataLayout NHWC"."""
    prop = "dataLayout" if layout in (TensorNamedDataLayout.NCHW, TensorNamedDataLayout.NHWC) \
        else "weightsLayout"
    return f"axis {layout.name.index(letter)} of {arg} {shape}, read as {letter} by {prop} " \
           f"{layout.name}"


_OTHER_LAYOUT = {
    TensorNamedDataLayout.NCHW: TensorNamedDataLayout.NHWC,
    TensorNamedDataLayout.NHWC: TensorNamedDataLayout.NCHW,
    TensorNamedDataLayout.OIHW: TensorNamedDataLayout.HWIO,
    TensorNamedDataLayout.HWIO: TensorNamedDataLayout.OIHW,
}


def layout_hint(ctx: InferContext, infer, nouns: dict[str, tuple[str, str]]) -> str | None:
    """After a ShapeError of `infer`: if the op's shapes fit with the other dataLayout (or
    weightsLayout, or both), the question to ask ("is the source NCHW? set
    dataLayout=TensorNamedDataLayout.NCHW"), else None. `nouns` maps each layout property of
    the op's descriptor to (verb, the arguments it governs): ("is", "the source")."""
    d = ctx.attrs.descriptor

    def fits(props: list[str]) -> bool:
        d2 = dataclasses.replace(d, **{p: _OTHER_LAYOUT[getattr(d, p)] for p in props})
        ctx2 = dataclasses.replace(ctx, attrs=dataclasses.replace(ctx.attrs, descriptor=d2))
        try:
            infer(ctx2)
        except GraphError:
            return False
        return True

    def ask(props: list[str]) -> str:
        alt = {p: _OTHER_LAYOUT[getattr(d, p)].name for p in props}
        verb = nouns[props[0]][0] if len(props) == 1 else "are"
        what = " and ".join(f"{nouns[p][1]} {alt[p]}" for p in props)
        sets = " and ".join(f"{p}=TensorNamedDataLayout.{alt[p]}" for p in props)
        return f"{verb} {what}? set {sets}"

    props = [p for p in nouns if getattr(d, p) in _OTHER_LAYOUT]
    singles = [ask([p]) for p in props if fits([p])]
    if singles:
        return "; or ".join(singles)
    if len(props) > 1 and fits(props):
        return ask(props)
    return None


def with_layout_hint(infer, nouns: dict[str, str]):
    """`infer` whose ShapeErrors end with `layout_hint`'s question when another layout fits."""

    def wrapped(ctx: InferContext):
        try:
            return infer(ctx)
        except ShapeError as e:
            hint = layout_hint(ctx, infer, nouns)
            if hint is None:
                raise
            raise type(e)(f"{e}; {hint}") from None

    wrapped.__name__ = wrapped.__qualname__ = infer.__name__
    wrapped.__doc__ = infer.__doc__
    return wrapped


# ---------------------------------------------------------------------------- shape rules
def _output_shape_arg(ctx: InferContext, rank_of: str, layout: TensorNamedDataLayout
                      ) -> list[int]:
    """outputShape from the list attr or the shape tensor (value known or not), canonical."""
    shape = output_shape_value(ctx, 4)
    if shape is None:
        return [UNKNOWN] * 4
    if len(shape) != 4 or any(s < 0 for s in shape):
        raise ctx.error(ShapeError, "outputShape", f"4 sizes >= 0 ({rank_of}, "
                        f"{layout.name})", shape)
    return to_canonical(shape, layout)


def _spatial(ctx: InferContext, d: Convolution2DOpDescriptor, hw: Sequence[int],
             khw: Sequence[int], src_arg: str, k_arg: str, src_shape, k_shape):
    """Resolve (Ho, Wo) and pads; raise if the kernel is empty or the padded source is smaller
    than the dilated kernel. `src_shape` / `k_shape` are the user-layout shapes (messages)."""
    if known(khw[0]) and khw[0] == 0 or known(khw[1]) and khw[1] == 0:
        raise ctx.error(ShapeError, k_arg, "a kernel of spatial size >= 1 (kH, kW)",
                        f"kernel {list(khw)} (shape {k_shape})")
    ry = conv_output_size(hw[0], khw[0], d.strideInY, d.dilationRateInY, d.paddingStyle,
                          d.paddingTop, d.paddingBottom)
    rx = conv_output_size(hw[1], khw[1], d.strideInX, d.dilationRateInX, d.paddingStyle,
                          d.paddingLeft, d.paddingRight)
    for res, axis, size, k, dil, pads in (
            (ry, "height", hw[0], khw[0], d.dilationRateInY, (d.paddingTop, d.paddingBottom)),
            (rx, "width", hw[1], khw[1], d.dilationRateInX, (d.paddingLeft, d.paddingRight))):
        if res is None:
            pad = (f" + paddings {pads[0]} + {pads[1]}"
                   if d.paddingStyle == PaddingStyle.explicit else "")
            where = read_as("shape", src_shape, d.dataLayout, "H" if axis == "height" else "W")
            raise ctx.error(ShapeError, src_arg, f"a padded {axis} >= the dilated kernel extent "
                            f"{dil * (k - 1) + 1} (kernel {k}, dilation {dil}, "
                            f"{d.paddingStyle.name})", f"{axis} {size}{pad} ({where})")
    return (ry[0], rx[0]), (ry[1], ry[2], rx[1], rx[2])


def _check_groups(ctx: InferContext, d: Convolution2DOpDescriptor, c: int, cg: int, o: int,
                  c_arg: str, w_arg: str, c_shape, w_shape, blame_c: bool = False) -> None:
    """C % g == 0, O % g == 0, C == g * Cg; messages show the user-layout shapes and the axis
    the descriptor's layouts read each count from (a layout mix-up shows there)."""
    g = d.groups
    DL, WL = d.dataLayout, d.weightsLayout
    if known(o) and o % g:
        raise ctx.error(ShapeError, w_arg, f"output channels divisible by groups={g}",
                        f"{o} output channels ({read_as(w_arg, w_shape, WL, 'O')})")
    if known(c) and c % g:
        raise ctx.error(ShapeError, c_arg, f"channels divisible by groups={g}",
                        f"{c} channels ({read_as(c_arg, c_shape, DL, 'C')})")
    if known(c, cg) and c != g * cg:
        if blame_c:  # the channel count is the derived argument (data gradient's outputShape)
            raise ctx.error(ShapeError, c_arg, f"{g * cg} channels (groups={g} x {cg} input "
                            f"channels per group: {read_as(w_arg, w_shape, WL, 'I')})",
                            f"{c} channels ({read_as(c_arg, c_shape, DL, 'C')})")
        per = f"C={c} / groups={g}; C is " if g > 1 else ""
        raise ctx.error(ShapeError, w_arg, f"{c // g} input channels per group ({per}"
                        f"{read_as(c_arg, c_shape, DL, 'C')})",
                        f"{cg} input channels per group ({read_as(w_arg, w_shape, WL, 'I')})")


def _attrs(d: Convolution2DOpDescriptor, pads, out_shape, static: bool) -> Conv2DAttrs | None:
    if not static:
        return None
    return Conv2DAttrs((d.strideInY, d.strideInX), (d.dilationRateInY, d.dilationRateInX),
                       tuple(pads), d.groups, d.dataLayout, d.weightsLayout, tuple(out_shape))


def _user_shape(ctx: InferContext, arg: str):
    t = ctx.type_of(arg)
    return None if t is None else t.shape


def _infer_convolution2D(ctx: InferContext):
    d = ctx.attrs.descriptor
    dt = _check_float(ctx, ("source", "weights"))
    n, c, h, w = _rank4(ctx, "source", d.dataLayout)
    o, cg, kh, kw = _rank4(ctx, "weights", d.weightsLayout)
    xs, ws = _user_shape(ctx, "source"), _user_shape(ctx, "weights")
    _check_groups(ctx, d, c, cg, o, "source", "weights", xs, ws)
    (ho, wo), pads = _spatial(ctx, d, (h, w), (kh, kw), "source", "weights", xs, ws)
    out = from_canonical([n, o, ho, wo], d.dataLayout)
    return [ShapedType(out, dt)], _attrs(d, pads, out, ctx.static)


def _infer_convolution2DDataGradient(ctx: InferContext):
    d = ctx.attrs.descriptor
    dt = _check_float(ctx, ("incomingGradient", "weights"))
    n2, o2, ho, wo = _rank4(ctx, "incomingGradient", d.dataLayout)
    o, cg, kh, kw = _rank4(ctx, "weights", d.weightsLayout)
    n, c, h, w = _output_shape_arg(ctx, "the forward source's shape", d.dataLayout)
    dys, ws = _user_shape(ctx, "incomingGradient"), _user_shape(ctx, "weights")
    xs = from_canonical([n, c, h, w], d.dataLayout)  # outputShape as given
    _check_groups(ctx, d, c, cg, o, "outputShape", "weights", xs, ws, blame_c=True)
    if known(n, n2) and n != n2:
        raise ctx.error(ShapeError, "outputShape", f"batch size {n2} (the incomingGradient's, "
                        f"shape {dys})", f"{xs} (batch size {n})")
    if known(o, o2) and o != o2:
        raise ctx.error(ShapeError, "incomingGradient", f"{o} channels (the weights' output "
                        f"channels: {read_as('weights', ws, d.weightsLayout, 'O')})",
                        f"{o2} channels ({read_as('incomingGradient', dys, d.dataLayout, 'C')})")
    (fho, fwo), pads = _spatial(ctx, d, (h, w), (kh, kw), "outputShape", "weights", xs, ws)
    if known(fho, fwo, ho, wo) and (fho, fwo) != (ho, wo):
        raise ctx.error(ShapeError, "outputShape", f"a source shape whose forward convolution "
                        f"output is {ho}x{wo} (the incomingGradient's, shape {dys})",
                        f"{xs}, whose forward output is {fho}x{fwo}")
    return [ShapedType(xs, dt)], _attrs(d, pads, xs, ctx.static)


def _infer_convolution2DWeightsGradient(ctx: InferContext):
    d = ctx.attrs.descriptor
    dt = _check_float(ctx, ("incomingGradient", "source"))
    n2, o2, ho, wo = _rank4(ctx, "incomingGradient", d.dataLayout)
    n, c, h, w = _rank4(ctx, "source", d.dataLayout)
    o, cg, kh, kw = _output_shape_arg(ctx, "the forward weights' shape", d.weightsLayout)
    dys, xs = _user_shape(ctx, "incomingGradient"), _user_shape(ctx, "source")
    ws = from_canonical([o, cg, kh, kw], d.weightsLayout)  # outputShape as given
    _check_groups(ctx, d, c, cg, o, "source", "outputShape", xs, ws)
    if known(n, n2) and n != n2:
        raise ctx.error(ShapeError, "incomingGradient", f"batch size {n} (the source's, shape "
                        f"{xs})", f"{n2} (shape {dys})")
    if known(o, o2) and o != o2:
        raise ctx.error(ShapeError, "outputShape", f"{o2} output channels (the "
                        f"incomingGradient's: "
                        f"{read_as('incomingGradient', dys, d.dataLayout, 'C')})",
                        f"{ws} ({o} output channels at axis {d.weightsLayout.name.index('O')}, "
                        f"read as O by weightsLayout {d.weightsLayout.name})")
    (fho, fwo), pads = _spatial(ctx, d, (h, w), (kh, kw), "source", "outputShape", xs, ws)
    if known(fho, fwo, ho, wo) and (fho, fwo) != (ho, wo):
        raise ctx.error(ShapeError, "outputShape", f"a kernel size whose forward convolution "
                        f"of the source (shape {xs}) outputs {ho}x{wo} (the "
                        f"incomingGradient's, shape {dys})",
                        f"{ws}, whose forward output is {fho}x{fwo}")
    return [ShapedType(ws, dt)], _attrs(d, pads, ws, ctx.static)


# ---------------------------------------------------------------------------- gradient rules
# The three ops are bilinear; each gradient is another op of the family:
#   y  = conv(x, w):        dx = DataGrad(dy, w, x.shape),   dw = WeightsGrad(dy, x, w.shape)
#   dx = DataGrad(dy, w):   d(dy) = conv(G, w),              dw = WeightsGrad(dy, G, w.shape)
#   dw = WeightsGrad(dy, x): d(dy) = conv(x, G),             dx = DataGrad(dy, G, x.shape)
def _static_shape(op_kind: str, t: Tensor) -> list[int]:
    from ..errors import UnsupportedError

    if t.shape is None or any(s < 0 for s in t.shape):
        raise UnsupportedError(f"{op_kind}: gradient needs static shapes, given {t.shape} for "
                               f"{t.name}")
    return t.shape


def _grad_convolution2D(g: Graph, op: Operation, dys):
    dy = dys[0]
    x, w = op.input("source"), op.input("weights")
    d = op.attrs.descriptor
    return {
        "source": g.convolution2DDataGradient(dy, w, _static_shape(op.kind, x), d),
        "weights": g.convolution2DWeightsGradient(dy, x, _static_shape(op.kind, w), d),
    }


def _shaped_like(g: Graph, t: Tensor, like: Tensor) -> Tensor:
    """`t` with the static build-time shape of `like` when its own is less known (a fed
    outputShape leaves -1s in the gradient op's result, hence in G and in a forward
    convolution of G, whose run-time shape is like's: the reshape changes no value)."""
    if (like.shape is not None and all(s >= 0 for s in like.shape)
            and t.shape != like.shape):
        return g.reshape(t, shape=like.shape)
    return t


def _grad_convolution2DDataGradient(g: Graph, op: Operation, dys):
    G = dys[0]
    dy, w = op.input("incomingGradient"), op.input("weights")
    d = op.attrs.descriptor
    return {
        "incomingGradient": _shaped_like(g, g.convolution2D(G, w, d), dy),
        "weights": g.convolution2DWeightsGradient(dy, G, _static_shape(op.kind, w), d),
    }


def _grad_convolution2DWeightsGradient(g: Graph, op: Operation, dys):
    G = dys[0]
    dy, x = op.input("incomingGradient"), op.input("source")
    d = op.attrs.descriptor
    return {
        "incomingGradient": _shaped_like(g, g.convolution2D(x, G, d), dy),
        "source": g.convolution2DDataGradient(dy, G, _static_shape(op.kind, x), d),
    }


# a shape error that another dataLayout / weightsLayout would fix says so (layout mix-ups)
register_op("convolution2D", with_layout_hint(_infer_convolution2D, {
    "dataLayout": ("is", "the source"), "weightsLayout": ("are", "the weights")}),
    _grad_convolution2D)
register_op("convolution2DDataGradient", with_layout_hint(_infer_convolution2DDataGradient, {
    "dataLayout": ("are", "incomingGradient and outputShape"),
    "weightsLayout": ("are", "the weights")}),
    _grad_convolution2DDataGradient, value_inputs=("outputShape",))
register_op("convolution2DWeightsGradient", with_layout_hint(
    _infer_convolution2DWeightsGradient, {"dataLayout": ("are", "incomingGradient and source"),
                                          "weightsLayout": ("is", "outputShape")}),
    _grad_convolution2DWeightsGradient, value_inputs=("outputShape",))


# ---------------------------------------------------------------------------- builders
def _split_shape(op: str, name, outputShape, outputShapeTensor):
    """(shape tuple, None) for a list of ints, (None, tensor) for a shape tensor. Entries must
    be integers (Python or NumPy ints, not bools): 3.0 or 3.5 is refused, not truncated."""
    from ..errors import GraphError, op_error
    from ..graph import Tensor

    if outputShapeTensor is not None:
        if outputShape is not None:
            raise op_error(GraphError, op, "outputShapeTensor", "only one of outputShape and "
                           "outputShapeTensor", "both", name)
        outputShape = outputShapeTensor
    if outputShape is None:
        raise op_error(ShapeError, op, "outputShape", "a list of 4 ints or a shape Tensor",
                       None, name)
    if isinstance(outputShape, Tensor):
        return None, outputShape
    ok = not isinstance(outputShape, (str, bytes)) and hasattr(outputShape, "__iter__")
    if ok:
        outputShape = list(outputShape)
        ok = all(isinstance(s, numbers.Integral) and not isinstance(s, (bool, np.bool_))
                 for s in outputShape)
    if not ok:
        raise op_error(ShapeError, op, "outputShape", "a list of 4 ints or a shape Tensor",
                       repr(outputShape) if isinstance(outputShape, str) else outputShape,
                       name)
    return tuple(int(s) for s in outputShape), None


class ConvolutionOps:
    """Graph methods of the convolution family (mixed into `Graph`)."""

    def convolution2D(self, source: Tensor, weights: Tensor,
                      descriptor: Convolution2DOpDescriptor, *, name: str | None = None
                      ) -> Tensor:
        """2-D convolution (cross-correlation, no bias).

        source [N, C, H, W] (NCHW) or [N, H, W, C] (NHWC); weights [O, C/groups, kH, kW]
        (OIHW) or [kH, kW, C/groups, O] (HWIO); result [N, O, Ho, Wo] in the data layout::

            y[n, o, i, j] = sum_{c < Cg, p < kH, q < kW}
                x[n, (o // Og) * Cg + c, i*sy - pt + p*ry, j*sx - pl + q*rx] * w[o, c, p, q]
        """
        d = Convolution2DOpDescriptor.validated_copy(descriptor, "convolution2D", name)
        return self._add("convolution2D", [("source", source), ("weights", weights)],
                         _ConvOpAttrs(d, None), name)[0]

    def convolution2DDataGradient(self, incomingGradient: Tensor, weights: Tensor,
                                  outputShape: Sequence[int] | Tensor | None = None,
                                  forwardConvolutionDescriptor: Convolution2DOpDescriptor
                                  | None = None, *, name: str | None = None,
                                  outputShapeTensor: Tensor | None = None) -> Tensor:
        """dL/dsource of convolution2D, given dL/dy (`incomingGradient`, the forward result's
        shape) and the forward `weights`. `outputShape` is the forward source's shape in the
        data layout (a list of 4 ints, or a 1-D int32/int64 tensor of 4 elements)."""
        op = "convolution2DDataGradient"
        d = Convolution2DOpDescriptor.validated_copy(forwardConvolutionDescriptor, op, name,
                                                     "forwardConvolutionDescriptor")
        shape, tensor = _split_shape(op, name, outputShape, outputShapeTensor)
        inputs = [("incomingGradient", incomingGradient), ("weights", weights),
                  ("outputShape", tensor)]
        return self._add(op, inputs, _ConvOpAttrs(d, shape), name, optional=("outputShape",))[0]

    def convolution2DWeightsGradient(self, incomingGradient: Tensor, source: Tensor,
                                     outputShape: Sequence[int] | Tensor | None = None,
                                     forwardConvolutionDescriptor: Convolution2DOpDescriptor
                                     | None = None, *, name: str | None = None,
                                     outputShapeTensor: Tensor | None = None) -> Tensor:
        """dL/dweights of convolution2D, given dL/dy (`incomingGradient`) and the forward
        `source`. `outputShape` is the forward WEIGHTS' shape in the weights layout (Apple's
        page calls it the source shape; see docs/semantics.md), a list or a shape tensor."""
        op = "convolution2DWeightsGradient"
        d = Convolution2DOpDescriptor.validated_copy(forwardConvolutionDescriptor, op, name,
                                                     "forwardConvolutionDescriptor")
        shape, tensor = _split_shape(op, name, outputShape, outputShapeTensor)
        inputs = [("incomingGradient", incomingGradient), ("source", source),
                  ("outputShape", tensor)]
        return self._add(op, inputs, _ConvOpAttrs(d, shape), name, optional=("outputShape",))[0]
