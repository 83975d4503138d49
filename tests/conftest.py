"""Shared test fixtures: the device under test (MPSGRAPH_TEST_DEVICES, default: every available
one of cpu / torch-cpu / cuda) and the gpu marker's skip."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

# the torch backend's autotuner (on by default on CUDA) is off in the tests unless one turns it
# on (tests/backends/test_autotune.py): the other tests pin the hand rules' paths (e.g. the
# cluster path's call counts); and it keeps its choices in a per-session file here, never in
# the user's cache (backends/torch/autotune.py)
os.environ.setdefault("MPSGRAPH_AUTOTUNE", "0")
os.environ.setdefault("MPSGRAPH_AUTOTUNE_CACHE",
                      os.path.join(tempfile.mkdtemp(prefix="mpsgraph-tests-"), "autotune.json"))


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test's id (reproducible, different per case)."""
    import zlib

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
