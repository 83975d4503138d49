"""Sphinx configuration of the mpsgraph reference (build: sphinx-build -W -b html docs OUT).

Why Sphinx with autodoc (rather than MkDocs with mkdocstrings): the docstrings are the single
source, and autodoc imports the real package, so the pages list exactly the methods that exist
(the arithmetic family's 77 methods are generated from a table at import time, which a static
source parser would not see); it needs nothing outside the Python ecosystem, fails the build on
any warning with -W, and its `autodoc-process-docstring` hook lets us add each method's Swift
signatures from MPSGRAPH_API.tsv without repeating them in the code. docs/semantics.md stays
Markdown (it is read on the repository too) and is rendered with markdown-it-py.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SRC = DOCS.parent / "src"
if (SRC / "mpsgraph").is_dir():  # a checkout or an unpacked sdist: document this source
    sys.path.insert(0, str(SRC))
sys.path.insert(0, str(DOCS))

import _apigen  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

import mpsgraph  # noqa: E402

project = "mpsgraph"
author = "The mpsgraph maintainers"
copyright = "2026, The mpsgraph maintainers"  # noqa: A001
release = version = mpsgraph.__version__

extensions = ["sphinx.ext.autodoc"]
default_role = "literal"  # the docstrings write `name` for code, as in Markdown
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_class_signature = "separated"
exclude_patterns = ["_build", "examples", "README.md"]
templates_path: list[str] = []
html_theme = "alabaster"
html_title = f"mpsgraph {release}"
html_theme_options = {"description": "Apple's MPSGraph, portable", "page_width": "1100px",
                      "sidebar_width": "260px"}
suppress_warnings: list[str] = []

_apigen.generate()
_TABLE = _apigen.swift_signatures()
_SECTIONS = _apigen.semantics_sections()
_MD = MarkdownIt("commonmark", {"html": False}).enable("table")


def _render(app, what, name, obj, options, lines):
    """Docstrings are written in Markdown (`code`, indented code blocks, lists; a trailing
    `::` as in reStructuredText is read as `:`): render them with markdown-it-py, so that no
    docstring style trips `-W`; then append each Graph method's Swift signature(s) and the
    semantics sections that name it (reStructuredText, for the cross-references)."""
    text = re.sub(r"::$", ":", "\n".join(lines), flags=re.M)
    html = _MD.render(text) if text.strip() else ""
    lines[:] = ([".. raw:: html", ""] + ["   " + ln for ln in html.splitlines()] + [""]
                if html else [])
    if what != "method":
        return
    owner = name.rsplit(".", 2)
    if len(owner) == 3 and (owner[1].endswith("Ops") or owner[1] == "Graph"):
        lines.extend(_apigen.swift_lines(owner[2], _TABLE, _SECTIONS))


def setup(app):
    app.connect("autodoc-process-docstring", _render)
    return {"parallel_read_safe": True}
