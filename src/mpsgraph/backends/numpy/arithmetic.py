"""NumPy kernels of the arithmetic family, generated from the rows of ops/arithmetic.py.

Each row names its NumPy function: `np.xxx`, or one of the helpers below (the rules NumPy does
not implement as docs/semantics.md defines them). The generated kernel widens float16 /
bFloat16 operands to float32 (`work`), applies the function under `np.errstate(all="ignore")`
and casts the result once to the row's result type (`finish`; `work` / `finish` are shared
with the other kernel modules). Integers compute in their own type (wrapping). Broadcasting is
NumPy's, which the graph layer has already checked. Every kernel returns a new array (0-d
results included: NumPy would return a scalar).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ...ops.arithmetic import ELEMENTWISE, result_type
from ...types import DataType
from . import kernel

HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
F32 = np.dtype(np.float32)
C64 = np.dtype(np.complex64)


def work(x: np.ndarray) -> np.ndarray:
    """The array in its computing type: float32 for the half types, itself otherwise."""
    return x.astype(F32) if x.dtype in HALF else x


def finish(y, dtype: np.dtype) -> np.ndarray:
    """`y` as an ndarray of `dtype` (one rounding for half types)."""
    y = np.asarray(y)
    return y if y.dtype == dtype else y.astype(dtype)


# ---------------------------------------------------------------------------- division family
def _safe(b: np.ndarray) -> np.ndarray:
    """b with 0 (and -1 for signed types: INT_MIN / -1 traps in C) replaced by 1."""
    bad = b == 0
    if b.dtype.kind == "i":
        bad = bad | (b == -1)
    return np.where(bad, np.ones((), b.dtype), b)


def _trunc_div_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer a / b truncated toward zero, 0 where b == 0, INT_MIN / -1 = INT_MIN."""
    safe = _safe(b)
    q = np.floor_divide(a, safe)
    if a.dtype.kind == "i":
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(a.dtype)
        q = np.where(b == -1, np.negative(a), q)  # wraps for INT_MIN
    return np.where(b == 0, np.zeros((), a.dtype), q)


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "fc":
        return np.true_divide(a, b)
    return _trunc_div_int(a, b)


def division_no_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = divide(a, b)
    return np.where(b == 0, np.zeros((), q.dtype), q)


def modulo(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - trunc(a / b) * b: C fmod for floats (x % 0 = NaN); integers: x % 0 = 0."""
    if a.dtype.kind == "f":
        return np.fmod(a, b)
    safe = _safe(b)
    r = np.fmod(a, safe)  # C remainder: the sign of a
    return np.where((b == 0) | (b == -1) if a.dtype.kind == "i" else b == 0,
                    np.zeros((), a.dtype), r)


def floor_modulo(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - floor(a / b) * b (the sign of b; NumPy mod); 0 where b == 0, every type."""
    if a.dtype.kind == "f":
        r = np.mod(a, b)
    else:
        safe = _safe(b)
        r = np.mod(a, safe)
        if a.dtype.kind == "i":
            r = np.where(b == -1, np.zeros((), a.dtype), r)
    return np.where(b == 0, np.zeros((), r.dtype), r)


# ---------------------------------------------------------------------------- logical
def _truth(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == np.bool_ else x != 0  # NaN != 0: true


def logical_and(a, b):
    return np.logical_and(_truth(a), _truth(b))


def logical_or(a, b):
    return np.logical_or(_truth(a), _truth(b))


def logical_xor(a, b):
    return np.logical_xor(_truth(a), _truth(b))


def logical_nand(a, b):
    return ~np.logical_and(_truth(a), _truth(b))


def logical_nor(a, b):
    return ~np.logical_or(_truth(a), _truth(b))


def logical_xnor(a, b):
    return _truth(a) == _truth(b)


def logical_not(x):
    return ~_truth(x)


# ---------------------------------------------------------------------------- bitwise
def _shift_parts(a: np.ndarray, b: np.ndarray):
    """(in range, b clipped into [0, width)): a shift by b < 0 or >= width is out of range."""
    width = a.dtype.itemsize * 8
    if b.dtype.kind == "u":
        ok = b < width
    else:
        ok = (b >= 0) & (b < width)
    return ok, np.where(ok, b, np.zeros((), b.dtype))


def left_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ok, s = _shift_parts(a, b)
    return np.where(ok, np.left_shift(a, s), np.zeros((), a.dtype))


def right_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ok, s = _shift_parts(a, b)
    fill = np.zeros((), a.dtype)
    if a.dtype.kind == "i":
        fill = np.where(a < 0, np.array(-1, a.dtype), fill)
    return np.where(ok, np.right_shift(a, s), fill)


_POP = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def popcount(x: np.ndarray) -> np.ndarray:
    """1 bits of the two's-complement representation, in x's type."""
    c = np.array(x, order="C", copy=True).reshape(-1)
    byts = c.view(np.uint8).reshape(c.shape + (c.dtype.itemsize,))
    return _POP[byts].sum(axis=-1, dtype=np.int64).astype(x.dtype).reshape(x.shape)


# ---------------------------------------------------------------------------- unary math
def reciprocal(x: np.ndarray) -> np.ndarray:
    return np.divide(np.ones((), x.dtype), x)


def rsqrt(x: np.ndarray) -> np.ndarray:
    return np.divide(np.ones((), x.dtype), np.sqrt(x))


def exp10(x: np.ndarray) -> np.ndarray:
    return np.power(np.array(10, x.dtype), x)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, halfway cases away from zero (exact: x - rint(x) is exact)."""
    r = np.rint(x)
    return np.where(np.abs(x - r) == 0.5, x + np.copysign(np.array(0.5, x.dtype), x), r)


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64 to ~1e-15: the series 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (2n+1)!!
    for |x| < 3 (positive terms, no cancellation), 1 - erfc by its continued fraction beyond."""
    ax = np.abs(x)
    out = np.empty_like(ax)
    small = ax < 3.0
    xs = ax[small]
    if xs.size:
        x2 = xs * xs
        term = xs.copy()
        total = xs.copy()
        for n in range(1, 80):  # the terms peak near n = x^2 and then fall faster than 2^-n
            term = term * (2.0 * x2) / (2 * n + 1)
            total += term
        out[small] = (2.0 / math.sqrt(math.pi)) * np.exp(-x2) * total
    big = ~small & ~np.isnan(ax)
    xb = ax[big]
    if xb.size:
        f = xb.copy()
        for k in range(60, 0, -1):  # erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...)))
            f = xb + (k / 2.0) / f
        with np.errstate(all="ignore"):
            out[big] = 1.0 - np.exp(-xb * xb) / math.sqrt(math.pi) / f
    out[np.isnan(ax)] = np.nan
    return np.copysign(out, x)


def erf(x: np.ndarray) -> np.ndarray:
    return _erf64(x.astype(np.float64)).astype(x.dtype)


# ---------------------------------------------------------------------------- ternary
def pick(p: np.ndarray, t: np.ndarray, f: np.ndarray) -> np.ndarray:
    return np.where(_truth(p), t, f)


def clip(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, lo), hi)  # np.maximum / minimum propagate NaN


# ---------------------------------------------------------------------------- complex
def absolute_square(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        return np.square(x.real) + np.square(x.imag)
    return np.square(x)


def complex_tensor(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, C64)
    out.real = re
    out.imag = im
    return out


def real_part(x: np.ndarray) -> np.ndarray:
    return np.array(x.real, copy=True)


def imaginary_part(x: np.ndarray) -> np.ndarray:
    return np.array(x.imag, copy=True) if x.dtype.kind == "c" else np.zeros_like(x)


def conjugate(x: np.ndarray) -> np.ndarray:
    return np.conj(x) if x.dtype.kind == "c" else np.array(x, copy=True)


def planar(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind != "c":
        return np.array(x, copy=True)
    return np.concatenate([x.real, x.imag], axis=-1)


# ---------------------------------------------------------------------------- the kernels
def _function(spec: str):
    return getattr(np, spec[3:]) if spec.startswith("np.") else globals()[spec]


def _make_kernel(row):
    fn = _function(row.numpy)
    out = {dt.numpy_dtype: result_type(row, dt).numpy_dtype for dt in row.dtypes}
    first = 1 if row.name == "select" else 0  # select's result has trueTensor's type

    def k(*args):
        xs = args[:-1]  # (the last argument is the kernel attrs: None)
        with np.errstate(all="ignore"):  # (the cast to a half type may overflow to inf)
            return finish(fn(*[work(x) for x in xs]), out[xs[first].dtype])
    k.__name__ = row.name
    return k


for _row in ELEMENTWISE.values():
    kernel(_row.name)(_make_kernel(_row))
del _row

__all__ = ["HALF", "F32", "work", "finish", "DataType"]
