"""Entries of the matrix family (ops/matrix.py): matrixMultiplication.

    primary [..., M, K] @ secondary [..., K, N] -> [..., M, N]

The batch dimensions broadcast (NumPy rules, either operand may have fewer of them); M, K, N
and every batch dimension may be 0 or 1 (K = 0 gives zeros). The reference is the sum over k
of the products written out in float64 (floats) or on exact Python integers taken modulo
2^bits (integers wrap in their type). Operands of rank < 2 are refused (docs: the ops module's
decision), which the error inputs pin.
"""

from __future__ import annotations

import numpy as np

from opdb import (
    DT,
    FLOAT,
    NUMERIC,
    ErrorInput,
    OpInfo,
    Sample,
    add,
    arr,
    f64,
    n_samples,
    np_dtype,
    shape,
)

from ._common import broadcast_shapes
from ._common import mg_module as _mg


def _wrap_int(v: np.ndarray, dtype) -> np.ndarray:
    bits = 8 * np.dtype(dtype).itemsize
    lo = int(np.iinfo(dtype).min)
    flat = [((int(t) - lo) % (1 << bits)) + lo for t in v.reshape(-1)]
    return np.array(flat, dtype=dtype).reshape(v.shape)


def _ref(a, b):
    flt = a.dtype.kind == "f" or a.dtype == DT.bFloat16.numpy_dtype
    x = f64(a) if flt else a.astype(object)
    y = f64(b) if flt else b.astype(object)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    x = np.broadcast_to(x, batch + (m, k))
    y = np.broadcast_to(y, batch + (k, n))
    out = np.zeros(batch + (m, n), np.float64 if flt else object)
    if not flt:
        out[...] = 0
    for j in range(k):  # sum_k a[..., :, k] b[..., k, :]
        out = out + x[..., :, j:j + 1] * y[..., j:j + 1, :]
    return out if flt else _wrap_int(out, a.dtype)


def _torch_ref(a, b):
    import torch

    return torch.matmul(a, b)


_MAG = {DT.int8: 100, DT.uInt8: 200, DT.int16: 2 ** 10, DT.uInt16: 2 ** 11,
        DT.int32: 2 ** 20, DT.uInt32: 2 ** 21, DT.int64: 2 ** 40, DT.uInt64: 2 ** 41}


def _values(rng, shp, dt):
    if dt in FLOAT:
        return arr(rng, shp, dt)
    # products beyond the type's range, so that the integer product wraps; now and then the
    # whole range (unsigned values with the top bit set included)
    u = rng.random()
    if u < 0.3:
        info = np.iinfo(np_dtype(dt))
        return rng.integers(info.min, info.max, size=shp, dtype=np_dtype(dt), endpoint=True)
    m = _MAG[dt] if u < 0.7 else 3
    return arr(rng, shp, dt, -m, m)


def _samples(rng, dt):
    for i in range(n_samples() + 1):
        m, k, n = shape(rng, 3)
        sa, sb = broadcast_shapes(rng, 2, rank=int(rng.integers(0, 3)))
        if i == 0:  # one operand with no batch dimensions, the other with two
            sa, sb = (), (2, 3)
        yield Sample([_values(rng, sa + (m, k), dt), _values(rng, sb + (k, n), dt)])


def _errors(rng):
    mg = _mg()
    f = np.ones((2, 3), np.float32)
    yield ErrorInput(Sample([np.ones((3,), np.float32), np.ones((3, 2), np.float32)]),
                     mg.ShapeError, "primary", "[1, K]")
    yield ErrorInput(Sample([f, np.ones((3,), np.float32)]), mg.ShapeError, "secondary",
                     "[K, 1]")
    yield ErrorInput(Sample([np.ones((), np.float32), f]), mg.ShapeError, "primary")
    yield ErrorInput(Sample([f, np.ones((4, 2), np.float32)]), mg.ShapeError, "secondary")
    yield ErrorInput(Sample([np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32)]),
                     mg.ShapeError, "secondary")
    yield ErrorInput(Sample([f, np.ones((3, 2), np.float16)]), mg.DataTypeError, "secondary")
    yield ErrorInput(Sample([f.astype(np.int32), np.ones((3, 2), np.float32)]),
                     mg.DataTypeError, "secondary")
    yield ErrorInput(Sample([f.astype(bool), np.ones((3, 2), bool)]), mg.DataTypeError,
                     "primary")


add(OpInfo(
    "matrixMultiplication", build=lambda g, a, b: g.matrixMultiplication(a, b), ref=_ref,
    samples=_samples, dtypes=NUMERIC, differentiable=(0, 1), torch_ref=_torch_ref,
    errors=_errors))
