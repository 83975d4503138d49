"""`Executable`: a graph checked and planned once for fixed feed types, replayed by `run`.

Compile = prune to what the targets need, infer every type with static shapes (this is where the
shape rules check everything), resolve each op's kernel for the device, and plan which slot
holds which value and when it can be freed. `run` only converts the inputs and replays the
plan. The one exception is an op whose shape depends on a VALUE not known at compile time (a
shape tensor that is fed or computed): its rule runs again at run time on that value.

Value-dependent result shapes: an op such as `nonZeroIndices` has a result whose size is
decided by each run (compiled type `[-1, rank]`; its kernel returns `[count, rank]`). Every op
that uses such a result (directly or further down) has an input shape unknown at compile
time, so it is planned as a dynamic step: its shape rule runs again on every run, on the
shapes it is given, to produce its kernel attributes (`_runtime_attrs`); the kernels, slots
and order are still planned once. Steps that read values back to the host (that op, and a
gather / scatter checking fed indices: `OpDef.host_reads`) and dynamic steps keep the
executable out of CUDA-graph capture (`_setup_options`).
"""

from __future__ import annotations

import operator
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import FeedError, GraphError, GraphMismatchError, UnsupportedError, op_error
from ..ops._registry import OPS, InferContext
from ..types import DataType, ShapedType
from .device import Device, resolve_device
from .plan_fusion import pair_statistics
from .tensor_data import TensorData, _as_numpy

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["Executable", "feed_type", "needed_op_ids", "is_python_data", "python_feed",
           "feed_dtype_error"]

_PYTHON_SCALARS = (bool, int, float, complex)
_new = object.__new__


def is_python_data(value: Any) -> bool:
    """A Python list, tuple or scalar (bool, int, float, complex), which carries no dtype of
    its own. NumPy scalars (np.float64 is a float) carry one, and are not Python data."""
    return isinstance(value, (list, tuple)) or (
        isinstance(value, _PYTHON_SCALARS) and not isinstance(value, np.generic))


def _short_repr(value: Any) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def python_feed(value: Any, dataType: DataType, name: str, where: str = "run") -> np.ndarray:
    """A Python list / nested list / scalar fed for a placeholder of `dataType`, converted to
    that type (it has no dtype of its own to disagree with). Raises FeedError naming the feed
    for a ragged list, non-numbers, or a value the type cannot hold (1.5 or 300 for int32 /
    uInt8, 2 for bool, a complex for a real type, a finite value that overflows a float type);
    floats are rounded to the nearest value of a float type."""
    npdt = dataType.numpy_dtype

    def bad(why: str) -> FeedError:
        return op_error(FeedError, where, f"feeds[{name}]", f"Python values that fit in "
                        f"{dataType!r} (a list or scalar is converted to the placeholder's "
                        f"dataType)", f"{_short_repr(value)} ({why})")

    try:
        src = np.array(value)
    except (ValueError, TypeError):
        raise bad("a ragged nested list: every row must have the same length") from None
    kind = "f" if dataType.is_floating else npdt.kind
    if src.dtype == object:  # integers beyond 64 bits, or non-numbers
        flat = src.reshape(-1).tolist()
        for x in flat:
            if not isinstance(x, (int, float, complex)):
                raise bad(f"{_short_repr(x)} is not a number")
        if kind not in "fc":
            info = np.iinfo(npdt) if kind != "b" else None
            lo, hi = (0, 1) if info is None else (int(info.min), int(info.max))
            for x in flat:
                if isinstance(x, int) and not lo <= x <= hi:
                    raise bad(f"{x} does not fit in {dataType!r}")
        try:
            src = src.astype(np.complex128 if any(isinstance(x, complex) for x in flat)
                             else np.float64)
        except OverflowError:
            raise bad(f"an integer too large for {dataType!r}") from None
    if src.dtype.kind not in "biufc":
        raise bad(f"{src.dtype} values are not numbers")
    if src.dtype.kind == "c" and kind != "c":
        raise bad(f"complex values do not fit in {dataType!r}")
    with np.errstate(all="ignore"):
        out = src.astype(npdt)
        if kind in "fc":  # rounding is fine; a finite value that becomes infinite is not
            wrong = np.isinf(out.astype(np.complex128 if kind == "c" else np.float64)) & \
                ~np.isinf(src)
        else:  # integers and bool: the value must survive the round trip, sign included
            back = out.astype(src.dtype)
            wrong = (back != src) | ((out < 0) != (src < 0)) if kind != "b" else back != src
    if wrong.any():
        x = src[tuple(np.argwhere(wrong)[0])].item()
        raise bad(f"{x!r} does not fit in {dataType!r}")
    return out


def _numpy_name(dataType: DataType) -> str:
    if dataType == DataType.bFloat16:
        return "ml_dtypes.bfloat16"
    if dataType == DataType.bool:
        return "np.bool_"
    return f"np.{dataType.numpy_dtype.name}"


def _cast_hint(value: Any, dataType: DataType) -> str:
    """How to convert `value` to `dataType` (the feed's own kind of array)."""
    if type(value).__module__.split(".")[0] == "torch":
        from ..backends.torch import TORCH_DTYPES

        td = TORCH_DTYPES.get(dataType)
        if td is not None:
            return f"cast it with t.to({td})"
        return f"cast it with t.numpy().astype({_numpy_name(dataType)})"
    if isinstance(value, TensorData):
        return f"convert it with mg.TensorData(data, dataType=mg.DataType.{dataType.name})"
    return f"cast it with arr.astype({_numpy_name(dataType)})"


def feed_dtype_error(name: str, dataType: DataType, value: Any, given: object,
                     where: str = "run") -> FeedError:
    """The FeedError for data of the wrong type fed for a placeholder of `dataType` (no
    implicit casts), saying how to cast it."""
    return op_error(FeedError, where, f"feeds[{name}]", f"{dataType!r} data (the placeholder's "
                    "dataType; no implicit casts)", f"{given} data; {_cast_hint(value, dataType)}")


def feed_type(t: Tensor, value: Any) -> ShapedType:
    """The ShapedType of a value fed for placeholder `t` (raises FeedError on a dtype other than
    the placeholder's, saying how to cast it). Python data is converted by `python_feed`
    before it gets here."""
    if isinstance(value, TensorData):
        if value.dataType != t.dataType:
            raise feed_dtype_error(t.name, t.dataType, value, value.dataType)
        return ShapedType(value.shape, value.dataType)
    if (not isinstance(value, np.ndarray) and hasattr(value, "__dlpack_device__")
            and type(value).__module__.split(".")[0] != "torch"):
        try:
            on_host = value.__dlpack_device__()[0] == 1  # kDLCPU
        except (TypeError, ValueError, AttributeError):
            on_host = True
        if not on_host:  # a GPU array (CuPy, JAX, ...): read it through torch, in place
            import torch

            value = torch.from_dlpack(value)
    if type(value).__module__.split(".")[0] == "torch":  # read on the device: no host copy
        from ..backends.torch import DATA_TYPES

        if DATA_TYPES.get(value.dtype) != t.dataType:
            raise feed_dtype_error(t.name, t.dataType, value, value.dtype)
        return ShapedType(list(value.shape), DATA_TYPES[value.dtype])
    given = value
    if not isinstance(value, np.ndarray):
        value = _as_numpy(value) if hasattr(value, "__dlpack__") else np.asarray(value)
    try:
        dt = DataType.from_numpy(value.dtype)
    except TypeError:
        dt = None
    if dt != t.dataType:
        raise feed_dtype_error(t.name, t.dataType, given, value.dtype)
    return ShapedType(value.shape, dt)


def _check_feed_type(t: Tensor, st: ShapedType, where: str) -> None:
    if t.operation.kind != "placeholder":
        raise op_error(FeedError, where, f"feeds[{t.name}]", "a placeholder tensor",
                       f"a tensor made by {t.operation.kind}")
    if not isinstance(st, ShapedType):
        raise op_error(FeedError, where, f"feeds[{t.name}]", "a ShapedType", type(st).__name__)
    if st.dataType != t.dataType:
        raise op_error(FeedError, where, f"feeds[{t.name}]", f"dataType {t.dataType!r} (the "
                       "placeholder's; no implicit casts)", st.dataType)
    if not st.is_static:
        raise op_error(FeedError, where, f"feeds[{t.name}]", "a static shape (no -1, not "
                       "unranked)", st.shape)
    ps = t.shape
    if ps is not None and (len(ps) != len(st.shape) or any(
            a != b and a != -1 for a, b in zip(ps, st.shape))):
        raise op_error(FeedError, where, f"feeds[{t.name}]", f"shape {ps} (the placeholder's)",
                       st.shape)


def needed_op_ids(targetTensors: Sequence[Tensor], targetOperations: Sequence[Operation],
                  fed: Mapping[Tensor, Any]) -> set[int]:
    """Ids of the ops that the targets need; the walk stops at fed placeholders."""
    needed: set[int] = set()
    stack = [t.operation for t in targetTensors] + list(targetOperations)
    while stack:
        op = stack.pop()
        if op.id in needed:
            continue
        needed.add(op.id)
        if op.kind == "placeholder" and op.outputTensors[0] in fed:
            continue
        stack.extend(t.operation for t in op.inputTensors)
    return needed


class _Calibration:
    """The automatic CUDA-graph mode picks, by measurement, how to run: the first runs
    alternate between op by op and the graph replay (whose results are copies of the graph's
    buffers, so for a plan of few, long kernels with large results, running op by op can be
    faster), timing each (synchronised); from then on the faster way is used. Runs 0-3 warm
    both up (the replay captures and binds its graph there); runs 4-9 are timed."""

    WARM, TIMED = 4, 6

    def __init__(self, synchronize: Any):
        self.sync = synchronize
        self.n = 0
        self.times: dict[str, list[float]] = {"eager": [], "graph": []}
        self.decided: str | None = None

    def way(self) -> str:
        if self.decided is not None:
            return self.decided
        return "graph" if self.n % 2 else "eager_timed"

    def timing(self, way: str) -> Any:
        return _Timer(self, "graph" if way == "graph" else "eager")

    def record(self, way: str, seconds: float | None) -> None:
        if seconds is not None:
            self.times[way].append(seconds)
        self.n += 1
        if self.n >= self.WARM + self.TIMED and self.decided is None:
            g, e = (sorted(self.times[k])[len(self.times[k]) // 2] for k in ("graph", "eager"))
            self.decided = "graph" if g <= e else "eager"


class _AutoReplay:
    """The automatic CUDA-graph mode (compile's default on CUDA where a graph is safe): runs a
    plan by replaying `replayer` (the backend's GraphReplayer) or op by op (`eager`), as
    `calibration` decides; a failed capture means op by op from then on. Called like the
    replayer: (feeds, bindable) -> results. `on_eager()`, when given, is called once op by op
    has been chosen for good (the executable then calls `eager` itself, skipping this)."""

    def __init__(self, replayer: Any, eager: Any, calibration: _Calibration,
                 on_eager: Any = None):
        self.replayer, self.eager, self.calibration = replayer, eager, calibration
        self.on_eager = on_eager

    def __call__(self, feeds: list[Any], bindable: bool = False) -> list[Any]:
        calib = self.calibration
        way = calib.decided
        if way == "eager":
            return self.eager(feeds)
        if way == "graph":  # decided: nothing to time
            try:
                return self.replayer(feeds, bindable)
            except Exception as e:  # noqa: BLE001 - a capture of a new bound set failed
                return self._give_up(e, feeds)
        if calib.way() == "eager_timed":
            with calib.timing("eager"):
                out = self.eager(feeds)
        else:
            try:  # falls back to op by op if capture fails
                with calib.timing("graph"):
                    out = self.replayer(feeds, bindable)
            except Exception as e:  # noqa: BLE001 - any capture failure: op by op from now on
                return self._give_up(e, feeds)
        if calib.decided == "eager" and self.on_eager is not None:
            self.on_eager()
        return out

    def _give_up(self, e: Exception, feeds: list[Any]) -> list[Any]:
        self.calibration.decided = "eager"
        warnings.warn(f"mpsgraph: the CUDA-graph capture failed ({type(e).__name__}: "
                      f"{str(e)[:200]}); this executable runs op by op from now on",
                      RuntimeWarning, stacklevel=4)
        if self.on_eager is not None:
            self.on_eager()
        return self.eager(feeds)


class _Timer:
    def __init__(self, calib: _Calibration, way: str):
        self.c, self.w = calib, way
        self.calibrating = calib.decided is None
        self.on = self.calibrating and calib.n >= calib.WARM

    def __enter__(self) -> None:
        if self.on:
            self.c.sync()
            self.t0 = time.perf_counter()

    def __exit__(self, *exc: Any) -> None:
        if not self.calibrating:
            return
        if self.on:
            self.c.sync()
        self.c.record(self.w, time.perf_counter() - self.t0 if self.on else None)


# Op kinds the plan moves (mpsgraph.distributed registers its ops here): "early" ops run right
# after the last op they read from, "late" ones just before the first op that reads them
# (an all-reduce starts as soon as its bucket is ready and is waited for only when needed)
SCHEDULE: dict[str, str] = {}
# collective kinds: every rank must take the same path, so an executable holding one never
# times CUDA-graph replay against op by op (only `cuda_graph=True` captures it)
COLLECTIVES: set[str] = set()
# kinds whose kernel is built per executable (ops/control_flow.py: if_, while_, for_,
# controlDependency, call): BOUND_KERNELS[kind](executable, op, in_types) -> (kernel,
# host_sync); host_sync=True (a predicate or trip count read on the host) keeps the plan out
# of CUDA-graph capture
BOUND_KERNELS: dict[str, Any] = {}


def schedule(order: list[Operation]) -> list[Operation]:
    """`order` (topological) with the SCHEDULE kinds moved as early / late as their inputs and
    readers allow; every other op keeps its relative order."""
    if not any(op.kind in SCHEDULE for op in order):
        return order
    order = list(order)
    for op in [o for o in order if SCHEDULE.get(o.kind) == "late"][::-1]:
        order.remove(op)
        outs = set(op.outputTensors)
        at = next((i for i, o in enumerate(order) if any(t in outs for t in o.inputs)),
                  len(order))
        order.insert(at, op)
    for op in [o for o in order if SCHEDULE.get(o.kind) == "early"]:
        order.remove(op)
        srcs = {t.operation for t in op.inputs if t is not None}
        at = max((i for i, o in enumerate(order) if o in srcs), default=-1) + 1
        order.insert(at, op)
    return order


def _getter(slots: Sequence[int], as_list: bool = False) -> Any:
    """A C-level getter of `slots` from the slot list: returns a tuple or list of them (a list
    when `as_list`), without a Python loop."""
    if len(slots) == 1:  # itemgetter(i) alone would return the item, not a sequence
        return operator.itemgetter(slice(slots[0], slots[0] + 1))
    if not slots:
        return (lambda slot_list: []) if as_list else (lambda slot_list: ())
    get = operator.itemgetter(*slots)
    return (lambda slot_list: list(get(slot_list))) if as_list else get


class _Step:
    __slots__ = ("op", "kernel", "ins", "outs", "attrs", "dynamic", "free", "n_out", "kind",
                 "fused", "host")

    def __init__(self, op, kernel, ins, outs, attrs, dynamic, host=False):
        self.op, self.kernel, self.ins, self.outs = op, kernel, ins, outs
        self.attrs, self.dynamic, self.kind = attrs, dynamic, op.kind
        self.host = host  # the kernel reads values back to the host (OpDef.host_reads)
        self.n_out = len(outs)
        self.free: tuple[int, ...] = ()
        self.fused: tuple[Operation, ...] = ()  # the ops a fused step runs (none: one op)


class Executable:
    """`MPSGraphExecutable`. `feedTensors` (the order `run` takes its inputs in: the insertion
    order of `feeds` given to `compile`) and `targetTensors` (the order of the results)."""

    def __init__(self, graph: Graph | None = None,
                 feeds: Mapping[Tensor, ShapedType] | None = None,
                 targetTensors: Sequence[Tensor] = (),
                 targetOperations: Sequence[Operation] | None = None,
                 device: Device | str | None = None, *, _prune_feeds: bool = False,
                 mpsgraphPackageAt: Any = None, **options: Any):
        from ..graph import Operation, Tensor

        if mpsgraphPackageAt is not None or graph is None:
            # Swift init(mpsgraphPackageAt:compilationDescriptor:) (runtime/package.py)
            from .package import read_package

            graph, feeds, targetTensors, targetOperations = read_package(mpsgraphPackageAt)

        self.graph = graph
        self.device = resolve_device(device)
        self.options = options
        self._backend = self.device.backend()
        where = "run" if _prune_feeds else "compile"
        if not isinstance(feeds, Mapping):
            raise op_error(FeedError, where, "feeds", "a dict {placeholder: ShapedType}",
                           type(feeds).__name__)
        if isinstance(targetTensors, Tensor):
            targetTensors = [targetTensors]
        for arg, items in (("feeds", list(feeds)), ("targetTensors", list(targetTensors))):
            for t in items:
                if not isinstance(t, Tensor):
                    raise op_error(FeedError if arg == "feeds" else GraphError, where, arg,
                                   "tensors of this graph", repr(t))
                if t.graph is not graph:
                    raise op_error(GraphMismatchError, where, arg, "tensors of this graph",
                                   f"a tensor of another graph ({t.name})")
        # an operation listed twice runs once, at its first position
        tops = list(dict.fromkeys(targetOperations or []))
        for o in tops:
            if not isinstance(o, Operation):
                raise op_error(GraphError, where, "targetOperations", "operations of this graph",
                               repr(o))
            if o.graph is not graph:
                raise op_error(GraphMismatchError, where, "targetOperations", "operations of "
                               "this graph", f"an operation of another graph ({o!r})")
        for t in feeds:
            if t.operation.kind != "placeholder":
                raise op_error(FeedError, where, f"feeds[{t.name}]", "a placeholder tensor",
                               f"a tensor made by {t.operation.kind}")
        self.targetTensors: list[Tensor] = list(dict.fromkeys(targetTensors))
        self._target_ops = tops

        # prune: the ops the targets need, in build (= topological) order
        needed = needed_op_ids(self.targetTensors, tops, feeds)
        order = schedule([op for op in graph._ops if op.id in needed])
        # run(): feeds no target needs are ignored; compile(): every feed is an input
        self.feedTensors: list[Tensor] = [t for t in feeds if t.operation.id in needed
                                          or not _prune_feeds]
        for t in self.feedTensors:
            _check_feed_type(t, feeds[t], where)
        for op in order:
            if op.kind == "placeholder" and op.outputTensors[0] not in feeds:
                t = op.outputTensors[0]
                raise op_error(FeedError, where, "feeds", f"a value for placeholder {t.name} "
                               f"(shape {t.shape}, {t.dataType!r}), which the targets need",
                               "none")
        self._plan(order, feeds)
        self._setup_options(options)

    def _setup_options(self, options: dict[str, Any]) -> None:
        """Compile options (keyword arguments of `Graph.compile`):

        - `allow_tf32=True`: let float32 matrix products and convolutions use TF32 on NVIDIA
          GPUs (faster, ~10-bit mantissa products). Default False: float32 means float32.
        - `cuda_graph` (CUDA devices): capture the whole plan once into a CUDA graph and
          replay it on every run, with no per-op launch cost. Default (None): on, where that
          is safe - a CUDA device, no op whose shapes depend on values and no op that reads
          values back to the host (nonZeroIndices, whose result shape is decided by each run,
          and the ops after it, which are re-planned on every run from the shapes they get;
          a gather / scatter with fed indices or a max-pooling gradient from indices,
          checked on the host: OpDef.host_reads);
          variables and assigns are fine: their storage stays at one address, assigns write
          into it - with
          each result copied out of the graph's buffers, and only where it pays: the first
          ten runs alternate between the replay and running op by op, timing both
          (synchronised), and the faster way is kept; if capturing fails the executable
          quietly runs op by op. `True`: required (an error where it cannot be
          done), and the results are the graph's own output buffers, overwritten by a later
          run (no copy: the fastest; copy a result that must outlive the next run).
          `False`: off.
          Feeds are copied into the graph's input buffers, except where the caller feeds the
          same device tensors again (same addresses): up to 4 such sets get graphs bound to
          them, replayed with no copy (the executable then keeps a reference to those
          tensors; see backends/torch GraphReplayer). `captured_graph(inputs)` returns the
          torch.cuda.CUDAGraph of a set, for device-only timing.
        - `fuse_elementwise` (torch devices): run each run of consecutive elementwise steps
          (arithmetic rows, elementwise activations) as one kernel generated by torch.compile
          (backends/torch/fusion.py). Default (None): on CUDA, for runs of two or more steps
          with a tensor of >= 2^20 elements (where the saved memory traffic outweighs a
          compilation of seconds on the first run); `True`: every run of two or more
          elementwise steps, on any torch device (an error on the NumPy backend); `False`:
          off. Fused results may differ from op-by-op ones within float rounding (a * b + c
          may become one fused multiply-add).
        - `compilationDescriptor`: a CompilationDescriptor (runtime/execution_descriptors.py;
          `Graph.compile(..., compilationDescriptor=)`): its `callables` resolve `call` ops,
          FP19 fast math means TF32 on CUDA, its Metal-only properties are ignored.
        """
        unknown = set(options) - {"allow_tf32", "cuda_graph", "fuse_elementwise",
                                  "compilationDescriptor"}
        if unknown:
            raise op_error(GraphError, "compile", "options", "allow_tf32=, cuda_graph=, "
                           "fuse_elementwise= or compilationDescriptor=",
                           sorted(unknown))
        self._replay = None
        self._context = None
        # run's way when it needs no replayer: a plain function (self, feeds) -> results (not
        # a bound method: no reference cycle, so a dropped executable is freed at once), or
        # None: run calls self._replay
        self._direct = Executable._execute
        tf32 = bool(options.get("allow_tf32", False))
        # CompilationDescriptor (runtime/execution_descriptors.py): FP19 operands = TF32 on
        # CUDA, ignored elsewhere; its Metal-only properties are ignored
        cd = options.get("compilationDescriptor")
        if cd is not None and cd.allows_tf32 and self.device.type == "cuda":
            tf32 = True
        if tf32:
            if not hasattr(self._backend, "precision_context"):
                raise op_error(UnsupportedError, "compile", "allow_tf32", "a torch device "
                               "(TF32 exists on NVIDIA GPUs)", self.device.key)
            self._context = lambda: self._backend.precision_context(allow_tf32=True)
            self._direct = Executable._execute_in_context
        want = options.get("cuda_graph")
        if want is False:
            return
        on_cuda = hasattr(self._backend, "graph_replayer") and self.device.type == "cuda"
        in_place = getattr(self._backend, "assigns_in_place", False)
        safe = (in_place or not (self._vars or self._vft or self._assigns)) and not any(
            st.dynamic or st.host for st in self._steps) and not self._host_sync
        if want:
            if not on_cuda:
                raise op_error(UnsupportedError, "compile", "cuda_graph", "a CUDA device",
                               self.device.key)
            if not safe:
                host = [st.kind for st in self._steps if st.host or st.dynamic]
                raise op_error(UnsupportedError, "compile", "cuda_graph", "a graph without "
                               "value-dependent shapes or host reads (nonZeroIndices, a "
                               "gather / scatter of fed indices)",
                               f"one with them ({', '.join(dict.fromkeys(host)) or 'variables'})")
        elif not (on_cuda and safe and self._steps) or any(
                st.kind in COLLECTIVES for st in self._steps):
            return
        replay = self._backend.graph_replayer(
            self._execute, [st for _, st in self._feed_slots], self._context,
            copy_outputs=not want)
        self._direct = None
        if want:
            self._replay = replay
            return
        direct = Executable._execute if self._context is None else \
            Executable._execute_in_context

        def on_eager() -> None:  # op by op won: run calls it directly from now on
            self._direct = direct

        self._replay = _AutoReplay(replay, direct.__get__(self),
                                   _Calibration(self._backend.synchronize), on_eager)

    # ------------------------------------------------------------------ planning
    def _plan(self, order: list[Operation], feeds: Mapping[Tensor, ShapedType]) -> None:
        slot_of: dict[Tensor, int] = {}
        types: dict[Tensor, ShapedType | None] = {}
        be = self._backend
        self._consts: list[tuple[int, Any]] = []
        self._vars: list[tuple[int, Operation]] = []
        # variableFromTensor: (slot, op), a step whose kernel initialises the storage once
        self._vft: list[tuple[int, Operation]] = []
        self._out_types: dict[int, DataType] = {}
        steps: list[_Step] = []
        assigns: list[tuple[Operation, int]] = []
        target_ids = {id(o) for o in self._target_ops}
        self._host_sync = False

        def new_slot(t: Tensor) -> int:
            slot_of[t] = len(slot_of)
            return slot_of[t]

        self._feed_slots = []
        for t in self.feedTensors:
            if t.operation.kind == "placeholder":
                self._feed_slots.append((new_slot(t), feeds[t]))
                types[t] = feeds[t]
        for op in order:
            kind = op.kind
            if kind == "placeholder":
                continue
            if kind in ("constant", "variable"):
                t = op.outputTensors[0]
                s = new_slot(t)
                types[t] = t.shapedType
                if kind == "constant":
                    self._consts.append((s, be.from_numpy(op.attrs)))
                else:
                    self._vars.append((s, op))
                continue
            in_types = [types[t] if t is not None else None for t in op.inputs]
            opdef = OPS[kind]
            dynamic = any(ty is not None and not ty.is_static for ty in in_types)
            values = []
            for n, t in zip(op.input_names, op.inputs):
                v = None
                if t is not None and n in opdef.value_inputs:
                    if t.operation.kind == "constant":
                        v = t.operation.attrs
                    else:
                        dynamic = True
                values.append(v)
            if dynamic:
                out_types, kattrs = [t.shapedType for t in op.outputTensors], None
            else:
                ctx = InferContext(kind, op.name, op.attrs, op.input_names, in_types, values,
                                   static=True)
                out_types, kattrs = opdef.infer(ctx)
            ins = tuple(slot_of[t] if t is not None else -1 for t in op.inputs)
            outs = tuple(new_slot(t) for t in op.outputTensors)
            for t, ty in zip(op.outputTensors, out_types):
                types[t] = ty
            if kind == "assign":
                if id(op) in target_ids:
                    assigns.append((op, ins[1]))
                continue
            if kind in BOUND_KERNELS:  # control flow (ops/control_flow.py)
                kernel, sync = BOUND_KERNELS[kind](self, op, in_types)
                self._host_sync = self._host_sync or sync
                for a in getattr(op.attrs, "assigns", ()):  # controlDependency runs them
                    if all(a is not b for b, _ in assigns):
                        assigns.append((a, slot_of[a.inputs[1]]))
            elif kind == "variableFromTensor":
                kernel = self._variable_from_tensor_kernel(op)
                self._vft.append((outs[0], op))
            else:  # the backend may pick a variant for these input dtypes (known now)
                known = all(ty is not None for t, ty in zip(op.inputs, in_types)
                            if t is not None)
                kernel = be.kernel(kind, in_types if known else None)
            host = opdef.host_reads is not None and bool(opdef.host_reads(op))
            steps.append(_Step(op, kernel, ins, outs, kattrs, dynamic, host))
        # targeted assigns commit at the end of the run in targetOperations order (SPEC 1.6)
        rank = {id(o): i for i, o in enumerate(self._target_ops)}
        assigns.sort(key=lambda a: rank.get(id(a[0]), len(rank)))  # then controlDependency's
        self._assigns = assigns
        self._types = types
        self._target_slots = [slot_of[t] for t in self.targetTensors]
        self._state_slots = ({sl for sl, _ in self._consts} | {sl for sl, _ in self._vars}
                             | {sl for sl, _ in self._vft})
        self._feed_info = [(sl, st, t.name) for (sl, st), t in zip(self._feed_slots,
                                                                      self.feedTensors)]
        # free each slot after its last use (targets and assigned values are kept)
        keep = set(self._target_slots) | {s for _, s in assigns}
        steps = pair_statistics(steps, be, _Step)  # mean + variance of one x: one step
        hook = getattr(be, "plan_hook", None)  # the backend may rewrap kernels (plan time)
        if hook is not None:
            hook(steps, keep)
        steps = self._fuse_steps(steps, types, keep)
        last: dict[int, int] = {}
        for i, st in enumerate(steps):
            for s in st.ins:
                if s >= 0:
                    last[s] = i
        frees: dict[int, list[int]] = {}
        for s, i in last.items():
            if s not in keep:
                frees.setdefault(i, []).append(s)
        for i, st in enumerate(steps):
            st.free = tuple(frees.get(i, ()))
        self._steps = steps
        self._nslots = len(slot_of)
        self._target_dtypes = [t.dataType for t in self.targetTensors]
        self._prepare_run()

    def _prepare_run(self) -> None:
        """What every run needs that does not depend on the feeds' values, computed once: the
        slot list's initial contents (feeds take slots 0..n-1, constants are in place, one
        spare slot at the end is None: an absent optional input reads it), the feed converter
        (the backend checks each feed's type and shape with a compare against the compiled
        ones, and takes the full path, with its errors, for anything else) and a getter of the
        targets. The steps themselves become `_program` at the first run (`_build_program`)."""
        nf = len(self._feed_slots)
        if [s for s, _ in self._feed_slots] != list(range(nf)):
            raise AssertionError("feeds must take the first slots")  # (planned that way)
        init: list[Any] = [None] * (self._nslots - nf + 1)
        for s, arr in self._consts:
            init[s - nf] = arr
        self._slot_init = init
        self._none_slot = self._nslots
        self._nfeeds = nf
        types = [st for _, st in self._feed_slots]
        names = [t.name for t in self.feedTensors]
        be = self._backend
        make = getattr(be, "feeds_converter", None)
        if make is not None:
            self._convert_feeds = make(types, names)
        else:
            convert = be.convert_feed
            self._convert_feeds = lambda inputs: [convert(v, st, n) for v, st, n in
                                                  zip(inputs, types, names)]
        # no constant, variable or variableFromTensor: results need no copy and no unaliasing
        self._stateless = not (self._consts or self._vars or self._vft)
        self._targets_of = _getter(self._target_slots, as_list=True)
        self._program: list[tuple[Any, ...]] | None = None

    def _build_program(self) -> list[tuple[Any, ...]]:
        """`_steps` as the tuples `_execute` loops over: (kernel, getter of its arguments from
        the slot list, attrs, its one output slot or -1, its output slots, slots to free after
        it, the step itself if it is dynamic (its attrs are computed per run) else None)."""
        none = self._none_slot
        program = []
        for st in self._steps:
            ins = tuple(none if i < 0 else i for i in st.ins)
            program.append((st.kernel, _getter(ins), st.attrs,
                            st.outs[0] if st.n_out == 1 else -1, st.outs, st.free,
                            st if st.dynamic else None))
        self._program = program
        return program

    def _fuse_steps(self, steps: list[_Step], types: dict[Tensor, ShapedType | None],
                    keep: set[int]) -> list[_Step]:
        """Runs of consecutive elementwise steps as one fused step each (compile option
        `fuse_elementwise`; the backend's fusion module decides what may fuse and when it
        pays, see backends/torch/fusion.py). A fused step reads the run's outside inputs and
        writes the results that later steps, targets or assigns use; the run's other
        intermediates never exist as tensors."""
        want = self.options.get("fuse_elementwise")
        if want not in (None, True, False):
            raise op_error(GraphError, "compile", "fuse_elementwise", "True, False or None",
                           repr(want))
        if want is False or (want is None and self.device.type != "cuda"):
            return steps
        fusion = getattr(self._backend, "fusion", lambda: None)()
        if fusion is None:
            if want:
                raise op_error(UnsupportedError, "compile", "fuse_elementwise", "a torch device "
                               "where torch.compile works (Triton on CUDA)", self.device.key)
            return steps

        def fusable(st: _Step) -> bool:
            ts = [t for t in st.op.inputs if t is not None] + list(st.op.outputTensors)
            tys = [types.get(t) for t in ts]
            return (not st.dynamic and all(ty is not None and ty.is_static for ty in tys)
                    and fusion.can_fuse(st.kind, [ty.dataType for ty in tys]))

        readers: dict[int, list[int]] = {}
        for i, st in enumerate(steps):
            for s in st.ins:
                readers.setdefault(s, []).append(i)
        out: list[_Step] = []
        i = 0
        while i < len(steps):
            j = i
            while j < len(steps) and fusable(steps[j]):
                j += 1
            run = steps[i:j]
            numels = [fusion.numel(types[t].shape) for st in run for t in st.op.outputTensors]
            if not run or not (want or fusion.worth_fusing(len(run), numels)) or len(run) < 2:
                out.extend(run or [steps[i]])
                i = max(j, i + 1)
                continue
            out.append(self._fused_step(fusion, run, range(i, j), readers, keep))
            i = j
        return out

    @staticmethod
    def _fused_step(fusion: Any, run: list[_Step], idx: range, readers: dict[int, list[int]],
                    keep: set[int]) -> _Step:
        produced = {s: (k, n) for k, st in enumerate(run) for n, s in enumerate(st.outs)}
        ins: list[int] = []
        program = []
        for st in run:
            refs = []
            for s in st.ins:
                if s in produced:
                    refs.append(("v", produced[s][0]))
                else:
                    if s not in ins:
                        ins.append(s)
                    refs.append(("in", ins.index(s)))
            program.append((st.kernel, refs, st.attrs))
        outs = [s for s in produced if s in keep or any(r not in idx for r in readers.get(s, ()))]
        kernel = fusion.fused_kernel(program, len(ins), [produced[s][0] for s in outs],
                                     [st.kind for st in run])
        step = _Step(run[-1].op, kernel, tuple(ins), tuple(outs), None, False)
        step.fused = tuple(st.op for st in run)
        return step

    # ------------------------------------------------------------------ running
    def run(self, inputs: Sequence[Any] = (), executionDescriptor: Any = None
            ) -> list[TensorData]:
        """Run on one value per `feedTensors` entry (NumPy arrays, TensorData or DLPack
        arrays, each with exactly the compiled shape and dataType); returns a list of
        TensorData in `targetTensors` order. `executionDescriptor`: an
        ExecutableExecutionDescriptor, whose scheduledHandler and completionHandler are called
        with (results, None) once the run has finished (runtime/execution_descriptors.py)."""
        if executionDescriptor is not None:
            from .execution_descriptors import ExecutableExecutionDescriptor, check_descriptor

            ed = check_descriptor("Executable.run", "executionDescriptor", executionDescriptor,
                                  ExecutableExecutionDescriptor)
            outs = self.run(inputs)
            for h in (ed.scheduledHandler, ed.completionHandler):
                if h is not None:
                    h(outs, None)
            return outs
        if type(inputs) is not list and type(inputs) is not tuple:
            if inputs is None:
                inputs = ()
            elif isinstance(inputs, (Mapping, str, bytes)) or not isinstance(inputs, Sequence):
                raise op_error(FeedError, "Executable.run", "inputs", f"a list of "
                               f"{self._nfeeds} values, in feedTensors order",
                               type(inputs).__name__)
        if len(inputs) != self._nfeeds:
            raise op_error(FeedError, "Executable.run", "inputs", f"{self._nfeeds} "
                           "values, in feedTensors order", f"{len(inputs)} values")
        feeds = self._convert_feeds(inputs)
        direct = self._direct
        if direct is not None:  # op by op (`_execute`, within the precision context if any)
            arrays = direct(self, feeds)
        else:
            # the caller's own device arrays (not converted copies) may be bound to a graph
            bindable = all(f is v or (type(v) is TensorData and f is v.array)
                           for f, v in zip(feeds, inputs))
            arrays = self._replay(feeds, bindable)
        dev = self.device
        out = []
        for a, dt in zip(arrays, self._target_dtypes):  # TensorData._wrap, inlined
            td = _new(TensorData)
            td._array, td.dataType, td.device = a, dt, dev
            out.append(td)
        return out

    # ------------------------------------------------------------------ packages
    def serialize(self, package: Any, descriptor: Any = None) -> None:
        """Swift `serialize(package:descriptor:)`: write this executable to the directory
        `package` (an mpsgraph package: versioned JSON plus .npy arrays, no pickle; see
        runtime/package.py). `Executable(mpsgraphPackageAt=package)` loads it."""
        from .package import write_package

        write_package(self, package, descriptor)

    def captured_graph(self, inputs: Sequence[Any]) -> Any:
        """The torch.cuda.CUDAGraph that runs this executable on `inputs` (device tensors in
        feedTensors order, bound to the graph; captured now if need be). Replaying it is the
        plan's device work alone, with no host work besides the launch: for device-only
        timing. Needs an executable whose CUDA graph is on (the default where it is safe)."""
        if self._replay is None:
            raise op_error(UnsupportedError, "captured_graph", "executable", "one that replays "
                           "a CUDA graph (compile(..., cuda_graph=True) on a CUDA device)",
                           f"one on {self.device.key} running op by op")
        be = self._backend
        feeds = [be.convert_feed(value, st, name)
                 for (_, st, name), value in zip(self._feed_info, inputs)]
        replay = self._replay
        if isinstance(replay, _AutoReplay):
            replay = replay.replayer
        return replay.graph_for(feeds)

    def _execute(self, feeds: list[Any], commit: bool = True) -> list[Any]:
        """The plan itself: feeds (backend arrays, in feedTensors order) -> target arrays.
        `commit=False` leaves the variables alone (a warm-up before a CUDA graph capture)."""
        program = self._program
        if program is None:
            program = self._build_program()
        slots = [*feeds, *self._slot_init]
        for s, op in self._vars:
            slots[s] = self._variable_value(op)
        for kernel, get, attrs, one, outs, free, dynamic in program:
            if dynamic is None:
                res = kernel(*get(slots), attrs)
            else:  # its shape rule runs on this run's shapes
                args = list(get(slots))
                res = kernel(*args, self._runtime_attrs(dynamic, args))
            if one >= 0:
                slots[one] = res
            else:
                for s, r in zip(outs, res):
                    slots[s] = r
            for s in free:
                slots[s] = None
        if self._stateless:
            return self._targets_of(slots)
        be = self._backend
        # a target that IS a constant or a variable's storage is handed out as a copy, so
        # that writing into the result cannot change the graph's state
        outs = [be.copy(slots[s]) if s in self._state_slots else slots[s]
                for s in self._target_slots]
        storages = [self._variable_value(op) for _, op in self._vars] + [
            self.graph._variable_storage[op][self.device.key] for _, op in self._vft]
        if self._consts or storages:
            # ... and so is a target that VIEWS one (a reshape or transpose of a constant is a
            # view on the torch backend: writing into it would change the constant for every
            # later run; the NumPy backend's constants and storages are read-only)
            outs = be.unalias(outs, [a for _, a in self._consts] + storages)
        if not commit:
            return outs
        if self._vars or self._vft:
            # the backend commits the assigns (the torch backend writes into the storage:
            # results that view it are copied first, and the assigned values are resolved
            # before any storage changes; SPEC 1.6: reads see the start-of-run values)
            key = self.device.key
            be.assign_variables(
                [(self.graph._variable_storage[op.inputs[0].operation], key, slots[s])
                 for op, s in self._assigns], storages)
        return outs

    def _execute_in_context(self, feeds: list[Any]) -> list[Any]:
        """`_execute` within the compile options' precision context (TF32)."""
        with self._context():
            return self._execute(feeds)

    def _variable_from_tensor_kernel(self, op: Operation) -> Any:
        """The step of a variableFromTensor: on this device's first run its storage becomes a
        private copy of the tensor's value (SPEC 1.6); afterwards the storage (the tensor is
        still computed: its inputs must be fed whenever the variable is needed)."""
        store = self.graph._variable_storage[op]
        key = self.device.key
        be = self._backend

        def kernel(value: Any, attrs: Any) -> Any:
            if key not in store:
                store[key] = be.copy(value)
            return store[key]
        return kernel

    def _variable_value(self, op: Operation) -> Any:
        store = self.graph._variable_storage[op]
        key = self.device.key
        if key not in store:  # a private copy: assigns may write into it
            be = self._backend
            store[key] = be.copy(be.from_numpy(op.attrs))
        return store[key]

    def _runtime_attrs(self, step: _Step, args: list[Any]) -> Any:
        """Shape rule at run time, for an op whose shapes depend on values or dynamic dims."""
        op = step.op
        opdef = OPS[op.kind]
        be = self._backend
        in_types, values = [], []
        for n, t, a in zip(op.input_names, op.inputs, args):
            if t is None:
                in_types.append(None)
                values.append(None)
                continue
            in_types.append(ShapedType(list(a.shape), t.dataType))
            values.append(be.to_numpy(a) if n in opdef.value_inputs else None)
        ctx = InferContext(op.kind, op.name, op.attrs, op.input_names, in_types, values,
                           static=True)
        return opdef.infer(ctx)[1]

    def __repr__(self) -> str:
        return (f"<Executable feeds={[t.name for t in self.feedTensors]} targets="
                f"{[t.name for t in self.targetTensors]} device={self.device}>")
