"""Entries of the random family (ops/random.py): randomPhiloxStateTensor, randomTensor (which
randomUniformTensor builds too) and dropout.

The reference of the seeded and stateful forms is an independent, element-by-element Python
implementation of the documented streams: Philox4x32-10 on Python integers (checked against
Random123's known-answer vectors in tests/ops/test_random.py), the state layout
[1, c0, c1, c2, c3, k0, k1], word w of a stream = word w mod 4 of Philox(counter + w // 4),
and the conversions of the module docstring, with the standard library's exact normal
quantile and CDF (`statistics.NormalDist`). So the forward test compares every backend bit
for bit (integers, states) or within rounding (floats) against a reference that shares no code
with them. The forms without seed or state, and dropout, draw a fresh key every run: their
entries run through OpInfo.run and check shapes, ranges and the mask relation (a dropped
element is 0 and gets gradient 0, a kept one is x / (1 - rate) and gets u / (1 - rate)) instead
of values. Statistics (moments, chi-square, bounds) are tests/ops/test_random.py's.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, n_samples

from ._common import cycle, host
from ._common import mg_module as _mg

MASK = 0xFFFFFFFF
_N01 = NormalDist()
REJECTION_ROUNDS = 8  # ops/random.py's documented number of Box-Muller rejection rounds


def philox_py(ctr, key):
    """Philox4x32-10 on Python ints (Salmon et al. 2011)."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK)
    return [c0, c1, c2, c3]


def stream_py(counter: int, key: int, start: int, n: int) -> list[int]:
    """Words start .. start + n - 1 of the stream of a 128-bit counter and a 64-bit key."""
    out = []
    for w in range(start, start + n):
        c = (counter + w // 4) % (1 << 128)
        words = philox_py([(c >> (32 * i)) & MASK for i in range(4)], [key & MASK, key >> 32])
        out.append(words[w % 4])
    return out


def state_of(arr7) -> tuple[int, int]:
    w = [int(v) & MASK for v in np.asarray(arr7).reshape(-1)]
    return w[1] | w[2] << 32 | w[3] << 64 | w[4] << 96, w[5] | w[6] << 32


def state_array(counter: int, key: int) -> np.ndarray:
    raw = [1] + [(counter >> (32 * i)) & MASK for i in range(4)] + [key & MASK, key >> 32]
    return np.array(raw, dtype=np.uint32).view(np.int32)


def _below(v, npdt):
    return np.nextafter(np.asarray(v, npdt), np.asarray(-np.inf, npdt))


def _fit(v: float, lo: float, hi: float, npdt) -> float:
    """v rounded to the type, then clamped to the type's values in [lo, hi)."""
    x = np.asarray(v, np.float64).astype(npdt)
    vals_lo = np.asarray(lo, np.float64).astype(npdt)
    if float(vals_lo) < lo:
        vals_lo = np.nextafter(vals_lo, np.asarray(np.inf, npdt))
    vals_hi = np.asarray(hi, np.float64).astype(npdt)
    if float(vals_hi) >= hi:
        vals_hi = _below(vals_hi, npdt)
    return min(max(float(x), float(vals_lo)), float(vals_hi))


def _inv(p: float) -> float:
    return _N01.inv_cdf(p)


def _trunc_inv(w: int, a: float, b: float) -> float:
    flip = a + b > 0
    if flip:
        a, b = -b, -a
    pa, pb = _N01.cdf(a), _N01.cdf(b)
    p = pa + (w + 0.5) * 2.0 ** -32 * (pb - pa)
    z = min(max(_inv(p), a), b)
    return -z if flip else z


def _box_muller(words, i):
    u1 = (words[2 * (i // 2)] + 0.5) * 2.0 ** -32
    u2 = words[2 * (i // 2) + 1] * 2.0 ** -32
    rad = math.sqrt(-2.0 * math.log(u1))
    return rad * (math.cos(2 * math.pi * u2) if i % 2 == 0 else math.sin(2 * math.pi * u2))


# Apple's documented defaults (MPSGraphRandomOps.h), by distribution
_DEFAULTS = {0: dict(min=0.0, max=1.0, minInteger=0, maxInteger=2**31 - 1, mean=0.0,
                     standardDeviation=0.0, samplingMethod=0),
             1: dict(min=-2.0, max=2.0, minInteger=0, maxInteger=0, mean=0.0,
                     standardDeviation=1.0, samplingMethod=0)}
_DEFAULTS[2] = _DEFAULTS[1]


def sample_py(d: dict, shp, counter: int, key: int):
    """(values of dtype d['dataType'] of shape shp, counters used) of a descriptor dict."""
    d = {**_DEFAULTS[int(d["distribution"])], **d}
    n = int(np.prod(shp, dtype=np.int64))
    dt = d["dataType"]
    npdt = dt.numpy_dtype
    dist, method = int(d["distribution"]), int(d["samplingMethod"])
    lo, hi = float(np.float32(d["min"])), float(np.float32(d["max"]))
    mean, sd = float(np.float32(d["mean"])), float(np.float32(d["standardDeviation"]))
    n2 = n + (n & 1)
    blocks = (n + 3) // 4
    if dist == 0:
        ws = stream_py(counter, key, 0, n)
        if npdt.kind == "i":
            ilo, ihi = d["minInteger"], d["maxInteger"]
            vals = [ilo + ((w * (ihi - ilo + 1)) >> 32) for w in ws]
        else:
            vals = [_fit(lo + (w >> 8) * 2.0 ** -24 * (hi - lo), lo, hi, npdt) for w in ws]
    elif dist == 1:
        if method == 0:
            vals = [mean + sd * _inv((w + 0.5) * 2.0 ** -32)
                    for w in stream_py(counter, key, 0, n)]
        else:
            ws = stream_py(counter, key, 0, n2)
            vals = [mean + sd * _box_muller(ws, i) for i in range(n)]
            blocks = (n2 + 3) // 4
    else:
        a, b = (lo - mean) / sd, (hi - mean) / sd
        if method == 0:
            zs = [_trunc_inv(w, a, b) for w in stream_py(counter, key, 0, n)]
        else:
            per = 4 * ((n2 + 3) // 4)
            rounds = [stream_py(counter, key, r * per, n2) for r in range(REJECTION_ROUNDS)]
            last = stream_py(counter, key, REJECTION_ROUNDS * per, n)
            zs = []
            for i in range(n):
                for ws in rounds:
                    z = _box_muller(ws, i)
                    if a <= z < b:
                        break
                else:
                    z = _trunc_inv(last[i], a, b)
                zs.append(z)
            blocks = (REJECTION_ROUNDS + 1) * ((n2 + 3) // 4)
        vals = [_fit(mean + sd * z, lo, hi, npdt) for z in zs]
    return np.array(vals, dtype=np.float64 if npdt.kind == "f" else np.int64).reshape(shp), \
        blocks


# ---------------------------------------------------------------------------- state tensors
def _build_state(g, *, seed=None, parts=None):
    if parts is not None:
        lo, hi, key = parts
        return g.randomPhiloxStateTensor(counterLow=lo, counterHigh=hi, key=key)
    return g.randomPhiloxStateTensor(seed)


def _ref_state(*, seed=None, parts=None):
    if parts is not None:
        lo, hi, key = parts
        return state_array(lo | hi << 64, key)
    return state_array(0, seed)


def _state_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples()):
        big = lambda: int(rng.integers(0, 1 << 62)) * 4 + int(rng.integers(0, 4))  # noqa: E731
        if pick(k, "form", ("seed", "parts")) == "seed":
            yield Sample([], {"seed": pick(k, "seed", (0, 1, 2**64 - 1, big()))})
        else:
            yield Sample([], {"parts": (big(), pick(k, "hi", (0, 2**64 - 1, big())), big())})


def _state_errors(rng):
    mg = _mg()
    yield ErrorInput(Sample([], {"seed": -1}), mg.GraphError, "seed")
    yield ErrorInput(Sample([], {"seed": 2**64}), mg.GraphError, "seed")
    yield ErrorInput(Sample([], {"seed": 1.5}), mg.GraphError, "seed")
    yield ErrorInput(Sample([], {"parts": (1, None, 3)}), mg.GraphError, "counterHigh")


add(OpInfo("randomPhiloxStateTensor", build=_build_state, ref=_ref_state,
           samples=_state_samples, dtypes=(DT.int32,), errors=_state_errors, nan=False))


# ---------------------------------------------------------------------------- randomTensor
def _descriptor(d: dict):
    mg = _mg()
    desc = mg.RandomOpDescriptor(distribution=d["distribution"], dataType=d["dataType"])
    for k, v in d.items():
        if k != "uniform_method":
            setattr(desc, k, v)
    return desc


def _build_random(g, *ins, d, form, shp, seed=None, unseeded=False):
    desc = _descriptor(d)
    ins = list(ins)
    shape_arg = ins.pop(0) if form.startswith("tensor") else list(shp)
    state = ins.pop(0) if form.endswith("state") else None
    if unseeded or state is not None:
        seed = None
    if d.get("uniform_method"):
        return g.randomUniformTensor(shape_arg, seed=seed, stateTensor=state)
    if state is not None:
        return g.randomTensor(shape_arg, desc, stateTensor=state)
    return g.randomTensor(shape_arg, desc, seed=seed)


def _ref_random(*ins, d, form, shp, seed=None, unseeded=False):
    ins = list(ins)
    if form.startswith("tensor"):
        shp = tuple(int(s) for s in ins.pop(0))
    if form.endswith("state"):
        counter, key = state_of(ins.pop(0))
        vals, blocks = sample_py(d, shp, counter, key)
        return [vals, state_array((counter + blocks) % (1 << 128), key)]
    return sample_py(d, shp, 0, seed)[0]


def _dists(dt):
    if dt == DT.int32:
        return ("uniform",)
    return ("uniform", "normal", "truncatedNormal")


def _random_samples(rng, dt):
    pick = cycle(rng)
    mg = _mg()
    for k in range(n_samples() + 4):
        dist = pick(k, "dist", _dists(dt))
        d = {"distribution": getattr(mg.RandomDistribution, dist), "dataType": dt,
             "samplingMethod": pick(k, "method", tuple(mg.RandomNormalSamplingMethod))}
        if dist == "uniform":
            if dt == DT.int32:
                lo = pick(k, "ilo", (0, -5, -2**31, 7))
                d["minInteger"] = lo
                d["maxInteger"] = pick(k, "ihi", (2**31 - 1, lo, lo + 3, lo + 1000))
            else:
                d["min"], d["max"] = pick(k, "range", ((0.0, 1.0), (-3.0, 2.5), (1.0, 1.0009765625),
                                                       (-1e4, 1e4), (0.1, 0.30000001)))
        else:
            d["mean"] = pick(k, "mean", (0.0, 1.5, -3.0))
            d["standardDeviation"] = pick(k, "sd", (1.0, 0.25, 3.0))
            if dist == "truncatedNormal":
                m, s = d["mean"], d["standardDeviation"]
                lo, hi = pick(k, "bounds", ((-2.0, 2.0), (-0.5, 1.0), (1.0, 3.0), (-4.0, -2.5)))
                d["min"], d["max"] = m + s * lo, m + s * hi
        if dt == DT.float32 and dist == "uniform" and k % 5 == 0:
            d = {"distribution": mg.RandomDistribution.uniform, "dataType": DT.float32,
                 "samplingMethod": 0, "min": 0.0, "max": 1.0, "uniform_method": True}
        shp = tuple(int(rng.integers(0, 6)) if rng.random() < 0.8 else 1
                    for _ in range(int(rng.integers(0, 4))))
        form = pick(k, "form", ("seed", "state", "tensor_seed", "tensor_state"))
        ins = []
        if form.startswith("tensor"):
            ins.append(np.array(shp, dtype=pick(k, "stype", (np.int32, np.int64))))
        if form.endswith("state"):
            counter = pick(k, "counter", (0, int(rng.integers(0, 2**62)), 2**128 - 2))
            ins.append(state_array(counter, int(rng.integers(0, 2**63))))
        seed = int(rng.integers(0, 2**63)) * 2 + int(rng.integers(0, 2))
        yield Sample(ins, {"d": d, "form": form, "shp": shp, "seed": seed})


def _random_errors(rng):
    mg = _mg()
    U, N, T = mg.RandomDistribution.uniform, mg.RandomDistribution.normal, \
        mg.RandomDistribution.truncatedNormal

    def s(d, ins=(), form="seed", shp=(2, 3)):
        full = {"distribution": U, "dataType": DT.float32, **d}
        return Sample(list(ins), {"d": full, "form": form, "shp": shp, "seed": 1})

    yield ErrorInput(s({"distribution": N, "dataType": DT.int32}), mg.DescriptorError,
                     "descriptor.dataType")
    yield ErrorInput(s({"dataType": DT.bFloat16}), mg.DescriptorError, "descriptor.dataType")
    yield ErrorInput(s({"min": 1.0, "max": 1.0}), mg.DescriptorError, "descriptor.max")
    yield ErrorInput(s({"min": float("nan")}), mg.DescriptorError, "descriptor.min")
    # no float16 value in [0.1, 0.10001): an empty range of that type
    yield ErrorInput(s({"dataType": DT.float16, "min": 0.1, "max": 0.10001}),
                     mg.DescriptorError, "descriptor.max")
    yield ErrorInput(s({"dataType": DT.int32, "minInteger": 5, "maxInteger": 4}),
                     mg.DescriptorError, "descriptor.maxInteger")
    yield ErrorInput(s({"dataType": DT.int32, "maxInteger": 2**31}), mg.DescriptorError,
                     "descriptor.maxInteger")
    yield ErrorInput(s({"distribution": T, "standardDeviation": 0.0}), mg.DescriptorError,
                     "descriptor.standardDeviation")
    yield ErrorInput(s({"distribution": N, "standardDeviation": -1.0}), mg.DescriptorError,
                     "descriptor.standardDeviation")
    yield ErrorInput(s({"distribution": 7}), mg.DescriptorError, "descriptor.distribution")
    yield ErrorInput(s({"samplingMethod": 5}), mg.DescriptorError, "descriptor.samplingMethod")
    yield ErrorInput(s({}, shp=(2, -1)), mg.ShapeError, "shape")
    yield ErrorInput(s({}, [np.array([2, 3], np.float32)], "tensor_seed"), mg.DataTypeError,
                     "shape")
    yield ErrorInput(s({}, [np.array([[2, 3]], np.int32)], "tensor_seed"), mg.ShapeError,
                     "shape")
    yield ErrorInput(s({}, [np.array([2, -3], np.int32)], "tensor_seed"), mg.ShapeError,
                     "shape")
    yield ErrorInput(s({}, [np.zeros(7, np.int64)], "state"), mg.DataTypeError, "stateTensor")
    yield ErrorInput(s({}, [np.zeros(6, np.int32)], "state"), mg.ShapeError, "stateTensor")
    bad = s({})
    bad.kwargs["seed"] = -2
    yield ErrorInput(bad, mg.GraphError, "seed")


# ---------------------------------------------------------------------------- unseeded forms
def _run_unseeded(device, s, inputs):
    """randomTensor / randomUniformTensor without seed or state: two runs of one graph (and
    of a compiled executable) differ, each value lies in the distribution's range, with the
    descriptor's dataType and shape. Returns [in range (bool), runs differ (bool)]."""
    mg = _mg()
    d, shp = s.kwargs["d"], s.kwargs["shp"]
    d = {**_DEFAULTS[int(d["distribution"])], **d}
    g = mg.Graph()
    y = (g.randomUniformTensor(list(shp)) if d.get("uniform_method")
         else g.randomTensor(list(shp), _descriptor(d)))
    a = g.run({}, [y], device=device)[y].numpy()
    b = g.compile({}, [y], device=device).run([])[0].numpy()
    assert a.dtype == d["dataType"].numpy_dtype and a.shape == shp
    ok = np.isfinite(a.astype(np.float64))
    if int(d["distribution"]) == 0 and a.dtype.kind == "i":
        ok &= (a >= d["minInteger"]) & (a <= d["maxInteger"])
    elif int(d["distribution"]) != 1:
        ok &= (a >= np.float32(d["min"])) & (a < np.float32(d["max"]))
    if a.dtype.kind == "i":
        values = d["maxInteger"] - d["minInteger"] + 1
    elif int(d["distribution"]) == 1:
        values = 2**10
    else:  # about the number of values of the type in [min, max)
        lo, hi = float(np.float32(d["min"])), float(np.float32(d["max"]))
        ulp = float(np.spacing(np.asarray(max(abs(lo), abs(hi)), a.dtype)))
        values = min(2**10, max(1, int((hi - lo) / ulp)))
    # two runs agree by chance with probability values^-n: compared only where that is tiny
    differ = np.array(a.size * math.log2(max(values, 1)) < 40 or not np.array_equal(a, b))
    return [ok, differ]


def _run_random(device, s, inputs):
    """The seeded and stateful forms: a run of the graph, and two runs of one compiled
    executable, all bitwise equal (the same seed or state gives the same values); the forms
    without seed or state: `_run_unseeded`."""
    if s.kwargs.get("unseeded"):
        return _run_unseeded(device, s, inputs)
    mg = _mg()
    g = mg.Graph()
    arrays = [host(a) for a in inputs]
    phs = [g.placeholder(list(a.shape), DT.from_numpy(a.dtype)) for a in arrays]
    out = _build_random(g, *phs, **s.kwargs)
    outs = out if isinstance(out, list) else [out]
    res = g.run(dict(zip(phs, inputs)), outs, device=device)
    got = [res[o].numpy() for o in outs]
    exe = g.compile({p: mg.ShapedType(list(a.shape), DT.from_numpy(a.dtype))
                     for p, a in zip(phs, arrays)}, outs, device=device)
    for _ in range(2):
        again = [r.numpy() for r in exe.run(list(inputs))]
        for x, y in zip(got, again):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (
                f"randomTensor {s}: a compiled executable's run differs from the graph's")
    return got


def _ref_random_or_checks(*ins, d, form, shp, seed=None, unseeded=False):
    if unseeded:
        return [np.ones(shp, bool), np.array(True)]
    return _ref_random(*ins, d=d, form=form, shp=shp, seed=seed)


def _all_samples(rng, dt):
    yield from _random_samples(rng, dt)
    for s in _random_samples(rng, dt):
        if s.kwargs["form"] == "seed":
            yield Sample([], {**s.kwargs, "unseeded": True})
    d = ({"distribution": 0, "dataType": dt, "samplingMethod": 0} if dt == DT.int32 else
         {"distribution": 0, "dataType": dt, "samplingMethod": 0, "min": 0.0, "max": 1.0})
    yield Sample([], {"d": d, "form": "seed", "shp": (64,), "unseeded": True})


add(OpInfo("randomTensor", build=_build_random, ref=_ref_random_or_checks,
           samples=_all_samples, dtypes=(DT.float32, DT.float16, DT.int32),
           errors=_random_errors, nan=False, run=_run_random,
           tol={DT.float32: (2e-6, 1e-6), DT.float16: (1e-3, 1e-4)},
           notes="values against an independent Python Philox, compiled re-runs bitwise "
                 "equal; the unseeded forms: ranges and fresh values; not differentiable"))


# ---------------------------------------------------------------------------- dropout
def _build_dropout(g, x, *r, rate, form):
    return g.dropout(x, r[0] if form == "tensor" else rate)


def _run_dropout(device, s, inputs):
    """One run of y = dropout(x, rate) and its gradient dx of sum(y * u): each element is
    either dropped (y = 0, dx = 0) or kept (y = x s, dx = u s, s = 1 / (1 - rate)); two runs
    draw different masks; the kept fraction is within 6 standard deviations of 1 - rate."""
    mg = _mg()
    x = host(inputs[0])
    rate = s.kwargs["rate"]
    if s.kwargs["form"] == "tensor":  # the rate as fed (a float32 0.9 is not 0.9)
        rate = float(host(inputs[1]).astype(np.float64).reshape(-1)[0])
    g = mg.Graph()
    phs = [g.placeholder(list(host(a).shape), DT.from_numpy(host(a).dtype)) for a in inputs]
    y = g.dropout(phs[0], phs[1] if s.kwargs["form"] == "tensor" else rate)
    u = g.constant(np.linspace(0.5, 1.5, max(x.size, 1))[:x.size].reshape(x.shape)
                   .astype(x.dtype))
    dx = g.gradientForPrimaryTensor(g.reductionSum(g.multiplication(y, u)), [phs[0]])[phs[0]]
    res = g.run(dict(zip(phs, inputs)), [y, dx], device=device)
    yv, dv = res[y].numpy(), res[dx].numpy()
    assert yv.dtype == x.dtype and yv.shape == x.shape
    sc = np.float32(1.0 / (1.0 - rate)) if rate < 1 else np.float32(0.0)
    xf, yf, df = (np.asarray(a, np.float64) for a in (x, yv, dv))
    uf = np.asarray(g.run({}, [u])[u].numpy(), np.float64)
    kept_y = np.asarray((x.astype(np.float32) * sc).astype(x.dtype), np.float64)
    kept_d = np.asarray((uf.astype(np.float32) * sc).astype(x.dtype), np.float64)
    dropped = (yf == 0) & (df == 0)
    kept = (yf == kept_y) & np.isclose(df, kept_d, rtol=1e-2 if x.dtype != np.float32
                                       else 1e-6)
    ok = (dropped | kept) & ~((yf == 0) & (df != 0) & (kept_y != 0))
    frac = float(np.mean(df != 0)) if x.size else 1.0 - rate
    sd = math.sqrt(rate * (1 - rate) / max(x.size, 1))
    ok_frac = np.array(abs(frac - (1 - rate)) <= 6 * sd + 1e-9)
    return [ok, ok_frac]


def _ref_dropout(x, *r, rate, form):
    return [np.ones(np.shape(x), bool), np.array(True)]


def _dropout_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        shp = tuple(int(rng.integers(0, 40)) for _ in range(int(rng.integers(0, 3))))
        rate = pick(k, "rate", (0.0, 0.5, 0.1, 0.9, 1.0))
        x = arr(rng, shp, dt, 0.5, 2.0)
        form = pick(k, "form", ("value", "tensor"))
        ins = [x] + ([np.asarray(rate, np.float32).reshape(pick(k, "rs", ((), (1,))))]
                     if form == "tensor" else [])
        yield Sample(ins, {"rate": rate, "form": form})


def _dropout_errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([np.ones((2, 3), np.int32)], {"rate": 0.5, "form": "value"}),
                     mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([f], {"rate": 1.5, "form": "value"}), mg.GraphError, "rate")
    yield ErrorInput(Sample([f], {"rate": -0.1, "form": "value"}), mg.GraphError, "rate")
    yield ErrorInput(Sample([f, np.ones(2, np.float32)], {"rate": 0.5, "form": "tensor"}),
                     mg.ShapeError, "rate")
    yield ErrorInput(Sample([f, np.ones((), np.int32)], {"rate": 0.5, "form": "tensor"}),
                     mg.DataTypeError, "rate")
    # a fed rate outside [0, 1]: refused at run time
    yield ErrorInput(Sample([f, np.full((), 2.0, np.float32)], {"rate": 2.0, "form": "tensor"}),
                     mg.GraphError, "rate")


add(OpInfo("dropout", build=_build_dropout, ref=_ref_dropout, samples=_dropout_samples,
           dtypes=FLOAT, run=_run_dropout, errors=_dropout_errors, nan=False,
           notes="a fresh mask every run: the relation of output, gradient and mask is "
                 "checked, not values"))
