"""NumPy kernels of the activation family (float32 math; half types rounded once).

    sigmoid   e = exp(-|x|);  s = 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0   (no overflow)
    softMax   m = max(x, axis); e = exp(x - m); e / sum(e, axis)   (a row with +inf, NaN
              or only -inf is NaN)
"""

from __future__ import annotations

import numpy as np

from . import kernel
from .arithmetic import finish, work


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if x.size == 0:
        return x.copy()
    # The shift by the row's maximum is kept even where it is not finite: a row with +inf (or
    # NaN) gets inf - inf = NaN and is NaN wholly, a row of all -inf too (0 / 0). Replacing a
    # non-finite maximum by 0 made [inf, 1, 2] give [NaN, 0, 0], a row that sums to no number.
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


@kernel("sigmoid")
def sigmoid(x: np.ndarray, attrs: None) -> np.ndarray:
    with np.errstate(all="ignore"):
        return finish(_sigmoid(work(x)), x.dtype)


@kernel("tanh")
def tanh(x: np.ndarray, attrs: None) -> np.ndarray:
    return finish(np.tanh(work(x)), x.dtype)


@kernel("reLU")
def reLU(x: np.ndarray, attrs: None) -> np.ndarray:
    # NaN stays NaN (maximum propagates it), as x * (x > 0) would not
    return finish(np.maximum(x, np.zeros((), x.dtype)), x.dtype)


@kernel("softMax")
def softMax(x: np.ndarray, axis: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        return finish(_softmax(work(x), axis), x.dtype)


@kernel("leakyReLU")
def leakyReLU(x: np.ndarray, alphaTensor: np.ndarray | None, alpha: float | None
              ) -> np.ndarray:
    a = np.float32(alpha) if alphaTensor is None else work(alphaTensor)
    xw = work(x)
    with np.errstate(all="ignore"):
        return finish(np.where(xw >= 0, xw, a * xw), x.dtype)


@kernel("sigmoidGradient")
def sigmoidGradient(dy: np.ndarray, x: np.ndarray, attrs: None) -> np.ndarray:
    with np.errstate(all="ignore"):
        s = _sigmoid(work(x))
        return finish(work(dy) * (s * (1 - s)), dy.dtype)


@kernel("reLUGradient")
def reLUGradient(dy: np.ndarray, x: np.ndarray, attrs: None) -> np.ndarray:
    return finish(np.where(work(x) > 0, dy, np.zeros((), dy.dtype)), dy.dtype)


@kernel("softMaxGradient")
def softMaxGradient(dy: np.ndarray, x: np.ndarray, axis: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        s = _softmax(work(x), axis)
        d = work(dy)
        return finish(s * (d - np.sum(s * d, axis=axis, keepdims=True)), dy.dtype)


@kernel("leakyReLUGradient")
def leakyReLUGradient(dy: np.ndarray, x: np.ndarray, alpha: np.ndarray,
                      attrs: None) -> np.ndarray:
    d = work(dy)
    with np.errstate(all="ignore"):
        return finish(np.where(work(x) > 0, d, work(alpha) * d), dy.dtype)
