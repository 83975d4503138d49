"""Counter-based random numbers for the random family (ops/random.py), written ONCE for every
backend on int64 / float64 arrays of an array library (`xp`: the NumPy or the torch backend's
`ArrayOps` adapter), so that one seed gives the same bits on cpu, torch-cpu and cuda.

Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3",
SC'11; the generator of Random123, cuRAND, JAX and TensorFlow): a 128-bit counter
(c0, c1, c2, c3) and a 64-bit key (k0, k1) give four 32-bit words through ten rounds of

    (hi0, lo0) = M0 * c0,  (hi1, lo1) = M1 * c2     (32 x 32 -> 64-bit products)
    c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0),  then  k += (W0, W1)  (mod 2^32)

Every value stays below 2^49 in int64: each 32 x 32-bit product is formed from 16-bit halves,
so no backend ever needs an unsigned 64-bit type (torch has none on CUDA).

Stream layout: word w of an op's stream is word (w mod 4) of Philox(counter + w // 4, key),
the counter added with carries over its four words. An op that needs `words` words uses
ceil(words / 4) counters and its new state's counter is advanced by exactly that many (by a
fixed, value-independent amount for the rejection sampler: see `sample`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

MASK = 0xFFFFFFFF
M0, M1 = 0xD2511F53, 0xCD9E8D57  # the Philox4x32 multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # the Weyl key increments (golden ratio, sqrt(3) - 1)
ROUNDS = 10
STATE_WORDS = 7  # [version, c0, c1, c2, c3, k0, k1] as int32 bit patterns
STATE_VERSION = 1
REJECTION_ROUNDS = 8  # truncated normal by Box-Muller: rejection rounds before the fallback

UNIFORM, NORMAL, TRUNCATED = 0, 1, 2  # RandomDistribution's raw values
INV_CDF, BOX_MULLER = 0, 1  # RandomNormalSamplingMethod's raw values


def _mulhilo(a: Any, m: int) -> tuple[Any, Any]:
    """(high, low) 32-bit words of a * m, for int64 arrays a < 2^32 and an int m < 2^32."""
    t = (a & 0xFFFF) * m  # < 2^48
    u = (a >> 16) * m + (t >> 16)  # < 2^48 + 2^32
    return u >> 16, ((u & 0xFFFF) << 16) | (t & 0xFFFF)


def philox4x32(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any) -> tuple[Any, ...]:
    """Philox4x32-10 of counters (int64 arrays of 32-bit values) under key (k0, k1) (ints or
    0-d int64 arrays): four int64 arrays of 32-bit words."""
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + W0) & MASK
            k1 = (k1 + W1) & MASK
        hi0, lo0 = _mulhilo(c0, M0)
        hi1, lo1 = _mulhilo(c2, M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def add_counter(base: tuple[Any, ...], j: Any) -> tuple[Any, Any, Any, Any]:
    """The 128-bit counter base (four 32-bit words, low first) + j (an int or an int64 array
    of values < 2^62), modulo 2^128."""
    s = base[0] + j
    c0, carry = s & MASK, s >> 32
    s = base[1] + carry
    c1, carry = s & MASK, s >> 32
    s = base[2] + carry
    c2, carry = s & MASK, s >> 32
    c3 = (base[3] + carry) & MASK
    return c0, c1, c2, c3


def words_at(xp: Any, idx: Any, base: tuple[Any, ...], key: tuple[Any, Any]) -> Any:
    """Words idx (an int64 array) of the stream of (base, key)."""
    blocks = add_counter(base, idx >> 2)
    out = xp.stack4(philox4x32(*blocks, *key))  # [m, 4]
    return xp.take_lane(out, idx & 3)


def words(xp: Any, n: int, base: tuple[Any, ...], key: tuple[Any, Any], start: int = 0) -> Any:
    """Words start .. start + n - 1 of the stream (start a multiple of 4)."""
    nb = (n + 3) // 4
    blocks = add_counter(base, xp.arange(nb) + (start >> 2))
    return xp.flat(xp.stack4(philox4x32(*blocks, *key)))[:n]


# ---------------------------------------------------------------------------- float math
_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
      1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
      6.680131188771972e+01, -1.328068155288572e+01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
      -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
      3.754408661907416e+00)
_P_LOW = 0.02425


def _poly(x: Any, coeffs: tuple[float, ...], one: bool = False) -> Any:
    acc = coeffs[0]
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc * x + 1.0 if one else acc


def ndtri(xp: Any, p: Any) -> Any:
    """The inverse of the standard normal CDF for float64 p in (0, 1) (P. J. Acklam's rational
    approximation, relative error below 1.2e-9: far below float32's 6e-8)."""
    q = p - 0.5
    r = q * q
    central = _poly(r, _A) * q / _poly(r, _B, one=True)
    tail_p = xp.minimum(p, 1.0 - p)  # the smaller tail, exact for p with <= 33 bits
    t = xp.sqrt(-2.0 * xp.log(xp.maximum(tail_p, 1e-300)))
    tail = _poly(t, _C) / _poly(t, _D, one=True)  # the low tail's quantile (negative)
    tail = xp.where(p > 0.5, -tail, tail)
    return xp.where((p >= _P_LOW) & (p <= 1.0 - _P_LOW), central, tail)


def ndtr(x: float) -> float:
    """The standard normal CDF of a Python float (a descriptor bound)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def open01(xp: Any, w: Any) -> Any:
    """Words as float64 in (0, 1): (w + 1/2) / 2^32."""
    return (xp.f64(w) + 0.5) * (2.0 ** -32)


def unit24(xp: Any, w: Any) -> Any:
    """Words as float64 in [0, 1) on a grid of 2^-24 (float32's): (w >> 8) / 2^24."""
    return xp.f64(w >> 8) * (2.0 ** -24)


def type_bounds(lo: float, hi: float, dtype: np.dtype) -> tuple[float, float]:
    """(the smallest value of `dtype` >= lo, the largest value of `dtype` < hi): the values of
    the type in [lo, hi). Python floats, exact in the type (so that a comparison or clamp
    with them is exact on every backend)."""
    # (compared as Python floats: NumPy would compare a float16 with lo rounded to float16)
    a = np.asarray(lo, np.float64).astype(dtype)
    if float(a) < lo:
        a = np.nextafter(a, np.asarray(np.inf, dtype))
    b = np.asarray(hi, np.float64).astype(dtype)
    if float(b) >= hi:
        b = np.nextafter(b, np.asarray(-np.inf, dtype))
    return float(a), float(b)


# ---------------------------------------------------------------------------- sampling
def stream_words(a: Any, n: int) -> int:
    """The counters (blocks of four words) a sample of n elements uses from its state."""
    if a.distribution == UNIFORM or a.method == INV_CDF:
        return (n + 3) // 4
    n2 = n + (n & 1)
    per_round = (n2 + 3) // 4
    if a.distribution == NORMAL:
        return per_round
    return (REJECTION_ROUNDS + 1) * per_round


def _box_muller(xp: Any, n: int, base, key, first_word: int) -> Any:
    """n standard normals from words first_word .. first_word + n2 - 1: element i takes the
    pair (2 (i // 2), 2 (i // 2) + 1): R cos(2 pi u2) for even i, R sin(2 pi u2) for odd i,
    R = sqrt(-2 log u1)."""
    n2 = n + (n & 1)
    w = words(xp, n2, base, key, first_word)
    u1 = open01(xp, w[0::2])
    u2 = xp.f64(w[1::2]) * (2.0 ** -32)
    rad = xp.sqrt(-2.0 * xp.log(u1))
    ang = (2.0 * math.pi) * u2
    return xp.flat(xp.stack2(rad * xp.cos(ang), rad * xp.sin(ang)))[:n]


def sample(xp: Any, a: Any, n: int, base: tuple[Any, ...], key: tuple[Any, Any]) -> Any:
    """n samples of the distribution of kernel attrs `a` (ops/random.py RandomKernelAttrs),
    flat, in a.dataType, from the stream of (base, key)."""
    npdt = a.dataType.numpy_dtype
    if a.distribution == UNIFORM:
        w = words(xp, n, base, key)
        if npdt.kind == "i":  # [ilo, ihi]: ilo + floor(w * range / 2^32)
            rng = a.ihi - a.ilo + 1  # <= 2^32
            t = (w & 0xFFFF) * rng
            hi = ((w >> 16) * rng + (t >> 16)) >> 16
            return xp.cast(hi + a.ilo, a.dataType)
        v = a.lo + unit24(xp, w) * (a.hi - a.lo)
        return _into(xp, v, a, npdt)
    if a.distribution == NORMAL:
        if a.method == INV_CDF:
            z = ndtri(xp, open01(xp, words(xp, n, base, key)))
        else:
            z = _box_muller(xp, n, base, key, 0)
        return xp.cast(a.mean + a.sd * z, a.dataType)
    # truncated normal on [lo, hi): standardised bounds
    lo_z, hi_z = (a.lo - a.mean) / a.sd, (a.hi - a.mean) / a.sd
    if a.method == INV_CDF:
        z = _truncated_inv_cdf(xp, words(xp, n, base, key), lo_z, hi_z)
    else:
        n2 = n + (n & 1)
        per_round = 4 * ((n2 + 3) // 4)  # words per round (whole counters)
        z = None
        pending = None
        for r in range(REJECTION_ROUNDS):
            zr = _box_muller(xp, n, base, key, r * per_round)
            ok = (zr >= lo_z) & (zr < hi_z)
            if z is None:
                z, pending = xp.where(ok, zr, 0.0), ~ok
            else:
                z = xp.where(pending & ok, zr, z)
                pending = pending & ~ok
            if xp.none(pending):  # (NumPy only: a sync on torch; the result is the same)
                break
        fallback = _truncated_inv_cdf(
            xp, words(xp, n, base, key, REJECTION_ROUNDS * per_round), lo_z, hi_z)
        z = xp.where(pending, fallback, z)
    return _into(xp, a.mean + a.sd * z, a, npdt)


def _truncated_inv_cdf(xp: Any, w: Any, lo_z: float, hi_z: float) -> Any:
    """Standard normals truncated to [lo_z, hi_z] by the inverse CDF, sampled on the side of
    the smaller tail masses (so that far tails keep their precision)."""
    flip = lo_z + hi_z > 0
    a, b = (-hi_z, -lo_z) if flip else (lo_z, hi_z)
    pa, pb = ndtr(a), ndtr(b)
    p = pa + open01(xp, w) * (pb - pa)
    z = xp.minimum(xp.maximum(ndtri(xp, p), a), b)
    return -z if flip else z


def _into(xp: Any, v: Any, a: Any, npdt: np.dtype) -> Any:
    """float64 values of [lo, hi] as a.dataType, inside [lo, hi): clamped to the type's values
    in [lo, hi) (a value that rounds up to hi becomes the largest value below hi)."""
    bot, top = type_bounds(a.lo, a.hi, npdt)
    return xp.minimum(xp.maximum(xp.cast(v, a.dataType), bot), top)


# ---------------------------------------------------------------------------- states
def seed_state(seed: int) -> tuple[tuple[int, ...], tuple[int, int]]:
    """(counter words, key words) of a seed: counter 0, key = the seed's 64 bits."""
    return (0, 0, 0, 0), (seed & MASK, (seed >> 32) & MASK)


def state_words(counterLow: int, counterHigh: int, key: int) -> list[int]:
    """The 7 int32 words of a Philox state (as signed int32 values)."""
    raw = [STATE_VERSION, counterLow & MASK, counterLow >> 32, counterHigh & MASK,
           counterHigh >> 32, key & MASK, key >> 32]
    return [w - (1 << 32) if w >= 1 << 31 else w for w in raw]


def to_int32_bits(xp: Any, w: Any) -> Any:
    """32-bit words (int64 values in [0, 2^32)) as int32 with the same bits."""
    return xp.cast(((w + (1 << 31)) & MASK) - (1 << 31), "int32")
