"""The rest of the convolution family (issue 18): Apple's MPSGraphConvolutionOps 3-D methods,
MPSGraphConvolutionTransposeOps and MPSGraphDepthwiseConvolutionOps.

    convolution3D                     source [N, C, D, H, W], weights [O, C/g, kD, kH, kW]
                                      -> [N, O, Do, Ho, Wo]       (NCDHW / OIDHW; or NDHWC / DHWIO)
    convolution3DDataGradient         incomingGradient (the result's shape), weights,
                                      outputShape = source shape (5 ints or a shape tensor)
    convolution3DWeightsGradient      incomingGradient, source, outputShape = WEIGHTS shape
    convolutionTranspose2D            source [N, O, H, W], weights as convolution2D's
                                      [O, C/g, kH, kW], outputShape = result [N, C, Ho, Wo]
                                      == convolution2DDataGradient(source, weights, outputShape)
    convolutionTranspose2DDataGradient   == convolution2D(incomingGradient, weights); its
                                      result must have shape outputShape
    convolutionTranspose2DWeightsGradient(incomingGradient, source (Swift label `weights:`),
                                      outputShape = weights shape)
                                      == convolution2DWeightsGradient(source, incomingGradient)
    depthwiseConvolution2D            source [N, C, H, W], weights [M, C, kH, kW] (OIHW; HWIO
                                      [kH, kW, C, M]) -> [N, C*M, Ho, Wo], channel c*M + m
    depthwiseConvolution2DDataGradient / WeightsGradient   (outputShape: a list of 4 ints)
    depthwiseConvolution3D            source [..., C, D, H, W] (rank >= 4; the channel axis is
                                      descriptor.channelDimensionIndex among the last four),
                                      weights rank 4 [C, kD, kH, kW] (channel axis at the same
                                      place) -> [..., C, Do, Ho, Wo]
    depthwiseConvolution3DDataGradient (outputShape optional) / WeightsGradient

Everything except the transposed ops is ONE N-D convolution in canonical form (data [B, C, *S],
weights [O, Cg, *K], g groups; spatial arithmetic of SPEC 2.4 per axis): each op family only
says how its user-visible shapes map to that form (a permutation, then a reshape) and where
its groups come from (descriptor.groups; C for depthwise, with weights [C*M, 1, *K]). The
transposed ops are the 2-D ops with their roles renamed (shape rules and kernels alike).
Decisions are in docs/semantics.md, "Convolution and pooling (issue 18)".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..descriptors import (
    Convolution2DOpDescriptor,
    Convolution3DOpDescriptor,
    DepthwiseConvolution2DOpDescriptor,
    DepthwiseConvolution3DOpDescriptor,
)
from ..errors import ShapeError
from ..types import PaddingStyle, ShapedType
from ..types import TensorNamedDataLayout as L
from ._checks import output_shape_value
from ._checks import same_float_type as _check_float
from ._registry import InferContext, register_op
from ._shape_math import UNKNOWN, conv_output_size, known
from .convolution import (
    Conv2DAttrs,
    _ConvOpAttrs,
    _infer_convolution2D,
    _infer_convolution2DDataGradient,
    _infer_convolution2DWeightsGradient,
    _shaped_like,
    _split_shape,
    _static_shape,
)

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ConvNDAttrs", "ConvExtraOps", "to_canonical_array", "from_canonical_array",
           "as_depthwise_2d"]


@dataclass(frozen=True)
class ConvNDAttrs:
    """Resolved parameters of an N-D convolution for kernels (canonical channels-first form).

    A user array `u` of an operand becomes canonical by `to_canonical_array(u, perm, cshape)`
    (transpose by perm, then reshape); results go back by `from_canonical_array`."""

    stride: tuple[int, ...]  # per spatial axis, slowest first
    dilation: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]  # (before, after) per spatial axis, resolved
    groups: int
    data_perm: tuple[int, ...]  # user data axes -> canonical order (batch, channel, spatial)
    weights_perm: tuple[int, ...]  # user weights axes -> (channel or O, [M,] kernel axes)
    x_c: tuple[int, ...]  # canonical forward source [B, C, *S]
    w_c: tuple[int, ...]  # canonical forward weights [O, Cg, *K]
    y_c: tuple[int, ...]  # canonical forward result [B, O, *So]
    out_shape: tuple[int, ...]  # the op's result, user layout


def to_canonical_array(u: Any, perm: Sequence[int], cshape: Sequence[int]) -> Any:
    """NumPy or torch: `u` transposed by `perm` and reshaped to `cshape`."""
    t = u.permute(*perm) if hasattr(u, "permute") else u.transpose(tuple(perm))
    return t.reshape(tuple(cshape))


def from_canonical_array(c: Any, perm: Sequence[int], ushape: Sequence[int]) -> Any:
    """Inverse of `to_canonical_array` for a result of user shape `ushape`."""
    inv = tuple(int(i) for i in np.argsort(perm))
    t = c.reshape(tuple(ushape[i] for i in perm))
    return t.permute(*inv) if hasattr(t, "permute") else t.transpose(inv)


def as_depthwise_2d(a: ConvNDAttrs) -> Conv2DAttrs | None:
    """The 2-D depthwise convolution this N-D one is, if any (the backends then run their 2-D
    kernels, with weights as OIHW [C*M, 1, kH, kW]; the result's shape is the op's):
    depthwiseConvolution2D, and depthwiseConvolution3D
    of a rank-4 source whose slowest spatial axis has a kernel, stride and padding of 1, 1,
    0 and whose channel axis is 1 or 3 - PyTorch's way of calling it for 2-D depthwise
    convolutions (weights [1, C, kH, kW], channelDimensionIndex -3)."""
    perm = a.data_perm
    if len(a.stride) == 2:
        st, dl, (py, px) = a.stride, a.dilation, a.pads
    elif (len(perm) == 4 and perm in ((1, 0, 2, 3), (3, 0, 1, 2)) and a.w_c[2] == 1
          and a.stride[0] == 1 and a.pads[0] == (0, 0)):
        st, dl, (py, px) = a.stride[1:], a.dilation[1:], a.pads[1:]
    else:
        return None
    layout = L.NCHW if perm in ((0, 1, 2, 3), (1, 0, 2, 3)) else L.NHWC
    return Conv2DAttrs(tuple(st), tuple(dl), (py[0], py[1], px[0], px[1]), a.groups, layout,
                       L.OIHW, a.out_shape)


# ---------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class _OpAttrs:
    descriptor: Any  # the op's private validated copy
    output_shape: tuple[int, ...] | None  # outputShape as a list (gradient ops)


@dataclass
class _Geom:
    """How one family reads its shapes: user shape -> (perm, canonical shape)."""

    data_perm: tuple[int, ...]
    data_c: list[int]  # [B, C, *S]
    data_letters: str  # for messages


def _prod(xs) -> int:
    out = 1
    for v in xs:
        if not known(v):
            return UNKNOWN
        out *= v
    return out


class _Family:
    """Per-family shape reading; subclasses for 3-D, depthwise 2-D and depthwise 3-D."""

    nd = 3
    shape_tensor_ok = True  # outputShape may be a tensor
    desc_arg = "forwardConvolutionDescriptor"

    def __init__(self, d: Any):
        self.d = d

    # data: user shape -> perm, canonical [B, C, *S]
    def data(self, ctx: InferContext, arg: str, shape: list[int] | None) -> tuple[tuple, list]:
        raise NotImplementedError

    # weights: user shape -> perm, canonical [O, Cg, *K] (before the group check)
    def weights(self, ctx: InferContext, arg: str, shape: list[int] | None
                ) -> tuple[tuple, list]:
        raise NotImplementedError


    def groups(self, c: int) -> int:
        raise NotImplementedError

    def spatial(self) -> list[tuple[int, int, int, int]]:
        """(stride, dilation, pad_before, pad_after) per spatial axis, slowest first."""
        raise NotImplementedError

    def data_rank(self) -> int:
        return self.nd + 2


def _rank_error(ctx, arg, want, shape, what):
    return ctx.error(ShapeError, arg, f"a rank-{want} tensor ({what})",
                     f"rank {len(shape)} shape {list(shape)}")


class _Conv3D(_Family):
    nd = 3

    def data(self, ctx, arg, shape):
        if shape is None:
            return (0, 1, 2, 3, 4), [UNKNOWN] * 5
        if len(shape) != 5:
            raise _rank_error(ctx, arg, 5, shape, self.d.dataLayout.name)
        perm = (0, 1, 2, 3, 4) if self.d.dataLayout == L.NCDHW else (0, 4, 1, 2, 3)
        return perm, [shape[i] for i in perm]

    def weights(self, ctx, arg, shape):
        if shape is None:
            return (0, 1, 2, 3, 4), [UNKNOWN] * 5
        if len(shape) != 5:
            raise _rank_error(ctx, arg, 5, shape, self.d.weightsLayout.name)
        perm = (0, 1, 2, 3, 4) if self.d.weightsLayout == L.OIDHW else (4, 3, 0, 1, 2)
        return perm, [shape[i] for i in perm]


    def groups(self, c):
        return self.d.groups

    def spatial(self):
        d = self.d
        return [(d.strideInZ, d.dilationRateInZ, d.paddingFront, d.paddingBack),
                (d.strideInY, d.dilationRateInY, d.paddingTop, d.paddingBottom),
                (d.strideInX, d.dilationRateInX, d.paddingLeft, d.paddingRight)]


class _Depthwise2D(_Family):
    nd = 2
    shape_tensor_ok = False
    desc_arg = "descriptor"

    def data(self, ctx, arg, shape):
        if shape is None:
            return (0, 1, 2, 3), [UNKNOWN] * 4
        if len(shape) != 4:
            raise _rank_error(ctx, arg, 4, shape, self.d.dataLayout.name)
        perm = (0, 1, 2, 3) if self.d.dataLayout == L.NCHW else (0, 3, 1, 2)
        return perm, [shape[i] for i in perm]

    def weights(self, ctx, arg, shape):
        # OIHW [M, C, kH, kW] / HWIO [kH, kW, C, M] -> (perm to [C, M, kH, kW]) -> [C*M, 1, ...]
        if shape is None:
            return (1, 0, 2, 3), [UNKNOWN] * 4
        if len(shape) != 4:
            raise _rank_error(ctx, arg, 4, shape, self.d.weightsLayout.name)
        perm = (1, 0, 2, 3) if self.d.weightsLayout == L.OIHW else (2, 3, 0, 1)
        c, m, kh, kw = (shape[i] for i in perm)
        self.w_channels = c
        return perm, [c * m if known(c, m) else UNKNOWN, 1, kh, kw]


    def groups(self, c):
        return c

    def spatial(self):
        d = self.d
        return [(d.strideInY, d.dilationRateInY, d.paddingTop, d.paddingBottom),
                (d.strideInX, d.dilationRateInX, d.paddingLeft, d.paddingRight)]


class _Depthwise3D(_Family):
    nd = 3
    shape_tensor_ok = False
    desc_arg = "descriptor"

    def _axes(self, rank):
        ci = rank + self.d.channelDimensionIndex
        lead = tuple(range(rank - 4))
        spatial = tuple(i for i in range(rank - 4, rank) if i != ci)
        return lead, ci, spatial

    def data(self, ctx, arg, shape):
        if shape is None:
            return None, [UNKNOWN] * 5
        if len(shape) < 4:
            raise ctx.error(ShapeError, arg, "a tensor of rank >= 4 (channel axis "
                            f"{self.d.channelDimensionIndex} of the last four)",
                            f"rank {len(shape)} shape {list(shape)}")
        lead, ci, sp = self._axes(len(shape))
        perm = (*lead, ci, *sp)
        return perm, [_prod(shape[i] for i in lead), shape[ci], *(shape[i] for i in sp)]

    def weights(self, ctx, arg, shape):
        if shape is None:
            return None, [UNKNOWN] * 5
        if len(shape) != 4:
            raise _rank_error(ctx, arg, 4, shape, f"channel axis {self.d.channelDimensionIndex}"
                              ", the other three the kernel")
        _, ci, sp = self._axes(4)
        perm = (ci, *sp)
        self.w_channels = shape[ci]
        return perm, [shape[ci], 1, *(shape[i] for i in sp)]


    def groups(self, c):
        return c

    def spatial(self):
        d = self.d
        pv = d.paddingValues
        return [(d.strides[i], d.dilationRates[i], pv[2 * i], pv[2 * i + 1]) for i in range(3)]


_FAMILY = {"convolution3D": _Conv3D, "depthwiseConvolution2D": _Depthwise2D,
           "depthwiseConvolution3D": _Depthwise3D}


def _family_of(kind: str) -> str:
    for f in _FAMILY:
        if kind.startswith(f):
            return f
    raise KeyError(kind)


def _shape_arg(ctx: InferContext, fam: _Family, rank: int | None, what: str
               ) -> list[int] | None:
    """outputShape from the list attr or the shape tensor (None when its value is unknown)."""
    shape = output_shape_value(ctx, rank)
    if shape is None:
        return None
    if (rank is not None and len(shape) != rank) or any(s < 0 for s in shape):
        raise ctx.error(ShapeError, "outputShape", f"{rank} sizes >= 0 ({what})", shape)
    return shape


def _resolve(ctx, fam: _Family, s_in, k, src_arg, k_arg, src_shape, k_shape):
    """(So, pads) per spatial axis; raises for an empty kernel or a too small padded input."""
    if any(known(v) and v == 0 for v in k):
        raise ctx.error(ShapeError, k_arg, "a kernel of spatial size >= 1 on every axis",
                        f"kernel {list(k)} (shape {k_shape})")
    so, pads = [], []
    for i, ((s, r, pb, pe), n, kk) in enumerate(zip(fam.spatial(), s_in, k)):
        res = conv_output_size(n, kk, s, r, fam.d.paddingStyle, pb, pe)
        if res is None:
            pad = f" + paddings {pb} + {pe}" if fam.d.paddingStyle == PaddingStyle.explicit \
                else ""
            raise ctx.error(ShapeError, src_arg, f"a padded size >= the dilated kernel extent "
                            f"{r * (kk - 1) + 1} on spatial axis {i} (kernel {kk}, dilation "
                            f"{r}, {fam.d.paddingStyle.name})",
                            f"size {n}{pad} (shape {src_shape})")
        so.append(res[0])
        pads.append((res[1], res[2]))
    return so, tuple(pads)


def _groups_check(ctx, fam, c, wc, x_arg, w_arg, xs, ws):
    o, cg = wc[0], wc[1]
    if isinstance(fam, (_Depthwise2D, _Depthwise3D)):
        cw = fam.w_channels
        if known(c, cw) and c != cw:
            raise ctx.error(ShapeError, w_arg, f"{c} channels on the weights' channel axis "
                            f"(the {x_arg}'s channels, shape {xs})",
                            f"{cw} (shape {ws})")
        return c if known(c) else UNKNOWN
    g = fam.groups(c)
    if known(o) and o % g:
        raise ctx.error(ShapeError, w_arg, f"output channels divisible by groups={g}",
                        f"{o} (shape {ws})")
    if known(c) and c % g:
        raise ctx.error(ShapeError, x_arg, f"channels divisible by groups={g}",
                        f"{c} (shape {xs})")
    if known(c, cg) and c != g * cg:
        raise ctx.error(ShapeError, w_arg, f"{c // g} input channels per group (C={c} of "
                        f"{x_arg} shape {xs} / groups={g})", f"{cg} (shape {ws})")
    return g


def _user_data(fam, perm, yc, like_shape):
    """The user-layout shape of canonical data `yc` = [B, C', *So] whose source (user shape
    `like_shape`) was read through `perm` (leading batch axes kept as they are)."""
    if perm is None:
        return None
    nlead = len(perm) - fam.nd - 1  # depthwise 3-D: the axes folded into B
    permuted = [like_shape[i] for i in perm[:nlead]] + list(yc[1:]) if isinstance(
        fam, _Depthwise3D) else list(yc)
    out = [0] * len(perm)
    for k, i in enumerate(perm):
        out[i] = permuted[k]
    return out


def _attrs(ctx, fam, pads, g, xperm, wperm, xc, wc, yc, out):
    if not ctx.static:
        return None
    return ConvNDAttrs(tuple(s for s, _, _, _ in fam.spatial()),
                       tuple(r for _, r, _, _ in fam.spatial()), pads, g, tuple(xperm),
                       tuple(wperm), tuple(xc), tuple(wc), tuple(yc), tuple(out))


def _infer_fwd(ctx: InferContext):
    fam = _FAMILY[_family_of(ctx.kind)](ctx.attrs.descriptor)
    dt = _check_float(ctx, ("source", "weights"))
    xs, ws = ctx.type_of("source").shape, ctx.type_of("weights").shape
    xperm, xc = fam.data(ctx, "source", xs)
    wperm, wc = fam.weights(ctx, "weights", ws)
    g = _groups_check(ctx, fam, xc[1], wc, "source", "weights", xs, ws)
    so, pads = _resolve(ctx, fam, xc[2:], wc[2:], "source", "weights", xs, ws)
    yc = [xc[0], wc[0], *so]
    out = _user_data(fam, xperm, yc, xs) if xs is not None else None
    return [ShapedType(out, dt)], _attrs(ctx, fam, pads, g, xperm, wperm, xc, wc, yc, out)


def _infer_dgrad(ctx: InferContext):
    fam = _FAMILY[_family_of(ctx.kind)](ctx.attrs.descriptor)
    dt = _check_float(ctx, ("incomingGradient", "weights"))
    dys, ws = ctx.type_of("incomingGradient").shape, ctx.type_of("weights").shape
    dperm, dyc = fam.data(ctx, "incomingGradient", dys)
    wperm, wc = fam.weights(ctx, "weights", ws)
    rank = None if dys is None else len(dys)
    if isinstance(fam, _Conv3D):
        rank = 5
    given = ctx.attrs.output_shape is not None or ctx.type_of("outputShape") is not None
    if given:
        xs = _shape_arg(ctx, fam, rank, "the forward source's shape")
    else:  # depthwiseConvolution3DDataGradient without outputShape: the forward source size
        # whose output has no leftover rows (docs/semantics.md)
        xs = None
        if dys is not None and all(known(v) for v in dyc) and all(known(v) for v in wc):
            sizes = []
            for (s, r, pb, pe), o, k in zip(fam.spatial(), dyc[2:], wc[2:]):
                if fam.d.paddingStyle in (PaddingStyle.TF_SAME, PaddingStyle.ONNX_SAME_LOWER):
                    sizes.append(o * s)
                else:
                    pads = (pb + pe) if fam.d.paddingStyle == PaddingStyle.explicit else 0
                    sizes.append(max((o - 1) * s + r * (k - 1) + 1 - pads, 0))
            xs = _user_data(fam, dperm, [dyc[0], dyc[1], *sizes], dys)
    if xs is None:
        out = [UNKNOWN] * (rank if rank is not None else 5) if rank is not None else None
        return [ShapedType(out, dt)], None
    xperm, xc = fam.data(ctx, "outputShape", xs)
    g = _groups_check(ctx, fam, xc[1], wc, "outputShape", "weights", xs, ws)
    if known(xc[0], dyc[0]) and xc[0] != dyc[0]:
        raise ctx.error(ShapeError, "outputShape", f"batch size {dyc[0]} (the "
                        f"incomingGradient's, shape {dys})", f"{xs}")
    if known(wc[0], dyc[1]) and wc[0] != dyc[1]:
        raise ctx.error(ShapeError, "incomingGradient", f"{wc[0]} channels (the weights' "
                        f"output channels, shape {ws})", f"{dyc[1]} (shape {dys})")
    so, pads = _resolve(ctx, fam, xc[2:], wc[2:], "outputShape", "weights", xs, ws)
    if all(known(a, b) for a, b in zip(so, dyc[2:])) and list(so) != list(dyc[2:]):
        raise ctx.error(ShapeError, "outputShape", f"a source shape whose forward output's "
                        f"spatial size is {list(dyc[2:])} (the incomingGradient's, shape {dys})",
                        f"{xs}, whose forward output is {so}")
    return [ShapedType(list(xs), dt)], _attrs(ctx, fam, pads, g, xperm, wperm, xc, wc, dyc, xs)


def _infer_wgrad(ctx: InferContext):
    fam = _FAMILY[_family_of(ctx.kind)](ctx.attrs.descriptor)
    dt = _check_float(ctx, ("incomingGradient", "source"))
    dys, xs = ctx.type_of("incomingGradient").shape, ctx.type_of("source").shape
    dperm, dyc = fam.data(ctx, "incomingGradient", dys)
    xperm, xc = fam.data(ctx, "source", xs)
    if dys is not None and xs is not None and len(dys) != len(xs):
        raise ctx.error(ShapeError, "incomingGradient", f"the source's rank {len(xs)} (shape "
                        f"{xs})", f"rank {len(dys)} shape {dys}")
    wrank = 5 if isinstance(fam, _Conv3D) else 4
    ws = _shape_arg(ctx, fam, wrank, "the forward weights' shape")
    if ws is None:
        return [ShapedType([UNKNOWN] * wrank, dt)], None
    wperm, wc = fam.weights(ctx, "outputShape", ws)
    g = _groups_check(ctx, fam, xc[1], wc, "source", "outputShape", xs, ws)
    if known(xc[0], dyc[0]) and xc[0] != dyc[0]:
        raise ctx.error(ShapeError, "incomingGradient", f"batch size {xc[0]} (the source's, "
                        f"shape {xs})", f"{dyc[0]} (shape {dys})")
    if known(wc[0], dyc[1]) and wc[0] != dyc[1]:
        raise ctx.error(ShapeError, "outputShape", f"{dyc[1]} output channels (the "
                        f"incomingGradient's, shape {dys})", f"{ws}")
    so, pads = _resolve(ctx, fam, xc[2:], wc[2:], "source", "outputShape", xs, ws)
    if all(known(a, b) for a, b in zip(so, dyc[2:])) and list(so) != list(dyc[2:]):
        raise ctx.error(ShapeError, "outputShape", f"a kernel size whose forward output of the "
                        f"source (shape {xs}) is {list(dyc[2:])} (the incomingGradient's, shape "
                        f"{dys})", f"{ws}, whose forward output is {so}")
    return [ShapedType(list(ws), dt)], _attrs(ctx, fam, pads, g, xperm, wperm, xc, wc, dyc, ws)


# ---------------------------------------------------------------------------- gradient rules
# bilinear, as the 2-D ops (ops/convolution.py):
#   y  = fwd(x, w):   dx = dgrad(dy, w, x.shape),  dw = wgrad(dy, x, w.shape)
#   dx = dgrad(dy, w): d(dy) = fwd(G, w),           dw = wgrad(dy, G, w.shape)
#   dw = wgrad(dy, x): d(dy) = fwd(x, G),           dx = dgrad(dy, G, x.shape)
def _grad_fwd(g: Graph, op: Operation, dys):
    f, d = _family_of(op.kind), op.attrs.descriptor
    x, w = op.input("source"), op.input("weights")
    return {"source": g._conv_nd(f + "DataGradient", dys[0], w, _static_shape(op.kind, x), d),
            "weights": g._conv_nd(f + "WeightsGradient", dys[0], x,
                                  _static_shape(op.kind, w), d)}


def _grad_dgrad(g: Graph, op: Operation, dys):
    f, d, G = _family_of(op.kind), op.attrs.descriptor, dys[0]
    dy, w = op.input("incomingGradient"), op.input("weights")
    return {"incomingGradient": _shaped_like(g, g._conv_nd(f, G, w, None, d), dy),
            "weights": g._conv_nd(f + "WeightsGradient", dy, G, _static_shape(op.kind, w), d)}


def _grad_wgrad(g: Graph, op: Operation, dys):
    f, d, G = _family_of(op.kind), op.attrs.descriptor, dys[0]
    dy, x = op.input("incomingGradient"), op.input("source")
    return {"incomingGradient": _shaped_like(g, g._conv_nd(f, x, G, None, d), dy),
            "source": g._conv_nd(f + "DataGradient", dy, G, _static_shape(op.kind, x), d)}


for _f in _FAMILY:
    register_op(_f, _infer_fwd, _grad_fwd)
    register_op(_f + "DataGradient", _infer_dgrad, _grad_dgrad, value_inputs=("outputShape",))
    register_op(_f + "WeightsGradient", _infer_wgrad, _grad_wgrad,
                value_inputs=("outputShape",))


# ---------------------------------------------------------------------------- transposed 2-D
@dataclass
class _RenamedContext(InferContext):
    """The 2-D shape rules run on a transposed op's inputs under the 2-D ops' argument names;
    errors name the transposed op's arguments."""

    outer: dict = dataclasses.field(default_factory=dict)  # inner argument -> outer argument

    def error(self, cls, argument, expected, given):
        head, dot, rest = argument.partition(".")
        return super().error(cls, self.outer.get(head, head) + dot + rest,
                             self._words(expected), self._words(given))

    def _words(self, text):
        """The inner argument names in a message, as the outer ones (swapped at once)."""
        if not isinstance(text, str) or not self.outer:
            return text
        import re

        pat = re.compile(r"\b(" + "|".join(map(re.escape, self.outer)) + r")\b")
        return pat.sub(lambda m: self.outer[m.group(1)], text)


def _renamed(ctx: InferContext, outer_to_inner: dict) -> _RenamedContext:
    fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(InferContext)}
    fields["input_names"] = tuple(outer_to_inner.get(n, n) for n in ctx.input_names)
    return _RenamedContext(**fields, outer={v: k for k, v in outer_to_inner.items()})


def _infer_transpose(ctx):
    return _infer_convolution2DDataGradient(_renamed(ctx, {"source": "incomingGradient"}))


def _infer_transpose_dgrad(ctx):
    inner = _renamed(ctx, {"incomingGradient": "source"})
    outs, attrs = _infer_convolution2D(inner)
    shape = outs[0].shape
    want = output_shape_value(ctx, 4)
    if want is not None and shape is not None and (
            len(want) != 4 or any(known(s) and s != w for s, w in zip(shape, want))):
        raise ctx.error(ShapeError, "outputShape", f"the shape of convolution2D("
                        f"incomingGradient, weights) {shape} (the transposed op's source "
                        "shape)", want)
    if want is not None and shape is None:
        shape = want
    return [ShapedType(shape, outs[0].dataType)], attrs


def _infer_transpose_wgrad(ctx):
    return _infer_convolution2DWeightsGradient(_renamed(
        ctx, {"incomingGradient": "source", "source": "incomingGradient"}))


def _grad_transpose(g: Graph, op: Operation, dys):
    # T = DG(x, w): dx = conv2D(G, w); dw = WG(incomingGradient=x, source=G)
    G, d = dys[0], op.attrs.descriptor
    x, w = op.input("source"), op.input("weights")
    return {"source": _shaped_like(g, g.convolution2D(G, w, d), x),
            "weights": g.convolution2DWeightsGradient(x, G, _static_shape(op.kind, w), d)}


def _grad_transpose_dgrad(g: Graph, op: Operation, dys):
    # R = conv2D(dy, w): d(dy) = DG(G, w, dy.shape); dw = WG(G, dy, w.shape)
    G, d = dys[0], op.attrs.descriptor
    dy, w = op.input("incomingGradient"), op.input("weights")
    return {"incomingGradient": g.convolution2DDataGradient(G, w, _static_shape(op.kind, dy),
                                                            d),
            "weights": g.convolution2DWeightsGradient(G, dy, _static_shape(op.kind, w), d)}


def _grad_transpose_wgrad(g: Graph, op: Operation, dys):
    # R = WG(incomingGradient=x, source=dy): d(dy) = conv2D(dy... ) roles swapped
    G, d = dys[0], op.attrs.descriptor
    dy, x = op.input("incomingGradient"), op.input("source")
    return {"source": _shaped_like(g, g.convolution2D(dy, G, d), x),
            "incomingGradient": g.convolution2DDataGradient(x, G, _static_shape(op.kind, dy),
                                                            d)}


register_op("convolutionTranspose2D", _infer_transpose, _grad_transpose,
            value_inputs=("outputShape",))
register_op("convolutionTranspose2DDataGradient", _infer_transpose_dgrad,
            _grad_transpose_dgrad, value_inputs=("outputShape",))
register_op("convolutionTranspose2DWeightsGradient", _infer_transpose_wgrad,
            _grad_transpose_wgrad, value_inputs=("outputShape",))


# ---------------------------------------------------------------------------- builders
_DESC = {"convolution3D": Convolution3DOpDescriptor,
         "depthwiseConvolution2D": DepthwiseConvolution2DOpDescriptor,
         "depthwiseConvolution3D": DepthwiseConvolution3DOpDescriptor}


class ConvExtraOps:
    """Graph methods of the 3-D, transposed and depthwise convolutions (mixed into `Graph`)."""

    def _conv_nd(self, kind: str, a: Tensor, b: Tensor, outputShape, descriptor, *,
                 name: str | None = None, outputShapeTensor=None, desc_arg: str | None = None):
        f = _family_of(kind)
        fam = _FAMILY[f]
        if desc_arg is None:
            desc_arg = "descriptor" if kind == f else fam.desc_arg
        d = _DESC[f].validated_copy(descriptor, kind, name, desc_arg)
        if kind == f:
            return self._add(kind, [("source", a), ("weights", b)], _OpAttrs(d, None), name)[0]
        second = "weights" if kind.endswith("DataGradient") else "source"
        if outputShape is None and outputShapeTensor is None and \
                kind == "depthwiseConvolution3DDataGradient":
            shape, tensor = None, None
        else:
            shape, tensor = _split_shape(kind, name, outputShape, outputShapeTensor)
            if tensor is not None and not fam.shape_tensor_ok:
                from ..errors import op_error
                raise op_error(ShapeError, kind, "outputShape", "a list of ints (this method "
                               "has no shape-tensor variant)", "a Tensor", name)
        inputs = [("incomingGradient", a), (second, b), ("outputShape", tensor)]
        return self._add(kind, inputs, _OpAttrs(d, shape), name, optional=("outputShape",))[0]

    # -- 3-D
    def convolution3D(self, source: Tensor, weights: Tensor,
                      descriptor: Convolution3DOpDescriptor, *, name: str | None = None
                      ) -> Tensor:
        """3-D convolution (cross-correlation, no bias): source [N, C, D, H, W] (NCDHW) or
        [N, D, H, W, C] (NDHWC); weights [O, C/groups, kD, kH, kW] (OIDHW) or
        [kD, kH, kW, C/groups, O] (DHWIO); result [N, O, Do, Ho, Wo] in the data layout.
        Spatial sizes per axis as convolution2D's (Z: strideInZ, dilationRateInZ,
        paddingFront / paddingBack)."""
        return self._conv_nd("convolution3D", source, weights, None, descriptor, name=name)

    def convolution3DDataGradient(self, incomingGradient: Tensor, weights: Tensor,
                                  outputShape: Sequence[int] | Tensor | None = None,
                                  forwardConvolutionDescriptor: Convolution3DOpDescriptor
                                  | None = None, *, name: str | None = None,
                                  outputShapeTensor: Tensor | None = None) -> Tensor:
        """dL/dsource of convolution3D; `outputShape` is the forward source's shape (5 ints
        or a 1-D int32/int64 tensor of 5 elements)."""
        return self._conv_nd("convolution3DDataGradient", incomingGradient, weights,
                             outputShape, forwardConvolutionDescriptor, name=name,
                             outputShapeTensor=outputShapeTensor)

    def convolution3DWeightsGradient(self, incomingGradient: Tensor, source: Tensor,
                                     outputShape: Sequence[int] | Tensor | None = None,
                                     forwardConvolutionDescriptor: Convolution3DOpDescriptor
                                     | None = None, *, name: str | None = None,
                                     outputShapeTensor: Tensor | None = None) -> Tensor:
        """dL/dweights of convolution3D; `outputShape` is the forward WEIGHTS' shape in the
        weights layout (as for convolution2DWeightsGradient)."""
        return self._conv_nd("convolution3DWeightsGradient", incomingGradient, source,
                             outputShape, forwardConvolutionDescriptor, name=name,
                             outputShapeTensor=outputShapeTensor)

    # -- depthwise
    def depthwiseConvolution2D(self, source: Tensor, weights: Tensor,
                               descriptor: DepthwiseConvolution2DOpDescriptor, *,
                               name: str | None = None) -> Tensor:
        """Depthwise 2-D convolution: source [N, C, H, W] (NCHW) / [N, H, W, C] (NHWC);
        weights [M, C, kH, kW] (OIHW) / [kH, kW, C, M] (HWIO), M the channel multiplier;
        result [N, C*M, Ho, Wo]::

            y[n, c*M + m, i, j] = sum_{p, q} x[n, c, i*sy - pt + p*ry, j*sx - pl + q*rx]
                                             * w[m, c, p, q]
        """
        return self._conv_nd("depthwiseConvolution2D", source, weights, None, descriptor,
                             name=name)

    def depthwiseConvolution2DDataGradient(self, incomingGradient: Tensor, weights: Tensor,
                                           outputShape: Sequence[int] | None = None,
                                           descriptor: DepthwiseConvolution2DOpDescriptor
                                           | None = None, *, name: str | None = None
                                           ) -> Tensor:
        """dL/dsource of depthwiseConvolution2D; `outputShape` = the source's shape."""
        return self._conv_nd("depthwiseConvolution2DDataGradient", incomingGradient, weights,
                             outputShape, descriptor, name=name)

    def depthwiseConvolution2DWeightsGradient(self, incomingGradient: Tensor, source: Tensor,
                                              outputShape: Sequence[int] | None = None,
                                              descriptor: DepthwiseConvolution2DOpDescriptor
                                              | None = None, *, name: str | None = None
                                              ) -> Tensor:
        """dL/dweights of depthwiseConvolution2D; `outputShape` = the weights' shape."""
        return self._conv_nd("depthwiseConvolution2DWeightsGradient", incomingGradient,
                             source, outputShape, descriptor, name=name)

    def depthwiseConvolution3D(self, source: Tensor, weights: Tensor,
                               descriptor: DepthwiseConvolution3DOpDescriptor, *,
                               name: str | None = None) -> Tensor:
        """Depthwise 3-D convolution: source of rank >= 4 whose last four axes are the channel
        axis (`descriptor.channelDimensionIndex`, default -4) and three spatial axes (leading
        axes are batch); weights rank 4, the channel axis at the same place (C entries) and
        the three kernel sizes; the result has the source's layout and channels::

            y[..., c, i0, i1, i2] = sum_taps x[..., c, i0*s0 - p0 + t0*r0, ...] * w[c, t0, t1, t2]
        """
        return self._conv_nd("depthwiseConvolution3D", source, weights, None, descriptor,
                             name=name)

    def depthwiseConvolution3DDataGradient(self, incomingGradient: Tensor, weights: Tensor,
                                           outputShape: Sequence[int] | None = None,
                                           descriptor: DepthwiseConvolution3DOpDescriptor
                                           | None = None, *, name: str | None = None
                                           ) -> Tensor:
        """dL/dsource of depthwiseConvolution3D. `outputShape` (the source's shape) is
        optional: without it the source size is the one whose forward output has no leftover
        rows ((out - 1) * stride + dilated kernel - paddings; out * stride for the SAME
        styles)."""
        return self._conv_nd("depthwiseConvolution3DDataGradient", incomingGradient, weights,
                             outputShape, descriptor, name=name)

    def depthwiseConvolution3DWeightsGradient(self, incomingGradient: Tensor, source: Tensor,
                                              outputShape: Sequence[int] | None = None,
                                              descriptor: DepthwiseConvolution3DOpDescriptor
                                              | None = None, *, name: str | None = None
                                              ) -> Tensor:
        """dL/dweights of depthwiseConvolution3D; `outputShape` = the weights' shape."""
        return self._conv_nd("depthwiseConvolution3DWeightsGradient", incomingGradient,
                             source, outputShape, descriptor, name=name)

    # -- transposed 2-D
    def _transpose(self, kind, a, b, second, outputShape, outputShapeTensor, d, name):
        dd = Convolution2DOpDescriptor.validated_copy(
            d, kind, name, "descriptor" if kind == "convolutionTranspose2D"
            else "forwardConvolutionDescriptor")
        shape, tensor = _split_shape(kind, name, outputShape, outputShapeTensor)
        first = "source" if kind == "convolutionTranspose2D" else "incomingGradient"
        inputs = [(first, a), (second, b), ("outputShape", tensor)]
        return self._add(kind, inputs, _ConvOpAttrs(dd, shape), name,
                         optional=("outputShape",))[0]

    def convolutionTranspose2D(self, source: Tensor, weights: Tensor,
                               outputShape: Sequence[int] | Tensor | None = None,
                               descriptor: Convolution2DOpDescriptor | None = None, *,
                               name: str | None = None,
                               outputShapeTensor: Tensor | None = None) -> Tensor:
        """Transposed 2-D convolution = convolution2DDataGradient(source, weights,
        outputShape, descriptor): `descriptor` describes the forward convolution whose data
        gradient this is; source [N, O, H, W] (the forward result's shape), weights
        [O, C/g, kH, kW] (OIHW; HWIO [kH, kW, C/g, O]), result `outputShape` [N, C, Ho, Wo]
        (one of the sizes the forward convolution maps to H, W)."""
        return self._transpose("convolutionTranspose2D", source, weights, "weights",
                               outputShape, outputShapeTensor, descriptor, name)

    def convolutionTranspose2DDataGradient(self, incomingGradient: Tensor, weights: Tensor,
                                           outputShape: Sequence[int] | Tensor | None = None,
                                           forwardConvolutionDescriptor:
                                           Convolution2DOpDescriptor | None = None, *,
                                           name: str | None = None,
                                           outputShapeTensor: Tensor | None = None) -> Tensor:
        """dL/dsource of convolutionTranspose2D = convolution2D(incomingGradient, weights);
        `outputShape` is the transposed op's source shape (it must equal that result's)."""
        return self._transpose("convolutionTranspose2DDataGradient", incomingGradient,
                               weights, "weights", outputShape, outputShapeTensor,
                               forwardConvolutionDescriptor, name)

    def convolutionTranspose2DWeightsGradient(self, incomingGradient: Tensor,
                                              weights: Tensor | None = None,
                                              outputShape: Sequence[int] | Tensor | None = None,
                                              forwardConvolutionDescriptor:
                                              Convolution2DOpDescriptor | None = None, *,
                                              name: str | None = None,
                                              outputShapeTensor: Tensor | None = None,
                                              source: Tensor | None = None) -> Tensor:
        """dL/dweights of convolutionTranspose2D. Despite Swift's label `weights:`, that
        argument is the transposed op's forward SOURCE (Objective-C `sourceTensor:`; `source=`
        is accepted too); `outputShape` is the weights' shape. Equals
        convolution2DWeightsGradient(source, incomingGradient, outputShape, descriptor)."""
        kind = "convolutionTranspose2DWeightsGradient"
        if weights is not None and source is not None:
            from ..errors import GraphError, op_error
            raise op_error(GraphError, kind, "source", "only one of weights= and source= (the "
                           "same argument)", "both", name)
        return self._transpose(kind, incomingGradient, source if weights is None else weights,
                               "source", outputShape, outputShapeTensor,
                               forwardConvolutionDescriptor, name)
