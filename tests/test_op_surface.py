"""The whole op surface: every Swift base name of Apple's MPSGraph API (docs/MPSGRAPH_API.tsv,
a copy of ../shared/MPSGRAPH_API.tsv shipped with the docs) is a method of `mg.Graph`, except
`encode` and `runAsync`, which hand work to a Metal command buffer or queue (API.md). Python
keywords take a trailing underscore (`if` -> `if_`, API.md rule 8)."""

from __future__ import annotations

import csv
import keyword
from pathlib import Path

import pytest

import mpsgraph as mg

HERE = Path(__file__).resolve().parent
COPY = HERE.parent / "docs" / "MPSGRAPH_API.tsv"
SHARED = HERE.parents[1] / "shared" / "MPSGRAPH_API.tsv"
NOT_ON_GRAPH = {"encode", "runAsync"}


def _names(path: Path) -> set[str]:
    with open(path, newline="") as f:
        return {row["swift_signature"].split("(")[0] for row in csv.DictReader(f, delimiter="\t")}


def test_every_swift_base_name_is_a_graph_method():
    names = _names(COPY) - NOT_ON_GRAPH
    assert len(names) >= 220  # the whole list, not a family of it
    py = {n: n + "_" if keyword.iskeyword(n) else n for n in names}
    missing = sorted(n for n, p in py.items() if not callable(getattr(mg.Graph, p, None)))
    assert not missing, f"Swift base names missing on mg.Graph: {missing}"


def test_the_copy_is_the_shared_list():
    if not SHARED.exists():
        pytest.skip("../shared/MPSGRAPH_API.tsv is not beside this checkout")
    assert COPY.read_text() == SHARED.read_text()
