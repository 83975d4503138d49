"""Elementwise fusion (compile option fuse_elementwise; backends/torch/fusion.py): which steps
a plan fuses, that a fused plan computes what the op-by-op plan computes, and the option's
errors. On the CPU the fused functions are traced by torch.compile's "eager" backend (Dynamo
traces our kernels, no code generation: fast); the gpu test compiles with Inductor."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg

torch = pytest.importorskip("torch")
fusion = pytest.importorskip("mpsgraph.backends.torch.fusion")


@pytest.fixture
def eager_compiler(monkeypatch):
    monkeypatch.setattr(fusion, "COMPILER", "eager")


def _graph(shape=(6, 5), dt=mg.float32):
    """x, y -> sin(x) * y, exp(.), + x (kept as a target), matmul, tanh(m + m)."""
    g = mg.Graph()
    x = g.placeholder(shape=list(shape), dataType=dt)
    y = g.placeholder(shape=[shape[-1]], dataType=dt)
    a = g.sin(x)
    b = g.multiplication(a, y)
    c = g.exponent(b)
    d = g.addition(c, x)
    e = g.matrixMultiplication(g.transposeTensor(d, dimension=0, withDimension=1), d)
    f = g.tanh(g.addition(e, e))
    return g, x, y, (f, c, a)


def _reference(xv, yv):
    x, y = xv.astype(np.float64), yv.astype(np.float64)
    a = np.sin(x)
    c = np.exp(a * y)
    d = c + x
    e = d.T @ d
    return np.tanh(e + e), c, a


def _compile(g, x, y, targets, shape, **opts):
    feeds = {x: mg.ShapedType(list(shape), mg.float32), y: mg.ShapedType([shape[-1]], mg.float32)}
    return g.compile(feeds=feeds, targetTensors=list(targets), device="torch-cpu", **opts)


def test_runs_fuse_and_match(eager_compiler):
    shape = (7, 4)
    g, x, y, targets = _graph(shape)
    ex = _compile(g, x, y, targets, shape, fuse_elementwise=True)
    kinds = [(st.kind, [o.kind for o in st.fused]) for st in ex._steps]
    assert kinds == [("addition", ["sin", "multiplication", "exponent", "addition"]),
                     ("transposeTensor", []), ("matrixMultiplication", []),
                     ("tanh", ["addition", "tanh"])]
    # the fused run writes exactly what is used outside it: d (transpose, matmul), c and a
    # (targets); b is an intermediate that never exists
    assert len(ex._steps[0].outs) == 3
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(shape).astype(np.float32)
    yv = rng.standard_normal(shape[-1]).astype(np.float32)
    got = [r.numpy() for r in ex.run([xv, yv])]
    for gv, rv in zip(got, _reference(xv, yv)):
        assert gv.dtype == np.float32
        np.testing.assert_allclose(gv, rv, rtol=2e-5, atol=2e-5)
    plain = _compile(g, x, y, targets, shape, fuse_elementwise=False)
    assert all(not st.fused for st in plain._steps)
    for gv, pv in zip(got, plain.run([xv, yv])):
        np.testing.assert_array_equal(gv, pv.numpy())  # traced eagerly: the same kernels


@pytest.mark.parametrize("dt", [mg.int32, mg.int8, mg.bool, mg.float16, mg.bFloat16])
def test_other_types_match_op_by_op(eager_compiler, dt):
    g = mg.Graph()
    x = g.placeholder(shape=[3, 0, 2] if dt == mg.int8 else [3, 1, 5], dataType=dt)
    w = g.placeholder(shape=[5] if dt != mg.int8 else [2], dataType=dt)
    if dt == mg.bool:
        out = g.logicalXOR(g.logicalAND(x, w), g.not_(x))
    else:
        out = g.maximum(g.subtraction(g.multiplication(x, w), w), g.negative(x))
    feeds = {x: x.shapedType, w: w.shapedType}
    rng = np.random.default_rng(1)
    xv = (rng.integers(-100, 100, x.shape) if dt != mg.bool else rng.random(x.shape) > 0.5)
    wv = (rng.integers(-100, 100, w.shape) if dt != mg.bool else rng.random(w.shape) > 0.5)
    xv, wv = xv.astype(dt.numpy_dtype), wv.astype(dt.numpy_dtype)
    fused = g.compile(feeds=feeds, targetTensors=[out], device="torch-cpu",
                      fuse_elementwise=True)
    expect_fused = dt in fusion.DTYPES
    assert any(st.fused for st in fused._steps) == expect_fused
    ref = g.run(feeds={x: xv, w: wv}, targetTensors=[out])[out].numpy()  # numpy backend
    got = fused.run([xv, wv])[0].numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def test_default_is_off_off_cuda(eager_compiler):
    shape = (1024, 1025)  # above MIN_ELEMENTS, but torch-cpu does not fuse by default
    g, x, y, targets = _graph(shape)
    ex = _compile(g, x, y, targets, shape)
    assert all(not st.fused for st in ex._steps)


def test_worth_fusing_rule():
    assert not fusion.worth_fusing(1, [1 << 24])
    assert not fusion.worth_fusing(5, [fusion.MIN_ELEMENTS - 1])
    assert fusion.worth_fusing(2, [10, fusion.MIN_ELEMENTS])
    assert not fusion.can_fuse("matrixMultiplication", [mg.float32])
    assert not fusion.can_fuse("addition", [mg.DataType.complexFloat32])
    assert not fusion.can_fuse("addition", [mg.DataType.uInt32])
    assert fusion.can_fuse("erf", [mg.float32, mg.float32])


def test_option_errors():
    shape = (2, 3)
    g, x, y, targets = _graph(shape)
    with pytest.raises(mg.GraphError, match="fuse_elementwise.*True, False or None"):
        _compile(g, x, y, targets, shape, fuse_elementwise="yes")
    feeds = {x: x.shapedType, y: y.shapedType}
    with pytest.raises(mg.UnsupportedError, match="fuse_elementwise"):
        g.compile(feeds=feeds, targetTensors=list(targets), device="cpu",
                  fuse_elementwise=True)
    # off is accepted everywhere
    g.compile(feeds=feeds, targetTensors=list(targets), device="cpu", fuse_elementwise=False)


def test_failed_compile_falls_back(monkeypatch):
    monkeypatch.setattr(fusion, "COMPILER", "no-such-backend")
    shape = (3, 4)
    g, x, y, targets = _graph(shape)
    with pytest.warns(RuntimeWarning, match="op by op"):
        ex = _compile(g, x, y, targets, shape, fuse_elementwise=True)
    assert [len(st.fused) for st in ex._steps] == [4, 0, 0, 2]
    assert not any(st.kernel.compiled for st in ex._steps if st.fused)
    xv = np.ones(shape, np.float32)
    yv = np.full(shape[-1], 0.5, np.float32)
    got = ex.run([xv, yv])
    for gv, rv in zip(got, _reference(xv, yv)):
        np.testing.assert_allclose(gv.numpy(), rv, rtol=2e-5, atol=2e-5)


@pytest.mark.gpu
def test_cuda_inductor_chain_matches():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    shape = (1024, 1024)  # >= MIN_ELEMENTS: fuses by default on CUDA
    g, x, y, targets = _graph(shape)
    feeds = {x: mg.ShapedType(list(shape), mg.float32), y: mg.ShapedType([shape[-1]], mg.float32)}
    ex = g.compile(feeds=feeds, targetTensors=list(targets), device="cuda")
    assert [len(st.fused) for st in ex._steps] == [4, 0, 0, 2]
    rng = np.random.default_rng(2)
    xv = rng.standard_normal(shape).astype(np.float32) * 0.1
    yv = rng.standard_normal(shape[-1]).astype(np.float32) * 0.1
    for _ in range(3):  # op by op and replayed (the automatic CUDA graph)
        got = [r.numpy() for r in ex.run([xv, yv])]
        assert all(st.kernel.compiled for st in ex._steps if st.fused)
        for gv, rv in zip(got, _reference(xv, yv)):
            np.testing.assert_allclose(gv, rv, rtol=1e-4, atol=1e-4)
