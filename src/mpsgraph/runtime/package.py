"""mpsgraph packages: `Executable.serialize(package:descriptor:)` and
`Executable(mpsgraphPackageAt:)`.

A package is a directory:

    manifest.json   {"format": "mpsgraph-package", "version": 1, "ops": [...], "feeds": [...],
                     "targets": [...], "targetOperations": [...]}
    arrays/N.npy    every array (constants, variables' values, array attributes), saved by
                    numpy.save without pickle; ml_dtypes types (bFloat16, int4, ...) are
                    saved as unsigned integers of their width and viewed back on load

Each op record holds its kind (the Swift method name), name, inputs (`[op, output]` positions
in the list, which is in dependency order), input names and attributes, encoded as JSON with
tagged objects for what JSON lacks (`$tuple`, `$float` for NaN and infinities, `$complex`,
`$enum` and `$dataclass` naming a class of the mpsgraph package, `$shapedType`, `$array`,
`$tensor`, `$op`). Loading rebuilds the graph through the ordinary op builders (every shape rule
and check runs again) and compiles it: nothing in a package is ever executed, a `$enum` or
`$dataclass` may name only an enum or dataclass defined in mpsgraph itself, and arrays are read
with `allow_pickle=False`. Control-flow regions are ops of the package like any other (their
blocks were recorded as ops when built), so a loaded package needs none of the Python that
built it. A variable is saved with its current value on the executable's device. Anything
unreadable, of another format or of a newer version raises a GraphError naming the package.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GraphError, UnsupportedError
from ..types import DataType, ShapedType

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor
    from .executable import Executable

__all__ = ["write_package", "read_package", "FORMAT", "VERSION"]

FORMAT = "mpsgraph-package"
VERSION = 1
_CLASS_MODULES = {"mpsgraph.types", "mpsgraph.descriptors",
                  "mpsgraph.runtime.execution_descriptors"}
_ML = {"bfloat16", "int4", "uint4", "int2", "uint2", "float8_e4m3fn", "float8_e5m2"}


class PackageError(GraphError):
    """A package that cannot be written or read."""


def _deps(op: Operation) -> list[Operation]:
    """The ops `op` needs built first: its inputs' ops and everything its attrs refer to."""
    out = [t.operation for t in op.inputTensors]
    stack = [op.attrs]
    from ..graph import Operation, Tensor

    while stack:
        v = stack.pop()
        if isinstance(v, Tensor):
            out.append(v.operation)
        elif isinstance(v, Operation):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type) \
                and type(v).__module__.startswith("mpsgraph.ops"):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v) if f.name != "fn")
    return out


def _order(roots: list[Operation]) -> list[Operation]:
    """Every op reachable from `roots` through `_deps`, each after what it needs."""
    done: set[int] = set()
    order: list[Operation] = []
    for root in roots:
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if id(op) in done:
                continue
            if expanded:
                done.add(id(op))
                order.append(op)
                continue
            stack.append((op, True))
            for d in _deps(op):
                if id(d) not in done:
                    stack.append((d, False))
    return order


class _Writer:
    def __init__(self, path: Path, index: dict[int, int]):
        self.path, self.index, self.n = path, index, 0

    def array(self, a: np.ndarray) -> dict:
        a = np.asarray(a)
        if a.dtype == object:
            raise PackageError("serialize: an object array cannot be saved (no pickle)")
        rec: dict[str, Any] = {"$array": f"arrays/{self.n}.npy"}
        if a.dtype.name in _ML:
            rec["mlDtype"] = a.dtype.name
            a = a.view(np.dtype(f"u{a.dtype.itemsize}"))
        # np.array, not np.ascontiguousarray (which makes a 0-d array 1-d)
        np.save(self.path / rec["$array"], np.array(a, order="C"), allow_pickle=False)
        self.n += 1
        return rec

    def enc(self, v: Any, where: str) -> Any:
        from ..graph import Operation, Tensor

        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, Enum):
            return {"$enum": f"{type(v).__module__}:{type(v).__qualname__}",
                    "value": v.value}
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else {"$float": repr(v)}
        if isinstance(v, complex):
            return {"$complex": [self.enc(v.real, where), self.enc(v.imag, where)]}
        if isinstance(v, np.ndarray):
            return self.array(v)
        if isinstance(v, np.generic):
            rec = self.array(np.asarray(v))
            rec["scalar"] = True
            return rec
        if isinstance(v, ShapedType):
            return {"$shapedType": {"shape": v.shape, "dataType": v.dataType.name}}
        if isinstance(v, Tensor):
            return {"$tensor": [self.index[id(v.operation)], v.index]}
        if isinstance(v, Operation):
            return {"$op": self.index[id(v)]}
        if isinstance(v, list):
            return [self.enc(x, where) for x in v]
        if isinstance(v, tuple):
            return {"$tuple": [self.enc(x, where) for x in v]}
        if isinstance(v, dict):
            return {"$dict": [[self.enc(k, where), self.enc(x, where)] for k, x in v.items()]}
        if isinstance(v, slice):
            return {"$slice": [self.enc(v.start, where), self.enc(v.stop, where),
                               self.enc(v.step, where)]}
        if dataclasses.is_dataclass(v) and not isinstance(v, type) \
                and type(v).__module__.startswith("mpsgraph."):
            return {"$dataclass": f"{type(v).__module__}:{type(v).__qualname__}",
                    "fields": {f.name: self.enc(getattr(v, f.name), where)
                               for f in dataclasses.fields(v) if f.name != "fn"}}
        raise UnsupportedError(f"serialize: {where}: an attribute of type "
                               f"{type(v).__name__} cannot be saved in a package")


def write_package(exe: Executable, package: Any, descriptor: Any = None) -> None:
    from .execution_descriptors import ExecutableSerializationDescriptor, check_descriptor

    d = check_descriptor("serialize", "descriptor", descriptor,
                         ExecutableSerializationDescriptor)
    if d is not None and d.append:
        raise UnsupportedError("serialize: argument 'descriptor.append': expected False (an "
                               "mpsgraph package holds one executable), given True")
    if not isinstance(package, (str, os.PathLike)):
        raise PackageError(f"serialize: argument 'package': expected a directory path, given "
                           f"{type(package).__name__}")
    path = Path(package)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise PackageError(f"serialize: argument 'package': expected a new or empty "
                           f"directory, given {str(path)!r}, which exists")
    (path / "arrays").mkdir(parents=True, exist_ok=True)
    roots = [t.operation for t in exe.feedTensors] + [t.operation for t in exe.targetTensors]
    roots += list(exe._target_ops)
    order = _order(roots)
    index = {id(op): i for i, op in enumerate(order)}
    w = _Writer(path, index)
    be, key = exe._backend, exe.device.key
    ops = []
    for op in order:
        attrs = op.attrs
        if op.kind == "variable":  # its current value (trained weights) on this device
            cur = exe.graph._variable_storage.get(op, {}).get(key)
            if cur is not None:
                attrs = np.asarray(be.to_numpy(cur)).astype(op.attrs.dtype)
        ops.append({"kind": op.kind, "name": op.name,
                    "inputs": [None if t is None else [index[id(t.operation)], t.index]
                               for t in op.inputs],
                    "inputNames": list(op.input_names),
                    "outputs": len(op.outputTensors),
                    "attrs": w.enc(attrs, f"{op.kind} ({op.name or op.id})")})
    feed_types = [st for _, st in exe._feed_slots]
    manifest = {
        "format": FORMAT, "version": VERSION,
        "comment": "an mpsgraph executable: ops in dependency order; arrays in arrays/*.npy",
        "ops": ops,
        "feeds": [[index[id(t.operation)], t.index, w.enc(st, "feeds")]
                  for t, st in zip(exe.feedTensors, feed_types)],
        "targets": [[index[id(t.operation)], t.index] for t in exe.targetTensors],
        "targetOperations": [index[id(o)] for o in exe._target_ops],
    }
    with open(path / "manifest.json", "w") as f:
        json.dump(manifest, f, indent=1, allow_nan=False)


# ---------------------------------------------------------------- reading
class _Reader:
    def __init__(self, path: Path, graph: Graph):
        self.path, self.g = path, graph
        self.ops: list[Operation] = []

    def bad(self, why: str) -> PackageError:
        return PackageError(f"Executable(mpsgraphPackageAt={str(self.path)!r}): not a valid "
                            f"mpsgraph package: {why}")

    def array(self, rec: dict) -> np.ndarray:
        rel = rec["$array"]
        if not isinstance(rel, str) or not rel.startswith("arrays/") or ".." in rel:
            raise self.bad(f"array path {rel!r}")
        try:
            a = np.load(self.path / rel, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise self.bad(f"array {rel}: {e}") from None
        ml = rec.get("mlDtype")
        if ml is not None:
            if ml not in _ML:
                raise self.bad(f"array dtype {ml!r}")
            import ml_dtypes

            a = a.view(np.dtype(getattr(ml_dtypes, ml)))
        if rec.get("scalar"):
            return a[()]
        a.flags.writeable = False
        return a

    def cls(self, path: Any, want: str) -> type:
        if not isinstance(path, str) or ":" not in path:
            raise self.bad(f"class {path!r}")
        mod, qual = path.split(":", 1)
        # only modules that define attribute classes, and only once imported by mpsgraph
        # itself: naming a module never imports (so never runs) anything
        if not (mod in _CLASS_MODULES or mod.startswith("mpsgraph.ops.")) or "." in qual \
                or mod not in sys.modules:
            raise self.bad(f"class {path!r} is not one of mpsgraph's attribute classes")
        c = getattr(sys.modules[mod], qual, None)
        if c is None:
            raise self.bad(f"unknown class {path!r}")
        ok = (isinstance(c, type) and issubclass(c, Enum)) if want == "enum" else (
            isinstance(c, type) and dataclasses.is_dataclass(c))
        if not ok:
            raise self.bad(f"{path!r} is not an {want}")
        return c

    def dec(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            return [self.dec(x) for x in v]
        if not isinstance(v, dict) or len([k for k in v if k.startswith("$")]) != 1:
            raise self.bad(f"attribute {str(v)[:60]}")
        tag = next(k for k in v if k.startswith("$"))
        x = v[tag]
        if tag == "$tuple":
            return tuple(self.dec(y) for y in x)
        if tag == "$float":
            if x not in ("nan", "inf", "-inf"):
                raise self.bad(f"float {x!r}")
            return float(x)
        if tag == "$complex":
            return complex(self.dec(x[0]), self.dec(x[1]))
        if tag == "$dict":
            return {self.dec(k): self.dec(y) for k, y in x}
        if tag == "$slice":
            return slice(*(self.dec(y) for y in x))
        if tag == "$array":
            return self.array(v)
        if tag == "$shapedType":
            if not isinstance(x.get("dataType"), str) or x["dataType"] not in DataType.__members__:
                raise self.bad(f"dataType {x.get('dataType')!r}")
            return ShapedType(x["shape"], DataType[x["dataType"]])
        if tag == "$tensor":
            return self.ops[x[0]].outputTensors[x[1]]
        if tag == "$op":
            return self.ops[x]
        if tag == "$enum":
            return self.cls(x, "enum")(v["value"])
        if tag == "$dataclass":
            c = self.cls(x, "dataclass")
            vals = {k: self.dec(y) for k, y in v["fields"].items()}
            names = {f.name for f in dataclasses.fields(c)}
            if set(vals) - names:
                raise self.bad(f"{x}: unknown fields {sorted(set(vals) - names)}")
            init = {f.name for f in dataclasses.fields(c) if f.init}
            obj = c(**{k: y for k, y in vals.items() if k in init})
            for k, y in vals.items():
                if k not in init:
                    object.__setattr__(obj, k, y)
            return obj
        raise self.bad(f"tag {tag!r}")


def read_package(package: Any) -> tuple[Graph, dict[Tensor, ShapedType], list[Tensor],
                                        list[Operation]]:
    """The graph, feeds (placeholder -> compiled ShapedType, in order), targets and target
    operations of a package."""
    from ..graph import Graph
    from ..ops._registry import OPS

    if package is None:
        raise PackageError("Executable: expected a graph (Graph.compile) or "
                           "mpsgraphPackageAt=<directory>, given neither")
    if not isinstance(package, (str, os.PathLike)):
        raise PackageError(f"Executable: argument 'mpsgraphPackageAt': expected a directory "
                           f"path, given {type(package).__name__}")
    path = Path(package)
    g = Graph()
    r = _Reader(path, g)
    try:
        with open(path / "manifest.json") as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise r.bad(f"manifest.json: {e}") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise r.bad(f"format {m.get('format') if isinstance(m, dict) else None!r}, expected "
                    f"{FORMAT!r}")
    if not isinstance(m.get("version"), int) or m["version"] > VERSION or m["version"] < 1:
        raise r.bad(f"version {m.get('version')!r}; this mpsgraph reads versions 1.."
                    f"{VERSION}")
    try:
        for i, rec in enumerate(m["ops"]):
            kind, name = rec["kind"], rec["name"]
            if kind not in OPS:
                raise r.bad(f"op {i}: unknown kind {kind!r}")
            if name is not None and not isinstance(name, str):
                raise r.bad(f"op {i}: name {name!r}")
            ins = [None if ref is None else r.ops[ref[0]].outputTensors[ref[1]]
                   if 0 <= ref[0] < i else None for ref in rec["inputs"]]
            if any(ref is not None and not 0 <= ref[0] < i for ref in rec["inputs"]):
                raise r.bad(f"op {i}: an input refers forward")
            names = rec["inputNames"]
            attrs = r.dec(rec["attrs"])
            if kind == "placeholder":
                outs = g._add("placeholder", [], attrs, name)
            elif kind in ("constant", "variable"):
                if not isinstance(attrs, np.ndarray):
                    raise r.bad(f"op {i}: {kind} without an array")
                outs = g.constant(attrs, name=name) if kind == "constant" else \
                    g.variable(attrs, name=name)
                outs = [outs]
            else:
                outs = g._add(kind, list(zip(names, ins)), attrs, name, optional=names)
            if len(outs) != rec["outputs"]:
                raise r.bad(f"op {i} ({kind}): {len(outs)} outputs, the package says "
                            f"{rec['outputs']}")
            r.ops.append(g._ops[-1])
        feeds = {r.ops[o].outputTensors[k]: r.dec(st) for o, k, st in m["feeds"]}
        targets = [r.ops[o].outputTensors[k] for o, k in m["targets"]]
        tops = [r.ops[o] for o in m["targetOperations"]]
    except PackageError:
        raise
    except GraphError as e:
        raise r.bad(f"an op does not rebuild: {e}") from None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise r.bad(f"{type(e).__name__}: {e}") from None
    return g, feeds, targets, tops
