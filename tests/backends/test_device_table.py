"""backends/torch `device_table`: host-computed index / weight tables (resize, stencil, pooling)
uploaded once per content and device, so that a CUDA-graph capture of their kernels makes no
host-to-device copy. The caching branch is exercised on torch's "meta" device (not the CPU,
where the array is viewed, not copied); a gpu-marked test captures a resize on CUDA."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import mpsgraph as mg  # noqa: E402
from mpsgraph.backends import torch as tb  # noqa: E402

META = torch.device("meta")


def test_same_bytes_same_tensor_and_values():
    a = np.array([3, 1, 2], np.int64)
    t1 = tb.device_table(a, META)
    t2 = tb.device_table(a.copy(), META)
    assert t1 is t2 and t1.dtype == torch.int64 and tuple(t1.shape) == (3,)
    assert tb.device_table(np.array([3, 1, 4], np.int64), META) is not t1   # other content
    assert tb.device_table(a.astype(np.int32), META) is not t1              # other dtype
    assert tb.device_table(a.reshape(3, 1), META) is not t1                 # other shape
    w = tb.device_table(np.array([0.5, 0.25], np.float64), META, torch.float16)
    assert w.dtype == torch.float16
    assert tb.device_table(np.array([0.5, 0.25], np.float64), META, torch.float16) is w
    # the CPU views the array (a fresh tensor each call, the same values)
    c = tb.device_table(a, torch.device("cpu"))
    assert c.tolist() == [3, 1, 2]


def test_large_tables_are_not_kept():
    big = np.arange(tb._TABLE_MAX_BYTES // 8 + 1, dtype=np.int64)
    assert tb.device_table(big, META) is not tb.device_table(big, META)


def test_kept_tables_are_never_evicted_past_the_cap(monkeypatch):
    """A captured CUDA graph reads a kept table without a reference to it: once kept, a table
    stays; past the byte cap new ones are uploaded per call instead."""
    kept = tb.device_table(np.array([7, 7, 7], np.int64), META)
    monkeypatch.setattr(tb, "_TABLE_BYTES", tb._TABLE_MAX_TOTAL)
    fresh = np.array([9, 8, 7, 6], np.int64)
    assert tb.device_table(fresh, META) is not tb.device_table(fresh, META)
    assert tb.device_table(np.array([7, 7, 7], np.int64), META) is kept


@pytest.mark.gpu
def test_resize_executable_captures_on_cuda():
    """A nearest / bilinear resize and its gradient (index tables per axis) compile into an
    executable whose CUDA-graph capture succeeds (no 'capture failed' warning) and whose
    replays match the NumPy backend."""
    rng = np.random.default_rng(5)
    g = mg.Graph()
    x = g.placeholder([2, 5, 7, 3], name="x")
    y = g.resize(x, size=[9, 4], mode=mg.ResizeMode.nearest, centerResult=True,
                 alignCorners=False, layout=mg.TensorNamedDataLayout.NHWC)
    loss = g.reductionSum(g.multiplication(y, y), axes=[0, 1, 2, 3])
    dx = g.gradientForPrimaryTensor(loss, [x])[x]
    exe = g.compile({x: mg.ShapedType([2, 5, 7, 3], mg.float32)}, [y, dx], device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(12):  # past the calibration runs: graph replays
            feed = rng.standard_normal((2, 5, 7, 3)).astype(np.float32)
            got = [r.numpy() for r in exe.run([feed])]
    want = g.run({x: feed}, [y, dx])
    np.testing.assert_allclose(got[0], want[y].numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1], want[dx].numpy(), rtol=1e-5, atol=1e-5)
