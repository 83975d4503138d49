"""The surface of issue 21: every Swift overload of Apple's MPSGraphResizeOps,
MPSGraphSampleGridOps, MPSGraphStencilOps, MPSGraphNonMaximumSuppressionOps,
MPSGraphFourierTransformOps, MPSGraphQuantizationOps and MPSGraphSparseOps headers, and
scaledDotProductAttention, is a method of mg.Graph whose keywords are the Swift labels (API.md
rules 8-10). The rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/); when the shared
file is present, the copy must match it."""

from __future__ import annotations

import inspect

import pytest

import mpsgraph as mg
from helpers import API_DATA, api_rows, check_api_copy, swift_base, swift_labels

COPY = API_DATA / "MPSGRAPH_API_signal.tsv"
HEADERS = {"MPSGraphResizeOps", "MPSGraphSampleGridOps", "MPSGraphStencilOps",
           "MPSGraphNonMaximumSuppressionOps", "MPSGraphFourierTransformOps",
           "MPSGraphQuantizationOps", "MPSGraphSparseOps"}
# labels that are the first (positional) argument, or spelled otherwise in Python
FIRST = {"_", "withGradientTensor", "withSourceTensor", "withBoxesTensor", "query",
         "sparseTensorWithDescriptor", "sparseTensorWithType"}
NOT_YET: set[str] = set()


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] in HEADERS
                    or r["swift_signature"].startswith("scaledDotProductAttention("))


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 48)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_overload_is_a_graph_method_with_itsswift_labels(row):
    sig = row["swift_signature"]
    name = _base(sig)
    if name in NOT_YET:
        pytest.xfail(f"{name} is not implemented yet")
    fn = getattr(mg.Graph, name, None)
    assert callable(fn), name
    params = inspect.signature(fn).parameters
    labels = swift_labels(sig)
    for lab in labels[1:] if labels[0] in FIRST else labels:
        if lab in ("name", "key", "value") and lab in params:
            continue
        assert lab in params, f"{sig}: label {lab!r} is not a keyword of Graph.{name}"
