"""The optimizer family (Apple's MPSGraphOptimizerOps.h): stochasticGradientDescent,
applyStochasticGradientDescent, adam.

Every input is a float tensor of one dataType; the hyper-parameters (learningRate, beta1, ...)
are usually scalars, and every input must be broadcastable to `values`' shape (NumPy rules);
every result has `values`' shape and dataType. Half types compute in float32, round once.

    stochasticGradientDescent:  values - learningRate * gradient

    adam (Apple's formulas; t is the step being taken, 1 on the first step):
        lr[t]     = learningRate * sqrt(1 - beta2Power) / (1 - beta1Power)
                    (beta1Power = beta1^t, beta2Power = beta2^t, given by the caller)
                  = currentLearningRate             (the other overload: no bias correction)
        m[t]      = beta1 * m[t-1] + (1 - beta1) * g
        v[t]      = beta2 * v[t-1] + (1 - beta2) * g^2
        maxVel[t] = max(maxVel[t-1], v[t])          (AMSGrad, only when maximumVelocity given)
        values    = values - lr[t] * m[t] / (sqrt(maxVel[t] or v[t]) + epsilon)
    returns [values, m[t], v[t]] or [values, m[t], v[t], maxVel[t]].

Decisions where Apple is silent: epsilon is added after the square root (Apple's formula);
inputs broadcast to `values`' shape; these ops have no gradient rule (they are update steps:
differentiating through one raises UnsupportedError); applyStochasticGradientDescent returns
the `assign` Operation (named `name`) that writes the update; like every assign it runs only
when listed in `targetOperations`, and the variable tensor it reads is the variable's value at
the start of the run (SPEC 1.6).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import GraphError, op_error
from ..types import ShapedType
from ._registry import InferContext, register_op
from .loss import broadcastable_to, same_float_type

if TYPE_CHECKING:
    from ..graph import Operation, Tensor

__all__ = ["OptimizerOps", "AdamAttrs"]


@dataclass(frozen=True)
class AdamAttrs:
    amsgrad: bool  # maximumVelocity given: four results
    bias_correction: bool  # learningRate (with beta powers) rather than currentLearningRate


def adam_step(sqrt, maximum, a: AdamAttrs, lr, current_lr, b1, b2, eps, beta1_power,
              beta2_power, values, m, v, vmax, g):
    """The Adam update written once for every backend: `sqrt` / `maximum` are the array
    library's; the operands are float32 arrays (None where absent). Returns (values, momentum,
    velocity, maximumVelocity or None), unrounded and unbroadcast (the kernel does both)."""
    m_t = b1 * m + (1 - b1) * g
    v_t = b2 * v + (1 - b2) * g * g
    if a.bias_correction:
        lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
    else:
        lr_t = current_lr
    vmax_t = maximum(vmax, v_t) if a.amsgrad else None
    denom = sqrt(vmax_t if a.amsgrad else v_t) + eps
    return values - lr_t * m_t / denom, m_t, v_t, vmax_t


_ADAM_INPUTS = ("learningRate", "currentLearningRate", "beta1", "beta2", "epsilon",
                "beta1Power", "beta2Power", "values", "momentum", "velocity",
                "maximumVelocity", "gradient")


def _infer_sgd(ctx: InferContext):
    v = ctx.input_names[1]  # "values", or "variable" for applyStochasticGradientDescent
    dt = same_float_type(ctx, (v, "learningRate", "gradient"))
    shape = ctx.type_of(v).shape
    for arg in ("learningRate", "gradient"):
        broadcastable_to(ctx, arg, shape, f"the {v}' shape" if v == "values"
                         else "the variable's shape")
    return [ShapedType(shape, dt)], None


def _infer_adam(ctx: InferContext):
    a: AdamAttrs = ctx.attrs
    given = tuple(n for n in _ADAM_INPUTS if ctx.type_of(n) is not None)
    dt = same_float_type(ctx, ("values",) + tuple(n for n in given if n != "values"))
    shape = ctx.type_of("values").shape
    for arg in given:
        if arg != "values":
            broadcastable_to(ctx, arg, shape, "the values' shape")
    n_out = 4 if a.amsgrad else 3
    return [ShapedType(shape, dt) for _ in range(n_out)], a


register_op("stochasticGradientDescent", _infer_sgd)
register_op("applyStochasticGradientDescent", _infer_sgd)
register_op("adam", _infer_adam)


class OptimizerOps:
    """Graph methods of the optimizer family (mixed into `Graph`)."""

    def stochasticGradientDescent(self, learningRate: Tensor, values: Tensor, gradient: Tensor,
                                  *, name: str | None = None) -> Tensor:
        """One SGD step (Swift `stochasticGradientDescent(learningRate:values:gradient:name:)`):
        `values - learningRate * gradient`, with `values`' shape and dataType (learningRate,
        usually a scalar, and gradient broadcast to it)."""
        return self._add("stochasticGradientDescent", [
            ("learningRate", learningRate), ("values", values), ("gradient", gradient)],
            None, name)[0]

    def applyStochasticGradientDescent(self, learningRate: Tensor, variable: Tensor,
                                       gradient: Tensor, *, name: str | None = None
                                       ) -> Operation:
        """Swift `applyStochasticGradientDescent(learningRate:variable:gradient:name:)`: an
        Operation that assigns `variable - learningRate * gradient` to `variable` (a tensor
        made by `variable(...)`) when it is run as a target operation."""
        op = "applyStochasticGradientDescent"
        self._check_variable(op, name, variable)
        new = self._add(op, [("learningRate", learningRate), ("variable", variable),
                             ("gradient", gradient)], None,
                        name)[0]
        return self.assign(variable, new, name=name)

    def adam(self, *, learningRate: Tensor | None = None,
             currentLearningRate: Tensor | None = None, beta1: Tensor, beta2: Tensor,
             epsilon: Tensor, beta1Power: Tensor | None = None,
             beta2Power: Tensor | None = None, values: Tensor, momentum: Tensor,
             velocity: Tensor, maximumVelocity: Tensor | None = None, gradient: Tensor,
             name: str | None = None) -> list[Tensor]:
        """Adam update (Swift `adam(learningRate:beta1:beta2:epsilon:beta1Power:beta2Power:
        values:momentum:velocity:maximumVelocity:gradient:name:)` and `adam(currentLearningRate:
        beta1:beta2:epsilon:values:momentum:velocity:maximumVelocity:gradient:name:)`, one
        method; every argument is keyword-only). Give either `learningRate` with `beta1Power`
        (= beta1^t) and `beta2Power` (= beta2^t), or `currentLearningRate` without them.

        Returns [newValues, newMomentum, newVelocity] (+ newMaximumVelocity when
        `maximumVelocity` is given, AMSGrad); formulas in the module docstring."""
        op = "adam"
        if (learningRate is None) == (currentLearningRate is None):
            raise op_error(GraphError, op, "learningRate", "exactly one of learningRate and "
                           "currentLearningRate", "both" if learningRate is not None
                           else "neither", name)
        if learningRate is not None:
            for arg, v in (("beta1Power", beta1Power), ("beta2Power", beta2Power)):
                if v is None:
                    raise op_error(GraphError, op, arg, "a Tensor (beta^t; required with "
                                   "learningRate)", None, name)
        else:
            for arg, v in (("beta1Power", beta1Power), ("beta2Power", beta2Power)):
                if v is not None:
                    raise op_error(GraphError, op, arg, "None with currentLearningRate (the "
                                   "learning rate is already bias-corrected)", "a Tensor", name)
        ins = dict(learningRate=learningRate, currentLearningRate=currentLearningRate,
                   beta1=beta1, beta2=beta2, epsilon=epsilon, beta1Power=beta1Power,
                   beta2Power=beta2Power, values=values, momentum=momentum, velocity=velocity,
                   maximumVelocity=maximumVelocity, gradient=gradient)
        optional = ("learningRate", "currentLearningRate", "beta1Power", "beta2Power",
                    "maximumVelocity")
        attrs = AdamAttrs(maximumVelocity is not None, learningRate is not None)
        return list(self._add(op, [(n, ins[n]) for n in _ADAM_INPUTS], attrs, name,
                              optional=optional))
