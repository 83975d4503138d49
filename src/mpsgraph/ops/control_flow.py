"""MPSGraphControlFlowOps and MPSGraphCallOps: controlDependency, if_, while_, for_, call.

Blocks are Python callables (API.md rules 8, 10, 11) that build ops on the same graph. While a
block runs, every op it builds is recorded; when it returns, the recorded ops become a `Region`:
each outer tensor they read (a *capture*) and each block argument is replaced by a placeholder
of the region, so the region is a self-contained sub-graph whose inputs are those placeholders
and whose outputs are the block's results. The control-flow op itself reads the captured outer
tensors as ordinary inputs (so pruning, ordering and autodiff of the outer graph see them).

At compile time the executable asks `BOUND_KERNELS[kind](executable, op, in_types)` for the
op's kernel (runtime/executable.py): each region is compiled ONCE as a sub-`Executable` for the
same device (no CUDA graph of its own: an outer capture covers it) and the kernel runs the
sub-plans with the backend's kernels, choosing by the predicate's value. Reading a predicate
or a fed trip count is a host read, which marks the plan as not CUDA-graph capturable; an
`if_` on a constant predicate and a `for_` on constant bounds are resolved at compile time
and stay capturable.

`controlDependency` needs no region: the dependent block's ops are ordinary ops, built while
every variable written by an `assign` of `operations` reads as the assigned value (so a read
in the block sees the assignment), and its results pass through an identity op that also reads
the dependencies' values; the executable commits those assigns at the end of the run, as if
they were targeted (docs/semantics.md, "Control flow decisions").
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DataTypeError, GraphError, ShapeError, UnsupportedError, op_error
from ..types import DataType, ShapedType
from ._registry import OPS, InferContext, register_op

if TYPE_CHECKING:
    from ..graph import Graph, Operation, Tensor

__all__ = ["ControlFlowOps", "CallOps", "Region"]


@dataclass(eq=False)
class Region:
    """A block recorded as a sub-graph: `args` (placeholders for the block's arguments),
    `captures` (placeholders standing for outer tensors, in `outer` order), `ops` (the ops the
    block built, in build order) and `results` (the block's result tensors, inside the
    region). `fn` is the Python callable (kept only to build; never serialized)."""

    args: list[Tensor]
    captures: list[Tensor]
    outer: list[Tensor]
    ops: list[Operation]
    results: list[Tensor]
    predicate: Tensor | None = None  # while_'s before block: its predicate (inside)
    fn: Any = field(default=None, repr=False)


@dataclass(eq=False)
class ControlFlowAttrs:
    """The attrs of an if_ / while_ / for_ op: its regions and, per region, the positions of
    its captures among the op's inputs."""

    regions: list[Region]
    capture_index: list[list[int]]  # region -> op-input position of each of its captures
    n_lead: int  # inputs before the captures (predicate / loop inputs)
    form: str = ""  # for_: "count" or "range"; for_ body: "index" or "noindex"
    body_index: bool = True


@dataclass(eq=False)
class DependencyAttrs:
    """controlDependency: the assigns it runs (committed at the end of the run) and the
    number of block results (the first inputs; the rest are the dependencies' values)."""

    assigns: list[Operation]
    n_results: int


@dataclass(eq=False)
class CallAttrs:
    symbolName: str
    outputTypes: list[ShapedType]


def _seq(kind: str, name: str | None, argument: str, value: Any) -> list[Any]:
    from ..graph import Tensor

    if value is None:
        return []
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise op_error(GraphError, kind, argument, "a list of Tensors",
                       type(value).__name__, name)
    return list(value)


def _is_scalar(st: ShapedType) -> bool:
    return st.shape is not None and all(s == 1 for s in st.shape)


def _substituted(g: Graph, ts: list[Tensor]) -> list[Tensor]:
    """`ts` with each variable that an enclosing controlDependency assigns replaced by the
    assigned value (what Graph._add does for op inputs)."""
    subst = getattr(g, "_cf_subst", None)
    return [subst.get(t, t) for t in ts] if subst else ts


def _region_placeholder(g: Graph, st: ShapedType, name: str) -> Tensor:
    """A placeholder standing for a block argument or a captured tensor (fed by the op)."""
    t = g._add("placeholder", [], st, name)[0]
    if not hasattr(g, "_cf_placeholders"):
        g._cf_placeholders = set()
    g._cf_placeholders.add(id(t.operation))
    return t


def _nested_ops(r: Region) -> set[int]:
    """Ids of the ops of `r` that belong to the regions of its own control-flow ops."""
    out: set[int] = set()
    for op in r.ops:
        if isinstance(op.attrs, ControlFlowAttrs):
            for sub in op.attrs.regions:
                out.update(id(o) for o in sub.ops)
                out.update(id(t.operation) for t in list(sub.args) + list(sub.captures))
    return out


class _Recorder:
    """Records the ops a block builds on `graph` and turns them into a Region."""

    def __init__(self, graph: Graph, kind: str, name: str | None, block: str,
                 arg_types: Sequence[ShapedType]):
        self.g, self.kind, self.name, self.block = graph, kind, name, block
        label = name or f"{kind}_{len(graph._ops)}"
        self.args = [_region_placeholder(graph, ShapedType(st.shape, st.dataType),
                                         f"{label}/{block}/arg{i}")
                     for i, st in enumerate(arg_types)]
        self.start = len(graph._ops)

    def results(self, value: Any, what: str) -> list[Tensor]:
        out = _seq(self.kind, self.name, what, value)
        for i, t in enumerate(out):
            self.g._check_tensor(self.kind, self.name, f"{what}[{i}]", t)
        return _substituted(self.g, out)

    def finish(self, results: list[Tensor], predicate: Tensor | None = None,
               fn: Any = None) -> Region:
        g = self.g
        ops = g._ops[self.start:]
        inside = {id(op) for op in ops} | {id(t.operation) for t in self.args}
        mine = getattr(g, "_cf_placeholders", set())
        for op in ops:
            if op.kind in ("placeholder", "variable", "assign") and id(op) not in mine:
                raise op_error(UnsupportedError, self.kind, self.block, "a block that builds "
                               "no placeholder, variable or assign (build them outside and use "
                               "them inside)", f"one that builds {op.kind} "
                               f"({op.name or op.id})", self.name)
            if op.kind == "controlDependency" and op.attrs.assigns:
                raise op_error(UnsupportedError, self.kind, self.block, "a controlDependency "
                               "with assigns outside any block", "one inside a block", self.name)
        label = self.name or f"{self.kind}_{self.start}"
        captures: dict[int, Tensor] = {}
        outer: list[Tensor] = []

        def inner(t: Tensor) -> Tensor:
            if id(t.operation) in inside:
                return t
            ph = captures.get(id(t))
            if ph is None:
                ph = _region_placeholder(g, t.shapedType,
                                         f"{label}/{self.block}/capture{len(outer)}")
                captures[id(t)] = ph
                outer.append(t)
            return ph

        for op in ops:
            op.inputs = tuple(None if t is None else inner(t) for t in op.inputs)
        res = [inner(t) for t in results]
        pred = inner(predicate) if predicate is not None else None
        caps = [captures[id(t)] for t in outer]
        if not hasattr(g, "_cf_inner"):
            g._cf_inner = set()
        # from now on only the op reads these (Graph._add refuses them elsewhere)
        g._cf_inner.update(op.id for op in list(ops) + [t.operation for t in self.args + caps])
        return Region(self.args, caps, outer, list(ops), res, pred, fn)


def _check_types(kind: str, name: str | None, what: str, got: Sequence[Tensor],
                 want: Sequence[ShapedType]) -> None:
    if len(got) != len(want):
        raise op_error(GraphError, kind, what, f"{len(want)} tensors", f"{len(got)}", name)
    for i, (t, st) in enumerate(zip(got, want)):
        if t.dataType != st.dataType:
            raise op_error(DataTypeError, kind, f"{what}[{i}]", f"dataType {st.dataType!r}",
                           t.dataType, name)
        a, b = t.shape, st.shape
        if a is not None and b is not None and (len(a) != len(b) or any(
                x != y and x != -1 and y != -1 for x, y in zip(a, b))):
            raise op_error(ShapeError, kind, f"{what}[{i}]", f"shape {b}", a, name)


def _callable(kind: str, name: str | None, argument: str, fn: Any) -> None:
    if not callable(fn):
        raise op_error(GraphError, kind, argument, "a Python callable (a block)",
                       type(fn).__name__, name)


def _n_positional(fn: Any) -> int | None:
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in ps):
        return None
    return sum(1 for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               and p.default is p.empty)


class ControlFlowOps:
    """Graph methods of MPSGraphControlFlowOps (mixed into `Graph`)."""

    # ------------------------------------------------------------ controlDependency
    def controlDependency(self, operations: Sequence[Operation] | Operation, *,
                          dependentBlock: Callable[[], Sequence[Tensor]],
                          name: str | None = None) -> list[Tensor]:
        """Swift `controlDependency(with:dependentBlock:name:)`: runs `operations` before the
        ops that `dependentBlock()` builds, and returns the block's tensors (a list, the same
        count, shapes and types). An `assign` in `operations` runs whenever a returned tensor
        is computed (it need not be in targetOperations) and every read of its variable inside
        the block sees the assigned value."""
        from ..graph import Operation

        kind = "controlDependency"
        ops = [operations] if isinstance(operations, Operation) else _seq(
            kind, name, "operations", operations)
        for i, o in enumerate(ops):
            if not isinstance(o, Operation):
                raise op_error(GraphError, kind, f"operations[{i}]", "an Operation",
                               type(o).__name__, name)
            if o.graph is not self:
                raise op_error(GraphError, kind, f"operations[{i}]", "an operation of this "
                               "graph", repr(o), name)
        _callable(kind, name, "dependentBlock", dependentBlock)
        assigns = [o for o in ops if o.kind == "assign"]
        subst = dict(getattr(self, "_cf_subst", None) or {})
        for a in assigns:  # later assigns to one variable win, as in the commit
            subst[a.inputs[0]] = a.inputs[1]
        saved = getattr(self, "_cf_subst", None)
        self._cf_subst = subst
        try:
            res = _seq(kind, name, "dependentBlock", dependentBlock())
        finally:
            self._cf_subst = saved
        for i, t in enumerate(res):
            self._check_tensor(kind, name, f"dependentBlock[{i}]", t)
        saved2, self._cf_subst = self._cf_subst, subst
        res = _substituted(self, res)  # a variable returned as it is: its assigned value
        self._cf_subst = saved2
        deps: list[Tensor] = []
        for o in ops:
            deps.extend(o.inputTensors if o.kind == "assign" else o.outputTensors)
        inputs = [(f"result{i}", t) for i, t in enumerate(res)]
        inputs += [(f"dependency{i}", t) for i, t in enumerate(deps)]
        saved, self._cf_subst = getattr(self, "_cf_subst", None), None
        try:
            return self._add(kind, inputs, DependencyAttrs(assigns, len(res)), name)
        finally:
            self._cf_subst = saved

    # ------------------------------------------------------------ if_
    def if_(self, predicate: Tensor, *, then: Callable[[], Sequence[Tensor]] | None = None,
            elseBlock: Callable[[], Sequence[Tensor]] | None = None, name: str | None = None,
            thenBlock: Callable[[], Sequence[Tensor]] | None = None) -> list[Tensor]:
        """Swift `if(_:then:else:name:)`: the results of `then()` where the scalar `predicate`
        (one element: bool, or a number, true where nonzero) is true, else of `elseBlock()`.
        Both blocks must return the same number of tensors with equal dataTypes and shapes;
        `elseBlock=None` is allowed only when `then` returns nothing. `thenBlock=` is the
        Objective-C label. Differentiable (through both branches)."""
        kind = "if_"
        self._check_tensor(kind, name, "predicate", predicate)
        if then is None:
            then = thenBlock
        _callable(kind, name, "then", then)
        if elseBlock is not None:
            _callable(kind, name, "elseBlock", elseBlock)
        if predicate.shape is not None and not all(s in (1, -1) for s in predicate.shape):
            raise op_error(ShapeError, kind, "predicate", "a scalar tensor (one element)",
                           predicate.shape, name)
        if predicate.dataType.numpy_dtype.kind == "c":
            raise op_error(DataTypeError, kind, "predicate", "a bool or real number tensor",
                           predicate.dataType, name)
        regions = []
        for block, fn in (("then", then), ("elseBlock", elseBlock)):
            rec = _Recorder(self, kind, name, block, [])
            res = rec.results(fn() if fn is not None else [], block)
            regions.append(rec.finish(res, fn=fn))
        t, e = regions
        if elseBlock is None and t.results:
            raise op_error(GraphError, kind, "elseBlock", "a block (then returns "
                           f"{len(t.results)} tensors)", None, name)
        _check_types(kind, name, "elseBlock", e.results, [r.shapedType for r in t.results])
        return self._control_op(kind, [("predicate", predicate)], regions, name)

    def _control_op(self, kind: str, lead: list[tuple[str, Tensor]], regions: list[Region],
                    name: str | None, **extra: Any) -> list[Tensor]:
        outer: list[Tensor] = []
        index: list[list[int]] = []
        for r in regions:
            pos = []
            for t in r.outer:
                if t not in outer:  # Tensor hashes by identity
                    outer.append(t)
                pos.append(len(lead) + outer.index(t))
            index.append(pos)
        inputs = lead + [(f"capture{i}", t) for i, t in enumerate(outer)]
        return self._add(kind, inputs, ControlFlowAttrs(regions, index, len(lead), **extra),
                         name)

    # ------------------------------------------------------------ while_
    def while_(self, initialInputs: Sequence[Tensor], *,
               before: Callable[[list[Tensor], list[Tensor]], Tensor],
               after: Callable[[list[Tensor]], Sequence[Tensor]],
               name: str | None = None) -> list[Tensor]:
        """Swift `while(initialInputs:before:after:name:)`. `before(inputs, results)` gets the
        current values and returns the scalar predicate, appending the tensors it passes on
        to the list `results` (Apple's NSMutableArray); while the predicate is true,
        `after(results)` computes the next inputs (same count, types and shapes as
        `initialInputs`); when it is false, `results` are the op's results. Not
        differentiable (a GraphError says so)."""
        kind = "while_"
        init = _seq(kind, name, "initialInputs", initialInputs)
        for i, t in enumerate(init):
            self._check_tensor(kind, name, f"initialInputs[{i}]", t)
        if not init:
            raise op_error(GraphError, kind, "initialInputs", "at least one tensor (the loop "
                           "state)", "none", name)
        _callable(kind, name, "before", before)
        _callable(kind, name, "after", after)
        rec = _Recorder(self, kind, name, "before", [t.shapedType for t in init])
        results: list[Tensor] = []
        pred = before(list(rec.args), results)
        self._check_tensor(kind, name, "before (its predicate)", pred)
        pred = _substituted(self, [pred])[0]
        if pred.shape is not None and not all(s in (1, -1) for s in pred.shape):
            raise op_error(ShapeError, kind, "before", "a scalar predicate tensor",
                           pred.shape, name)
        res = rec.results(results, "before (its results)")
        b = rec.finish(res, pred, fn=before)
        rec = _Recorder(self, kind, name, "after", [t.shapedType for t in b.results])
        res = rec.results(after(list(rec.args)), "after")
        a = rec.finish(res, fn=after)
        _check_types(kind, name, "after", a.results, [t.shapedType for t in init])
        return self._control_op(kind, [(f"initialInput{i}", t) for i, t in enumerate(init)],
                                [b, a], name)

    # ------------------------------------------------------------ for_
    def for_(self, numberOfIterations: Tensor | None = None,
             initialBodyArguments: Sequence[Tensor] = (),
             body: Callable[..., Sequence[Tensor]] | None = None, *,
             lowerBound: Tensor | None = None, upperBound: Tensor | None = None,
             step: Tensor | None = None, name: str | None = None) -> list[Tensor]:
        """Swift `for(numberOfIterations:initialBodyArguments:body:name:)` (index 0 ..
        n - 1, int32) and `for(lowerBound:upperBound:step:initialBodyArguments:body:name:)`
        (index lowerBound, lowerBound + step, ... while < upperBound, or > upperBound for a
        negative step, as Python's range; the index has the bounds' integer dataType).
        `body(index, arguments)` returns the next arguments (same count, types and shapes as
        `initialBodyArguments`); a body taking one parameter is called as `body(arguments)`
        (no index). The results are the last arguments (the initial ones after no
        iteration). Not differentiable (a GraphError says so)."""
        kind = "for_"
        args = _seq(kind, name, "initialBodyArguments", initialBodyArguments)
        for i, t in enumerate(args):
            self._check_tensor(kind, name, f"initialBodyArguments[{i}]", t)
        _callable(kind, name, "body", body)
        ranged = (lowerBound, upperBound, step)
        if numberOfIterations is not None:
            if any(t is not None for t in ranged):
                raise op_error(GraphError, kind, "lowerBound", "either numberOfIterations or "
                               "lowerBound/upperBound/step", "both", name)
            lead = [("numberOfIterations", numberOfIterations)]
            form = "count"
        else:
            if any(t is None for t in ranged):
                missing = [n for n, t in zip(("lowerBound", "upperBound", "step"), ranged)
                           if t is None]
                raise op_error(GraphError, kind, missing[0], "a scalar integer tensor (or "
                               "numberOfIterations=)", None, name)
            lead = list(zip(("lowerBound", "upperBound", "step"), ranged))
            form = "range"
        for n, t in lead:
            self._check_tensor(kind, name, n, t)
            if t.dataType.is_floating or t.dataType.numpy_dtype.kind not in "iu":
                raise op_error(DataTypeError, kind, n, "an integer scalar tensor",
                               t.dataType, name)
            if t.shape is not None and not all(s in (1, -1) for s in t.shape):
                raise op_error(ShapeError, kind, n, "a scalar tensor", t.shape, name)
        if form == "range":
            dts = {t.dataType for _, t in lead}
            if len(dts) > 1:
                raise op_error(DataTypeError, kind, "upperBound", f"the dataType of lowerBound "
                               f"({lowerBound.dataType!r})",
                               sorted(d.name for d in dts), name)
            index_type = lowerBound.dataType
        else:
            index_type = DataType.int32
        with_index = _n_positional(body) != 1
        rec = _Recorder(self, kind, name, "body", [ShapedType([], index_type)]
                        + [t.shapedType for t in args])
        idx, bargs = rec.args[0], list(rec.args[1:])
        res = rec.results(body(idx, bargs) if with_index else body(bargs), "body")
        r = rec.finish(res, fn=body)
        _check_types(kind, name, "body", r.results, [t.shapedType for t in args])
        return self._control_op(kind, lead + [(f"initialBodyArgument{i}", t)
                                              for i, t in enumerate(args)], [r], name,
                                form=form, body_index=with_index)


class CallOps:
    """Graph method of MPSGraphCallOps (mixed into `Graph`)."""

    def call(self, symbolName: str, *, inputTensors: Sequence[Tensor],
             outputTypes: Sequence[ShapedType], name: str | None = None) -> list[Tensor]:
        """Swift `call(symbolName:inputTensors:outputTypes:name:)`: runs the `Executable`
        that the compilation descriptor's `callables` maps `symbolName` to (resolved when the
        graph is compiled, or run with an ExecutionDescriptor whose compilationDescriptor has
        it), on `inputTensors` (its feedTensors, in order); returns tensors of
        `outputTypes` (the callee's targets: their count, dataTypes and static shapes are
        checked at compile time)."""
        kind = "call"
        if not isinstance(symbolName, str) or not symbolName:
            raise op_error(GraphError, kind, "symbolName", "a non-empty str",
                           repr(symbolName), name)
        ins = _seq(kind, name, "inputTensors", inputTensors)
        types = _seq(kind, name, "outputTypes", outputTypes)
        for i, st in enumerate(types):
            if not isinstance(st, ShapedType):
                raise op_error(GraphError, kind, f"outputTypes[{i}]", "a ShapedType",
                               type(st).__name__, name)
            if st.shape is None:
                raise op_error(ShapeError, kind, f"outputTypes[{i}]", "a ranked shape",
                               None, name)
        return self._add(kind, [(f"input{i}", t) for i, t in enumerate(ins)],
                         CallAttrs(symbolName, list(types)), name)


# ---------------------------------------------------------------- shape rules
def _infer_dependency(ctx: InferContext):
    return [ctx.in_types[i] for i in range(ctx.attrs.n_results)], None


def _infer_control(ctx: InferContext):
    # if_: the then block's types (else's are equal); while_: the before block's results;
    # for_: the body's (equal to the initial arguments')
    a: ControlFlowAttrs = ctx.attrs
    return [t.shapedType for t in a.regions[0].results], a


def _infer_call(ctx: InferContext):
    return list(ctx.attrs.outputTypes), ctx.attrs


# ---------------------------------------------------------------- gradients
def _grad_dependency(g: Graph, op: Operation, dys: list[Tensor | None]) -> dict[str, Tensor]:
    return {f"result{i}": dy for i, dy in enumerate(dys) if dy is not None}


def _zeros(g: Graph, t: Tensor) -> Tensor:
    if t.shape is None or any(s < 0 for s in t.shape):
        raise op_error(UnsupportedError, "gradientForPrimaryTensor", "if_", "captured tensors "
                       "of static shape", f"{t.name} of shape {t.shape}")
    return g.constant(0.0, t.shape, t.dataType)


def _clone(g: Graph, r: Region, mapping: dict[Tensor, Tensor]) -> list[Tensor]:
    """Rebuild the region's ops on `g` with its placeholders mapped to outer tensors."""
    m = dict(mapping)
    nested = _nested_ops(r)  # the nested ops' regions are shared, not rebuilt
    for op in r.ops:
        if id(op) in nested:
            continue
        names = op.input_names
        outs = g._add(op.kind, [(n, None if t is None else m.get(t, t))
                                for n, t in zip(names, op.inputs)], op.attrs, op.name,
                      optional=names)
        for a, b in zip(op.outputTensors, outs):
            m[a] = b
    return [m.get(t, t) for t in r.results]


def _local_gradients(g: Graph, start: int, seeds: list[tuple[Tensor, Tensor]],
                     wrt: list[Tensor]) -> list[Tensor | None]:
    """Reverse walk over the ops built from `start` on (the cloned branch) only: the outer
    graph is never crossed (the if_ op's rule gives the PARTIAL derivatives of its inputs; the
    outer autodiff carries them on, so an outer op between two captures is not counted
    twice)."""
    reach = {id(t) for t in wrt}
    path = []
    for op in g._ops[start:]:
        if any(id(t) in reach for t in op.inputTensors):
            path.append(op)
            reach.update(id(t) for t in op.outputTensors)
    grads: dict[Tensor, Tensor] = {}
    for t, dy in seeds:
        grads[t] = dy if t not in grads else g.addition(grads[t], dy)
    for op in reversed(path):
        outs = [grads.get(t) for t in op.outputTensors]
        if all(d is None for d in outs):
            continue
        rule = OPS[op.kind].grad
        if rule is None:
            raise op_error(UnsupportedError, "gradientForPrimaryTensor", "if_", "branches of "
                           "differentiable ops", f"a path through {op.kind} "
                           f"({op.name or op.id}), which has no gradient rule")
        for arg, gr in rule(g, op, outs).items():
            t = op.input(arg)
            if t is None or gr is None or not t.dataType.is_floating or id(t) not in reach:
                continue
            grads[t] = gr if t not in grads else g.addition(grads[t], gr)
    return [grads.get(t) for t in wrt]


def _grad_if(g: Graph, op: Operation, dys: list[Tensor | None]) -> dict[str, Tensor]:
    a: ControlFlowAttrs = op.attrs
    names = [n for n, t in zip(op.input_names[a.n_lead:], op.inputs[a.n_lead:])
             if t.dataType.is_floating]
    caps = [op.input(n) for n in names]
    if not caps:
        return {}

    def branch(r: Region) -> Callable[[], list[Tensor]]:
        def block() -> list[Tensor]:
            start = len(g._ops)
            res = _clone(g, r, dict(zip(r.captures, r.outer)))
            seeds = [(t, dy) for t, dy in zip(res, dys) if dy is not None
                     and t.dataType.is_floating]
            got = _local_gradients(g, start, seeds, caps)
            return [x if x is not None else _zeros(g, c) for x, c in zip(got, caps)]
        return block

    outs = g.if_(op.inputs[0], then=branch(a.regions[0]), elseBlock=branch(a.regions[1]),
                 name=None if op.name is None else f"{op.name}/gradient")
    return dict(zip(names, outs))


def _no_grad(kind: str):
    def rule(g: Graph, op: Operation, dys: list[Tensor | None]) -> dict[str, Tensor]:
        raise op_error(UnsupportedError, "gradientForPrimaryTensor", kind, "a path without "
                       f"{kind}: MPSGraph's autodiff does not differentiate loops (use if_, "
                       "or unroll the loop in Python)", f"a path through {kind} "
                       f"({op.name or op.id})")
    return rule


def _grad_call(g: Graph, op: Operation, dys: list[Tensor | None]) -> dict[str, Tensor]:
    raise op_error(UnsupportedError, "gradientForPrimaryTensor", "call", "a path without "
                   "call (the callee is resolved only at compile time)",
                   f"a path through call ({op.name or op.id})")


register_op("controlDependency", _infer_dependency, grad=_grad_dependency)
register_op("if_", _infer_control, grad=_grad_if)
register_op("while_", _infer_control, grad=_no_grad("while_"))
register_op("for_", _infer_control, grad=_no_grad("for_"))
register_op("call", _infer_call, grad=_grad_call)


# ---------------------------------------------------------------- kernels (bound per plan)
def _sub_executable(exe: Any, r: Region, types: Sequence[ShapedType],
                    targets: Sequence[Tensor]) -> Any:
    """The region compiled for `exe`'s device; its feeds are args + captures, in order."""
    from ..runtime.executable import Executable

    feeds = dict(zip(list(r.args) + list(r.captures), types))
    opts = {k: v for k, v in exe.options.items() if k != "cuda_graph"}
    sub = Executable(exe.graph, feeds, list(targets), None, exe.device, cuda_graph=False,
                     **opts)
    pos = [sub.targetTensors.index(t) for t in targets]  # a result listed twice
    return sub, pos


class _Lazy:
    """Sub-executables per input shapes (planned once per shape: at compile time when the
    shapes are static, else at the first run with them)."""

    def __init__(self, exe: Any, r: Region, targets: Sequence[Tensor]):
        self.exe, self.r, self.targets = exe, r, list(targets)
        self.cache: dict[Any, Any] = {}

    def get(self, arrays: Sequence[Any], dtypes: Sequence[DataType]) -> Any:
        key = tuple(tuple(a.shape) for a in arrays)
        hit = self.cache.get(key)
        if hit is None:
            types = [ShapedType(list(k), dt) for k, dt in zip(key, dtypes)]
            hit = self.cache[key] = _sub_executable(self.exe, self.r, types, self.targets)
        return hit

    def prepare(self, types: Sequence[ShapedType | None]) -> None:
        if all(t is not None and t.is_static for t in types):
            key = tuple(tuple(t.shape) for t in types)
            self.cache[key] = _sub_executable(self.exe, self.r, types, self.targets)

    def __call__(self, arrays: list[Any], dtypes: Sequence[DataType]) -> list[Any]:
        sub, pos = self.get(arrays, dtypes)
        outs = sub._execute(arrays)
        return [outs[p] for p in pos]


def _region_types(r: Region) -> list[DataType]:
    return [t.dataType for t in list(r.args) + list(r.captures)]


def _truth(be: Any, arr: Any) -> bool:
    return bool(np.asarray(be.to_numpy(arr)).reshape(-1)[0])


def _bind_if(exe: Any, op: Operation, in_types: list[ShapedType | None]):
    a: ControlFlowAttrs = op.attrs
    be = exe._backend
    runs = []
    for r, idx in zip(a.regions, a.capture_index):
        lz = _Lazy(exe, r, r.results)
        lz.prepare([in_types[i] for i in idx])
        runs.append((lz, idx, _region_types(r)))
    pred_op = op.inputs[0].operation
    fixed = None
    if pred_op.kind == "constant":
        fixed = bool(np.asarray(pred_op.attrs).reshape(-1)[0])

    def kernel(*args: Any) -> Any:
        args = args[:-1]
        p = fixed if fixed is not None else _truth(be, args[0])
        lz, idx, dts = runs[0] if p else runs[1]
        outs = lz([args[i] for i in idx], dts)
        return outs[0] if len(op.outputTensors) == 1 else tuple(outs)

    return kernel, fixed is None


def _bind_while(exe: Any, op: Operation, in_types: list[ShapedType | None]):
    a: ControlFlowAttrs = op.attrs
    be = exe._backend
    b, af = a.regions
    n = a.n_lead
    bl = _Lazy(exe, b, [b.predicate] + list(b.results))
    bl.prepare(in_types[:n] + [in_types[i] for i in a.capture_index[0]])
    al = _Lazy(exe, af, af.results)
    al.prepare([t.shapedType for t in b.results] + [in_types[i] for i in a.capture_index[1]])
    bdt, adt = _region_types(b), _region_types(af)

    def kernel(*args: Any) -> Any:
        args = args[:-1]
        state = list(args[:n])
        bcaps = [args[i] for i in a.capture_index[0]]
        acaps = [args[i] for i in a.capture_index[1]]
        while True:
            out = bl(state + bcaps, bdt)
            res = out[1:]
            if not _truth(be, out[0]):
                break
            state = al(list(res) + acaps, adt)
        return res[0] if len(op.outputTensors) == 1 else tuple(res)

    return kernel, True


def _trip(kind: str, name: str | None, lo: int, hi: int, step: int) -> range:
    if step == 0:
        raise op_error(GraphError, kind, "step", "a nonzero step", 0, name)
    return range(lo, hi, step)


def _bind_for(exe: Any, op: Operation, in_types: list[ShapedType | None]):
    a: ControlFlowAttrs = op.attrs
    be = exe._backend
    (r,) = a.regions
    nargs = len(op.outputTensors)
    n = a.n_lead - nargs  # the count or the three bounds, then the initial arguments
    lz = _Lazy(exe, r, r.results)
    lz.prepare([ShapedType([], r.args[0].dataType)] + in_types[n:n + nargs]
               + [in_types[i] for i in a.capture_index[0]])
    dts = _region_types(r)
    npdt = r.args[0].dataType.numpy_dtype
    lead_ops = [t.operation for t in op.inputs[:n]]
    index_cache: dict[int, Any] = {}

    def indices(vals: list[int]) -> range:
        if a.form == "count":
            return range(max(0, vals[0]))
        return _trip("for_", op.name, *vals)

    def index(i: int) -> Any:
        t = index_cache.get(i)
        if t is None:
            t = index_cache[i] = be.from_numpy(np.asarray(i, dtype=npdt))
        return t

    fixed = None
    if all(o.kind == "constant" for o in lead_ops):
        fixed = indices([int(np.asarray(o.attrs).reshape(-1)[0]) for o in lead_ops])
        for i in fixed:  # device scalars made now: a CUDA graph capture may replay them
            index(i)

    def kernel(*args: Any) -> Any:
        args = args[:-1]
        rng = fixed if fixed is not None else indices(
            [int(np.asarray(be.to_numpy(x)).reshape(-1)[0]) for x in args[:n]])
        state = list(args[n:n + nargs])
        caps = [args[i] for i in a.capture_index[0]]
        for i in rng:
            state = lz([index(i)] + state + caps, dts)
        return state[0] if nargs == 1 else tuple(state)

    return kernel, fixed is None


def _bind_dependency(exe: Any, op: Operation, in_types: list[ShapedType | None]):
    n = op.attrs.n_results

    def kernel(*args: Any) -> Any:
        return args[0] if n == 1 else tuple(args[:n])

    return kernel, False


def _bind_call(exe: Any, op: Operation, in_types: list[ShapedType | None]):
    a: CallAttrs = op.attrs
    cd = exe.options.get("compilationDescriptor")
    callables = getattr(cd, "callables", None) or {}
    callee = callables.get(a.symbolName)
    if callee is None:
        raise op_error(GraphError, "compile", "compilationDescriptor", "callables with "
                       f"symbol {a.symbolName!r} (an Executable), used by call "
                       f"({op.name or op.id})", sorted(callables) if callables else None)
    from ..runtime.executable import Executable

    if not isinstance(callee, Executable):
        raise op_error(GraphError, "compile", f"callables[{a.symbolName!r}]", "an Executable",
                       type(callee).__name__)
    ftypes = [st for _, st in callee._feed_slots]
    if len(ftypes) != len(op.inputs):
        raise op_error(GraphError, "call", "inputTensors", f"{len(ftypes)} tensors (the "
                       f"feeds of {a.symbolName!r})", len(op.inputs), op.name)
    for i, (st, ty) in enumerate(zip(ftypes, in_types)):
        if ty is None or ty.dataType != st.dataType or (ty.is_static and ty.shape != st.shape):
            raise op_error(GraphError, "call", f"inputTensors[{i}]", f"{st!r} (feed {i} of "
                           f"{a.symbolName!r})", ty, op.name)
    got = [ShapedType(callee._types[t].shape, t.dataType) if callee._types.get(t) is not None
           else t.shapedType for t in callee.targetTensors]
    for i, (st, want) in enumerate(zip(got, a.outputTypes)):
        if st.dataType != want.dataType or st.shape != want.shape:
            raise op_error(GraphError, "call", f"outputTypes[{i}]", f"{st!r} (target {i} of "
                           f"{a.symbolName!r})", want, op.name)
    if len(got) != len(a.outputTypes):
        raise op_error(GraphError, "call", "outputTypes", f"{len(got)} types (the targets of "
                       f"{a.symbolName!r})", len(a.outputTypes), op.name)
    opts = {k: v for k, v in exe.options.items() if k not in ("cuda_graph",)}
    sub = Executable(callee.graph, dict(zip(callee.feedTensors, ftypes)),
                     list(callee.targetTensors), list(callee._target_ops), exe.device,
                     cuda_graph=False, **opts)
    n = len(op.outputTensors)

    def kernel(*args: Any) -> Any:
        outs = sub._execute(list(args[:-1]))
        return outs[0] if n == 1 else tuple(outs)

    return kernel, bool(getattr(sub, "_host_sync", False))


def _register_kernels() -> None:
    from ..runtime.executable import BOUND_KERNELS

    BOUND_KERNELS.update({"if_": _bind_if, "while_": _bind_while, "for_": _bind_for,
                          "controlDependency": _bind_dependency, "call": _bind_call})


_register_kernels()
