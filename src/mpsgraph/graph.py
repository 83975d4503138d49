"""`Graph`, `Tensor` and `Operation`: the symbolic IR, and the source ops (placeholder, constant,
variable, read, assign). Op families add their methods through the mixins of `ops/`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import DataTypeError, FeedError, GraphError, GraphMismatchError, ShapeError, op_error
from .ops._registry import OPS, InferContext
from .ops.convolution import ConvolutionOps
from .types import DataType, ShapedType

if TYPE_CHECKING:
    from .runtime.device import Device
    from .runtime.executable import Executable
    from .runtime.tensor_data import TensorData

__all__ = ["Graph", "Tensor", "Operation"]


class Tensor:
    """A symbolic value: `shape` (list, -1 for a dynamic dimension, None if unranked),
    `dataType`, and `operation`, the op that produces it. Hashes by identity."""

    __slots__ = ("graph", "operation", "index", "_type", "__weakref__")

    def __init__(self, graph: Graph, operation: Operation, index: int, type_: ShapedType):
        self.graph = graph
        self.operation = operation
        self.index = index
        self._type = type_

    @property
    def shape(self) -> list[int] | None:
        return self._type.shape

    @property
    def dataType(self) -> DataType:
        return self._type.dataType

    @property
    def shapedType(self) -> ShapedType:
        return self._type

    @property
    def name(self) -> str:
        op = self.operation
        base = op.name or f"{op.kind}_{op.id}"
        return base if len(op.outputTensors) == 1 else f"{base}:{self.index}"

    def __repr__(self) -> str:
        return f"<Tensor {self.name} shape={self.shape} dataType={self.dataType!r}>"


class Operation:
    """One node: `kind` (the MPSGraph method name), `name`, `inputTensors`, `outputTensors`.

    `inputs` keeps the optional inputs' positions (None where not given), aligned with
    `input_names`; `attrs` is the op's private, validated copy of its parameters."""

    __slots__ = ("graph", "id", "kind", "name", "inputs", "input_names", "attrs", "kernel_attrs",
                 "outputTensors", "__weakref__")

    def __init__(self, graph: Graph, kind: str, name: str | None, inputs: tuple[Tensor | None, ...],
                 input_names: tuple[str, ...], attrs: Any, kernel_attrs: Any):
        self.graph = graph
        self.id = len(graph._ops)
        self.kind = kind
        self.name = name
        self.inputs = inputs
        self.input_names = input_names
        self.attrs = attrs
        self.kernel_attrs = kernel_attrs
        self.outputTensors: list[Tensor] = []

    @property
    def inputTensors(self) -> list[Tensor]:
        return [t for t in self.inputs if t is not None]

    def input(self, name: str) -> Tensor | None:
        return self.inputs[self.input_names.index(name)]

    def __repr__(self) -> str:
        return f"<Operation {self.kind} {self.name or self.id}>"


def _array_from_value(op: str, name: str | None, value: Any, shape: Sequence[int] | None,
                      dataType: DataType | None) -> np.ndarray:
    """The data of constant/variable: bytes, a NumPy array, a nested sequence or a scalar."""
    if dataType is None:
        if isinstance(value, np.ndarray):
            try:
                dataType = DataType.from_numpy(value.dtype)
            except TypeError:
                raise op_error(DataTypeError, op, "dataType", "a DataType (required for this "
                               "value)", f"None with a {value.dtype} array", name) from None
        else:
            raise op_error(DataTypeError, op, "dataType", "a DataType", None, name)
    try:
        dataType = DataType(dataType)
        npdt = dataType.numpy_dtype
    except (ValueError, TypeError):
        raise op_error(DataTypeError, op, "dataType", "a DataType with a NumPy representation",
                       dataType, name) from None
    if shape is not None:
        shape = [int(s) for s in shape]
        if any(s < 0 for s in shape):
            raise op_error(ShapeError, op, "shape", "a static shape (no -1)", shape, name)
    if isinstance(value, (bytes, bytearray, memoryview)):
        if shape is None:
            raise op_error(ShapeError, op, "shape", "a shape for bytes data", None, name)
        want = int(np.prod(shape, dtype=np.int64)) * npdt.itemsize
        if len(value) != want:
            raise op_error(ShapeError, op, "data", f"{want} bytes (shape {shape} x "
                           f"{npdt.itemsize} bytes of {dataType!r})", f"{len(value)} bytes", name)
        return np.frombuffer(bytes(value), dtype=npdt.newbyteorder("<")).astype(npdt).reshape(
            shape)
    arr = np.asarray(value)
    if arr.dtype == object:
        raise op_error(DataTypeError, op, "data", "numbers", type(value).__name__, name)
    arr = arr.astype(npdt)
    if shape is not None:
        if arr.ndim == 0:
            arr = np.full(shape, arr, dtype=npdt)
        elif arr.size != int(np.prod(shape, dtype=np.int64)):
            raise op_error(ShapeError, op, "shape", f"{arr.size} elements (the data's count)",
                           shape, name)
        else:
            arr = arr.reshape(shape)
    arr = np.ascontiguousarray(arr)
    arr.flags.writeable = False
    return arr


class Graph(ConvolutionOps):
    """`MPSGraph`: build a symbolic graph with its methods, then `run` or `compile` it."""

    def __init__(self) -> None:
        self._ops: list[Operation] = []
        self._executables: dict[Any, Executable] = {}
        # variable op -> {device key -> array}; persists across runs and executables
        self._variable_storage: dict[Operation, dict[str, Any]] = {}

    # ------------------------------------------------------------------ building
    def _check_tensor(self, kind: str, name: str | None, argument: str, t: Any,
                      optional: bool = False) -> Tensor | None:
        if t is None and optional:
            return None
        if not isinstance(t, Tensor):
            raise op_error(GraphError, kind, argument, "a Tensor" + (" or None" if optional
                                                                     else ""),
                           type(t).__name__, name)
        if t.graph is not self:
            raise op_error(GraphMismatchError, kind, argument, "a tensor of this graph",
                           f"a tensor of another graph ({t.name})", name)
        return t

    def _add(self, kind: str, inputs: Sequence[tuple[str, Any]], attrs: Any = None,
             name: str | None = None, optional: Iterable[str] = ()) -> list[Tensor]:
        """Check the inputs, run the op's shape rule, append the Operation; return its outputs."""
        if name is not None and not isinstance(name, str):
            raise op_error(GraphError, kind, "name", "a str or None", type(name).__name__)
        opt = set(optional)
        names = tuple(n for n, _ in inputs)
        tensors = tuple(self._check_tensor(kind, name, n, t, n in opt) for n, t in inputs)
        opdef = OPS[kind]
        values = [_known_value(t) if (t is not None and n in opdef.value_inputs) else None
                  for n, t in zip(names, tensors)]
        ctx = InferContext(kind, name, attrs, names,
                           [t.shapedType if t is not None else None for t in tensors], values)
        out_types, kernel_attrs = opdef.infer(ctx)
        op = Operation(self, kind, name, tensors, names, attrs, kernel_attrs)
        op.outputTensors = [Tensor(self, op, i, ty) for i, ty in enumerate(out_types)]
        self._ops.append(op)
        return op.outputTensors

    def placeholder(self, shape: Sequence[int] | None, dataType: DataType = DataType.float32,
                    name: str | None = None) -> Tensor:
        """A tensor fed at run time. `shape=None` is unranked; -1 entries are dynamic."""
        try:
            st = ShapedType(shape, dataType)
        except (TypeError, ValueError) as e:
            raise op_error(ShapeError, "placeholder", "shape", "a list of ints >= 0 or -1",
                           shape, name) from e
        return self._add("placeholder", [], st, name)[0]

    def constant(self, value: Any, shape: Sequence[int] | None = None,
                 dataType: DataType | None = None, name: str | None = None) -> Tensor:
        """A constant tensor. `value`: bytes (with shape and dataType), a NumPy array, a nested
        sequence, or a scalar (shape None gives a scalar of shape [], a shape fills it).
        `dataType` is required (as in Swift) unless `value` is a NumPy array of a supported
        dtype, whose type is then used."""
        arr = _array_from_value("constant", name, value, shape, dataType)
        return self._add("constant", [], arr, name)[0]

    def variable(self, data: Any, shape: Sequence[int] | None = None,
                 dataType: DataType | None = None, name: str | None = None) -> Tensor:
        """A variable with initial value `data` (same rules as `constant`); its tensor reads the
        variable's value as of the start of each run. State persists across runs."""
        arr = _array_from_value("variable", name, data, shape, dataType)
        t = self._add("variable", [], arr, name)[0]
        self._variable_storage[t.operation] = {}
        return t

    def read(self, variable: Tensor, name: str | None = None) -> Tensor:
        """The variable's value (as of the start of the run)."""
        self._check_variable("read", name, variable)
        return self._add("read", [("variable", variable)], None, name)[0]

    def readVariable(self, variable: Tensor, name: str | None = None) -> Tensor:
        """Alias of `read` (Objective-C `readVariable:name:`)."""
        return self.read(variable, name=name)

    def assign(self, variable: Tensor, tensor: Tensor, name: str | None = None) -> Operation:
        """An Operation writing `tensor` into the variable when it is a target of `run`.
        All targeted assigns commit at the end of the run, in targetOperations order."""
        self._check_variable("assign", name, variable)
        self._add("assign", [("variable", variable), ("tensor", tensor)], None, name)
        return self._ops[-1]

    def assignVariable(self, variable: Tensor, withValueOfTensor: Tensor,
                       name: str | None = None) -> Operation:
        """Alias of `assign` (Objective-C `assignVariable:withValueOfTensor:name:`)."""
        return self.assign(variable, withValueOfTensor, name=name)

    def _check_variable(self, kind: str, name: str | None, variable: Any) -> None:
        self._check_tensor(kind, name, "variable", variable)
        if variable.operation.kind != "variable":
            raise op_error(GraphError, kind, "variable", "a tensor made by variable(...)",
                           f"a tensor made by {variable.operation.kind}", name)

    # ------------------------------------------------------------------ running
    def compile(self, feeds: Mapping[Tensor, ShapedType], targetTensors: Sequence[Tensor],
                targetOperations: Sequence[Operation] | None = None,
                device: Device | str | None = None, **options: Any) -> Executable:
        """Check and plan once; returns an `Executable` whose `run(inputs)` takes the feeds in
        the insertion order of `feeds` (its `feedTensors`)."""
        from .runtime.executable import Executable

        return Executable(self, feeds, targetTensors, targetOperations, device, **options)

    def run(self, feeds: Mapping[Tensor, Any] | None = None,
            targetTensors: Sequence[Tensor] = (),
            targetOperations: Sequence[Operation] | None = None,
            device: Device | str | None = None) -> dict[Tensor, TensorData]:
        """Run the subgraph the targets need; returns {target tensor: TensorData}.

        Compiled executables are cached per (targets, feed types, device), so running the same
        graph again with new data costs no re-planning."""
        from .runtime.device import resolve_device
        from .runtime.executable import Executable, feed_type

        feeds = dict(feeds or {})
        dev = resolve_device(device)
        for t in feeds:
            if not isinstance(t, Tensor) or t.graph is not self:
                raise op_error(FeedError, "run", "feeds", "placeholder tensors of this graph",
                               repr(t))
        targets = list(dict.fromkeys(targetTensors))
        tops = list(targetOperations or [])
        types = {t: feed_type(t, v) for t, v in feeds.items()}
        key = (tuple(id(t) for t in targets), tuple(id(o) for o in tops),
               tuple((id(t), ty.shape and tuple(ty.shape), ty.dataType) for t, ty in types.items()),
               dev.key)
        exe = self._executables.get(key)
        if exe is None:
            exe = Executable(self, types, targets, tops, dev, _prune_feeds=True)
            self._executables[key] = exe
        outs = exe.run([feeds[t] for t in exe.feedTensors])
        return dict(zip(exe.targetTensors, outs))


def _known_value(t: Tensor) -> np.ndarray | None:
    """The value of a tensor known at build time (a constant's), else None."""
    return t.operation.attrs if t.operation.kind == "constant" else None


# source ops: their kernels live in the executable (they touch graph state, not arrays)
def _infer_placeholder(ctx: InferContext):
    return [ctx.attrs], None


def _infer_constant(ctx: InferContext):
    arr = ctx.attrs
    return [ShapedType(arr.shape, DataType.from_numpy(arr.dtype))], None


def _infer_read(ctx: InferContext):
    return [ctx.in_types[0]], None


def _infer_assign(ctx: InferContext):
    var, val = ctx.in_types
    if val.dataType != var.dataType:
        raise ctx.error(DataTypeError, "tensor", f"dataType {var.dataType!r} (the variable's)",
                        val.dataType)
    if val.shape is not None and (len(val.shape) != len(var.shape) or any(
            a != b and a != -1 for a, b in zip(val.shape, var.shape))):
        raise ctx.error(ShapeError, "tensor", f"shape {var.shape} (the variable's)", val.shape)
    return [], None


def _register_source_ops() -> None:
    from .ops._registry import register_op

    register_op("placeholder", _infer_placeholder)
    register_op("constant", _infer_constant)
    register_op("variable", _infer_constant)
    register_op("read", _infer_read, grad=lambda g, op, dys: {"variable": dys[0]})
    register_op("assign", _infer_assign)


_register_source_ops()
