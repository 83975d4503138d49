"""Entries of the linear-algebra family (ops/linalg.py): bandPart, inverse, HammingDistance,
nonZeroIndices. References: loops over the matrix elements (bandPart), numpy.linalg.inv in
float64 (inverse: an independent LAPACK call on well-conditioned matrices), Python's
bin(x ^ y).count("1") on the two's-complement bits (HammingDistance), a loop over the
elements in row-major order (nonZeroIndices, whose result shape is decided at run time)."""

from __future__ import annotations

import numpy as np

from opdb import (
    DT,
    FLOAT,
    INTEGER,
    NUMERIC,
    ErrorInput,
    OpInfo,
    Sample,
    add,
    arr,
    f64,
    is_float,
    n_samples,
    shape,
)

from ._common import cycle, size
from ._common import mg_module as _mg


def _bandpart_samples(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 3):
        shp = shape(rng, int(rng.integers(2, 4)), hi=5)
        lo, up = int(rng.integers(-1, 4)), int(rng.integers(-1, 4))
        form = pick(k, "form", ("int", "const", "fed", "kw"))
        ins = [arr(rng, shp, dt)]
        if form == "fed":
            ins += [np.array(lo, np.int32), np.array(up, np.int64)]
        yield Sample(ins, {"lo": lo, "up": up, "form": form}, diff=(0,))


def _build_bandpart(g, x, *fed, lo, up, form):
    mg = _mg()
    if form == "fed":
        return g.bandPart(x, numLower=fed[0], numUpper=fed[1])
    if form == "const":
        return g.bandPart(x, numLower=g.constant(lo, dataType=mg.int32),
                          numUpper=g.constant(up, dataType=mg.int64))
    if form == "kw":
        return g.bandPart(x, numLowerTensor=g.constant(lo, dataType=mg.int32), numUpper=up)
    return g.bandPart(x, numLower=lo, numUpper=up)


def _ref_bandpart(x, *fed, lo, up, form):
    out = (f64(x) if is_float(x) else np.array(x)).copy()
    for idx in np.ndindex(*x.shape):
        i, j = idx[-2], idx[-1]
        if not ((lo < 0 or i - j <= lo) and (up < 0 or j - i <= up)):
            out[idx] = 0
    return out


def _inverse_samples(rng, dt):
    for _ in range(n_samples() + 2):
        n = size(rng, 0, 4)
        batch = shape(rng, int(rng.integers(0, 3)), hi=3)
        a = arr(rng, batch + (n, n), dt, -0.3, 0.3).astype(np.float64) + 2 * np.eye(n)
        yield Sample([a.astype(dt.numpy_dtype)], {}, diff=(0,))
    yield Sample([np.zeros((2, 2), dt.numpy_dtype)], {}, diff=(), desc="singular")


def _ref_inverse(a):
    a = f64(a)
    if a.size == 0:
        return np.zeros(a.shape)
    sing = (np.linalg.det(np.nan_to_num(a)) == 0) | np.isnan(a).any(axis=(-2, -1))
    safe = np.where(sing[..., None, None], np.eye(a.shape[-1]), a)
    return np.where(sing[..., None, None], np.nan, np.linalg.inv(safe))


def _torch_inverse(a):
    import torch

    return torch.linalg.inv(a)


def _hamming_samples(rng, dt):
    mg = _mg()
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        m, n, kk = size(rng, 0, 3), size(rng, 0, 3), size(rng, 0, 4)
        batch = shape(rng, int(rng.integers(0, 2)), hi=3)
        bb = tuple(1 if rng.random() < 0.3 else d for d in batch)
        if dt == DT.bool:
            a, b = arr(rng, batch + (m, kk), dt), arr(rng, bb + (n, kk), dt)
        else:
            info = np.iinfo(dt.numpy_dtype)
            a = rng.integers(info.min, info.max, size=batch + (m, kk), endpoint=True,
                             dtype=dt.numpy_dtype)
            b = rng.integers(info.min, info.max, size=bb + (n, kk), endpoint=True,
                             dtype=dt.numpy_dtype)
        out = pick(k, "out", (None, mg.DataType.uInt32, mg.DataType.uInt16))
        yield Sample([a, b], {"resultDataType": out})


def _build_hamming(g, a, b, resultDataType):
    kw = {} if resultDataType is None else {"resultDataType": resultDataType}
    return g.HammingDistance(a, b, **kw)


def _ref_hamming(a, b, resultDataType):
    bits = 8 * a.dtype.itemsize
    mask = (1 << bits) - 1
    sa = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    A = np.broadcast_to(a, sa + a.shape[-2:])
    Bm = np.broadcast_to(b, sa + b.shape[-2:])
    out = np.zeros(sa + (a.shape[-2], b.shape[-2]), np.int64)
    for idx in np.ndindex(*out.shape):
        r, c = A[idx[:-2] + (idx[-2],)], Bm[idx[:-2] + (idx[-1],)]
        out[idx] = sum(bin((int(x) & mask) ^ (int(y) & mask)).count("1") for x, y in zip(r, c))
    dt = np.uint32 if resultDataType is None or int(resultDataType) == int(DT.uInt32) \
        else np.uint16
    return out.astype(dt)


def _nonzero_samples(rng, dt):
    for k in range(n_samples() + 2):
        shp = shape(rng, int(rng.integers(0, 4)), hi=4)
        x = arr(rng, shp, dt, -1, 1)
        if x.size and dt != DT.bool:
            x.reshape(-1)[rng.random(x.size) < 0.4] = 0
        if dt in FLOAT and x.size and k % 2:
            x.reshape(-1)[0] = np.nan
        yield Sample([x], {"then": k % 3 == 0})


def _build_nonzero(g, x, then):
    y = g.nonZeroIndices(x)
    if then:  # an op after the value-dependent shape: planned at run time
        mg = _mg()
        return [y, g.addition(y, g.constant(1, dataType=mg.int32))]
    return y


def _ref_nonzero(x, then):
    rows = [list(idx) for idx in np.ndindex(*x.shape) if x[idx] != 0 or
            (is_float(x) and np.isnan(f64(x[idx])))]
    y = np.array(rows, np.int32).reshape(len(rows), x.ndim)
    return [y, y + 1] if then else y


def _linalg_errors(kind):
    def gen(rng):
        mg = _mg()
        if kind == "bandPart":
            yield ErrorInput(Sample([np.ones((3,), np.float32)], {"lo": 0, "up": 0,
                                                                  "form": "int"}),
                             mg.ShapeError, "tensor")
            yield ErrorInput(Sample([np.ones((2, 2), np.float32), np.array(0.0, np.float32),
                                     np.array(1, np.int32)], {"lo": 0, "up": 0, "form": "fed"}),
                             mg.DataTypeError, "numLowerTensor")
            yield ErrorInput(Sample([np.ones((2, 2), np.float32)], {"lo": 0.5, "up": 0,
                                                                    "form": "int"}),
                             mg.GraphError, "numLower")
        elif kind == "inverse":
            yield ErrorInput(Sample([np.ones((2, 3), np.float32)], {}), mg.ShapeError, "input")
            yield ErrorInput(Sample([np.ones((3,), np.float32)], {}), mg.ShapeError, "input")
        elif kind == "HammingDistance":
            a = np.ones((2, 3), np.int32)
            yield ErrorInput(Sample([a, np.ones((2, 4), np.int32)], {"resultDataType": None}),
                             mg.ShapeError, "secondary")
            yield ErrorInput(Sample([a, a.astype(np.int16)], {"resultDataType": None}),
                             mg.DataTypeError, "secondary")
            yield ErrorInput(Sample([a, a], {"resultDataType": mg.float32}),
                             mg.DataTypeError, "resultDataType")
    return gen


add(OpInfo("bandPart", build=_build_bandpart, ref=_ref_bandpart, samples=_bandpart_samples,
           dtypes=NUMERIC + (DT.bool,), differentiable=(0,), errors=_linalg_errors("bandPart")))
add(OpInfo("inverse", build=lambda g, a: g.inverse(a), ref=_ref_inverse,
           samples=_inverse_samples, dtypes=FLOAT, differentiable=(0,),
           torch_ref=_torch_inverse, errors=_linalg_errors("inverse"), broadcast_ok=False,
           tol={DT.float32: (1e-4, 1e-5), DT.float16: (4e-3, 1e-3), DT.bFloat16: (3e-2, 1e-2)}))
add(OpInfo("HammingDistance", build=_build_hamming, ref=_ref_hamming,
           samples=_hamming_samples, dtypes=INTEGER + (DT.bool,),
           errors=_linalg_errors("HammingDistance")))
add(OpInfo("nonZeroIndices", build=_build_nonzero, ref=_ref_nonzero,
           samples=_nonzero_samples, dtypes=NUMERIC + (DT.bool,)))
