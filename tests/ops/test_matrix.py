"""matrixMultiplication against numpy.matmul written in float64: shapes with batch broadcasting,
data types (half types multiply in float32 and round once; integers), gradients summed over
broadcast batch dimensions, and bad inputs (rank < 2 is refused)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect
from oracles import gradcheck

DT = mg.DataType
BF16 = np.dtype(ml_dtypes.bfloat16)


def run(a, b):
    g = mg.Graph()
    x = g.placeholder(list(a.shape), DT.from_numpy(a.dtype))
    y = g.placeholder(list(b.shape), DT.from_numpy(b.dtype))
    z = g.matrixMultiplication(x, y)
    out = g.run({x: a, y: b}, [z])[z]
    assert out.shape == z.shape
    return out.numpy()


SHAPES = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
          ((1, 3, 4), (6, 4, 2)), ((2, 3, 0), (0, 4)), ((0, 3, 4), (4, 2)), ((1, 1), (1, 1))]


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_forward_float32_batch_broadcast(rng, sa, sb):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    got = run(a, b)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dt,tol", [(np.float16, 1e-3), (BF16, 8e-3)], ids=["f16", "bf16"])
def test_half_types_round_once(rng, dt, tol):
    a = rng.standard_normal((2, 5, 64)).astype(dt)
    b = rng.standard_normal((64, 3)).astype(dt)
    got = run(a, b)
    assert got.dtype == np.dtype(dt)
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    # accumulated in float32 (not in the half type): within one rounding of the exact result
    np.testing.assert_allclose(got.astype(np.float64), exact.astype(dt).astype(np.float64),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.int8])
def test_integer_types(rng, dt):
    a = rng.integers(-5, 5, (2, 3, 4), dtype=dt)
    b = rng.integers(-5, 5, (4, 2), dtype=dt)
    got = run(a, b)
    assert got.dtype == np.dtype(dt)
    np.testing.assert_array_equal(got, np.matmul(a, b))


def test_dynamic_batch_checked_at_run_time(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 3, 4])
    w = g.placeholder([4, 2])
    y = g.matrixMultiplication(x, w)
    assert y.shape == [-1, 3, 2]
    a = rng.standard_normal((5, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    np.testing.assert_allclose(g.run({x: a, w: b}, [y])[y].numpy(), a @ b, rtol=1e-5)
    k = g.placeholder([3, -1])
    z = g.matrixMultiplication(k, w)
    expect(mg.ShapeError, lambda: g.run({k: np.ones((3, 5), np.float32), w: b}, [z]),
           "matrixMultiplication", "secondary", "5 rows")


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("sa,sb", [s for s in SHAPES if 0 not in s[0] + s[1]])
def test_gradients_match_finite_differences(rng, sa, sb):
    g = mg.Graph()
    x = g.placeholder(list(sa))
    y = g.placeholder(list(sb))
    z = g.matrixMultiplication(x, y)
    u = rng.standard_normal(z.shape).astype(np.float32)
    loss = g.reductionSum(g.multiplication(z, g.constant(u, dataType=mg.float32)))
    gr = g.gradientForPrimaryTensor(loss, [x, y])
    assert gr[x].shape == list(sa) and gr[y].shape == list(sb)
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    exe = g.compile({x: mg.ShapedType(list(sa)), y: mg.ShapedType(list(sb))},
                    [loss, gr[x], gr[y]])

    def f(p, q):
        return exe.run([p.astype(np.float32), q.astype(np.float32)])[0].numpy()

    _, ga, gb = (t.numpy().astype(np.float64)
                 for t in exe.run([a.astype(np.float32), b.astype(np.float32)]))
    # bilinear: the central difference with step 1 is exact up to float32 rounding
    for k, (gk, shape) in enumerate(((ga, sa), (gb, sb))):
        v = rng.standard_normal(shape)
        dirs = [v, None] if k == 0 else [None, v]
        num = float(np.sum(gradcheck.directional_derivative(f, [a, b], dirs, eps=1.0)))
        np.testing.assert_allclose(np.sum(gk * v), num, rtol=1e-4, atol=1e-4)
    # and against the closed form: dA = sum_batch(u @ B^T), dB = sum_batch(A^T @ u)
    ua = np.matmul(u.astype(np.float64), np.swapaxes(b, -1, -2))
    ub = np.matmul(np.swapaxes(a, -1, -2), u.astype(np.float64))
    while ua.ndim > len(sa):
        ua = ua.sum(0)
    while ub.ndim > len(sb):
        ub = ub.sum(0)
    ua = ua.sum(axis=tuple(i for i, s in enumerate(sa[:-2]) if s == 1), keepdims=True)
    ub = ub.sum(axis=tuple(i for i, s in enumerate(sb[:-2]) if s == 1), keepdims=True)
    np.testing.assert_allclose(ga, ua, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, ub, rtol=1e-4, atol=1e-4)


def test_mlp_layer_gradient(rng):
    # y = reLU(x @ W + b): a typical layer, gradients of W and b
    g = mg.Graph()
    x = g.placeholder([8, 5])
    W = g.placeholder([5, 3])
    b = g.placeholder([3])
    y = g.reLU(g.addition(g.matrixMultiplication(x, W), b))
    gr = g.gradientForPrimaryTensor(g.reductionSum(y), [W, b])
    xv = rng.standard_normal((8, 5)).astype(np.float32)
    Wv = rng.standard_normal((5, 3)).astype(np.float32)
    bv = rng.standard_normal(3).astype(np.float32)
    out = g.run({x: xv, W: Wv, b: bv}, [gr[W], gr[b]])
    mask = (xv @ Wv + bv > 0).astype(np.float64)
    np.testing.assert_allclose(out[gr[W]].numpy(), xv.T.astype(np.float64) @ mask, rtol=1e-5)
    np.testing.assert_allclose(out[gr[b]].numpy(), mask.sum(0), rtol=1e-6)


# ---------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("name", [None, "mm"])
def test_error_rank_one_refused(name):
    g = mg.Graph()
    v = g.placeholder([4])
    m = g.placeholder([4, 2])
    expect(mg.ShapeError, lambda: g.matrixMultiplication(v, m, name=name),
           "matrixMultiplication", "primary", "rank >= 2", "[1, K]", "rank 1", name=name)
    expect(mg.ShapeError, lambda: g.matrixMultiplication(m, g.placeholder([2]), name=name),
           "matrixMultiplication", "secondary", "[K, 1]", name=name)


def test_error_inner_dimensions():
    g = mg.Graph()
    expect(mg.ShapeError, lambda: g.matrixMultiplication(g.placeholder([2, 3]),
                                                         g.placeholder([4, 5])),
           "matrixMultiplication", "secondary", "3 rows", "4 rows", "[4, 5]")


def test_error_batch_not_broadcastable():
    g = mg.Graph()
    expect(mg.ShapeError, lambda: g.matrixMultiplication(g.placeholder([2, 3, 4]),
                                                         g.placeholder([3, 4, 5])),
           "matrixMultiplication", "secondary", "[2]", "[3]")


def test_error_dtypes():
    g = mg.Graph()
    a = g.placeholder([2, 2])
    expect(mg.DataTypeError, lambda: g.matrixMultiplication(a, g.placeholder([2, 2],
                                                                             mg.float16)),
           "matrixMultiplication", "secondary", "float16", "primary")
    b = g.placeholder([2, 2], mg.bool)
    expect(mg.DataTypeError, lambda: g.matrixMultiplication(b, b), "matrixMultiplication",
           "primary", "bool")
