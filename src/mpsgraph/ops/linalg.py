"""Linear-algebra odds and ends: Apple's MPSGraphLinearAlgebraOps.h (bandPart),
MPSGraphMatrixInverseOps.h (inverse), MPSGraphNonZeroOps.h (nonZeroIndices) and
HammingDistance of MPSGraphMatrixMultiplicationOps.h (matrixMultiplication is ops/matrix.py).

  bandPart(tensor [.., M, N], numLower, numUpper) -> same shape: element (i, j) kept where
      (numLower < 0 or i - j <= numLower) and (numUpper < 0 or j - i <= numUpper), else 0
      (tf.linalg.band_part). numLower / numUpper: ints, or scalar int32 / int64 tensors
      (`numLowerTensor=` / `numUpperTensor=`, read on the device: no host read).
  inverse(input [.., N, N]) -> the inverse of each matrix (floating types; half types invert in
      float32). A singular matrix, or one holding a NaN, gives NaN (every element of its
      inverse), not an error.
      Gradient: -(A^-T) dY (A^-T), built from matrixMultiplication and transposeTensor.
  HammingDistance(primary [.., M, K], secondary [.., N, K], resultDataType) -> [.., M, N]:
      the number of differing BITS between row m of primary and row n of secondary
      (popcount(primary[m, k] XOR secondary[n, k]) summed over k); batch dimensions broadcast.
      Integer or bool operands of one type; resultDataType uInt32 or uInt16 (Apple's page).
  nonZeroIndices(tensor) -> int32 [count, rank]: the coordinates of the elements != 0 (NaN
      counts as non-zero; bool: True) in row-major order (np.argwhere, tf.where). The result's
      shape depends on the VALUES: its build-time shape is [-1, rank]; a compiled Executable
      decides `count` on every run (one device -> host read of the count on the torch
      backend), and the ops that use the result are re-planned on every run from the shapes
      they get (their shape rules run again; runtime/executable.py `_runtime_attrs`); no
      CUDA graph is captured for such an executable (OpDef.host_reads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import FLOATING, DataType, ShapedType
from ._registry import InferContext, register_op
from .activation import check_int
from .arithmetic import ANY_TYPE, INTEGER, broadcast_pair

if TYPE_CHECKING:
    from ..graph import Graph, Tensor

__all__ = ["LinalgOps", "BandAttrs"]

_INT = (DataType.int32, DataType.int64)
_HAMMING_OUT = (DataType.uInt32, DataType.uInt16)


@dataclass(frozen=True)
class BandAttrs:
    numLower: int | None  # None: the numLowerTensor input
    numUpper: int | None


def _matrix(ctx: InferContext, label: str, what: str):
    t = ctx.type_of(label)
    if t.shape is not None and len(t.shape) < 2:
        raise ctx.error(ShapeError, label, f"a tensor of rank >= 2 ({what})",
                        f"rank {len(t.shape)} shape {t.shape}")
    return t


def _infer_bandPart(ctx: InferContext):
    t = _matrix(ctx, "tensor", "[..., rows, columns]")
    if t.dataType not in ANY_TYPE:
        raise ctx.error(DataTypeError, "tensor", "a floating-point, integer or bool type",
                        t.dataType)
    for lab in ("numLowerTensor", "numUpperTensor"):
        if lab in ctx.input_names:
            st = ctx.type_of(lab)
            if st.dataType not in _INT:
                raise ctx.error(DataTypeError, lab, "an int32 or int64 scalar tensor",
                                st.dataType)
            if st.shape is not None and all(d >= 0 for d in st.shape) and \
                    int(np.prod(st.shape)) != 1:
                raise ctx.error(ShapeError, lab, "a scalar tensor", f"shape {st.shape}")
    return [t], ctx.attrs


def _grad_bandPart(g, op, dys):
    a: BandAttrs = op.attrs
    kw = {"numLower": a.numLower if a.numLower is not None else op.input("numLowerTensor"),
          "numUpper": a.numUpper if a.numUpper is not None else op.input("numUpperTensor")}
    return {"tensor": g.bandPart(dys[0], **kw)}


def _infer_inverse(ctx: InferContext):
    t = _matrix(ctx, "input", "[..., N, N]")
    if t.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "input", "float32, float16 or bFloat16", t.dataType)
    s = t.shape
    if s is not None and s[-1] >= 0 and s[-2] >= 0 and s[-1] != s[-2]:
        raise ctx.error(ShapeError, "input", "square matrices [..., N, N]", s)
    return [t], None


def _grad_inverse(g, op, dys):
    y = op.outputTensors[0]
    yt = g.transposeTensor(y, -2, -1)
    return {"input": g.negative(g.matrixMultiplication(g.matrixMultiplication(yt, dys[0]), yt))}


def _infer_hamming(ctx: InferContext):
    a = _matrix(ctx, "primary", "[..., M, K]")
    b = _matrix(ctx, "secondary", "[..., N, K]")
    allowed = INTEGER + (DataType.bool,)
    for lab, t in (("primary", a), ("secondary", b)):
        if t.dataType not in allowed:
            raise ctx.error(DataTypeError, lab, "an integer or bool type (bit vectors)",
                            t.dataType)
    if b.dataType != a.dataType:
        raise ctx.error(DataTypeError, "secondary", f"{a.dataType!r} (the dataType of primary)",
                        b.dataType)
    out_dt = ctx.attrs
    if a.shape is None or b.shape is None:
        return [ShapedType(None, out_dt)], None
    ka, kb = a.shape[-1], b.shape[-1]
    if ka >= 0 and kb >= 0 and ka != kb:
        raise ctx.error(ShapeError, "secondary", f"rows of {ka} elements (the last dimension "
                        f"of primary {a.shape})", f"shape {b.shape}")
    batch = broadcast_pair(a.shape[:-2], b.shape[:-2])
    if batch is None:
        raise ctx.error(ShapeError, "secondary", f"batch dimensions broadcast-compatible with "
                        f"primary's {a.shape[:-2]}", b.shape[:-2])
    return [ShapedType(batch + [a.shape[-2], b.shape[-2]], out_dt)], out_dt


def _infer_nonzero(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.dataType not in ANY_TYPE:
        raise ctx.error(DataTypeError, "tensor", "a floating-point, integer or bool type",
                        t.dataType)
    return [ShapedType(None if t.shape is None else [-1, len(t.shape)], DataType.int32)], None


register_op("bandPart", _infer_bandPart, _grad_bandPart)
register_op("inverse", _infer_inverse, _grad_inverse)
register_op("HammingDistance", _infer_hamming, None)
register_op("nonZeroIndices", _infer_nonzero, None, host_reads=lambda op: True)


class LinalgOps:
    """Graph methods of the linear-algebra family (mixed into `Graph`)."""

    def bandPart(self: Graph, tensor: Tensor, *, numLower=None, numUpper=None,
                 numLowerTensor=None, numUpperTensor=None, name: str | None = None) -> Tensor:
        """Keep the band of each matrix [.., M, N]: (i, j) with i - j <= numLower and
        j - i <= numUpper (a negative bound keeps that whole triangle); zeros elsewhere.
        Each bound is an int or a scalar int tensor (`numLowerTensor=` too)."""
        from ..graph import Tensor

        kind = "bandPart"
        inputs = [("tensor", tensor)]
        vals = []
        for lab, v, tv in (("numLower", numLower, numLowerTensor),
                           ("numUpper", numUpper, numUpperTensor)):
            if v is not None and tv is not None:
                raise op_error_both(kind, lab, name)
            if isinstance(v, Tensor):
                v, tv = None, v
            if tv is not None:
                inputs.append((lab + "Tensor", tv))
                vals.append(None)
            elif v is None:
                raise op_error_missing(kind, lab, name)
            else:
                vals.append(check_int(kind, name, lab, v))
        return self._add(kind, inputs, BandAttrs(*vals), name)[0]

    def inverse(self: Graph, input: Tensor, *, name: str | None = None) -> Tensor:
        """The inverse of each square matrix of `input` [.., N, N] (NaN where singular)."""
        return self._add("inverse", [("input", input)], None, name)[0]

    def HammingDistance(self: Graph, primary: Tensor, secondary: Tensor, *,
                        resultDataType: DataType = DataType.uInt32,
                        name: str | None = None) -> Tensor:
        """Bitwise Hamming distances between the rows: primary [.., M, K], secondary
        [.., N, K] -> resultDataType (uInt32 or uInt16) [.., M, N]; batch broadcasts."""
        try:
            dt = DataType(resultDataType)
            if isinstance(resultDataType, bool) or dt not in _HAMMING_OUT:
                raise ValueError
        except (ValueError, TypeError):
            raise op_error(DataTypeError, "HammingDistance", "resultDataType", "uInt32 or "
                           "uInt16", resultDataType, name) from None
        return self._add("HammingDistance", [("primary", primary), ("secondary", secondary)],
                         dt, name)[0]

    def nonZeroIndices(self: Graph, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """int32 [count, rank]: the coordinates of the non-zero elements, row-major; the
        count is decided when the graph runs (module docstring)."""
        return self._add("nonZeroIndices", [("tensor", tensor)], None, name)[0]


def op_error_both(kind: str, label: str, name: str | None) -> GraphError:
    return op_error(GraphError, kind, label + "Tensor", f"only one of {label} and "
                    f"{label}Tensor", "both", name)


def op_error_missing(kind: str, label: str, name: str | None) -> GraphError:
    return op_error(GraphError, kind, label, "an int or a scalar int Tensor", None, name)
