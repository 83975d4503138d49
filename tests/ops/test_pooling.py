"""maxPooling2D, avgPooling2D and their gradient ops, against plain-NumPy loop references
(float64, one output position at a time), torch's pooling where its conventions coincide,
central finite differences of the forward graph, and the bad-input errors."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect_named

L = mg.TensorNamedDataLayout
PS = mg.PaddingStyle
Desc = mg.Pooling2DOpDescriptor
STYLES = ["explicit", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER"]


# ------------------------------------------------------------------ NumPy references
def out_size(n, k, s, d, style, pb, pe, ceil):
    """(out, pad_before, pad_after) along one axis, written out independently."""
    ke = d * (k - 1) + 1
    if style in ("TF_SAME", "ONNX_SAME_LOWER"):
        out = -(-n // s)
        total = max((out - 1) * s + ke - n, 0)
        small, big = total // 2, total - total // 2
        return (out, small, big) if style == "TF_SAME" else (out, big, small)
    if style == "TF_VALID":
        pb = pe = 0
    span = n + pb + pe - ke
    assert span >= 0
    if not ceil:
        return span // s + 1, pb, pe
    out = -(-span // s) + 1
    if (out - 1) * s >= n + pb:  # the last window must start inside input or left padding
        out -= 1
    return out, pb, pe


def windows(h, w, kh, kw, s, d, pads, out_hw):
    """For each output (i, j): the list of (row, col) of its taps in window order."""
    pt, pb, pl, pr = pads
    return {(i, j): [(i * s[0] - pt + p * d[0], j * s[1] - pl + q * d[1])
                     for p in range(kh) for q in range(kw)]
            for i in range(out_hw[0]) for j in range(out_hw[1])}


def pool_ref(x, kind, kh, kw, s, d, pads, out_hw, include_pad=False):
    n, c, h, w = x.shape
    pt, pb, pl, pr = pads
    y = np.zeros((n, c, *out_hw))
    for (i, j), taps in windows(h, w, kh, kw, s, d, pads, out_hw).items():
        inside = [(r, q) for r, q in taps if 0 <= r < h and 0 <= q < w]
        if kind == "max":
            y[:, :, i, j] = (np.max([x[:, :, r, q] for r, q in inside], axis=0) if inside
                             else -np.inf)
            continue
        cnt = (sum(1 for r, q in taps if -pt <= r < h + pb and -pl <= q < w + pr)
               if include_pad else len(inside))
        tot = sum(x[:, :, r, q] for r, q in inside) if inside else 0.0
        y[:, :, i, j] = tot / cnt if cnt else 0.0
    return y


def pool_grad_ref(dy, x, kind, kh, kw, s, d, pads, include_pad=False):
    n, c, h, w = x.shape
    pt, pb, pl, pr = pads
    dx = np.zeros(x.shape)
    for (i, j), taps in windows(h, w, kh, kw, s, d, pads, dy.shape[2:]).items():
        inside = [(r, q) for r, q in taps if 0 <= r < h and 0 <= q < w]
        if kind == "max":
            for a in range(n):
                for b in range(c):
                    vals = [x[a, b, r, q] for r, q in inside]
                    if not vals:
                        continue
                    m = np.max(vals)
                    k = next(t for t, v in enumerate(vals) if v == m or np.isnan(v))
                    dx[a, b, inside[k][0], inside[k][1]] += dy[a, b, i, j]
            continue
        cnt = (sum(1 for r, q in taps if -pt <= r < h + pb and -pl <= q < w + pr)
               if include_pad else len(inside))
        for r, q in inside:
            dx[:, :, r, q] += dy[:, :, i, j] / cnt
    return dx


class Case:
    """One pooling configuration: canonical NCHW float64 data, descriptor, expected sizes."""

    def __init__(self, rng, style="explicit", layout="NCHW", k=(3, 2), s=(2, 1), d=(1, 1),
                 pads=(1, 0, 1, 1), ceil=False, include_pad=False, hw=(7, 6), n=2, c=3,
                 distinct=True):
        self.layout = layout
        self.desc = Desc(kernelWidth=k[1], kernelHeight=k[0], strideInX=s[1], strideInY=s[0],
                         dilationRateInX=d[1], dilationRateInY=d[0], paddingLeft=pads[2],
                         paddingRight=pads[3], paddingTop=pads[0], paddingBottom=pads[1],
                         paddingStyle=getattr(PS, style), dataLayout=getattr(L, layout),
                         ceilMode=ceil, includeZeroPadToAverage=include_pad)
        ho, pt, pb = out_size(hw[0], k[0], s[0], d[0], style, pads[0], pads[1], ceil)
        wo, pl, pr = out_size(hw[1], k[1], s[1], d[1], style, pads[2], pads[3], ceil)
        self.pads, self.out_hw = (pt, pb, pl, pr), (ho, wo)
        self.k, self.s, self.d, self.include_pad = k, s, d, include_pad
        size = n * c * hw[0] * hw[1]
        if distinct:  # well-separated values: no ties, finite differences are exact
            self.x = (rng.permutation(size) * 0.1 - size * 0.05).reshape(n, c, *hw)
        else:
            self.x = rng.standard_normal((n, c, *hw))
        self.dy = rng.standard_normal((n, c, ho, wo))

    def user(self, a):
        return a.transpose(0, 2, 3, 1) if self.layout == "NHWC" else a

    def canon(self, a):
        return a.transpose(0, 3, 1, 2) if self.layout == "NHWC" else a

    def ref(self, kind):
        return pool_ref(self.x, kind, *self.k, self.s, self.d, self.pads, self.out_hw,
                        self.include_pad)

    def grad_ref(self, kind, dy=None):
        return pool_grad_ref(self.dy if dy is None else dy, self.x, kind, *self.k, self.s,
                             self.d, self.pads, self.include_pad)

    def run(self, kind, dtype=mg.float32, x=None, dy=None):
        """(forward, gradient op with dy, autodiff gradient of sum), canonical float64."""
        npdt = dtype.numpy_dtype
        xs = self.user(self.x if x is None else x).astype(npdt)
        dys = self.user(self.dy if dy is None else dy).astype(npdt)
        g = mg.Graph()
        tx = g.placeholder(list(xs.shape), dtype)
        tdy = g.placeholder(list(dys.shape), dtype)
        y = getattr(g, f"{kind}Pooling2D")(tx, descriptor=self.desc)
        dx = getattr(g, f"{kind}Pooling2DGradient")(tdy, tx, descriptor=self.desc)
        ad = g.gradientForPrimaryTensor(y, [tx])[tx]
        assert y.shape == list(dys.shape) and dx.shape == list(xs.shape) == ad.shape
        out = g.run({tx: xs, tdy: dys}, [y, dx, ad])
        for t in (y, dx, ad):
            assert out[t].dataType == dtype and out[t].numpy().dtype == npdt
        return [self.canon(out[t].numpy().astype(np.float64)) for t in (y, dx, ad)]


def _sweep():
    out = []
    for style, layout, (s, d), ceil in itertools.product(
            STYLES, ["NCHW", "NHWC"], [((1, 1), (1, 1)), ((2, 3), (1, 1)), ((2, 1), (2, 2))],
            [False, True]):
        if ceil and style in ("TF_SAME", "ONNX_SAME_LOWER"):
            continue  # ceilMode changes nothing there (covered by test_ceil_mode_noop)
        out.append(pytest.param(style, layout, s, d, ceil,
                                id=f"{style}-{layout}-s{s[0]}{s[1]}-d{d[0]}-ceil{int(ceil)}"))
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("style,layout,s,d,ceil", _sweep())
def test_sweep_against_numpy_loops(rng, kind, style, layout, s, d, ceil):
    for include_pad in ([False, True] if kind == "avg" else [False]):
        c = Case(rng, style, layout, s=s, d=d, ceil=ceil, include_pad=include_pad)
        y, dx, ad = c.run(kind)
        np.testing.assert_allclose(y, c.ref(kind), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(dx, c.grad_ref(kind), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ad, c.grad_ref(kind, np.ones(c.dy.shape)), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("hw,k,s,pads,want", [
    ((5, 5), (2, 2), (2, 2), (0, 0, 0, 0), (3, 3)),    # floor would give 2
    ((6, 6), (3, 3), (2, 2), (1, 1, 1, 1), (4, 4)),    # ceil((6+2-3)/2)+1 = 4
    ((5, 5), (1, 1), (3, 3), (0, 0, 0, 0), (2, 2)),    # ceil(4/3)+1 = 3, last starts at 6 >= 5
    ((4, 4), (2, 2), (2, 2), (0, 0, 0, 0), (2, 2)),    # exact fit: same as floor
])
def test_ceil_mode_output_size(rng, hw, k, s, pads, want):
    c = Case(rng, "explicit", k=k, s=s, pads=pads, ceil=True, hw=hw)
    assert c.out_hw == want
    for kind in ("max", "avg"):
        y, dx, _ = c.run(kind)
        assert y.shape[2:] == want
        np.testing.assert_allclose(y, c.ref(kind), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(dx, c.grad_ref(kind), rtol=1e-5, atol=1e-6)


def test_ceil_mode_noop_for_same_styles(rng):
    for style in ("TF_SAME", "ONNX_SAME_LOWER"):
        a = Case(rng, style, s=(2, 2), ceil=False, hw=(7, 7))
        b = Case(rng, style, s=(2, 2), ceil=True, hw=(7, 7))
        b.x = a.x
        np.testing.assert_array_equal(a.run("avg")[0], b.run("avg")[0])


def test_against_torch_where_conventions_coincide(rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for (k, s, p, d, ceil, incl) in [((3, 3), (2, 2), (1, 1), (1, 1), False, False),
                                     ((3, 2), (2, 1), (1, 1), (1, 1), True, False),
                                     ((2, 3), (2, 2), (1, 1), (1, 1), True, True),
                                     ((3, 3), (1, 2), (0, 1), (2, 1), True, False)]:
        c = Case(rng, "explicit", k=k, s=s, d=d, pads=(p[0], p[0], p[1], p[1]), ceil=ceil,
                 include_pad=incl, hw=(8, 7), distinct=False)
        xt = torch.tensor(c.x)
        y_max, _, _ = c.run("max")
        want = F.max_pool2d(xt, k, s, p, d, ceil_mode=ceil).numpy()
        np.testing.assert_allclose(y_max, want, rtol=1e-6, atol=1e-6)
        if d == (1, 1):
            y_avg, _, _ = c.run("avg")
            want = F.avg_pool2d(xt, k, s, p, ceil_mode=ceil, count_include_pad=incl).numpy()
            np.testing.assert_allclose(y_avg, want, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ special values
def test_max_ties_send_the_gradient_to_the_first_maximum(rng):
    c = Case(rng, "explicit", k=(2, 2), s=(1, 1), pads=(0, 0, 0, 0), hw=(3, 4), n=1, c=1)
    c.x = np.array([[[[1.0, 1.0, 0.0, 2.0], [1.0, 1.0, 2.0, 2.0], [0.0, 3.0, 3.0, 2.0]]]])
    y, dx, _ = c.run("max")
    np.testing.assert_array_equal(y, c.ref("max"))
    np.testing.assert_allclose(dx, c.grad_ref("max"), rtol=1e-6)
    # window (0, 0) is all ones: its gradient lands on (0, 0), the first tap
    ones = np.ones(c.dy.shape)
    _, dx1, _ = c.run("max", dy=ones)
    np.testing.assert_array_equal(dx1[0, 0, :2, :2], [[1.0, 0.0], [0.0, 0.0]])


def test_max_propagates_nan_and_routes_its_gradient_to_it(rng):
    c = Case(rng, "explicit", k=(2, 2), s=(2, 2), pads=(0, 0, 0, 0), hw=(4, 4), n=1, c=2)
    x = c.x.copy()
    x[0, 0, 1, 1] = np.nan
    y, dx, _ = c.run("max", x=x)
    assert np.isnan(y[0, 0, 0, 0]) and np.isfinite(y[0, 0, 1, 1]) and np.isfinite(y[0, 1]).all()
    assert dx[0, 0, 1, 1] == np.float32(c.dy[0, 0, 0, 0])
    assert dx[0, 0, :2, :2].sum() == dx[0, 0, 1, 1]


def test_windows_entirely_in_the_padding(rng):
    """Paddings >= the kernel: such windows give 0 (avg), -inf (max) and no gradient."""
    c = Case(rng, "explicit", k=(1, 1), s=(1, 1), pads=(1, 1, 2, 0), hw=(2, 2), n=1, c=2)
    assert c.out_hw == (4, 4)
    for include_pad in (False, True):
        c.include_pad = include_pad
        c.desc.includeZeroPadToAverage = include_pad
        for kind in ("max", "avg"):
            y, dx, ad = c.run(kind)
            np.testing.assert_allclose(y, c.ref(kind), rtol=1e-6)
            assert (y[:, :, 0] == (-np.inf if kind == "max" else 0.0)).all()
            np.testing.assert_allclose(dx, c.grad_ref(kind), rtol=1e-6)


def test_max_with_minus_inf_source_values_keeps_the_gradient_in_the_source(rng):
    c = Case(rng, "TF_SAME", k=(3, 3), s=(1, 1), hw=(3, 3), n=1, c=1)
    c.x = np.full((1, 1, 3, 3), -np.inf)
    y, dx, _ = c.run("max")
    assert (y == -np.inf).all()
    np.testing.assert_allclose(dx, c.grad_ref("max"), rtol=1e-6)
    np.testing.assert_allclose(dx.sum(), c.dy.astype(np.float32).sum(), rtol=1e-5)


def test_zero_sized_source(rng):
    g = mg.Graph()
    x = g.placeholder([2, 3, 0, 4])
    d = Desc(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2,
             paddingStyle=PS.TF_SAME)
    y = g.maxPooling2D(x, descriptor=d)
    z = g.avgPooling2D(x, descriptor=d)
    dx = g.gradientForPrimaryTensor(z, [x])[x]
    assert y.shape == [2, 3, 0, 2]
    out = g.run({x: np.zeros((2, 3, 0, 4), np.float32)}, [y, z, dx])
    assert out[y].numpy().shape == (2, 3, 0, 2) and out[dx].numpy().shape == (2, 3, 0, 4)


@pytest.mark.parametrize("dtype", [mg.float16, mg.bFloat16])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_half_types_round_once(rng, dtype, kind):
    npdt = dtype.numpy_dtype
    c = Case(rng, "TF_SAME", "NHWC", k=(3, 3), s=(2, 2), distinct=False)
    c.x, c.dy = (a.astype(npdt).astype(np.float64) for a in (c.x, c.dy))
    got = c.run(kind, dtype)
    f32 = c.run(kind, mg.float32)
    for a, b in zip(got, f32):
        np.testing.assert_array_equal(a, b.astype(npdt).astype(np.float64))


# ------------------------------------------------------------------ finite differences
def _fd_check(rng, c, kind):
    """<u, J v> by central differences of our forward graph (float32) vs <dx(u), v>; the ops
    are linear (avg) or piecewise linear with well-separated values (max), so eps=1e-2 is
    exact up to float32 rounding."""
    g = mg.Graph()
    xs = c.user(c.x)
    tx = g.placeholder(list(xs.shape))
    exe = g.compile({tx: mg.ShapedType(list(xs.shape))},
                    [getattr(g, f"{kind}Pooling2D")(tx, descriptor=c.desc)])

    def f(x):
        return c.canon(exe.run([c.user(x).astype(np.float32)])[0].numpy().astype(np.float64))

    u = c.dy
    _, dx, _ = c.run(kind)
    for _ in range(3):
        v = rng.standard_normal(c.x.shape)
        eps = 1e-2
        jv = (f(c.x + eps * v) - f(c.x - eps * v)) / (2 * eps)
        lhs, rhs = float(np.sum(u * jv)), float(np.sum(dx * v))
        scale = float(np.sum(np.abs(dx) * np.abs(v)))
        assert abs(lhs - rhs) <= 1e-4 * scale + 1e-5, (lhs, rhs)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("style,layout,s,d,ceil,incl", [
    ("explicit", "NCHW", (2, 1), (1, 1), False, False),
    ("TF_SAME", "NHWC", (2, 2), (1, 2), False, True),
    ("ONNX_SAME_LOWER", "NCHW", (1, 1), (2, 1), False, False),
    ("explicit", "NHWC", (2, 3), (1, 1), True, True),
    ("TF_VALID", "NCHW", (1, 2), (1, 1), True, False),
])
def test_gradients_match_finite_differences_of_forward(rng, kind, style, layout, s, d, ceil,
                                                       incl):
    c = Case(rng, style, layout, s=s, d=d, ceil=ceil, include_pad=incl)
    _fd_check(rng, c, kind)


def test_second_order_avg_gradient_rule(rng):
    """avgPooling2DGradient is linear in its gradient: its rule is avgPooling2D."""
    c = Case(rng, "explicit", k=(3, 3), s=(2, 2), pads=(1, 1, 1, 1), include_pad=False)
    g = mg.Graph()
    tx = g.placeholder(list(c.x.shape))
    tdy = g.placeholder(list(c.dy.shape))
    dx = g.avgPooling2DGradient(tdy, tx, descriptor=c.desc)
    grads = g.gradientForPrimaryTensor(dx, [tdy, tx])
    out = g.run({tx: c.x.astype(np.float32), tdy: c.dy.astype(np.float32)},
                [grads[tdy], grads[tx]])
    want = pool_ref(np.ones(c.x.shape), "avg", *c.k, c.s, c.d, c.pads, c.out_hw)
    np.testing.assert_allclose(out[grads[tdy]].numpy(), want, rtol=1e-6)
    assert not out[grads[tx]].numpy().any()  # the source only supplies a shape


# ------------------------------------------------------------------ descriptor
def test_descriptor_defaults_and_swift_initialisers():
    d = Desc()
    assert (d.kernelWidth, d.kernelHeight, d.strideInX, d.strideInY) == (1, 1, 1, 1)
    assert (d.dilationRateInX, d.dilationRateInY) == (1, 1)
    assert (d.paddingLeft, d.paddingRight, d.paddingTop, d.paddingBottom) == (0, 0, 0, 0)
    assert d.paddingStyle == PS.explicit and d.dataLayout == L.NCHW
    assert d.ceilMode is False and d.includeZeroPadToAverage is False
    assert d.returnIndicesMode == 0 and d.returnIndicesDataType == mg.int32
    # init(kernelWidth:kernelHeight:strideInX:strideInY:dilationRateInX:dilationRateInY:
    #      paddingLeft:paddingRight:paddingTop:paddingBottom:paddingStyle:dataLayout:)
    full = Desc(2, 3, 4, 5, 1, 2, 6, 7, 8, 9, PS.TF_VALID, L.NHWC)
    assert (full.kernelWidth, full.kernelHeight, full.strideInX, full.strideInY) == (2, 3, 4, 5)
    assert (full.dilationRateInX, full.dilationRateInY) == (1, 2)
    assert (full.paddingLeft, full.paddingRight, full.paddingTop, full.paddingBottom) == (
        6, 7, 8, 9)
    assert full.paddingStyle == PS.TF_VALID and full.dataLayout == L.NHWC
    short = Desc(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2,
                 paddingStyle=PS.TF_SAME, dataLayout=L.NHWC)
    short.setExplicitPaddingWithPaddingLeft(1, paddingRight=2, paddingTop=3, paddingBottom=4)
    assert short.paddingStyle == PS.explicit
    assert (short.paddingLeft, short.paddingRight, short.paddingTop, short.paddingBottom) == (
        1, 2, 3, 4)
    assert "Pooling2DOpDescriptor" in mg.__all__


def test_op_keeps_its_own_copy_of_the_descriptor(rng):
    d = Desc(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
    g = mg.Graph()
    x = g.placeholder([1, 1, 4, 4])
    y = g.avgPooling2D(x, descriptor=d)
    d.kernelWidth = d.kernelHeight = 1
    d.strideInX = d.strideInY = 1
    a = rng.standard_normal((1, 1, 4, 4)).astype(np.float32)
    got = g.run({x: a}, [y])[y].numpy()
    assert got.shape == (1, 1, 2, 2)
    np.testing.assert_allclose(got, a.reshape(1, 1, 2, 2, 2, 2).mean(axis=(3, 5)), rtol=1e-6)


def test_numpy_ints_and_enum_raw_values_are_accepted(rng):
    d = Desc(kernelWidth=np.int64(2), kernelHeight=2, strideInX=np.int32(2), strideInY=2,
             paddingStyle=2, dataLayout=1, ceilMode=np.bool_(False))
    g = mg.Graph()
    y = g.maxPooling2D(g.placeholder([1, 5, 5, 3]), descriptor=d)
    assert y.shape == [1, 3, 3, 3]


# ------------------------------------------------------------------ errors
@pytest.fixture(params=[None, "mypool"], ids=["unnamed", "named"])
def name(request):
    return request.param


OPS = ["maxPooling2D", "avgPooling2D", "maxPooling2DGradient", "avgPooling2DGradient"]


def build(op, x_shape=(1, 2, 6, 6), dy_shape=None, d=None, name=None, x_dt=mg.float32,
          dy_dt=mg.float32):
    g = mg.Graph()
    d = Desc(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2) if d is None else d
    x = g.placeholder(None if x_shape is None else list(x_shape), x_dt)
    if op.endswith("Gradient"):
        dy = g.placeholder(list(dy_shape or (1, 2, 3, 3)), dy_dt)
        return getattr(g, op)(dy, x, descriptor=d, name=name)
    return getattr(g, op)(x, descriptor=d, name=name)


def _src(op):
    return "sourceTensor" if op.endswith("Gradient") else "source"


@pytest.mark.parametrize("op", OPS)
def test_error_wrong_rank(name, op):
    expect_named(mg.ShapeError, lambda: build(op, (2, 6, 6), name=name), op, name, _src(op),
           "rank-4", "rank 3")


@pytest.mark.parametrize("op", OPS)
def test_error_integer_source(name, op):
    expect_named(mg.DataTypeError, lambda: build(op, x_dt=mg.int32, dy_dt=mg.int32, name=name), op,
           name, "gradient" if op.endswith("Gradient") else "source", "float32", "int32")


@pytest.mark.parametrize("op", OPS[2:])
def test_error_gradient_dtype_mismatch(name, op):
    expect_named(mg.DataTypeError, lambda: build(op, dy_dt=mg.float16, name=name), op, name,
           "sourceTensor", "float16", "float32")


@pytest.mark.parametrize("op", OPS[2:])
def test_error_gradient_shape_mismatch(name, op):
    expect_named(mg.ShapeError, lambda: build(op, dy_shape=(1, 2, 3, 2), name=name), op, name,
           "gradient", "[1, 2, 3, 3]", "[1, 2, 3, 2]")
    expect_named(mg.ShapeError, lambda: build(op, dy_shape=(1, 3, 3, 3), name=name), op, name,
           "gradient", "[1, 2, 3, 3]")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("style", ["explicit", "TF_VALID"])
def test_error_source_smaller_than_the_kernel(name, op, style):
    d = Desc(kernelWidth=2, kernelHeight=4, dilationRateInY=3, paddingStyle=getattr(PS, style))
    expect_named(mg.ShapeError, lambda: build(op, (1, 2, 6, 6), d=d, name=name), op, name, _src(op),
           "dilated kernel extent 10", "height 6")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("prop,value,expected", [
    ("kernelWidth", 0, "an int >= 1"), ("kernelHeight", -1, "an int >= 1"),
    ("strideInX", 0, "an int >= 1"), ("dilationRateInY", 0, "an int >= 1"),
    ("paddingTop", -1, "an int >= 0"), ("strideInY", 1.5, "an int >= 1"),
    ("paddingStyle", PS.explicitOffset, "explicitOffset applies only to stencil"),
    ("dataLayout", L.OIHW, "NCHW or NHWC"), ("ceilMode", "yes", "a bool"),
    ("includeZeroPadToAverage", 2, "a bool"), ("returnIndicesMode", 9, "0..8"),
    ("returnIndicesDataType", mg.float32, "int32 or int64")])
def test_error_bad_descriptor_property(name, op, prop, value, expected):
    d = dataclasses.replace(Desc(kernelWidth=2, kernelHeight=2), **{prop: value})
    expect_named(mg.DescriptorError, lambda: build(op, d=d, name=name), op, name,
           f"descriptor.{prop}", expected)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("bad", [None, mg.Convolution2DOpDescriptor()])
def test_error_not_a_pooling_descriptor(name, op, bad):
    g = mg.Graph()
    x = g.placeholder([1, 1, 4, 4])
    args = (x, x) if op.endswith("Gradient") else (x,)
    expect_named(mg.DescriptorError, lambda: getattr(g, op)(*args, descriptor=bad, name=name), op,
           name, "descriptor", "a Pooling2DOpDescriptor")


def test_error_dynamic_shapes_checked_at_run_time():
    g = mg.Graph()
    x = g.placeholder([1, 1, -1, 4])
    y = g.maxPooling2D(x, descriptor=Desc(kernelWidth=3, kernelHeight=3))
    assert y.shape == [1, 1, -1, 2]
    assert g.run({x: np.zeros((1, 1, 5, 4), np.float32)}, [y])[y].shape == [1, 1, 3, 2]
    with pytest.raises(mg.ShapeError, match="maxPooling2D: argument 'source'"):
        g.run({x: np.zeros((1, 1, 2, 4), np.float32)}, [y])


def test_unranked_source_gives_an_unranked_result():
    g = mg.Graph()
    x = g.placeholder(None)
    y = g.avgPooling2D(x, descriptor=Desc(kernelWidth=2, kernelHeight=2, strideInX=2,
                                          strideInY=2))
    assert y.shape is None
    assert g.run({x: np.ones((1, 2, 4, 4), np.float32)}, [y])[y].shape == [1, 2, 2, 2]
