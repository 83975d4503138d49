"""torch kernels of the arithmetic family (semantics: backends/numpy/arithmetic.py).

float16 / bFloat16 operands are widened to float32, computed, and rounded once to the operand
type (`work` / `finish`, shared with the other kernel modules). Integers compute in their own
type (wrapping). torch implements almost no arithmetic for uint16 / uint32 / uint64 (only
copies, casts, `==`, `sum`, `cat`, `where`): those compute in int64 (two's complement wraps the
same way, modulo 2^64) and are wrapped back; order-dependent ops on uint64 compare with the sign
bit flipped (`ordered`), and uint64 division uses a shift-and-correct unsigned division.
Every tensor is created on the device of the kernel's inputs.
"""

from __future__ import annotations

import numpy as np
import torch

from . import KERNELS, host_for_wide_unsigned, kernel

HALF = (torch.float16, torch.bfloat16)
F32 = torch.float32
I64 = torch.int64
U_WIDE = (torch.uint16, torch.uint32, torch.uint64)  # no torch arithmetic: via int64
_I64_MIN = -(2 ** 63)
_I64_MAX = 2 ** 63 - 1

_NP_TO_TORCH: dict[np.dtype, torch.dtype] = {
    np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16,
    np.dtype(np.complex64): torch.complex64, np.dtype(np.int8): torch.int8,
    np.dtype(np.int16): torch.int16, np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64, np.dtype(np.uint8): torch.uint8,
    np.dtype(np.uint16): torch.uint16, np.dtype(np.uint32): torch.uint32,
    np.dtype(np.uint64): torch.uint64, np.dtype(np.bool_): torch.bool,
}


def torch_dtype(dt) -> torch.dtype:
    """The torch dtype of a NumPy dtype (as kernel attrs carry them) or a torch dtype."""
    if isinstance(dt, torch.dtype):
        return dt
    dt = np.dtype(dt)
    if dt.name == "bfloat16":
        return torch.bfloat16
    return _NP_TO_TORCH[dt]


def is_float(dt: torch.dtype) -> bool:
    return dt.is_floating_point


def work(x: torch.Tensor) -> torch.Tensor:
    """The tensor in its computing type: float32 for the half types, itself otherwise."""
    return x.float() if x.dtype in HALF else x


def finish(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`y` as a tensor of `dtype` (one rounding for half types; integers wrap)."""
    return y if y.dtype == dtype else y.to(dtype)


def wide(x: torch.Tensor) -> torch.Tensor:
    """An unsigned 16/32/64-bit tensor as int64 with the same bits modulo 2^64 (wrap back
    with `finish`); other tensors unchanged."""
    return x.to(I64) if x.dtype in U_WIDE else x


def ordered(x: torch.Tensor) -> torch.Tensor:
    """A tensor whose (signed, torch-supported) order is the order of `x`'s values: uint64 as
    int64 with the sign bit flipped, uint16/32 as int64, others unchanged."""
    if x.dtype == torch.uint64:
        return x.to(I64) ^ _I64_MIN
    return x.to(I64) if x.dtype in U_WIDE else x


def unordered(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The inverse of `ordered`."""
    if dtype == torch.uint64:
        y = y ^ _I64_MIN
    return finish(y, dtype)


_SAME_SIZE_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32,
                     torch.uint64: torch.int64}


def as_signed(x: torch.Tensor) -> torch.Tensor:
    """uint16/32/64 reinterpreted as the signed type of the same size (for data movement that
    torch may not implement for them: where, flip, cat); other tensors unchanged."""
    s = _SAME_SIZE_SIGNED.get(x.dtype)
    return x if s is None else x.view(s)


def where(p: torch.Tensor, t: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """torch.where for every dtype (t and f of one dtype)."""
    if t.dtype not in _SAME_SIZE_SIGNED:
        return torch.where(p, t, f)
    return torch.where(p, as_signed(t), as_signed(f)).view(t.dtype)


def _binary(fn):
    def k(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
        return finish(fn(work(a), work(b)), a.dtype)
    return k


def _wrapping(fn):
    """An integer-ring op (+, -, *): int64 for the unsigned types torch lacks."""
    def k(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
        return finish(fn(wide(work(a)), wide(work(b))), a.dtype)
    return k


def _udiv64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a // b of uint64 tensors (as int64 bit patterns), b != 0."""
    ai, bi = a.to(I64), b.to(I64)
    big = bi < 0  # b >= 2^63: the quotient is 1 if a >= b else 0
    bs = torch.where(big, torch.ones((), dtype=I64, device=bi.device), bi)
    q = torch.div((ai >> 1) & _I64_MAX, bs, rounding_mode="floor") << 1
    r = ai - q * bs  # < 2 b (as an unsigned value)
    q = q + ((r ^ _I64_MIN) >= (bs ^ _I64_MIN)).to(I64)
    return torch.where(big, ((ai ^ _I64_MIN) >= (bi ^ _I64_MIN)).to(I64), q)


@kernel("division")
def division(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return finish(torch.true_divide(work(a), work(b)), a.dtype)
    # integers: truncate toward zero (C / Metal), x / 0 -> 0; INT_MIN / -1 wraps (no trap)
    dt = a.dtype
    zero = b == 0
    one = torch.ones((), dtype=b.dtype, device=b.device)
    if dt == torch.uint64:
        q = _udiv64(a, where(zero, one, b))
    elif dt in U_WIDE or dt == torch.uint8:
        q = torch.div(wide(a), wide(where(zero, one, b)), rounding_mode="trunc")
    else:
        m1 = b == -1
        safe = torch.where(zero | m1, one, b)
        q = torch.where(m1, -a, torch.div(a, safe, rounding_mode="trunc"))
    q = finish(q, dt)
    return where(zero, torch.zeros((), dtype=dt, device=q.device), q)


def _extremum(fn_float, pick_first):
    def k(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
        if a.dtype.is_floating_point:
            return finish(fn_float(work(a), work(b)), a.dtype)
        if a.dtype in U_WIDE:
            return where(pick_first(ordered(a), ordered(b)), a, b)
        return fn_float(a, b)
    return k


for _name, _fn in (("addition", torch.add), ("subtraction", torch.sub),
                   ("multiplication", torch.mul)):
    kernel(_name)(_wrapping(_fn))

kernel("maximum")(_extremum(torch.fmax, torch.ge))  # fmax: NaN loses to a number
kernel("minimum")(_extremum(torch.fmin, torch.le))
kernel("power")(_binary(torch.pow))


def _unary(fn):
    def k(x: torch.Tensor, attrs: None) -> torch.Tensor:
        return finish(fn(work(x)), x.dtype)
    return k


@kernel("negative")
def negative(x: torch.Tensor, attrs: None) -> torch.Tensor:
    if x.dtype == torch.bool:  # not reachable through the graph layer
        return x.clone()
    return finish(torch.neg(wide(work(x))), x.dtype)


@kernel("absolute")
def absolute(x: torch.Tensor, attrs: None) -> torch.Tensor:
    if x.dtype in U_WIDE or x.dtype in (torch.uint8, torch.bool):
        return x.clone()
    return finish(torch.abs(work(x)), x.dtype)


@kernel("square")
def square(x: torch.Tensor, attrs: None) -> torch.Tensor:
    xw = wide(work(x))
    return finish(xw * xw, x.dtype)


for _name, _fn in (("exponent", torch.exp), ("logarithm", torch.log),
                   ("squareRoot", torch.sqrt), ("reciprocal", torch.reciprocal)):
    kernel(_name)(_unary(_fn))


@kernel("equal")
def equal(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
    return torch.eq(work(a), work(b))


@kernel("greaterThan")
def greaterThan(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
    return torch.gt(ordered(work(a)), ordered(work(b)))


@kernel("select")
def select(predicate: torch.Tensor, t: torch.Tensor, f: torch.Tensor,
           attrs: None) -> torch.Tensor:
    p = predicate if predicate.dtype == torch.bool else wide(predicate) != 0  # NaN: true
    return where(p, t, f)


# uint16/32/64 on a GPU run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
