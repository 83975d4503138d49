"""Entries of the pooling family (ops/pooling.py): maxPooling2D, avgPooling2D,
maxPooling2DGradient, avgPooling2DGradient.

The float64 reference is written here from the definitions (ops/pooling.py's docstring and
docs/semantics.md), as direct loops over the output positions and the taps of each window,
never from our kernels:

- window of output (i, j): taps (p, q) in row-major order at rows i*sy - pt + p*ry and columns
  j*sx - pl + q*rx; the output size and the resolved paddings come from the convolution
  oracle's `resolve_axis` (SPEC 2.4, shared with convolution), and with `ceilMode` (explicit
  and TF_VALID only) the size is rounded up, less one window if the last one would start past
  the input and its leading padding (PyTorch's and ONNX's rule);
- max: the maximum of the taps inside the source (NaN if one of them is NaN), -inf for a
  window with no tap inside;
- avg: the sum of the taps inside the source over their count, or with
  includeZeroPadToAverage over the count of taps inside the padded source
  [-pt, H + pb) x [-pl, W + pr); 0 for a window with a count of 0;
- maxPooling2DGradient: each window's incoming gradient goes to its first tap (window order)
  inside the source that equals the maximum (or is NaN when the maximum is NaN);
- avgPooling2DGradient: each window's incoming gradient over its count goes to every tap of
  the window inside the source.

Samples cycle through every descriptor option (padding style, layout, ceilMode,
includeZeroPadToAverage; returnIndicesMode and returnIndicesDataType, which these ops ignore,
drawn at random) with kernels, strides, dilations and paddings from 1 (0 for paddings) to 3,
and shapes with 0 and 1 on every axis. A max-pooling sample with a window that has no tap
inside the source (its output is -inf, and sum(u * y) is not differentiable) is not used
for the gradient test (diff=()).
"""

from __future__ import annotations

import numpy as np

import mpsgraph as mg
from opdb import DT, FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples
from oracles import conv_f64 as C

from ._common import cycle as _cycle
from ._common import size as _size

P = mg.PaddingStyle
L = mg.TensorNamedDataLayout
STYLES = (P.explicit, P.TF_VALID, P.TF_SAME, P.ONNX_SAME_LOWER)


# ---------------------------------------------------------------------------- geometry
def _axis(style, size, k, s, r, pb, pe, ceil):
    """(out, pad_before, pad_after) of one axis; ValueError if the source is too small."""
    out, pb, pe = C.resolve_axis(style.name, size, k, s, r, pb, pe)
    if ceil and style in (P.explicit, P.TF_VALID):
        k_eff = r * (k - 1) + 1
        out = -(-(size + pb + pe - k_eff) // s) + 1
        if (out - 1) * s >= size + pb:  # the last window must start in the source or before
            out -= 1
    return out, pb, pe


def _geometry(d: mg.Pooling2DOpDescriptor, h: int, w: int):
    ho, pt, pb = _axis(d.paddingStyle, h, d.kernelHeight, d.strideInY, d.dilationRateInY,
                       d.paddingTop, d.paddingBottom, d.ceilMode)
    wo, pl, pr = _axis(d.paddingStyle, w, d.kernelWidth, d.strideInX, d.dilationRateInX,
                       d.paddingLeft, d.paddingRight, d.ceilMode)
    return (ho, wo), (pt, pb, pl, pr)


def _windows(d, h, w):
    """{(i, j): (taps inside the source in window order, count for the average)}."""
    (ho, wo), (pt, pb, pl, pr) = _geometry(d, h, w)
    out = {}
    for i in range(ho):
        for j in range(wo):
            inside, padded = [], 0
            for p in range(d.kernelHeight):
                r = i * d.strideInY - pt + p * d.dilationRateInY
                for q in range(d.kernelWidth):
                    c = j * d.strideInX - pl + q * d.dilationRateInX
                    if 0 <= r < h and 0 <= c < w:
                        inside.append((r, c))
                    if -pt <= r < h + pb and -pl <= c < w + pr:
                        padded += 1
            out[i, j] = inside, (padded if d.includeZeroPadToAverage else len(inside))
    return (ho, wo), out


def _canon(a, d):
    return np.transpose(a, (0, 3, 1, 2)) if d.dataLayout == L.NHWC else a


def _user(a, d):
    return np.transpose(a, (0, 2, 3, 1)) if d.dataLayout == L.NHWC else a


# ---------------------------------------------------------------------------- references
def _pool_ref(kind):
    def ref(x, *, desc, **_):
        xc = f64(_canon(x, desc))
        n, c, h, w = xc.shape
        (ho, wo), wins = _windows(desc, h, w)
        y = np.zeros((n, c, ho, wo))
        for (i, j), (inside, count) in wins.items():
            if kind == "max":
                m = np.full((n, c), -np.inf)
                for r, q in inside:
                    m = np.maximum(m, xc[:, :, r, q])  # NaN propagates
                y[:, :, i, j] = m
            elif count:
                y[:, :, i, j] = sum((xc[:, :, r, q] for r, q in inside), np.zeros((n, c))) / count
        return _user(y, desc)
    return ref


def _max_grad_ref(dy, x, *, desc, **_):
    dyc, xc = f64(_canon(dy, desc)), f64(_canon(x, desc))
    n, c, h, w = xc.shape
    _, wins = _windows(desc, h, w)
    dx = np.zeros(xc.shape)
    for (i, j), (inside, _) in wins.items():
        if not inside:
            continue
        for a in range(n):
            for b in range(c):
                vals = [xc[a, b, r, q] for r, q in inside]
                m = max(vals, key=lambda v: (np.isnan(v), v))  # NaN wins
                k = next(t for t, v in enumerate(vals)
                         if v == m or (np.isnan(m) and np.isnan(v)))
                r, q = inside[k]
                dx[a, b, r, q] += dyc[a, b, i, j]
    return _user(dx, desc)


def _avg_grad_ref(dy, x, *, desc, **_):
    dyc = f64(_canon(dy, desc))
    n, c, h, w = _canon(x, desc).shape
    _, wins = _windows(desc, h, w)
    dx = np.zeros((n, c, h, w))
    for (i, j), (inside, count) in wins.items():
        for r, q in inside:
            dx[:, :, r, q] += dyc[:, :, i, j] / count
    return _user(dx, desc)


# ---------------------------------------------------------------------------- samples
def _draw(rng, k, pick):
    """(descriptor, [N, C, H, W] canonical, (Ho, Wo), has_empty_window)."""
    style = pick(k, "styles", STYLES)
    layout = pick(k, "layout", (L.NCHW, L.NHWC))
    ceil = pick(k, "ceil", (False, True, True, False))
    include = pick(k, "zero_pad", (False, True))
    for _ in range(1000):
        kh, kw = _size(rng, 1, 3), _size(rng, 1, 3)
        sy, sx = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
        ry, rx = (int(v) for v in rng.choice([1, 1, 1, 2, 3], 2))
        pads = [int(v) for v in rng.integers(0, 4, 4)]
        if style == P.explicit and rng.random() < 0.3:
            pads = [0, 0, 0, 0]
        d = mg.Pooling2DOpDescriptor(
            kernelWidth=kw, kernelHeight=kh, strideInX=sx, strideInY=sy, dilationRateInX=rx,
            dilationRateInY=ry, paddingLeft=pads[2], paddingRight=pads[3], paddingTop=pads[0],
            paddingBottom=pads[1], paddingStyle=style, dataLayout=layout, ceilMode=ceil,
            includeZeroPadToAverage=include, returnIndicesMode=int(rng.integers(0, 9)),
            returnIndicesDataType=DT.int32 if rng.random() < 0.5 else DT.int64)
        n, c, h, w = _size(rng, 0, 3), _size(rng, 0, 3), _size(rng, 0, 7), _size(rng, 0, 7)
        try:
            (ho, wo), wins = _windows(d, h, w)
        except ValueError:  # the padded source is smaller than the dilated kernel
            continue
        if n * c * h * w > 300 or n * c * ho * wo > 300:
            continue
        empty = any(not inside for inside, _ in wins.values())
        return d, [n, c, h, w], (ho, wo), empty
    raise RuntimeError("no configuration drawn")


def _shape_u(s, d):
    n, c, h, w = s
    return [n, h, w, c] if d.dataLayout == L.NHWC else [n, c, h, w]


def _desc(d, empty):
    return (f"{d.paddingStyle.name} {d.dataLayout.name} ceil={d.ceilMode} "
            f"zeroPad={d.includeZeroPadToAverage}" + (" empty windows" if empty else ""))


def _pool_samples(kind):
    def gen(rng, dt):
        pick = _cycle(rng)
        for k in range(n_samples()):
            d, xs, _, empty = _draw(rng, k, pick)
            x = arr(rng, _shape_u(xs, d), dt)
            special = k % 4 == 3 and x.size > 0
            if special:
                _infinities(rng, x)
            # an empty max window gives -inf, an infinite source value inf: sum(u * y) has no
            # derivative there
            nodiff = special or (kind == "max" and empty)
            yield Sample([x], {"desc": d}, diff=() if nodiff else None,
                         desc=_desc(d, empty) + (" +-inf" if special else ""))
    return gen


def _infinities(rng, x):
    """Set about a fifth of `x` (at least one element) to +inf or -inf, in place."""
    flat = x.reshape(-1)
    idx = rng.choice(flat.size, max(1, flat.size // 5), replace=False)
    flat[idx] = np.where(rng.random(idx.size) < 0.5, -np.inf, np.inf).astype(x.dtype)


def _grad_samples(rng, dt):
    pick = _cycle(rng)
    for k in range(n_samples()):
        d, xs, (ho, wo), empty = _draw(rng, k, pick)
        x = arr(rng, _shape_u(xs, d), dt)
        if k % 3 == 2 and x.size:  # ties: a few distinct values, the first maximum wins
            x = rng.choice(np.array([-1.0, 0.5, 2.0]), x.shape).astype(x.dtype)
        if k % 4 == 3 and x.size:  # infinite sources (-inf may be a window's maximum)
            _infinities(rng, x)
        dy = arr(rng, _shape_u([xs[0], xs[1], ho, wo], d), dt)
        yield Sample([dy, x], {"desc": d}, desc=_desc(d, empty))


# ---------------------------------------------------------------------------- builders
def _build(kind):
    def build(g, *ts, desc, **_):
        return getattr(g, kind)(*ts, descriptor=desc)
    return build


# ---------------------------------------------------------------------------- errors
def _errors(kind):
    grad = kind.endswith("Gradient")
    src = "sourceTensor" if grad else "source"

    def D(**kw):
        base = dict(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
        base.update(kw)
        return mg.Pooling2DOpDescriptor(**base)

    def s(x, d=None, dy=None):
        if grad:
            dy = np.ones((1, 2, 3, 3), np.float32) if dy is None else dy
            return Sample([dy, x], {"desc": D() if d is None else d})
        return Sample([x], {"desc": D() if d is None else d})

    def gen(rng):
        E = mg
        x = np.ones((1, 2, 6, 6), np.float32)
        yield ErrorInput(s(np.ones((2, 6, 6), np.float32)), E.ShapeError, src, "rank-4")
        yield ErrorInput(s(np.ones((1, 2, 6, 6), np.int32),
                           dy=np.ones((1, 2, 3, 3), np.int32)), E.DataTypeError,
                         "gradient" if grad else "source")
        yield ErrorInput(s(x, D(kernelHeight=4, dilationRateInY=3, paddingStyle=P.TF_VALID)),
                         E.ShapeError, src, "dilated kernel extent 10")
        yield ErrorInput(s(np.ones((1, 2, 1, 6), np.float32),
                           D(kernelHeight=3, paddingTop=1, paddingBottom=0)), E.ShapeError,
                         src)
        if grad:
            yield ErrorInput(s(x, dy=np.ones((1, 2, 3, 3), np.float16)), E.DataTypeError,
                             "sourceTensor")
            yield ErrorInput(s(x, dy=np.ones((1, 2, 3, 2), np.float32)), E.ShapeError,
                             "gradient")
            # NHWC: the gradient is [N, Ho, Wo, C]
            yield ErrorInput(s(np.ones((1, 6, 6, 2), np.float32), D(dataLayout=L.NHWC)),
                             E.ShapeError, "gradient")
        for prop, val in (("kernelWidth", 0), ("kernelHeight", -1), ("strideInX", 0),
                          ("strideInY", 1.5), ("dilationRateInX", 0), ("dilationRateInY", 0),
                          ("paddingTop", -1), ("paddingRight", -2),
                          ("paddingStyle", P.explicitOffset), ("dataLayout", L.OIHW),
                          ("dataLayout", L.HWIO), ("ceilMode", "yes"),
                          ("includeZeroPadToAverage", 2), ("returnIndicesMode", 9),
                          ("returnIndicesDataType", DT.float32)):
            yield ErrorInput(s(x, D(**{prop: val})), E.DescriptorError, f"descriptor.{prop}")
        yield ErrorInput(s(x, mg.Convolution2DOpDescriptor()), E.DescriptorError, "descriptor")
    return gen


_NOTES = ("float64 loops over the windows (this module); every padding style, NCHW/NHWC, "
          "ceilMode, includeZeroPadToAverage, kernels/strides/dilations 1..3, paddings 0..3, "
          "shapes with 0 and 1 on every axis")

add(OpInfo("maxPooling2D", build=_build("maxPooling2D"), ref=_pool_ref("max"),
           samples=_pool_samples("max"), dtypes=FLOAT, differentiable=(0,),
           errors=_errors("maxPooling2D"), notes=_NOTES))
add(OpInfo("avgPooling2D", build=_build("avgPooling2D"), ref=_pool_ref("avg"),
           samples=_pool_samples("avg"), dtypes=FLOAT, differentiable=(0,),
           errors=_errors("avgPooling2D"), notes=_NOTES))
# maxPooling2DGradient has no gradient rule (ops/pooling.py): no differentiable input
add(OpInfo("maxPooling2DGradient", build=_build("maxPooling2DGradient"), ref=_max_grad_ref,
           samples=_grad_samples, dtypes=FLOAT, errors=_errors("maxPooling2DGradient"),
           notes=_NOTES + "; ties (a third of the samples) go to the first maximum"))
# avgPooling2DGradient is linear in `gradient`; `sourceTensor` only gives a shape (its
# gradient is 0, which central differences of the reference confirm)
add(OpInfo("avgPooling2DGradient", build=_build("avgPooling2DGradient"), ref=_avg_grad_ref,
           samples=_grad_samples, dtypes=FLOAT, differentiable=(0, 1),
           errors=_errors("avgPooling2DGradient"), notes=_NOTES))
