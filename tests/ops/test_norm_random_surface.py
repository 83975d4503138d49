"""The normalization / random / memory surface of issue 17: every Swift base name of Apple's
MPSGraphNormalizationOps and MPSGraphRandomOps headers, and MPSGraphMemoryOps'
variableFromTensor and complexConstant, is a method of mg.Graph, called as API.md says (the
first argument positional, every other Swift label a parameter).

The rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/, so that the test runs without
the shared folder); when the shared file is present, the copy must match it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import mpsgraph as mg
from helpers import api_rows, swift_base

HERE = Path(__file__).resolve().parent
COPY = HERE.parent / "data" / "MPSGRAPH_API_norm_random.tsv"
SHARED = HERE.parents[1] / ".." / "shared" / "MPSGRAPH_API.tsv"
MEMORY = ("variableFromTensor", "complexConstant")


def _mine(r: dict) -> bool:
    return r["header"] in ("MPSGraphNormalizationOps", "MPSGraphRandomOps") or (
        r["header"] == "MPSGraphMemoryOps" and _base(r["swift_signature"]) in MEMORY)


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: _mine(r))


_base = swift_base


def test_the_copy_matches_the_shared_list():
    rows = _rows(COPY)
    assert len(rows) == 27
    if not SHARED.exists():
        pytest.skip("../shared/MPSGRAPH_API.tsv is not here")
    assert rows == _rows(SHARED)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_swift_base_name_is_a_graph_method(row):
    name = _base(row["swift_signature"])
    fn = getattr(mg.Graph, name, None)
    assert callable(fn), f"mg.Graph has no method {name!r}"
    params = list(inspect.signature(fn).parameters.values())[1:]
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    names = {p.name for p in params}
    labels = row["swift_signature"].split("(", 1)[1].rstrip(")").split(":")[:-1]
    first = labels[0]
    if first.startswith("with") and first not in ("withSeed", "withShape", "withShapeTensor",
                                                  "withIncomingGradientTensor"):
        # a first label that differs between overloads (withCounterLow:) is a keyword
        assert first[4].lower() + first[5:] in names, (name, first)
    for label in labels[1:]:
        if label not in ("_", "name"):
            assert label in names, (name, label, sorted(names))


def test_descriptor_and_enums_are_public():
    d = mg.RandomOpDescriptor.descriptorWithDistribution(mg.RandomDistribution.normal,
                                                         mg.float16)
    assert (d.distribution, d.dataType) == (mg.RandomDistribution.normal, mg.float16)
    assert [m.name for m in mg.RandomDistribution] == ["uniform", "normal", "truncatedNormal"]
    assert [m.name for m in mg.RandomNormalSamplingMethod] == ["invCDF", "boxMuller"]
    for n in ("RandomOpDescriptor", "RandomDistribution", "RandomNormalSamplingMethod"):
        assert n in mg.__all__
