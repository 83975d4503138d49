"""Entry of stencil (ops/stencil.py). The reference loops over every output position and
window element, reading the source through its own scalar boundary rule per dimension, and
reduces in float64 (argument reductions: the first row-major window index of the extreme).
Samples: every reduction mode, padding style and boundary mode, strides, dilations, offsets,
leading batch dimensions, sizes 0 and 1."""

from __future__ import annotations

import itertools
import math

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples

from ._common import cycle
from ._common import mg_module as _mg

mg = _mg()
P, R, PS = mg.PaddingMode, mg.ReductionMode, mg.PaddingStyle


def _read(n, p, mode, const):
    """(index or None, sign) of padded coordinate p along a dimension of size n."""
    if 0 <= p < n:
        return p, 1.0
    if mode in (P.zero, P.constant):
        return None, 1.0
    if mode == P.clampToEdge:
        return min(max(p, 0), n - 1), 1.0
    if mode == P.reflect:
        if n == 1:
            return 0, 1.0
        per = 2 * (n - 1)
        m = p % per
        return (per - m if m >= n else m), 1.0
    if mode == P.symmetric:
        m = p % (2 * n)
        return (2 * n - 1 - m if m >= n else m), 1.0
    s = -1.0 if (mode == P.antiPeriodic and (p // n) % 2) else 1.0
    return p % n, s


def _geometry(xs, ws, d):
    out, pads, starts = [], [], []
    for a in range(4):
        n, k, s, dl = xs[a], ws[a], d.strides[a], d.dilationRates[a]
        e = (k - 1) * dl + 1
        start = 0
        if d.paddingStyle == PS.explicit:
            b, af = d.explicitPadding[2 * a], d.explicitPadding[2 * a + 1]
        elif d.paddingStyle in (PS.TF_VALID, PS.explicitOffset):
            b = af = 0
            start = d.offsets[a] if d.paddingStyle == PS.explicitOffset else 0
        else:
            o = math.ceil(n / s)
            tot = max((o - 1) * s + e - n, 0)
            b = tot // 2 if d.paddingStyle == PS.TF_SAME else tot - tot // 2
            af = tot - b
        span = n + b + af - start
        out.append((span - e) // s + 1 if span >= e else 0)
        pads.append(b)
        starts.append(start)
    return out, pads, starts


def _ref(x, w, **kw):
    d = kw["d"]
    xs, wv = f64(x), f64(w)
    lead = x.shape[:-4]
    out_s, pads, starts = _geometry(x.shape[-4:], w.shape, d)
    argmode = d.reductionMode in (R.argumentMin, R.argumentMax)
    out = np.zeros(lead + tuple(out_s), np.int32 if argmode else np.float64)
    const = 0.0 if d.boundaryMode == P.zero else d.paddingConstant
    for li in np.ndindex(*lead):
        for oi in itertools.product(*[range(o) for o in out_s]):
            vals = []
            for j in itertools.product(*[range(k) for k in w.shape]):
                idx, sign = [], 1.0
                for a in range(4):
                    p = starts[a] - pads[a] + oi[a] * d.strides[a] + j[a] * d.dilationRates[a]
                    i, s = _read(x.shape[-4 + a], p, d.boundaryMode, const)
                    idx.append(i)
                    sign *= s
                v = const if None in idx else sign * xs[li + tuple(idx)]
                vals.append(v * wv[j])
            vals = np.array(vals)
            m = d.reductionMode
            out[li + oi] = (vals.sum() if m == R.sum else vals.prod() if m == R.product else
                            vals.min() if m == R.min else vals.max() if m == R.max else
                            np.argmin(vals) if m == R.argumentMin else np.argmax(vals))
    return out


def _samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        d = mg.StencilOpDescriptor(
            reductionMode=pick(k, "red", list(R)), paddingStyle=pick(k, "style", list(PS)),
            boundaryMode=pick(k, "bm", list(P)), paddingConstant=float(rng.uniform(-2, 2)),
            strides=tuple(int(s) for s in rng.integers(1, 3, 4)),
            dilationRates=tuple(int(s) for s in rng.integers(1, 3, 4)),
            explicitPadding=tuple(int(s) for s in rng.integers(0, 3, 8)),
            offsets=tuple(int(s) for s in rng.integers(0, 2, 4)))
        lead = tuple(int(n) for n in rng.integers(1, 3, int(rng.integers(0, 2))))
        xs = tuple(int(rng.choice([1, 2, 3, 4])) if rng.random() > 0.1 else 0 for _ in range(4))
        if d.boundaryMode not in (P.zero, P.constant):
            xs = tuple(max(n, 1) for n in xs)
        ws = tuple(int(rng.choice([1, 1, 2, 3])) for _ in range(4))
        ws = (1, 1) + ws[2:] if rng.random() < 0.5 else ws
        yield Sample([arr(rng, lead + xs, dt, -2, 2), arr(rng, ws, dt, -2, 2)], dict(d=d),
                     desc=f"{d.reductionMode.name} {d.paddingStyle.name} {d.boundaryMode.name}")


def _errors(rng):
    x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 2, 2), np.float32)
    d = mg.StencilOpDescriptor()
    yield ErrorInput(Sample([np.ones((3, 3, 3), np.float32), w], dict(d=d)), mg.ShapeError,
                     "source")
    yield ErrorInput(Sample([x, np.ones((2, 2), np.float32)], dict(d=d)), mg.ShapeError,
                     "weights")
    yield ErrorInput(Sample([x, w.astype(np.float16)], dict(d=d)), mg.DataTypeError, "weights")
    yield ErrorInput(Sample([x, w], dict(d=mg.StencilOpDescriptor(strides=(1, 0, 1, 1)))),
                     mg.DescriptorError, "descriptor.strides")
    yield ErrorInput(Sample([x, w], dict(d=mg.StencilOpDescriptor(explicitPadding=(1, 1)))),
                     mg.DescriptorError, "descriptor.explicitPadding")


add(OpInfo("stencil", build=lambda g, x, w, d: g.stencil(x, w, descriptor=d), ref=_ref,
           samples=_samples, dtypes=FLOAT, errors=_errors,
           tol={mg.float32: (2e-5, 1e-5), mg.float16: (4e-3, 2e-3),
                mg.bFloat16: (3e-2, 2e-2)}))
