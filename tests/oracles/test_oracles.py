"""Cross-checks of the convolution oracles against each other (no mpsgraph involved).

* ``conv_f64`` (direct float64 loops of SPEC 2.4-2.8) vs ``torch_conv`` (torch autograd, float64)
  over a sweep: every padding style x stride 1, 2 x dilation 1, 2 x groups 1, 2 and depthwise.
* the gradient loops vs finite differences of the forward loop (``gradcheck``).
* the exact adjoint identities and a few hand-computed values.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

try:  # as the package tests.oracles (tests/oracles/__init__.py)
    from . import conv_f64 as cf
    from . import gradcheck as gc
    from . import torch_conv as tc
except ImportError:  # pragma: no cover - imported as a plain module
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import conv_f64 as cf
    import gradcheck as gc
    import torch_conv as tc

N = 2
H, W = 7, 6
KH, KW = 3, 2
EXPLICIT_TBLR = (1, 0, 2, 1)
# name -> (C, O, groups)
GROUPINGS = {
    "g1": (4, 6, 1),
    "g2": (4, 6, 2),
    "depthwise": (4, 8, 4),  # channel multiplier 2
}

SWEEP = [
    pytest.param(style, s, d, gname, id=f"{style}-s{s}-d{d}-{gname}")
    for style, s, d, gname in itertools.product(cf.PADDING_STYLES, (1, 2), (1, 2), GROUPINGS)
]
# Per-axis differences (stride/dilation differing between y and x), pure depthwise (O == C).
EXTRA = [
    pytest.param("explicit", (1, 2), (2, 1), (4, 4, 4), (7, 6), (3, 2), id="mixed-dw1"),
    pytest.param("TF_SAME", (2, 3), (1, 2), (4, 6, 2), (8, 7), (2, 3), id="mixed-same"),
    pytest.param("ONNX_SAME_LOWER", (3, 2), (2, 1), (3, 6, 3), (8, 5), (2, 2), id="mixed-lower"),
    pytest.param("TF_VALID", (2, 2), (1, 1), (2, 3, 1), (6, 7), (1, 1), id="k1-s2"),
]


def _rng(*key):
    # deterministic across processes (str hashes are salted)
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _case(style, stride, dilation, c, o, groups, in_hw=(H, W), k_hw=(KH, KW), n=N):
    stride = (stride, stride) if np.isscalar(stride) else tuple(stride)
    dilation = (dilation, dilation) if np.isscalar(dilation) else tuple(dilation)
    (ho, wo), pads = cf.resolve_pads(style, in_hw, k_hw, stride, dilation, EXPLICIT_TBLR)
    rng = _rng(style, stride, dilation, c, o, groups, in_hw, k_hw)
    x = rng.standard_normal((n, c, *in_hw))
    w = rng.standard_normal((o, c // groups, *k_hw))
    dy = rng.standard_normal((n, o, ho, wo))
    return x, w, dy, dict(stride=stride, dilation=dilation, pads=pads, groups=groups)


def _sweep_case(style, s, d, gname):
    c, o, groups = GROUPINGS[gname]
    return _case(style, s, d, c, o, groups)


def _extra_case(style, stride, dilation, cog, in_hw, k_hw):
    c, o, groups = cog
    return _case(style, stride, dilation, c, o, groups, in_hw, k_hw)


def _torch_kw(kw):
    return dict(stride=kw["stride"], dilation=kw["dilation"], pads_tblr=kw["pads"],
                groups=kw["groups"])


# ------------------------------------------------------------------------------------------
# 2.4 spatial arithmetic


@pytest.mark.parametrize(
    "style,size,k,s,d,explicit,expected",
    [
        ("explicit", 7, 3, 1, 1, (1, 1), (7, 1, 1)),
        ("explicit", 7, 3, 2, 1, (1, 0), (3, 1, 0)),
        ("explicit", 5, 3, 1, 2, (0, 0), (1, 0, 0)),  # k_eff = 5
        ("TF_VALID", 7, 3, 2, 1, (9, 9), (3, 0, 0)),  # paddings ignored
        ("TF_VALID", 7, 3, 1, 3, (0, 0), (1, 0, 0)),  # k_eff = 7
        ("TF_SAME", 7, 3, 2, 1, (9, 9), (4, 1, 1)),  # total 2
        ("TF_SAME", 6, 3, 2, 1, (0, 0), (3, 0, 1)),  # total 1: extra at the end
        ("ONNX_SAME_LOWER", 6, 3, 2, 1, (0, 0), (3, 1, 0)),  # extra at the beginning
        ("TF_SAME", 6, 2, 1, 1, (0, 0), (6, 0, 1)),
        ("ONNX_SAME_LOWER", 6, 2, 1, 1, (0, 0), (6, 1, 0)),
        ("TF_SAME", 5, 3, 1, 2, (0, 0), (5, 2, 2)),  # k_eff 5, total 4
        ("TF_SAME", 10, 1, 4, 1, (0, 0), (3, 0, 0)),  # total = max(-1, 0)
        ("TF_SAME", 9, 3, 3, 1, (0, 0), (3, 0, 0)),
        ("TF_SAME", 0, 3, 1, 1, (0, 0), (0, 1, 1)),  # empty input: out 0 (SPEC 2.8)
        ("ONNX_SAME_LOWER", 7, 4, 3, 1, (0, 0), (3, 2, 1)),  # total 3
    ],
)
def test_resolve_axis_known_values(style, size, k, s, d, explicit, expected):
    assert cf.resolve_axis(style, size, k, s, d, *explicit) == expected


def test_resolve_pads_two_axes():
    out, pads = cf.resolve_pads("TF_SAME", (6, 7), (3, 2), (2, 1), (1, 1), (5, 5, 5, 5))
    assert out == (3, 7)
    assert pads == (0, 1, 0, 1)
    out, pads = cf.resolve_pads("explicit", (6, 7), (3, 2), (2, 1), (1, 2), (1, 2, 3, 4))
    assert out == ((6 + 3 - 3) // 2 + 1, 7 + 7 - 3 + 1)
    assert pads == (1, 2, 3, 4)


@pytest.mark.parametrize(
    "style,size,k,s,d,explicit",
    [
        ("explicit", 2, 3, 1, 1, (0, 0)),
        ("explicit", 4, 3, 1, 2, (0, 0)),  # k_eff 5 > 4
        ("TF_VALID", 4, 3, 1, 2, (5, 5)),  # paddings do not help TF_VALID
        ("TF_VALID", 0, 1, 1, 1, (0, 0)),
        ("explicitOffset", 7, 3, 1, 1, (0, 0)),
        ("TF_SAME", 7, 3, 0, 1, (0, 0)),
        ("TF_SAME", 7, 3, 1, 0, (0, 0)),
    ],
)
def test_resolve_axis_rejects(style, size, k, s, d, explicit):
    with pytest.raises(ValueError):
        cf.resolve_axis(style, size, k, s, d, *explicit)


def test_same_out_equals_explicit_formula_with_resolved_pads():
    # The resolved SAME paddings reproduce out = ceil(in / s) through the explicit formula.
    for size, k, s, d in itertools.product(range(1, 12), range(1, 5), range(1, 5), range(1, 3)):
        for style in ("TF_SAME", "ONNX_SAME_LOWER"):
            out, pb, pe = cf.resolve_axis(style, size, k, s, d)
            assert out == -(-size // s)
            assert cf.conv_out_size(size, k, s, d, pb, pe) == out
            assert abs(pb - pe) <= 1 and pb >= 0 and pe >= 0


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_tf_same_matches_torch_padding_same():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for k_hw, dil in [((3, 2), (1, 1)), ((4, 3), (1, 2)), ((2, 2), (2, 1))]:
        x = rng.standard_normal((2, 3, 7, 6))
        w = rng.standard_normal((5, 3, *k_hw))
        _, pads = cf.resolve_pads("TF_SAME", (7, 6), k_hw, (1, 1), dil)
        ours = cf.conv2d_ref(x, w, (1, 1), dil, pads)
        ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                         padding="same", dilation=dil).numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------
# Hand-computed values


def test_forward_is_cross_correlation_without_flip():
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    w = np.array([[[[1.0, 0.0], [0.0, 0.0]]]])
    np.testing.assert_array_equal(cf.conv2d_ref(x, w), x[:, :, :2, :2])
    w = np.array([[[[0.0, 0.0], [0.0, 1.0]]]])
    np.testing.assert_array_equal(cf.conv2d_ref(x, w), x[:, :, 1:, 1:])
    # padding puts zeros before the first row/column
    w = np.array([[[[1.0, 0.0], [0.0, 0.0]]]])
    y = cf.conv2d_ref(x, w, pads=(1, 0, 1, 0))
    expected = np.zeros((1, 1, 3, 3))
    expected[0, 0, 1:, 1:] = x[0, 0, :2, :2]
    np.testing.assert_array_equal(y, expected)


def test_groups_use_their_own_channels():
    # groups=2, C=2, O=2: output 0 sees channel 0 only, output 1 channel 1 only.
    x = np.stack([np.full((2, 2), 1.0), np.full((2, 2), 10.0)])[None]
    w = np.ones((2, 1, 1, 1))
    y = cf.conv2d_ref(x, w, groups=2)
    np.testing.assert_array_equal(y[0, 0], np.full((2, 2), 1.0))
    np.testing.assert_array_equal(y[0, 1], np.full((2, 2), 10.0))


def test_data_grad_untouched_positions_are_zero():
    # 1x1 kernel, stride 2: odd rows/columns are read by no window.
    rng = np.random.default_rng(2)
    w = rng.standard_normal((3, 2, 1, 1))
    dy = rng.standard_normal((1, 3, 3, 3))
    dx = cf.conv2d_data_grad_ref(dy, w, (1, 2, 6, 5), stride=(2, 2))
    assert dx.shape == (1, 2, 6, 5)
    assert np.all(dx[:, :, 1::2, :] == 0) and np.all(dx[:, :, :, 1::2] == 0)
    np.testing.assert_allclose(dx[0, :, ::2, ::2], np.einsum("oij,oc->cij", dy[0], w[:, :, 0, 0]))


def test_layout_helpers():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4, 5))
    np.testing.assert_array_equal(cf.nhwc_to_nchw(cf.nchw_to_nhwc(a)), a)
    np.testing.assert_array_equal(cf.hwio_to_oihw(cf.oihw_to_hwio(a)), a)
    nhwc = cf.nchw_to_nhwc(a)
    assert nhwc.shape == (2, 4, 5, 3) and nhwc[1, 2, 3, 0] == a[1, 0, 2, 3]
    hwio = cf.oihw_to_hwio(a)  # a as OIHW [O=2, I=3, kH=4, kW=5]
    assert hwio.shape == (4, 5, 3, 2) and hwio[2, 3, 1, 0] == a[0, 1, 2, 3]
    np.testing.assert_array_equal(cf.nhwc_to_nchw(nhwc), a)


# ------------------------------------------------------------------------------------------
# Exact adjoint identities: <conv(x, w), dy> == <x, dgrad(dy, w)> == <w, wgrad(dy, x)>


def _check_adjoint(x, w, dy, kw):
    y = cf.conv2d_ref(x, w, **kw)
    assert y.shape == dy.shape
    dx = cf.conv2d_data_grad_ref(dy, w, x.shape, **kw)
    dw = cf.conv2d_weights_grad_ref(dy, x, w.shape, **kw)
    lhs = float(np.sum(y * dy))
    scale = float(np.sum(np.abs(y * dy))) + 1.0
    assert abs(lhs - float(np.sum(x * dx))) <= 1e-12 * scale
    assert abs(lhs - float(np.sum(w * dw))) <= 1e-12 * scale


@pytest.mark.parametrize("style,s,d,gname", SWEEP)
def test_adjoint_identity_sweep(style, s, d, gname):
    _check_adjoint(*_sweep_case(style, s, d, gname))


# ------------------------------------------------------------------------------------------
# Against torch (float64)


@pytest.mark.parametrize("style,s,d,gname", SWEEP)
def test_forward_vs_torch(style, s, d, gname):
    pytest.importorskip("torch")
    x, w, _, kw = _sweep_case(style, s, d, gname)
    np.testing.assert_allclose(cf.conv2d_ref(x, w, **kw), tc.conv2d_torch(x, w, **_torch_kw(kw)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("style,s,d,gname", SWEEP)
def test_grads_vs_torch(style, s, d, gname):
    pytest.importorskip("torch")
    x, w, dy, kw = _sweep_case(style, s, d, gname)
    dx_t, dw_t = tc.conv2d_grads_torch(x, w, dy, **_torch_kw(kw))
    np.testing.assert_allclose(cf.conv2d_data_grad_ref(dy, w, x.shape, **kw), dx_t,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cf.conv2d_weights_grad_ref(dy, x, w.shape, **kw), dw_t,
                               rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("style,stride,dilation,cog,in_hw,k_hw", EXTRA)
def test_extra_cases_vs_torch(style, stride, dilation, cog, in_hw, k_hw):
    x, w, dy, kw = _extra_case(style, stride, dilation, cog, in_hw, k_hw)
    _check_adjoint(x, w, dy, kw)
    pytest.importorskip("torch")
    np.testing.assert_allclose(cf.conv2d_ref(x, w, **kw), tc.conv2d_torch(x, w, **_torch_kw(kw)),
                               rtol=1e-12, atol=1e-12)
    dx_t, dw_t = tc.conv2d_grads_torch(x, w, dy, **_torch_kw(kw))
    np.testing.assert_allclose(cf.conv2d_data_grad_ref(dy, w, x.shape, **kw), dx_t,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cf.conv2d_weights_grad_ref(dy, x, w.shape, **kw), dw_t,
                               rtol=1e-12, atol=1e-11)


# ------------------------------------------------------------------------------------------
# Against finite differences of the forward loop


def _vjp_for(kw):
    def vjp(u, x, w):
        return (cf.conv2d_data_grad_ref(u, w, x.shape, **kw),
                cf.conv2d_weights_grad_ref(u, x, w.shape, **kw))
    return vjp


@pytest.mark.parametrize("style,s,d,gname", [
    pytest.param("TF_SAME", 2, 1, "g2", id="same-s2-g2"),
    pytest.param("ONNX_SAME_LOWER", 1, 2, "depthwise", id="lower-d2-dw"),
    pytest.param("explicit", 2, 2, "g1", id="explicit-s2-d2"),
    pytest.param("TF_VALID", 1, 1, "g1", id="valid"),
])
def test_grads_vs_check_vjp(style, s, d, gname):
    x, w, _, kw = _sweep_case(style, s, d, gname)

    def f(x_, w_):
        return cf.conv2d_ref(x_, w_, **kw)

    gc.check_vjp(f, [x, w], _vjp_for(kw), trials=2, rtol=1e-7)
    # each argument on its own too
    gc.check_vjp(f, [x, w], _vjp_for(kw), wrt=[0], trials=1, rtol=1e-7)
    gc.check_vjp(f, [x, w], _vjp_for(kw), wrt=[1], trials=1, rtol=1e-7)


@pytest.mark.parametrize("style,stride,dilation,groups", [
    ("TF_SAME", (2, 1), (1, 2), 1),
    ("ONNX_SAME_LOWER", (1, 2), (2, 1), 2),
    ("explicit", (2, 2), (1, 1), 2),
])
def test_grads_vs_numeric_vjp(style, stride, dilation, groups):
    rng = np.random.default_rng(4)
    in_hw, k_hw = (5, 4), (2, 3)
    (ho, wo), pads = cf.resolve_pads(style, in_hw, k_hw, stride, dilation, (1, 0, 0, 2))
    kw = dict(stride=stride, dilation=dilation, pads=pads, groups=groups)
    x = rng.standard_normal((1, 2, *in_hw))
    w = rng.standard_normal((2, 2 // groups, *k_hw))
    u = rng.standard_normal((1, 2, ho, wo))

    def f(x_, w_):
        return cf.conv2d_ref(x_, w_, **kw)

    dx_n, dw_n = gc.numeric_vjp(f, [x, w], u)
    dx, dw = _vjp_for(kw)(u, x, w)
    np.testing.assert_allclose(dx, dx_n, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(dw, dw_n, rtol=1e-7, atol=1e-8)


def test_check_vjp_detects_a_wrong_vjp():
    x, w, _, kw = _sweep_case("TF_SAME", 2, 1, "g1")

    def f(x_, w_):
        return cf.conv2d_ref(x_, w_, **kw)

    def wrong(u, x_, w_):
        dx, dw = _vjp_for(kw)(u, x_, w_)
        return dx, dw[:, :, ::-1, ::-1]  # flipped kernel gradient: a classic bug

    with pytest.raises(AssertionError):
        gc.check_vjp(f, [x, w], wrong, trials=1)


# ------------------------------------------------------------------------------------------
# 2.8 zero sizes


def test_zero_batch():
    rng = np.random.default_rng(5)
    x = np.zeros((0, 4, 5, 5))
    w = rng.standard_normal((6, 2, 3, 3))
    kw = dict(stride=(1, 1), dilation=(1, 1), pads=(1, 1, 1, 1), groups=2)
    y = cf.conv2d_ref(x, w, **kw)
    assert y.shape == (0, 6, 5, 5)
    dy = np.zeros((0, 6, 5, 5))
    assert cf.conv2d_data_grad_ref(dy, w, x.shape, **kw).shape == (0, 4, 5, 5)
    dw = cf.conv2d_weights_grad_ref(dy, x, w.shape, **kw)
    assert dw.shape == w.shape and np.all(dw == 0)


def test_zero_batch_vs_torch():
    pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = np.zeros((0, 4, 5, 5))
    w = rng.standard_normal((6, 2, 3, 3))
    kw = dict(stride=(2, 1), dilation=(1, 1), pads=(1, 0, 1, 1), groups=2)
    y = cf.conv2d_ref(x, w, **kw)
    np.testing.assert_array_equal(y, tc.conv2d_torch(x, w, **_torch_kw(kw)))
    dx_t, dw_t = tc.conv2d_grads_torch(x, w, np.zeros(y.shape), **_torch_kw(kw))
    np.testing.assert_array_equal(cf.conv2d_data_grad_ref(np.zeros(y.shape), w, x.shape, **kw),
                                  dx_t)
    np.testing.assert_array_equal(cf.conv2d_weights_grad_ref(np.zeros(y.shape), x, w.shape, **kw),
                                  dw_t)


def test_zero_out_channels():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 4, 4))
    w = np.zeros((0, 3, 2, 2))
    y = cf.conv2d_ref(x, w)
    assert y.shape == (2, 0, 3, 3)
    dx = cf.conv2d_data_grad_ref(np.zeros((2, 0, 3, 3)), w, x.shape)
    assert dx.shape == x.shape and np.all(dx == 0)
    assert cf.conv2d_weights_grad_ref(np.zeros((2, 0, 3, 3)), x, w.shape).shape == (0, 3, 2, 2)


def test_zero_channels_per_group():
    rng = np.random.default_rng(8)
    x = np.zeros((2, 0, 4, 4))
    w = np.zeros((4, 0, 3, 3))
    kw = dict(stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=2)
    y = cf.conv2d_ref(x, w, **kw)
    assert y.shape == (2, 4, 2, 2) and np.all(y == 0)
    dy = rng.standard_normal(y.shape)
    assert cf.conv2d_data_grad_ref(dy, w, x.shape, **kw).shape == (2, 0, 4, 4)
    assert cf.conv2d_weights_grad_ref(dy, x, w.shape, **kw).shape == (4, 0, 3, 3)


@pytest.mark.parametrize("style", ["TF_SAME", "ONNX_SAME_LOWER"])
def test_same_with_empty_spatial_input(style):
    (ho, wo), pads = cf.resolve_pads(style, (0, 5), (3, 3), (2, 1), (1, 1))
    assert (ho, wo) == (0, 5)
    x = np.zeros((1, 2, 0, 5))
    w = np.ones((3, 2, 3, 3))
    kw = dict(stride=(2, 1), dilation=(1, 1), pads=pads)
    y = cf.conv2d_ref(x, w, **kw)
    assert y.shape == (1, 3, 0, 5)
    dy = np.zeros(y.shape)
    assert cf.conv2d_data_grad_ref(dy, w, x.shape, **kw).shape == x.shape
    dw = cf.conv2d_weights_grad_ref(dy, x, w.shape, **kw)
    assert dw.shape == w.shape and np.all(dw == 0)


def test_shape_errors():
    x = np.zeros((1, 4, 5, 5))
    with pytest.raises(ValueError):
        cf.conv2d_ref(x, np.zeros((6, 3, 3, 3)))  # C != groups * Cg
    with pytest.raises(ValueError):
        cf.conv2d_ref(x, np.zeros((5, 2, 3, 3)), groups=2)  # O % groups
    with pytest.raises(ValueError):
        cf.conv2d_ref(x, np.zeros((6, 4, 7, 3)))  # kernel larger than input
    with pytest.raises(ValueError):
        cf.conv2d_data_grad_ref(np.zeros((1, 6, 4, 4)), np.zeros((6, 4, 3, 3)), x.shape)
    with pytest.raises(ValueError):
        cf.conv2d_weights_grad_ref(np.zeros((1, 6, 3, 3)), x, (6, 4, 2, 2))
