"""torch kernels of the arithmetic family, generated from the rows of ops/arithmetic.py
(semantics: backends/numpy/arithmetic.py and docs/semantics.md).

Each row names its torch function: `torch.xxx`, or one of the helpers below. The generated
kernel widens float16 / bFloat16 operands to float32 (`work`), applies the function and casts
the result once to the row's result type (`finish`; both shared with the other kernel modules).
Integers compute in their own type (wrapping). torch implements almost no arithmetic for
uint16 / uint32 / uint64 (only copies, casts, `==`, `sum`, `cat`, `where`, and, or, xor): those
compute in int64 (two's complement wraps the same way, modulo 2^64) and are wrapped back by the
final cast; order-dependent ops on uint64 compare with the sign bit flipped (`ordered`), and
uint64 division uses a shift-and-correct unsigned division. Every tensor is created on the
device of the kernel's inputs.
"""

from __future__ import annotations

import numpy as np
import torch

from ...ops.arithmetic import ELEMENTWISE, result_type
from . import KERNELS, TORCH_DTYPES, host_for_wide_unsigned, kernel

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


# ---------------------------------------------------------------------------- ring ops
def _ring(fn):
    """An integer-ring op (+, -, *): int64 for the unsigned types torch lacks (the result is
    cast back, modulo 2^bits, by the generated kernel)."""
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return fn(wide(a), wide(b))
    f.plain = fn  # what f computes when neither input is a wide unsigned type
    return f


add = _ring(torch.add)
subtract = _ring(torch.sub)
multiply = _ring(torch.mul)


def negative(x: torch.Tensor) -> torch.Tensor:
    return torch.neg(wide(x))


def absolute(x: torch.Tensor) -> torch.Tensor:
    if x.dtype in U_WIDE or x.dtype == torch.uint8:
        return x.clone()
    return torch.abs(x)


def square(x: torch.Tensor) -> torch.Tensor:
    xw = wide(x)
    return xw * xw


def sign(x: torch.Tensor) -> torch.Tensor:
    if x.dtype.is_floating_point:
        return torch.where(torch.isnan(x), x, torch.sign(x))  # torch.sign(NaN) is 0
    if x.dtype in U_WIDE:
        return (wide(x) != 0).to(I64)
    return torch.sign(x)


def signbit(x: torch.Tensor) -> torch.Tensor:
    if x.dtype in U_WIDE:
        return torch.zeros(x.shape, dtype=torch.bool, device=x.device)
    return torch.signbit(x)


def _classify(fn, integer_value: bool):
    def f(x: torch.Tensor) -> torch.Tensor:
        if x.dtype.is_floating_point or x.dtype.is_complex:
            return fn(x)
        return torch.full(x.shape, integer_value, dtype=torch.bool, device=x.device)
    return f


is_nan = _classify(torch.isnan, False)
is_finite = _classify(torch.isfinite, True)
is_infinite = _classify(torch.isinf, False)


# ---------------------------------------------------------------------------- division family
def _udiv64(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a // b of uint64 tensors (as int64 bit patterns), b != 0."""
    ai, bi = a.to(I64), b.to(I64)
    big = bi < 0  # b >= 2^63: the quotient is 1 if a >= b else 0
    bs = torch.where(big, torch.ones((), dtype=I64, device=bi.device), bi)
    q = torch.div((ai >> 1) & _I64_MAX, bs, rounding_mode="floor") << 1
    r = ai - q * bs  # < 2 b (as an unsigned value)
    q = q + ((r ^ _I64_MIN) >= (bs ^ _I64_MIN)).to(I64)
    return torch.where(big, ((ai ^ _I64_MIN) >= (bi ^ _I64_MIN)).to(I64), q)


def _one(t: torch.Tensor) -> torch.Tensor:
    return torch.ones((), dtype=t.dtype, device=t.device)


def _zero(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros((), dtype=t.dtype, device=t.device)


def divide(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return torch.true_divide(a, b)
    # integers: truncate toward zero (C / Metal), x / 0 -> 0; INT_MIN / -1 wraps (no trap)
    dt = a.dtype
    zero = b == 0
    one = _one(b)
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


def division_no_nan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    q = divide(a, b)
    return where(b == 0, _zero(q), q)


def _int_remainder(a: torch.Tensor, b: torch.Tensor, floor: bool) -> torch.Tensor:
    """Integer remainder (truncated, or floored), 0 where b == 0 (and b == -1, signed)."""
    dt = a.dtype
    bad = b == 0
    if dt == torch.uint64:
        safe = where(bad, _one(b), b)
        r = a.to(I64) - _udiv64(a, safe) * safe.to(I64)
    elif dt in U_WIDE:
        r = torch.fmod(wide(a), wide(where(bad, _one(b), b)))
    else:
        if not (dt == torch.uint8):
            bad = bad | (b == -1)
        safe = torch.where(bad, _one(b), b)
        r = torch.remainder(a, safe) if floor else torch.fmod(a, safe)
    r = finish(r, dt)
    return where(bad, _zero(r), r)


def _fmod(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C fmod, exact: torch's vectorised float32 fmod is not (it divides, and a quotient
    beyond float32's range gives NaN); its float64 one is, and so is the cast back (a float32
    fmod is exactly representable)."""
    return torch.fmod(a.double(), b.double()).to(a.dtype)


def modulo(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype.is_floating_point:
        return _fmod(a, b)
    return _int_remainder(a, b, floor=False)


def floor_modulo(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if not a.dtype.is_floating_point:
        return _int_remainder(a, b, floor=True)
    # NumPy's rule: r = fmod(a, b); r += b where r != 0 and sign(r) != sign(b); a zero r takes
    # b's sign; and floorModulo(x, 0) = 0
    r = _fmod(a, b)
    fix = (r != 0) & ((r < 0) != (b < 0))
    r = torch.where(fix, r + b, r)
    r = torch.where(r == 0, torch.copysign(torch.zeros_like(r), b), r)
    return torch.where(b == 0, _zero(r), r)


# ---------------------------------------------------------------------------- extrema
def _extremum(fn_float, pick_first):
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if a.dtype.is_floating_point:
            return fn_float(a, b)
        if a.dtype in U_WIDE:
            return where(pick_first(ordered(a), ordered(b)), a, b)
        return fn_float(a, b)
    return f


maximum = _extremum(torch.fmax, torch.ge)  # fmax: NaN loses to a number
minimum = _extremum(torch.fmin, torch.le)
maximum_nan = _extremum(torch.maximum, torch.ge)  # maximum: NaN propagates
minimum_nan = _extremum(torch.minimum, torch.le)


def clip(x: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor) -> torch.Tensor:
    return minimum_nan(maximum_nan(x, lo), hi)


# ---------------------------------------------------------------------------- comparisons
def equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.eq(a, b)


def not_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.ne(a, b)


def _ordered_cmp(fn):
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return fn(ordered(a), ordered(b))
    return f


greater = _ordered_cmp(torch.gt)
greater_equal = _ordered_cmp(torch.ge)
less = _ordered_cmp(torch.lt)
less_equal = _ordered_cmp(torch.le)


# ---------------------------------------------------------------------------- logical
def _truth(x: torch.Tensor) -> torch.Tensor:
    return x if x.dtype == torch.bool else wide(x) != 0  # NaN != 0: true


def logical_and(a, b):
    return _truth(a) & _truth(b)


def logical_or(a, b):
    return _truth(a) | _truth(b)


def logical_xor(a, b):
    return _truth(a) ^ _truth(b)


def logical_nand(a, b):
    return ~(_truth(a) & _truth(b))


def logical_nor(a, b):
    return ~(_truth(a) | _truth(b))


def logical_xnor(a, b):
    return _truth(a) == _truth(b)


def logical_not(x):
    return ~_truth(x)


# ---------------------------------------------------------------------------- bitwise
def _bitwise(fn):
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return fn(wide(a), wide(b))  # the low bits are the same in int64
    return f


bitwise_and = _bitwise(torch.bitwise_and)
bitwise_or = _bitwise(torch.bitwise_or)
bitwise_xor = _bitwise(torch.bitwise_xor)


def bitwise_not(x: torch.Tensor) -> torch.Tensor:
    return torch.bitwise_not(wide(x))


_WIDTH = {torch.int8: 8, torch.uint8: 8, torch.int16: 16, torch.uint16: 16, torch.int32: 32,
          torch.uint32: 32, torch.int64: 64, torch.uint64: 64}


def _shift_amount(a: torch.Tensor, b: torch.Tensor):
    """(in range, the amount as int64 in [0, width)): b < 0 or b >= width is out of range
    (a uint64 amount >= 2^63 reads as a negative int64: out of range too)."""
    width = _WIDTH[a.dtype]
    s = b.to(I64)
    ok = (s >= 0) & (s < width)
    return ok, torch.where(ok, s, torch.zeros((), dtype=I64, device=s.device))


def left_shift(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ok, s = _shift_amount(a, b)
    y = a.to(I64) << s  # the low `width` bits are right; the cast back drops the others
    return torch.where(ok, y, torch.zeros((), dtype=I64, device=y.device))


def right_shift(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    ok, s = _shift_amount(a, b)
    dt = a.dtype
    x = a.to(I64)  # signed types sign-extend, uint8/16/32 are non-negative: >> is right
    if dt == torch.uint64:  # a logical shift of the bit pattern
        first = (x >> 1) & _I64_MAX
        y = torch.where(s == 0, x, first >> torch.clamp(s - 1, min=0))
        return torch.where(ok, y, torch.zeros((), dtype=I64, device=y.device))
    y = x >> s
    if dt.is_signed:
        fill = torch.where(x < 0, torch.full((), -1, dtype=I64, device=x.device),
                           torch.zeros((), dtype=I64, device=x.device))
    else:
        fill = torch.zeros((), dtype=I64, device=x.device)
    return torch.where(ok, y, fill)


_M1, _M2, _M4 = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F
_H01 = 0x0101010101010101


def popcount(x: torch.Tensor) -> torch.Tensor:
    """1 bits of the two's-complement representation (SWAR on int64 bit patterns)."""
    width = _WIDTH[x.dtype]
    v = x.to(I64)
    if width < 64:
        v = v & ((1 << width) - 1)
    v = v - ((v >> 1) & _M1)
    v = (v & _M2) + ((v >> 2) & _M2)
    v = (v + (v >> 4)) & _M4
    return (v * _H01) >> 56


# ---------------------------------------------------------------------------- unary math
def exp10(x: torch.Tensor) -> torch.Tensor:
    return torch.pow(torch.full((), 10.0, dtype=x.dtype, device=x.device), x)


def round_half_away(x: torch.Tensor) -> torch.Tensor:
    """Round to nearest, halfway cases away from zero (torch.round rounds half to even)."""
    r = torch.round(x)
    half = torch.copysign(torch.full((), 0.5, dtype=x.dtype, device=x.device), x)
    return torch.where(torch.abs(x - r) == 0.5, x + half, r)


# ---------------------------------------------------------------------------- ternary
def pick(p: torch.Tensor, t: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    return where(_truth(p), t, f)


# ---------------------------------------------------------------------------- complex
def absolute_square(x: torch.Tensor) -> torch.Tensor:
    if x.dtype.is_complex:
        return x.real * x.real + x.imag * x.imag
    return square(x)


def complex_tensor(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    re, im = torch.broadcast_tensors(re, im)
    return torch.complex(re.contiguous(), im.contiguous())


def real_part(x: torch.Tensor) -> torch.Tensor:
    return (x.real if x.dtype.is_complex else x).clone()


def imaginary_part(x: torch.Tensor) -> torch.Tensor:
    return x.imag.clone() if x.dtype.is_complex else torch.zeros_like(x)


def conjugate(x: torch.Tensor) -> torch.Tensor:
    return torch.conj_physical(x) if x.dtype.is_complex else x.clone()


def planar(x: torch.Tensor) -> torch.Tensor:
    if not x.dtype.is_complex:
        return x.clone()
    return torch.cat([x.real, x.imag], dim=-1)


# ---------------------------------------------------------------------------- the kernels
def _function(spec: str):
    return getattr(torch, spec[6:]) if spec.startswith("torch.") else globals()[spec]


def _make_kernel(row):
    fn = _function(row.torch)
    out = {TORCH_DTYPES[dt]: TORCH_DTYPES[result_type(row, dt)] for dt in row.dtypes
           if dt in TORCH_DTYPES and result_type(row, dt) in TORCH_DTYPES}
    first = 1 if row.name == "select" else 0  # select's result has trueTensor's type

    def k(*args):
        xs = args[:-1]  # (the last argument is the kernel attrs: None)
        y = fn(*[work(x) for x in xs])
        return finish(y, out[xs[first].dtype])

    def specialize(dtypes):
        """k for inputs of these torch dtypes (known when an executable is compiled): where
        `work` and `wide` leave every input alone (no half, no wide unsigned type), the same
        computation without their per-call checks."""
        if (len(dtypes) <= first or any(d is None or d in HALF or d in U_WIDE for d in dtypes)
                or out.get(dtypes[first]) is None):
            return k
        want, plain = out[dtypes[first]], getattr(fn, "plain", fn)
        if len(dtypes) == 1:
            def k1(a, attrs):
                y = plain(a)
                return y if y.dtype is want else y.to(want)
            return k1
        if len(dtypes) == 2:
            def k2(a, b, attrs):
                y = plain(a, b)
                return y if y.dtype is want else y.to(want)
            return k2

        def kn(*args):
            y = plain(*args[:-1])
            return y if y.dtype is want else y.to(want)
        return kn

    k.__name__ = row.name
    k.specialize = specialize
    return k


for _row in ELEMENTWISE.values():
    kernel(_row.name)(_make_kernel(_row))
del _row

# uint16/32/64 on a GPU run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
