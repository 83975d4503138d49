"""`mpsgraph.draw`: a picture of a graph, for debugging (what Xcode's graph viewer is to MPSGraph).

One node per operation, labelled with its kind (the MPSGraph method name), its user `name` when
it has one, and each output's shape and dataType; one edge per input, labelled with the
argument's name. Placeholders are ellipses, variables cylinders, constants small notes; the
targets (target tensors' ops and target operations) are drawn thick on gold. The ops that each
`gradientForPrimaryTensor` / `gradients` call added are grouped in a dashed box titled with the
primary tensor.

Rendering to SVG or PNG needs Graphviz's `dot` program on the PATH (an optional system
dependency: `apt install graphviz`, `brew install graphviz`, `conda install graphviz`); without it
`draw` writes the DOT text (readable, and renderable anywhere later with `dot -Tsvg`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import Graph, Operation, Tensor

__all__ = ["draw", "to_dot", "graphviz_available"]

RENDERED = ("svg", "png", "pdf")
TEXT = ("dot", "gv")


def graphviz_available() -> bool:
    """True when Graphviz's `dot` program is on the PATH (needed for SVG/PNG)."""
    return shutil.which("dot") is not None


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type_text(t: Tensor) -> str:
    shape = t.shape
    s = "unranked" if shape is None else "[" + ", ".join("?" if d < 0 else str(d)
                                                       for d in shape) + "]"
    return f"{s} {t.dataType.name}"


def _value_text(arr: Any) -> str:
    import numpy as np

    try:
        flat = np.asarray(arr).reshape(-1)
        vals = ", ".join(f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)
                         for v in flat.tolist())
    except Exception:  # noqa: BLE001 - a label, not a computation
        return ""
    return f"= {vals}" if flat.size == 1 else f"= [{vals}]"


def _resolve(obj: Any, targetTensors: Sequence[Tensor] | None,
             targetOperations: Sequence[Operation] | None):
    """(graph, ops to draw, target op ids, fed placeholder ids) for a Graph or an Executable."""
    from .graph import Graph, Tensor
    from .runtime.executable import Executable, needed_op_ids

    if isinstance(obj, Executable):
        graph = obj.graph
        tts = list(obj.targetTensors) + list(targetTensors or [])
        tops = list(obj._target_ops) + list(targetOperations or [])
        needed = needed_op_ids(tts, tops, {t: None for t in obj.feedTensors})
        ops = [op for op in graph._ops if op.id in needed]
        fed = {t.operation.id for t in obj.feedTensors}
    elif isinstance(obj, Graph):
        graph, ops = obj, list(obj._ops)
        tts, tops = list(targetTensors or []), list(targetOperations or [])
        fed = set()
    else:
        raise TypeError(f"draw: expected an mpsgraph Graph or Executable, given "
                        f"{type(obj).__name__}")
    if isinstance(tts, Tensor):
        tts = [tts]
    targets = {t.operation.id for t in tts} | {o.id for o in tops}
    return graph, ops, targets, fed


def to_dot(obj: Graph | Any, *, targetTensors: Sequence[Tensor] | None = None,
           targetOperations: Sequence[Operation] | None = None, title: str | None = None) -> str:
    """The DOT text of a Graph (every op) or an Executable (the ops its targets need, its
    targets highlighted); `targetTensors` / `targetOperations` add highlighted targets."""
    graph, ops, targets, fed = _resolve(obj, targetTensors, targetOperations)
    drawn = {op.id for op in ops}
    lines = ["digraph mpsgraph {",
             "  graph [rankdir=TB, fontname=Helvetica, fontsize=11, nodesep=0.25, "
             "ranksep=0.35" + (f", label={_q(title)}, labelloc=t" if title else "") + "];",
             "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=Helvetica, "
             "fontsize=10];",
             "  edge [fontname=Helvetica, fontsize=8, color=gray40, arrowsize=0.6];"]

    def node(op: Operation, indent: str) -> str:
        head = op.kind + (f"\n'{op.name}'" if op.name else "")
        outs = op.outputTensors
        if len(outs) == 1:
            body = _type_text(outs[0])
            if op.kind == "constant" and getattr(op.attrs, "size", 99) <= 4:
                body = f"{_value_text(op.attrs)}  {body}"
        elif not outs and op.kind == "assign" and op.inputs and op.inputs[0] is not None:
            body = f"-> {op.inputs[0].name}"
        else:
            body = "\n".join(f"{i}: {_type_text(t)}" for i, t in enumerate(outs)) or "(no result)"
        attrs = {"label": f"{head}\n{body}", "tooltip": f"op {op.id}: {op.kind}"}
        if op.kind == "placeholder":
            attrs.update(shape="ellipse", fillcolor="#dbe9ff" if op.id in fed else "#eef3fb")
        elif op.kind == "variable":
            attrs.update(shape="cylinder", fillcolor="#e4f5e1")
        elif op.kind == "constant":
            attrs.update(shape="note", fontsize="8", fillcolor="#f4f4f4")
        elif op.kind in ("assign", "read"):
            attrs.update(fillcolor="#e4f5e1")
        if op.id in targets:
            attrs.update(fillcolor="gold", penwidth="3", color="darkorange3")
        a = ", ".join(f"{k}={_q(v) if k in ('label', 'tooltip') or not v.isidentifier() else v}"
                      for k, v in attrs.items())
        return f"{indent}op{op.id} [{a}];"

    sections = [(a, b, p, n) for (a, b, p, n) in getattr(graph, "_gradient_sections", [])]
    in_section: dict[int, int] = {}
    for k, (a, b, _p, _n) in enumerate(sections):
        for i in range(a, b):
            in_section.setdefault(i, k)
    rest = [op for op in ops if op.id not in in_section]
    if sections and rest:
        # the other ops in an invisible cluster of their own: dot keeps sibling clusters
        # apart, so no op outside a gradient's box is drawn inside it
        lines += ["  subgraph cluster_rest {", "    style=invis;"]
        lines += [node(op, "    ") for op in rest]
        lines.append("  }")
    else:
        lines += [node(op, "  ") for op in rest]
    for k, (_a, _b, primary, name) in enumerate(sections):
        members = [op for op in ops if in_section.get(op.id) == k]
        if not members:
            continue
        label = f"gradient of {primary.name}" + (f" ('{name}')" if name else "")
        lines += [f"  subgraph cluster_gradient_{k} {{",
                  f"    label={_q(label)}; style=\"dashed,rounded\"; color=purple; "
                  "fontcolor=purple;"]
        lines += [node(op, "    ") for op in members]
        lines.append("  }")
    for op in ops:
        for arg, t in zip(op.input_names, op.inputs):
            if t is None or t.operation.id not in drawn:
                continue
            src = t.operation
            lab = arg if len(src.outputTensors) == 1 else f"{arg} (:{t.index})"
            lines.append(f"  op{src.id} -> op{op.id} [label={_q(lab)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text: str, fmt: str) -> bytes:
    """Run Graphviz's `dot -T<fmt>` on `dot_text`; RuntimeError when it fails."""
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError("Graphviz's dot program is not on the PATH")
    r = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} failed: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def draw(graph_or_executable: Graph | Any, path: str | os.PathLike | None = None, *,
         format: str | None = None, targetTensors: Sequence[Tensor] | None = None,
         targetOperations: Sequence[Operation] | None = None,
         title: str | None = None) -> str:
    """Draw a Graph or an Executable; returns the path written (or the DOT text when `path`
    is None).

    The format is `format` or `path`'s suffix: `svg`, `png` or `pdf` render through Graphviz's
    `dot` program; when it is not installed the DOT text is written instead, to `path` with
    the suffix `.dot` (and a UserWarning says so); `dot`/`gv` always write DOT text.
    An Executable draws the ops its targets need, with its feeds shaded and its targets
    highlighted; a Graph draws every op, highlighting `targetTensors` / `targetOperations`.
    """
    text = to_dot(graph_or_executable, targetTensors=targetTensors,
                  targetOperations=targetOperations, title=title)
    if path is None:
        return text
    path = os.fspath(path)
    root, ext = os.path.splitext(path)
    fmt = (format or ext.lstrip(".") or "svg").lower()
    if fmt not in RENDERED + TEXT:
        raise ValueError(f"draw: argument 'format': expected one of "
                         f"{', '.join(RENDERED + TEXT)}, given {fmt!r}")
    if fmt in RENDERED and not graphviz_available():
        warnings.warn(f"draw: Graphviz's dot program is not installed; writing DOT text to "
                      f"{root}.dot instead of {fmt.upper()}", UserWarning, stacklevel=2)
        fmt, path = "dot", root + ".dot"
    if fmt in TEXT:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        data = render(text, fmt)
        with open(path, "wb") as f:
            f.write(data)
    return path


# ---------------------------------------------------------------------- `mpsgraph draw`
CLI_DESCRIPTION = (
    "Run a Python script (as __main__) and draw every "
    "mpsgraph.Graph it builds, highlighting the targets of the executables it compiles. "
    "One graph goes to OUT; several go to OUT's stem with _1, _2, ... appended. "
    "SVG/PNG need Graphviz's dot program; --format auto writes SVG when it is installed and "
    "DOT text otherwise.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("script", help="the Python script that builds the graph(s)")
    p.add_argument("--args", default="", metavar="'ARGS'",
                   help="arguments for the script, as one quoted string (its sys.argv[1:])")
    p.add_argument("-o", "--out", default=None,
                   help="output file (default: the script's name with the format's suffix)")
    p.add_argument("--format", choices=("auto",) + RENDERED + TEXT, default="auto",
                   help="auto (default): svg with Graphviz, else dot")
    p.add_argument("--each-executable", action="store_true",
                   help="draw each compiled executable (the ops its targets need) instead of "
                        "each whole graph")


class _Recorder:
    """While active, remembers every Graph constructed and every Executable compiled."""

    def __enter__(self) -> _Recorder:
        from .graph import Graph

        self.graphs: list[Graph] = []
        self.exes: dict[int, list[Any]] = {}
        self._init, self._compile = Graph.__init__, Graph.compile
        rec, init, compile_ = self, Graph.__init__, Graph.compile

        def __init__(g: Graph, *a: Any, **k: Any) -> None:
            init(g, *a, **k)
            rec.graphs.append(g)

        def compile(g: Graph, *a: Any, **k: Any) -> Any:
            exe = compile_(g, *a, **k)
            rec.exes.setdefault(id(g), []).append(exe)
            return exe

        Graph.__init__, Graph.compile = __init__, compile  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        from .graph import Graph

        Graph.__init__, Graph.compile = self._init, self._compile  # type: ignore[method-assign]


def _paths(out: str, n: int) -> Iterable[str]:
    if n == 1:
        yield out
        return
    root, ext = os.path.splitext(out)
    for i in range(1, n + 1):
        yield f"{root}_{i}{ext}"


def run_cli(args: argparse.Namespace) -> int:
    import runpy
    import shlex
    import sys

    from .cli import CommandError

    if not os.path.isfile(args.script):
        raise CommandError(f"no such script: {args.script}")
    fmt = args.format
    if fmt == "auto":
        fmt = "svg" if graphviz_available() else "dot"
    elif fmt in RENDERED and not graphviz_available():
        raise CommandError(f"--format {fmt} needs Graphviz's dot program on the PATH (apt/brew/"
                           "conda install graphviz); --format dot writes DOT text without it")
    out = args.out or os.path.splitext(os.path.basename(args.script))[0] + "." + fmt
    if os.path.splitext(out)[1].lstrip(".").lower() != fmt:
        out = os.path.splitext(out)[0] + "." + fmt
    argv = sys.argv
    sys.argv = [args.script, *shlex.split(args.args)]
    try:
        with _Recorder() as rec:
            try:
                runpy.run_path(args.script, run_name="__main__")
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise CommandError(f"{args.script} exited with status {e.code}") from None
    finally:
        sys.argv = argv
    items: list[tuple[Any, dict[str, Any], str]] = []
    for gi, g in enumerate(rec.graphs, 1):
        exes = rec.exes.get(id(g), [])
        if args.each_executable and exes:
            items += [(e, {}, f"graph {gi}, executable {ei}") for ei, e in enumerate(exes, 1)]
        elif g._ops:
            tts = [t for e in exes for t in e.targetTensors]
            tops = [o for e in exes for o in e._target_ops]
            items.append((g, {"targetTensors": tts, "targetOperations": tops}, f"graph {gi}"))
    if not items:
        raise CommandError(f"{args.script} built no mpsgraph graph")
    for (obj, kw, what), path in zip(items, _paths(out, len(items))):
        written = draw(obj, path, format=fmt, title=f"{os.path.basename(args.script)}: {what}",
                       **kw)
        print(f"{what}: {written}")
    if fmt == "dot" and args.format == "auto":
        print("(Graphviz's dot program is not installed: DOT text; render it with "
              "`dot -Tsvg FILE -o FILE.svg`)")
    return 0
