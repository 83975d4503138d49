"""The arithmetic family against plain-NumPy expectations written here: every op, broadcasting,
data types (half types computed in float32 and rounded once; integers wrap; integer division
truncates), NaN rules, gradients against central finite differences of the forward graph, and
one test per kind of bad input (GraphError subclass; message names op and argument)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect, grad_check
from mpsgraph.ops.arithmetic import sum_to_shape

DT = mg.DataType
BF16 = np.dtype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------- helpers
def run(build, *arrays, dtypes=None):
    """Build `build(g, *placeholders)` on placeholders shaped and typed as `arrays`; run it."""
    g = mg.Graph()
    phs = [g.placeholder(list(a.shape), DT.from_numpy(a.dtype)) for a in arrays]
    out = build(g, *phs)
    res = g.run(dict(zip(phs, arrays)), [out])[out]
    assert res.shape == out.shape, (res.shape, out.shape)
    return res.numpy()


def rounded(a, dt):
    """float64 data rounded to `dt` (so both sides see the same inputs)."""
    return a.astype(dt)


# ---------------------------------------------------------------------------- forward
BINARY = {
    "addition": np.add, "subtraction": np.subtract, "multiplication": np.multiply,
    "division": np.divide, "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
}
UNARY = {
    "negative": np.negative, "absolute": np.abs, "square": np.square, "exponent": np.exp,
    "logarithm": np.log, "squareRoot": np.sqrt, "reciprocal": lambda x: 1 / x,
}


@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_float(rng, op, dt):
    a = rounded(rng.uniform(0.5, 2.0, (3, 4)), dt)
    b = rounded(rng.uniform(0.5, 2.0, (3, 4)) * rng.choice([-1, 1], (3, 4)), dt)
    if op == "power":
        b = rounded(rng.uniform(-2, 2, (3, 4)), dt)
    got = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    assert got.dtype == np.dtype(dt)
    # the expectation: float32 math on the same (rounded) inputs, rounded once
    want = BINARY[op](a.astype(np.float32), b.astype(np.float32)).astype(dt)
    if op == "power" and dt == np.float32:  # libm pow differs between libraries by an ulp
        np.testing.assert_allclose(got, want, rtol=2.5e-7, atol=0)
    else:
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_float(rng, op, dt):
    x = rounded(rng.uniform(0.25, 3.0, (2, 5)) * (rng.choice([-1, 1], (2, 5))
                                                   if op in ("negative", "absolute", "square",
                                                             "exponent", "reciprocal") else 1),
                dt)
    got = run(lambda g, t: getattr(g, op)(t), x)
    assert got.dtype == np.dtype(dt)
    want = UNARY[op](x.astype(np.float32)).astype(dt)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-6)


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint8, np.int64, np.uint32])
@pytest.mark.parametrize("op", ["addition", "subtraction", "multiplication", "maximum",
                                "minimum"])
def test_binary_integer_wraps(rng, op, dt):
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, (4, 5), dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, (4, 5), dtype=dt, endpoint=True)
    a[0, 0], b[0, 0] = info.max, 1  # overflow on purpose
    got = run(lambda g, x, y: getattr(g, op)(x, y), a, b)
    assert got.dtype == np.dtype(dt)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, BINARY[op](a, b).astype(dt))


@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint16])
@pytest.mark.parametrize("op", ["negative", "absolute", "square"])
def test_unary_integer(rng, op, dt):
    info = np.iinfo(dt)
    x = rng.integers(max(info.min, -100), min(info.max, 100), (3, 3), dtype=dt)
    got = run(lambda g, t: getattr(g, op)(t), x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, UNARY[op](x).astype(dt))


def test_integer_division_truncates_toward_zero_and_by_zero_is_zero():
    a = np.array([7, -7, 7, -7, 0, 5, -8, 3], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, 4, 3], np.int32)
    got = run(lambda g, x, y: g.division(x, y), a, b)
    np.testing.assert_array_equal(got, [3, -3, -3, 3, 0, 0, -2, 1])
    u = np.array([7, 200, 5], np.uint8)
    v = np.array([2, 3, 0], np.uint8)
    np.testing.assert_array_equal(run(lambda g, x, y: g.division(x, y), u, v), [3, 66, 0])


def test_float_specials():
    x = np.array([0.0, -1.0, 4.0, np.inf], np.float32)
    with np.errstate(all="ignore"):
        for op, fn in (("logarithm", np.log), ("squareRoot", np.sqrt),
                       ("reciprocal", lambda t: 1 / t)):
            np.testing.assert_array_equal(run(lambda g, t, op=op: getattr(g, op)(t), x), fn(x))
        a = np.array([1.0, -1.0, 0.0], np.float32)
        z = np.zeros(3, np.float32)
        np.testing.assert_array_equal(run(lambda g, p, q: g.division(p, q), a, z), a / z)


def test_maximum_minimum_ignore_nan():
    a = np.array([np.nan, 1.0, np.nan, 3.0], np.float32)
    b = np.array([2.0, np.nan, np.nan, -1.0], np.float32)
    np.testing.assert_array_equal(run(lambda g, x, y: g.maximum(x, y), a, b),
                                  [2.0, 1.0, np.nan, 3.0])
    np.testing.assert_array_equal(run(lambda g, x, y: g.minimum(x, y), a, b),
                                  [2.0, 1.0, np.nan, -1.0])


@pytest.mark.parametrize("sa,sb", [((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)),
                                   ((1,), (0,)), ((3, 1), (1, 4)), ((2, 1, 1, 5), (3, 1)),
                                   ((0, 3), (1, 3))])
def test_broadcasting(rng, sa, sb):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    for op in ("addition", "multiplication", "maximum", "subtraction"):
        got = run(lambda g, x, y, op=op: getattr(g, op)(x, y), a, b)
        want = BINARY[op](a, b)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        got = run(lambda g, x, y, op=op: getattr(g, op)(y, x), a, b)
        np.testing.assert_array_equal(got, BINARY[op](b, a))


def test_comparisons(rng):
    a = np.array([[1.0, np.nan, 2.0], [0.0, -1.0, 3.0]], np.float32)
    b = np.array([1.0, np.nan, 5.0], np.float32)
    for op, fn in (("equal", np.equal), ("greaterThan", np.greater)):
        got = run(lambda g, x, y, op=op: getattr(g, op)(x, y), a, b)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, fn(a, b))
    i = rng.integers(-3, 3, (4,), dtype=np.int16)
    j = rng.integers(-3, 3, (4,), dtype=np.int16)
    np.testing.assert_array_equal(run(lambda g, x, y: g.greaterThan(x, y), i, j), i > j)
    p = np.array([True, False, True])
    q = np.array([True, True, False])
    np.testing.assert_array_equal(run(lambda g, x, y: g.equal(x, y), p, q), p == q)
    np.testing.assert_array_equal(run(lambda g, x, y: g.greaterThan(x, y), p, q), p > q)
    h = rounded(rng.standard_normal(5), np.float16)
    np.testing.assert_array_equal(run(lambda g, x, y: g.greaterThan(x, y), h, h[::-1].copy()),
                                  h > h[::-1])


def test_select(rng):
    pred = rng.random((3, 1)) > 0.5
    t = rng.standard_normal((1, 4)).astype(np.float32)
    f = rng.standard_normal((3, 4)).astype(np.float32)
    got = run(lambda g, p, x, y: g.select(p, x, y), pred, t, f)
    np.testing.assert_array_equal(got, np.where(pred, t, f))
    # a numeric predicate: non-zero (NaN included) is true
    num = np.array([0.0, 2.0, np.nan, -0.0], np.float32)
    a = np.arange(4, dtype=np.int32)
    b = -np.arange(4, dtype=np.int32) - 10
    np.testing.assert_array_equal(run(lambda g, p, x, y: g.select(p, x, y), num, a, b),
                                  [-10, 1, 2, -13])
    ip = np.array([0, 3, -1, 0], np.int8)
    bf = rounded(np.array([1.5, 2.5, 3.5, 4.5]), BF16)
    bz = np.zeros(4, BF16)
    got = run(lambda g, p, x, y: g.select(p, x, y), ip, bf, bz)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), [0, 2.5, 3.5, 0])


def test_zero_size_and_scalars(rng):
    a = np.zeros((0, 3), np.float32)
    assert run(lambda g, x: g.exponent(x), a).shape == (0, 3)
    s = np.array(2.0, np.float32)
    got = run(lambda g, x: g.squareRoot(x), s)
    assert got.shape == () and got == np.float32(np.sqrt(2))


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("op,sa,sb", [
    ("addition", (2, 3), (2, 3)), ("addition", (2, 3), (3,)), ("addition", (4, 1), (1, 5)),
    ("subtraction", (3, 2), (2,)), ("subtraction", (), (2, 2)),
    ("multiplication", (2, 3), (1, 3)), ("multiplication", (2, 1, 3), (4, 1)),
    ("division", (2, 3), (3,)), ("maximum", (3, 4), (4,)), ("minimum", (3, 4), (3, 1)),
    ("power", (2, 3), (3,)),
])
def test_binary_gradients(rng, op, sa, sb):
    args = [rng.standard_normal(sa), rng.standard_normal(sb)]
    if op in ("division", "power"):
        args[0 if op == "power" else 1] = rng.uniform(0.5, 2.0, args[0 if op == "power"
                                                                   else 1].shape)
    grad_check(lambda g, a, b: getattr(g, op)(a, b), [sa, sb], rng, args=args)


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_gradients(rng, op):
    x = rng.uniform(0.5, 2.0, (3, 4)) * (rng.choice([-1, 1], (3, 4))
                                         if op in ("negative", "absolute", "square") else 1)
    grad_check(lambda g, t: getattr(g, op)(t), [(3, 4)], rng, args=[x])


def test_select_gradient(rng):
    pred = np.array([[True], [False], [True]])

    def build(g, t, f):
        return g.select(g.constant(pred, dataType=mg.bool), t, f)

    grads = grad_check(build, [(1, 4), (3, 4)], rng)
    assert grads[0].shape == (1, 4)


def test_chained_gradient_with_reuse(rng):
    # y = exp(a) * a + a / b: a is used three times (gradients summed by the walk)
    def build(g, a, b):
        return g.addition(g.multiplication(g.exponent(a), a), g.division(a, b))

    grad_check(build, [(2, 3), (2, 3)], rng,
               args=[rng.standard_normal((2, 3)), rng.uniform(1, 2, (2, 3))])


def _grads_of(build, arrays):
    g = mg.Graph()
    xs = [g.placeholder(list(a.shape)) for a in arrays]
    y = build(g, *xs)
    gr = g.gradientForPrimaryTensor(y, xs)
    out = g.run(dict(zip(xs, arrays)), [gr[x] for x in xs])
    return [out[gr[x]].numpy() for x in xs]


def test_maximum_minimum_tie_and_nan_gradients():
    a = np.array([1.0, 2.0, 3.0, np.nan, 5.0], np.float32)
    b = np.array([1.0, 5.0, 0.0, 4.0, np.nan], np.float32)
    ga, gb = _grads_of(lambda g, x, y: g.maximum(x, y), [a, b])
    np.testing.assert_array_equal(ga, [0.5, 0, 1, 0, 1])
    np.testing.assert_array_equal(gb, [0.5, 1, 0, 1, 0])
    ga, gb = _grads_of(lambda g, x, y: g.minimum(x, y), [a, b])
    np.testing.assert_array_equal(ga, [0.5, 1, 0, 0, 1])
    np.testing.assert_array_equal(gb, [0.5, 0, 1, 1, 0])


def test_absolute_and_power_gradients_at_zero():
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    (gx,) = _grads_of(lambda g, t: g.absolute(t), [x])
    np.testing.assert_array_equal(gx, [-1, 0, 1])
    a = np.array([0.0, 2.0], np.float32)
    b = np.array([2.0, 3.0], np.float32)
    ga, gb = _grads_of(lambda g, x, y: g.power(x, y), [a, b])
    np.testing.assert_allclose(ga, [0.0, 12.0])
    np.testing.assert_allclose(gb, [0.0, 8 * np.log(2)], rtol=1e-6)


def test_half_precision_gradients_have_the_input_type(rng):
    g = mg.Graph()
    a = g.placeholder([2, 3], mg.float16)
    b = g.placeholder([3], mg.float16)
    y = g.multiplication(a, b)
    gr = g.gradientForPrimaryTensor(y, [a, b])
    av = rounded(rng.standard_normal((2, 3)), np.float16)
    bv = rounded(rng.standard_normal(3), np.float16)
    out = g.run({a: av, b: bv}, [gr[a], gr[b]])
    assert out[gr[a]].numpy().dtype == np.float16
    np.testing.assert_array_equal(out[gr[a]].numpy(), np.broadcast_to(bv, (2, 3)))
    np.testing.assert_allclose(out[gr[b]].numpy(), av.astype(np.float32).sum(0), rtol=2e-3)


# ---------------------------------------------------------------------------- sum_to_shape
def test_sum_to_shape_static_and_dynamic(rng):
    g = mg.Graph()
    dy = g.placeholder([2, 4, 3])
    r1 = sum_to_shape(g, dy, [4, 1])
    r2 = sum_to_shape(g, dy, [1, 1, 3])
    r3 = sum_to_shape(g, dy, [])
    assert (r1.shape, r2.shape, r3.shape) == ([4, 1], [1, 1, 3], [])
    v = rng.standard_normal((2, 4, 3)).astype(np.float32)
    out = g.run({dy: v}, [r1, r2, r3])
    np.testing.assert_allclose(out[r1].numpy(), v.sum((0, 2))[:, None], rtol=1e-5)
    np.testing.assert_allclose(out[r2].numpy(), v.sum((0, 1), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(out[r3].numpy(), v.sum(), rtol=1e-5)
    # dynamic: x [-1, 3] + b [3]; the gradient of x is checked at run time against shapeOf(x)
    g = mg.Graph()
    x = g.placeholder([-1, 3])
    b = g.placeholder([3])
    y = g.multiplication(g.addition(x, b), g.addition(x, b))
    gr = g.gradientForPrimaryTensor(g.reductionSum(y), [x, b])
    assert gr[x].shape == [-1, 3] and gr[b].shape == [3]
    xv = rng.standard_normal((5, 3)).astype(np.float32)
    bv = rng.standard_normal(3).astype(np.float32)
    out = g.run({x: xv, b: bv}, [gr[x], gr[b]])
    np.testing.assert_allclose(out[gr[x]].numpy(), 2 * (xv + bv), rtol=1e-5)
    np.testing.assert_allclose(out[gr[b]].numpy(), (2 * (xv + bv)).sum(0), rtol=1e-5)


def test_sum_to_shape_refuses_ambiguous_dynamic():
    g = mg.Graph()
    dy = g.placeholder([2, 3])
    with pytest.raises(mg.UnsupportedError):
        sum_to_shape(g, dy, [-1, 3])


# ---------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("name", [None, "op1"])
def test_error_dtype_mismatch_names_both(name):
    g = mg.Graph()
    a = g.placeholder([2], mg.float32)
    b = g.placeholder([2], mg.float16)
    msg = expect(mg.DataTypeError, lambda: g.addition(a, b, name=name), "addition",
                 "secondaryTensor", "float32", "float16", "primaryTensor", name=name)
    assert "promotion" in msg


def test_error_shapes_not_broadcastable():
    g = mg.Graph()
    a = g.placeholder([2, 3])
    b = g.placeholder([4])
    expect(mg.ShapeError, lambda: g.multiplication(a, b), "multiplication", "secondaryTensor",
           "[4]", "[2, 3]")
    expect(mg.ShapeError, lambda: g.select(g.placeholder([2], mg.bool), a, b), "select",
           "trueTensor", "[2, 3]")


def test_error_dynamic_shapes_checked_at_run_time():
    g = mg.Graph()
    a = g.placeholder([-1, 3])
    b = g.placeholder([-1, 3])
    y = g.addition(a, b)
    assert y.shape == [-1, 3]
    ok = g.run({a: np.ones((2, 3), np.float32), b: np.ones((1, 3), np.float32)}, [y])[y]
    assert ok.shape == [2, 3]
    expect(mg.ShapeError, lambda: g.run({a: np.ones((2, 3), np.float32),
                                         b: np.ones((4, 3), np.float32)}, [y]),
           "addition", "secondaryTensor", "[4, 3]")


@pytest.mark.parametrize("op,dt", [("exponent", mg.int32), ("logarithm", mg.bool),
                                   ("reciprocal", mg.uInt8), ("negative", mg.bool),
                                   ("square", mg.bool)])
def test_error_unary_types(op, dt):
    g = mg.Graph()
    expect(mg.DataTypeError, lambda: getattr(g, op)(g.placeholder([2], dt)), op, "tensor",
           repr(dt))


@pytest.mark.parametrize("op,dt", [("addition", mg.bool), ("power", mg.int32),
                                   ("maximum", mg.bool)])
def test_error_binary_types(op, dt):
    g = mg.Graph()
    a = g.placeholder([2], dt)
    expect(mg.DataTypeError, lambda: getattr(g, op)(a, a), op, "primaryTensor", repr(dt))


def test_error_select_types():
    g = mg.Graph()
    p = g.placeholder([2], mg.bool)
    a = g.placeholder([2], mg.float32)
    b = g.placeholder([2], mg.int32)
    expect(mg.DataTypeError, lambda: g.select(p, a, b), "select", "falseTensor", "int32")


def test_error_not_a_tensor_and_other_graph():
    g = mg.Graph()
    a = g.placeholder([2])
    expect(mg.GraphError, lambda: g.addition(a, 1.0), "addition", "secondaryTensor", "float")
    other = mg.Graph().placeholder([2])
    expect(mg.GraphMismatchError, lambda: g.addition(a, other), "addition",
           "secondaryTensor")
    expect(mg.GraphMismatchError, lambda: g.exponent(other, name="e"), "exponent", "tensor",
           name="e")


def test_positional_name_is_refused():
    g = mg.Graph()
    a = g.placeholder([2])
    with pytest.raises(TypeError):
        g.addition(a, a, "nm")
