"""The op table: one `OpDef` per MPSGraph operation kind, keyed by the Swift method name.

Contract of the rules kept here (each family module registers its own):

- `infer(ctx) -> (out_types, kernel_attrs)` checks every argument and returns the output
  `ShapedType`s and the attributes the kernels receive. It is called twice: when the op is
  built (shapes may hold -1, an unranked input has shape None, and `ctx.values` holds the value
  of constant inputs only) and when a graph is compiled (every shape static). A check that needs
  a dimension still unknown is skipped at build time and made at compile time. Errors are
  raised with `ctx.error(...)`, which names op, argument, expected and given.
- Inputs listed in `value_inputs` (shape tensors) are also needed as VALUES. When such a value
  is unknown at compile time (it is computed or fed), `infer` runs again at run time with the
  value in `ctx.values` (SPEC: the check then happens at run time).
- `host_reads(op) -> bool` (optional): the op's kernel reads values back to the host when it
  runs: a result shape that depends on values (nonZeroIndices) or a run-time check of index
  values (a gather with fed indices). A compiled Executable never captures such a step in a
  CUDA graph (runtime/executable.py).
- `grad(g, op, out_grads) -> {input_name: Tensor}` builds the gradients of the op's inputs as
  new graph ops, from the incoming gradients of its outputs (`None` for an output nothing
  depends on). It never computes numbers. Inputs it omits get no gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GraphError, op_error
from ..types import ShapedType

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["OpDef", "InferContext", "register_op", "OPS"]


@dataclass
class InferContext:
    """What a shape rule sees: the op's kind, user name, attrs, input types and known values."""

    kind: str
    name: str | None
    attrs: Any
    input_names: tuple[str, ...]
    in_types: list[ShapedType | None]
    values: list[np.ndarray | None]
    static: bool = False  # True at compile/run time: every shape is known

    def error(self, cls: type[GraphError], argument: str, expected: object,
              given: object) -> GraphError:
        return op_error(cls, self.kind, argument, expected, given, self.name)

    def type_of(self, argument: str) -> ShapedType | None:
        return self.in_types[self.input_names.index(argument)]

    def value_of(self, argument: str) -> np.ndarray | None:
        return self.values[self.input_names.index(argument)]


InferFn = Callable[[InferContext], "tuple[list[ShapedType], Any]"]
GradFn = Callable[["Graph", "Operation", "list[Tensor | None]"], "dict[str, Tensor]"]


@dataclass(frozen=True)
class OpDef:
    name: str
    infer: InferFn
    grad: GradFn | None = None
    value_inputs: tuple[str, ...] = field(default=())
    host_reads: Callable[[Operation], bool] | None = None


OPS: dict[str, OpDef] = {}


def register_op(name: str, infer: InferFn, grad: GradFn | None = None,
                value_inputs: tuple[str, ...] = (),
                host_reads: Callable[[Operation], bool] | None = None) -> OpDef:
    if name in OPS:
        raise RuntimeError(f"op {name!r} registered twice")
    OPS[name] = OpDef(name, infer, grad, value_inputs, host_reads)
    return OPS[name]
