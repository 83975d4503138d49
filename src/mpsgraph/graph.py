"""`Graph`, `Tensor` and `Operation`: the symbolic IR, and the source ops (placeholder, constant,
variable, read, assign). Op families add their methods through the mixins of `ops/`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .autodiff import AutodiffOps
from .errors import DataTypeError, FeedError, GraphError, GraphMismatchError, ShapeError, op_error
from .ops._registry import OPS, InferContext
from .ops.activation import ActivationOps
from .ops.arithmetic import ArithmeticOps
from .ops.attention import AttentionOps
from .ops.control_flow import CallOps, ControlFlowOps
from .ops.conv_extra import ConvExtraOps
from .ops.convolution import ConvolutionOps
from .ops.cumulative import CumulativeOps
from .ops.fft import FourierTransformOps
from .ops.gather import GatherOps
from .ops.linalg import LinalgOps
from .ops.loss import LossOps
from .ops.matrix import MatrixOps
from .ops.nms import NonMaximumSuppressionOps
from .ops.normalization import NormalizationOps
from .ops.optimizer import OptimizerOps
from .ops.pool_extra import PoolExtraOps
from .ops.pooling import PoolingOps
from .ops.quantization import QuantizationOps
from .ops.random import RandomOps
from .ops.reduction import ReductionOps
from .ops.resize import ResizeOps
from .ops.rnn import RNNOps
from .ops.sample_grid import SampleGridOps
from .ops.shape import ShapeOps
from .ops.sort import SortOps
from .ops.sparse import SparseOps
from .ops.stencil import StencilOps
from .types import SUB_BYTE, DataType, ShapedType

_ML_DTYPES = {DataType.bFloat16.numpy_dtype, *(d.numpy_dtype for d in SUB_BYTE)}

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


def _feedable_type(op: str, name: str | None, dataType: Any) -> DataType:
    """`dataType` as a DataType that has a NumPy representation, else DataTypeError."""
    try:
        if isinstance(dataType, (bool, np.bool_)):
            raise ValueError
        dt = DataType(dataType)
        dt.numpy_dtype  # noqa: B018 - raises TypeError for types without data
    except (ValueError, TypeError):
        raise op_error(DataTypeError, op, "dataType", "a DataType with a NumPy representation",
                       repr(dataType) if isinstance(dataType, str) else dataType,
                       name) from None
    return dt


def _static_shape_arg(op: str, name: str | None, shape: Any) -> list[int]:
    """A user `shape` argument that must be static: a sequence of ints >= 0."""
    ok = not isinstance(shape, (str, bytes)) and hasattr(shape, "__iter__")
    if ok:
        shape = list(shape)
        ok = all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
                 and s >= 0 for s in shape)
    if not ok:
        raise op_error(ShapeError, op, "shape", "a static shape (a list of ints >= 0)", shape,
                       name)
    return [int(s) for s in shape]


def _array_from_value(op: str, name: str | None, value: Any, shape: Sequence[int] | None,
                      dataType: DataType | None) -> np.ndarray:
    """The data of constant/variable: bytes, a NumPy array, a nested sequence or a scalar.

    bytes need `shape` and `dataType` and exactly prod(shape) * itemsize bytes (little-endian,
    row-major); an array or sequence is reshaped to a given `shape` of the same element count;
    a scalar with a `shape` fills it, without one it is a scalar of shape []. The values are
    cast to `dataType` (an explicit request) with the rules of the `cast` op: floats to
    integers truncate toward zero and saturate, NaN gives 0, anything to bool is `x != 0`.
    Without `dataType`, a NumPy array's or scalar's own dtype is used."""
    if dataType is None:
        if isinstance(value, np.generic):
            value = np.asarray(value)
        if isinstance(value, np.ndarray):
            try:
                dataType = DataType.from_numpy(value.dtype)
            except TypeError:
                raise op_error(DataTypeError, op, "dataType", "a DataType (required for this "
                               "value)", f"None with a {value.dtype} array", name) from None
        else:
            raise op_error(DataTypeError, op, "dataType", "a DataType", None, name)
    dataType = _feedable_type(op, name, dataType)
    npdt = dataType.numpy_dtype
    if shape is not None:
        shape = _static_shape_arg(op, name, shape)
    if isinstance(value, (bytes, bytearray, memoryview)):
        if shape is None:
            raise op_error(ShapeError, op, "shape", "a shape for bytes data", None, name)
        want = int(np.prod(shape, dtype=np.int64)) * npdt.itemsize
        nbytes = memoryview(value).nbytes
        if nbytes != want:
            raise op_error(ShapeError, op, "data", f"{want} bytes (shape {shape} x "
                           f"{npdt.itemsize} bytes of {dataType!r})", f"{nbytes} bytes", name)
        arr = np.frombuffer(bytes(value), dtype=npdt.newbyteorder("<")).astype(npdt)
        arr = arr.reshape(shape)
        arr.flags.writeable = False
        return arr
    try:
        if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
            from .runtime.tensor_data import _as_numpy

            arr = _as_numpy(value)  # torch (bfloat16 included), CuPy, JAX, TensorData
        else:
            arr = np.asarray(value)
        if arr.dtype == object or (arr.dtype.kind in "USV" and arr.dtype not in _ML_DTYPES):
            raise TypeError  # strings, raw bytes and records (but ml_dtypes' types are 'V')
        if arr.dtype.kind == "c" and npdt.kind != "c":
            raise TypeError  # a complex value for a real type: no silent loss of a part
        from .backends.numpy.shape import cast as _cast  # the cast op's conversion rules

        with np.errstate(all="ignore"):
            arr = np.array(arr if arr.dtype == npdt or npdt.kind == "c"
                           else _cast(np.asarray(arr), npdt), dtype=npdt, order="C")
    except (TypeError, ValueError):
        raise op_error(DataTypeError, op, "data", f"numbers convertible to {dataType!r} (an "
                       "array, a scalar, a rectangular nested sequence or bytes)",
                       _short_repr(value), name) from None
    if shape is not None:
        if arr.ndim == 0:
            try:
                arr = np.full(shape, arr, dtype=npdt)
            except (ValueError, MemoryError):
                raise op_error(ShapeError, op, "shape", "a shape whose data fits in memory",
                               shape, name) from None
        elif arr.size != int(np.prod(shape, dtype=np.int64)):
            raise op_error(ShapeError, op, "shape", f"{arr.size} elements (the data's count, "
                           f"shape {list(arr.shape)})", shape, name)
        else:
            arr = arr.reshape(shape)
    arr.flags.writeable = False
    return arr


def _short_repr(value: Any) -> str:
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


class Graph(ConvolutionOps, ConvExtraOps, RNNOps, ArithmeticOps, ActivationOps, MatrixOps,
            ReductionOps, ShapeOps, LossOps, PoolingOps, PoolExtraOps, OptimizerOps,
            CumulativeOps, GatherOps, SortOps, LinalgOps, NormalizationOps, RandomOps,
            ControlFlowOps, CallOps, ResizeOps, FourierTransformOps, AttentionOps,
            QuantizationOps, SparseOps, StencilOps, SampleGridOps, NonMaximumSuppressionOps,
            AutodiffOps):
    """`MPSGraph`: build a symbolic graph with its methods, then `run` or `compile` it."""

    def __init__(self) -> None:
        self._ops: list[Operation] = []
        self._executables: dict[Any, Executable] = {}
        self._needed_placeholders: dict[Any, frozenset[Tensor]] = {}
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
        inner = getattr(self, "_cf_inner", None)  # ops recorded in a block (ops/control_flow.py)
        if inner and any(t is not None and t.operation.id in inner for t in tensors):
            n, t = next((n, t) for n, t in zip(names, tensors)
                        if t is not None and t.operation.id in inner)
            raise op_error(GraphError, kind, n, "a tensor built outside any block, or the "
                           "results of the control-flow op", f"{t.name}, built inside a block",
                           name)
        subst = getattr(self, "_cf_subst", None)
        if subst:  # inside a controlDependency block: assigned variables read their new value
            tensors = tuple(subst.get(t, t) if t is not None else None for t in tensors)
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
        """A tensor fed at run time. `shape=None` is unranked; -1 entries are dynamic.

        `dataType` must be a type that data can be fed in (one with a NumPy representation:
        not `invalid`, `complexFloat16` or the sub-byte types), else DataTypeError."""
        try:
            st = ShapedType(shape)
        except ShapeError:
            raise op_error(ShapeError, "placeholder", "shape", "a list of ints >= 0 or -1, or "
                           "None", shape, name) from None
        dt = _feedable_type("placeholder", name, dataType)
        return self._add("placeholder", [], ShapedType(st.shape, dt), name)[0]

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

    def variableFromTensor(self, tensor: Tensor, name: str | None = None) -> Tensor:
        """Swift `variableFromTensor(_:name:)` (macOS 15): a variable (for `read` / `assign`)
        whose initial value is `tensor`'s value in the first run that needs it, on each
        device (SPEC 1.6). `tensor` must have a static shape; it is evaluated in every run
        that needs the variable (its placeholders must be fed), its value used only once."""
        t = self._add("variableFromTensor", [("tensor", tensor)], None, name)[0]
        self._variable_storage[t.operation] = {}
        return t

    def complexConstant(self, realPart: float, imaginaryPart: float, *,
                        shape: Sequence[int] | None = None,
                        dataType: DataType = DataType.complexFloat32,
                        name: str | None = None) -> Tensor:
        """Swift `complexConstant(realPart:imaginaryPart:[shape:]dataType:)`: the complex
        scalar realPart + i imaginaryPart (Doubles) of `dataType` (complexFloat32; Apple's
        default), of shape [] or filling `shape`."""
        kind = "complexConstant"
        for arg, v in (("realPart", realPart), ("imaginaryPart", imaginaryPart)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                     np.floating)):
                raise op_error(DataTypeError, kind, arg, "a real number (a Double)",
                               repr(v) if isinstance(v, str) else v, name)
        dt = _feedable_type(kind, name, dataType)
        if dt.numpy_dtype.kind != "c":
            raise op_error(DataTypeError, kind, "dataType", "a complex DataType "
                           "(complexFloat32)", dt, name)
        value = np.asarray(complex(float(realPart), float(imaginaryPart)), dt.numpy_dtype)
        arr = _array_from_value(kind, name, value, shape, dt)
        return self._add("constant", [], arr, name)[0]

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
        if variable.operation.kind not in ("variable", "variableFromTensor"):
            raise op_error(GraphError, kind, "variable", "a tensor made by variable(...) or "
                           "variableFromTensor(...)",
                           f"a tensor made by {variable.operation.kind}", name)

    # ------------------------------------------------------------------ running
    def compile(self, feeds: Mapping[Tensor, ShapedType], targetTensors: Sequence[Tensor],
                targetOperations: Sequence[Operation] | None = None,
                device: Device | str | None = None, *, compilationDescriptor: Any = None,
                **options: Any) -> Executable:
        """Check and plan once; returns an `Executable` whose `run(inputs)` takes the feeds in
        the insertion order of `feeds` (its `feedTensors`). `compilationDescriptor`: a
        `CompilationDescriptor` (its `callables` resolve `call` ops; its
        compilationCompletionHandler is called with (executable, None) once compiled)."""
        from .runtime.executable import Executable
        from .runtime.execution_descriptors import CompilationDescriptor, check_descriptor

        cd = check_descriptor("compile", "compilationDescriptor", compilationDescriptor,
                              CompilationDescriptor)
        if cd is not None:
            options["compilationDescriptor"] = cd
        exe = Executable(self, feeds, targetTensors, targetOperations, device, **options)
        if cd is not None and cd.compilationCompletionHandler is not None:
            cd.compilationCompletionHandler(exe, None)
        return exe

    def run(self, feeds: Mapping[Tensor, Any] | None = None,
            targetTensors: Sequence[Tensor] = (),
            targetOperations: Sequence[Operation] | None = None,
            device: Device | str | None = None, *, executionDescriptor: Any = None
            ) -> dict[Tensor, TensorData]:
        """Run the subgraph the targets need; returns {target tensor: TensorData}.

        `targetTensors` may also be one Tensor (as for `compile`); a target listed twice
        appears once. A feed is a TensorData, a NumPy or DLPack array of the placeholder's
        dataType (no implicit casts), or a Python list / scalar, converted to that dataType.
        Feeds that no target needs are ignored (they must still be placeholders of this
        graph). Compiled executables are cached per (targets, feed types, device), so
        running the same graph again with new data costs no re-planning.
        `executionDescriptor`: an `ExecutionDescriptor` (its compilationDescriptor is used to
        compile; scheduledHandler and completionHandler get (results, None) after the run)."""
        if executionDescriptor is not None:
            from .runtime.execution_descriptors import ExecutionDescriptor, check_descriptor

            ed = check_descriptor("run", "executionDescriptor", executionDescriptor,
                                  ExecutionDescriptor)
            self._run_cd = ed.compilationDescriptor
            try:
                out = self.run(feeds, targetTensors, targetOperations, device)
            finally:
                self._run_cd = None
            for h in (ed.scheduledHandler, ed.completionHandler):
                if h is not None:
                    h(out, None)
            return out
        from .runtime.device import resolve_device
        from .runtime.executable import (
            Executable,
            feed_type,
            is_python_data,
            needed_op_ids,
            python_feed,
        )

        if feeds is not None and not isinstance(feeds, Mapping):
            raise op_error(FeedError, "run", "feeds", "a dict {placeholder: array}",
                           type(feeds).__name__)
        feeds = dict(feeds or {})
        dev = resolve_device(device)
        for t in feeds:
            if not isinstance(t, Tensor):
                raise op_error(FeedError, "run", "feeds", "placeholder tensors of this graph",
                               repr(t))
            if t.graph is not self:
                raise op_error(GraphMismatchError, "run", "feeds", "placeholder tensors of "
                               "this graph", f"a tensor of another graph ({t.name})")
            if t.operation.kind != "placeholder":
                raise op_error(FeedError, "run", f"feeds[{t.name}]", "a placeholder tensor",
                               f"a tensor made by {t.operation.kind}")
        if isinstance(targetTensors, Tensor):
            targetTensors = [targetTensors]
        try:
            targets = list(dict.fromkeys(targetTensors or []))
        except TypeError:
            raise op_error(GraphError, "run", "targetTensors", "a list of Tensors",
                           repr(targetTensors)) from None
        try:
            tops = list(dict.fromkeys(targetOperations or []))
        except TypeError:
            raise op_error(GraphError, "run", "targetOperations", "a list of Operations",
                           repr(targetOperations)) from None
        tkey = (tuple(id(t) for t in targets), tuple(id(o) for o in tops))
        needed = self._needed_placeholders.get(tkey)
        if needed is None and all(isinstance(t, Tensor) and t.graph is self for t in targets) \
                and all(isinstance(o, Operation) and o.graph is self for o in tops):
            # the placeholders the targets depend on (the same whatever is fed)
            ids = needed_op_ids(targets, tops, {})
            needed = frozenset(op.outputTensors[0] for op in self._ops
                               if op.id in ids and op.kind == "placeholder")
            self._needed_placeholders[tkey] = needed
        if needed is not None:  # else a bad target: the Executable below reports it
            feeds = {t: v for t, v in feeds.items() if t in needed}  # extra feeds: ignored
        # Python lists and scalars have no dtype: they take the placeholder's (see "API
        # mistakes" in docs/semantics.md); arrays must already have it (no implicit casts)
        feeds = {t: python_feed(v, t.dataType, t.name) if is_python_data(v) else v
                 for t, v in feeds.items()}
        types = {t: feed_type(t, v) for t, v in feeds.items()}
        cd = getattr(self, "_run_cd", None)  # an ExecutionDescriptor's compilationDescriptor
        key = (tkey, tuple(sorted((id(t), tuple(ty.shape), int(ty.dataType))
                                  for t, ty in types.items())), dev.key,
               None if cd is None else id(cd))
        exe = self._executables.get(key)
        if exe is None:
            opts = {} if cd is None else {"compilationDescriptor": cd}
            exe = Executable(self, types, targets, tops, dev, _prune_feeds=True, **opts)
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


def _infer_variable_from_tensor(ctx: InferContext):
    t = ctx.type_of("tensor")
    if t.shape is None or any(d < 0 for d in t.shape):
        raise ctx.error(ShapeError, "tensor", "a tensor of static shape (a variable's shape "
                        "is static)", t.shape)
    try:
        t.dataType.numpy_dtype  # noqa: B018 - raises TypeError for types without data
    except TypeError:
        raise ctx.error(DataTypeError, "tensor", "a dataType with data", t.dataType) from None
    return [t], None


def _register_source_ops() -> None:
    from .ops._registry import register_op

    register_op("placeholder", _infer_placeholder)
    register_op("constant", _infer_constant)
    register_op("variable", _infer_constant)
    register_op("variableFromTensor", _infer_variable_from_tensor, grad=lambda g, op, dys: {})
    register_op("read", _infer_read, grad=lambda g, op, dys: {"variable": dys[0]})
    register_op("assign", _infer_assign)


_register_source_ops()
