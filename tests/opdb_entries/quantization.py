"""Entries of the quantization family (ops/quantization.py): quantize, dequantize and
dequantizeLUT (dequantize with LUTTensor=).

quantize's reference evaluates round-half-even(x / scale + zeroPoint) in float32 (the op's
arithmetic, so results are compared exactly), maps NaN to 0 and saturates to the type's range;
dequantize's is scale * (q - zeroPoint) in float64. Scales and zero points come as Python
numbers, per-axis tensors (scalar or [n]) and group tensors (dimensions 1, n or a divisor of
n); result / input types int8, uInt8, int4, uInt4. The LUT references index the table with
explicit group coordinates.
"""

from __future__ import annotations

import numpy as np

from opdb import FLOAT, ErrorInput, OpInfo, Sample, add, arr, f64, n_samples, shape

from ._common import cycle
from ._common import mg_module as _mg

mg = _mg()
DT = mg.DataType
QT = (DT.int8, DT.uInt8, DT.int4, DT.uInt4)
RANGE = {DT.int8: (-128, 127), DT.uInt8: (0, 255), DT.int4: (-8, 7), DT.uInt4: (0, 15)}


def _ints(rng, shp, dt):
    lo, hi = RANGE[dt]
    return rng.integers(lo, hi + 1, size=shp).astype(dt.numpy_dtype)


def _param_arr(p, kw, x_shape, which):
    """A scale / zero point as an array broadcastable to x (float64)."""
    if kw[which + "_kind"] == "number":
        return np.float64(kw[which])
    p = f64(p)
    if kw["axis"] is not None:
        s = [1] * len(x_shape)
        s[kw["axis"]] = -1
        return p.reshape(-1).reshape(s) if p.size != 1 else p.reshape(())
    p = p.reshape((1,) * (len(x_shape) - p.ndim) + p.shape)
    for d, (n, m) in enumerate(zip(x_shape, p.shape)):
        if m not in (1, n):
            p = np.repeat(p, n // m, axis=d)
    return p


def _params(inputs, kw):
    rest = list(inputs[1:])
    sc = rest.pop(0) if kw["scale_kind"] != "number" else None
    zp = rest.pop(0) if kw["zero_kind"] != "number" else None
    x = inputs[0]
    return _param_arr(sc, kw, x.shape, "scale"), _param_arr(zp, kw, x.shape, "zero")


def _ref_quantize(*inputs, **kw):
    x = inputs[0].astype(np.float32)
    s, z = (np.asarray(a, np.float64).astype(np.float32) for a in _params(inputs, kw))
    with np.errstate(all="ignore"):
        y = np.rint(x / s + z).astype(np.float64)
    lo, hi = RANGE[kw["dataType"]]
    y = np.where(np.isnan(y), 0, np.clip(y, lo, hi))
    return y.astype(np.int64).astype(kw["dataType"].numpy_dtype)


def _ref_dequantize(*inputs, **kw):
    s, z = _params(inputs, kw)
    return (f64(inputs[0]) - z) * s


def _build_for(method):
    def build(g, x, *rest, **kw):
        rest = list(rest)
        args = {"dataType": kw["dataType"]}
        if kw["axis"] is not None:
            args["axis"] = kw["axis"]
        sc = rest.pop(0) if kw["scale_kind"] != "number" else kw["scale"]
        zp = rest.pop(0) if kw["zero_kind"] != "number" else kw["zero"]
        if kw["labels"] and kw["scale_kind"] != "number":
            args["scaleTensor"] = sc
        else:
            args["scale"] = sc
        if kw["labels"] and kw["zero_kind"] != "number":
            args["zeroPointTensor"] = zp
        elif kw["zero"] is not None or kw["zero_kind"] != "number":
            args["zeroPoint"] = zp
        return getattr(g, method)(x, **args)
    return build


def _samples_for(method):
    def samples(rng, dt):
        pick = cycle(rng)
        for k in range(n_samples() + 2):
            rank = int(rng.integers(0, 4))
            shp = shape(rng, rank)
            form = pick(k, "form", ["number", "axis", "groups"]) if rank else "number"
            qt = pick(k, "qt", list(QT))
            x = arr(rng, shp, dt, -40, 40) if method == "quantize" else _ints(rng, shp, qt)
            inputs = [x]
            kw = dict(dataType=qt if method == "quantize" else dt, axis=None,
                      scale_kind="number", zero_kind="number", scale=None, zero=None,
                      labels=bool(rng.random() < 0.5))
            if form == "number":
                kw["scale"] = float(np.float32(rng.uniform(0.05, 2)))
                kw["zero"] = None if rng.random() < 0.3 else float(rng.integers(-3, 4))
            elif form == "axis":
                ax = int(rng.integers(-rank, rank))
                kw["axis"] = ax
                n = shp[ax]
                kw["scale_kind"] = "tensor"
                inputs.append(rng.uniform(0.05, 2, (n,) if rng.random() < 0.7 else ())
                              .astype(np.float32))
                if rng.random() < 0.5:
                    kw["zero_kind"] = "tensor"
                    inputs.append(rng.integers(-3, 4, (n,)).astype(np.float32))
                else:
                    kw["zero"] = float(rng.integers(-3, 4))
            else:
                gs = []
                for n in shp:
                    divs = [m for m in range(1, n + 1) if n % m == 0] or [0]
                    gs.append(int(rng.choice(divs + [1])))
                kw["scale_kind"] = "tensor"
                inputs.append(rng.uniform(0.05, 2, gs).astype(np.float32))
                if rng.random() < 0.5:
                    kw["zero_kind"] = "tensor"
                    inputs.append(rng.integers(-3, 4, gs).astype(np.float32))
                else:
                    kw["zero"] = float(rng.integers(-3, 4))
            if kw["zero"] is None and kw["zero_kind"] == "number":
                kw["zero"] = None
            yield Sample(inputs, dict(kw, zero=kw["zero"]), desc=f"{form} {qt.name}")
    return samples


def _fix_zero(ref):
    def wrapped(*inputs, **kw):
        if kw["zero_kind"] == "number" and kw["zero"] is None:
            kw = dict(kw, zero=0.0)
        return ref(*inputs, **kw)
    return wrapped


def _errors_for(method):
    def errors(rng):
        if method == "quantize":
            x, good, bad = np.ones((2, 3), np.float32), DT.int8, DT.int32
            wrong_in = np.ones((2, 3), np.int8)
        else:
            x, good, bad = np.ones((2, 3), np.int8), DT.float32, DT.int32
            wrong_in = np.ones((2, 3), np.float32)
        kw = dict(dataType=good, axis=None, scale_kind="number", zero_kind="number", scale=0.5,
                  zero=0.0, labels=False)
        yield ErrorInput(Sample([x], dict(kw, dataType=bad)), mg.DataTypeError, "dataType")
        yield ErrorInput(Sample([wrong_in], kw), mg.DataTypeError, "tensor")
        yield ErrorInput(Sample([x, np.ones(4, np.float32)], dict(kw, scale_kind="tensor",
                                                                  axis=1)),
                         mg.ShapeError, "scale")
        yield ErrorInput(Sample([x, np.ones(3, np.float32)], dict(kw, scale_kind="tensor",
                                                                  axis=2)),
                         mg.ShapeError, "axis")
        yield ErrorInput(Sample([x, np.ones((2, 2), np.float32)], dict(kw, scale_kind="tensor")),
                         mg.ShapeError, "scale")
        yield ErrorInput(Sample([x, np.ones(3, bool)], dict(kw, scale_kind="tensor", axis=1)),
                         mg.DataTypeError, "scale")
    return errors


for _m, _ref in (("quantize", _ref_quantize), ("dequantize", _ref_dequantize)):
    add(OpInfo(_m, build=_build_for(_m), ref=_fix_zero(_ref), samples=_samples_for(_m),
               dtypes=FLOAT, errors=_errors_for(_m)))


# ---------------------------------------------------------------------------- lookup tables
def _ref_lut(q, lut, **kw):
    qi = f64(q).astype(np.int64)
    lutf = f64(lut)
    extra = 1 if kw["axis"] is not None else 0
    groups = lut.shape[:lut.ndim - 1 - extra]
    out = np.zeros(q.shape + (lut.shape[-1],) * extra)
    for idx in np.ndindex(*q.shape):
        gi = tuple(i // (n // m) for i, n, m in zip(idx[len(idx) - len(groups):],
                                                   q.shape[len(q.shape) - len(groups):],
                                                   groups))
        out[idx] = lutf[gi + (qi[idx],)]
    if extra:
        out = np.moveaxis(out, -1, kw["axis"])
    return out


def _build_lut(g, q, lut, **kw):
    if kw["axis"] is None:
        return g.dequantize(q, LUTTensor=lut)
    return g.dequantize(q, LUTTensor=lut, axis=kw["axis"])


def _samples_lut(rng, dt):
    pick = cycle(rng)
    for k in range(n_samples() + 2):
        qt = pick(k, "qt", [DT.uInt8, DT.uInt4])
        vec = pick(k, "vec", [False, True])
        rank = int(rng.integers(0, 4))
        shp = shape(rng, rank)
        ng = int(rng.integers(0, min(3 - vec, rank) + 1))
        groups = []
        for n in shp[rank - ng:]:
            divs = [m for m in range(1, n + 1) if n % m == 0] or [1]
            groups.append(int(rng.choice(divs)))
        kk = 256 if qt == DT.uInt8 else 16
        lut_shape = tuple(groups) + (kk,) + ((int(rng.integers(1, 4)),) if vec else ())
        axis = int(rng.integers(-(rank + 1), rank + 1)) if vec else None
        yield Sample([_ints(rng, shp, qt), arr(rng, lut_shape, dt)], dict(axis=axis),
                     desc=f"{qt.name} groups {groups}")


def _errors_lut(rng):
    q = np.ones((2, 4), np.uint8)
    yield ErrorInput(Sample([q, np.ones(16, np.float32)], dict(axis=None)), mg.ShapeError,
                     "LUTTensor")
    yield ErrorInput(Sample([q.astype(np.int8), np.ones(256, np.float32)], dict(axis=None)),
                     mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([q, np.ones((3, 256), np.float32)], dict(axis=None)),
                     mg.ShapeError, "LUTTensor")
    yield ErrorInput(Sample([q, np.ones((256, 2), np.float32)], dict(axis=5)), mg.ShapeError,
                     "axis")


add(OpInfo("dequantizeLUT", build=_build_lut, ref=_ref_lut, samples=_samples_lut,
           dtypes=FLOAT, errors=_errors_lut))
