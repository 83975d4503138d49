"""Entries of the arithmetic family (ops/arithmetic.py): one row per op.

References are written from docs/semantics.md ("Arithmetic decisions (issue 15)"), never from
our kernels: floating ops in float64 NumPy (or Python's math module) on the same inputs, rounded
once to the input type (so an overflow to inf happens where the op's own rounding makes it);
integer and bitwise ops with exact Python integers, wrapped to the type (two's complement).
The rules they pin: integer division truncates toward zero and x / 0 = 0; modulo is C's fmod
(x % 0: NaN for floats, 0 for integers); floorModulo is Python's % with x % 0 = 0; maximum /
minimum return the non-NaN operand, the ...WithNaNPropagation ops NaN; comparisons with NaN are
false (notEqual: true); logical ops read non-zero (NaN included) as true; shifts by < 0 or >=
the bit width give 0 (right shift of a negative signed value: -1); popcount counts the
two's-complement bits; round rounds half away from zero, rint half to even; sign(+-0) = +0 and
sign(NaN) = NaN; clamp propagates NaN and gives max where min > max.

Every op draws random samples of every accepted dtype (shapes with size-0 and size-1 axes,
broadcast against each other), plus one sample of edge values per dtype (+-0, +-inf, NaN,
denormals, the largest and smallest finite values, halfway cases; integer extremes), all pairs
of them for binary ops. Edge samples are not differentiated (`diff=()`)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from opdb import (
    ALL,
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
    np_dtype,
    shape,
)

from ._common import broadcast_shapes
from ._common import mg_module as _mg

C64 = DT.complexFloat32
FC = FLOAT + (C64,)
# complexFloat32: norm-wise |got - want| <= atol + rtol |want| (assert_allclose on complex
# values), a few float32 ulps of the modulus for one complex operation
C64_TOL = (2e-5, 1e-6)


# ---------------------------------------------------------------------------- values
def _edges(dt) -> np.ndarray:
    """The edge values of a dtype, as a 1-D array of that dtype."""
    npdt = np_dtype(dt)
    if dt == DT.bool:
        return np.array([False, True])
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        vals = {info.min, info.max, 0, 1, 2, 3, 7, info.max - 1, info.min + 1}
        if npdt.kind == "i":
            vals |= {-1, -2, -3, -7}
        return np.array(sorted(vals), dtype=object).astype(npdt)
    fi = ml_dtypes.finfo(npdt)
    tiny_sub = float(fi.smallest_subnormal)
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, tiny_sub, -tiny_sub, float(fi.max),
            -float(fi.max), float(fi.smallest_normal), 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0,
            -7.0]
    return np.array(vals, np.float64).astype(npdt)


def _complex(rng, shp, lo=-3.0, hi=3.0) -> np.ndarray:
    out = np.empty(shp, np.complex64)
    out.real = rng.uniform(lo, hi, shp)
    out.imag = rng.uniform(lo, hi, shp)
    return out


def _complex_edges() -> np.ndarray:
    e = _edges(DT.float32)
    out = np.empty((e.size, e.size), np.complex64)
    out.real = e[:, None]
    out.imag = e[None, :]
    return out.reshape(-1)


def _values(rng, shp, dt, lo=-3.0, hi=3.0):
    return _complex(rng, shp, lo, hi) if dt == C64 else arr(rng, shp, dt, lo, hi)


# complex special values (infinite or NaN parts, zeros as divisors or logarithm arguments) are
# unspecified beyond NaN-ness and equality (docs/semantics.md, "Complex inputs"): the general
# ops' complex edge samples are a grid of finite, non-zero parts; isNaN / isFinite /
# isInfinite / equal / notEqual take the full grid of float32 edge values
_C_FINITE = np.array([1.0, -1.0, 0.5, -2.5, 3.0, 1e-30], np.float32)
_FULL_GRID = {"isNaN", "isFinite", "isInfinite", "equal", "notEqual"}


def _complex_grid(parts: np.ndarray) -> np.ndarray:
    out = np.empty((parts.size, parts.size), np.complex64)
    out.real = parts[:, None]
    out.imag = parts[None, :]
    return out.reshape(-1)


def _edge_values(dt, full: bool) -> np.ndarray:
    if dt != C64:
        return _edges(dt)
    return _complex_edges() if full else _complex_grid(_C_FINITE)


def _wide(x) -> np.ndarray:
    """A float64 (complex128 for complex) copy of x."""
    x = np.asarray(x)
    return x.astype(np.complex128) if x.dtype.kind == "c" else f64(x)


def _unary_samples(lo=-3.0, hi=3.0, edges=True, full=True):
    def gen(rng, dt):
        for _ in range(n_samples()):
            yield Sample([_values(rng, shape(rng), dt, lo, hi)])
        if edges:
            yield Sample([_edge_values(dt, full)], diff=(), desc="edge values")
    return gen


def _binary_samples(lo=-3.0, hi=3.0, lo2=None, hi2=None, ties=False, edges=True):
    lo2 = lo if lo2 is None else lo2
    hi2 = hi if hi2 is None else hi2

    def gen(rng, dt):
        for _ in range(n_samples()):
            s1, s2 = broadcast_shapes(rng, 2)
            a, b = _values(rng, s1, dt, lo, hi), _values(rng, s2, dt, lo2, hi2)
            if ties and a.size and b.size:  # ties and exact equality must be exercised
                b = np.array(np.broadcast_to(np.take(a.reshape(-1), rng.integers(
                    0, a.size, b.shape)), b.shape), dtype=b.dtype)
            yield Sample([a, b])
        if edges and not (dt == C64 and edges == "real"):
            # every pair of edge values, as a [n, 1] x [1, n] broadcast
            e = _edge_values(dt, full=False) if dt != C64 else _complex_grid(_C_FINITE[::2])
            yield Sample([e[:, None], e[None, :]], diff=(), desc="edge pairs")
    return gen


def _mod_samples():
    """modulo / floorModulo: the binary samples with floating divisors of magnitude >= 0.25 and
    quotients a / b at least 1e-3 from an integer. The rules jump by |b| where a / b crosses
    an integer, and the gradient test's central differences (eps 1e-6) must not straddle a
    jump: with |b| ~ 0.002 a perturbation of b moves a / b by ~0.5 (a directional derivative
    off by 1e3, found at 12 samples). Zero, tiny and huge divisors stay in the edge pairs
    (forward only)."""
    base = _binary_samples()

    def gen(rng, dt):
        for s in base(rng, dt):
            a, b = s.inputs
            if s.desc == "edge pairs" or a.dtype.kind != "f":
                yield s
                continue
            b64 = b.astype(np.float64)
            b64 = np.where(b64 < 0, -1.0, 1.0) * (0.25 + np.abs(b64) * (2.75 / 3.0))
            q = a.astype(np.float64) / b64
            k = np.floor(q)
            a64 = b64 * (k + np.clip(q - k, 1e-3, 1.0 - 1e-3))
            yield Sample([a64.astype(a.dtype), b64.astype(b.dtype)], desc=s.desc)
    return gen


# ---------------------------------------------------------------------------- references
def _fref(fn):
    """A floating reference: fn on float64 copies, rounded once to the input type (float64
    inputs, as the gradient test feeds, stay float64)."""
    def ref(*xs):
        with np.errstate(all="ignore"):
            y = np.asarray(fn(*[_wide(x) for x in xs]))
            if xs[0].dtype.kind == "c":  # complexFloat32: complex or float32 results
                return y.astype({"c": np.complex64, "f": np.float32}.get(y.dtype.kind, y.dtype))
            return y.astype(xs[0].dtype) if y.dtype.kind == "f" else y
    return ref


def _wrap_int(v: int, npdt: np.dtype) -> int:
    bits = npdt.itemsize * 8
    v &= (1 << bits) - 1
    if npdt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _iref(fn, out_bool=False):
    """An integer reference: fn on exact Python ints, elementwise, wrapped to the type."""
    def ref(*xs):
        bs = np.broadcast_arrays(*xs)
        npdt = xs[0].dtype
        flat = [b.reshape(-1).astype(object) for b in bs]
        vals = [fn(*(int(v) for v in col)) for col in zip(*flat)] if flat[0].size else []
        if out_bool:
            return np.array(vals, bool).reshape(bs[0].shape)
        return np.array([_wrap_int(v, npdt) for v in vals], dtype=object).astype(
            npdt).reshape(bs[0].shape)
    return ref


def _both(float_fn, int_fn, out_bool=False):
    """A reference dispatching on the input kind (bool inputs take the integer path)."""
    fr, ir = _fref(float_fn), _iref(int_fn, out_bool)

    def ref(*xs):
        return fr(*xs) if is_float(xs[0]) else ir(*xs)
    return ref


def _vec(fn):
    """A Python float function applied elementwise (float64)."""
    def f(*xs):
        bs = np.broadcast_arrays(*xs)
        out = np.array([fn(*col) for col in zip(*[b.reshape(-1) for b in bs])], np.float64)
        return out.reshape(bs[0].shape)
    return f


def _erf(x):
    return math.erf(x) if not math.isnan(x) else math.nan


def _round_half_away(x):
    if not math.isfinite(x):
        return x
    r = math.floor(abs(x) + 0.5)
    return math.copysign(float(r), x)


def _trunc_div(a, b):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_mod(a, b):
    if b == 0:
        return 0
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _floor_mod_float(a, b):
    if b == 0:
        return 0.0
    if math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    if math.isinf(b):  # Python: a % +-inf is a if the signs agree, else +-inf (a != 0)
        if a == 0 or (a > 0) == (b > 0):
            return a if a != 0 else math.copysign(0.0, b)
        return b
    return a % b


def _div_no_nan(a, b):
    with np.errstate(all="ignore"):
        return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def _shift_left(width):
    def f(a, b):
        return 0 if b < 0 or b >= width else a << b
    return f


def _shift_right(width):
    def f(a, b):
        if b < 0 or b >= width:
            return -1 if a < 0 else 0
        return a >> b  # Python's >> is arithmetic; unsigned values are non-negative
    return f


def _by_width(make):
    def ref(a, b):
        return _iref(make(a.dtype.itemsize * 8))(a, b)
    return ref


def _popcount(x):
    bits = x.dtype.itemsize * 8
    return _iref(lambda v: bin(v & ((1 << bits) - 1)).count("1"))(x)


def _truth(x):
    return f64(x) != 0  # NaN != 0: true


def _sign_f(x):
    return np.where(np.isnan(x), np.nan, np.where(x > 0, 1.0, np.where(x < 0, -1.0, 0.0)))


def _classify(float_fn, int_value):
    def ref(x):
        if is_float(x):
            return float_fn(_wide(x))
        return np.full(x.shape, int_value)
    return ref


# ---------------------------------------------------------------------------- torch references
def _t():
    import torch

    return torch


_TORCH = {
    "addition": lambda a, b: a + b, "subtraction": lambda a, b: a - b,
    "multiplication": lambda a, b: a * b, "division": lambda a, b: a / b,
    # (not maximum / minimum: torch's fmax / fmin give a tie's whole gradient to one side)
    "maximumWithNaNPropagation": lambda a, b: _t().maximum(a, b),
    "minimumWithNaNPropagation": lambda a, b: _t().minimum(a, b),
    "power": lambda a, b: _t().pow(a, b), "atan2": lambda a, b: _t().atan2(a, b),
    "modulo": lambda a, b: _t().fmod(a, b),
    "negative": lambda x: -x, "absolute": lambda x: x.abs(), "square": lambda x: x * x,
    "exponent": lambda x: x.exp(), "exponentBase2": lambda x: _t().exp2(x),
    "exponentBase10": lambda x: _t().pow(10.0, x), "logarithm": lambda x: x.log(),
    "logarithmBase2": lambda x: x.log2(), "logarithmBase10": lambda x: x.log10(),
    "squareRoot": lambda x: x.sqrt(), "reciprocal": lambda x: x.reciprocal(),
    "reciprocalSquareRoot": lambda x: x.rsqrt(), "reverseSquareRoot": lambda x: x.rsqrt(),
    "erf": lambda x: _t().erf(x), "sin": lambda x: x.sin(), "cos": lambda x: x.cos(),
    "tan": lambda x: x.tan(), "asin": lambda x: x.asin(), "acos": lambda x: x.acos(),
    "atan": lambda x: x.atan(), "sinh": lambda x: x.sinh(), "cosh": lambda x: x.cosh(),
    "asinh": lambda x: x.asinh(), "acosh": lambda x: x.acosh(), "atanh": lambda x: x.atanh(),
    "floor": lambda x: x.floor(), "ceil": lambda x: x.ceil(), "rint": lambda x: x.round(),
    "truncate": lambda x: x.trunc(), "absoluteSquare": lambda x: x * x,
}


def _torch_ref(name):
    fn = _TORCH.get(name)
    return None if fn is None else (lambda *xs: fn(*xs))


# ---------------------------------------------------------------------------- errors
def _binary_errors(allowed):
    def gen(rng):
        mg = _mg()
        f32 = np.float32 if DT.float32 in allowed else np.int32
        f16 = np.float16 if DT.float32 in allowed else np.int16
        yield ErrorInput(Sample([np.ones((2, 3), f32), np.ones((2, 3), f16)]),
                         mg.DataTypeError, "secondaryTensor", "promotion")
        yield ErrorInput(Sample([np.ones((2, 3), f32), np.ones((4,), f32)]),
                         mg.ShapeError, "secondaryTensor")
        for bad in (DT.bool, DT.int32, DT.float32):
            if bad not in allowed:
                yield ErrorInput(Sample([np.ones((2,), np_dtype(bad))] * 2),
                                 mg.DataTypeError, "primaryTensor")
    return gen


def _unary_errors(allowed):
    def gen(rng):
        mg = _mg()
        for bad in (DT.bool, DT.int32, DT.float32):
            if bad not in allowed:
                yield ErrorInput(Sample([np.ones((2,), np_dtype(bad))]), mg.DataTypeError,
                                 "tensor")
        if C64 not in allowed:
            yield ErrorInput(Sample([np.ones((2,), np.complex64)]), mg.DataTypeError, "tensor")
    return gen


# ---------------------------------------------------------------------------- binary rows
def _build(name):
    def b(g, *ts):
        return getattr(g, name)(*ts)
    return b


# name, dtypes, reference, differentiable, samples, float32 tolerance
_BINARY = (
    ("addition", NUMERIC + (C64,), _both(np.add, lambda a, b: a + b), True, _binary_samples(),
     None),
    ("subtraction", NUMERIC + (C64,), _both(np.subtract, lambda a, b: a - b), True,
     _binary_samples(), None),
    ("multiplication", NUMERIC + (C64,), _both(np.multiply, lambda a, b: a * b), True,
     _binary_samples(), None),
    ("division", NUMERIC + (C64,), _both(np.divide, _trunc_div), True, _binary_samples(), None),
    ("divisionNoNaN", NUMERIC, _both(_div_no_nan, _trunc_div), True, _binary_samples(), None),
    ("modulo", NUMERIC, _both(np.fmod, _trunc_mod), True, _mod_samples(), (1e-5, 1e-5)),
    ("floorModulo", NUMERIC, _both(_vec(_floor_mod_float), lambda a, b: 0 if b == 0 else a % b),
     True, _mod_samples(), (1e-5, 1e-5)),
    ("power", FC, _fref(np.power), True, _binary_samples(0.2, 3.0, -2.0, 2.0, edges="real"),
     (1e-5, 1e-5)),
    ("atan2", FLOAT, _fref(_vec(math.atan2)), True, _binary_samples(), None),
    ("maximum", NUMERIC, _both(np.fmax, max), True, _binary_samples(ties=True), None),
    ("minimum", NUMERIC, _both(np.fmin, min), True, _binary_samples(ties=True), None),
    ("maximumWithNaNPropagation", NUMERIC, _both(np.maximum, max), True,
     _binary_samples(ties=True), None),
    ("minimumWithNaNPropagation", NUMERIC, _both(np.minimum, min), True,
     _binary_samples(ties=True), None),
    ("equal", ALL + (C64,), _both(np.equal, lambda a, b: a == b, True), False,
     _binary_samples(-2, 2, ties=True), None),
    ("notEqual", ALL + (C64,), _both(np.not_equal, lambda a, b: a != b, True), False,
     _binary_samples(-2, 2, ties=True), None),
    ("greaterThan", ALL, _both(np.greater, lambda a, b: a > b, True), False,
     _binary_samples(-2, 2, ties=True), None),
    ("greaterThanOrEqualTo", ALL, _both(np.greater_equal, lambda a, b: a >= b, True), False,
     _binary_samples(-2, 2, ties=True), None),
    ("lessThan", ALL, _both(np.less, lambda a, b: a < b, True), False,
     _binary_samples(-2, 2, ties=True), None),
    ("lessThanOrEqualTo", ALL, _both(np.less_equal, lambda a, b: a <= b, True), False,
     _binary_samples(-2, 2, ties=True), None),
    ("logicalAND", ALL, lambda a, b: _truth(a) & _truth(b), False, _binary_samples(-1, 1),
     None),
    ("logicalOR", ALL, lambda a, b: _truth(a) | _truth(b), False, _binary_samples(-1, 1),
     None),
    ("logicalXOR", ALL, lambda a, b: _truth(a) ^ _truth(b), False, _binary_samples(-1, 1),
     None),
    ("logicalNAND", ALL, lambda a, b: ~(_truth(a) & _truth(b)), False,
     _binary_samples(-1, 1), None),
    ("logicalNOR", ALL, lambda a, b: ~(_truth(a) | _truth(b)), False, _binary_samples(-1, 1),
     None),
    ("logicalXNOR", ALL, lambda a, b: _truth(a) == _truth(b), False, _binary_samples(-1, 1),
     None),
    ("bitwiseAND", INTEGER, _iref(lambda a, b: a & b), False, _binary_samples(-100, 100),
     None),
    ("bitwiseOR", INTEGER, _iref(lambda a, b: a | b), False, _binary_samples(-100, 100), None),
    ("bitwiseXOR", INTEGER, _iref(lambda a, b: a ^ b), False, _binary_samples(-100, 100),
     None),
    ("bitwiseLeftShift", INTEGER, _by_width(_shift_left), False,
     _binary_samples(-100, 100, -3, 70), None),
    ("bitwiseRightShift", INTEGER, _by_width(_shift_right), False,
     _binary_samples(-100, 100, -3, 70), None),
)

for _name, _dts, _ref, _diff, _smp, _tol in _BINARY:
    add(OpInfo(
        _name, build=_build(_name), ref=_ref, samples=_smp, dtypes=_dts,
        differentiable=(0, 1) if _diff else (), torch_ref=_torch_ref(_name),
        errors=_binary_errors(_dts), tol={DT.float32: _tol or (1e-5, 1e-6), C64: C64_TOL}))


# ---------------------------------------------------------------------------- unary rows
def _rsqrt(x):
    return 1.0 / np.sqrt(x)


_abs2_real = _both(np.square, lambda v: v * v)


def _abs2(x):
    if x.dtype.kind == "c":  # re^2 + im^2, as float32
        with np.errstate(all="ignore"):
            return (np.square(x.real.astype(np.float64))
                    + np.square(x.imag.astype(np.float64))).astype(np.float32)
    return _abs2_real(x)


_UNARY = (
    # name, dtypes, reference, differentiable, sample domain (lo, hi)
    ("negative", NUMERIC + (C64,), _both(np.negative, lambda v: -v), True, (-3, 3)),
    ("absolute", NUMERIC + (C64,), _both(np.abs, abs), True, (-3, 3)),
    ("square", NUMERIC + (C64,), _both(np.square, lambda v: v * v), True, (-3, 3)),
    ("absoluteSquare", NUMERIC + (C64,), _abs2, True, (-3, 3)),
    ("sign", NUMERIC, _both(_sign_f, lambda v: (v > 0) - (v < 0)), True, (-3, 3)),
    ("signbit", NUMERIC, _both(np.signbit, lambda v: v < 0, True), False, (-3, 3)),
    ("squareRoot", FC, _fref(np.sqrt), True, (0.05, 4)),
    ("reciprocalSquareRoot", FLOAT, _fref(_rsqrt), True, (0.05, 4)),
    ("reverseSquareRoot", FLOAT, _fref(_rsqrt), True, (0.05, 4)),
    ("reciprocal", FC, _fref(lambda x: 1.0 / x), True, (0.2, 3)),
    ("exponent", FC, _fref(np.exp), True, (-3, 3)),
    ("exponentBase2", FLOAT, _fref(np.exp2), True, (-3, 3)),
    ("exponentBase10", FLOAT, _fref(lambda x: np.power(10.0, x)), True, (-3, 3)),
    ("logarithm", FC, _fref(np.log), True, (0.05, 4)),
    ("logarithmBase2", FLOAT, _fref(np.log2), True, (0.05, 4)),
    ("logarithmBase10", FLOAT, _fref(np.log10), True, (0.05, 4)),
    ("erf", FLOAT, _fref(_vec(_erf)), True, (-4, 4)),
    ("sin", FC, _fref(np.sin), True, (-4, 4)),
    ("cos", FC, _fref(np.cos), True, (-4, 4)),
    ("tan", FC, _fref(np.tan), True, (-1.4, 1.4)),
    ("asin", FLOAT, _fref(np.arcsin), True, (-0.95, 0.95)),
    ("acos", FLOAT, _fref(np.arccos), True, (-0.95, 0.95)),
    ("atan", FLOAT, _fref(np.arctan), True, (-4, 4)),
    ("sinh", FC, _fref(np.sinh), True, (-3, 3)),
    ("cosh", FC, _fref(np.cosh), True, (-3, 3)),
    ("asinh", FLOAT, _fref(np.arcsinh), True, (-4, 4)),
    ("acosh", FLOAT, _fref(np.arccosh), True, (1.1, 4)),
    ("atanh", FLOAT, _fref(np.arctanh), True, (-0.95, 0.95)),
    ("floor", FLOAT, _fref(np.floor), True, (-4, 4)),
    ("ceil", FLOAT, _fref(np.ceil), True, (-4, 4)),
    ("round", FLOAT, _fref(_vec(_round_half_away)), True, (-4, 4)),
    ("rint", FLOAT, _fref(np.rint), True, (-4, 4)),
    ("truncate", FLOAT, _fref(np.trunc), True, (-4, 4)),
    ("isNaN", NUMERIC + (C64,), _classify(np.isnan, False), False, (-3, 3)),
    ("isFinite", NUMERIC + (C64,), _classify(np.isfinite, True), False, (-3, 3)),
    ("isInfinite", NUMERIC + (C64,), _classify(np.isinf, False), False, (-3, 3)),
    ("not", ALL, lambda x: ~_truth(x), False, (-1, 1)),
    ("bitwiseNOT", INTEGER, _iref(lambda v: ~v), False, (-100, 100)),
    ("bitwisePopulationCount", INTEGER, _popcount, False, (-100, 100)),
)

# a rounding op's samples: halfway cases are what tells round from rint
_HALVES = {"floor", "ceil", "round", "rint", "truncate"}


def _halves_samples(lo, hi):
    base = _unary_samples(lo, hi)

    def gen(rng, dt):
        yield from base(rng, dt)
        yield Sample([(np.arange(-12, 13) / 2.0).astype(np_dtype(dt))], diff=(),
                     desc="halfway cases")
    return gen


def _build_not(g, x):
    return g.not_(x)


for _name, _dts, _ref, _diff, (_lo, _hi) in _UNARY:
    add(OpInfo(
        _name, build=_build_not if _name == "not" else _build(_name), ref=_ref,
        samples=(_halves_samples(_lo, _hi) if _name in _HALVES
                 else _unary_samples(_lo, _hi, full=_name in _FULL_GRID)),
        dtypes=_dts, differentiable=(0,) if _diff else (), torch_ref=_torch_ref(_name),
        errors=_unary_errors(_dts),
        tol={DT.float32: (2e-5, 1e-6), C64: C64_TOL}))


# ---------------------------------------------------------------------------- select, clamp
def _select_ref(p, t, f):
    pt = _truth(p)
    if t.dtype.kind in "biuc":
        return np.where(pt, t, f)
    return np.where(pt, f64(t), f64(f))


def _select_samples(rng, dt):
    pdts = (DT.bool, DT.float32, DT.int32, dt)
    for k in range(n_samples()):
        sp, st, sf = broadcast_shapes(rng, 3)
        pdt = pdts[k % len(pdts)]
        p = arr(rng, sp, pdt, -1, 1)
        yield Sample([p, _values(rng, st, dt), _values(rng, sf, dt)], diff=(1, 2))
    e = _edge_values(dt, full=True)
    pe = _edges(DT.float32)  # NaN, -0.0, denormals as predicates
    n = min(e.size, pe.size)
    yield Sample([pe[:n], e[:n], e[::-1][:n]], diff=(), desc="edge values")


add(OpInfo("select", build=lambda g, p, t, f: g.select(p, t, f), ref=_select_ref,
           samples=_select_samples, dtypes=ALL + (C64,), differentiable=(1, 2),
           errors=lambda rng: iter([ErrorInput(
               Sample([np.ones((2,), bool), np.ones((2,), np.float32),
                       np.ones((2,), np.float16)]), _mg().DataTypeError, "falseTensor")])))


def _clamp_ref(x, lo, hi):
    if is_float(x):
        with np.errstate(all="ignore"):
            y = np.minimum(np.maximum(f64(x), f64(lo)), f64(hi))  # NaN-propagating
        return y.astype(x.dtype)
    return _iref(lambda v, a, b: min(max(v, a), b))(x, lo, hi)


def _clamp_samples(rng, dt):
    for _ in range(n_samples()):
        sx, sl, sh = broadcast_shapes(rng, 3)
        lo = arr(rng, sl, dt, -3, 1)
        hi = arr(rng, sh, dt, -1, 3)  # min > max now and then
        yield Sample([arr(rng, sx, dt, -4, 4), lo, hi])
    e = _edges(dt)
    yield Sample([e[:, None, None], e[None, :, None], e[None, None, :]], diff=(),
                 desc="edge triples")


add(OpInfo("clamp", build=lambda g, x, lo, hi: g.clamp(x, min=lo, max=hi), ref=_clamp_ref,
           samples=_clamp_samples, dtypes=NUMERIC, differentiable=(0, 1, 2),
           torch_ref=lambda x, lo, hi: _t().minimum(_t().maximum(x, lo), hi),
           errors=lambda rng: iter([
               ErrorInput(Sample([np.ones((2,), np.float32), np.ones((2,), np.float32),
                                  np.ones((2,), np.float16)]), _mg().DataTypeError, "max"),
               ErrorInput(Sample([np.ones((2,), np.float32), np.ones((3,), np.float32),
                                  np.ones((2,), np.float32)]), _mg().ShapeError, "min"),
               ErrorInput(Sample([np.ones((2,), bool)] * 3), _mg().DataTypeError, "tensor")])))


# ---------------------------------------------------------------------------- complex
def _parts(g, z):
    """A complex result seen as its float32 parts (the harness compares real arrays)."""
    return [g.realPartOfTensor(z), g.imaginaryPartOfTensor(z)]


def _complex_samples(rng, dt):
    for _ in range(n_samples()):
        s1, s2 = broadcast_shapes(rng, 2)
        yield Sample([arr(rng, s1, dt), arr(rng, s2, dt)], diff=())
    e = _edges(dt)
    yield Sample([e[:, None], e[None, :]], diff=(), desc="edge pairs")


def _complex_tensor_ref(re, im):
    r, i = np.broadcast_arrays(f64(re), f64(im))
    return [r.astype(np.float32), i.astype(np.float32)]


add(OpInfo("complexTensor", build=lambda g, re, im: _parts(g, g.complexTensor(re, im)),
           ref=_complex_tensor_ref, samples=_complex_samples, dtypes=(DT.float32,),
           kinds=("realPartOfTensor", "imaginaryPartOfTensor"),
           errors=lambda rng: iter([
               ErrorInput(Sample([np.ones((2,), np.float16)] * 2), _mg().DataTypeError,
                          "realTensor", "complexFloat16"),
               ErrorInput(Sample([np.ones((2,), np.float32), np.ones((3,), np.float32)]),
                          _mg().ShapeError, "imaginaryTensor")])))


def _part_ref(which):
    def ref(z):
        if z.dtype.kind == "c":
            v = z.real if which == "real" else z.imag
            return np.array(v, np.float64).astype(np.float32)
        return f64(z).astype(z.dtype) if which == "real" else np.zeros(z.shape, z.dtype)
    return ref


def _conj_build(g, z):
    y = g.conjugate(z)
    return _parts(g, y) if z.dataType == C64 else y


def _conj_ref(z):
    if z.dtype.kind == "c":
        return [np.array(z.real, np.float32), np.array(-z.imag.astype(np.float64),
                                                         np.float32)]
    return f64(z).astype(z.dtype)


def _planar_ref(z):
    if z.dtype.kind == "c":
        return np.concatenate([z.real, z.imag], axis=-1).astype(np.float32)
    return f64(z).astype(z.dtype)


def _planar_samples(rng, dt):
    for _ in range(n_samples()):
        s = shape(rng, int(rng.integers(1, 4))) if dt == C64 else shape(rng)
        yield Sample([_values(rng, s, dt, -3, 3)])
    e = _complex_edges() if dt == C64 else _edges(dt)
    yield Sample([e.reshape(-1, 2) if e.size % 2 == 0 else e], diff=(), desc="edge values")


def _complex_errors(rng):
    mg = _mg()
    yield ErrorInput(Sample([np.ones((2,), np.int32)]), mg.DataTypeError, "tensor")
    yield ErrorInput(Sample([np.ones((2,), bool)]), mg.DataTypeError, "tensor")


add(OpInfo("realPartOfTensor", build=lambda g, z: g.realPartOfTensor(z), ref=_part_ref("real"),
           samples=_unary_samples(), dtypes=FC, differentiable=(0,), errors=_complex_errors))
add(OpInfo("imaginaryPartOfTensor", build=lambda g, z: g.imaginaryPartOfTensor(z),
           ref=_part_ref("imag"), samples=_unary_samples(), dtypes=FC, differentiable=(0,),
           errors=_complex_errors))
add(OpInfo("conjugate", build=_conj_build, ref=_conj_ref, samples=_unary_samples(),
           dtypes=FC, differentiable=(0,), errors=_complex_errors,
           kinds=("realPartOfTensor", "imaginaryPartOfTensor")))
add(OpInfo("planarTensor", build=lambda g, z: g.planarTensor(z), ref=_planar_ref,
           samples=_planar_samples, dtypes=FC, differentiable=(0,),
           errors=lambda rng: iter([
               *_complex_errors(rng),
               ErrorInput(Sample([np.ones((), np.complex64)]), _mg().ShapeError, "tensor",
                          "rank >= 1")])))
