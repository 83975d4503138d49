"""The rest of the pooling family (issue 18): Apple's 4-D pooling, max pooling that returns
indices, the max-pooling gradient from indices, and MPSGraphImToColOps.

    maxPooling4D / avgPooling4D / L2NormPooling4D    source (rank >= 4; the last four axes
                                  are pooled with descriptor.kernelSizes etc., leading axes
                                  are batch) -> the pooled shape
    maxPooling4DGradient / avgPooling4DGradient / L2NormPooling4DGradient
                                  (gradient [pooled shape], source) -> source shape
    maxPooling2DReturnIndices(source, Pooling2DOpDescriptor) -> [values, indices]
    maxPooling4DReturnIndices(source, Pooling4DOpDescriptor) -> [values, indices]
    maxPooling2DGradient / maxPooling4DGradient(gradient, indicesTensor=, outputShape=)
                                  -> outputShape (the source's shape)

All of them are one N-D window computation over the source IN ITS OWN LAYOUT: every axis has
(kernel, stride, dilation, padding before / after); axes that are not pooled have a window of
one. A 2-D descriptor pools the H and W axes of its dataLayout; a 4-D descriptor the last four
axes. Output sizes per axis: ops/pooling.py's `pool_output_size` (SPEC 2.4 plus ceilMode).

Indices (PoolingReturnIndicesMode): for globalFlattenkD the argmax's coordinates in the
source, flattened (row-major) over the source's k innermost axes; for localFlattenkD the
argmax's tap inside its window, flattened over the window's k innermost axes (window size 1
on axes that are not pooled). The maximum is the first one in tap order (row-major), NaN
propagates (the first NaN wins); a window with no tap inside the source gives -inf and
index -1. The gradient from indices sends each gradient element to the decoded position
(overlapping windows add); it needs the indices to identify every coordinate that a window
moves along: a pooled axis (window > 1) outside the k flattened axes is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..descriptors import ImToColOpDescriptor, Pooling2DOpDescriptor, Pooling4DOpDescriptor
from ..errors import DataTypeError, ShapeError
from ..types import DataType, PaddingStyle, ShapedType
from ..types import TensorNamedDataLayout as L
from ._checks import output_shape_value
from ._checks import same_float_type as _check_float
from ._registry import InferContext, register_op
from ._shape_math import UNKNOWN, known
from .pooling import pool_output_size

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["PoolNDAttrs", "PoolExtraOps", "ImToColAttrs"]


@dataclass(frozen=True)
class PoolNDAttrs:
    """Resolved per-axis window parameters for kernels, in the source's own layout."""

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]  # (before, after), resolved
    in_shape: tuple[int, ...]  # the source
    out_shape: tuple[int, ...]  # the pooled result
    include_zero_pad: bool = False
    mode: int = 0  # PoolingReturnIndicesMode raw value
    index_dtype: str = "int32"

    @property
    def work_shape(self) -> tuple[int, ...]:
        """The padded source, grown to hold every window (ceilMode windows may reach past the
        padding)."""
        return tuple(max(pb + n + pe, (o - 1) * s + r * (k - 1) + 1 if o > 0 else 0)
                     for (pb, pe), n, o, s, r, k in zip(self.pads, self.in_shape,
                                                        self.out_shape, self.stride,
                                                        self.dilation, self.kernel))

    def tap(self, t: Sequence[int]) -> tuple[slice, ...]:
        """The slices of the work array that window tap `t` (one index per axis) reads."""
        return tuple(slice(ti * r, ti * r + s * (o - 1) + 1, s) for ti, r, s, o in
                     zip(t, self.dilation, self.stride, self.out_shape))

    def taps(self) -> list[tuple[int, ...]]:
        import itertools

        return list(itertools.product(*(range(k) for k in self.kernel)))

    def inside(self) -> tuple[slice, ...]:
        """Where the source lies in the work array."""
        return tuple(slice(pb, pb + n) for (pb, _), n in zip(self.pads, self.in_shape))


@dataclass(frozen=True)
class _PoolAttrs:
    descriptor: Any
    output_shape: tuple[int, ...] | None = None


# ---------------------------------------------------------------------------- geometry
def _axes_params(ctx: InferContext, d: Any, arg: str, shape: list[int]):
    """(kernel, stride, dilation, raw pads) per axis of a source of `shape`, and the axes the
    descriptor pools (they follow the padding style)."""
    rank = len(shape)
    k, s, r, p = [1] * rank, [1] * rank, [1] * rank, [(0, 0)] * rank
    if isinstance(d, Pooling2DOpDescriptor):
        if rank != 4:
            raise ctx.error(ShapeError, arg, f"a rank-4 tensor ({d.dataLayout.name})",
                            f"rank {rank} shape {shape}")
        hy, wx = (2, 3) if d.dataLayout == L.NCHW else (1, 2)
        k[hy], s[hy], r[hy], p[hy] = (d.kernelHeight, d.strideInY, d.dilationRateInY,
                                      (d.paddingTop, d.paddingBottom))
        k[wx], s[wx], r[wx], p[wx] = (d.kernelWidth, d.strideInX, d.dilationRateInX,
                                      (d.paddingLeft, d.paddingRight))
        return k, s, r, p, (hy, wx)
    if rank < 4:
        raise ctx.error(ShapeError, arg, "a tensor of rank >= 4 (its last four axes are "
                        "pooled)", f"rank {rank} shape {shape}")
    axes = tuple(range(rank - 4, rank))
    pv = d.paddingValues
    for i, ax in enumerate(axes):
        k[ax], s[ax], r[ax] = d.kernelSizes[i], d.strides[i], d.dilationRates[i]
        p[ax] = (pv[2 * i], pv[2 * i + 1])
    return k, s, r, p, axes


def _forward(ctx: InferContext, arg: str):
    """(kernel, stride, dilation, pads, in_shape, out_shape, pooled axes) of the forward
    pooling of source argument `arg` (out_shape None for an unranked source)."""
    d = ctx.attrs.descriptor
    shape = ctx.type_of(arg).shape
    if shape is None:
        return None
    return _forward_of_shape(ctx, d, arg, list(shape))


def _forward_of_shape(ctx, d, arg, shape):
    k, s, r, p, axes = _axes_params(ctx, d, arg, shape)
    out, pads = list(shape), list(p)
    for ax in axes:
        res = pool_output_size(shape[ax], k[ax], s[ax], r[ax], d.paddingStyle, p[ax][0],
                               p[ax][1], d.ceilMode)
        if res is None:
            pad = (f" + paddings {p[ax][0]} + {p[ax][1]}"
                   if d.paddingStyle == PaddingStyle.explicit else "")
            raise ctx.error(ShapeError, arg, f"a padded size >= the dilated kernel extent "
                            f"{r[ax] * (k[ax] - 1) + 1} on axis {ax} (kernel {k[ax]}, dilation "
                            f"{r[ax]}, {d.paddingStyle.name})",
                            f"size {shape[ax]}{pad} (shape {shape})")
        out[ax], pads[ax] = res[0], (res[1], res[2])
    return k, s, r, pads, shape, out, axes


def _attrs(ctx, geo, mode=0, index_dtype="int32"):
    if not ctx.static or geo is None:
        return None
    k, s, r, pads, shape, out, _ = geo
    return PoolNDAttrs(tuple(k), tuple(s), tuple(r), tuple(tuple(x) for x in pads),
                       tuple(shape), tuple(out),
                       bool(getattr(ctx.attrs.descriptor, "includeZeroPadToAverage", False)),
                       int(mode), index_dtype)


def _mode(d) -> int:
    return int(d.returnIndicesMode)


def _infer_pool(ctx: InferContext):
    dt = _check_float(ctx, ("source",))
    geo = _forward(ctx, "source")
    return [ShapedType(None if geo is None else geo[5], dt)], _attrs(ctx, geo)


def _infer_pool_indices(ctx: InferContext):
    dt = _check_float(ctx, ("source",))
    geo = _forward(ctx, "source")
    d = ctx.attrs.descriptor
    out = None if geo is None else geo[5]
    outs = [ShapedType(out, dt)]
    if _mode(d) != 0:
        outs.append(ShapedType(out, DataType(int(d.returnIndicesDataType))))
    idt = DataType(int(d.returnIndicesDataType)).numpy_dtype.name
    return outs, _attrs(ctx, geo, _mode(d), idt)


def _infer_pool_gradient(ctx: InferContext):
    dt = _check_float(ctx, ("gradient", "source"))
    geo = _forward(ctx, "source")
    gshape = ctx.type_of("gradient").shape
    if geo is not None and gshape is not None and (
            len(gshape) != len(geo[5]) or any(known(a, b) and a != b
                                              for a, b in zip(gshape, geo[5]))):
        raise ctx.error(ShapeError, "gradient", f"the forward result's shape {geo[5]} (of "
                        f"source {ctx.type_of('source').shape}; -1 = any)", gshape)
    return [ShapedType(ctx.type_of("source").shape, dt)], _attrs(ctx, geo)


def _infer_pool_gradient_indices(ctx: InferContext):
    ctx = dataclasses.replace(ctx, kind=ctx.kind[:-len("Indices")])  # errors: the Swift name
    dt = _check_float(ctx, ("gradient",))
    d = ctx.attrs.descriptor
    it = ctx.type_of("indicesTensor")
    if it.dataType not in (DataType.int32, DataType.int64):
        raise ctx.error(DataTypeError, "indicesTensor", "int32 or int64 indices", it.dataType)
    gshape = ctx.type_of("gradient").shape
    if it.shape is not None and gshape is not None and (
            len(it.shape) != len(gshape)
            or any(known(a, b) and a != b for a, b in zip(it.shape, gshape))):
        raise ctx.error(ShapeError, "indicesTensor", f"the gradient's shape {gshape}",
                        it.shape)
    mode = _mode(d)
    if mode == 0:
        raise ctx.error(ShapeError, "descriptor.returnIndicesMode", "the mode the indices "
                        "were made with (not none)", "PoolingReturnIndicesMode.none")
    # outputShape: list attr or shape tensor
    shape = output_shape_value(ctx, None)
    if shape is None:
        t = ctx.type_of("outputShape")
        n = gshape and len(gshape) or (t.shape[0] if t.shape else None)
        return [ShapedType(None if n in (None, UNKNOWN) else [UNKNOWN] * n, dt)], None
    if any(x < 0 for x in shape) or (gshape is not None and len(shape) != len(gshape)):
        raise ctx.error(ShapeError, "outputShape", "the forward source's shape (sizes >= 0, "
                        f"the gradient's rank {None if gshape is None else len(gshape)})",
                        shape)
    geo = _forward_of_shape(ctx, d, "outputShape", shape)
    if gshape is not None and any(known(a, b) and a != b for a, b in zip(gshape, geo[5])):
        raise ctx.error(ShapeError, "outputShape", f"a source shape whose pooled shape is the "
                        f"gradient's {gshape}", f"{shape}, whose pooled shape is {geo[5]}")
    k, _, _, _, _, _, axes = geo
    depth = (mode - 1) % 4 + 1  # k innermost axes flattened
    rank = len(shape)
    for ax in axes:
        if k[ax] > 1 and ax < rank - depth:
            raise ctx.error(ShapeError, "descriptor.returnIndicesMode", f"a mode that "
                            f"flattens axis {ax} (pooled with a window of {k[ax]}): "
                            f"{'global' if mode <= 4 else 'local'}Flatten{rank - ax}D or more",
                            f"{'global' if mode <= 4 else 'local'}Flatten{depth}D")
    return [ShapedType(shape, dt)], _attrs(ctx, geo, mode, it.dataType.numpy_dtype.name)


# ---------------------------------------------------------------------------- gradient rules
def _grad_of(kind_grad: str):
    """The source's gradient through the value-based gradient op `kind_grad` (for the
    ReturnIndices ops: of the values output; the indices have none)."""
    def rule(g: Graph, op: Operation, dys):
        if dys[0] is None:
            return {}
        return {"source": getattr(g, kind_grad)(dys[0], op.input("source"),
                                                op.attrs.descriptor)}
    return rule


def _grad_avgPooling4DGradient(g: Graph, op: Operation, dys):
    return {"gradient": g.avgPooling4D(dys[0], op.attrs.descriptor)}


register_op("maxPooling4D", _infer_pool, _grad_of("maxPooling4DGradient"))
register_op("avgPooling4D", _infer_pool, _grad_of("avgPooling4DGradient"))
register_op("L2NormPooling4D", _infer_pool, _grad_of("L2NormPooling4DGradient"))
register_op("maxPooling4DGradient", _infer_pool_gradient)
register_op("avgPooling4DGradient", _infer_pool_gradient, _grad_avgPooling4DGradient)
register_op("L2NormPooling4DGradient", _infer_pool_gradient)
register_op("maxPooling2DReturnIndices", _infer_pool_indices,
            _grad_of("maxPooling2DGradient"))
register_op("maxPooling4DReturnIndices", _infer_pool_indices,
            _grad_of("maxPooling4DGradient"))
# the gradient from indices checks the (possibly fed) indices on the host before scattering
# (backends/_window_nd.py `max_pool_gradient_from_indices`): a host read, which keeps its
# executable out of a CUDA graph (as a gather of fed indices, ops/gather.py)
register_op("maxPooling2DGradientIndices", _infer_pool_gradient_indices,
            value_inputs=("outputShape",), host_reads=lambda op: True)
register_op("maxPooling4DGradientIndices", _infer_pool_gradient_indices,
            value_inputs=("outputShape",), host_reads=lambda op: True)


# ---------------------------------------------------------------------------- imToCol
@dataclass(frozen=True)
class ImToColAttrs:
    """imToCol / colToIm in canonical NCHW: the image [N, C, H, W], the columns
    [N, C*kH*kW, Ho*Wo] (channel-major, then the tap, row-major)."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, bottom, left, right
    image_nchw: tuple[int, int, int, int]
    out_hw: tuple[int, int]
    nhwc: bool
    out_shape: tuple[int, ...]


def _im2col_geom(ctx, d: ImToColOpDescriptor, arg, shape):
    if len(shape) != 4:
        raise ctx.error(ShapeError, arg, f"a rank-4 tensor ({d.dataLayout.name})",
                        f"rank {len(shape)} shape {list(shape)}")
    n, c, h, w = ([shape[0], shape[3], shape[1], shape[2]] if d.dataLayout == L.NHWC
                  else list(shape))
    res = []
    for size, k, s, r, pb, pe, axis in ((h, d.kernelHeight, d.strideInY, d.dilationRateInY,
                                         d.paddingTop, d.paddingBottom, "height"),
                                        (w, d.kernelWidth, d.strideInX, d.dilationRateInX,
                                         d.paddingLeft, d.paddingRight, "width")):
        if not known(size):
            res.append(UNKNOWN)
            continue
        span = size + pb + pe - (r * (k - 1) + 1)
        if span < 0:
            raise ctx.error(ShapeError, arg, f"a padded {axis} >= the dilated kernel extent "
                            f"{r * (k - 1) + 1}", f"{axis} {size} + paddings {pb} + {pe} "
                            f"(shape {list(shape)})")
        res.append(span // s + 1)
    return n, c, h, w, res[0], res[1]


def _col_shape(d, n, c, ho, wo):
    kk = d.kernelHeight * d.kernelWidth
    ck = c * kk if known(c) else UNKNOWN
    m = ho * wo if known(ho, wo) else UNKNOWN
    return [n, ck, m] if d.dataLayout == L.NCHW else [n, m, ck]


def _im2col_attrs(ctx, d, n, c, h, w, ho, wo, out):
    if not ctx.static:
        return None
    return ImToColAttrs((d.kernelHeight, d.kernelWidth), (d.strideInY, d.strideInX),
                        (d.dilationRateInY, d.dilationRateInX),
                        (d.paddingTop, d.paddingBottom, d.paddingLeft, d.paddingRight),
                        (n, c, h, w), (ho, wo), d.dataLayout == L.NHWC, tuple(out))


_IM2COL_TYPES = (DataType.float32, DataType.float16, DataType.bFloat16, DataType.int8,
                 DataType.int16, DataType.int32, DataType.int64, DataType.uInt8)


def _im2col_dtype(ctx: InferContext) -> DataType:
    dt = ctx.type_of("source").dataType
    if dt not in _IM2COL_TYPES:
        raise ctx.error(DataTypeError, "source", "float32, float16, bFloat16, int8, int16, "
                        "int32, int64 or uInt8", dt)
    return dt


def _infer_imToCol(ctx: InferContext):
    dt = _im2col_dtype(ctx)
    d = ctx.attrs.descriptor
    shape = ctx.type_of("source").shape
    if shape is None:
        return [ShapedType(None, dt)], None
    n, c, h, w, ho, wo = _im2col_geom(ctx, d, "source", shape)
    out = _col_shape(d, n, c, ho, wo)
    return [ShapedType(out, dt)], _im2col_attrs(ctx, d, n, c, h, w, ho, wo, out)


def _infer_colToIm(ctx: InferContext):
    dt = _im2col_dtype(ctx)
    d = ctx.attrs.descriptor
    shape = list(ctx.attrs.output_shape)
    if any(s < 0 for s in shape):
        raise ctx.error(ShapeError, "outputShape", "the image's shape (4 sizes >= 0)", shape)
    n, c, h, w, ho, wo = _im2col_geom(ctx, d, "outputShape", shape)
    want = _col_shape(d, n, c, ho, wo)
    cs = ctx.type_of("source").shape
    if cs is not None and (len(cs) != 3 or any(known(a, b) and a != b
                                               for a, b in zip(cs, want))):
        raise ctx.error(ShapeError, "source", f"columns of shape {want} (imToCol of an image "
                        f"of shape {shape}: [N, C*kH*kW, Ho*Wo] for NCHW, [N, Ho*Wo, C*kH*kW] "
                        "for NHWC)", cs)
    return [ShapedType(shape, dt)], _im2col_attrs(ctx, d, n, c, h, w, ho, wo, shape)


def _grad_imToCol(g: Graph, op: Operation, dys):
    from .convolution import _static_shape

    x = op.input("source")
    return {"source": g.colToIm(dys[0], outputShape=_static_shape(op.kind, x),
                                descriptor=op.attrs.descriptor)}


def _grad_colToIm(g: Graph, op: Operation, dys):
    return {"source": g.imToCol(dys[0], descriptor=op.attrs.descriptor)}


register_op("imToCol", _infer_imToCol, _grad_imToCol)
register_op("colToIm", _infer_colToIm, _grad_colToIm)


# ---------------------------------------------------------------------------- builders
class PoolExtraOps:
    """Graph methods of 4-D pooling, pooling with indices and imToCol (mixed into `Graph`)."""

    def _pool4(self, kind: str, inputs, descriptor, name, cls=Pooling4DOpDescriptor,
               attrs_shape=None, optional=()):
        op = kind[:-len("Indices")] if kind.endswith("GradientIndices") else kind
        d = cls.validated_copy(descriptor, op, name)
        return self._add(kind, inputs, _PoolAttrs(d, attrs_shape), name, optional=optional)

    def maxPooling4D(self, source: Tensor, descriptor: Pooling4DOpDescriptor, *,
                     name: str | None = None) -> Tensor:
        """Max pooling over the last four axes of `source` (rank >= 4; leading axes are
        batch), with `descriptor.kernelSizes`, `strides`, `dilationRates`, `paddingValues`
        ((before, after) per axis, slowest first), `paddingStyle` and `ceilMode`. Padding
        never wins (-inf); NaN propagates; a window with no tap in the source gives -inf."""
        return self._pool4("maxPooling4D", [("source", source)], descriptor, name)[0]

    def avgPooling4D(self, source: Tensor, descriptor: Pooling4DOpDescriptor, *,
                     name: str | None = None) -> Tensor:
        """Average pooling over the last four axes: the window's sum over the taps inside the
        source divided by their count (with `includeZeroPadToAverage`: by the count of taps
        inside the padded source). An empty window gives 0."""
        return self._pool4("avgPooling4D", [("source", source)], descriptor, name)[0]

    def L2NormPooling4D(self, source: Tensor, descriptor: Pooling4DOpDescriptor, *,
                        name: str | None = None) -> Tensor:
        """L2-norm pooling over the last four axes: sqrt(sum of the squares of the window's
        taps inside the source) (padding contributes zeros; no division)."""
        return self._pool4("L2NormPooling4D", [("source", source)], descriptor, name)[0]

    def maxPooling4DGradient(self, gradient: Tensor, source: Tensor | None = None,
                             descriptor: Pooling4DOpDescriptor | None = None, *,
                             name: str | None = None, indicesTensor: Tensor | None = None,
                             outputShape: Sequence[int] | Tensor | None = None,
                             outputShapeTensor: Tensor | None = None) -> Tensor:
        """dL/dsource of maxPooling4D. Either `source` (each window's gradient goes to its
        first maximum in tap order) or `indicesTensor` with `outputShape` (the source's
        shape, a list or a shape tensor): the indices of maxPooling4DReturnIndices, decoded
        with `descriptor.returnIndicesMode`."""
        if indicesTensor is not None or source is None:
            return self._pool_from_indices("maxPooling4DGradient", gradient, indicesTensor,
                                           outputShape, outputShapeTensor, descriptor, name,
                                           Pooling4DOpDescriptor, source)
        return self._pool4("maxPooling4DGradient", [("gradient", gradient),
                                                    ("source", source)], descriptor, name)[0]

    def avgPooling4DGradient(self, gradient: Tensor, source: Tensor,
                             descriptor: Pooling4DOpDescriptor, *, name: str | None = None
                             ) -> Tensor:
        """dL/dsource of avgPooling4D (each window's gradient / its count, added to every
        tap of the window inside the source)."""
        return self._pool4("avgPooling4DGradient", [("gradient", gradient),
                                                    ("source", source)], descriptor, name)[0]

    def L2NormPooling4DGradient(self, gradient: Tensor, source: Tensor,
                                descriptor: Pooling4DOpDescriptor, *, name: str | None = None
                                ) -> Tensor:
        """dL/dsource of L2NormPooling4D: sum over the windows holding x of
        gradient * x / norm (0 where the window's norm is 0)."""
        return self._pool4("L2NormPooling4DGradient", [("gradient", gradient),
                                                       ("source", source)], descriptor,
                           name)[0]

    def maxPooling2DReturnIndices(self, source: Tensor, descriptor: Pooling2DOpDescriptor, *,
                                  name: str | None = None) -> list:
        """[maxPooling2D(source), indices] (indices of dtype descriptor.returnIndicesDataType,
        encoded by descriptor.returnIndicesMode; None when the mode is none, as Apple returns
        nil)."""
        outs = self._pool4("maxPooling2DReturnIndices", [("source", source)], descriptor,
                           name, cls=Pooling2DOpDescriptor)
        return [outs[0], outs[1] if len(outs) > 1 else None]

    def maxPooling4DReturnIndices(self, source: Tensor, descriptor: Pooling4DOpDescriptor, *,
                                  name: str | None = None) -> list:
        """[maxPooling4D(source), indices], as maxPooling2DReturnIndices."""
        outs = self._pool4("maxPooling4DReturnIndices", [("source", source)], descriptor,
                           name)
        return [outs[0], outs[1] if len(outs) > 1 else None]

    def _pool_from_indices(self, kind, gradient, indicesTensor, outputShape, outputShapeTensor,
                           descriptor, name, cls, source):
        from ..errors import GraphError, op_error
        from .convolution import _split_shape

        if source is not None:
            raise op_error(GraphError, kind, "indicesTensor", "either a source tensor or "
                           "indicesTensor with outputShape", "both", name)
        if indicesTensor is None:
            raise op_error(GraphError, kind, "indicesTensor", "a source tensor or "
                           "indicesTensor with outputShape", None, name)
        shape, tensor = _split_shape(kind, name, outputShape, outputShapeTensor)
        inputs = [("gradient", gradient), ("indicesTensor", indicesTensor),
                  ("outputShape", tensor)]
        return self._pool4(kind + "Indices", inputs, descriptor, name, cls=cls,
                           attrs_shape=shape, optional=("outputShape",))[0]

    # -- imToCol
    def imToCol(self, source: Tensor, descriptor: ImToColOpDescriptor, *,
                name: str | None = None) -> Tensor:
        """Image to columns (im2col): source [N, C, H, W] (NCHW) -> [N, C*kH*kW, Ho*Wo], or
        [N, H, W, C] (NHWC) -> [N, Ho*Wo, kH*kW*C]::

            col[n, (c*kH + p)*kW + q, i*Wo + j] = x[n, c, i*sy - pt + p*ry, j*sx - pl + q*rx]

        (NHWC: col[n, i*Wo + j, (p*kW + q)*C + c]); zero outside the source. Any dtype.
        Ho, Wo = floor((in + pads - dilated kernel) / stride) + 1."""
        d = ImToColOpDescriptor.validated_copy(descriptor, "imToCol", name)
        return self._add("imToCol", [("source", source)], _PoolAttrs(d, None), name)[0]

    def colToIm(self, source: Tensor, outputShape: Sequence[int],
                descriptor: ImToColOpDescriptor, *, name: str | None = None) -> Tensor:
        """Columns to image (col2im), the adjoint of imToCol: every column entry is added to
        the image position imToCol read it from (overlapping windows add; padding is
        dropped). `outputShape` is the image's shape in descriptor.dataLayout."""
        from .convolution import _split_shape

        d = ImToColOpDescriptor.validated_copy(descriptor, "colToIm", name)
        shape, tensor = _split_shape("colToIm", name, outputShape, None)
        if tensor is not None:
            from ..errors import op_error
            raise op_error(ShapeError, "colToIm", "outputShape", "a list of 4 ints",
                           "a Tensor", name)
        return self._add("colToIm", [("source", source)], _PoolAttrs(d, shape), name)[0]
