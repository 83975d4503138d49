"""The random family (ops/random.py) beyond the op database: Philox4x32-10 against Random123's
known-answer vectors, the same bits on every backend for one seed, the documented stream and
state layout, statistics at 1e6 samples (moments within 5 standard errors, chi-square of
uniform bins, truncated normals inside their bounds with the truncated distribution's
moments), fresh values without a seed, dropout's statistics and mask; and the MemoryOps of
issue 17 (complexConstant, variableFromTensor)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES
from mpsgraph.backends import _random_math as rm

U, N, T = mg.RandomDistribution.uniform, mg.RandomDistribution.normal, \
    mg.RandomDistribution.truncatedNormal
INV, BM = mg.RandomNormalSamplingMethod.invCDF, mg.RandomNormalSamplingMethod.boxMuller

# Random123 tests/kat_vectors, "philox4x32 10" lines: counter words, key words, output words
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]


def _present() -> list[str]:
    """The devices of DEVICES that exist here (cuda only with a GPU)."""
    out = []
    for p in DEVICES:
        d = p.values[0]
        if d == "cuda":
            torch = pytest.importorskip("torch")
            if not torch.cuda.is_available():
                continue
        out.append(d)
    return out


def _run(g, targets, device, feeds=None):
    res = g.run(feeds or {}, targets, device=device)
    return [res[t].numpy() for t in targets]


# ---------------------------------------------------------------------------- Philox itself
@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers_numpy_and_torch(ctr, key, want):
    got = rm.philox4x32(*(np.array([c], np.int64) for c in ctr), *key)
    assert tuple(int(w[0]) for w in got) == want
    torch = pytest.importorskip("torch")
    got = rm.philox4x32(*(torch.tensor([c], dtype=torch.int64) for c in ctr),
                        *(torch.tensor(k, dtype=torch.int64) for k in key))
    assert tuple(int(w[0]) for w in got) == want


@pytest.mark.parametrize("device", DEVICES)
def test_the_api_stream_is_philox(device):
    """int32 uniform over the whole int32 range is the raw stream (w - 2^31): counter 0 and key
    0 (seed 0) give the first known-answer vector; counter 2^128 - 1 (all ones) and key
    2^64 - 1 the second, from a state made with counterLow / counterHigh / key."""
    g = mg.Graph()
    d = mg.RandomOpDescriptor(distribution=U, dataType=mg.int32, minInteger=-2**31,
                              maxInteger=2**31 - 1)
    a = g.randomTensor([4], d, seed=0)
    s = g.randomPhiloxStateTensor(counterLow=2**64 - 1, counterHigh=2**64 - 1, key=2**64 - 1)
    b, s2 = g.randomTensor([4], d, stateTensor=s)
    av, bv, sv = _run(g, [a, b, s2], device)
    assert [int(v) + 2**31 for v in av] == list(KAT[0][2])
    assert [int(v) + 2**31 for v in bv] == list(KAT[1][2])
    assert sv.dtype == np.int32 and sv.view(np.uint32).tolist() == [1, 0, 0, 0, 0] + [2**32 - 1] * 2


def test_state_layout():
    g = mg.Graph()
    s = g.randomPhiloxStateTensor(0x1122334455667788)
    t = g.randomPhiloxStateTensor(counterLow=0x0102030405060708, counterHigh=0x090A0B0C0D0E0F10,
                                  key=0xA1A2A3A4A5A6A7A8)
    sv, tv = _run(g, [s, t], "cpu")
    assert s.shape == [7] and s.dataType == mg.int32
    assert sv.view(np.uint32).tolist() == [1, 0, 0, 0, 0, 0x55667788, 0x11223344]
    assert tv.view(np.uint32).tolist() == [1, 0x05060708, 0x01020304, 0x0D0E0F10, 0x090A0B0C,
                                           0xA5A6A7A8, 0xA1A2A3A4]


# ---------------------------------------------------------------------------- backends agree
_CASES = [(U, mg.float32, INV, {}), (U, mg.float16, INV, {"min": -2.0, "max": 3.0}),
          (U, mg.int32, INV, {"minInteger": -7, "maxInteger": 1000}),
          (N, mg.float32, INV, {"mean": 1.0, "standardDeviation": 2.0}),
          (N, mg.float32, BM, {}), (N, mg.float16, BM, {}),
          (T, mg.float32, INV, {"min": -1.0, "max": 2.5}), (T, mg.float32, BM, {}),
          (T, mg.float16, INV, {"min": 1.0, "max": 4.0})]


def _desc(dist, dt, method, extra):
    d = mg.RandomOpDescriptor(distribution=dist, dataType=dt, samplingMethod=method)
    for k, v in extra.items():
        setattr(d, k, v)
    return d


@pytest.mark.parametrize("dist,dt,method,extra", _CASES,
                         ids=[f"{c[0].name}-{c[1].name}-{c[2].name}" for c in _CASES])
def test_same_seed_same_bits_on_every_backend(dist, dt, method, extra):
    """One seed (and one state) gives bitwise the same values and new state on cpu (NumPy),
    torch-cpu and (where present) cuda."""
    pytest.importorskip("torch")
    g = mg.Graph()
    d = _desc(dist, dt, method, extra)
    a = g.randomTensor([301, 333], d, seed=123456789)
    st = g.randomPhiloxStateTensor(counterLow=2**64 - 3, counterHigh=5, key=99)
    b, s2 = g.randomTensor([1001], d, stateTensor=st)
    ref = _run(g, [a, b, s2], "cpu")
    for dev in [d for d in _present() if d != "cpu"]:
        for x, y in zip(ref, _run(g, [a, b, s2], dev)):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8), err_msg=dev)


@pytest.mark.parametrize("device", DEVICES)
def test_consecutive_states_continue_one_stream(device):
    """An op with a state returns it advanced by the counters it used: the next op's values are
    the same stream's next words (uniform: word i -> element i; 4 words per counter)."""
    g = mg.Graph()
    s = g.randomPhiloxStateTensor(7)
    a, s1 = g.randomUniformTensor([5], stateTensor=s)  # 2 counters (8 words, 5 used)
    b, s2 = g.randomUniformTensor([6], stateTensor=s1)
    whole = g.randomUniformTensor([14], seed=7)
    av, bv, wv, s1v, s2v = _run(g, [a, b, whole, s1, s2], device)
    np.testing.assert_array_equal(av, wv[:5])
    np.testing.assert_array_equal(bv, wv[8:14])
    assert s1v.tolist() == [1, 2, 0, 0, 0, 7, 0] and s2v.tolist() == [1, 4, 0, 0, 0, 7, 0]
    # a returned state fed back through a placeholder continues the stream in a later run
    g2 = mg.Graph()
    p = g2.placeholder([7], mg.int32)
    c, _ = g2.randomUniformTensor([6], stateTensor=p)
    np.testing.assert_array_equal(_run(g2, [c], device, {p: s1v})[0], bv)


def test_counter_carries_across_words():
    g = mg.Graph()
    s = g.randomPhiloxStateTensor(counterLow=2**64 - 1, counterHigh=2**64 - 1, key=3)
    _, s1 = g.randomUniformTensor([9], stateTensor=s)  # 3 counters: wraps modulo 2^128
    s2 = g.randomPhiloxStateTensor(counterLow=2**32 - 2, counterHigh=0, key=3)
    _, s3 = g.randomUniformTensor([12], stateTensor=s2)
    for dev in _present():
        v1, v3 = _run(g, [s1, s3], dev)
        assert v1.view(np.uint32).tolist() == [1, 2, 0, 0, 0, 3, 0]
        assert v3.view(np.uint32).tolist() == [1, 1, 1, 0, 0, 3, 0]


def test_seeds():
    g = mg.Graph()
    d = mg.RandomOpDescriptor(distribution=N)
    a, b, c = (g.randomTensor([50], d, seed=s) for s in (5, 5, 6))
    av, bv, cv = _run(g, [a, b, c], "cpu")
    np.testing.assert_array_equal(av, bv)
    assert not np.array_equal(av, cv)
    g2 = mg.Graph()  # another graph, the same seed: the same values
    np.testing.assert_array_equal(_run(g2, [g2.randomTensor([50], d, seed=5)], "cpu")[0], av)


@pytest.mark.parametrize("device", DEVICES)
def test_without_seed_every_run_draws_anew(device):
    g = mg.Graph()
    a = g.randomUniformTensor([1000])
    b = g.randomTensor([1000], mg.RandomOpDescriptor(distribution=N))
    first = _run(g, [a, b], device)
    second = _run(g, [a, b], device)
    exe = g.compile({}, [a, b], device=device)
    third = [r.numpy() for r in exe.run([])]
    fourth = [r.numpy() for r in exe.run([])]
    for runs in zip(first, second, third, fourth):
        assert len({r.tobytes() for r in runs}) == 4
    assert ((first[0] >= 0) & (first[0] < 1)).all()


@pytest.mark.parametrize("device", DEVICES)
def test_shape_tensor_forms(device):
    g = mg.Graph()
    p = g.placeholder([2], mg.int32)
    a = g.randomUniformTensor(p, seed=3)
    b = g.randomTensor(shapeTensor=p, descriptor=mg.RandomOpDescriptor(), seed=3)
    c = g.randomUniformTensor([3, 4], seed=3)
    av, bv, cv = _run(g, [a, b, c], device, {p: np.array([3, 4], np.int32)})
    assert a.shape == [-1, -1] and av.shape == (3, 4)
    np.testing.assert_array_equal(av, cv)
    np.testing.assert_array_equal(bv, cv)
    with pytest.raises(mg.ShapeError, match="shape"):
        g.run({p: np.array([3, -4], np.int32)}, [a], device=device)


# ---------------------------------------------------------------------------- statistics
M = 1_000_000


def _moments_ok(x, mean, var, mu4):
    """Sample mean and variance of x within 5 standard errors of the distribution's."""
    n = x.size
    x = x.astype(np.float64)
    se_mean = math.sqrt(var / n)
    se_var = math.sqrt(max(mu4 - var * var, 0) / n)
    assert abs(x.mean() - mean) < 5 * se_mean, (x.mean(), mean, se_mean)
    assert abs(x.var() - var) < 5 * se_var + 1e-12, (x.var(), var, se_var)


def _chi_square_ok(counts, probs):
    n = counts.sum()
    exp = n * np.asarray(probs)
    stat = float(((counts - exp) ** 2 / exp).sum())
    df = len(counts) - 1
    assert stat < df + 6 * math.sqrt(2 * df), (stat, df)  # ~6 sd above the mean: p < 1e-6


def _draw(d, device="cpu", n=M, seed=2024):
    g = mg.Graph()
    return _run(g, [g.randomTensor([n], d, seed=seed)], device)[0]


@pytest.mark.parametrize("device", DEVICES)
def test_uniform_statistics(device):
    lo, hi = -1.5, 2.5
    x = _draw(_desc(U, mg.float32, INV, {"min": lo, "max": hi}), device)
    assert x.dtype == np.float32 and x.min() >= lo and x.max() < hi
    w = hi - lo
    _moments_ok(x, (lo + hi) / 2, w * w / 12, w ** 4 / 80)
    counts, _ = np.histogram(x, bins=100, range=(lo, hi))
    _chi_square_ok(counts, [0.01] * 100)
    h = _draw(_desc(U, mg.float16, INV, {"min": 0.0, "max": 1.0}), device)
    assert h.dtype == np.float16 and h.min() >= 0 and h.max() < 1
    _moments_ok(h, 0.5, 1 / 12, 1 / 80)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_uniform_statistics(device):
    x = _draw(_desc(U, mg.int32, INV, {"minInteger": -3, "maxInteger": 6}), device)
    assert x.dtype == np.int32 and x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    _chi_square_ok(counts, [0.1] * 10)
    full = _draw(mg.RandomOpDescriptor(distribution=U, dataType=mg.int32), device)  # [0, max]
    assert full.min() >= 0
    _moments_ok(full.astype(np.float64) / 2**31, 0.5, 1 / 12, 1 / 80)


@pytest.mark.parametrize("method", [INV, BM], ids=["invCDF", "boxMuller"])
@pytest.mark.parametrize("device", DEVICES)
def test_normal_statistics(device, method):
    x = _draw(_desc(N, mg.float32, method, {"mean": 0.5, "standardDeviation": 2.0}), device)
    _moments_ok(x, 0.5, 4.0, 3 * 16.0)
    z = (x.astype(np.float64) - 0.5) / 2.0
    edges = np.array([-np.inf, -2, -1, -0.5, 0, 0.5, 1, 2, np.inf])
    cdf = [NormalDist().cdf(e) if np.isfinite(e) else float(e > 0) for e in edges]
    counts, _ = np.histogram(z, bins=edges)
    _chi_square_ok(counts, np.diff(cdf))
    kurt = float(np.mean(z ** 4))
    assert abs(kurt - 3.0) < 5 * math.sqrt(96 / M)  # E z^8 - (E z^4)^2 = 105 - 9


def _truncated_moments(a, b):
    nd = NormalDist()
    z = nd.cdf(b) - nd.cdf(a)
    pa, pb = nd.pdf(a), nd.pdf(b)
    m1 = (pa - pb) / z
    m2 = 1 + (a * pa - b * pb) / z
    m3 = 2 * (pa - pb) / z + (a * a * pa - b * b * pb) / z
    m4 = 3 * m2 + (a ** 3 * pa - b ** 3 * pb) / z
    var = m2 - m1 * m1
    mu4 = m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1 ** 4
    return m1, var, mu4


@pytest.mark.parametrize("bounds", [(-2.0, 2.0), (-0.5, 3.0), (1.5, 4.0), (-6.0, -4.5)])
@pytest.mark.parametrize("method", [INV, BM], ids=["invCDF", "boxMuller"])
@pytest.mark.parametrize("device", DEVICES)
def test_truncated_normal_statistics(device, method, bounds):
    mean, sd = -1.0, 0.5
    lo, hi = mean + sd * bounds[0], mean + sd * bounds[1]
    x = _draw(_desc(T, mg.float32, method, {"mean": mean, "standardDeviation": sd,
                                            "min": lo, "max": hi}), device)
    assert x.min() >= np.float32(lo) and x.max() < np.float32(hi)
    m1, var, mu4 = _truncated_moments(*bounds)
    _moments_ok((x.astype(np.float64) - mean) / sd, m1, var, mu4)


def test_truncated_normal_defaults():
    d = mg.RandomOpDescriptor(distribution=T)  # [-2, 2), mean 0, sd 1
    x = _draw(d, n=100_000)
    assert x.min() >= -2 and x.max() < 2
    h = _draw(mg.RandomOpDescriptor(distribution=T, dataType=mg.float16), n=100_000)
    assert h.dtype == np.float16 and h.min() >= -2 and h.max() < 2


# ---------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("device", DEVICES)
def test_dropout_statistics_and_mask(device):
    rate = 0.3
    g = mg.Graph()
    x = g.placeholder([1000, 1000])
    r = g.placeholder([], mg.float32)
    y = g.dropout(x, rate)
    yt = g.dropout(x, rateTensor=r)
    xv = np.full((1000, 1000), 2.0, np.float32)
    c = g.constant(xv)
    dx = g.gradientForPrimaryTensor(g.reductionSum(g.multiplication(y, c)), [x])[x]
    yv, dv, ytv = _run(g, [y, dx, yt], device, {x: xv, r: np.float32(0.6)})
    kept = yv != 0
    s = np.float32(1 / (1 - rate))
    assert set(np.unique(yv).tolist()) <= {0.0, float(np.float32(2.0) * s)}
    np.testing.assert_array_equal(dv, np.where(kept, np.float32(2.0) * s, 0))  # same mask
    frac = kept.mean()
    assert abs(frac - 0.7) < 5 * math.sqrt(0.21 / M)
    assert abs((ytv != 0).mean() - 0.4) < 5 * math.sqrt(0.24 / M)
    y2 = _run(g, [y], device, {x: xv, r: np.float32(0.6)})[0]
    assert not np.array_equal(y2 != 0, kept)  # a fresh mask every run
    assert abs(float(yv.astype(np.float64).mean()) - 2.0) < 5 * 2 * s * math.sqrt(0.21 / M)


def test_dropout_edges():
    g = mg.Graph()
    x = g.placeholder([50])
    xv = np.arange(50, dtype=np.float32) + 1
    a, b = g.dropout(x, 0.0), g.dropout(x, 1.0)
    av, bv = _run(g, [a, b], "cpu", {x: xv})
    np.testing.assert_array_equal(av, xv)
    np.testing.assert_array_equal(bv, np.zeros(50, np.float32))
    for bad in (-0.5, 1.5, float("nan"), "0.5", None):
        with pytest.raises(mg.GraphError, match="rate"):
            g.dropout(x, bad)


# ---------------------------------------------------------------------------- descriptor
def test_descriptor_defaults_follow_the_distribution():
    u = mg.RandomOpDescriptor()
    assert (u.distribution, u.dataType, u.min, u.max, u.minInteger, u.maxInteger, u.mean,
            u.standardDeviation, u.samplingMethod) == (U, mg.float32, 0.0, 1.0, 0, 2**31 - 1,
                                                       0.0, 0.0, INV)
    n = mg.RandomOpDescriptor(distribution=N, dataType=mg.float16)
    assert (n.min, n.max, n.maxInteger, n.standardDeviation) == (-2.0, 2.0, 0, 1.0)
    with pytest.raises(AttributeError, match="standardDeviation"):
        n.standardDeviaton = 2.0
    with pytest.raises(mg.DescriptorError, match="dataType"):
        g = mg.Graph()
        g.randomTensor([2], mg.RandomOpDescriptor(distribution=N, dataType=mg.int32), seed=1)
    with pytest.raises(mg.DescriptorError, match="descriptor"):
        mg.Graph().randomTensor([2], None, seed=1)


def test_op_copies_the_descriptor():
    d = mg.RandomOpDescriptor(min=0.0, max=1.0)
    g = mg.Graph()
    a = g.randomTensor([100], d, seed=1)
    d.min, d.max = 10.0, 11.0
    assert _run(g, [a], "cpu")[0].max() < 1


# ---------------------------------------------------------------------------- MemoryOps
@pytest.mark.parametrize("device", DEVICES)
def test_complex_constant(device):
    g = mg.Graph()
    a = g.complexConstant(1.5, -2.0)
    b = g.complexConstant(0.0, 1, dataType=mg.DataType.complexFloat32)
    c = g.complexConstant(3, 4, shape=[2, 3], dataType=mg.DataType.complexFloat32)
    av, bv, cv = _run(g, [a, b, c], device)
    assert a.dataType == mg.DataType.complexFloat32 and a.shape == [] and av == 1.5 - 2j
    assert bv == 1j and cv.shape == (2, 3) and (cv == 3 + 4j).all()
    with pytest.raises(mg.DataTypeError, match="complexFloat16"):
        g.complexConstant(1, 2, dataType=mg.DataType.complexFloat16)
    with pytest.raises(mg.DataTypeError, match="dataType"):
        g.complexConstant(1, 2, dataType=mg.float32)
    with pytest.raises(mg.DataTypeError, match="realPart"):
        g.complexConstant("1", 2)


@pytest.mark.parametrize("device", DEVICES)
def test_variable_from_tensor(device):
    g = mg.Graph()
    s = g.randomPhiloxStateTensor(11)
    init, _ = g.randomUniformTensor([4], stateTensor=s)
    v = g.variableFromTensor(init)
    step = g.assign(v, g.addition(v, g.constant(1.0, dataType=mg.float32)))
    r = g.read(v)
    first = _run(g, [r], device)[0]
    g.run({}, [], [step], device=device)
    np.testing.assert_array_equal(_run(g, [r], device)[0], first + np.float32(1))
    with pytest.raises(mg.ShapeError, match="tensor"):
        g.variableFromTensor(g.placeholder([-1, 2]))
    # a requested gradient with respect to the variable works; none flows into its initialiser
    x = g.placeholder([4])
    w = g.variableFromTensor(x)
    gw = g.gradientForPrimaryTensor(g.reductionSum(g.multiplication(w, w)), [w, x])
    xv = np.arange(4, dtype=np.float32)
    got = _run(g, [gw[w], gw[x]], device, {x: xv})
    np.testing.assert_array_equal(got[0], 2 * xv)
    np.testing.assert_array_equal(got[1], np.zeros(4, np.float32))


@pytest.mark.gpu
def test_random_ops_in_a_captured_cuda_graph():
    """On CUDA, an executable captured in a CUDA graph (cuda_graph=True): the seeded and
    stateful forms replay the eager values bit for bit; the unseeded forms and dropout draw a
    fresh key on every replay (from the device generator, inside the graph)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    g = mg.Graph()
    x = g.placeholder([256, 256])
    s = g.randomPhiloxStateTensor(5)
    a = g.randomTensor([1000], mg.RandomOpDescriptor(distribution=N, samplingMethod=BM),
                       seed=9)
    b, s1 = g.randomUniformTensor([999], stateTensor=s)
    c = g.randomUniformTensor([1000])
    d = g.dropout(x, 0.5)
    targets = [a, b, s1, c, d]
    eager = _run(g, targets, "cpu", {x: np.ones((256, 256), np.float32)})
    exe = g.compile({x: mg.ShapedType([256, 256], mg.float32)}, targets, device="cuda",
                    cuda_graph=True)
    xs = torch.ones((256, 256), device="cuda")
    r1 = [t.numpy().copy() for t in exe.run([xs])]
    r2 = [t.numpy().copy() for t in exe.run([xs])]
    for k in range(3):
        np.testing.assert_array_equal(r1[k], eager[k])
        np.testing.assert_array_equal(r2[k], eager[k])
    assert not np.array_equal(r1[3], r2[3]) and not np.array_equal(r1[4], r2[4])
