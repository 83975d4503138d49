"""Data-parallel training through torch.distributed: NCCL on NVIDIA GPUs, gloo on CPUs.

Imported only when used (`import mpsgraph.distributed`); it needs torch. Names outside Apple's
API live here, not on `Graph`. The design in MPSGraph's spirit: the gradient all-reduce is a
GRAPH OP, so one `Executable.run` per rank per step does the backward, the communication and
the optimizer update, and on CUDA the whole step can replay as one CUDA graph (NCCL
collectives are captured with it)::

    import mpsgraph as mg
    import mpsgraph.distributed as dist

    ctx = dist.init()                                 # torchrun's environment -> rank, device
    g = mg.Graph()
    ...                                               # forward, loss (a MEAN over the batch)
    grads = g.gradientForPrimaryTensor(loss, params)  # {variable: gradient}
    grads = dist.allReduce(g, grads)                  # {variable: mean over the ranks}
    ...                                               # adam / SGD on grads, assigns
    dist.broadcastVariables(g)                        # rank 0's initial values everywhere
    exe = g.compile(feeds, targets, updates, device=ctx.device)
    for epoch in ...:
        for idx in dist.shard(len(data), epoch, batch):   # this rank's share of each batch
            exe.run([...])

`allReduce` groups the tensors by dataType into buckets of at most `bucketBytes` (in the
order the backward produces them), and adds two ops per bucket: `allReduceStart` (flatten the
bucket into one buffer and start an asynchronous all-reduce of it, in the gradients' own
dataType) and `allReduceWait` (wait, divide by the world size for "mean", split into the
gradients' shapes). The executable schedules each Start right after the last gradient of its
bucket is computed and each Wait just before the first op that reads its result, so the
communication of one bucket overlaps the rest of the backward (NCCL runs on its own stream;
gloo on its own threads).

Every rank must run the same executables in the same order (collectives match by order). An
executable holding collectives never times CUDA-graph replay against op by op (that choice
could differ between ranks): on CUDA it runs op by op unless compiled with `cuda_graph=True`,
which captures the whole step, collectives included, on every rank alike.

A rank that dies or hangs makes the others fail with torch.distributed's error when the
process group's timeout (`init(timeout=...)`, default 5 minutes; the gloo tests use 60 s)
expires, never a silent hang.
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import DataTypeError, GraphError, UnsupportedError, op_error
from .ops._registry import OPS, InferContext, register_op
from .runtime import executable as _executable
from .runtime.device import Device
from .types import FLOATING, ShapedType

try:
    import torch
    import torch.distributed as _tdist
except ImportError as _e:  # pragma: no cover - the module needs torch
    raise ImportError(f"mpsgraph.distributed needs PyTorch >= 2.4 (pip install torch): {_e}"
                      ) from _e

__all__ = ["Context", "init", "shutdown", "context", "allReduce", "broadcastVariables",
           "shard", "isMain", "barrier", "saveCheckpoint", "loadCheckpoint",
           "DEFAULT_BUCKET_BYTES"]

DEFAULT_BUCKET_BYTES = 25 * 2 ** 20  # as torch DDP's default bucket
_OPS = ("allReduceStart", "allReduceWait")


# ---------------------------------------------------------------------------- the context
@dataclass(frozen=True)
class Context:
    """This process's place in the job: rank, world size, local rank (its GPU on the node),
    the torch.distributed backend ("nccl" or "gloo") and the mpsgraph Device to run on."""

    rank: int
    worldSize: int
    localRank: int
    backend: str
    device: Device


_CONTEXT: Context | None = None


def _env_int(name: str, default: int | None) -> int:
    v = os.environ.get(name)
    if v is None:
        if default is None:
            raise op_error(GraphError, "distributed.init", name, "an environment variable set "
                           "by torchrun (or given as an argument)", "none")
        return default
    try:
        return int(v)
    except ValueError:
        raise op_error(GraphError, "distributed.init", name, "an integer", repr(v)) from None


def init(backend: str | None = None, device: Device | str | None = None, *,
         timeout: float = 300.0, rank: int | None = None, worldSize: int | None = None,
         store: Any = None) -> Context:
    """Join the job: `torch.distributed.init_process_group` from torchrun's environment
    (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; or `rank=` / `worldSize=`, or a
    torch `store=`). `backend` defaults to "nccl" when CUDA is available and "gloo" otherwise;
    `device` to `cuda:LOCAL_RANK` for NCCL and `torch-cpu` for gloo (`"cpu"`, the NumPy
    backend, works with gloo too). `timeout` (seconds) bounds every collective: a dead or hung
    peer makes this rank raise instead of waiting forever. Returns the Context (also kept for
    `context()`); calling init again returns the same one."""
    global _CONTEXT
    if _CONTEXT is not None:
        return _CONTEXT
    if rank is None:
        rank = _env_int("RANK", 0 if "WORLD_SIZE" not in os.environ else None)
    if worldSize is None:
        worldSize = _env_int("WORLD_SIZE", 1)
    local = _env_int("LOCAL_RANK", rank)
    if not 0 <= rank < worldSize:
        raise op_error(GraphError, "distributed.init", "rank", f"0 <= rank < {worldSize}", rank)
    cuda = torch.cuda.is_available()
    if backend is None:
        backend = "nccl" if cuda else "gloo"
    if backend not in ("nccl", "gloo"):
        raise op_error(GraphError, "distributed.init", "backend", '"nccl" or "gloo"', backend)
    if backend == "nccl" and not cuda:
        raise op_error(UnsupportedError, "distributed.init", "backend", "a CUDA device for "
                       "NCCL", "no CUDA (use backend='gloo')")
    if device is None:
        device = f"cuda:{local % max(torch.cuda.device_count(), 1)}" if backend == "nccl" \
            else "torch-cpu"
    dev = device if isinstance(device, Device) else Device(device)
    if backend == "nccl" and dev.type != "cuda":
        raise op_error(GraphError, "distributed.init", "device", "a cuda device for NCCL",
                       dev.key)
    if dev.type == "cuda":
        torch.cuda.set_device(dev.index or 0)
    kw: dict[str, Any] = {"timeout": datetime.timedelta(seconds=timeout)}
    if store is not None:
        kw["store"] = store
    if not _tdist.is_initialized():
        if store is None and "MASTER_ADDR" not in os.environ and worldSize == 1:
            kw["store"] = _tdist.HashStore()  # a job of one: no rendezvous needed
        # NCCL for CUDA tensors, gloo beside it for host ones (the NumPy backend's, a CPU
        # broadcast): one process group serves both
        pg = "cpu:gloo,cuda:nccl" if backend == "nccl" else backend
        _tdist.init_process_group(pg, rank=rank, world_size=worldSize, **kw)
    _CONTEXT = Context(rank, worldSize, local, backend, dev)
    return _CONTEXT


def context() -> Context:
    """The Context of `init` (a GraphError before it)."""
    if _CONTEXT is None:
        raise op_error(GraphError, "distributed", "context", "mpsgraph.distributed.init() "
                       "called first", "no process group")
    return _CONTEXT


def shutdown() -> None:
    """Leave the job (destroy the process group)."""
    global _CONTEXT
    if _tdist.is_initialized():
        _tdist.destroy_process_group()
    _CONTEXT = None


def isMain() -> bool:
    """True on rank 0 (or without a job): the rank that prints and writes checkpoints."""
    return _CONTEXT is None or _CONTEXT.rank == 0


def barrier() -> None:
    if _CONTEXT is not None and _CONTEXT.worldSize > 1:
        _tdist.barrier()


# ---------------------------------------------------------------------------- the ops
def _infer_start(ctx: InferContext):
    dts = {t.dataType for t in ctx.in_types}
    if len(dts) != 1:
        raise ctx.error(DataTypeError, ctx.input_names[1], "tensors of one dataType (a "
                        "bucket)", sorted(d.name for d in dts))
    dt = dts.pop()
    sizes = []
    for n, t in zip(ctx.input_names, ctx.in_types):
        if t.shape is None or any(d < 0 for d in t.shape):
            raise ctx.error(UnsupportedError, n, "a tensor of static shape", t.shape)
        sizes.append(math.prod(t.shape))
    op, = ctx.attrs
    return [ShapedType([sum(sizes)], dt)], op


def _infer_wait(ctx: InferContext):
    shapes, op = ctx.attrs
    dt = ctx.in_types[0].dataType
    return [ShapedType(list(s), dt) for s in shapes], (tuple(tuple(s) for s in shapes), op)


if "allReduceStart" not in OPS:
    register_op("allReduceStart", _infer_start)
    register_op("allReduceWait", _infer_wait)
    _executable.SCHEDULE.update({"allReduceStart": "early", "allReduceWait": "late"})
    _executable.COLLECTIVES.update(_OPS)

_PENDING: dict[int, Any] = {}
_REDUCE_OPS = {"mean": "sum", "sum": "sum", "max": "max", "min": "min"}


def _start(flat: torch.Tensor, op: str) -> torch.Tensor:
    """Start the all-reduce of `flat` (a fresh buffer) in place; returns it."""
    context()
    if _tdist.is_initialized():  # (a job of one runs the collective too: the same path)
        red = getattr(_tdist.ReduceOp, _REDUCE_OPS[op].upper())
        _PENDING[flat.data_ptr()] = _tdist.all_reduce(flat, op=red, async_op=True)
    return flat


def _wait(flat: torch.Tensor, shapes: Sequence[Sequence[int]], op: str) -> list[torch.Tensor]:
    ctx = context()
    work = _PENDING.pop(flat.data_ptr(), None)
    if work is not None:
        work.wait()
    if op == "mean" and ctx.worldSize > 1:
        flat = flat / ctx.worldSize
    out, at = [], 0
    for s in shapes:
        n = math.prod(s)
        out.append(flat[at:at + n].reshape(s))
        at += n
    return out


def _np_to_torch(a: np.ndarray) -> torch.Tensor:
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _torch_to_np(t: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(dtype)
    return t.numpy()


def _one_or_tuple(xs: list[Any]) -> Any:
    return xs[0] if len(xs) == 1 else tuple(xs)


def _register_kernels() -> None:
    from .backends import numpy as npb

    def np_start(*args):
        *xs, op = args
        flat = np.concatenate([np.asarray(x).reshape(-1) for x in xs])  # a fresh buffer
        return _torch_to_np(_start(_np_to_torch(flat), op), flat.dtype)

    def np_wait(flat, attrs):
        shapes, op = attrs
        return _one_or_tuple([_torch_to_np(t, flat.dtype)
                              for t in _wait(_np_to_torch(flat), shapes, op)])

    def t_start(*args):
        *xs, op = args
        return _start(torch.cat([x.reshape(-1) for x in xs]), op)  # cat: a fresh buffer

    def t_wait(flat, attrs):
        shapes, op = attrs
        return _one_or_tuple(_wait(flat, shapes, op))

    npb.KERNELS["allReduceStart"], npb.KERNELS["allReduceWait"] = np_start, np_wait
    from .backends import torch as tb

    tb.KERNELS["allReduceStart"], tb.KERNELS["allReduceWait"] = t_start, t_wait


_register_kernels()


def allReduce(graph: Any, tensors: Mapping[Any, Any] | Sequence[Any], op: str = "mean", *,
              bucketBytes: int = DEFAULT_BUCKET_BYTES, name: str | None = None) -> Any:
    """The elementwise `op` ("mean", "sum", "max" or "min") of each tensor across all ranks,
    as graph ops of `graph`: a dict {key: Tensor} (the result of gradientForPrimaryTensor)
    gives a dict with the same keys, a list a list. Shapes and dataTypes are kept (static
    shapes, floating dataTypes for "mean"); the reduction runs in the tensors' own dataType.
    Tensors are bucketed by dataType, at most `bucketBytes` per bucket (see the module
    docstring for the scheduling). Every rank must build the same graph."""
    where = "distributed.allReduce"
    if op not in _REDUCE_OPS:
        raise op_error(GraphError, where, "op", '"mean", "sum", "max" or "min"', repr(op), name)
    if isinstance(tensors, Mapping):
        keys, items = list(tensors), list(tensors.values())
    elif isinstance(tensors, Sequence) and not isinstance(tensors, (str, bytes)):
        keys, items = None, list(tensors)
    else:
        raise op_error(GraphError, where, "tensors", "a dict or list of Tensors",
                       type(tensors).__name__, name)
    if not isinstance(bucketBytes, int) or bucketBytes <= 0:
        raise op_error(GraphError, where, "bucketBytes", "a positive int", repr(bucketBytes),
                       name)
    from .graph import Tensor

    for i, t in enumerate(items):
        if not isinstance(t, Tensor) or t.graph is not graph:
            raise op_error(GraphError, where, f"tensors[{i}]", "a Tensor of this graph",
                           repr(t), name)
        if op == "mean" and t.dataType not in FLOATING:
            raise op_error(DataTypeError, where, f"tensors[{i}]", "a floating-point tensor "
                           "(for op='mean')", t.dataType, name)
    # buckets in the order the backward produces the tensors (earliest producer first)
    order = sorted(range(len(items)), key=lambda i: items[i].operation.id)
    buckets: list[list[int]] = []
    open_: dict[Any, tuple[list[int], int]] = {}
    for i in order:
        t = items[i]
        nbytes = math.prod(t.shape or [0]) * t.dataType.itemsize if t.shape is not None else 0
        cur = open_.get(t.dataType)
        if cur is None or (cur[1] + nbytes > bucketBytes and cur[0]):
            cur = ([], 0)
            buckets.append(cur[0])
        cur[0].append(i)
        open_[t.dataType] = (cur[0], cur[1] + nbytes)
    out: list[Any] = [None] * len(items)
    for b, idx in enumerate(buckets):
        ins = [(f"tensors[{k}]", items[i]) for k, i in enumerate(idx)]
        label = None if name is None else f"{name}/bucket{b}"
        (flat,) = graph._add("allReduceStart", ins, (op,), label)
        shapes = tuple(tuple(items[i].shape) for i in idx)
        res = graph._add("allReduceWait", [("buffer", flat)], (shapes, op), label)
        for i, r in zip(idx, res):
            out[i] = r
    return dict(zip(keys, out)) if keys is not None else out


# ---------------------------------------------------------------------------- helpers
def _variables(graph: Any) -> list[Any]:
    return [op for op in graph._ops if op.kind == "variable"]


def _current(graph: Any, op: Any) -> tuple[np.ndarray, list[tuple[str, Any]]]:
    """(the variable's value on the host, its per-device storages)."""
    store = graph._variable_storage[op]
    if store:
        key, arr = next(iter(store.items()))
        be = Device(key).backend()
        return np.asarray(be.to_numpy(arr)), list(store.items())
    return np.asarray(op.attrs), []


def _set(graph: Any, op: Any, value: np.ndarray) -> None:
    """The variable's value everywhere: its initial value and every device's storage."""
    value = np.ascontiguousarray(value.astype(op.attrs.dtype))
    value.flags.writeable = False
    op.attrs = value
    store = graph._variable_storage[op]
    for key, arr in list(store.items()):
        be = Device(key).backend()
        if isinstance(arr, np.ndarray):
            store[key] = np.array(value)
        else:
            arr.copy_(be.from_numpy(np.array(value)))


def broadcastVariables(graph: Any, src: int = 0) -> None:
    """Every variable of `graph` takes rank `src`'s current value (call it once after
    building, so that every rank starts from the same weights whatever their seeds)."""
    ctx = context()
    if ctx.worldSize == 1:
        return
    for op in _variables(graph):
        value, _ = _current(graph, op)
        t = _host_tensor(value, ctx)
        _tdist.broadcast(t, src)
        _set(graph, op, _from_host(t, value.dtype))


def _host_tensor(value: np.ndarray, ctx: Context) -> torch.Tensor:
    from .backends.torch import Backend

    be = Backend.for_device(ctx.device) if ctx.device.backend_name == "torch" else None
    t = be.from_numpy(np.array(value)) if be is not None else torch.from_numpy(np.array(
        value.view(np.int16) if value.dtype.name == "bfloat16" else value))
    return t.contiguous()


def _from_host(t: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    a = t.numpy()
    return a.view(dtype) if a.dtype != dtype and a.itemsize == np.dtype(dtype).itemsize else a


def shard(n: int, epoch: int, batch: int | None = None, *, seed: int = 0) -> Any:
    """This rank's share of a dataset of `n` examples for `epoch`: one permutation of
    range(n) drawn from (seed, epoch) - the same on every rank - cut into global batches of
    `batch * worldSize` (the rest dropped, so every rank makes the same number of steps), of
    which this rank takes the `rank`-th slice of `batch`. Returns a list of index arrays, one
    per step (or, with `batch=None`, this rank's indices of the whole epoch)."""
    ctx = _CONTEXT or Context(0, 1, 0, "none", Device("cpu"))
    perm = np.random.default_rng([seed, epoch]).permutation(n)
    if batch is None:
        per = n // ctx.worldSize
        return perm[ctx.rank * per:(ctx.rank + 1) * per]
    if batch <= 0:
        raise op_error(GraphError, "distributed.shard", "batch", "a positive int", batch)
    g = batch * ctx.worldSize
    steps = n // g
    return [perm[s * g + ctx.rank * batch:s * g + (ctx.rank + 1) * batch] for s in range(steps)]


def saveCheckpoint(graph: Any, path: str | os.PathLike) -> None:
    """Write every variable's current value to `path` (an .npz: the variables in build order,
    with their names) on rank 0; the other ranks wait for it. Variables are the same on every
    rank, so a checkpoint loads into a job of any world size."""
    if isMain():
        vals = {}
        for i, op in enumerate(_variables(graph)):
            value, _ = _current(graph, op)
            if value.dtype.name == "bfloat16":
                value = value.view(np.uint16)
            vals[f"{i}:{op.outputTensors[0].name}"] = value
        tmp = f"{os.fspath(path)}.tmp.npz"
        np.savez(tmp, **vals)
        os.replace(tmp, path)
    barrier()


def loadCheckpoint(graph: Any, path: str | os.PathLike) -> None:
    """Set every variable of `graph` from a checkpoint of saveCheckpoint (same variables, in
    the same order, with the same shapes; a GraphError otherwise)."""
    with np.load(path) as f:
        items = sorted(f.items(), key=lambda kv: int(kv[0].split(":", 1)[0]))
        ops = _variables(graph)
        if len(items) != len(ops):
            raise op_error(GraphError, "distributed.loadCheckpoint", "path", f"a checkpoint of "
                           f"{len(ops)} variables", f"one of {len(items)}")
        for (key, value), op in zip(items, ops):
            want = op.attrs
            if want.dtype.name == "bfloat16":
                value = value.view(want.dtype)
            if value.shape != want.shape or value.dtype != want.dtype:
                raise op_error(GraphError, "distributed.loadCheckpoint", key, f"{want.dtype} "
                               f"{list(want.shape)}", f"{value.dtype} {list(value.shape)}")
            _set(graph, op, value)
