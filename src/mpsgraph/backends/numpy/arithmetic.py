"""NumPy kernels of the arithmetic family.

float16 / bFloat16 operands are widened to float32, computed, and rounded once to the operand
type (`work` / `finish`, shared with the other kernel modules). Integers compute in their own
type (wrapping). Broadcasting is NumPy's, which the graph layer has already checked. Every
kernel returns a new array (0-d results included: NumPy would return a scalar).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from . import kernel

HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
F32 = np.dtype(np.float32)


def work(x: np.ndarray) -> np.ndarray:
    """The array in its computing type: float32 for the half types, itself otherwise."""
    return x.astype(F32) if x.dtype in HALF else x


def finish(y, dtype: np.dtype) -> np.ndarray:
    """`y` as an ndarray of `dtype` (one rounding for half types)."""
    y = np.asarray(y)
    return y if y.dtype == dtype else y.astype(dtype)


def _binary(fn):
    def k(a: np.ndarray, b: np.ndarray, attrs: None) -> np.ndarray:
        with np.errstate(all="ignore"):
            return finish(fn(work(a), work(b)), a.dtype)
    return k


def _unary(fn):
    def k(x: np.ndarray, attrs: None) -> np.ndarray:
        with np.errstate(all="ignore"):
            return finish(fn(work(x)), x.dtype)
    return k


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.true_divide(a, b)
    # integers: truncate toward zero (C / Metal), x / 0 -> 0
    safe = np.where(b == 0, np.ones((), b.dtype), b)
    q = np.floor_divide(a, safe)
    if a.dtype.kind == "i":
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(a.dtype)
    return np.where(b == 0, np.zeros((), a.dtype), q)


for _name, _fn in (("addition", np.add), ("subtraction", np.subtract),
                   ("multiplication", np.multiply), ("division", _divide),
                   ("maximum", np.fmax), ("minimum", np.fmin), ("power", np.power)):
    kernel(_name)(_binary(_fn))

for _name, _fn in (("negative", np.negative), ("absolute", np.abs), ("square", np.square),
                   ("exponent", np.exp), ("logarithm", np.log), ("squareRoot", np.sqrt),
                   ("reciprocal", lambda x: np.divide(np.ones((), x.dtype), x))):
    kernel(_name)(_unary(_fn))


@kernel("equal")
def equal(a: np.ndarray, b: np.ndarray, attrs: None) -> np.ndarray:
    return np.asarray(np.equal(work(a), work(b)))


@kernel("greaterThan")
def greaterThan(a: np.ndarray, b: np.ndarray, attrs: None) -> np.ndarray:
    return np.asarray(np.greater(work(a), work(b)))


@kernel("select")
def select(predicate: np.ndarray, t: np.ndarray, f: np.ndarray, attrs: None) -> np.ndarray:
    return finish(np.where(predicate.astype(bool), t, f), t.dtype)
