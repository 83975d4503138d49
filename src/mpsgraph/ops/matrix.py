"""The matrix family (Apple's MPSGraphMatrixMultiplicationOps.h): matrixMultiplication.

    primary [..., M, K] @ secondary [..., K, N] -> [..., M, N]

The leading (batch) dimensions broadcast with NumPy's rules (Apple: "with support for
broadcasting"), exactly as `numpy.matmul`. Both operands have one dataType: floating
(float16/bFloat16 multiply in float32 and round once) or integer (wrapping).

Decision (Apple's page is silent): operands of rank < 2 are refused with a ShapeError that says
how to reshape them ([K] -> [1, K] or [K, 1]); NumPy's promotion of vectors is not guessed.
Gradient: d primary = dy @ secondary^T and d secondary = primary^T @ dy, each summed over the
batch dimensions its operand was broadcast along (`sum_to_shape`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ShapeError
from ..types import ShapedType
from ._registry import InferContext, register_op
from .arithmetic import NUMERIC, broadcast_pair, same_dtype, sum_to_shape

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["MatrixOps"]

_ARGS = ("primary", "secondary")


def _infer_matrixMultiplication(ctx: InferContext):
    dt = same_dtype(ctx, _ARGS, NUMERIC, "a floating-point or integer type (not bool)")
    a, b = (ctx.type_of(n).shape for n in _ARGS)
    for n, s in zip(_ARGS, (a, b)):
        if s is not None and len(s) < 2:
            fix = "[1, K]" if n == "primary" else "[K, 1]"
            raise ctx.error(ShapeError, n, f"a tensor of rank >= 2 ([..., rows, columns]; "
                            f"reshape a vector [K] to {fix})", f"rank {len(s)} shape {s}")
    if a is None or b is None:
        return [ShapedType(None, dt)], None
    k1, k2 = a[-1], b[-2]
    if k1 >= 0 and k2 >= 0 and k1 != k2:
        raise ctx.error(ShapeError, "secondary", f"{k1} rows (the columns of primary {a})",
                        f"{k2} rows (shape {b})")
    batch = broadcast_pair(a[:-2], b[:-2])
    if batch is None:
        raise ctx.error(ShapeError, "secondary", f"batch dimensions broadcast-compatible with "
                        f"primary's {a[:-2]} (shape {a})", f"{b[:-2]} (shape {b})")
    return [ShapedType(batch + [a[-2], b[-1]], dt)], None


def _grad_matrixMultiplication(g, op, dys):
    a, b = op.input("primary"), op.input("secondary")
    dy = dys[0]
    da = g.matrixMultiplication(dy, g.transposeTensor(b, -2, -1))
    db = g.matrixMultiplication(g.transposeTensor(a, -2, -1), dy)
    return {"primary": sum_to_shape(g, da, a), "secondary": sum_to_shape(g, db, b)}


register_op("matrixMultiplication", _infer_matrixMultiplication, _grad_matrixMultiplication)


class MatrixOps:
    """Graph methods of the matrix family (mixed into `Graph`)."""

    def matrixMultiplication(self, primary: Tensor, secondary: Tensor, *,
                             name: str | None = None) -> Tensor:
        """Batched matrix product: primary [..., M, K] @ secondary [..., K, N] -> [..., M, N].

        Batch dimensions broadcast (NumPy matmul rules); both operands rank >= 2 and of one
        dataType (floating or integer)."""
        return self._add("matrixMultiplication", [("primary", primary),
                                                  ("secondary", secondary)], None, name)[0]
