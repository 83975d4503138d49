"""NumPy kernels of the random family: the Philox streams and conversions of
backends/_random_math.py (shared with the torch backend, so the bits are the same), on int64 /
float64 NumPy arrays. A form without seed or state draws a fresh 64-bit key from the OS on
every run."""

from __future__ import annotations

import secrets

import numpy as np

from .. import _random_math as rm
from . import kernel


class _XP:
    """The array primitives _random_math needs, for NumPy."""

    where = staticmethod(np.where)
    sqrt = staticmethod(np.sqrt)
    log = staticmethod(np.log)
    cos = staticmethod(np.cos)
    sin = staticmethod(np.sin)

    @staticmethod
    def minimum(a, b):
        return np.minimum(a, np.asarray(b, a.dtype) if isinstance(b, float) else b)

    @staticmethod
    def maximum(a, b):
        return np.maximum(a, np.asarray(b, a.dtype) if isinstance(b, float) else b)

    @staticmethod
    def arange(n: int) -> np.ndarray:
        return np.arange(n, dtype=np.int64)

    @staticmethod
    def stack4(ws) -> np.ndarray:
        return np.stack(np.broadcast_arrays(*ws), axis=-1)

    @staticmethod
    def stack2(a, b) -> np.ndarray:
        return np.stack([a, b], axis=-1)

    @staticmethod
    def flat(a) -> np.ndarray:
        return a.reshape(-1)

    @staticmethod
    def take_lane(a, lanes) -> np.ndarray:
        return np.take_along_axis(a, lanes[:, None], axis=1)[:, 0]

    @staticmethod
    def f64(a) -> np.ndarray:
        return np.asarray(a).astype(np.float64)

    @staticmethod
    def cast(a, dt) -> np.ndarray:
        npdt = np.dtype(dt) if isinstance(dt, str) else dt.numpy_dtype
        a = np.asarray(a)
        if npdt == np.float16 and a.dtype == np.float64:
            a = a.astype(np.float32)  # float64 -> float32 -> float16, as torch converts
        return a.astype(npdt)

    @staticmethod
    def none(mask) -> bool:
        return not bool(np.any(mask))


XP = _XP()


def _state_parts(state: np.ndarray):
    w = state.astype(np.int64) & rm.MASK
    return tuple(w[1:5]), (w[5], w[6])


def _new_state(base, key, blocks: int) -> np.ndarray:
    c = rm.add_counter(base, blocks)
    w = np.array([rm.STATE_VERSION, *c, *key], dtype=np.int64)
    return rm.to_int32_bits(XP, w)


@kernel("randomPhiloxStateTensor")
def randomPhiloxStateTensor(words):
    return np.array(words, dtype=np.int32)


@kernel("randomTensor")
def randomTensor(shape_tensor, state, a):
    n = int(np.prod(a.shape, dtype=np.int64))
    if a.stateful:
        base, key = _state_parts(state)
    else:
        base, key = rm.seed_state(a.seed if a.seed is not None else secrets.randbits(64))
    with np.errstate(all="ignore"):
        out = rm.sample(XP, a, n, base, key).reshape(a.shape)
    if not a.stateful:
        return out
    return out, _new_state(base, key, rm.stream_words(a, n))


@kernel("dropout")
def dropout(x, rate, a):
    base, key = rm.seed_state(secrets.randbits(64))
    n = x.size
    keep = rm.unit24(XP, rm.words(XP, n, base, key)).reshape(x.shape) >= a.rate
    scale = np.float32(1.0 / (1.0 - a.rate)) if a.rate < 1.0 else np.float32(0.0)
    mask = np.where(keep, scale, np.float32(0.0)).astype(x.dtype)
    with np.errstate(all="ignore"):
        y = np.where(keep, x.astype(np.float32) * scale, np.float32(0.0)).astype(x.dtype)
    return y, mask
