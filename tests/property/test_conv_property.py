"""Property-based search (hypothesis) over the convolution family: convolution2D,
convolution2DDataGradient, convolution2DWeightsGradient and their gradient rules, on every
device, against the independent float64 loops of tests/oracles/conv_f64.py.

Each example draws one whole configuration: sizes 0..small on every axis (N, C, H, W, O, kH,
kW), every padding style (explicitOffset included: it must be refused), strides, dilations,
groups (plain, grouped, depthwise with a multiplier), NCHW / NHWC, OIHW / HWIO, float32 /
float16 / bFloat16, feeds in every memory layout and container (tests/property/__init__.py),
and sometimes an inconsistent shape. Then:

- a GraphError is raised exactly when the oracle raises ValueError (plus the documented
  refusal of a kernel of spatial size 0, docs/semantics.md "Padding styles and output size");
- otherwise the op's result equals the oracle's within a tolerance relative to the sum of
  |terms| of each output element (the oracle applied to |operands|);
- the op's gradient rule (gradientForPrimaryTensor of sum(y * u)) matches the central
  difference of the oracle along a random direction: <J^T u, v> against <u, J v>.

Profiles and example counts: tests/property/__init__.py (MPSGRAPH_HYPOTHESIS=deep).
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("hypothesis")

from hypothesis import event, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mpsgraph as mg  # noqa: E402
from helpers import DEVICES  # noqa: E402
from mpsgraph.backends.numpy import convolution as np_conv  # noqa: E402
from oracles import conv_f64 as ref  # noqa: E402
from property import (  # noqa: E402
    DTYPES,
    feed_of,
    feed_recipe,
    held_values,
    make_feed,
    search_settings,
)

L = mg.TensorNamedDataLayout
PS = mg.PaddingStyle
OPS = ("forward", "data", "weights")
# relative tolerance per dtype, against the sum of |terms| of an output element. float32: the
# float32 accumulation over <= 48 terms is far below it; float16 / bFloat16: computed in float32
# and rounded once (unit roundoff 4.9e-4 / 3.9e-3), so 4x / 2.5x that
RTOL = {mg.float32: 1e-4, mg.float16: 2e-3, mg.bFloat16: 1e-2}
# and the absolute error of rounding a (sub)normal: half the smallest subnormal spacing
ATOL = {mg.float32: 1e-44, mg.float16: 6e-8, mg.bFloat16: 1e-40}
MISMATCH = ("none",) * 30 + ("channels", "out_groups", "dy_n", "dy_o", "dy_h", "dy_w")


def sized(draw, hi: int, zero_in: int = 8) -> int:
    """A size in 0..hi that is 0 about once in `zero_in` draws (and shrinks towards 0)."""
    v = draw(st.integers(0, zero_in * hi - 1))
    return 0 if v == 0 else (v - 1) % hi + 1


@st.composite
def conv_cases(draw):
    """One configuration of the family, in canonical (NCHW / OIHW) sizes."""
    c = {}
    c["style"] = draw(st.sampled_from(("explicit", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER") * 6
                                      + ("explicitOffset",)))
    c["dl"] = draw(st.sampled_from(("NCHW", "NHWC")))
    c["wl"] = draw(st.sampled_from(("OIHW", "HWIO")))
    kind = draw(st.sampled_from(("plain", "grouped", "depthwise")))
    if kind == "plain":
        g, cg, og = 1, sized(draw, 4), sized(draw, 4)
    elif kind == "grouped":
        g, cg, og = draw(st.integers(2, 3)), sized(draw, 2), sized(draw, 2)
    else:  # groups == C, one input channel per group, a channel multiplier og
        g, cg, og = sized(draw, 4), 1, sized(draw, 2)
        g = max(g, 1)
    c["groups"], c["cg"], c["og"] = g, cg, og
    c["n"] = sized(draw, 3)
    c["hw"] = (sized(draw, 7), sized(draw, 7))
    c["k"] = (sized(draw, 3, 20), sized(draw, 3, 20))  # 0 is refused (docs/semantics.md)
    c["stride"] = tuple(draw(st.sampled_from((1, 1, 2, 3))) for _ in range(2))  # (y, x)
    c["dilation"] = tuple(draw(st.sampled_from((1, 1, 2, 3))) for _ in range(2))
    c["pads"] = tuple(draw(st.integers(0, 3)) for _ in range(4))  # top, bottom, left, right
    c["mismatch"] = draw(st.sampled_from(MISMATCH))
    c["dtype"] = draw(st.sampled_from(DTYPES))
    c["seed"] = draw(st.integers(0, 2**32 - 1))
    # operand a, operand b, u; then a, b, u again for a second run of the same graph
    c["recipes"] = [draw(feed_recipe(4)) for _ in range(6)]
    c["runner"] = draw(st.sampled_from(("run", "compile")))
    # the gradient ops' outputShape: a list, a constant shape tensor, or one fed at run time
    c["shape_form"] = draw(st.sampled_from(("list",) * 5 + ("const", "fed32", "fed64")))
    # placeholders with unknown (-1) sizes on some axes (checked when the feeds arrive)
    c["dynamic"] = draw(st.sampled_from((None,) * 5 + ("some", "all")))
    c["dynamic_axes"] = tuple(draw(st.booleans()) for _ in range(8))
    # the NumPy backend's im2col batch-chunk budget (default 64 MiB): small budgets take the
    # chunked paths that only big batches reach otherwise
    c["col_bytes"] = draw(st.sampled_from((None,) * 5 + (1, 300, 5000)))
    return c


class Conv:
    """The drawn configuration, resolved: descriptor, canonical shapes of the three ops'
    operands, the oracle, and layout conversions."""

    def __init__(self, c):
        self.c = c
        g, cg, og = c["groups"], c["cg"], c["og"]
        self.groups = g
        n, (h, w), (kh, kw) = c["n"], c["hw"], c["k"]
        mm = c["mismatch"]
        self.x_shape = (n, g * cg + (mm == "channels"), h, w)
        self.w_shape = (g * og + (mm == "out_groups"), cg, kh, kw)
        self.d = mg.Convolution2DOpDescriptor(
            strideInX=c["stride"][1], strideInY=c["stride"][0],
            dilationRateInX=c["dilation"][1], dilationRateInY=c["dilation"][0], groups=g,
            paddingTop=c["pads"][0], paddingBottom=c["pads"][1], paddingLeft=c["pads"][2],
            paddingRight=c["pads"][3], paddingStyle=getattr(PS, c["style"]),
            dataLayout=getattr(L, c["dl"]), weightsLayout=getattr(L, c["wl"]))
        try:
            (ho, wo), self.pads = ref.resolve_pads(c["style"], (h, w), (kh, kw), c["stride"],
                                                   c["dilation"], c["pads"])
        except ValueError:
            (ho, wo), self.pads = (1, 1), None
        self.dy_shape = (n + (mm == "dy_n"), self.w_shape[0] + (mm == "dy_o"),
                         ho + (mm == "dy_h"), wo + (mm == "dy_w"))

    # layouts: canonical <-> user
    def data(self, a):
        return ref.nchw_to_nhwc(a) if self.c["dl"] == "NHWC" else a

    def weights(self, a):
        return ref.oihw_to_hwio(a) if self.c["wl"] == "HWIO" else a

    def user_data_shape(self, s):
        return list(self.data(np.empty(s, np.int8)).shape)

    def user_weights_shape(self, s):
        return list(self.weights(np.empty(s, np.int8)).shape)

    def oracle(self, op, a, b):
        """The op's float64 result (canonical) for canonical operands; ValueError when the
        configuration is invalid."""
        if self.pads is None:  # resolve_pads raised: re-raise its error
            ref.resolve_pads(self.c["style"], self.c["hw"], self.c["k"], self.c["stride"],
                             self.c["dilation"], self.c["pads"])
        kw = dict(stride=self.c["stride"], dilation=self.c["dilation"], pads=self.pads,
                  groups=self.groups)
        if op == "forward":
            return ref.conv2d_ref(a, b, **kw)
        if op == "data":
            return ref.conv2d_data_grad_ref(a, b, self.x_shape, **kw)
        return ref.conv2d_weights_grad_ref(a, b, self.w_shape, **kw)

    def operands(self, op):
        """(canonical shapes of the two operands, user-layout converters, result converter
        back to canonical)."""
        if op == "forward":
            return (self.x_shape, self.w_shape), (self.data, self.weights), "data"
        if op == "data":
            return (self.dy_shape, self.w_shape), (self.data, self.weights), "data"
        return (self.dy_shape, self.x_shape), (self.data, self.data), "weights"

    def build(self, g, op, pa, pb, feeds):
        """The op on placeholders pa, pb; the gradient ops' outputShape in the drawn form (a
        fed shape tensor is added to `feeds`)."""
        if op == "forward":
            return g.convolution2D(pa, pb, self.d)
        shape = (self.user_data_shape(self.x_shape) if op == "data"
                 else self.user_weights_shape(self.w_shape))
        form = self.c["shape_form"]
        if form == "const":
            shape = g.constant(np.array(shape, np.int32), dataType=mg.int32)
        elif form != "list":
            it = np.int32 if form == "fed32" else np.int64
            t = g.placeholder([4], mg.int32 if form == "fed32" else mg.int64, name="shape")
            feeds[t] = np.array(shape, it)
            shape = t
        if op == "data":
            return g.convolution2DDataGradient(pa, pb, shape, self.d)
        return g.convolution2DWeightsGradient(pa, pb, shape, self.d)


def _to_canonical(arr, conv, kind):
    if kind == "data":
        return ref.nhwc_to_nchw(arr) if conv.c["dl"] == "NHWC" else arr
    return ref.hwio_to_oihw(arr) if conv.c["wl"] == "HWIO" else arr


def _run(g, feeds, targets, device, runner):
    if runner == "run":
        out = g.run(feeds, targets, device=device)
        return [out[t] for t in targets]
    exe = g.compile({p: mg.ShapedType(list(np.shape(v)), p.dataType) for p, v in feeds.items()},
                    targets, device=device)
    return exe.run([feeds[p] for p in exe.feedTensors])


def _f64(td):
    return np.asarray(td.numpy(), np.float64)


def check_conv(op, c, device):
    """The whole property for one drawn configuration (also called by the regression tests
    with a shrunk configuration)."""
    with contextlib.ExitStack() as stack:
        if c.get("col_bytes") is not None and device == "cpu":
            stack.enter_context(mock.patch.object(np_conv, "_COL_BYTES", c["col_bytes"]))
        _check_conv(op, c, device)


def _placeholder_shape(shape, c, k):
    """The placeholder's shape: static, or with -1 on the drawn axes."""
    dyn = c.get("dynamic")
    if dyn is None:
        return list(shape)
    axes = c["dynamic_axes"][4 * k:4 * k + 4]
    return [-1 if dyn == "all" or axes[i] else s for i, s in enumerate(shape)]


def _check_conv(op, c, device):
    conv = Conv(c)
    dt = c["dtype"]
    rng = np.random.default_rng(c["seed"])
    (sa, sb), (ua, ub), out_kind = conv.operands(op)
    # user-layout feeds, and their values in canonical layout
    fa, va = make_feed(rng, ua(np.empty(sa, np.int8)).shape, dt, c["recipes"][0], device)
    fb, vb = make_feed(rng, ub(np.empty(sb, np.int8)).shape, dt, c["recipes"][1], device)
    ca, cb = _to_canonical(va, conv, "data"), _to_canonical(
        vb, conv, "data" if op == "weights" else "weights")
    try:
        want = conv.oracle(op, ca, cb)
        oracle_error = None
    except ValueError as e:
        want, oracle_error = None, e
    refused = oracle_error is not None or 0 in c["k"]  # kernel size 0: our documented refusal
    # shapes known only at run time (dynamic placeholders, a fed outputShape): errors may come
    # at run time; with dynamic placeholders there is no gradient rule (it needs static input
    # shapes), with a fed outputShape there is
    fed = op != "forward" and c["shape_form"] in ("fed32", "fed64")
    dynamic = c.get("dynamic") is not None
    late = dynamic or fed
    g = mg.Graph()
    pa = g.placeholder(_placeholder_shape(ua(np.empty(sa, np.int8)).shape, c, 0), dt, name="a")
    pb = g.placeholder(_placeholder_shape(ub(np.empty(sb, np.int8)).shape, c, 1), dt, name="b")
    feeds = {pa: fa, pb: fb}
    stage = "build"
    try:
        y = conv.build(g, op, pa, pb, feeds)
        if late:
            stage = "run"
            res = _run(g, feeds, [y], device, c["runner"])
    except mg.GraphError as e:
        assert refused, f"GraphError ({stage}) for a configuration the oracle accepts: {e}"
        event(f"refused (GraphError at {stage})")
        return
    assert not refused, f"no GraphError, but the oracle raised: {oracle_error}"
    event("computed, empty" if 0 in want.shape else "computed")
    want_user_shape = (conv.user_data_shape if out_kind == "data"
                       else conv.user_weights_shape)(want.shape)
    assert y.dataType == dt
    if late:
        assert all(s in (-1, w) for s, w in zip(y.shape, want_user_shape)), y.shape
        assert res[0].shape == want_user_shape and res[0].dataType == dt, res[0].shape
        _check_values(op, conv, dt, res[0], want, ca, cb, out_kind)
        for p, v in ((pa, va), (pb, vb)):
            np.testing.assert_array_equal(held_values(feeds[p]), v, err_msg=f"feed {p.name}")
        if dynamic:
            return
    else:
        assert y.shape == want_user_shape

    # the gradient rule: d sum(y * u) / d(a, b)
    fu, vu = make_feed(rng, want_user_shape, dt, c["recipes"][2], device)
    pu = g.placeholder(list(want_user_shape), dt, name="u")
    feeds[pu] = fu
    # (with a fed outputShape, y's build-time shape has -1s: made static first, as a user would)
    ys = g.reshape(y, shape=want_user_shape) if fed else y
    loss = g.reductionSum(g.multiplication(ys, pu))
    grads = g.gradientForPrimaryTensor(loss, [pa, pb])
    targets = [y, grads[pa], grads[pb]]
    res = _run(g, feeds, targets, device, c["runner"])
    for r, shape in zip(res, (want_user_shape, pa.shape, pb.shape)):
        assert r.shape == shape and r.dataType == dt, (r.shape, shape, r.dataType)
    for p, v in ((pa, va), (pb, vb), (pu, vu)):  # no kernel writes into the caller's data
        np.testing.assert_array_equal(held_values(feeds[p]), v, err_msg=f"feed {p.name}")
    cu = _to_canonical(vu, conv, out_kind)
    dirs = rng.standard_normal(ca.shape), rng.standard_normal(cb.shape)
    _check_values(op, conv, dt, res[0], want, ca, cb, out_kind)
    _check_gradients(op, conv, dt, res[1:], ca, cb, cu, dirs)
    # the same graph again (g.run: its cached executable) with the feeds in other layouts
    again = {p: feed_of(v, dt, c["recipes"][3 + k], device)[0]
             for k, (p, v) in enumerate(((pa, va), (pb, vb), (pu, vu)))}
    again.update({p: v for p, v in feeds.items() if p not in again})  # a fed outputShape
    out = g.run(again, targets, device=device)
    _check_values(op, conv, dt, out[y], want, ca, cb, out_kind)
    _check_gradients(op, conv, dt, [out[grads[pa]], out[grads[pb]]], ca, cb, cu, dirs)


def _check_gradients(op, conv, dt, results, ca, cb, cu, dirs):
    """<g_a, v_a> + <g_b, v_b> of the gradient rule against the central difference of the
    oracle along v."""
    ga = _to_canonical(_f64(results[0]), conv, "data")
    gb = _to_canonical(_f64(results[1]), conv, "data" if op == "weights" else "weights")
    da, db = dirs
    eps = 1e-3  # the ops are bilinear: the central difference is exact up to rounding
    num = float(np.sum(cu * (conv.oracle(op, ca + eps * da, cb + eps * db)
                             - conv.oracle(op, ca - eps * da, cb - eps * db)))) / (2 * eps)
    ana = float(np.sum(ga * da) + np.sum(gb * db))
    scale = float(np.sum(np.abs(ga * da)) + np.sum(np.abs(gb * db)))
    assert abs(num - ana) <= RTOL[dt] * scale + 1e-12, (
        f"gradient rule of {op}: <J^T u, v> = {ana!r}, central difference {num!r} "
        f"(scale {scale:.3e})")


def _check_values(op, conv, dt, result, want, ca, cb, out_kind):
    """|got - want| <= rtol * (sum of |terms|) + atol, elementwise."""
    got = _to_canonical(_f64(result), conv, out_kind)
    mag = conv.oracle(op, np.abs(ca), np.abs(cb))
    err = np.abs(got - want)
    bad = ~(err <= RTOL[dt] * mag + ATOL[dt])
    assert not bad.any(), (f"{op}: {int(bad.sum())} of {bad.size} elements off; worst at "
                           f"{np.unravel_index(np.argmax(err - RTOL[dt] * mag), err.shape)}: "
                           f"got {got[bad][:4]}, want {want[bad][:4]}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@search_settings(ci_examples=200)
@given(c=conv_cases())
def test_conv_family(op, device, c):
    check_conv(op, c, device)
