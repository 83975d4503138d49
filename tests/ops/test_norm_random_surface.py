"""The normalization / random / memory surface of issue 17: every Swift base name of Apple's
MPSGraphNormalizationOps and MPSGraphRandomOps headers, and MPSGraphMemoryOps'
variableFromTensor and complexConstant, is a method of mg.Graph, called as API.md says (the
first argument positional, every other Swift label a parameter).

The rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/, so that the test runs without
the shared folder); when the shared file is present, the copy must match it."""

from __future__ import annotations

import pytest

import mpsgraph as mg
from helpers import API_DATA, api_rows, check_api_copy, method_params, swift_base, swift_labels

COPY = API_DATA / "MPSGRAPH_API_norm_random.tsv"
MEMORY = ("variableFromTensor", "complexConstant")


def _mine(r: dict) -> bool:
    return r["header"] in ("MPSGraphNormalizationOps", "MPSGraphRandomOps") or (
        r["header"] == "MPSGraphMemoryOps" and _base(r["swift_signature"]) in MEMORY)


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: _mine(r))


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 27)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_swift_base_name_is_a_graph_method(row):
    name = _base(row["swift_signature"])
    params = method_params(name)
    names = {p.name for p in params}
    labels = swift_labels(row["swift_signature"])
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
