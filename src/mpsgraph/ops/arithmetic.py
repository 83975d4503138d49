"""The arithmetic family (Apple's MPSGraphArithmeticOps.h): elementwise unary and binary math,
comparisons and select, plus `sum_to_shape`, the helper every gradient rule uses to undo a
broadcast.

Binary ops broadcast their operands with NumPy's rules (SPEC 1.11: right-aligned, a size-1
dimension stretches, a lower rank is padded with leading 1s) and require EQUAL data types: there
is no implicit promotion (a float16 tensor plus a float32 tensor is a DataTypeError naming both).
The result has the broadcast shape and the operands' type (bool for the comparisons).

Types (where Apple is silent, these are our choices, tested):

    addition, subtraction, multiplication, division, maximum, minimum,
    negative, absolute, square                   float32/float16/bFloat16 and every integer type
    exponent, logarithm, squareRoot, reciprocal, power      floating types only
    equal, greaterThan                           any type of the same kind, result bool
    select                                       predicate of any type (non-zero = true, NaN is
                                                 true); trueTensor/falseTensor of one type

Numerics: float16/bFloat16 compute in float32 and round once. Integer arithmetic wraps around
(two's complement, as Metal's); integer division truncates toward zero (C and Metal semantics,
not NumPy's floor) and an integer division by zero gives 0 (a GPU cannot trap; we pick a defined
value). `maximum`/`minimum` return the non-NaN operand when one is NaN (Apple has separate
`maximumWithNaNPropagation` ops, so the plain ones do not propagate; IEEE maxNum/minNum).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError
from ..types import FLOATING, DataType, ShapedType
from ._registry import InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ArithmeticOps", "sum_to_shape", "broadcast_shapes", "same_dtype", "INTEGER",
           "NUMERIC", "ANY_TYPE"]

INTEGER = (DataType.int8, DataType.int16, DataType.int32, DataType.int64, DataType.uInt8,
           DataType.uInt16, DataType.uInt32, DataType.uInt64)
NUMERIC = FLOATING + INTEGER
ANY_TYPE = NUMERIC + (DataType.bool,)
_FLOAT_TEXT = "float32, float16 or bFloat16"
_NUMERIC_TEXT = "a floating-point or integer type (not bool)"
_ANY_TEXT = "a floating-point, integer or bool type"


# ---------------------------------------------------------------------------- shared checks
def same_dtype(ctx: InferContext, args: Sequence[str], allowed: Sequence[DataType],
               allowed_text: str) -> DataType:
    """The common dataType of `args` (which must all have it, and it must be allowed)."""
    dt = None
    for a in args:
        t = ctx.type_of(a)
        if t.dataType not in allowed:
            raise ctx.error(DataTypeError, a, allowed_text, t.dataType)
        if dt is None:
            dt = t.dataType
        elif t.dataType != dt:
            raise ctx.error(DataTypeError, a, f"{dt!r} (the dataType of {args[0]}; no implicit "
                            "promotion)", t.dataType)
    return dt


def broadcast_pair(a: Sequence[int], b: Sequence[int]) -> list[int] | None:
    """NumPy broadcast of two shapes with -1 for unknown dims; None if incompatible."""
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x == -1:
            out.append(y)  # at run time x must be 1 or y
        elif y == -1:
            out.append(x)
        else:
            return None
    return out


def broadcast_shapes(ctx: InferContext, args: Sequence[str]) -> list[int] | None:
    """The NumPy broadcast of the shapes of `args` (None if any is unranked)."""
    shapes = [ctx.type_of(a).shape for a in args]
    if any(s is None for s in shapes):
        return None
    out: list[int] = []
    for a, s in zip(args, shapes):
        res = broadcast_pair(out, s)
        if res is None:
            others = ", ".join(f"{b} {ctx.type_of(b).shape}" for b in args if b != a)
            raise ctx.error(ShapeError, a, f"a shape broadcast-compatible with {others} (NumPy "
                            "rules: trailing dimensions equal or 1)", s)
        out = res
    return out


def const(g: Graph, value: float, dt: DataType) -> Tensor:
    """A scalar constant of type `dt` (shape [], broadcasts against anything)."""
    return g.constant(value, dataType=dt)


def sum_to_shape(g: Graph, grad: Tensor, shape: Sequence[int] | Tensor) -> Tensor:
    """Un-broadcast a gradient: sum `grad` over the axes that broadcasting stretched, then
    reshape it to `shape` (a list of ints, or the Tensor whose shape to match). Built from
    `reductionSum` (which keeps the reduced axes) and `reshape`.

    Dynamic dimensions (-1) of the target are assumed to equal the gradient's (the case of two
    operands with the same dynamic size); when `shape` is a Tensor that is checked at run time by
    reshaping to `shapeOf(shape)`. A dynamic target dimension facing a known size > 1 could be
    either 1 or that size and raises UnsupportedError."""
    from ..graph import Tensor

    ref = shape if isinstance(shape, Tensor) else None
    target = ref.shape if ref is not None else list(shape)
    gs = grad.shape
    if target is None or gs is None:
        raise UnsupportedError(f"sum_to_shape: gradient of an unranked tensor (gradient shape "
                               f"{gs}, target {target})")
    if len(target) > len(gs):
        raise GraphError(f"sum_to_shape: internal error: target {target} has a higher rank "
                         f"than the gradient {gs}")
    extra = len(gs) - len(target)
    axes = list(range(extra))
    dynamic = False
    for i, (s, d) in enumerate(zip(target, gs[extra:])):
        if s == 1:
            if d != 1:
                axes.append(extra + i)
        elif s == -1:
            if d != -1 and d != 1:
                raise UnsupportedError(f"sum_to_shape: cannot tell whether dimension {i} of "
                                       f"{target} (dynamic) was broadcast to {d}")
            dynamic = dynamic or d == -1
        elif d != s and d != -1:
            raise GraphError(f"sum_to_shape: internal error: gradient shape {gs} does not "
                             f"broadcast from {target}")
    out = grad
    if axes:
        out = g.reductionSum(out, axes=axes)
    if dynamic:
        if ref is None:
            raise UnsupportedError(f"sum_to_shape: dynamic target shape {target} given as a "
                                   "list (pass the tensor)")
        return g.reshape(out, shapeTensor=g.shapeOf(ref))
    if out.shape != target:
        out = g.reshape(out, target)
    return out


# ---------------------------------------------------------------------------- shape rules
_BIN = ("primaryTensor", "secondaryTensor")


def _binary_rule(allowed: Sequence[DataType], text: str, out_bool: bool = False):
    def infer(ctx: InferContext):
        dt = same_dtype(ctx, _BIN, allowed, text)
        return [ShapedType(broadcast_shapes(ctx, _BIN), DataType.bool if out_bool else dt)], None
    return infer


def _unary_rule(allowed: Sequence[DataType], text: str):
    def infer(ctx: InferContext):
        t = ctx.type_of("tensor")
        if t.dataType not in allowed:
            raise ctx.error(DataTypeError, "tensor", text, t.dataType)
        return [t], None
    return infer


def _infer_select(ctx: InferContext):
    p = ctx.type_of("predicate")
    if p.dataType not in ANY_TYPE:
        raise ctx.error(DataTypeError, "predicate", "a bool or numeric predicate", p.dataType)
    dt = same_dtype(ctx, ("trueTensor", "falseTensor"), ANY_TYPE, _ANY_TEXT)
    return [ShapedType(broadcast_shapes(ctx, ("predicate", "trueTensor", "falseTensor")),
                       dt)], None


# ---------------------------------------------------------------------------- gradient rules
# Every rule returns gradients of the inputs' own shapes: sum_to_shape undoes broadcasting.
def _ab(op: Operation):
    return op.input("primaryTensor"), op.input("secondaryTensor")


def _grad_addition(g, op, dys):
    a, b = _ab(op)
    return {"primaryTensor": sum_to_shape(g, dys[0], a),
            "secondaryTensor": sum_to_shape(g, dys[0], b)}


def _grad_subtraction(g, op, dys):
    a, b = _ab(op)
    return {"primaryTensor": sum_to_shape(g, dys[0], a),
            "secondaryTensor": sum_to_shape(g, g.negative(dys[0]), b)}


def _grad_multiplication(g, op, dys):
    a, b = _ab(op)
    dy = dys[0]
    return {"primaryTensor": sum_to_shape(g, g.multiplication(dy, b), a),
            "secondaryTensor": sum_to_shape(g, g.multiplication(dy, a), b)}


def _grad_division(g, op, dys):
    # y = a / b: dy/da = 1 / b, dy/db = -a / b^2
    a, b = _ab(op)
    dy = dys[0]
    db = g.negative(g.division(g.multiplication(dy, a), g.square(b)))
    return {"primaryTensor": sum_to_shape(g, g.division(dy, b), a),
            "secondaryTensor": sum_to_shape(g, db, b)}


def _grad_power(g, op, dys):
    # y = a ** b: dy/da = b a^(b-1); dy/db = y log(a), taken as 0 where a == 0 (the limit for
    # b > 0; PyTorch's choice too). For a < 0 log(a) is NaN, and so is that gradient.
    a, b = _ab(op)
    dy, y = dys[0], op.outputTensors[0]
    dt = a.dataType
    da = g.multiplication(dy, g.multiplication(b, g.power(a, g.subtraction(b, const(g, 1, dt)))))
    zero = const(g, 0, dt)
    db = g.select(g.equal(a, zero), zero,
                  g.multiplication(dy, g.multiplication(y, g.logarithm(a))))
    return {"primaryTensor": sum_to_shape(g, da, a), "secondaryTensor": sum_to_shape(g, db, b)}


def _extremum_grad(first_wins):
    # The gradient goes to the operand the op returned: the winner, or the non-NaN one when
    # the other is NaN; ties (a == b) give each operand half (PyTorch's and JAX's choice).
    def rule(g, op, dys):
        a, b = _ab(op)
        dy = dys[0]
        dt = a.dataType
        one, half, zero = const(g, 1, dt), const(g, 0.5, dt), const(g, 0, dt)
        wa = g.select(first_wins(g, a, b), one,
                      g.select(g.equal(b, b), g.select(g.equal(a, b), half, zero), one))
        wb = g.subtraction(one, wa)
        return {"primaryTensor": sum_to_shape(g, g.multiplication(dy, wa), a),
                "secondaryTensor": sum_to_shape(g, g.multiplication(dy, wb), b)}
    return rule


def _grad_negative(g, op, dys):
    return {"tensor": g.negative(dys[0])}


def _grad_exponent(g, op, dys):
    return {"tensor": g.multiplication(dys[0], op.outputTensors[0])}


def _grad_logarithm(g, op, dys):
    return {"tensor": g.division(dys[0], op.input("tensor"))}


def _grad_square(g, op, dys):
    x = op.input("tensor")
    return {"tensor": g.multiplication(dys[0], g.multiplication(x, const(g, 2, x.dataType)))}


def _grad_squareRoot(g, op, dys):
    y = op.outputTensors[0]
    return {"tensor": g.division(dys[0], g.multiplication(y, const(g, 2, y.dataType)))}


def _grad_reciprocal(g, op, dys):
    y = op.outputTensors[0]
    return {"tensor": g.negative(g.multiplication(dys[0], g.square(y)))}


def _grad_absolute(g, op, dys):
    # d|x|/dx = sign(x), with 0 at x == 0
    x = op.input("tensor")
    dy = dys[0]
    zero = const(g, 0, x.dataType)
    return {"tensor": g.select(g.greaterThan(x, zero), dy,
                               g.select(g.greaterThan(zero, x), g.negative(dy), zero))}


def _grad_select(g, op, dys):
    p, t, f = op.input("predicate"), op.input("trueTensor"), op.input("falseTensor")
    dy = dys[0]
    zero = const(g, 0, dy.dataType)
    return {"trueTensor": sum_to_shape(g, g.select(p, dy, zero), t),
            "falseTensor": sum_to_shape(g, g.select(p, zero, dy), f)}


def _gt(g, a, b):
    return g.greaterThan(a, b)


def _lt(g, a, b):
    return g.greaterThan(b, a)


for _kind, _rule, _grad in (
        ("addition", _binary_rule(NUMERIC, _NUMERIC_TEXT), _grad_addition),
        ("subtraction", _binary_rule(NUMERIC, _NUMERIC_TEXT), _grad_subtraction),
        ("multiplication", _binary_rule(NUMERIC, _NUMERIC_TEXT), _grad_multiplication),
        ("division", _binary_rule(NUMERIC, _NUMERIC_TEXT), _grad_division),
        ("maximum", _binary_rule(NUMERIC, _NUMERIC_TEXT), _extremum_grad(_gt)),
        ("minimum", _binary_rule(NUMERIC, _NUMERIC_TEXT), _extremum_grad(_lt)),
        ("power", _binary_rule(FLOATING, _FLOAT_TEXT), _grad_power),
        ("equal", _binary_rule(ANY_TYPE, _ANY_TEXT, out_bool=True), None),
        ("greaterThan", _binary_rule(ANY_TYPE, _ANY_TEXT, out_bool=True), None),
        ("negative", _unary_rule(NUMERIC, _NUMERIC_TEXT), _grad_negative),
        ("absolute", _unary_rule(NUMERIC, _NUMERIC_TEXT), _grad_absolute),
        ("square", _unary_rule(NUMERIC, _NUMERIC_TEXT), _grad_square),
        ("exponent", _unary_rule(FLOATING, _FLOAT_TEXT), _grad_exponent),
        ("logarithm", _unary_rule(FLOATING, _FLOAT_TEXT), _grad_logarithm),
        ("squareRoot", _unary_rule(FLOATING, _FLOAT_TEXT), _grad_squareRoot),
        ("reciprocal", _unary_rule(FLOATING, _FLOAT_TEXT), _grad_reciprocal),
        ("select", _infer_select, _grad_select)):
    register_op(_kind, _rule, _grad)


# ---------------------------------------------------------------------------- builders
class ArithmeticOps:
    """Graph methods of the arithmetic family (mixed into `Graph`).

    Binary ops: `primaryTensor` and `secondaryTensor` of one dataType and NumPy-broadcastable
    shapes -> the broadcast shape. Unary ops: `tensor` [any shape] -> the same shape and type."""

    def _binary(self, kind: str, a: Tensor, b: Tensor, name: str | None) -> Tensor:
        return self._add(kind, [("primaryTensor", a), ("secondaryTensor", b)], None, name)[0]

    def _unary(self, kind: str, x: Tensor, name: str | None) -> Tensor:
        return self._add(kind, [("tensor", x)], None, name)[0]

    # binary ------------------------------------------------------------------
    def addition(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                 name: str | None = None) -> Tensor:
        """a + b, broadcast (NumPy rules); equal dataTypes, numeric (integers wrap)."""
        return self._binary("addition", primaryTensor, secondaryTensor, name)

    def subtraction(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                    name: str | None = None) -> Tensor:
        """a - b, broadcast; equal numeric dataTypes."""
        return self._binary("subtraction", primaryTensor, secondaryTensor, name)

    def multiplication(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                       name: str | None = None) -> Tensor:
        """a * b (elementwise), broadcast; equal numeric dataTypes."""
        return self._binary("multiplication", primaryTensor, secondaryTensor, name)

    def division(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                 name: str | None = None) -> Tensor:
        """a / b, broadcast. Floats: IEEE (x/0 = +-inf, 0/0 = NaN). Integers: truncated toward
        zero (C semantics, -7 / 2 = -3), and x / 0 = 0."""
        return self._binary("division", primaryTensor, secondaryTensor, name)

    def maximum(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                name: str | None = None) -> Tensor:
        """max(a, b), broadcast; a NaN operand loses to a number (IEEE maxNum). Gradient: to
        the larger operand, split in half on ties."""
        return self._binary("maximum", primaryTensor, secondaryTensor, name)

    def minimum(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                name: str | None = None) -> Tensor:
        """min(a, b), broadcast; a NaN operand loses to a number (IEEE minNum)."""
        return self._binary("minimum", primaryTensor, secondaryTensor, name)

    def power(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
              name: str | None = None) -> Tensor:
        """a ** b, broadcast; floating types (a < 0 with a non-integer b gives NaN)."""
        return self._binary("power", primaryTensor, secondaryTensor, name)

    def equal(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
              name: str | None = None) -> Tensor:
        """a == b elementwise, broadcast -> bool tensor (NaN == NaN is false)."""
        return self._binary("equal", primaryTensor, secondaryTensor, name)

    def greaterThan(self, primaryTensor: Tensor, secondaryTensor: Tensor, *,
                    name: str | None = None) -> Tensor:
        """a > b elementwise, broadcast -> bool tensor."""
        return self._binary("greaterThan", primaryTensor, secondaryTensor, name)

    def select(self, predicate: Tensor, trueTensor: Tensor, falseTensor: Tensor, *,
               name: str | None = None) -> Tensor:
        """predicate ? trueTensor : falseTensor, elementwise; the three shapes broadcast
        together. The predicate may be bool or numeric (non-zero, NaN included, is true);
        trueTensor and falseTensor share one dataType, the result's."""
        return self._add("select", [("predicate", predicate), ("trueTensor", trueTensor),
                                    ("falseTensor", falseTensor)], None, name)[0]

    # unary -------------------------------------------------------------------
    def negative(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """-x (numeric types; unsigned integers wrap)."""
        return self._unary("negative", tensor, name)

    def absolute(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """|x| (numeric types). Gradient sign(x), 0 at x == 0."""
        return self._unary("absolute", tensor, name)

    def square(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """x * x (numeric types)."""
        return self._unary("square", tensor, name)

    def exponent(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """e ** x (floating types)."""
        return self._unary("exponent", tensor, name)

    def logarithm(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """Natural log (floating types): log(0) = -inf, log(x < 0) = NaN."""
        return self._unary("logarithm", tensor, name)

    def squareRoot(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """sqrt(x) (floating types): NaN for x < 0."""
        return self._unary("squareRoot", tensor, name)

    def reciprocal(self, tensor: Tensor, *, name: str | None = None) -> Tensor:
        """1 / x (floating types): +-inf at 0."""
        return self._unary("reciprocal", tensor, name)
