"""The normalization family (Apple's MPSGraphNormalizationOps.h): `mean`, `variance` (with
and without a given mean), `normalize`, and the three gradient ops of batch normalization
`normalizationGradient`, `normalizationGammaGradient`, `normalizationBetaGradient`.

`mean(of:axes:)` is the reduction family's `reductionMean` op (ops/reduction.py: one op kind,
one kernel); its Graph method lives here, with the header Apple puts it in.

Shapes (x [d0, ..., dn-1], axes A, N = prod(d_a for a in A)); reductions KEEP the rank, the
reduced axes with size 1, as every MPSGraph reduction does:

    mean(x, axes=A)                -> m = sum_A(x) / N                       [x, A -> 1]
    variance(x, axes=A)            -> sum_A((x - mean_A(x))^2) / N           [x, A -> 1]
    variance(x, mean=m, axes=A)    -> sum_A((x - m)^2) / N   (m broadcasts to x) [x, A -> 1]
    normalize(x, m, v, gamma=g, beta=b, epsilon=e)
                                   -> (x - m) / sqrt(v + e) * g + b     [broadcast of all]
    normalizationGammaGradient(dy, x, m, v, reductionAxes=A, epsilon=e)
                                   -> sum_A(dy * (x - m) / sqrt(v + e))          [.., A -> 1]
    normalizationBetaGradient(dy, x, reductionAxes=A) -> sum_A(dy)               [.., A -> 1]
    normalizationGradient(dy, x, m, v, gammaTensor=g, gammaGradientTensor=gg,
                          betaGradientTensor=bg, reductionAxes=A, epsilon=e)      [x]
        the gradient of normalize(x, mean_A(x), variance_A(x), g, b, e) with respect to x
        (batch statistics: the mean's and the variance's dependence on x included). With
        r = 1/sqrt(v + e), xhat = (x - m) r:
          neither gg nor bg given:  dx = r (dyg - mean_A(dyg) - xhat mean_A(dyg xhat)),
                                    dyg = dy g
          gg or bg given:           dx = g r (dy - bg/N - xhat gg/N)   (Apple's form: gg is
                                    sum_A(dy xhat), bg sum_A(dy); a missing one is computed)
        (the two agree when g is constant along A, as a batch norm's gamma is).

The variance is the population variance (divided by N, not N - 1: the one normalization
uses; TensorFlow's `tf.nn.moments`, PyTorch's `var(correction=0)`). Over an empty slice
(N = 0) mean and variance are NaN. Types: float32, float16, bFloat16, the same for every tensor
of a call; half types compute in float32 and round once. Axes: a list of ints, negative ones
counting from the end, repeated ones reduced once, out of range a ShapeError; `axes=None`
reduces every axis (as the reductions do).

Gradients (through gradientForPrimaryTensor): `variance` and `normalize` differentiate in every
tensor input (normalize's mean and variance as independent inputs; the chain through `mean` /
`variance` ops adds the batch-statistics terms). When normalize's mean and variance ARE
`mean(x)` and `variance(x)` (with or without that mean) over the same axes of the same x, and
neither is itself a requested tensor, the rule emits fused ops instead of the chain (the same
numbers; the batch-norm training pattern): with gamma constant along the axes, the internal op
`normalizationGradients` ([dx, dgamma, dbeta] of one kernel: `normalizationGradient`,
`normalizationGammaGradient` and `normalizationBetaGradient` of the same arguments), else
`normalizationGradient`. The gradient ops have no gradient of their own.

Compile time (runtime/plan_fusion.py): a `mean(x, A)` and a `variance(x, [mean,] A)` of the
same x and axes run as ONE plan step, the internal `varianceMean` (one pass over x for both
on the torch backend; the mean computed once on NumPy), so the batch-norm training step reads
x once for its statistics, once more for normalize, and twice with dy for the fused backward.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import GraphError, ShapeError, UnsupportedError, op_error
from ..types import ShapedType
from ._checks import same_float_type
from ._registry import InferContext, register_op
from .arithmetic import broadcast_shapes, sum_to_shape
from .reduction import axes_attr, normalize_axes

if TYPE_CHECKING:
    from ..graph import Graph, Tensor

__all__ = ["NormalizationOps", "NormAttrs"]


@dataclass(frozen=True)
class NormAttrs:
    """`axes` as given (None: every axis; normalised by the shape rule), `epsilon` a float
    (unused by the ops without one), `label` the user's name of the axes argument."""

    axes: tuple[int, ...] | None = None
    epsilon: float = 0.0
    label: str = "axes"


@dataclass(frozen=True)
class NormKernelAttrs:
    """What the kernels receive: the normalised axes (sorted, unique, non-negative, of the
    broadcast shape) and epsilon."""

    axes: tuple[int, ...]
    epsilon: float
    count: int  # N, the number of elements of one reduced slice (0 allowed)


def _epsilon(op: str, name: str | None, eps: Any) -> float:
    if eps is None:
        raise op_error(GraphError, op, "epsilon", "a finite float >= 0 (required, as in "
                       "Swift)", None, name)
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not math.isfinite(eps) \
            or eps < 0:
        raise op_error(GraphError, op, "epsilon", "a finite float >= 0", eps, name)
    return float(eps)


def _reduced(ctx: InferContext, shape: list[int] | None, dt) -> tuple[list, NormKernelAttrs]:
    """Output type and kernel attrs of a reduction of `shape` over ctx.attrs.axes."""
    if shape is None:
        return [ShapedType(None, dt)], None
    axes = normalize_axes(ctx, "tensor", ctx.attrs.axes, len(shape), ctx.attrs.label)
    dims = [shape[a] for a in axes]
    n = math.prod(dims) if all(d >= 0 for d in dims) else -1
    out = [1 if i in axes else d for i, d in enumerate(shape)]
    return [ShapedType(out, dt)], NormKernelAttrs(axes, ctx.attrs.epsilon, n)


def _broadcasts_to(ctx: InferContext, arg: str, target: str) -> None:
    """`arg`'s shape broadcasts to `target`'s (without changing it), else ShapeError."""
    s, t = ctx.type_of(arg).shape, ctx.type_of(target).shape
    if s is None or t is None:
        return
    ok = len(s) <= len(t) and all(a in (1, -1) or b == -1 or a == b
                                  for a, b in zip(s[::-1], t[::-1]))
    if not ok:
        raise ctx.error(ShapeError, arg, f"a shape that broadcasts to {target}'s {t} (NumPy "
                        "rules; the result keeps its shape)", s)


# ---------------------------------------------------------------------------- shape rules
def _infer_variance(ctx: InferContext):
    args = ["tensor"] + (["mean"] if ctx.type_of("mean") is not None else [])
    dt = same_float_type(ctx, args)
    if len(args) == 2:
        _broadcasts_to(ctx, "mean", "tensor")
    return _reduced(ctx, ctx.type_of("tensor").shape, dt)


_NORMALIZE_ARGS = ("tensor", "mean", "variance", "gamma", "beta")


def _infer_normalize(ctx: InferContext):
    args = [a for a in _NORMALIZE_ARGS if ctx.type_of(a) is not None]
    dt = same_float_type(ctx, args)
    return [ShapedType(broadcast_shapes(ctx, args), dt)], ctx.attrs.epsilon


def _infer_gamma_gradient(ctx: InferContext):
    args = ["incomingGradient", "sourceTensor", "mean", "varianceTensor"]
    dt = same_float_type(ctx, args)
    return _reduced(ctx, broadcast_shapes(ctx, args), dt)


def _infer_beta_gradient(ctx: InferContext):
    args = ["incomingGradient", "sourceTensor"]
    dt = same_float_type(ctx, args)
    _broadcasts_to(ctx, "incomingGradient", "sourceTensor")
    return _reduced(ctx, ctx.type_of("incomingGradient").shape, dt)


_GRADIENT_ARGS = ("incomingGradient", "sourceTensor", "mean", "varianceTensor", "gammaTensor",
                  "gammaGradientTensor", "betaGradientTensor")


def _infer_gradient(ctx: InferContext):
    args = [a for a in _GRADIENT_ARGS if ctx.type_of(a) is not None]
    dt = same_float_type(ctx, args)
    x = ctx.type_of("sourceTensor").shape
    for a in args:
        if a != "sourceTensor":
            _broadcasts_to(ctx, a, "sourceTensor")
    out, kattrs = _reduced(ctx, x, dt)
    return [ShapedType(x, dt)], kattrs


def _infer_gradients(ctx: InferContext):
    """The internal `normalizationGradients` (the fused rule's op): [dx, dgamma, dbeta] =
    [normalizationGradient, normalizationGammaGradient, normalizationBetaGradient] of the same
    arguments (dgamma / dbeta of x's shape with the reduced axes of size 1)."""
    args = [a for a in _GRADIENT_ARGS[:5] if ctx.type_of(a) is not None]
    dt = same_float_type(ctx, args)
    x = ctx.type_of("sourceTensor").shape
    for a in args:
        if a != "sourceTensor":
            _broadcasts_to(ctx, a, "sourceTensor")
    red, kattrs = _reduced(ctx, x, dt)
    return [ShapedType(x, dt), red[0], red[0]], kattrs


# ---------------------------------------------------------------------------- gradient rules
def _count(op_kind: str, x: Tensor, axes: Sequence[int]) -> int:
    if x.shape is None or any(x.shape[a] < 0 for a in axes):
        raise UnsupportedError(f"{op_kind}: gradient needs the reduced dimensions static "
                               f"(shape {x.shape})")
    return math.prod(x.shape[a] for a in axes)


def _norm_axes(x: Tensor, axes) -> list[int]:
    r = len(x.shape)
    return sorted({a % r for a in axes}) if axes is not None else list(range(r))


def _grad_variance(g: Graph, op, dys):
    x, m = op.input("tensor"), op.input("mean")
    if x.shape is None:
        raise UnsupportedError(f"variance: gradient of an unranked tensor ({x.name})")
    axes = _norm_axes(x, op.attrs.axes)
    n = _count("variance", x, axes)
    dt = x.dataType
    centre = m if m is not None else g.reductionMean(x, axes=axes)
    d = g.subtraction(x, centre)
    two_n = g.constant(2.0 / n if n else float("nan"), dataType=dt)
    dx = g.multiplication(g.multiplication(dys[0], two_n), d)  # x's shape
    out = {"tensor": dx}
    if m is not None:
        out["mean"] = sum_to_shape(g, g.negative(dx), m)
    return out


def _fusable(g: Graph, op) -> list[int] | None:
    """The axes of batch statistics when normalize's mean and variance are mean(x) and
    variance(x) (with or without that mean) over the same axes of its x, and neither is a
    requested tensor of the gradient being built; else None."""
    x, m, v = op.input("tensor"), op.input("mean"), op.input("variance")
    mo, vo = m.operation, v.operation
    if x.shape is None or any(d < 0 for d in x.shape) or op.outputTensors[0].shape != x.shape:
        return None
    if mo.kind != "reductionMean" or vo.kind != "variance":
        return None
    if mo.input("tensor") is not x or vo.input("tensor") is not x:
        return None
    if vo.input("mean") is not None and vo.input("mean") is not m:
        return None
    wrt = getattr(g, "_grad_targets", None)
    if wrt is None or m in wrt or v in wrt:
        return None
    ma, va = _norm_axes(x, mo.attrs.axes), _norm_axes(x, vo.attrs.axes)
    return ma if ma == va else None


def _const_along(t: Tensor | None, x: Tensor, axes: Sequence[int]) -> bool:
    """`t` (absent counts) has size 1 along every axis of `axes` once broadcast to x."""
    if t is None:
        return True
    off = len(x.shape) - len(t.shape)
    return all(a < off or t.shape[a - off] == 1 for a in axes)


def _grad_normalize(g: Graph, op, dys):
    dy = dys[0]
    x, m, v = op.input("tensor"), op.input("mean"), op.input("variance")
    gamma, beta = op.input("gamma"), op.input("beta")
    eps = op.attrs.epsilon
    dt = x.dataType

    def rstd_and_centred() -> tuple[Tensor, Tensor]:
        return (g.reverseSquareRoot(g.addition(v, g.constant(eps, dataType=dt))),
                g.subtraction(x, m))
    out: dict[str, Tensor] = {}
    if beta is not None:
        out["beta"] = sum_to_shape(g, dy, beta)
    axes = _fusable(g, op)
    if axes is not None:
        # batch statistics: mean and variance get no gradient from here (their effect on x
        # is in dx). Gamma constant along the axes (a batch norm's): dx, dgamma and dbeta
        # from one fused op; else dx from normalizationGradient and dgamma elementwise
        if _const_along(gamma, x, axes):
            attrs = NormAttrs(tuple(axes), eps, "reductionAxes")
            dx, gg, bg = g._add("normalizationGradients", [
                ("incomingGradient", dy), ("sourceTensor", x), ("mean", m),
                ("varianceTensor", v), ("gammaTensor", gamma)], attrs, None,
                optional=("gammaTensor",))
            out["tensor"] = dx
            if gamma is not None:
                out["gamma"] = sum_to_shape(g, gg, gamma)
            if beta is not None and _const_along(beta, x, axes):
                out["beta"] = sum_to_shape(g, bg, beta)
            return out
        out["tensor"] = g.normalizationGradient(dy, x, m, v, gammaTensor=gamma,
                                                reductionAxes=axes, epsilon=eps)
        r, d = rstd_and_centred()
        out["gamma"] = sum_to_shape(g, g.multiplication(dy, g.multiplication(d, r)), gamma)
        return out
    r, d = rstd_and_centred()
    dyg = dy if gamma is None else g.multiplication(dy, gamma)
    dyr = g.multiplication(dyg, r)
    out["tensor"] = sum_to_shape(g, dyr, x)
    out["mean"] = sum_to_shape(g, g.negative(dyr), m)
    half_r3 = g.multiplication(g.constant(-0.5, dataType=dt),
                               g.multiplication(r, g.multiplication(r, r)))
    out["variance"] = sum_to_shape(g, g.multiplication(g.multiplication(dyg, d), half_r3), v)
    if gamma is not None:
        out["gamma"] = sum_to_shape(g, g.multiplication(dy, g.multiplication(d, r)), gamma)
    return out


register_op("variance", _infer_variance, _grad_variance)
register_op("normalize", _infer_normalize, _grad_normalize)
register_op("normalizationGammaGradient", _infer_gamma_gradient)
register_op("normalizationBetaGradient", _infer_beta_gradient)
register_op("normalizationGradient", _infer_gradient)
register_op("normalizationGradients", _infer_gradients)  # internal: the fused rule's op


def _infer_variance_mean(ctx: InferContext):
    """The internal `varianceMean`: [mean, variance] of `tensor` over the axes (the plan's
    fused step of a reductionMean and a variance of one x, runtime/plan_fusion.py, which
    builds it from those two ops; its kernels take (the variance's kernel attrs, whether the
    variance was given the mean))."""
    dt = same_float_type(ctx, ["tensor"])
    out, kattrs = _reduced(ctx, ctx.type_of("tensor").shape, dt)
    return [out[0], out[0]], kattrs


register_op("varianceMean", _infer_variance_mean)  # internal: a plan step, never built


# ---------------------------------------------------------------------------- builders
def _axes(op: str, name: str | None, axes: Any, label: str, required: bool = False
          ) -> NormAttrs:
    if required and axes is None:
        raise op_error(GraphError, op, label, "a list of ints (required, as in Swift)", None,
                       name)
    a = axes_attr(op, name, None, axes)
    return NormAttrs(a.axes, 0.0, label)


class NormalizationOps:
    """Graph methods of MPSGraphNormalizationOps (mixed into `Graph`)."""

    def mean(self, of: Tensor, axes: Sequence[int] | None, *, name: str | None = None
             ) -> Tensor:
        """Swift `mean(of:axes:name:)`: the arithmetic mean of `of` over `axes` (floating
        types; NaN over an empty slice); the rank is kept, reduced axes of size 1. The same op
        as `reductionMean(of, axes=axes)`."""
        return self._reduce("reductionMean", of, None, axes, name)

    def variance(self, of: Tensor, *, mean: Tensor | None = None,
                 axes: Sequence[int] | None, name: str | None = None) -> Tensor:
        """Swift `variance(of:axes:name:)` and `variance(of:mean:axes:name:)`: the population
        variance sum_A((of - m)^2) / N over `axes` A, with m = mean(of, axes) or the given
        `mean` (which must broadcast to `of`'s shape). [x] -> [x with A -> 1]."""
        attrs = _axes("variance", name, axes, "axes")
        return self._add("variance", [("tensor", of), ("mean", mean)], attrs, name,
                         optional=("mean",))[0]

    def normalize(self, tensor: Tensor, mean: Tensor, variance: Tensor,
                  gamma: Tensor | None = None, beta: Tensor | None = None,
                  epsilon: float | None = None, *, name: str | None = None) -> Tensor:
        """Swift `normalize(_:mean:variance:gamma:beta:epsilon:name:)`: (tensor - mean) /
        sqrt(variance + epsilon) * gamma + beta, elementwise; the shapes broadcast together
        (NumPy rules) and the result has the broadcast shape. gamma / beta None: 1 / 0.
        (One Swift overload: every argument may also be given by position; epsilon is
        required, as in Swift.)"""
        attrs = NormAttrs(None, _epsilon("normalize", name, epsilon))
        return self._add("normalize", [("tensor", tensor), ("mean", mean),
                                       ("variance", variance), ("gamma", gamma),
                                       ("beta", beta)], attrs, name,
                         optional=("gamma", "beta"))[0]

    def normalizationGammaGradient(self, incomingGradient: Tensor, sourceTensor: Tensor,
                                   mean: Tensor, varianceTensor: Tensor,
                                   reductionAxes: Sequence[int] | None = None,
                                   epsilon: float | None = None, *,
                                   name: str | None = None) -> Tensor:
        """Swift `normalizationGammaGradient(withIncomingGradientTensor:sourceTensor:mean:
        varianceTensor:reductionAxes:epsilon:name:)`: sum over reductionAxes of
        incomingGradient * (sourceTensor - mean) / sqrt(varianceTensor + epsilon); the inputs
        broadcast together; the result keeps the rank, reduced axes of size 1."""
        kind = "normalizationGammaGradient"
        a = _axes(kind, name, reductionAxes, "reductionAxes", required=True)
        attrs = NormAttrs(a.axes, _epsilon(kind, name, epsilon), "reductionAxes")
        return self._add(kind, [("incomingGradient", incomingGradient),
                                ("sourceTensor", sourceTensor), ("mean", mean),
                                ("varianceTensor", varianceTensor)], attrs, name)[0]

    def normalizationBetaGradient(self, incomingGradient: Tensor, sourceTensor: Tensor,
                                  reductionAxes: Sequence[int] | None = None, *,
                                  name: str | None = None) -> Tensor:
        """Swift `normalizationBetaGradient(withIncomingGradientTensor:sourceTensor:
        reductionAxes:name:)`: sum of incomingGradient over reductionAxes (it must broadcast
        to sourceTensor's shape); the rank is kept, reduced axes of size 1."""
        kind = "normalizationBetaGradient"
        attrs = _axes(kind, name, reductionAxes, "reductionAxes", required=True)
        return self._add(kind, [("incomingGradient", incomingGradient),
                                ("sourceTensor", sourceTensor)], attrs, name)[0]

    def normalizationGradient(self, incomingGradient: Tensor, sourceTensor: Tensor,
                              mean: Tensor, varianceTensor: Tensor,
                              gammaTensor: Tensor | None = None,
                              gammaGradientTensor: Tensor | None = None,
                              betaGradientTensor: Tensor | None = None,
                              reductionAxes: Sequence[int] | None = None,
                              epsilon: float | None = None, *,
                              name: str | None = None) -> Tensor:
        """Swift `normalizationGradient(withIncomingGradientTensor:sourceTensor:mean:
        varianceTensor:gammaTensor:gammaGradientTensor:betaGradientTensor:reductionAxes:
        epsilon:name:)`: the gradient of a batch normalization with respect to its source
        (mean and variance the batch statistics over reductionAxes; see the module
        docstring for the formula). Every other tensor broadcasts to sourceTensor's shape,
        which is the result's."""
        kind = "normalizationGradient"
        a = _axes(kind, name, reductionAxes, "reductionAxes", required=True)
        attrs = NormAttrs(a.axes, _epsilon(kind, name, epsilon), "reductionAxes")
        opt = ("gammaTensor", "gammaGradientTensor", "betaGradientTensor")
        return self._add(kind, [("incomingGradient", incomingGradient),
                                ("sourceTensor", sourceTensor), ("mean", mean),
                                ("varianceTensor", varianceTensor),
                                ("gammaTensor", gammaTensor),
                                ("gammaGradientTensor", gammaGradientTensor),
                                ("betaGradientTensor", betaGradientTensor)], attrs, name,
                         optional=opt)[0]
