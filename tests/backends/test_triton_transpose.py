"""The Triton 2-D transpose (kernels/transpose.py) against torch, and the NHWC/HWIO
convolutions that use it (MPSGRAPH_TRITON_TRANSPOSE=1) against the default path. Outputs are
NaN-poisoned first. On the CPU the kernel runs under TRITON_INTERPRET=1."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from helpers import triton_kernels  # noqa: E402

transpose, = triton_kernels("transpose")

import mpsgraph as mg  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (64, 64), (130, 70), (9 * 7, 33), (0, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_transpose_matches_torch(shape, dtype):
    g = torch.Generator().manual_seed(hash((shape, str(dtype))) % 2**31)
    src = torch.randn(shape, generator=g).to(DEVICE, dtype)
    out = torch.full((shape[1], shape[0]), float("nan"), dtype=dtype, device=DEVICE)
    got = transpose.transpose_2d(src, out)
    assert got is out
    torch.testing.assert_close(got, src.t().contiguous(), rtol=0, atol=0)


def test_transpose_rejects_non_contiguous():
    with pytest.raises(ValueError, match="contiguous 2-D"):
        transpose.transpose_2d(torch.zeros(4, 6, device=DEVICE).t())


@pytest.mark.parametrize("k", [(3, 3), (1, 2)])
def test_nhwc_hwio_convolutions_with_the_triton_transpose(monkeypatch, k):
    """All three ops, NHWC data with HWIO weights, with and without the Triton transpose:
    the same numbers, and the kernel really ran (forward/data gradient: the weights; weights
    gradient: its result)."""
    device = "cuda" if torch.cuda.is_available() else "torch-cpu"
    if device == "torch-cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    calls = []
    real = transpose.transpose_2d
    monkeypatch.setattr(transpose, "transpose_2d",
                        lambda *a, **kw: (calls.append(1), real(*a, **kw))[1])
    rng = np.random.default_rng(7)
    N, H, W, C, O = 2, 5, 6, 3, 4
    d = mg.Convolution2DOpDescriptor(paddingStyle=mg.PaddingStyle.TF_SAME,
                                     dataLayout=mg.TensorNamedDataLayout.NHWC,
                                     weightsLayout=mg.TensorNamedDataLayout.HWIO)
    g = mg.Graph()
    x = g.placeholder([N, H, W, C], name="x")
    w = g.placeholder([*k, C, O], name="w")
    dy = g.placeholder([N, H, W, O], name="dy")
    outs = [g.convolution2D(x, w, d),
            g.convolution2DDataGradient(dy, w, [N, H, W, C], d),
            g.convolution2DWeightsGradient(dy, x, [*k, C, O], d)]
    feeds = {x: rng.standard_normal((N, H, W, C)).astype(np.float32),
             w: rng.standard_normal((*k, C, O)).astype(np.float32),
             dy: rng.standard_normal((N, H, W, O)).astype(np.float32)}
    want = g.run(feeds, outs, device=device)
    assert calls == []
    monkeypatch.setenv("MPSGRAPH_TRITON_TRANSPOSE", "1")
    got = g.run(feeds, outs, device=device)
    # one transpose per op and run of the plan (on CUDA a run may execute it more than once:
    # its warm-up before a graph capture)
    assert calls and len(calls) % 3 == 0, calls
    ref = g.run(feeds, outs)  # NumPy
    for t in outs:
        np.testing.assert_allclose(got[t].numpy(), want[t].numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[t].numpy(), ref[t].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k,pads", [((3, 3), (1, 1, 1, 1)), ((2, 1), (0, 1, 0, 0))])
def test_cudnn_tt_path_equals_cudnn_path(monkeypatch, k, pads):
    """The tuner's "cudnn_tt" candidate (the same convolution with the Triton weight transpose)
    gives the numbers of the "cudnn" path for all three ops (NHWC data, HWIO weights, an
    asymmetric padding too), and really runs the kernel (one transpose each); "cudnn" itself
    does not. On the CPU through the interpreter."""
    from mpsgraph.backends.torch import convolution as C
    from mpsgraph.ops.convolution import Conv2DAttrs

    if DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("MPSGRAPH_TRITON_TRANSPOSE", raising=False)
    calls = []
    real = transpose.transpose_2d
    monkeypatch.setattr(transpose, "transpose_2d",
                        lambda *a, **kw: (calls.append(1), real(*a, **kw))[1])
    L = mg.TensorNamedDataLayout
    rng = np.random.default_rng(11)
    N, H, W, Ci, O = 2, 5, 6, 3, 4
    x, w, dy = (torch.from_numpy(rng.standard_normal(s)).float().to(DEVICE)
                for s in ((N, H, W, Ci), (*k, Ci, O), (N, H, W, O)))

    def attrs(out_shape):
        return Conv2DAttrs(stride=(1, 1), dilation=(1, 1), pads=pads, groups=1,
                           data_layout=L.NHWC, weights_layout=L.HWIO, out_shape=out_shape)

    runs = {
        "forward": lambda p: C._forward_on(p, x, w, attrs((N, H, W, O)), None),
        "data": lambda p: C._data_grad_on(p, dy, w, attrs((N, H, W, Ci)), None),
        "weights": lambda p: C._weights_grad_on(p, dy, x, attrs((*k, Ci, O)), None),
    }
    for name, run in runs.items():
        calls.clear()
        want = run("cudnn")
        assert calls == [], name
        got = run("cudnn_tt")
        assert calls == [1], name
        assert got.shape == want.shape and got.is_contiguous(), name
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


def test_cudnn_tt_candidate_rules(monkeypatch):
    """"cudnn_tt" is a candidate on CUDA for NHWC data with HWIO weights only, and not under
    MPSGRAPH_TRITON_TRANSPOSE=0 or =1 (=1 makes every path transpose with Triton)."""
    from mpsgraph.backends.torch import convolution as C

    L = mg.TensorNamedDataLayout

    class A:  # the two attrs _paths reads besides the depthwise kernels
        def __init__(self, data, weights):
            self.data_layout, self.weights_layout = data, weights

    class FakeCuda:  # _paths reads device.type and dtype only
        dtype = torch.float32
        device = torch.device("cuda", 0)

    monkeypatch.setattr(C, "_triton_available", lambda dev: True)
    monkeypatch.delenv("MPSGRAPH_TRITON_TRANSPOSE", raising=False)
    assert "cudnn_tt" in C._paths("forward", A(L.NHWC, L.HWIO), None, FakeCuda())[0]
    assert "cudnn_tt" not in C._paths("forward", A(L.NHWC, L.OIHW), None, FakeCuda())[0]
    assert "cudnn_tt" not in C._paths("forward", A(L.NCHW, L.HWIO), None, FakeCuda())[0]
    cpu = torch.zeros(1)
    assert C._paths("forward", A(L.NHWC, L.HWIO), None, cpu)[0] == ["cudnn"]
    for v in ("0", "1"):
        monkeypatch.setenv("MPSGRAPH_TRITON_TRANSPOSE", v)
        assert "cudnn_tt" not in C._paths("forward", A(L.NHWC, L.HWIO), None, FakeCuda())[0]
