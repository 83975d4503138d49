"""Entries of the resize family (ops/resize.py): `resize` (forward, through resize /
resizeNearest / resizeBilinear) and `resizeWithGradient` (their gradient forms).

The reference computes each resized axis's source coordinates EXACTLY (fractions.Fraction for
the centerResult / alignCorners forms, so that every rounding mode sees exact halves), rounds
or splits them into two taps with its own code, and samples in float64. The gradient reference
is the adjoint written as an explicit accumulation over output positions. Samples cover every
layout (NCHW, NHWC, CHW, HWC, HW and the rank form), every rounding mode, centerResult x
alignCorners, size as a list or an int32 tensor, the scaleOffset and scale/offset tensor forms,
and sizes 0 and 1 on every axis.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples

from ._common import cycle
from ._common import mg_module as _mg

mg = _mg()
L = mg.TensorNamedDataLayout
HW = {L.NCHW: (4, (2, 3)), L.NHWC: (4, (1, 2)), L.CHW: (3, (1, 2)), L.HWC: (3, (0, 1)),
      L.HW: (2, (0, 1))}
R = mg.ResizeNearestRoundingMode


def _round(s, mode):
    f = math.floor(s)
    frac = s - f
    if mode == R.roundPreferCeil:
        return f + 1 if frac >= Fraction(1, 2) else f
    if mode == R.roundPreferFloor:
        return f + 1 if frac > Fraction(1, 2) else f
    if mode == R.ceil:
        return math.ceil(s)
    if mode == R.floor:
        return f
    if frac != Fraction(1, 2):
        return f + 1 if frac > Fraction(1, 2) else f
    if mode == R.roundToEven:
        return f if f % 2 == 0 else f + 1
    return f if f % 2 == 1 else f + 1  # roundToOdd


def _coord(d, i, o, kw, scale=None, offset=None):
    if scale is not None:
        if scale == 0:
            s = float("nan")
        else:
            s = (d - offset) / scale
        if not math.isfinite(s):
            s = 0.0 if math.isnan(s) else (float(i) if s > 0 else -1.0)
        return Fraction(s)
    if kw["align"]:
        return Fraction(d * (i - 1), o - 1) if o > 1 else Fraction(0)
    if kw["center"]:
        return Fraction((2 * d + 1) * i - o, 2 * o)
    return Fraction(d * i, o)


def _taps(d, i, o, kw, scale=None, offset=None):
    """[(index, weight)] of output position d along an axis."""
    s = _coord(d, i, o, kw, scale, offset)
    if kw["mode"] == mg.ResizeMode.nearest:
        return [(min(max(_round(s, kw["rounding"]), 0), i - 1), 1.0)]
    s = min(max(s, Fraction(0)), Fraction(i - 1))
    lo = math.floor(s)
    w = float(s - lo)
    if w == 0:
        return [(lo, 1.0)]
    return [(lo, 1.0 - w), (min(lo + 1, i - 1), w)]


def _axes(rank, kw):
    return HW[kw["layout"]][1] if kw["layout"] is not None else tuple(range(rank))


def _axis_params(kw, extra, axes):
    """(scale, offset) per resized axis for the tensor forms, else (None, None)."""
    if kw["form"] == "scaleOffset":
        so = np.asarray(extra[0], np.float64)
        return [(float(so[k]), float(so[k + 2])) for k in range(2)]
    if kw["form"] == "scaleAndOffset":
        sc, off = (np.asarray(e, np.float64) for e in extra)
        return [(float(sc[a]), float(off[a])) for a in axes]
    return [(None, None)] * len(axes)


def _out_shape(x_shape, kw, size):
    out = list(x_shape)
    for a, s in zip(_axes(len(x_shape), kw), size):
        out[a] = int(s)
    return out


def _resample(y, axis, o, kw, sc, off):
    i = y.shape[axis]
    if kw["form"] == "flags" and i == o:
        return y
    out = np.zeros(y.shape[:axis] + (o,) + y.shape[axis + 1:])
    for d in range(o):
        acc = None
        for idx, w in _taps(d, i, o, kw, sc, off):
            t = np.take(y, idx, axis=axis) * w
            acc = t if acc is None else acc + t
        out[(slice(None),) * axis + (d,)] = acc
    return out


def _split(inputs, kw):
    """(x, size list, tensor-form extras) from a sample's inputs."""
    x, rest = inputs[0], list(inputs[1:])
    size = kw["size"]
    if kw["size_tensor"]:
        size = [int(v) for v in rest.pop(0)]
    return x, size, rest


def _ref(*inputs, **kw):
    x, size, extra = _split(inputs, kw)
    y = f64(x)
    axes = _axes(x.ndim, kw)
    for a, s, (sc, off) in zip(axes, size, _axis_params(kw, extra, axes)):
        y = _resample(y, a, s, kw, sc, off)
    return y


def _build_kwargs(kw, extra, g):
    m = kw["method"]
    args = {}
    if kw["layout"] is not None:
        args["layout"] = kw["layout"]
    if kw["form"] == "flags":
        args.update(centerResult=kw["center"], alignCorners=kw["align"])
    elif kw["form"] == "scaleOffset":
        args["scaleOffsetTensor"] = extra[0]
    else:
        args.update(scaleTensor=extra[0], **({"offsetTenor": extra[1]} if m == "resize" else
                                             {"offsetTensor": extra[1]}))
    if m == "resize":
        args["mode"] = kw["mode"]
    elif m == "resizeNearest":
        args["nearestRoundingMode"] = kw["rounding"]
    return args


def _build(g, x, *rest, **kw):
    rest = list(rest)
    size = rest.pop(0) if kw["size_tensor"] else kw["size"]
    fn = getattr(g, kw["method"])
    return fn(x, size, **_build_kwargs(kw, rest, g))


def _options(pick, k, rng, for_grad=False):
    form = pick(k, "form", ["flags", "flags", "scaleOffset", "scaleAndOffset"])
    layout = pick(k, "layout", [L.NCHW, L.NHWC, L.CHW, L.HWC, L.HW, None])
    if form == "scaleOffset" and layout is None:
        layout = L.NHWC
    if form == "scaleAndOffset":
        layout = None
    mode = pick(k, "mode", [mg.ResizeMode.nearest, mg.ResizeMode.bilinear])
    method = pick(k, "method", ["resize", "resizeNearest", "resizeBilinear"])
    if method == "resizeNearest":
        mode = mg.ResizeMode.nearest
    elif method == "resizeBilinear":
        mode = mg.ResizeMode.bilinear
    rounding = pick(k, "rounding", list(R)) if method == "resizeNearest" else R.roundPreferCeil
    center, align = pick(k, "flags", [(True, False), (False, False), (False, True),
                                      (True, True)])
    return dict(method=method, mode=mode, rounding=rounding, center=center, align=align,
                layout=layout, form=form)


def _draw(rng, kw, dt, st=False):
    rank = HW[kw["layout"]][0] if kw["layout"] is not None else int(rng.integers(1, 5))
    axes = _axes(rank, kw)
    x_shape, size = [], []
    for _ in range(rank):
        u = rng.random()
        n = 0 if u < 0.08 else 1 if u < 0.25 else int(rng.integers(2, 6))
        x_shape.append(n)
    for a in axes:
        if st and x_shape[a] == 0:  # (permuted / broadcast size tensors stay valid)
            x_shape[a] = 1
        n = x_shape[a]
        u = rng.random()
        o = 0 if u < 0.08 else 1 if u < 0.2 else int(rng.integers(2, 8))
        if n == 0:
            o = 0
        size.append(o)
    x = arr(rng, x_shape, dt)
    extra = []
    if kw["form"] == "scaleOffset":
        extra.append(np.array([rng.uniform(0.3, 3), rng.uniform(0.3, 3) * rng.choice([-1, 1]),
                               rng.uniform(-2, 2), rng.uniform(-2, 2)], np.float32))
    elif kw["form"] == "scaleAndOffset":
        extra.append(rng.uniform(0.3, 3, rank).astype(np.float32))
        extra.append(rng.uniform(-2, 2, rank).astype(np.float32))
    return x, size, extra


def _nan(kw):
    """Bilinear: whether a NaN in a neighbour of weight 0 reaches the output is unspecified
    (torch's interpolate reads it, the NumPy kernel does not; docs/semantics.md)."""
    return (0,) if kw["mode"] == mg.ResizeMode.nearest else ()


def _samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        kw = _options(pick, k, rng)
        st = bool(rng.random() < 0.35)
        x, size, extra = _draw(rng, kw, dt, st)
        inputs = [x] + ([np.array(size, np.int32)] if st else []) + extra
        kw.update(size=size, size_tensor=st)
        yield Sample(inputs, kw, diff=() if st else (0,), nan_inputs=_nan(kw),
                     desc=f"{kw['method']} {kw['form']}")


def _errors(rng):
    x = np.ones((1, 2, 3, 4), np.float32)
    base = dict(method="resizeBilinear", mode=mg.ResizeMode.bilinear, rounding=R.roundPreferCeil,
                center=True, align=False, layout=L.NCHW, form="flags", size_tensor=False)
    yield ErrorInput(Sample([x], dict(base, size=[2, 3, 4])), mg.ShapeError, "size")
    yield ErrorInput(Sample([np.ones((2, 3, 4), np.float32)], dict(base, size=[2, 2])),
                     mg.ShapeError, "images")
    yield ErrorInput(Sample([x.astype(np.int32)], dict(base, size=[2, 2])), mg.DataTypeError,
                     "images")
    yield ErrorInput(Sample([x], dict(base, size=[-2, 2])), mg.ShapeError, "size")
    yield ErrorInput(Sample([np.ones((1, 2, 0, 4), np.float32)], dict(base, size=[3, 2])),
                     mg.ShapeError, "images")
    yield ErrorInput(Sample([x, np.ones(3, np.float32)], dict(base, size=[2, 2],
                                                              form="scaleOffset")),
                     mg.ShapeError, "scaleOffset")
    yield ErrorInput(Sample([x, np.ones(4, np.int32)], dict(base, size=[2, 2],
                                                            form="scaleOffset")),
                     mg.DataTypeError, "scaleOffset")
    yield ErrorInput(Sample([x, np.array([2, 2], np.float32)], dict(base, size_tensor=True,
                                                                     size=None)),
                     mg.DataTypeError, "size")


add(OpInfo("resize", build=_build, ref=_ref, samples=_samples, dtypes=FLOAT,
           differentiable=(0,), errors=_errors, nan_inputs=(0,)))


# ---------------------------------------------------------------------------- gradient forms
def _ref_grad(*inputs, **kw):
    dy, x, extra = inputs[0], inputs[1], list(inputs[2:])
    g = f64(dy)
    axes = _axes(x.ndim, kw)
    params = _axis_params(kw, extra, axes)
    for a, (sc, off) in reversed(list(zip(axes, params))):
        i, o = x.shape[a], g.shape[a]
        if kw["form"] == "flags" and i == o:
            continue
        out = np.zeros(g.shape[:a] + (i,) + g.shape[a + 1:])
        for d in range(o):
            src = np.take(g, d, axis=a)
            for idx, w in _taps(d, i, o, kw, sc, off):
                out[(slice(None),) * a + (idx,)] += src * w
        g = out
    return g


def _build_grad(g, dy, x, *extra, **kw):
    fn = getattr(g, kw["method"])
    return fn(dy, input=x, **_build_kwargs(kw, list(extra), g))


def _samples_grad(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        kw = _options(pick, k, rng)
        x, size, extra = _draw(rng, kw, dt)
        dy = arr(rng, _out_shape(x.shape, kw, size), dt)
        yield Sample([dy, x] + extra, kw, diff=(0,), nan_inputs=_nan(kw),
                     desc=f"{kw['method']} gradient {kw['form']}")


def _errors_grad(rng):
    base = dict(method="resize", mode=mg.ResizeMode.nearest, rounding=R.roundPreferCeil,
                center=True, align=False, layout=L.NCHW, form="flags")
    yield ErrorInput(Sample([np.ones((1, 3, 4, 4), np.float32), np.ones((1, 2, 3, 4),
                                                                        np.float32)], base),
                     mg.ShapeError, "gradient")
    yield ErrorInput(Sample([np.ones((1, 2, 4, 4), np.float32), np.ones((1, 2, 3, 4),
                                                                        np.float16)], base),
                     mg.DataTypeError, "input")


add(OpInfo("resizeWithGradient", build=_build_grad, ref=_ref_grad, samples=_samples_grad,
           dtypes=FLOAT, differentiable=(0,), errors=_errors_grad, nan_inputs=(0,)))
