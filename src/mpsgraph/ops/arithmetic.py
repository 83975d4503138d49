"""The arithmetic family (Apple's MPSGraphArithmeticOps.h): every elementwise op of MPSGraph,
as ONE TABLE (`ELEMENTWISE`, one row per op), plus `sum_to_shape`, the helper every gradient
rule uses to undo a broadcast.

A row names the op (its Swift base name, which is also the registry kind and the Graph method),
its inputs (in Swift order), the dataTypes it accepts, how the result type follows from the
input type, the NumPy function and the torch function that compute it, its gradient rule (None:
no gradient) and its documentation. From the rows this module generates the builder methods of
`ArithmeticOps` and registers the OpDefs; backends/numpy/arithmetic.py and
backends/torch/arithmetic.py generate their kernels from the same rows. `grep -n "'erf'" src`
finds the row of `erf`. A function named `np.xxx` / `torch.xxx` is that library's; any other
name is a helper of the backend's arithmetic module (the place for integer division, shifts and
every other rule NumPy or torch does not implement as we define it).

Shapes and types: the inputs of a row broadcast with NumPy's rules (SPEC 1.11: right-aligned, a
size-1 dimension stretches, a lower rank is padded with leading 1s) and must share ONE dataType:
there is no implicit promotion (a float16 tensor plus a float32 tensor is a DataTypeError naming
both). The result has the broadcast shape and the dataType given by the row's rule: `same`,
`bool` (comparisons, logical ops, isNaN, ...), `real` (complexFloat32 -> float32, real types
unchanged) or `complex` (-> complexFloat32). `select` (any predicate type) and `planarTensor`
(the last dimension doubles) have their own shape rules.

Numerics (docs/semantics.md, "Arithmetic decisions (issue 15)", lists every decision):
float16/bFloat16 compute in float32 and round once. Integer arithmetic wraps around (two's
complement, as Metal's); integer division truncates toward zero and x / 0 gives 0. `maximum` /
`minimum` return the non-NaN operand (IEEE maxNum/minNum); the `...WithNaNPropagation` ops
return NaN. Comparisons with NaN are false (notEqual: true). `round` rounds half away from zero,
`rint` half to even. Shifts by a negative amount or by >= the bit width give 0 (a right shift of
a negative signed value gives -1). Logical ops take any type (non-zero, NaN included, is true).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError
from ..types import FLOATING, SUB_BYTE, DataType, ShapedType
from ._registry import GradFn, InferContext, InferFn, register_op

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ArithmeticOps", "Elementwise", "ELEMENTWISE", "result_type", "sum_to_shape",
           "broadcast_shapes", "same_dtype", "INTEGER", "NUMERIC", "ANY_TYPE", "COMPLEX"]

INTEGER = (DataType.int8, DataType.int16, DataType.int32, DataType.int64, DataType.uInt8,
           DataType.uInt16, DataType.uInt32, DataType.uInt64)
NUMERIC = FLOATING + INTEGER
ANY_TYPE = NUMERIC + (DataType.bool,)
COMPLEX = (DataType.complexFloat32,)
F32 = (DataType.float32,)
_TEXTS = {FLOATING: "float32, float16 or bFloat16",
          NUMERIC: "a floating-point or integer type (not bool)",
          ANY_TYPE: "a floating-point, integer or bool type",
          INTEGER: "an integer type",
          FLOATING + COMPLEX: "float32, float16, bFloat16 or complexFloat32",
          NUMERIC + COMPLEX: "a floating-point, integer or complexFloat32 type (not bool)",
          ANY_TYPE + COMPLEX: "a floating-point, integer, bool or complexFloat32 type",
          F32: "float32 (the parts of a complexFloat32; complexFloat16 is not supported)"}


# ---------------------------------------------------------------------------- shared checks
def same_dtype(ctx: InferContext, args: Sequence[str], allowed: Sequence[DataType],
               allowed_text: str) -> DataType:
    """The common dataType of `args` (which must all have it, and it must be allowed)."""
    dt = None
    for a in args:
        t = ctx.type_of(a)
        if t.dataType not in allowed:
            if t.dataType in SUB_BYTE:
                allowed_text += (f" ({t.dataType.name} is a storage type: cast it to "
                                 f"{'int8' if SUB_BYTE[t.dataType][1] else 'uInt8'} first)")
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


# ---------------------------------------------------------------------------- the row
@dataclass(frozen=True)
class Elementwise:
    """One elementwise op: the single place that defines it (see the module docstring)."""

    name: str  # the Swift base name: registry kind and Graph method
    args: tuple[str, ...]  # the inputs, in Swift order (the builder's parameters)
    dtypes: tuple[DataType, ...]  # the accepted dataTypes (all inputs share one)
    result: str  # 'same' | 'bool' | 'real' | 'complex': the result's dataType
    numpy: str  # 'np.xxx' or a helper of backends/numpy/arithmetic.py
    torch: str  # 'torch.xxx' or a helper of backends/torch/arithmetic.py
    grad: GradFn | None  # the gradient rule; None: no gradient (bool or integer results)
    doc: str
    infer: InferFn | None = None  # a shape rule of its own (default: broadcast, one dataType)
    builder: bool = True  # False: ArithmeticOps writes the method by hand (extra aliases)


def result_type(row: Elementwise, dt: DataType) -> DataType:
    """The dataType of `row`'s result for inputs of dataType `dt`."""
    if row.result == "same":
        return dt
    if row.result == "bool":
        return DataType.bool
    if row.result == "real":
        return DataType.float32 if dt == DataType.complexFloat32 else dt
    if row.result == "complex":
        return DataType.complexFloat32
    raise GraphError(f"{row.name}: internal error: result rule {row.result!r}")


def _types_text(dtypes: Sequence[DataType]) -> str:
    return _TEXTS.get(tuple(dtypes), ", ".join(d.name for d in dtypes))


def _default_infer(row: Elementwise) -> InferFn:
    text = _types_text(row.dtypes)

    def infer(ctx: InferContext):
        dt = same_dtype(ctx, row.args, row.dtypes, text)
        return [ShapedType(broadcast_shapes(ctx, row.args), result_type(row, dt))], None
    return infer


def _infer_select(ctx: InferContext):
    p = ctx.type_of("predicate")
    if p.dataType not in ANY_TYPE + COMPLEX:
        raise ctx.error(DataTypeError, "predicate", "a bool, numeric or complex predicate",
                        p.dataType)
    dt = same_dtype(ctx, ("trueTensor", "falseTensor"), ANY_TYPE + COMPLEX,
                    _TEXTS[ANY_TYPE + COMPLEX])
    return [ShapedType(broadcast_shapes(ctx, ("predicate", "trueTensor", "falseTensor")),
                       dt)], None


def _infer_planar(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.dataType not in FLOATING + COMPLEX:
        raise ctx.error(DataTypeError, "tensor", _TEXTS[FLOATING + COMPLEX], t.dataType)
    if t.dataType != DataType.complexFloat32:
        return [t], None
    if t.shape is None:
        return [ShapedType(None, DataType.float32)], None
    if not t.shape:
        raise ctx.error(ShapeError, "tensor", "a complex tensor of rank >= 1 (the real and "
                        "imaginary planes are laid side by side along the last dimension)",
                        t.shape)
    last = t.shape[-1]
    return [ShapedType(t.shape[:-1] + [2 * last if last >= 0 else -1], DataType.float32)], None


# ---------------------------------------------------------------------------- gradient rules
# Every rule returns gradients of the inputs' own shapes: sum_to_shape undoes broadcasting.
def _ab(op: Operation):
    return op.input("primaryTensor"), op.input("secondaryTensor")


def _x(op: Operation):
    return op.input("tensor")


def _zeros_like(g: Graph, t: Tensor) -> Tensor:
    """Zeros of `t`'s shape and type (also where `t` is NaN or infinite)."""
    zero = const(g, 0, t.dataType)
    return g.select(g.isNaN(t), zero, zero)


def _binary_grad(da_fn, db_fn):
    """A binary rule from dy, a, b, y -> the unbroadcast gradient of each input."""
    def rule(g, op, dys):
        a, b = _ab(op)
        dy, y = dys[0], op.outputTensors[0]
        return {"primaryTensor": sum_to_shape(g, da_fn(g, dy, a, b, y), a),
                "secondaryTensor": sum_to_shape(g, db_fn(g, dy, a, b, y), b)}
    return rule


def _is_ones(t) -> bool:
    """`t` is a constant of ones, or a broadcast / reshape of one (the seed of
    gradientForPrimaryTensor and its broadcast through a reduction's rule)."""
    for _ in range(8):
        op = t.operation
        if op.kind == "constant":
            arr = op.attrs
            return arr.size > 0 and bool((arr == 1).all())
        if op.kind not in ("broadcast", "reshape"):
            return False
        t = op.inputs[0]
    return False


def _times(g, dy, other):
    """dy * other, or `other` itself when dy is ones that do not widen it (1 * v == v exactly
    for real floats, NaN, infinities and -0 included): the gradient of sum(y * dy') reaching
    y is then dy' with no ones materialised and no multiplication."""
    if (other.dataType.is_floating and dy.dataType == other.dataType and other.shape is not None
            and dy.shape is not None and all(d >= 0 for d in other.shape)
            and len(dy.shape) <= len(other.shape)
            and all(a in (1, b) for a, b in zip(dy.shape[::-1], other.shape[::-1]))
            and _is_ones(dy)):
        return other
    return g.multiplication(dy, other)


def _unary_grad(fn):
    """A unary rule from dy, x, y -> dx."""
    def rule(g, op, dys):
        return {"tensor": fn(g, dys[0], _x(op), op.outputTensors[0])}
    return rule


def _zero_grad(g, op, dys):
    # piecewise-constant ops (floor, ceil, round, rint, truncate, sign): zero almost everywhere
    return {"tensor": _zeros_like(g, dys[0])}


def _scaled(fn):
    """dx = dy * fn(g, x, y)."""
    return _unary_grad(lambda g, dy, x, y: g.multiplication(dy, fn(g, x, y)))


def _over(fn):
    """dx = dy / fn(g, x, y)."""
    return _unary_grad(lambda g, dy, x, y: g.division(dy, fn(g, x, y)))


def _c(g, v, t):
    return const(g, v, t.dataType)


def _one_minus_sq(g, x):
    return g.subtraction(_c(g, 1, x), g.square(x))


def _grad_power(g, op, dys):
    # y = a ** b: dy/da = b a^(b-1); dy/db = y log(a), taken as 0 where a == 0 (the limit for
    # b > 0; PyTorch's choice too). For a < 0 log(a) is NaN, and so is that gradient.
    a, b = _ab(op)
    dy, y = dys[0], op.outputTensors[0]
    da = g.multiplication(dy, g.multiplication(b, g.power(a, g.subtraction(b, _c(g, 1, a)))))
    zero = _c(g, 0, a)
    db = g.select(g.equal(a, zero), zero,
                  g.multiplication(dy, g.multiplication(y, g.logarithm(a))))
    return {"primaryTensor": sum_to_shape(g, da, a), "secondaryTensor": sum_to_shape(g, db, b)}


def _extremum_grad(first_wins, propagate_nan=False):
    # The gradient goes to the operand the op returned: the winner; with a NaN operand, the
    # non-NaN one (maximum/minimum) or the NaN one (...WithNaNPropagation; the first when both
    # are NaN); ties (a == b) give each operand half (PyTorch's and JAX's choice).
    def rule(g, op, dys):
        a, b = _ab(op)
        dy = dys[0]
        one, half, zero = _c(g, 1, a), _c(g, 0.5, a), _c(g, 0, a)
        tie = g.select(g.equal(a, b), half, zero)
        if propagate_nan:
            other = g.select(g.isNaN(a), one, tie)
        else:
            other = g.select(g.isNaN(b), one, tie)
        wa = g.select(first_wins(g, a, b), one, other)
        wb = g.subtraction(one, wa)
        return {"primaryTensor": sum_to_shape(g, g.multiplication(dy, wa), a),
                "secondaryTensor": sum_to_shape(g, g.multiplication(dy, wb), b)}
    return rule


def _gt(g, a, b):
    return g.greaterThan(a, b)


def _lt(g, a, b):
    return g.lessThan(a, b)


def _grad_absolute(g, op, dys):
    # d|x|/dx = sign(x), with 0 at x == 0
    x, dy = _x(op), dys[0]
    zero = _c(g, 0, x)
    return {"tensor": g.select(g.greaterThan(x, zero), dy,
                               g.select(g.lessThan(x, zero), g.negative(dy), zero))}


def _grad_select(g, op, dys):
    p, t, f = op.input("predicate"), op.input("trueTensor"), op.input("falseTensor")
    dy = dys[0]
    zero = const(g, 0, dy.dataType)
    return {"trueTensor": sum_to_shape(g, g.select(p, dy, zero), t),
            "falseTensor": sum_to_shape(g, g.select(p, zero, dy), f)}


def _grad_clamp(g, op, dys):
    # y = minimum(maximum(x, min), max), ties to x: x gets dy where min <= x <= max; `min`
    # where x < min <= max; `max` where max < maximum(x, min) (so also where min > max).
    x, lo, hi = op.input("tensor"), op.input("min"), op.input("max")
    dy = dys[0]
    zero = _c(g, 0, dy)
    m = g.maximum(x, lo)
    to_hi = g.lessThan(hi, m)
    dx = g.select(g.logicalAND(g.greaterThanOrEqualTo(x, lo), g.lessThanOrEqualTo(x, hi)),
                  dy, zero)
    dlo = g.select(g.logicalAND(g.lessThan(x, lo), g.not_(to_hi)), dy, zero)
    dhi = g.select(to_hi, dy, zero)
    return {"tensor": sum_to_shape(g, dx, x), "min": sum_to_shape(g, dlo, lo),
            "max": sum_to_shape(g, dhi, hi)}


def _grad_division_no_nan(g, op, dys):
    a, b = _ab(op)
    dy = dys[0]
    zero = _c(g, 0, a)
    nz = g.notEqual(b, zero)
    safe = g.select(nz, b, _c(g, 1, b))
    da = g.select(nz, g.division(dy, safe), zero)
    db = g.select(nz, g.negative(g.division(g.multiplication(dy, a), g.square(safe))), zero)
    return {"primaryTensor": sum_to_shape(g, da, a), "secondaryTensor": sum_to_shape(g, db, b)}


def _modulo_grad(rounding, zero_divisor_gives_zero):
    # r = a - rounding(a / b) * b: dr/da = 1, dr/db = -rounding(a / b) (almost everywhere)
    def rule(g, op, dys):
        a, b = _ab(op)
        dy = dys[0]
        q = getattr(g, rounding)(g.division(a, b))
        da, db = dy, g.negative(g.multiplication(dy, q))
        if zero_divisor_gives_zero:  # floorModulo(a, 0) = 0: a constant
            zero = _c(g, 0, a)
            nz = g.notEqual(b, zero)
            da, db = g.select(nz, da, zero), g.select(nz, db, zero)
        return {"primaryTensor": sum_to_shape(g, da, a),
                "secondaryTensor": sum_to_shape(g, db, b)}
    return rule


def _complex_unsupported(g, op, dys):
    raise UnsupportedError(f"{op.kind}: gradients through complexFloat32 tensors are not "
                           "supported")


def _real_or_complex(real_rule):
    """A rule for real inputs; a complex input raises UnsupportedError (autodiff carries no
    complex gradients, so a silent zero would be wrong)."""
    def rule(g, op, dys):
        if _x(op).dataType == DataType.complexFloat32:
            return _complex_unsupported(g, op, dys)
        return real_rule(g, op, dys)
    return rule


def _identity_grad(g, op, dys):
    return {"tensor": dys[0]}


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# ---------------------------------------------------------------------------- the table
_U = ("tensor",)
_B = ("primaryTensor", "secondaryTensor")
_FC = FLOATING + COMPLEX
E = Elementwise

ROWS: tuple[Elementwise, ...] = (
    # --- binary arithmetic ---------------------------------------------------------------------
    # name, inputs, dataTypes, result, NumPy, torch, gradient, doc
    E('addition', _B, NUMERIC + COMPLEX, 'same', 'np.add', 'add', _binary_grad(
        lambda g, dy, a, b, y: dy, lambda g, dy, a, b, y: dy),
      "a + b (integers wrap)."),
    E('subtraction', _B, NUMERIC + COMPLEX, 'same', 'np.subtract', 'subtract', _binary_grad(
        lambda g, dy, a, b, y: dy, lambda g, dy, a, b, y: g.negative(dy)),
      "a - b (integers wrap)."),
    E('multiplication', _B, NUMERIC + COMPLEX, 'same', 'np.multiply', 'multiply', _binary_grad(
        lambda g, dy, a, b, y: _times(g, dy, b),
        lambda g, dy, a, b, y: _times(g, dy, a)),
      "a * b, elementwise (integers wrap)."),
    E('division', _B, NUMERIC + COMPLEX, 'same', 'divide', 'divide', _binary_grad(
        lambda g, dy, a, b, y: g.division(dy, b),
        lambda g, dy, a, b, y: g.negative(g.division(g.multiplication(dy, a), g.square(b)))),
      "a / b. Floats: IEEE (x/0 = +-inf, 0/0 = NaN). Integers: truncated toward zero "
      "(-7 / 2 = -3), x / 0 = 0, INT_MIN / -1 wraps to INT_MIN."),
    E('divisionNoNaN', _B, NUMERIC, 'same', 'division_no_nan', 'division_no_nan',
      _grad_division_no_nan,
      "a / b, and 0 wherever b == 0 (0/0 included; a NaN b still gives NaN). Integers as "
      "`division`."),
    E('modulo', _B, NUMERIC, 'same', 'modulo', 'modulo', _modulo_grad('truncate', False),
      "The remainder of the division truncated toward zero, a - trunc(a / b) * b (C fmod, "
      "TensorFlow truncatemod): its sign is a's. Floats: modulo(x, 0) = NaN; integers: "
      "modulo(x, 0) = 0."),
    E('floorModulo', _B, NUMERIC, 'same', 'floor_modulo', 'floor_modulo',
      _modulo_grad('floor', True),
      "The remainder of the floor division, a - floor(a / b) * b (Python %, NumPy mod): its "
      "sign is b's. floorModulo(x, 0) = 0 for every type (Apple's page)."),
    E('power', _B, _FC, 'same', 'np.power', 'torch.pow', _grad_power,
      "a ** b (a < 0 with a non-integer b gives NaN)."),
    E('atan2', _B, FLOATING, 'same', 'np.arctan2', 'torch.atan2', _binary_grad(
        lambda g, dy, a, b, y: g.division(g.multiplication(dy, b),
                                          g.addition(g.square(a), g.square(b))),
        lambda g, dy, a, b, y: g.negative(g.division(g.multiplication(dy, a),
                                                     g.addition(g.square(a), g.square(b))))),
      "atan2(primary, secondary): the angle of the point (x = secondary, y = primary), in "
      "[-pi, pi] (C atan2, with its signed zeros and infinities)."),
    E('maximum', _B, NUMERIC, 'same', 'np.fmax', 'maximum', _extremum_grad(_gt),
      "max(a, b); a NaN operand loses to a number (IEEE maxNum). Gradient: to the larger "
      "operand, split in half on ties."),
    E('minimum', _B, NUMERIC, 'same', 'np.fmin', 'minimum', _extremum_grad(_lt),
      "min(a, b); a NaN operand loses to a number (IEEE minNum)."),
    E('maximumWithNaNPropagation', _B, NUMERIC, 'same', 'np.maximum',
      'maximum_nan', _extremum_grad(_gt, True),
      "max(a, b), NaN if either is NaN."),
    E('minimumWithNaNPropagation', _B, NUMERIC, 'same', 'np.minimum',
      'minimum_nan', _extremum_grad(_lt, True),
      "min(a, b), NaN if either is NaN."),
    # --- comparisons: bool results, NaN compares false (notEqual: true) ---------------------------
    E('equal', _B, ANY_TYPE + COMPLEX, 'bool', 'np.equal', 'equal', None,
      "a == b (NaN == NaN is false)."),
    E('notEqual', _B, ANY_TYPE + COMPLEX, 'bool', 'np.not_equal', 'not_equal', None,
      "a != b (true where either is NaN)."),
    E('greaterThan', _B, ANY_TYPE, 'bool', 'np.greater', 'greater', None, "a > b."),
    E('greaterThanOrEqualTo', _B, ANY_TYPE, 'bool', 'np.greater_equal', 'greater_equal', None,
      "a >= b."),
    E('lessThan', _B, ANY_TYPE, 'bool', 'np.less', 'less', None, "a < b."),
    E('lessThanOrEqualTo', _B, ANY_TYPE, 'bool', 'np.less_equal', 'less_equal', None,
      "a <= b."),
    # --- logical: any type, non-zero (NaN included) is true; bool results -------------------------
    E('logicalAND', _B, ANY_TYPE, 'bool', 'logical_and', 'logical_and', None, "a AND b."),
    E('logicalOR', _B, ANY_TYPE, 'bool', 'logical_or', 'logical_or', None, "a OR b."),
    E('logicalXOR', _B, ANY_TYPE, 'bool', 'logical_xor', 'logical_xor', None, "a XOR b."),
    E('logicalNAND', _B, ANY_TYPE, 'bool', 'logical_nand', 'logical_nand', None,
      "NOT (a AND b)."),
    E('logicalNOR', _B, ANY_TYPE, 'bool', 'logical_nor', 'logical_nor', None,
      "NOT (a OR b)."),
    E('logicalXNOR', _B, ANY_TYPE, 'bool', 'logical_xnor', 'logical_xnor', None,
      "NOT (a XOR b): true where both are true or both false."),
    E('not', _U, ANY_TYPE, 'bool', 'logical_not', 'logical_not', None,
      "Logical NOT: true where x is zero (false, 0, +-0.0). Python name `not_`."),
    # --- bitwise: integer types, the result has the operands' type --------------------------------
    E('bitwiseAND', _B, INTEGER, 'same', 'np.bitwise_and', 'bitwise_and', None, "a & b."),
    E('bitwiseOR', _B, INTEGER, 'same', 'np.bitwise_or', 'bitwise_or', None, "a | b."),
    E('bitwiseXOR', _B, INTEGER, 'same', 'np.bitwise_xor', 'bitwise_xor', None, "a ^ b."),
    E('bitwiseNOT', _U, INTEGER, 'same', 'np.invert', 'bitwise_not', None, "~x."),
    E('bitwiseLeftShift', _B, INTEGER, 'same', 'left_shift', 'left_shift', None,
      "a << b (bits shifted out are lost); 0 where b < 0 or b >= the bit width."),
    E('bitwiseRightShift', _B, INTEGER, 'same', 'right_shift', 'right_shift', None,
      "a >> b: arithmetic for signed types, logical for unsigned ones; where b < 0 or b >= "
      "the bit width, -1 for a negative signed a and 0 otherwise."),
    E('bitwisePopulationCount', _U, INTEGER, 'same', 'popcount', 'popcount', None,
      "The number of 1 bits of x's two's-complement representation (popcount(-1 as int8) = 8), "
      "in x's type."),
    # --- select ---------------------------------------------------------------------------------
    E('select', ("predicate", "trueTensor", "falseTensor"), ANY_TYPE + COMPLEX, 'same', 'pick',
      'pick',
      _grad_select,
      "predicate ? trueTensor : falseTensor, elementwise; the three shapes broadcast together. "
      "The predicate may be bool or numeric (non-zero, NaN included, is true); trueTensor and "
      "falseTensor share one dataType, the result's.", infer=_infer_select),
    E('clamp', ("tensor", "min", "max"), NUMERIC, 'same', 'clip', 'clip', _grad_clamp,
      "minimum(maximum(x, min), max) with NaN propagation (NumPy clip): a NaN in any input "
      "gives NaN; where min > max the result is max.", builder=False),
    # --- unary arithmetic -----------------------------------------------------------------------
    E('negative', _U, NUMERIC + COMPLEX, 'same', 'np.negative', 'negative',
      _unary_grad(lambda g, dy, x, y: g.negative(dy)),
      "-x (unsigned integers and INT_MIN wrap)."),
    E('absolute', _U, NUMERIC + COMPLEX, 'real', 'np.abs', 'absolute', _grad_absolute,
      "|x| (abs(INT_MIN) wraps to INT_MIN). Gradient sign(x), 0 at x == 0."),
    E('absoluteSquare', _U, NUMERIC + COMPLEX, 'real', 'absolute_square',
      'absolute_square', _real_or_complex(_scaled(lambda g, x, y: g.multiplication(
          x, _c(g, 2, x)))),
      "|x|^2: x * x for real types, re^2 + im^2 (float32) for complexFloat32."),
    E('square', _U, NUMERIC + COMPLEX, 'same', 'np.square', 'square',
      _scaled(lambda g, x, y: g.multiplication(x, _c(g, 2, x))), "x * x (integers wrap)."),
    E('sign', _U, NUMERIC, 'same', 'np.sign', 'sign', _zero_grad,
      "-1, 0 or 1 by the sign of x; sign(+-0.0) = +0.0, sign(NaN) = NaN. Zero gradient."),
    E('signbit', _U, NUMERIC, 'bool', 'np.signbit', 'signbit', None,
      "True where the sign bit is set: x < 0, -0.0, and NaNs with the sign bit."),
    E('squareRoot', _U, _FC, 'same', 'np.sqrt', 'torch.sqrt',
      _unary_grad(lambda g, dy, x, y: g.division(dy, g.multiplication(y, _c(g, 2, y)))),
      "sqrt(x): NaN for x < 0, sqrt(-0.0) = -0.0."),
    E('reciprocalSquareRoot', _U, FLOATING, 'same', 'rsqrt', 'torch.rsqrt',
      _unary_grad(lambda g, dy, x, y: g.multiplication(
          dy, g.multiplication(_c(g, -0.5, y), g.division(y, x)))),
      "1 / sqrt(x): +inf at +0, -inf at -0, NaN for x < 0."),
    E('reverseSquareRoot', _U, FLOATING, 'same', 'rsqrt', 'torch.rsqrt',
      _unary_grad(lambda g, dy, x, y: g.multiplication(
          dy, g.multiplication(_c(g, -0.5, y), g.division(y, x)))),
      "1 / sqrt(x), the same op as reciprocalSquareRoot (Apple's older name)."),
    E('reciprocal', _U, _FC, 'same', 'reciprocal', 'torch.reciprocal',
      _unary_grad(lambda g, dy, x, y: g.negative(g.multiplication(dy, g.square(y)))),
      "1 / x: +-inf at +-0."),
    # --- exponents and logarithms ----------------------------------------------------------------
    E('exponent', _U, _FC, 'same', 'np.exp', 'torch.exp',
      _unary_grad(lambda g, dy, x, y: g.multiplication(dy, y)), "e ** x."),
    E('exponentBase2', _U, FLOATING, 'same', 'np.exp2', 'torch.exp2',
      _unary_grad(lambda g, dy, x, y: g.multiplication(dy, g.multiplication(y, _c(g, _LN2, y)))),
      "2 ** x."),
    E('exponentBase10', _U, FLOATING, 'same', 'exp10', 'exp10',
      _unary_grad(lambda g, dy, x, y: g.multiplication(dy, g.multiplication(
          y, _c(g, _LN10, y)))),
      "10 ** x."),
    E('logarithm', _U, _FC, 'same', 'np.log', 'torch.log', _over(lambda g, x, y: x),
      "Natural log: log(+-0) = -inf, log(x < 0) = NaN."),
    E('logarithmBase2', _U, FLOATING, 'same', 'np.log2', 'torch.log2',
      _over(lambda g, x, y: g.multiplication(x, _c(g, _LN2, x))), "log2(x)."),
    E('logarithmBase10', _U, FLOATING, 'same', 'np.log10', 'torch.log10',
      _over(lambda g, x, y: g.multiplication(x, _c(g, _LN10, x))), "log10(x)."),
    E('erf', _U, FLOATING, 'same', 'erf', 'torch.erf',
      _scaled(lambda g, x, y: g.multiplication(_c(g, _TWO_OVER_SQRT_PI, x),
                                               g.exponent(g.negative(g.square(x))))),
      "The error function, 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt."),
    # --- trigonometric and hyperbolic ------------------------------------------------------------
    E('sin', _U, _FC, 'same', 'np.sin', 'torch.sin', _scaled(lambda g, x, y: g.cos(x)),
      "sin(x), x in radians."),
    E('cos', _U, _FC, 'same', 'np.cos', 'torch.cos',
      _scaled(lambda g, x, y: g.negative(g.sin(x))), "cos(x)."),
    E('tan', _U, _FC, 'same', 'np.tan', 'torch.tan',
      _scaled(lambda g, x, y: g.addition(_c(g, 1, y), g.square(y))), "tan(x)."),
    E('asin', _U, FLOATING, 'same', 'np.arcsin', 'torch.asin',
      _over(lambda g, x, y: g.squareRoot(_one_minus_sq(g, x))),
      "arcsin(x) in [-pi/2, pi/2]; NaN outside [-1, 1]."),
    E('acos', _U, FLOATING, 'same', 'np.arccos', 'torch.acos',
      _unary_grad(lambda g, dy, x, y: g.negative(g.division(
          dy, g.squareRoot(_one_minus_sq(g, x))))),
      "arccos(x) in [0, pi]; NaN outside [-1, 1]."),
    E('atan', _U, FLOATING, 'same', 'np.arctan', 'torch.atan',
      _over(lambda g, x, y: g.addition(_c(g, 1, x), g.square(x))), "arctan(x)."),
    E('sinh', _U, _FC, 'same', 'np.sinh', 'torch.sinh', _scaled(lambda g, x, y: g.cosh(x)),
      "sinh(x)."),
    E('cosh', _U, _FC, 'same', 'np.cosh', 'torch.cosh', _scaled(lambda g, x, y: g.sinh(x)),
      "cosh(x)."),
    E('asinh', _U, FLOATING, 'same', 'np.arcsinh', 'torch.asinh',
      _over(lambda g, x, y: g.squareRoot(g.addition(g.square(x), _c(g, 1, x)))),
      "arsinh(x)."),
    E('acosh', _U, FLOATING, 'same', 'np.arccosh', 'torch.acosh',
      _over(lambda g, x, y: g.squareRoot(g.subtraction(g.square(x), _c(g, 1, x)))),
      "arcosh(x) >= 0; NaN for x < 1."),
    E('atanh', _U, FLOATING, 'same', 'np.arctanh', 'torch.atanh',
      _over(lambda g, x, y: _one_minus_sq(g, x)), "artanh(x); +-inf at +-1, NaN beyond."),
    # --- rounding: zero gradient ----------------------------------------------------------------
    E('floor', _U, FLOATING, 'same', 'np.floor', 'torch.floor', _zero_grad,
      "The largest integer <= x."),
    E('ceil', _U, FLOATING, 'same', 'np.ceil', 'torch.ceil', _zero_grad,
      "The smallest integer >= x."),
    E('round', _U, FLOATING, 'same', 'round_half_away', 'round_half_away', _zero_grad,
      "The nearest integer, halfway cases away from zero (C/Metal round: 2.5 -> 3, "
      "-2.5 -> -3)."),
    E('rint', _U, FLOATING, 'same', 'np.rint', 'torch.round', _zero_grad,
      "The nearest integer, halfway cases to even (C/Metal rint, NumPy round: 2.5 -> 2)."),
    E('truncate', _U, FLOATING, 'same', 'np.trunc', 'torch.trunc', _zero_grad,
      "The integer part of x (rounded toward zero)."),
    # --- classification: bool results ----------------------------------------------------------
    E('isNaN', _U, NUMERIC + COMPLEX, 'bool', 'np.isnan', 'is_nan', None,
      "True where x is NaN (never for integers)."),
    E('isFinite', _U, NUMERIC + COMPLEX, 'bool', 'np.isfinite', 'is_finite', None,
      "True where x is neither infinite nor NaN (always for integers)."),
    E('isInfinite', _U, NUMERIC + COMPLEX, 'bool', 'np.isinf', 'is_infinite', None,
      "True where x is +inf or -inf (never for integers)."),
    # --- complex ----------------------------------------------------------------------------------
    E('complexTensor', ("realTensor", "imaginaryTensor"), F32, 'complex', 'complex_tensor',
      'complex_tensor', _complex_unsupported,
      "realTensor + i * imaginaryTensor (float32 parts, broadcast) -> complexFloat32."),
    E('realPartOfTensor', _U, _FC, 'real', 'real_part', 'real_part',
      _real_or_complex(_identity_grad),
      "The real part (float32) of a complexFloat32 tensor; a real tensor is returned as is."),
    E('imaginaryPartOfTensor', _U, _FC, 'real', 'imaginary_part', 'imaginary_part',
      _real_or_complex(_zero_grad),
      "The imaginary part (float32) of a complexFloat32 tensor; zeros for a real tensor."),
    E('conjugate', _U, _FC, 'same', 'conjugate', 'conjugate', _real_or_complex(_identity_grad),
      "The complex conjugate re - i im; a real tensor is returned as is."),
    E('planarTensor', _U, _FC, 'real', 'planar', 'planar', _real_or_complex(_identity_grad),
      "complexFloat32 [..., n] -> float32 [..., 2n]: the real parts, then the imaginary parts, "
      "along the last dimension; a real tensor is returned as is.", infer=_infer_planar),
)

def _no_complex_gradients(rule: GradFn | None) -> GradFn | None:
    """`rule`, raising UnsupportedError where an input is complexFloat32: autodiff carries
    no complex gradients (Wirtinger derivatives are for later), and a silent zero or a real
    part alone would be wrong."""
    if rule is None:
        return None

    def guarded(g, op, dys):
        if any(t is not None and t.dataType == DataType.complexFloat32 for t in op.inputs):
            return _complex_unsupported(g, op, dys)
        return rule(g, op, dys)
    return guarded


ELEMENTWISE: dict[str, Elementwise] = {}
for _row in ROWS:
    ELEMENTWISE[_row.name] = _row
    register_op(_row.name, _row.infer or _default_infer(_row), _no_complex_gradients(_row.grad))


# ---------------------------------------------------------------------------- builders
_KEYWORDS = {"not": "not_"}  # Swift base names that are Python keywords (API rule 8)


def _builder(row: Elementwise) -> Callable[..., Tensor]:
    """The Graph method of a row: its inputs positional-or-keyword in Swift order, `name`
    keyword-only (generated source, so that the signature is a real one)."""
    params = ", ".join(row.args)
    inputs = ", ".join(f"({a!r}, {a})" for a in row.args)
    py = _KEYWORDS.get(row.name, row.name)
    src = (f"def {py}(self, {params}, *, name=None):\n"
           f"    return self._add({row.name!r}, [{inputs}], None, name)[0]\n")
    ns: dict = {}
    exec(src, ns)  # noqa: S102 (a fixed template over the table's identifiers)
    fn = ns[py]
    fn.__qualname__ = f"ArithmeticOps.{py}"
    fn.__module__ = __name__
    fn.__doc__ = (f"{row.doc}\n\nSwift `{row.name}`. Inputs: {', '.join(row.args)} "
                  f"({_types_text(row.dtypes)}{'; one dataType' if len(row.args) > 1 else ''}"
                  f"{', broadcast' if len(row.args) > 1 else ''}); result dataType: "
                  f"{row.result}. Gradient: {'yes' if row.grad else 'none'}.")
    return fn


class ArithmeticOps:
    """Graph methods of the arithmetic family (mixed into `Graph`), generated from `ROWS`:
    one method per row (`not` is `not_`, and also reachable as getattr(g, "not")), plus
    `clamp`, written here for its Objective-C aliases."""

    def clamp(self, tensor: Tensor, min: Tensor | None = None, max: Tensor | None = None, *,
              minValueTensor: Tensor | None = None, maxValueTensor: Tensor | None = None,
              name: str | None = None) -> Tensor:
        """minimum(maximum(tensor, min), max), NaN-propagating (NumPy clip); the three shapes
        broadcast, one numeric dataType; where min > max the result is max. Objective-C labels
        `minValueTensor=` / `maxValueTensor=` are accepted too. Gradient: to `tensor` where
        min <= tensor <= max, else to the bound that was returned."""
        lo = _alias("clamp", name, "min", min, "minValueTensor", minValueTensor)
        hi = _alias("clamp", name, "max", max, "maxValueTensor", maxValueTensor)
        return self._add("clamp", [("tensor", tensor), ("min", lo), ("max", hi)], None,
                         name)[0]


def _alias(kind: str, name: str | None, label: str, value, objc: str, objc_value):
    from ..errors import op_error

    if value is not None and objc_value is not None:
        raise op_error(GraphError, kind, objc, f"either {label}= or {objc}=, not both",
                       "both", name)
    out = value if value is not None else objc_value
    if out is None:
        raise op_error(GraphError, kind, label, "a Tensor", "None", name)
    return out


for _row in ROWS:
    if _row.builder:
        _m = _builder(_row)
        setattr(ArithmeticOps, _m.__name__, _m)
        if _m.__name__ != _row.name:
            setattr(ArithmeticOps, _row.name, _m)  # getattr(g, "not") finds it too
del _row
