"""The pooling family (Apple's MPSGraphPoolingOps.h): maxPooling2D, maxPooling2DGradient,
avgPooling2D, avgPooling2DGradient, configured by a `Pooling2DOpDescriptor`.

Shapes (canonical NCHW; with `dataLayout=NHWC` every user-visible shape is [N, H, W, C]):

    maxPooling2D / avgPooling2D            source [N, C, H, W] -> [N, C, Ho, Wo]
    maxPooling2DGradient / avgPooling2DGradient
                                           gradient [N, C, Ho, Wo], sourceTensor [N, C, H, W]
                                           -> [N, C, H, W]

Window (output position i, j; tap p < kH, q < kW; pt, pl the resolved top/left padding)::

    rows  i*sy - pt + p*ry,   columns  j*sx - pl + q*rx

Output size per axis: SPEC 2.4 ("Spatial arithmetic", shared with convolution) for every padding
style. `ceilMode` (explicit and TF_VALID only; TF_SAME / ONNX_SAME_LOWER already give
ceil(in / stride)) rounds up instead of down::

    out = ceil((in + pb + pe - k_eff) / stride) + 1,   minus 1 if (out - 1) * stride >= in + pb

i.e. the last window must start inside the input or the leading padding (PyTorch's and
ONNX's rule; Apple documents none). Windows may then reach past the trailing padding; those
taps are ignored like padding.

Decisions where Apple's documentation is silent (all tested):

* max pooling ignores padding (pads with -inf); NaN propagates (a NaN in a window gives NaN).
* avg pooling divides by the number of taps inside the input, or, with
  `includeZeroPadToAverage`, inside the padded input [-pt, H + pb) x [-pl, W + pr) (Apple:
  "samples outside the input tensor count as zeroes"; taps beyond the padding that only
  ceilMode creates are never counted, as in PyTorch).
* a window with no tap inside the input (possible with paddings >= the kernel extent) gives 0
  for avg pooling (as MPSCNNPoolingAverage documents) and -inf for max pooling; its gradient is 0.
* maxPooling2DGradient sends each window's incoming gradient to ONE element: the first maximum
  in window order (row-major over the taps p, then q), as PyTorch's CPU kernels do; windows
  that overlap add their contributions.
* `returnIndicesMode` drives `maxPooling2DReturnIndices`; maxPooling2DGradient's overload
  with `indicesTensor=` / `outputShape=` is the op `maxPooling2DGradientIndices`: both in
  ops/pool_extra.py.
* Gradient rules: maxPooling2D -> maxPooling2DGradient; avgPooling2D -> avgPooling2DGradient;
  avgPooling2DGradient (linear in `gradient`) -> avgPooling2D of the incoming gradient (its
  `sourceTensor` only supplies the shape: zero gradient). maxPooling2DGradient has no rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..descriptors import Pooling2DOpDescriptor
from ..errors import ShapeError
from ..types import PaddingStyle, ShapedType, TensorNamedDataLayout
from ._checks import rank4_canonical as _rank4
from ._checks import same_float_type as _check_float
from ._registry import InferContext, register_op
from ._shape_math import UNKNOWN, conv_output_size, from_canonical, known
from .convolution import read_as, with_layout_hint

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["PoolingOps", "Pool2DAttrs", "pool_output_size"]


@dataclass(frozen=True)
class Pool2DAttrs:
    """Fully resolved parameters for kernels (no PaddingStyle, no ceilMode)."""

    kernel: tuple[int, int]  # (kH, kW)
    stride: tuple[int, int]  # (y, x)
    dilation: tuple[int, int]  # (y, x)
    pads: tuple[int, int, int, int]  # resolved (top, bottom, left, right)
    data_layout: TensorNamedDataLayout  # NCHW | NHWC
    in_hw: tuple[int, int]  # source (H, W)
    out_hw: tuple[int, int]  # result (Ho, Wo) of the forward op
    include_zero_pad: bool

    @property
    def work_hw(self) -> tuple[int, int]:
        """Rows and columns of the kernels' working array: the padded input, grown to hold
        every window."""
        (kh, kw), (sy, sx), (ry, rx) = self.kernel, self.stride, self.dilation
        (h, w), (ho, wo) = self.in_hw, self.out_hw
        pt, pb, pl, pr = self.pads
        need_h = (ho - 1) * sy + (kh - 1) * ry + 1 if ho > 0 else 0
        need_w = (wo - 1) * sx + (kw - 1) * rx + 1 if wo > 0 else 0
        return max(need_h, pt + h + pb), max(need_w, pl + w + pr)

    def tap(self, p: int, q: int) -> tuple[slice, slice]:
        """(rows, columns) of the working array that window tap (p, q) reads, one per output
        position: `work[:, :, rows, cols]` is [N, C, Ho, Wo] (a strided view in NumPy and
        torch alike)."""
        (sy, sx), (ry, rx), (ho, wo) = self.stride, self.dilation, self.out_hw
        return (slice(p * ry, p * ry + sy * (ho - 1) + 1, sy),
                slice(q * rx, q * rx + sx * (wo - 1) + 1, sx))


@dataclass(frozen=True)
class _PoolOpAttrs:
    descriptor: Pooling2DOpDescriptor  # the op's private, validated copy


def pool_output_size(size: int, k: int, stride: int, dilation: int, style: PaddingStyle,
                     pad_before: int, pad_after: int, ceil: bool
                     ) -> tuple[int, int, int] | None:
    """(out, pad_before, pad_after) along one axis; None if the padded input is smaller than
    the dilated kernel (explicit / TF_VALID). `ceil` is the descriptor's ceilMode."""
    res = conv_output_size(size, k, stride, dilation, style, pad_before, pad_after)
    if res is None or not ceil or res[0] == UNKNOWN or style not in (
            PaddingStyle.explicit, PaddingStyle.TF_VALID):
        return res
    _, pb, pe = res
    k_eff = dilation * (k - 1) + 1
    out = -(-(size + pb + pe - k_eff) // stride) + 1
    if (out - 1) * stride >= size + pb:
        out -= 1
    return out, pb, pe


# ---------------------------------------------------------------------------- shape rules
def _forward_shape(ctx: InferContext, src_arg: str):
    """Canonical [N, C, H, W], [N, C, Ho, Wo] and resolved pads of the forward pooling."""
    d: Pooling2DOpDescriptor = ctx.attrs.descriptor
    n, c, h, w = _rank4(ctx, src_arg, d.dataLayout)
    ry = pool_output_size(h, d.kernelHeight, d.strideInY, d.dilationRateInY, d.paddingStyle,
                          d.paddingTop, d.paddingBottom, d.ceilMode)
    rx = pool_output_size(w, d.kernelWidth, d.strideInX, d.dilationRateInX, d.paddingStyle,
                          d.paddingLeft, d.paddingRight, d.ceilMode)
    for res, axis, size, k, dil, pads in (
            (ry, "height", h, d.kernelHeight, d.dilationRateInY,
             (d.paddingTop, d.paddingBottom)),
            (rx, "width", w, d.kernelWidth, d.dilationRateInX,
             (d.paddingLeft, d.paddingRight))):
        if res is None:
            pad = (f" + paddings {pads[0]} + {pads[1]}"
                   if d.paddingStyle == PaddingStyle.explicit else "")
            where = read_as("shape", ctx.type_of(src_arg).shape, d.dataLayout,
                             "H" if axis == "height" else "W")
            raise ctx.error(ShapeError, src_arg, f"a padded {axis} >= the dilated kernel "
                            f"extent {dil * (k - 1) + 1} (kernel {k}, dilation {dil}, "
                            f"{d.paddingStyle.name})",
                            f"{axis} {size}{pad} ({where}, which reads C from axis "
                            f"{d.dataLayout.name.index('C')})")
    pads = (ry[1], ry[2], rx[1], rx[2])
    return [n, c, h, w], [n, c, ry[0], rx[0]], pads


def _attrs(ctx: InferContext, x, y, pads) -> Pool2DAttrs | None:
    if not ctx.static:
        return None
    d: Pooling2DOpDescriptor = ctx.attrs.descriptor
    return Pool2DAttrs((d.kernelHeight, d.kernelWidth), (d.strideInY, d.strideInX),
                       (d.dilationRateInY, d.dilationRateInX), tuple(pads), d.dataLayout,
                       (x[2], x[3]), (y[2], y[3]), d.includeZeroPadToAverage)


def _infer_pool(ctx: InferContext):
    dt = _check_float(ctx, ("source",))
    x, y, pads = _forward_shape(ctx, "source")
    d = ctx.attrs.descriptor
    src = ctx.type_of("source")
    out = None if src.shape is None else from_canonical(y, d.dataLayout)
    return [ShapedType(out, dt)], _attrs(ctx, x, y, pads)


def _infer_pool_gradient(ctx: InferContext):
    dt = _check_float(ctx, ("gradient", "sourceTensor"))
    d = ctx.attrs.descriptor
    x, y, pads = _forward_shape(ctx, "sourceTensor")
    dy = _rank4(ctx, "gradient", d.dataLayout)
    gshape = ctx.type_of("gradient").shape
    if any(known(a, b) and a != b for a, b in zip(dy, y)):
        want = from_canonical(y, d.dataLayout)
        raise ctx.error(ShapeError, "gradient", f"the forward result's shape {want} (of "
                        f"sourceTensor {ctx.type_of('sourceTensor').shape}, "
                        f"{d.dataLayout.name}: C at axis {d.dataLayout.name.index('C')}; "
                        f"-1 = any)", gshape)
    src = ctx.type_of("sourceTensor")
    return [ShapedType(src.shape, dt)], _attrs(ctx, x, y, pads)


# ---------------------------------------------------------------------------- gradient rules
def _grad_maxPooling2D(g: Graph, op: Operation, dys):
    return {"source": g.maxPooling2DGradient(dys[0], op.input("source"),
                                             op.attrs.descriptor)}


def _grad_avgPooling2D(g: Graph, op: Operation, dys):
    return {"source": g.avgPooling2DGradient(dys[0], op.input("source"),
                                             op.attrs.descriptor)}


def _grad_avgPooling2DGradient(g: Graph, op: Operation, dys):
    # dx = A^T dy is linear in dy; its adjoint is A itself. sourceTensor gives only a shape.
    return {"gradient": g.avgPooling2D(dys[0], op.attrs.descriptor)}


# a shape error that the other dataLayout would fix says so (a layout mix-up)
_infer_pool_hinted = with_layout_hint(_infer_pool, {"dataLayout": ("is", "the source")})
_infer_pool_gradient_hinted = with_layout_hint(_infer_pool_gradient, {
    "dataLayout": ("are", "gradient and sourceTensor")})
register_op("maxPooling2D", _infer_pool_hinted, _grad_maxPooling2D)
register_op("avgPooling2D", _infer_pool_hinted, _grad_avgPooling2D)
register_op("maxPooling2DGradient", _infer_pool_gradient_hinted)
register_op("avgPooling2DGradient", _infer_pool_gradient_hinted, _grad_avgPooling2DGradient)


# ---------------------------------------------------------------------------- builders
class PoolingOps:
    """Graph methods of the pooling family (mixed into `Graph`)."""

    def _pool(self, kind: str, inputs, descriptor, name):
        d = Pooling2DOpDescriptor.validated_copy(descriptor, kind, name)
        return self._add(kind, inputs, _PoolOpAttrs(d), name)[0]

    def maxPooling2D(self, source: Tensor, descriptor: Pooling2DOpDescriptor, *,
                     name: str | None = None) -> Tensor:
        """2-D max pooling (Swift `maxPooling2D(withSourceTensor:descriptor:name:)`).

        source [N, C, H, W] (NCHW) or [N, H, W, C] (NHWC), float; result [N, C, Ho, Wo] in the
        same layout and dtype::

            y[n, c, i, j] = max_{p < kH, q < kW} x[n, c, i*sy - pt + p*ry, j*sx - pl + q*rx]

        over the taps inside the input (padding never wins: it is -inf)."""
        return self._pool("maxPooling2D", [("source", source)], descriptor, name)

    def avgPooling2D(self, source: Tensor, descriptor: Pooling2DOpDescriptor, *,
                     name: str | None = None) -> Tensor:
        """2-D average pooling (Swift `avgPooling2D(withSourceTensor:descriptor:name:)`).

        Shapes as maxPooling2D. The sum over the window's taps inside the input, divided by
        their count, or with `descriptor.includeZeroPadToAverage` by the count of taps inside
        the padded input (padding counts as zeros). An empty window gives 0."""
        return self._pool("avgPooling2D", [("source", source)], descriptor, name)

    def maxPooling2DGradient(self, gradient: Tensor, sourceTensor: Tensor | None = None,
                             descriptor: Pooling2DOpDescriptor | None = None, *,
                             name: str | None = None, indicesTensor: Tensor | None = None,
                             outputShape=None, outputShapeTensor: Tensor | None = None
                             ) -> Tensor:
        """dL/dsource of maxPooling2D (Swift `maxPooling2DGradient(withGradientTensor:
        sourceTensor:descriptor:name:)`): `gradient` has the forward result's shape
        [N, C, Ho, Wo]; the result has `sourceTensor`'s shape [N, C, H, W]. Each window's
        gradient goes to the first maximum of the window in tap order (row-major).

        The overload `maxPooling2DGradient(withGradientTensor:indicesTensor:outputShape:
        descriptor:name:)` takes `indicesTensor=` (from maxPooling2DReturnIndices, decoded
        with descriptor.returnIndicesMode) and `outputShape=` (the source's shape, a list or
        a shape tensor) instead of the source (ops/pool_extra.py)."""
        if indicesTensor is not None or sourceTensor is None:
            return self._pool_from_indices("maxPooling2DGradient", gradient, indicesTensor,
                                           outputShape, outputShapeTensor, descriptor, name,
                                           Pooling2DOpDescriptor, sourceTensor)
        return self._pool("maxPooling2DGradient", [("gradient", gradient),
                                                   ("sourceTensor", sourceTensor)],
                          descriptor, name)

    def avgPooling2DGradient(self, gradient: Tensor, sourceTensor: Tensor,
                             descriptor: Pooling2DOpDescriptor, *, name: str | None = None
                             ) -> Tensor:
        """dL/dsource of avgPooling2D (Swift `avgPooling2DGradient(withGradientTensor:
        sourceTensor:descriptor:name:)`): each window's gradient divided by the window's count
        (as in the forward op) is added to every tap of the window inside the source.
        Shapes as maxPooling2DGradient."""
        return self._pool("avgPooling2DGradient", [("gradient", gradient),
                                                   ("sourceTensor", sourceTensor)],
                          descriptor, name)
