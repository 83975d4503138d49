"""Decisions of docs/semantics.md, "Resize, FFT, attention and quantization decisions (issue
21)", pinned on every CPU backend with hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg

DEVICES = ["cpu", "torch-cpu"]
L = mg.TensorNamedDataLayout
R = mg.ResizeNearestRoundingMode


def _run(g, feeds, outs, dev):
    r = g.run(feeds, outs, device=mg.Device(dev))
    return [r[o].numpy() for o in outs]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode,want", [
    (R.roundPreferCeil, [0, 1, 1, 2]), (R.roundPreferFloor, [0, 0, 1, 1]),
    (R.ceil, [0, 1, 1, 2]), (R.floor, [0, 0, 1, 1]), (R.roundToEven, [0, 0, 1, 2]),
    (R.roundToOdd, [0, 1, 1, 1])])
def test_nearest_rounding_modes_see_exact_halves(dev, mode, want):
    # direct coordinates d * 3 / 6 = 0, 0.5, 1, 1.5 for d = 0..3 (of 6)
    g = mg.Graph()
    x = g.placeholder([3], mg.float32)
    y = g.resizeNearest(x, [6], nearestRoundingMode=mode, centerResult=False)
    out = _run(g, {x: np.array([10, 11, 12], np.float32)}, [y], dev)[0]
    np.testing.assert_array_equal(out[:4], np.array(want, np.float32) + 10)


@pytest.mark.parametrize("dev", DEVICES)
def test_resize_scale_offset_is_dst_equals_src_times_scale_plus_offset(dev):
    g = mg.Graph()
    x = g.placeholder([1, 1, 1, 4], mg.float32)
    so = g.constant(np.array([1, 2, 0, 1], np.float32))
    y = g.resizeBilinear(x, [1, 4], scaleOffsetTensor=so, layout=L.NCHW)
    out = _run(g, {x: np.array([[[[0, 10, 20, 30]]]], np.float32)}, [y], dev)[0]
    # src = (dst - 1) / 2: -0.5 (clamped to 0), 0, 0.5, 1
    np.testing.assert_allclose(out.reshape(-1), [0, 0, 5, 10])


@pytest.mark.parametrize("dev", DEVICES)
def test_resize_second_order_gradient_is_the_forward(dev):
    g = mg.Graph()
    x = g.placeholder([1, 2, 3, 3], mg.float32)
    dy = g.placeholder([1, 2, 5, 4], mg.float32)
    gx = g.resizeBilinear(dy, input=x, layout=L.NCHW)
    u = g.placeholder([1, 2, 3, 3], mg.float32)
    loss = g.reductionSum(g.multiplication(gx, u), axes=None)
    ddy = g.gradientForPrimaryTensor(loss, [dy])[dy]
    fwd = g.resizeBilinear(u, [5, 4], layout=L.NCHW)
    rng = np.random.default_rng(0)
    feeds = {x: np.zeros((1, 2, 3, 3), np.float32),
             dy: rng.random((1, 2, 5, 4)).astype(np.float32),
             u: rng.random((1, 2, 3, 3)).astype(np.float32)}
    a, b = _run(g, feeds, [ddy, fwd], dev)
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_fft_gradients_refuse_complex():
    g = mg.Graph()
    x = g.placeholder([4], mg.float32)
    y = g.realToHermiteanFFT(x, [0])
    z = g.reductionSum(g.HermiteanToRealFFT(y, [0]), axes=None)  # real -> complex -> real
    with pytest.raises(mg.UnsupportedError, match="HermiteanToRealFFT"):
        g.gradientForPrimaryTensor(z, [x])


@pytest.mark.parametrize("dev", DEVICES)
def test_fft_size_scaling_inverts_real_to_hermitean(dev):
    g = mg.Graph()
    x = g.placeholder([3, 5], mg.float32)
    d = mg.FFTDescriptor(inverse=True, scalingMode=mg.FFTScalingMode.size,
                         roundToOddHermitean=True)
    z = g.HermiteanToRealFFT(g.realToHermiteanFFT(x, [0, 1]), [0, 1], descriptor=d)
    xv = np.random.default_rng(1).random((3, 5)).astype(np.float32)
    np.testing.assert_allclose(_run(g, {x: xv}, [z], dev)[0], xv, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
def test_sdpa_fully_masked_row_is_zero_and_causal_matches_torch(dev):
    torch = pytest.importorskip("torch")
    g = mg.Graph()
    q, k, v = (g.placeholder([2, 3, 4], mg.float32) for _ in range(3))
    m = g.placeholder([3, 3], mg.bool)
    y = g.scaledDotProductAttention(q, k, v, mask=m)
    c = g.scaledDotProductAttention(q, k, v, descriptor=mg.SDPADescriptor(isCausal=True))
    rng = np.random.default_rng(2)
    qv, kv, vv = (rng.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(3))
    mv = np.array([[True, False, False], [False, False, False], [True, True, True]])
    a, b = _run(g, {q: qv, k: kv, v: vv, m: mv}, [y, c], dev)
    np.testing.assert_array_equal(a[:, 1], 0)
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(t) for t in (qv, kv, vv)), is_causal=True).numpy()
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
def test_quantize_ties_to_even_saturates_and_nan_is_zero(dev):
    g = mg.Graph()
    x = g.placeholder([6], mg.float32)
    q = g.quantize(x, 1.0, 0.0, dataType=mg.DataType.int4)
    out = _run(g, {x: np.array([0.5, 1.5, 2.5, -9, 100, np.nan], np.float32)}, [q], dev)[0]
    np.testing.assert_array_equal(out.astype(np.int64), [0, 2, 2, -8, 7, 0])


def test_errors_name_the_argument():
    g = mg.Graph()
    x = g.placeholder([1, 2, 3, 4], mg.float32)
    with pytest.raises(mg.GraphError, match="'mode'"):
        g.resize(x, [2, 2], layout=L.NCHW)
    with pytest.raises(mg.GraphError, match="'layout'"):
        g.resizeBilinear(x, [2, 2], layout=L.OIHW)
    with pytest.raises(mg.DescriptorError, match="scalingMode"):
        g.fastFourierTransform(x, [3], descriptor=mg.FFTDescriptor(scalingMode=7))
    with pytest.raises(mg.GraphError, match="'scale'"):
        g.quantize(x, dataType=mg.DataType.int8)
    with pytest.raises(AttributeError, match="inverse"):
        mg.FFTDescriptor(invers=True)
