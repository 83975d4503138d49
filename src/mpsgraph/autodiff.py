"""Reverse-mode automatic differentiation: `gradientForPrimaryTensor` (Swift `gradients(of:with:)`).

The reverse walk visits, in reverse build order, every op that lies on a path from one of the
requested tensors to the primary tensor, and asks the op's gradient rule (kept next to the op's
definition in `ops/<family>.py`) for its inputs' gradients as NEW graph ops. Gradients reaching
one tensor along several uses are summed. The seed is ones of the primary's shape, so a
non-scalar primary gives the gradient of its sum; a requested tensor the primary does not
depend on gets zeros of its shape and type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .errors import DataTypeError, GraphError, UnsupportedError, op_error
from .ops._registry import OPS

if TYPE_CHECKING:
    from .graph import Tensor

__all__ = ["AutodiffOps"]


def _static(kind: str, t: Tensor) -> list[int]:
    if t.shape is None or any(s < 0 for s in t.shape):
        raise UnsupportedError(f"{kind}: needs a static shape for {t.name}, given {t.shape}")
    return t.shape


class AutodiffOps:
    """Graph methods for automatic differentiation (mixed into `Graph`)."""

    def gradientForPrimaryTensor(self, primaryTensor: Tensor,
                                 withTensors: Sequence[Tensor] | Tensor,
                                 name: str | None = None) -> dict[Tensor, Tensor]:
        """{t: d sum(primaryTensor) / d t} for each t in `withTensors`, as tensors of this graph
        with t's shape and dataType. `withTensors` may also be one Tensor (a bare `w` is read
        as `[w]`: the result is still the dict `{w: gradient}`)."""
        return self._gradients("gradientForPrimaryTensor", primaryTensor, withTensors, name)

    def _gradients(self, kind: str, primaryTensor: Tensor, withTensors: Any,
                   name: str | None) -> dict[Tensor, Tensor]:
        from .graph import Tensor

        primary_arg = "of" if kind == "gradients" else "primaryTensor"
        self._check_tensor(kind, name, primary_arg, primaryTensor)
        if isinstance(withTensors, Tensor):
            withTensors = [withTensors]
        if isinstance(withTensors, (str, bytes)) or not isinstance(withTensors, Iterable):
            raise op_error(GraphError, kind, "withTensors", "a Tensor or a list of Tensors",
                           type(withTensors).__name__, name)
        wrt = list(withTensors)
        for i, t in enumerate(wrt):
            self._check_tensor(kind, name, f"withTensors[{i}]", t)
        for arg, t in [(primary_arg, primaryTensor)] + [
                (f"withTensors[{i}]", t) for i, t in enumerate(wrt)]:
            if not t.dataType.is_floating:
                raise op_error(DataTypeError, kind, arg, "a floating-point tensor", t.dataType,
                               name)
        targets = set(wrt)
        # the requested tensors, for rules that fuse a chain only when no tensor inside it
        # is requested (normalize's batch-statistics rule, ops/normalization.py)
        self._grad_targets = targets
        # ops reachable forward from the requested tensors ...
        from_wrt: set[int] = set()
        reach = {id(t) for t in targets}
        for op in self._ops:
            if any(id(t) in reach for t in op.inputTensors):
                from_wrt.add(op.id)
                reach.update(id(t) for t in op.outputTensors)
        # ... and backward from the primary
        needed: set[int] = set()
        stack = [primaryTensor.operation]
        while stack:
            op = stack.pop()
            if op.id in needed:
                continue
            needed.add(op.id)
            stack.extend(t.operation for t in op.inputTensors)
        path = [op for op in self._ops if op.id in needed and op.id in from_wrt]

        first_grad_op = len(self._ops)  # the ops added from here on are this call's
        grads: dict[Tensor, Tensor] = {
            primaryTensor: self.constant(1.0, _static(kind, primaryTensor),
                                         primaryTensor.dataType)}
        for op in reversed(path):
            outs = [grads.get(t) for t in op.outputTensors]
            if all(g is None for g in outs):
                continue
            rule = OPS[op.kind].grad
            if rule is None:
                raise op_error(UnsupportedError, kind, primary_arg, "a graph of "
                               "differentiable ops", f"a path through {op.kind} "
                               f"({op.name or op.id}), which has no gradient rule", name)
            for arg, g in rule(self, op, outs).items():
                t = op.input(arg)
                if t is None or g is None or not t.dataType.is_floating:
                    continue
                if id(t) not in reach and t not in targets:
                    continue  # does not lead back to a requested tensor
                grads[t] = g if t not in grads else self.addition(grads[t], g)
        out: dict[Tensor, Tensor] = {}
        for t in wrt:
            g = grads.get(t)
            if g is None:
                g = self.constant(0.0, _static(kind, t), t.dataType)
            elif g.shape != t.shape or g.dataType != t.dataType:
                raise GraphError(f"{kind}: internal error: gradient of {t.name} has shape "
                                 f"{g.shape} {g.dataType!r}, expected {t.shape} {t.dataType!r}")
            out[t] = g
        # for mpsgraph.draw: which ops each gradient call added (ids first..last-1), of what
        self.__dict__.setdefault("_gradient_sections", []).append(
            (first_grad_op, len(self._ops), primaryTensor, name))
        return out

    def gradients(self, of: Tensor, withTensors: Sequence[Tensor] | Tensor,
                  name: str | None = None) -> dict[Tensor, Tensor]:
        """Swift `gradients(of:with:name:)`; the same as `gradientForPrimaryTensor` (errors
        name `gradients` and its argument `of`)."""
        return self._gradients("gradients", of, withTensors, name)
