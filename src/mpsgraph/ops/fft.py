"""The Fourier transform family (Apple's MPSGraphFourierTransformOps.h): fastFourierTransform,
realToHermiteanFFT and HermiteanToRealFFT, each with `axes=` a list of ints or a 1-D int32 /
int64 tensor (Swift's `axesTensor:` overloads; the keyword `axesTensor=` is accepted too).

    fastFourierTransform  tensor [...] float32 or complexFloat32 -> [...] complexFloat32
    realToHermiteanFFT    tensor [..., n, ...] float32 -> complexFloat32 with n -> n // 2 + 1
    HermiteanToRealFFT    tensor [..., m, ...] complexFloat32 -> float32 with
                          m -> 2 (m - 1) + (1 if descriptor.roundToOddHermitean else 0)

output[mu] = scale * sum_nu exp(-/+ i 2 pi mu nu / n) input[nu] over each axis of `axes`, with
+ when `descriptor.inverse`; scale = 1, 1/V or 1/sqrt(V) for FFTScalingMode none / size /
unitary, V the product of the transform lengths n (for HermiteanToRealFFT the lengths of the
RESULT, so that size scaling inverts realToHermiteanFFT). The halved axis of the two Hermitean
transforms is the highest-numbered axis of `axes`. Decisions in docs/semantics.md ("Resize,
FFT, attention and quantization decisions"): axes anywhere in the tensor (Apple: the last four),
negative axes count from the end, a repeated axis is a ShapeError, float16 / bFloat16 are
refused (their results would be complexFloat16, which mpsgraph does not have), and the
gradients raise UnsupportedError (gradients through complex tensors are not supported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..descriptors import FFTDescriptor
from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import DataType, FFTScalingMode, ShapedType
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["FourierTransformOps", "FFTAttrs", "FFTKernelAttrs"]

C64, F32 = DataType.complexFloat32, DataType.float32
_AXES_DTYPES = (DataType.int32, DataType.int64)


@dataclass(frozen=True)
class FFTAttrs:
    axes: tuple[int, ...] | None  # None: given by the axesTensor input
    descriptor: FFTDescriptor


@dataclass(frozen=True)
class FFTKernelAttrs:
    axes: tuple[int, ...]  # sorted, non-negative; the halved axis (Hermitean ops) is last
    inverse: bool
    scale: float
    lengths: tuple[int, ...]  # transform lengths n per axis (the full real length)


_INPUT = {"fastFourierTransform": ((F32, C64), "float32 or complexFloat32 (float16 results "
                                   "would be complexFloat16, which is not supported)"),
          "realToHermiteanFFT": ((F32,), "float32 (float16 results would be complexFloat16, "
                                 "which is not supported)"),
          "HermiteanToRealFFT": ((C64,), "complexFloat32 (complexFloat16 is not supported)")}


def _axes(ctx: InferContext, rank: int) -> tuple[int, ...] | None:
    a = ctx.attrs.axes
    label = "axes"
    if a is None:
        t = ctx.type_of("axesTensor")
        if t.dataType not in _AXES_DTYPES:
            raise ctx.error(DataTypeError, "axesTensor", "an int32 or int64 tensor", t.dataType)
        if t.shape is not None and len(t.shape) != 1:
            raise ctx.error(ShapeError, "axesTensor", "a 1-D tensor", f"shape {t.shape}")
        v = ctx.value_of("axesTensor")
        if v is None:
            return None
        a, label = tuple(int(i) for i in np.asarray(v).reshape(-1)), "axesTensor"
    out = []
    for i in a:
        if not -rank <= i < rank:
            raise ctx.error(ShapeError, label, f"axes in [-{rank}, {rank}) (the tensor's rank)",
                            list(a))
        if i % rank in out:
            raise ctx.error(ShapeError, label, "distinct axes", list(a))
        out.append(i % rank)
    return tuple(sorted(out))


def _rule(kind: str):
    dts, text = _INPUT[kind]

    def infer(ctx: InferContext):
        t = ctx.type_of("tensor")
        if t.dataType not in dts:
            raise ctx.error(DataTypeError, "tensor", text, t.dataType)
        d: FFTDescriptor = ctx.attrs.descriptor
        out_dt = F32 if kind == "HermiteanToRealFFT" else C64
        if t.shape is None:
            if ctx.attrs.axes is not None:
                pass
            return [ShapedType(None, out_dt)], None
        axes = _axes(ctx, len(t.shape))
        if axes is None:
            shape = list(t.shape) if kind == "fastFourierTransform" else [-1] * len(t.shape)
            return [ShapedType(shape, out_dt)], None
        if kind != "fastFourierTransform" and not axes:
            raise ctx.error(ShapeError, "axes", "at least one axis (the halved one)", [])
        shape = list(t.shape)
        lengths = [shape[a] for a in axes]
        if kind == "realToHermiteanFFT" and shape[axes[-1]] >= 0:
            shape[axes[-1]] = shape[axes[-1]] // 2 + 1
        elif kind == "HermiteanToRealFFT" and shape[axes[-1]] >= 0:
            m = shape[axes[-1]]
            if m == 0:
                raise ctx.error(ShapeError, "tensor", f"a non-empty axis {axes[-1]} (the "
                                "Hermitean half, of size n // 2 + 1 >= 1)", f"shape {t.shape}")
            shape[axes[-1]] = lengths[-1] = 2 * (m - 1) + (1 if d.roundToOddHermitean else 0)
        attrs = None
        if all(n >= 0 for n in lengths):
            v = math.prod(lengths)
            scale = {FFTScalingMode.none: 1.0, FFTScalingMode.size: 1.0 / v if v else 1.0,
                     FFTScalingMode.unitary: 1.0 / math.sqrt(v) if v else 1.0}[d.scalingMode]
            attrs = FFTKernelAttrs(axes, d.inverse, scale, tuple(lengths))
        return [ShapedType(shape, out_dt)], attrs
    return infer


def _no_grad(g, op, dys):
    raise UnsupportedError(f"{op.kind}: gradients through complex tensors are not supported "
                           "(docs/semantics.md, 'Complex inputs to the general ops')")


for _k in _INPUT:
    register_op(_k, _rule(_k), _no_grad, value_inputs=("axesTensor",))


class FourierTransformOps:
    """Graph methods of the Fourier transform family (mixed into `Graph`)."""

    def _fft(self, kind, tensor, axes, axesTensor, descriptor, name):
        from ..graph import Tensor

        if axesTensor is not None:
            if axes is not None:
                raise op_error(GraphError, kind, "axesTensor", "only one of axes and "
                               "axesTensor", "both", name)
            axes = axesTensor
        if axes is None:
            raise op_error(GraphError, kind, "axes", "a list of ints or an axes Tensor", None,
                           name)
        d = FFTDescriptor.validated_copy(FFTDescriptor() if descriptor is None else descriptor,
                                         kind, name)
        if isinstance(axes, Tensor):
            return self._add(kind, [("tensor", tensor), ("axesTensor", axes)],
                             FFTAttrs(None, d), name, optional=("axesTensor",))[0]
        if isinstance(axes, (str, bytes)) or not hasattr(axes, "__iter__") or not all(
                isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
                for i in axes):
            raise op_error(ShapeError, kind, "axes", "a list of ints or an axes Tensor", axes,
                           name)
        return self._add(kind, [("tensor", tensor), ("axesTensor", None)],
                         FFTAttrs(tuple(int(i) for i in axes), d), name,
                         optional=("axesTensor",))[0]

    def fastFourierTransform(self, tensor: Tensor, axes=None, *, descriptor=None,
                             axesTensor=None, name: str | None = None) -> Tensor:
        """Complex FFT over `axes`: [...] float32 / complexFloat32 -> [...] complexFloat32.
        `descriptor` (FFTDescriptor; None: the defaults) sets inverse and scalingMode."""
        return self._fft("fastFourierTransform", tensor, axes, axesTensor, descriptor, name)

    def realToHermiteanFFT(self, tensor: Tensor, axes=None, *, descriptor=None,
                           axesTensor=None, name: str | None = None) -> Tensor:
        """Real-to-complex FFT: float32 [.., n, ..] -> complexFloat32 [.., n // 2 + 1, ..]
        (the highest axis of `axes` keeps only its unique frequencies)."""
        return self._fft("realToHermiteanFFT", tensor, axes, axesTensor, descriptor, name)

    def HermiteanToRealFFT(self, tensor: Tensor, axes=None, *, descriptor=None,
                           axesTensor=None, name: str | None = None) -> Tensor:
        """Complex-to-real FFT: complexFloat32 [.., m, ..] -> float32 [.., 2 (m - 1) (+ 1 with
        descriptor.roundToOddHermitean), ..]; the input holds the unique frequencies of the
        highest axis of `axes` (the rest is their conjugate mirror)."""
        return self._fft("HermiteanToRealFFT", tensor, axes, axesTensor, descriptor, name)
