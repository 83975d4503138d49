"""The shape family against plain NumPy: reshape (list, -1, shape tensors constant / fed /
shapeOf), broadcast, transpose, transposeTensor, both sliceTensor forms and
sliceGradientTensor, concatTensors / concatTensor (with broadcasting), cast, expandDims,
squeeze, identity, shapeOf; gradients against finite differences; bad inputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import expect, grad_check

DT = mg.DataType
BF16 = np.dtype(ml_dtypes.bfloat16)


def run(build, *arrays):
    g = mg.Graph()
    phs = [g.placeholder(list(a.shape), DT.from_numpy(a.dtype)) for a in arrays]
    out = build(g, *phs)
    res = g.run(dict(zip(phs, arrays)), [out])[out]
    if out.shape is not None and all(d >= 0 for d in out.shape):
        assert res.shape == out.shape, (res.shape, out.shape)
    return res.numpy()


# ---------------------------------------------------------------------------- reshape
@pytest.mark.parametrize("shape,want", [([3, 4], (3, 4)), ([-1], (12,)), ([2, -1, 3], (2, 2, 3)),
                                        ([12, 1], (12, 1)), ([1, -1, 1], (1, 12, 1))])
def test_reshape_list(rng, shape, want):
    x = rng.standard_normal((2, 6)).astype(np.float32)
    got = run(lambda g, t: g.reshape(t, shape), x)
    np.testing.assert_array_equal(got, x.reshape(want))


def test_reshape_zero_and_scalar():
    assert run(lambda g, t: g.reshape(t, [0, 5]), np.zeros((5, 0), np.int8)).shape == (0, 5)
    assert run(lambda g, t: g.reshape(t, []), np.ones((1, 1), np.float16)).shape == ()
    assert run(lambda g, t: g.reshape(t, [-1]), np.array(3, np.int32)).shape == (1,)


def test_reshape_shape_tensor_constant_fed_and_shapeOf(rng):
    x = rng.standard_normal((2, 6)).astype(np.float32)
    g = mg.Graph()
    t = g.placeholder([2, 6])
    c = g.reshape(t, g.constant([3, -1], dataType=mg.int32))
    assert c.shape == [3, 4]  # a constant shape tensor is known at build time
    s = g.placeholder([2], mg.int64)
    d = g.reshape(t, shapeTensor=s)
    assert d.shape == [-1, -1]
    other = g.placeholder([4, 3])
    e = g.reshape(t, g.shapeOf(other))
    assert e.shape == [4, 3]  # shapeOf(y): y's shape at build time
    out = g.run({t: x, s: np.array([6, 2], np.int64), other: np.zeros((4, 3), np.float32)},
                [c, d, e])
    np.testing.assert_array_equal(out[c].numpy(), x.reshape(3, 4))
    np.testing.assert_array_equal(out[d].numpy(), x.reshape(6, 2))
    np.testing.assert_array_equal(out[e].numpy(), x.reshape(4, 3))
    # a fed shape whose element count is wrong: found at run time
    expect(mg.ShapeError, lambda: g.run({t: x, s: np.array([5, 2], np.int64)}, [d]),
           "reshape", "shape", "12 elements", "[5, 2]")


def test_reshape_dynamic_source(rng):
    g = mg.Graph()
    t = g.placeholder([-1, 4])
    y = g.reshape(t, [-1, 2])
    assert y.shape == [-1, 2]
    for n in (1, 3):
        v = rng.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_array_equal(g.run({t: v}, [y])[y].numpy(), v.reshape(-1, 2))


# ---------------------------------------------------------------------------- broadcast
def test_broadcast(rng):
    x = rng.standard_normal((3, 1)).astype(np.float32)
    got = run(lambda g, t: g.broadcast(t, [2, 3, 4]), x)
    np.testing.assert_array_equal(got, np.broadcast_to(x, (2, 3, 4)))
    got = run(lambda g, t: g.broadcast(t, g.constant([3, 5], dataType=mg.int32)), x)
    np.testing.assert_array_equal(got, np.broadcast_to(x, (3, 5)))
    assert got.flags.writeable  # a real array, not a read-only broadcast view


# ---------------------------------------------------------------------------- transposes
def test_transpose_and_transposeTensor(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for perm in ([2, 0, 1], [0, 1, 2], [-1, 0, 1]):
        np.testing.assert_array_equal(run(lambda g, t, p=perm: g.transpose(t, p), x),
                                      np.transpose(x, [p % 3 for p in perm]))
    for a, b in ((0, 2), (1, -1), (1, 1)):
        np.testing.assert_array_equal(
            run(lambda g, t, a=a, b=b: g.transposeTensor(t, a, b), x), np.swapaxes(x, a, b))
    i = np.arange(6, dtype=np.int16).reshape(2, 3)
    np.testing.assert_array_equal(run(lambda g, t: g.transposeTensor(t, 0, 1), i), i.T)


# ---------------------------------------------------------------------------- slices
@pytest.mark.parametrize("dim,start,length", [(0, 1, 2), (1, -3, 2), (2, 0, 4), (1, 4, 0),
                                              (-1, -1, 1)])
def test_slice_dimension_start_length(rng, dim, start, length):
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    got = run(lambda g, t: g.sliceTensor(t, dimension=dim, start=start, length=length), x)
    size = x.shape[dim]
    s = start % size if start < 0 else start
    want = np.take(x, range(s, s + length), axis=dim)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("starts,ends,strides", [
    ([0, 1, 0], [3, 5, 4], [1, 2, 1]), ([-1, 0, 3], [-4, 5, 0], [-1, 1, -1]),
    ([0, -2, 1], [100, 100, -1], [2, 1, 2]), ([2, 4, -1], [0, 0, -100], [-1, -2, -1]),
    ([5, 0, 0], [9, 5, 4], [1, 1, 1]), ([-100, 0, 0], [0, 5, 4], [-1, 1, 1]),
    ([0, -1, 2], [3, -6, 2], [1, -1, 1]),
])
def test_strided_slice_tf_semantics(rng, starts, ends, strides):
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    got = run(lambda g, t: g.sliceTensor(t, starts=starts, ends=ends, strides=strides), x)
    want = x[tuple(slice(b, e, s) for b, e, s in zip(starts, ends, strides))]
    np.testing.assert_array_equal(got, want)


def test_slice_gradient_tensor(rng):
    dy = rng.standard_normal((2, 2)).astype(np.float32)
    got = run(lambda g, d: g.sliceGradientTensor(d, [4, 5], [3, 0], [-100, 5], [-2, 3]), dy)
    want = np.zeros((4, 5), np.float32)
    want[3:-100:-2, 0:5:3] = dy
    np.testing.assert_array_equal(got, want)
    got = run(lambda g, d: g.sliceGradientTensor(
        d, g.constant([4, 5], dataType=mg.int32), [0, 1], [2, 3], [1, 1]), dy)
    want = np.zeros((4, 5), np.float32)
    want[0:2, 1:3] = dy
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------- concat
def test_concat(rng):
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 1)).astype(np.float32)
    c = rng.standard_normal((2, 0)).astype(np.float32)
    got = run(lambda g, x, y, z: g.concatTensors([x, y, z], 1), a, b, c)
    np.testing.assert_array_equal(got, np.concatenate([a, b, c], 1))
    got = run(lambda g, x, y: g.concatTensor(x, y, -1), a, b)
    np.testing.assert_array_equal(got, np.concatenate([a, b], 1))
    # other dimensions broadcast (Apple: "broadcast compatible along all other dimensions")
    p = rng.standard_normal((1, 2)).astype(np.float32)
    q = rng.standard_normal((3, 1)).astype(np.float32)
    got = run(lambda g, x, y: g.concatTensors([x, y], 0), p, q)
    np.testing.assert_array_equal(got, np.concatenate([p, np.broadcast_to(q, (3, 2))], 0))
    i = np.arange(4, dtype=np.uint8).reshape(2, 2)
    np.testing.assert_array_equal(run(lambda g, x: g.concatTensors([x, x], 0), i),
                                  np.concatenate([i, i]))


# ---------------------------------------------------------------------------- cast
def test_cast_rules():
    f = np.array([1.7, -1.7, 0.5, -0.0, np.nan, 1e10, -1e10, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.int32), f),
                                  [1, -1, 0, 0, 0, 2**31 - 1, -2**31, 2**31 - 1, -2**31])
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.uInt8), f),
                                  [1, 0, 0, 0, 0, 255, 0, 255, 0])
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.int64), f[:4]), [1, -1, 0, 0])
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.bool), f),
                                  [True, True, True, False, True, True, True, True, True])
    b = np.array([True, False])
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.float16), b), [1.0, 0.0])
    i = np.array([300, -1, 127], np.int32)
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.int8), i), i.astype(np.int8))
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.float32), i), i)
    x = np.array([1 + 2**-12, 3.14159, 65504.0, 1e6], np.float32)
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.float16), x),
                                  [1.0, np.float16(3.14159), 65504.0, np.inf])
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.bFloat16), x), x.astype(BF16))
    h = np.array([1.5, -2.75], BF16)
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.int16), h), [1, -2])
    np.testing.assert_array_equal(run(lambda g, t: g.cast(t, mg.float32), h), [1.5, -2.75])


# ---------------------------------------------------------------------------- others
def test_expand_squeeze_identity_shapeOf(rng):
    x = rng.standard_normal((2, 1, 3)).astype(np.float32)
    np.testing.assert_array_equal(run(lambda g, t: g.expandDims(t, axis=0), x), x[None])
    np.testing.assert_array_equal(run(lambda g, t: g.expandDims(t, axis=-1), x), x[..., None])
    np.testing.assert_array_equal(run(lambda g, t: g.expandDims(t, axes=[0, 4]), x),
                                  np.expand_dims(x, (0, 4)))
    np.testing.assert_array_equal(run(lambda g, t: g.squeeze(t), x), x.reshape(2, 3))
    np.testing.assert_array_equal(run(lambda g, t: g.squeeze(t, axis=-2), x), x.reshape(2, 3))
    np.testing.assert_array_equal(run(lambda g, t: g.squeeze(t, axes=[1]), x), x.reshape(2, 3))
    np.testing.assert_array_equal(run(lambda g, t: g.identity(t), x), x)
    s = run(lambda g, t: g.shapeOf(t), x)
    assert s.dtype == np.int32
    np.testing.assert_array_equal(s, [2, 1, 3])
    g = mg.Graph()
    assert g.shapeOf(g.placeholder([-1, 4])).shape == [2]
    assert g.shapeOf(g.placeholder(None)).shape == [-1]
    assert g.squeeze(g.placeholder([-1, 1])).shape is None  # unknown until compiled
    assert g.squeeze(g.placeholder([-1, 1]), axis=1).shape == [-1]


# ---------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("build,shapes", [
    (lambda g, x: g.reshape(x, [3, -1]), [(2, 6)]),
    (lambda g, x: g.broadcast(x, [2, 3, 4]), [(3, 1)]),
    (lambda g, x: g.transpose(x, [2, 0, 1]), [(2, 3, 4)]),
    (lambda g, x: g.transposeTensor(x, 0, -1), [(2, 3, 4)]),
    (lambda g, x: g.sliceTensor(x, dimension=1, start=-3, length=2), [(3, 5)]),
    (lambda g, x: g.sliceTensor(x, dimension=1, start=-2, length=2), [(3, 5)]),
    (lambda g, x: g.sliceTensor(x, starts=[2, -1], ends=[-100, 0], strides=[-1, -2]), [(3, 5)]),
    (lambda g, x: g.sliceTensor(x, starts=[0, 1], ends=[3, 5], strides=[2, 3]), [(3, 5)]),
    (lambda g, x, y: g.concatTensors([x, y, x], 1), [(2, 3), (2, 2)]),
    (lambda g, x, y: g.concatTensor(x, y, 0), [(1, 3), (2, 1)]),
    (lambda g, x: g.expandDims(x, axes=[0, 2]), [(2, 3)]),
    (lambda g, x: g.squeeze(x), [(2, 1, 3)]),
    (lambda g, x: g.identity(x), [(2, 3)]),
    (lambda g, dy: g.sliceGradientTensor(dy, [4, 5], [3, 0], [-100, 5], [-2, 3]), [(2, 2)]),
], ids=["reshape", "broadcast", "transpose", "transposeTensor", "slice", "slice-to-end",
        "strided-neg", "strided", "concat", "concat-broadcast", "expandDims",
        "squeeze", "identity", "sliceGradientTensor"])
def test_gradients_match_finite_differences(rng, build, shapes):
    grad_check(build, shapes, rng)


def test_cast_gradient_casts_back(rng):
    # float32 -> float16 -> float32: the gradient is the incoming one cast back (identity here);
    # the finite-difference step must be large against float16's resolution
    grad_check(lambda g, x: g.multiplication(g.cast(g.cast(x, mg.float16), mg.float32), x),
               [(2, 3)], rng, eps=0.25, rtol=2e-2, atol=2e-2)
    g = mg.Graph()
    x = g.placeholder([2], mg.float16)
    gx = g.gradientForPrimaryTensor(g.cast(x, mg.float32), [x])[x]
    assert gx.dataType == mg.float16 and gx.operation.kind == "cast"


def test_gradient_through_reshape_with_dynamic_batch(rng):
    g = mg.Graph()
    x = g.placeholder([-1, 6])
    y = g.reshape(x, [-1, 2, 3])
    gx = g.gradientForPrimaryTensor(g.reductionSum(g.square(y)), [x])[x]
    assert gx.shape == [-1, 6]
    v = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(g.run({x: v}, [gx])[gx].numpy(), 2 * v, rtol=1e-6)


def test_no_gradient_through_integer_cast(rng):
    g = mg.Graph()
    x = g.placeholder([3])
    y = g.multiplication(x, g.cast(g.cast(x, mg.int32), mg.float32))
    gx = g.gradientForPrimaryTensor(y, [x])[x]
    v = np.array([1.5, -2.5, 3.0], np.float32)
    # d/dx (x * trunc(x)) with trunc treated as a constant
    np.testing.assert_array_equal(g.run({x: v}, [gx])[gx].numpy(), np.trunc(v))


# ---------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("name", [None, "rs"])
def test_error_reshape(name):
    g = mg.Graph()
    x = g.placeholder([2, 6])
    expect(mg.ShapeError, lambda: g.reshape(x, [5, 2], name=name), "reshape", "shape",
           "12 elements", "[5, 2]", name=name)
    expect(mg.ShapeError, lambda: g.reshape(x, [-1, -1], name=name), "reshape", "shape",
           "at most one -1", name=name)
    expect(mg.ShapeError, lambda: g.reshape(x, [5, -1], name=name), "reshape", "shape",
           "not divisible", name=name)
    expect(mg.ShapeError, lambda: g.reshape(x, [0, -1], name=name), "reshape", "shape",
           "inferred", name=name)
    expect(mg.ShapeError, lambda: g.reshape(x, [3.0, 4], name=name), "reshape", "shape",
           name=name)
    expect(mg.DataTypeError, lambda: g.reshape(x, g.placeholder([2], mg.float32), name=name),
           "reshape", "shape", "int32", name=name)
    expect(mg.ShapeError, lambda: g.reshape(x, g.placeholder([2, 1], mg.int32), name=name),
           "reshape", "shape", "1-D", name=name)
    expect(mg.GraphError, lambda: g.reshape(x, [12], shapeTensor=g.placeholder([1], mg.int32),
                                            name=name), "reshape", "shapeTensor", "both",
           name=name)


def test_error_broadcast():
    g = mg.Graph()
    x = g.placeholder([3, 2])
    expect(mg.ShapeError, lambda: g.broadcast(x, [3, 4]), "broadcast", "shape", "[3, 2]",
           "[3, 4]")
    expect(mg.ShapeError, lambda: g.broadcast(x, [2]), "broadcast", "shape")


def test_error_transposes():
    g = mg.Graph()
    x = g.placeholder([2, 3, 4])
    expect(mg.ShapeError, lambda: g.transpose(x, [0, 0, 1]), "transpose", "permutation",
           "range(3)", "[0, 0, 1]")
    expect(mg.ShapeError, lambda: g.transpose(x, [0, 1]), "transpose", "permutation")
    expect(mg.GraphError, lambda: g.transpose(x, "012"), "transpose", "permutation")
    expect(mg.ShapeError, lambda: g.transposeTensor(x, 0, 3), "transposeTensor",
           "withDimension", "[-3, 3)")


def test_error_slices():
    g = mg.Graph()
    x = g.placeholder([3, 5])
    expect(mg.ShapeError, lambda: g.sliceTensor(x, dimension=1, start=3, length=3),
           "sliceTensor", "start", "start 3, length 3", "size 5")
    expect(mg.ShapeError, lambda: g.sliceTensor(x, dimension=1, start=-6, length=1),
           "sliceTensor", "start")
    expect(mg.ShapeError, lambda: g.sliceTensor(x, dimension=2, start=0, length=1),
           "sliceTensor", "dimension")
    expect(mg.ShapeError, lambda: g.sliceTensor(x, dimension=0, start=0, length=-1),
           "sliceTensor", "length", ">= 0")
    expect(mg.GraphError, lambda: g.sliceTensor(x, dimension=0, start=0), "sliceTensor",
           "dimension", "either")
    expect(mg.GraphError, lambda: g.sliceTensor(x, dimension=0, start=0, length=1,
                                                starts=[0, 0]), "sliceTensor", "dimension")
    expect(mg.ShapeError, lambda: g.sliceTensor(x, starts=[0], ends=[1], strides=[1]),
           "sliceTensor", "starts", "2 entries")
    expect(mg.ShapeError, lambda: g.sliceTensor(x, starts=[0, 0], ends=[1, 1],
                                                strides=[1, 0]), "sliceTensor", "strides")
    dy = g.placeholder([2, 2])
    expect(mg.ShapeError, lambda: g.sliceGradientTensor(dy, [4, 5], [0, 0], [3, 2], [1, 1]),
           "sliceGradientTensor", "inputGradientTensor", "[3, 2]")
    # a dynamic dimension: the slice bounds are checked when the size is known
    d = g.placeholder([-1])
    s = g.sliceTensor(d, dimension=0, start=1, length=3)
    assert s.shape == [3]
    expect(mg.ShapeError, lambda: g.run({d: np.ones(3, np.float32)}, [s]), "sliceTensor",
           "start", "size 3")


def test_error_concat():
    g = mg.Graph()
    a = g.placeholder([2, 3])
    expect(mg.DataTypeError, lambda: g.concatTensors([a, g.placeholder([2, 3], mg.int32)], 0),
           "concatTensors", "tensors[1]", "int32")
    expect(mg.ShapeError, lambda: g.concatTensors([a, g.placeholder([3])], 0),
           "concatTensors", "tensors[1]", "rank 2")
    expect(mg.ShapeError, lambda: g.concatTensors([a, g.placeholder([2, 4])], 0),
           "concatTensors", "tensors[1]", "[2, 4]")
    expect(mg.ShapeError, lambda: g.concatTensor(a, a, 2), "concatTensors", "dimension")
    expect(mg.GraphError, lambda: g.concatTensors([], 0), "concatTensors", "tensors", "empty")
    expect(mg.ShapeError, lambda: g.concatTensors([g.placeholder([])], 0), "concatTensors",
           "tensors[0]", "rank >= 1")


def test_error_cast_expand_squeeze():
    g = mg.Graph()
    x = g.placeholder([2, 3])
    expect(mg.DataTypeError, lambda: g.cast(x, "float32"), "cast", "to", "'float32'")
    expect(mg.DataTypeError, lambda: g.cast(x, mg.DataType.unorm8), "cast", "to")
    expect(mg.DataTypeError, lambda: g.cast(g.placeholder([2], mg.DataType.complexFloat32),
                                            mg.float32), "cast", "tensor", "complex")
    expect(mg.ShapeError, lambda: g.expandDims(x, axis=3), "expandDims", "axis", "[-3, 3)")
    expect(mg.ShapeError, lambda: g.expandDims(x, axes=[0, -4]), "expandDims", "axes",
           "distinct")
    expect(mg.GraphError, lambda: g.expandDims(x), "expandDims", "axis")
    expect(mg.ShapeError, lambda: g.squeeze(x, axis=0), "squeeze", "axis", "size 1")
    expect(mg.ShapeError, lambda: g.squeeze(x, axes=[5]), "squeeze", "axes")
