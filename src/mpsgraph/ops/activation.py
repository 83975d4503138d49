"""The activation family (Apple's MPSGraphActivationOps.h): sigmoid, tanh, reLU, softMax,
leakyReLU and Apple's gradient ops for them (sigmoidGradient, reLUGradient, softMaxGradient,
leakyReLUGradient). Floating types only (float32, float16, bFloat16); half types compute in
float32 and round once.

Meanings (x the forward input, dy the incoming gradient):

    sigmoid(x)                  1 / (1 + exp(-x))            (computed without overflow)
    tanh(x)                     tanh(x)
    reLU(x)                     max(x, 0)
    softMax(x, axis)            exp(x - max) / sum(exp(x - max)) along axis (stable)
    leakyReLU(x, alpha)         x if x >= 0 else alpha * x
    sigmoidGradient(dy, x)      dy * s * (1 - s),  s = sigmoid(x)
    reLUGradient(dy, x)         dy where x > 0, else 0
    softMaxGradient(dy, x, a)   s * (dy - sum(s * dy, a)),  s = softMax(x, a)
    leakyReLUGradient(dy, x, alpha)   dy where x > 0, else alpha * dy

Decisions where Apple's documentation is silent or wrong:

- The `sourceTensor` of every gradient op is the FORWARD INPUT x (Apple's pages: "The input
  tensor" / "The input tensor from forward pass"), not the activation's output.
- leakyReLU: Apple's page writes "f(x) = max(x, alpha)", which is not a leaky ReLU; we implement
  the standard x if x >= 0 else alpha * x (equal to max(x, alpha x) for 0 <= alpha <= 1). Its
  gradient at x == 0 is alpha * dy (as PyTorch's `x > 0 ? dy : alpha dy`); reLU's is 0.
- The gradient ops' two tensor operands (and leakyReLU's alpha tensor) broadcast (NumPy rules);
  Apple documents broadcasting only for the alpha tensor.
- softMax over an axis of size 0 gives an empty result; a row of all -inf gives NaN, and so
  does a whole row holding a +inf or a NaN (inf - inf in the shift by the maximum; PyTorch and
  TensorFlow agree): no row is returned that is not a distribution.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, op_error
from ..types import FLOATING, ShapedType
from ._registry import InferContext, register_op
from .arithmetic import broadcast_shapes, const, same_dtype, sum_to_shape

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["ActivationOps", "AxisAttrs", "LeakyAttrs"]

_FLOAT_TEXT = "float32, float16 or bFloat16"


@dataclass(frozen=True)
class AxisAttrs:
    axis: int  # as given (may be negative); the kernel gets the normalised int


@dataclass(frozen=True)
class LeakyAttrs:
    alpha: float | None  # None when alpha is a tensor input


def normalize_axis(ctx: InferContext, arg: str, axis: int, rank: int | None,
                   label: str = "axis") -> int | None:
    """`axis` in [-rank, rank) as a non-negative int (None while the rank is unknown)."""
    if rank is None:
        return None
    if not -rank <= axis < rank:
        raise ctx.error(ShapeError, label, f"an axis in [-{rank}, {rank}) (the rank of {arg})",
                        axis)
    return axis % rank


def check_int(op: str, name: str | None, argument: str, value: object) -> int:
    """A Python or NumPy integer (not bool), as int; else GraphError naming the argument."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise op_error(GraphError, op, argument, "an int",
                       repr(value) if isinstance(value, str) else value, name)
    return int(value)


# ---------------------------------------------------------------------------- shape rules
def _infer_unary(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.dataType not in FLOATING:
        raise ctx.error(DataTypeError, "tensor", _FLOAT_TEXT, t.dataType)
    return [t], None


def _infer_softMax(ctx: InferContext):
    t = _infer_unary(ctx)[0][0]
    ax = normalize_axis(ctx, "tensor", ctx.attrs.axis, t.rank)
    return [t], ax


def _infer_leakyReLU(ctx: InferContext):
    args = ("tensor",) if ctx.attrs.alpha is not None else ("tensor", "alphaTensor")
    dt = same_dtype(ctx, args, FLOATING, _FLOAT_TEXT)
    return [ShapedType(broadcast_shapes(ctx, args), dt)], ctx.attrs.alpha


def _grad_rule_infer(args):
    def infer(ctx: InferContext):
        dt = same_dtype(ctx, args, FLOATING, _FLOAT_TEXT)
        out = ShapedType(broadcast_shapes(ctx, args), dt)
        if isinstance(ctx.attrs, AxisAttrs):  # softMaxGradient: no broadcasting
            gs, xs = ctx.type_of("incomingGradient").shape, ctx.type_of("sourceTensor").shape
            if gs is not None and xs is not None and (len(gs) != len(xs) or any(
                    a != b and a != -1 and b != -1 for a, b in zip(gs, xs))):
                raise ctx.error(ShapeError, "incomingGradient", f"the shape of sourceTensor "
                                f"{xs}", gs)
            return [out], normalize_axis(ctx, "sourceTensor", ctx.attrs.axis, out.rank)
        return [out], None
    return infer


# ---------------------------------------------------------------------------- gradient rules
def _grad_sigmoid(g, op, dys):
    return {"tensor": g.sigmoidGradient(dys[0], op.input("tensor"))}


def _grad_tanh(g, op, dys):
    y = op.outputTensors[0]
    return {"tensor": g.multiplication(dys[0], g.subtraction(const(g, 1, y.dataType),
                                                             g.square(y)))}


def _grad_reLU(g, op, dys):
    return {"tensor": g.reLUGradient(dys[0], op.input("tensor"))}


def _grad_softMax(g, op, dys):
    return {"tensor": g.softMaxGradient(dys[0], op.input("tensor"), op.attrs.axis)}


def _grad_leakyReLU(g, op, dys):
    x, dy = op.input("tensor"), dys[0]
    a = op.input("alphaTensor")
    alpha = a if a is not None else const(g, op.attrs.alpha, x.dataType)
    out = {"tensor": sum_to_shape(g, g.leakyReLUGradient(dy, x, alpha), x)}
    if a is not None:  # d/d alpha = dy * x where x < 0
        zero = const(g, 0, x.dataType)
        out["alphaTensor"] = sum_to_shape(
            g, g.select(g.greaterThan(x, zero), zero, g.multiplication(dy, x)), a)
    return out


# second order: the gradient ops are differentiable too
def _grad_sigmoidGradient(g, op, dys):
    # out = dy * s (1 - s): d/d dy = s (1 - s) G; d/dx = G dy s (1 - s)(1 - 2 s)
    G = dys[0]
    dy, x = op.input("incomingGradient"), op.input("sourceTensor")
    dt = x.dataType
    s = g.sigmoid(x)
    one_2s = g.subtraction(const(g, 1, dt), g.multiplication(s, const(g, 2, dt)))
    return {"incomingGradient": sum_to_shape(g, g.sigmoidGradient(G, x), dy),
            "sourceTensor": sum_to_shape(
                g, g.sigmoidGradient(g.multiplication(g.multiplication(G, dy), one_2s), x), x)}


def _grad_reLUGradient(g, op, dys):
    # linear in dy; the derivative in x is 0 almost everywhere
    dy, x = op.input("incomingGradient"), op.input("sourceTensor")
    return {"incomingGradient": sum_to_shape(g, g.reLUGradient(dys[0], x), dy)}


def _grad_softMaxGradient(g, op, dys):
    # out = s * (v - c), c = sum(s v, axis). The Jacobian in v is symmetric, so
    # d/dv = softMaxGradient(G, x). In s: dL/ds = G (v - c) - v sum(G s, axis); then
    # chain through the softmax: d/dx = softMaxGradient(dL/ds, x).
    G = dys[0]
    v, x = op.input("incomingGradient"), op.input("sourceTensor")
    axis = op.attrs.axis
    s = g.softMax(x, axis)
    c = g.reductionSum(g.multiplication(s, v), axis=axis)
    gs = g.reductionSum(g.multiplication(G, s), axis=axis)
    dlds = g.subtraction(g.multiplication(G, g.subtraction(v, c)), g.multiplication(v, gs))
    return {"incomingGradient": g.softMaxGradient(G, x, axis),
            "sourceTensor": g.softMaxGradient(dlds, x, axis)}


def _grad_leakyReLUGradient(g, op, dys):
    G = dys[0]
    dy, x, a = (op.input("incomingGradient"), op.input("sourceTensor"),
                op.input("alphaTensor"))
    zero = const(g, 0, x.dataType)
    return {"incomingGradient": sum_to_shape(g, g.leakyReLUGradient(G, x, a), dy),
            "alphaTensor": sum_to_shape(
                g, g.select(g.greaterThan(x, zero), zero, g.multiplication(G, dy)), a)}


register_op("sigmoid", _infer_unary, _grad_sigmoid)
register_op("tanh", _infer_unary, _grad_tanh)
register_op("reLU", _infer_unary, _grad_reLU)
register_op("softMax", _infer_softMax, _grad_softMax)
register_op("leakyReLU", _infer_leakyReLU, _grad_leakyReLU)
register_op("sigmoidGradient", _grad_rule_infer(("incomingGradient", "sourceTensor")),
            _grad_sigmoidGradient)
register_op("reLUGradient", _grad_rule_infer(("incomingGradient", "sourceTensor")),
            _grad_reLUGradient)
register_op("softMaxGradient", _grad_rule_infer(("incomingGradient", "sourceTensor")),
            _grad_softMaxGradient)
register_op("leakyReLUGradient",
            _grad_rule_infer(("incomingGradient", "sourceTensor", "alphaTensor")),
            _grad_leakyReLUGradient)


# ---------------------------------------------------------------------------- builders
class ActivationOps:
    """Graph methods of the activation family (mixed into `Graph`). Every op: floating types;
    the result has the input's shape (the broadcast shape for the two-operand ones)."""

    def sigmoid(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """1 / (1 + exp(-x)), elementwise; [any shape] -> same shape."""
        return self._add("sigmoid", [("tensor", tensor)], None, name)[0]

    def tanh(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """tanh(x), elementwise; [any shape] -> same shape."""
        return self._add("tanh", [("tensor", tensor)], None, name)[0]

    def reLU(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """max(x, 0), elementwise; [any shape] -> same shape. Gradient 0 at x == 0."""
        return self._add("reLU", [("tensor", tensor)], None, name)[0]

    def softMax(self, tensor: Tensor, axis: int, *, name: str | None = None) -> Tensor:
        """Softmax along `axis` (negative counts from the end), computed stably as
        exp(x - max) / sum(exp(x - max)); [any shape, rank >= 1] -> same shape."""
        axis = check_int("softMax", name, "axis", axis)
        return self._add("softMax", [("tensor", tensor)], AxisAttrs(axis), name)[0]

    def leakyReLU(self, tensor: Tensor, alpha: float | Tensor | None = None, *,
                  name: str | None = None, alphaTensor: Tensor | None = None) -> Tensor:
        """x if x >= 0 else alpha * x (see the module notes: Apple's formula is misprinted).

        `alpha` is a number (Swift `leakyReLU(with:alpha:name:)`) or a tensor of x's dataType
        that broadcasts with x (Swift `leakyReLU(with:alphaTensor:name:)`; keyword
        `alphaTensor=` also accepted). Result: the broadcast shape of x and alpha."""
        from ..graph import Tensor

        op = "leakyReLU"
        if alphaTensor is not None:
            if alpha is not None:
                raise op_error(GraphError, op, "alphaTensor", "only one of alpha and "
                               "alphaTensor", "both", name)
            alpha = alphaTensor
        if isinstance(alpha, Tensor):
            return self._add(op, [("tensor", tensor), ("alphaTensor", alpha)],
                             LeakyAttrs(None), name)[0]
        if (isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real)
                or not np.isfinite(float(alpha))):
            raise op_error(GraphError, op, "alpha", "a finite number or a Tensor",
                           repr(alpha) if isinstance(alpha, str) else alpha, name)
        return self._add(op, [("tensor", tensor), ("alphaTensor", None)],
                         LeakyAttrs(float(alpha)), name, optional=("alphaTensor",))[0]

    def sigmoidGradient(self, incomingGradient: Tensor, sourceTensor: Tensor, *,
                        name: str | None = None) -> Tensor:
        """dy * s * (1 - s) with s = sigmoid(sourceTensor); sourceTensor is the forward INPUT.
        incomingGradient and sourceTensor broadcast; result: the broadcast shape."""
        return self._add("sigmoidGradient", [("incomingGradient", incomingGradient),
                                             ("sourceTensor", sourceTensor)], None, name)[0]

    def reLUGradient(self, incomingGradient: Tensor, sourceTensor: Tensor, *,
                     name: str | None = None) -> Tensor:
        """dy where sourceTensor (the forward input) > 0, else 0; shapes broadcast."""
        return self._add("reLUGradient", [("incomingGradient", incomingGradient),
                                          ("sourceTensor", sourceTensor)], None, name)[0]

    def softMaxGradient(self, incomingGradient: Tensor, sourceTensor: Tensor, axis: int, *,
                        name: str | None = None) -> Tensor:
        """s * (dy - sum(s * dy, axis)) with s = softMax(sourceTensor, axis); sourceTensor is
        the forward INPUT. incomingGradient must have sourceTensor's shape."""
        axis = check_int("softMaxGradient", name, "axis", axis)
        return self._add("softMaxGradient", [("incomingGradient", incomingGradient),
                                             ("sourceTensor", sourceTensor)],
                         AxisAttrs(axis), name)[0]

    def leakyReLUGradient(self, incomingGradient: Tensor, sourceTensor: Tensor,
                          alphaTensor: Tensor, *, name: str | None = None) -> Tensor:
        """dy where sourceTensor (the forward input) > 0, else alpha * dy; the three operands
        broadcast (Swift `leakyReLUGradient(withIncomingGradient:sourceTensor:alphaTensor:)`)."""
        return self._add("leakyReLUGradient", [("incomingGradient", incomingGradient),
                                               ("sourceTensor", sourceTensor),
                                               ("alphaTensor", alphaTensor)], None, name)[0]
