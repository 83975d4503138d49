"""Entries of the Fourier transform family (ops/fft.py): fastFourierTransform,
realToHermiteanFFT, HermiteanToRealFFT.

The reference is the DFT written out: per transformed axis, a complex128 matrix
exp(-/+ 2 pi i mu nu / n) applied along the axis, times 1, 1/V or 1/sqrt(V). The
Hermitean-to-real reference transforms the other axes first, then extends the halved axis by
in'[nu] = conj(in[n - nu]) (Apple's formula) and keeps the real part. Samples: every scaling
mode, inverse on and off, roundToOddHermitean, axes as a list (any order, negative) or an int32
tensor, sizes 0 and 1.
"""

from __future__ import annotations

import math

import numpy as np

from opdb import DT, ErrorInput, OpInfo, Sample, add, arr, n_samples, shape

from ._common import cycle
from ._common import mg_module as _mg

mg = _mg()
C64 = DT.complexFloat32
S = mg.FFTScalingMode
TOL = {DT.float32: (1e-4, 2e-4), C64: (1e-4, 2e-4)}


def _values(rng, shp, dt):
    if dt == C64:
        out = np.empty(shp, np.complex64)
        out.real = rng.uniform(-3, 3, shp)
        out.imag = rng.uniform(-3, 3, shp)
        return out
    return arr(rng, shp, dt)


def _dft(x, axis, inverse):
    n = x.shape[axis]
    k = np.arange(n)
    w = np.exp((2j if inverse else -2j) * np.pi * np.outer(k, k) / max(n, 1))
    return np.moveaxis(np.tensordot(w, np.moveaxis(x, axis, 0), axes=(1, 0)), 0, axis)


def _norm_axes(axes, rank):
    return sorted(a % rank for a in axes)


def _scale(mode, v):
    if mode == S.size:
        return 1.0 / v if v else 1.0
    if mode == S.unitary:
        return 1.0 / math.sqrt(v) if v else 1.0
    return 1.0


def _axes_of(inputs, kw):
    return [int(a) for a in inputs[1]] if kw["axes_tensor"] else kw["axes"]


def _ref_fft(*inputs, **kw):
    x = inputs[0].astype(np.complex128)
    axes = _norm_axes(_axes_of(inputs, kw), x.ndim)
    for a in axes:
        x = _dft(x, a, kw["inverse"])
    return x * _scale(kw["mode"], math.prod(inputs[0].shape[a] for a in axes))


def _ref_rfft(*inputs, **kw):
    axes = _norm_axes(_axes_of(inputs, kw), inputs[0].ndim)
    y = _ref_fft(*inputs, **kw)
    last = axes[-1]
    if y.shape[last] == 0:  # the transform of an empty signal: one zero frequency
        shp = list(y.shape)
        shp[last] = 1
        return np.zeros(shp, np.complex128)
    return np.take(y, np.arange(inputs[0].shape[last] // 2 + 1), axis=last)


def _ref_c2r(*inputs, **kw):
    x = inputs[0].astype(np.complex128)
    axes = _norm_axes(_axes_of(inputs, kw), x.ndim)
    last = axes[-1]
    m = x.shape[last]
    n = 2 * (m - 1) + (1 if kw["odd"] else 0)
    for a in axes[:-1]:
        x = _dft(x, a, kw["inverse"])
    idx = np.array([k if k < m else n - k for k in range(n)], dtype=np.int64)
    ext = np.take(x, idx, axis=last) if n else np.take(x, idx, axis=last)
    mirrored = np.array([k >= m for k in range(n)])
    shp = [1] * x.ndim
    shp[last] = n
    ext = np.where(mirrored.reshape(shp), np.conj(ext), ext)
    y = _dft(ext, last, kw["inverse"]).real
    lengths = [x.shape[a] for a in axes[:-1]] + [n]
    return y * _scale(kw["mode"], math.prod(lengths))


def _desc(kw):
    return mg.FFTDescriptor(inverse=kw["inverse"], scalingMode=kw["mode"],
                            roundToOddHermitean=kw.get("odd", False))


def _builder(method):
    def build(g, x, *rest, **kw):
        axes = rest[0] if kw["axes_tensor"] else kw["axes"]
        if kw["axes_tensor"] and kw.get("label"):
            return getattr(g, method)(x, axesTensor=axes, descriptor=_desc(kw))
        return getattr(g, method)(x, axes, descriptor=_desc(kw))
    return build


def _samples_for(method):
    def samples(rng, dt):
        pick = cycle(rng)
        for k in range(n_samples() + 2):
            rank = int(rng.integers(1, 5))
            shp = list(shape(rng, rank, hi=6))
            n_ax = int(rng.integers(0 if method == "fastFourierTransform" else 1, rank + 1))
            axes = [int(a) for a in rng.permutation(rank)[:n_ax]]
            axes = [a - rank if rng.random() < 0.3 else a for a in axes]
            tensor_form = bool(len(axes) == 1 and rng.random() < 0.4)
            kw = dict(inverse=pick(k, "inv", [False, True]), mode=pick(k, "mode", list(S)),
                      axes=axes, axes_tensor=tensor_form, label=bool(rng.random() < 0.5))
            if method == "HermiteanToRealFFT":
                last = max(a % rank for a in axes)
                shp[last] = max(shp[last], 1)
                kw["odd"] = pick(k, "odd", [False, True])
            x = _values(rng, shp, dt)
            inputs = [x] + ([np.array(axes, np.int32)] if tensor_form else [])
            yield Sample(inputs, kw, desc=f"axes {axes}")
    return samples


def _errors_for(method):
    def errors(rng):
        dt = np.complex64 if method == "HermiteanToRealFFT" else np.float32
        x = np.ones((2, 3), dt)
        kw = dict(inverse=False, mode=S.none, axes=[0], axes_tensor=False, odd=False)
        yield ErrorInput(Sample([x], dict(kw, axes=[2])), mg.ShapeError, "axes")
        yield ErrorInput(Sample([x], dict(kw, axes=[1, -1])), mg.ShapeError, "axes",
                         "distinct")
        yield ErrorInput(Sample([np.ones((2, 3), np.float16)], kw), mg.DataTypeError, "tensor")
        yield ErrorInput(Sample([x, np.array([0.0], np.float32)], dict(kw, axes_tensor=True)),
                         mg.DataTypeError, "axesTensor")
        if method != "fastFourierTransform":
            yield ErrorInput(Sample([x], dict(kw, axes=[])), mg.ShapeError, "axes")
            bad = np.ones((2, 3), np.float32 if method == "HermiteanToRealFFT" else np.complex64)
            yield ErrorInput(Sample([bad], kw), mg.DataTypeError, "tensor")
        if method == "HermiteanToRealFFT":
            yield ErrorInput(Sample([np.ones((0, 3), np.complex64)], kw), mg.ShapeError,
                             "tensor")
    return errors


for _m, _ref, _dts in (("fastFourierTransform", _ref_fft, (DT.float32, C64)),
                       ("realToHermiteanFFT", _ref_rfft, (DT.float32,)),
                       ("HermiteanToRealFFT", _ref_c2r, (C64,))):
    add(OpInfo(_m, build=_builder(_m), ref=_ref, samples=_samples_for(_m), dtypes=_dts,
               errors=_errors_for(_m), tol=TOL))
