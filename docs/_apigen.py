"""Generates the API reference's pages before Sphinx reads them (called from conf.py).

Nothing here lists the op families: every public module of `mpsgraph.ops` found at build time
gets a page (`_generated/api/<family>.rst`) with

- the module's docstring (the family's overview, as the code says it);
- the sections of docs/semantics.md it depends on: those whose heading names the family, and
  those that mention one of its methods (in backticks);
- its example, docs/examples/<family>.py, shown with the output it printed when the docs were
  built (every example runs at build time: a failing example fails the build);
- every method of its `...Ops` mixin class, from the docstrings, each followed (by the
  `autodoc-process-docstring` hook in conf.py) by its Swift signature(s) from
  docs/MPSGRAPH_API.tsv and the semantics sections that mention it.

A new op family therefore needs no change here: a module under src/mpsgraph/ops/, a section of
docs/semantics.md titled with the family's name, and docs/examples/<family>.py.
"""

from __future__ import annotations

import csv
import importlib
import inspect
import pkgutil
import re
import sys
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parent
GEN = DOCS / "_generated"
EXAMPLES = DOCS / "examples"
SEMANTICS = DOCS / "semantics.md"
API_TSV = DOCS / "MPSGRAPH_API.tsv"

# a family whose module name is not the word its semantics headings use
ALIASES = {"rnn": ["lstm", "rnn", "recurrent"], "optimizer": ["optimizer", "adam"]}
TITLES = {"rnn": "RNN"}
# pages that are not op families (fixed), in the order of the index
CORE_PAGES = [  # (key, title, [(module, [classes] or None for the module's members)])
    ("graph", "The graph core", [("mpsgraph.graph", ["Graph", "Tensor", "Operation"])]),
    ("runtime", "Devices, executables and data",
     [("mpsgraph.runtime.device", ["Device"]), ("mpsgraph.runtime.executable", ["Executable"]),
      ("mpsgraph.runtime.tensor_data", ["TensorData"])]),
    ("types", "Types, descriptors and errors",
     [("mpsgraph.types", ["DataType", "ShapedType", "PaddingStyle", "TensorNamedDataLayout",
                          "RNNActivation", "LossReductionType"]),
      ("mpsgraph.descriptors", ["Convolution2DOpDescriptor", "LSTMDescriptor",
                                "Pooling2DOpDescriptor", "UnknownPropertyError"]),
      ("mpsgraph.errors", None)]),
    ("autodiff", "Automatic differentiation", [("mpsgraph.autodiff", ["AutodiffOps"])]),
    ("draw", "Drawing graphs", [("mpsgraph.viewer", None)]),
]


@dataclass
class Section:
    title: str
    label: str
    body: str


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def semantics_sections() -> list[Section]:
    """docs/semantics.md split at its `## ` headings."""
    text = SEMANTICS.read_text(encoding="utf-8")
    parts = re.split(r"^## +(.+)$", text, flags=re.M)
    out, seen = [], set()
    for title, body in zip(parts[1::2], parts[2::2]):
        label = "semantics-" + _slug(title)
        while label in seen:
            label += "-2"
        seen.add(label)
        out.append(Section(title.strip(), label, body))
    return out


def swift_signatures() -> dict[str, list[tuple[str, str]]]:
    """Swift base name -> [(header, Swift signature)] from MPSGRAPH_API.tsv."""
    table: dict[str, list[tuple[str, str]]] = {}
    with API_TSV.open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            sig = row["swift_signature"]
            table.setdefault(sig.split("(")[0], []).append((row["header"], sig))
    return table


def mentions(section: Section, method: str) -> bool:
    return re.search(r"`(?:g\.|graph\.)?" + re.escape(method) + r"\b", section.body) is not None


def families() -> list[str]:
    import mpsgraph.ops

    return sorted(m.name for m in pkgutil.iter_modules(mpsgraph.ops.__path__)
                  if not m.name.startswith("_"))


def ops_classes(module) -> list[type]:
    return [c for n, c in vars(module).items()
            if inspect.isclass(c) and n.endswith("Ops") and c.__module__ == module.__name__]


def public_methods(cls: type) -> list[str]:
    return [n for n, v in vars(cls).items() if not n.startswith("_") and callable(v)]


def example_file(name: str) -> str:
    """The example's file name: <family>.py, or <family>_ops.py where the family's name is a
    standard-library module's (docs/examples/random.py would shadow `random` for every script
    run from that folder)."""
    import sys

    return f"{name}_ops.py" if name in sys.stdlib_module_names else f"{name}.py"


def run_example(name: str) -> str | None:
    """Run docs/examples/<family file>.py (in this interpreter, as __main__); what it printed,
    or None when the family has no example."""
    import contextlib
    import io
    import runpy

    path = EXAMPLES / example_file(name)
    if not path.exists():
        return None
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(str(path), run_name="__main__")
    except Exception as e:
        raise RuntimeError(f"docs example {path.name} failed: {e!r}\n{buf.getvalue()}") from e
    return buf.getvalue()


def _heading(text: str, ch: str) -> str:
    return f"{text}\n{ch * len(text)}\n"


def _example_block(name: str) -> list[str]:
    output = run_example(name)
    if output is None:
        return ["*No example yet: add docs/examples/" + example_file(name) + ".*", ""]
    out_file = GEN / "api" / f"{name}.out"
    out_file.write_text(output, encoding="utf-8")
    return [_heading("Example", "-"),
            f".. literalinclude:: ../../examples/{example_file(name)}", "   :language: python", "",
            "It prints:", "", f".. literalinclude:: {name}.out", "   :language: text", ""]


def _decisions(sections: list[Section], words: list[str], methods: list[str]) -> list[str]:
    lines = []
    for s in sections:
        by_title = any(w in s.title.lower() for w in words)
        used = [m for m in methods if mentions(s, m)]
        if by_title or used:
            why = "" if by_title and not used else (
                " (mentions " + ", ".join(f"``{m}``" for m in used[:8])
                + (", ..." if len(used) > 8 else "") + ")")
            lines.append(f"- :ref:`{s.label}`{why}")
    if not lines:
        return []
    return [_heading("Decisions it depends on", "-"),
            "Where Apple's documentation is silent, `docs/semantics.md` records what we "
            "decided; these of its sections concern this family:", ""] + lines + [""]


def family_page(name: str, sections: list[Section]) -> str:
    mod = importlib.import_module(f"mpsgraph.ops.{name}")
    classes = ops_classes(mod)
    methods = [m for c in classes for m in public_methods(c)]
    header = re.search(r"MPSGraph\w+Ops(?=\.h)", mod.__doc__ or "")
    title = f"{TITLES.get(name, name.capitalize())} ops" + (f" ({header[0]}.h)" if header else "")
    words = ALIASES.get(name, [name])
    lines = [f".. _family-{name}:", "", _heading(title, "="),
             f".. automodule:: mpsgraph.ops.{name}", "   :no-members:", "",
             "Every method below is a method of :class:`mpsgraph.Graph` "
             f"({len(methods)} in this family).", ""]
    lines += _decisions(sections, words, methods)
    lines += _example_block(name)
    lines += [_heading("Methods", "-")]
    for c in classes:
        lines += [f".. autoclass:: mpsgraph.ops.{name}.{c.__name__}", "   :members:",
                  "   :undoc-members:", "   :member-order: bysource", ""]
    return "\n".join(lines)


def core_page(key: str, title: str, parts: list[tuple[str, list[str] | None]],
              sections: list[Section]) -> str:
    lines = [f".. _core-{key}:", "", _heading(title, "=")]
    methods: list[str] = []
    for m, classes in parts:
        mod = importlib.import_module(m)
        if classes is not None and len(parts) == 1:
            lines += [f".. automodule:: {m}", "   :no-members:", ""]
        for c in classes or []:
            methods += public_methods(getattr(mod, c))
    words = {"graph": ["graph model"], "autodiff": ["automatic differentiation"]}.get(key, [key])
    lines += _decisions(sections, words, methods)
    if (EXAMPLES / f"{key}.py").exists():
        lines += _example_block(key)
    lines += [_heading("Reference", "-")]
    for m, classes in parts:
        if len(parts) > 1:
            lines += [_heading(f"``{m}``", "~")]
        if classes is None:
            lines += [f".. automodule:: {m}", "   :members:", ""]
            continue
        for c in classes:
            lines += [f".. autoclass:: {m}.{c}", "   :members:", "   :member-order: bysource",
                      ""]
    return "\n".join(lines)


def semantics_page(sections: list[Section]) -> str:
    """docs/semantics.md as one page, a section per `## ` heading (with a label to link)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    head = SEMANTICS.read_text(encoding="utf-8").split("\n## ", 1)[0]
    head = re.sub(r"^# .*\n", "", head)
    lines = [".. _semantics:", "", _heading("Semantics and decisions", "="),
             "The text of ``docs/semantics.md`` (shipped in the source distribution).", "",
             ".. raw:: html", ""]
    lines += ["   " + ln for ln in md.render(head).splitlines()] + [""]
    for s in sections:
        lines += [f".. _{s.label}:", "", _heading(s.title, "-"), ".. raw:: html", ""]
        lines += ["   " + ln for ln in md.render(s.body).splitlines()] + [""]
    return "\n".join(lines)


def generate() -> None:
    (GEN / "api").mkdir(parents=True, exist_ok=True)
    sections = semantics_sections()
    (GEN / "semantics.rst").write_text(semantics_page(sections), encoding="utf-8")
    core = []
    for key, title, parts in CORE_PAGES:
        (GEN / "api" / f"{key}.rst").write_text(core_page(key, title, parts, sections),
                                                encoding="utf-8")
        core.append(f"api/{key}")
    fams = families()
    for f in fams:
        (GEN / "api" / f"{f}.rst").write_text(family_page(f, sections), encoding="utf-8")
    index = [_heading("API reference", "="),
             "Generated from the docstrings at build time: one page per op family "
             "(each module of ``mpsgraph.ops``), each with its Swift signatures, the decisions "
             "it depends on and a runnable example.", "",
             ".. toctree::", "   :maxdepth: 1", "   :caption: Core", ""]
    index += [f"   {c.split('/')[1]}" for c in core] + [""]
    index += [".. toctree::", "   :maxdepth: 1", "   :caption: Op families", ""]
    index += [f"   {f}" for f in fams] + [""]
    (GEN / "api" / "index.rst").write_text("\n".join(index), encoding="utf-8")


def swift_lines(method: str, table: dict[str, list[tuple[str, str]]],
                sections: list[Section]) -> list[str]:
    """The lines the autodoc hook appends to a method's docstring."""
    rows = table.get(method, [])
    lines = ["", ".. rubric:: Swift", ""]
    if rows:
        lines += [f"- ``{sig}`` ({header}.h)" for header, sig in rows]
    else:
        lines += ["- no method of this name in Apple's API (an mpsgraph helper or alias)"]
    used = [s for s in sections if mentions(s, method)]
    if used:
        lines += ["", "Decided in: " + ", ".join(f":ref:`{s.label}`" for s in used) + "."]
    return lines + [""]


if __name__ == "__main__":  # python docs/_apigen.py: generate without building
    sys.path.insert(0, str(DOCS.parent / "src"))
    generate()
