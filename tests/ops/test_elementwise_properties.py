"""Property tests (hypothesis, derandomised): broadcasting of the binary arithmetic ops and the
axes of the reductions agree with NumPy for arbitrary shapes, and the shape rule's result shape
is the shape the kernel returns. Shapes incompatible for NumPy are refused with a ShapeError."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SETTINGS = settings(deadline=None, derandomize=True, max_examples=40)
dims = st.integers(0, 4)


@st.composite
def broadcastable_pair(draw):
    """Two shapes that broadcast: a common shape, each side dropping leading axes and setting
    some sizes to 1."""
    base = draw(st.lists(dims, min_size=0, max_size=4))

    def side():
        drop = draw(st.integers(0, len(base)))
        return [1 if draw(st.booleans()) else d for d in base[drop:]]

    return side(), side()


def _np_broadcast_ok(a, b):
    try:
        np.broadcast_shapes(tuple(a), tuple(b))
        return True
    except ValueError:
        return False


BINARY = {"addition": np.add, "multiplication": np.multiply, "maximum": np.fmax,
          "subtraction": np.subtract}


@SETTINGS
@given(shapes=broadcastable_pair(), op=st.sampled_from(sorted(BINARY)), seed=st.integers(0, 9))
def test_broadcasting_matches_numpy(shapes, op, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    g = mg.Graph()
    x, y = g.placeholder(sa), g.placeholder(sb)
    z = getattr(g, op)(x, y)
    want = BINARY[op](a, b)
    assert z.shape == list(want.shape)
    got = g.run({x: a, y: b}, [z])[z].numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(sa=st.lists(dims, max_size=3), sb=st.lists(dims, max_size=3))
def test_incompatible_shapes_are_refused(sa, sb):
    g = mg.Graph()
    x, y = g.placeholder(sa), g.placeholder(sb)
    if _np_broadcast_ok(sa, sb):
        assert g.addition(x, y).shape == list(np.broadcast_shapes(tuple(sa), tuple(sb)))
    else:
        with pytest.raises(mg.ShapeError):
            g.addition(x, y)


@SETTINGS
@given(shapes=broadcastable_pair(), seed=st.integers(0, 9))
def test_broadcast_gradients_have_the_operand_shapes(shapes, seed):
    rng = np.random.default_rng(seed)
    sa, sb = shapes
    g = mg.Graph()
    x, y = g.placeholder(sa), g.placeholder(sb)
    gr = g.gradientForPrimaryTensor(g.multiplication(x, y), [x, y])
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    out = g.run({x: a, y: b}, [gr[x], gr[y]])
    full = np.broadcast_shapes(a.shape, b.shape)
    # d sum(a * b) / da = b summed over the axes a was broadcast along
    for mine, other, t in ((a, b, x), (b, a, y)):
        want = np.broadcast_to(other, full)
        extra = len(full) - mine.ndim
        want = want.sum(axis=tuple(range(extra)))
        want = want.sum(axis=tuple(i for i, d in enumerate(mine.shape) if d == 1),
                        keepdims=True) if mine.ndim else want
        got = out[gr[t]].numpy()
        assert got.shape == mine.shape
        np.testing.assert_allclose(got, want.reshape(mine.shape), rtol=1e-5, atol=1e-5)


REDUCE = {"reductionSum": np.sum, "reductionMaximum": np.max, "reductionMinimum": np.min,
          "reductionMean": np.mean}


@st.composite
def shape_and_axes(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    r = len(shape)
    axes = draw(st.lists(st.integers(-r, r - 1), max_size=r + 1))  # negatives, repeats
    return shape, axes


@SETTINGS
@given(sa=shape_and_axes(), op=st.sampled_from(sorted(REDUCE)), seed=st.integers(0, 9))
def test_reductions_match_numpy_keepdims(sa, op, seed):
    shape, axes = sa
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    g = mg.Graph()
    x = g.placeholder(shape)
    y = getattr(g, op)(x, axes=axes)
    np_axes = tuple(sorted({ax % len(shape) for ax in axes}))
    want = REDUCE[op](a, axis=np_axes, keepdims=True)
    assert y.shape == list(want.shape)
    got = g.run({x: a}, [y])[y].numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), seed=st.integers(0, 9))
def test_reshape_transpose_roundtrip(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    perm = list(rng.permutation(len(shape)))
    g = mg.Graph()
    x = g.placeholder(shape)
    t = g.transpose(x, perm)
    back = g.reshape(g.transpose(t, list(np.argsort(perm))), [-1])
    out = g.run({x: a}, [t, back])
    np.testing.assert_array_equal(out[t].numpy(), np.transpose(a, perm))
    np.testing.assert_array_equal(out[back].numpy(), a.reshape(-1))
