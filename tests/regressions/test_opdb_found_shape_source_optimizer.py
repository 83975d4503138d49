"""Regression tests of what the op database's shape / source / optimizer entries found
(tests/opdb_entries/{shape,source,optimizer}.py), and of the cases the generic harness cannot
express, on every backend present:

- broadcast with -1 in a shape whose value is known (a list, a constant shape tensor, a fed
  shape tensor at run time) raised a bare TypeError from the shape rule on the NumPy backend
  and from torch.broadcast_to on the torch backend; it is a ShapeError naming `shape` now
  (-1 is no size: broadcast infers nothing, unlike reshape);
- FED shape tensors (placeholders): the result's build-time shape is [-1, ...], which the
  harness cannot compare; their value is used at run time and bad values are GraphErrors;
- cast's rounding (to nearest, ties to even) at exact ties, and complex casts (the harness
  compares real parts only);
- the gradient of a cast through a half type (the harness multiplies every float result by a
  float32 constant, so it has no sample whose result is float16 / bFloat16);
- shapeOf on a CUDA device made its result with a host -> device copy, which a CUDA-graph
  capture refuses: `compile(..., cuda_graph=True)` failed and the automatic mode warned and
  fell back to running op by op; the torch kernel fills the result on the device now;
- a target that views a constant (reshape / identity / transpose of it) on the torch backend:
  writing into the returned array changed the constant for every later run (the executable
  now copies a target that views a constant, as it did one that views a variable)."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES

DT = mg.DataType
pytestmark = pytest.mark.parametrize("device", DEVICES)


# ---------------------------------------------------------------------------- broadcast -1
@pytest.mark.parametrize("form", ["list", "int32", "int64"])
def test_broadcast_minus_one_in_a_known_shape(device, form):
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32)
    shape = [-1, 3] if form == "list" else g.constant(np.array([-1, 3], dtype=form))
    with pytest.raises(mg.ShapeError, match="broadcast: argument 'shape': expected sizes >= 0"):
        g.broadcast(x, shape)


def test_broadcast_minus_one_in_a_fed_shape(device):
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32)
    s = g.placeholder([2], DT.int32)
    y = g.broadcast(x, s)
    assert y.shape == [-1, -1]
    with pytest.raises(mg.ShapeError, match="argument 'shape'"):
        g.run({x: np.ones((2, 3), np.float32), s: np.array([-1, 3], np.int32)}, [y],
              device=device)


# ---------------------------------------------------------------------------- fed shape tensors
def _fed(device, op, x, shape, sdt=np.int32, **kw):
    g = mg.Graph()
    p = g.placeholder(list(x.shape), DT.from_numpy(x.dtype))
    s = g.placeholder([len(shape)], DT.from_numpy(np.dtype(sdt)))
    y = getattr(g, op)(p, s, **kw)
    assert y.shape == [-1] * len(shape)
    return g.run({p: x, s: np.array(shape, sdt)}, [y], device=device)[y].numpy()


@pytest.mark.parametrize("sdt", [np.int32, np.int64])
def test_reshape_fed_shape(device, sdt):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(_fed(device, "reshape", x, [4, -1], sdt), x.reshape(4, 6))
    np.testing.assert_array_equal(_fed(device, "reshape", x, [24], sdt), x.reshape(24))
    for bad in ([5, -1], [-1, -1], [4, 5], [2, -3]):
        with pytest.raises(mg.ShapeError, match="reshape: argument 'shape'"):
            _fed(device, "reshape", x, bad, sdt)


def test_broadcast_fed_shape(device):
    x = np.arange(3, dtype=np.int16).reshape(3, 1)
    np.testing.assert_array_equal(_fed(device, "broadcast", x, [2, 3, 4]),
                                  np.broadcast_to(x, (2, 3, 4)))
    for bad in ([2, 4, 4], [4]):
        with pytest.raises(mg.ShapeError, match="broadcast: argument 'shape'"):
            _fed(device, "broadcast", x, bad)


def test_slice_gradient_fed_shape(device):
    g = mg.Graph()
    dy = g.placeholder([2, 2], mg.float32)
    s = g.placeholder([2], DT.int64)
    y = g.sliceGradientTensor(dy, s, [-1, 0], [-5, 4], [-2, 2])
    d = np.array([[1, 2], [3, 4]], np.float32)
    got = g.run({dy: d, s: np.array([4, 4])}, [y], device=device)[y].numpy()
    want = np.zeros((4, 4), np.float32)
    want[3::-2, 0:4:2] = d
    np.testing.assert_array_equal(got, want)
    with pytest.raises(mg.ShapeError, match="argument 'inputGradientTensor'"):
        g.run({dy: d, s: np.array([2, 4])}, [y], device=device)  # a slice of 1 x 2
    with pytest.raises(mg.ShapeError, match="argument 'fwdInShapeTensor'"):
        g.run({dy: d, s: np.array([4, -4])}, [y], device=device)


# ---------------------------------------------------------------------------- cast
def _cast(device, x, to):
    g = mg.Graph()
    p = g.placeholder(list(x.shape), DT.from_numpy(x.dtype))
    y = g.cast(p, to)
    return g.run({p: x}, [y], device=device)[y].numpy()


def test_cast_rounds_ties_to_even(device):
    # float32 -> float16: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 (even: 1); 1 + 3 *
    # 2^-11 halfway between 1 + 2^-10 and 1 + 2^-9 (even: 1 + 2^-9); 65520 halfway to 2^16: inf
    x = np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 65519, 65520, 2049, 2051],
                 np.float32)
    want = np.array([1, 1 + 2**-9, -1, 65504, np.inf, 2048, 2052], np.float16)
    np.testing.assert_array_equal(_cast(device, x, DT.float16), want)
    # float32 -> bFloat16 (8 significant bits): 257 is a tie (even: 256), 259 too (260)
    import ml_dtypes

    xb = np.array([257, 259, 1 + 2**-8, 1 + 3 * 2**-8], np.float32)
    wb = np.array([256, 260, 1, 1 + 2**-6], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(_cast(device, xb, DT.bFloat16).astype(np.float32),
                                  wb.astype(np.float32))
    # integers too: int32 2^24 + 1 -> float32 is a tie (even: 2^24); uint16 65520 -> inf
    np.testing.assert_array_equal(_cast(device, np.array([2**24 + 1, 2**24 + 3], np.int32),
                                        DT.float32), [2**24, 2**24 + 4])
    assert _cast(device, np.array([65519, 65520], np.uint16), DT.float16).tolist() == [
        65504, np.inf]


def test_cast_complex(device):
    z = np.array([1 + 2j, -3j, np.nan], np.complex64)
    np.testing.assert_array_equal(_cast(device, z, DT.complexFloat32), z)
    for x in (np.array([1.5, -2.5, np.nan], np.float32), np.array([1, -2, 3], np.int64),
              np.array([True, False])):
        got = _cast(device, x, DT.complexFloat32)
        assert got.dtype == np.complex64
        np.testing.assert_array_equal(got, x.astype(np.complex64))
    with pytest.raises(mg.DataTypeError, match="cast: argument 'tensor'"):
        _cast(device, z, DT.float32)


@pytest.mark.parametrize("mid", [DT.float16, DT.bFloat16])
def test_cast_gradient_through_a_half_type(device, mid):
    g = mg.Graph()
    x = g.placeholder([3], mg.float32)
    y = g.cast(g.cast(x, mid), mg.float32)
    u = np.array([1.0, -2.0, 0.5], np.float32)
    loss = g.reductionSum(g.multiplication(y, g.constant(u)))
    gx = g.gradientForPrimaryTensor(loss, [x])[x]
    assert gx.dataType == mg.float32
    got = g.run({x: np.array([1, 2, 3], np.float32)}, [gx], device=device)[gx].numpy()
    np.testing.assert_array_equal(got, u)  # cast back: exact for these values


# ---------------------------------------------------------------------------- state aliasing
@pytest.mark.parametrize("view", ["identity", "reshape", "transpose"])
def test_writing_into_a_result_that_views_a_constant(device, view):
    # fixed in runtime/executable.py: targets are unaliased from constants as from variables
    g = mg.Graph()
    c = g.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = {"identity": lambda: g.identity(c), "reshape": lambda: g.reshape(c, [6]),
         "transpose": lambda: g.transpose(c, [1, 0])}[view]()
    a = g.run({}, [y], device=device)[y].numpy()
    try:
        a[...] = 99
    except ValueError:
        pass  # a read-only result: fine
    b = g.run({}, [y], device=device)[y].numpy()
    assert b.reshape(-1)[0] == 0, "the constant changed"


# ---------------------------------------------------------------------------- CUDA graphs
def test_shapeOf_in_a_cuda_graph(device):
    if device != "cuda":
        pytest.skip("CUDA graphs exist on CUDA devices only")
    g = mg.Graph()
    x = g.placeholder([2, 0, 3], mg.float16)
    y = g.shapeOf(x)
    z = g.cast(g.shapeOf(g.reshape(x, [3, 0, 1, 2])), mg.float32)  # a consumer in the graph
    exe = g.compile({x: mg.ShapedType([2, 0, 3], mg.float16)}, [y, z], device=device,
                    cuda_graph=True)
    for _ in range(2):
        a, b = exe.run([np.zeros((2, 0, 3), np.float16)])
        assert a.numpy().tolist() == [2, 0, 3] and a.dataType == DT.int32
        assert b.numpy().tolist() == [3, 0, 1, 2]
