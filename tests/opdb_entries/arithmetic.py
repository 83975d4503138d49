"""Entries of the arithmetic family (ops/arithmetic.py): one row per op.

References are NumPy float64 (integers in their own type, which wraps as ours must) written
from docs/semantics.md: integer division truncates toward zero and x / 0 = 0; maximum/minimum
return the non-NaN operand (IEEE maxNum / minNum); select's predicate is true where non-zero
(NaN included). Half types are computed from the same (rounded) inputs in float64."""

from __future__ import annotations

import numpy as np

from opdb import (ALL, DT, FLOAT, NUMERIC, ErrorInput, OpInfo, Sample, add, arr, f64,
                  is_float, n_samples, np_dtype)

from ._common import broadcast_shapes

def _errors_mod():
    import mpsgraph as mg

    return mg


def _int_div(a, b):
    if is_float(a):
        with np.errstate(all="ignore"):
            return f64(a) / f64(b)
    a, b = np.broadcast_arrays(a, b)
    a64, b64 = a.astype(object), b.astype(object)  # exact Python integers
    q = np.zeros(a.shape, a.dtype)
    flat_q = q.reshape(-1)
    for k, (x, y) in enumerate(zip(a64.reshape(-1), b64.reshape(-1))):
        if y != 0:
            t = abs(x) // abs(y)
            flat_q[k] = np.array(t if (x >= 0) == (y >= 0) else -t).astype(a.dtype)
    return q


def _wrap(fn):
    """Apply `fn` in float64 for floats, in the integer type (wrapping) for integers."""
    def ref(*xs):
        if is_float(xs[0]):
            with np.errstate(all="ignore"):
                return fn(*[f64(x) for x in xs])
        with np.errstate(all="ignore"):
            return np.asarray(fn(*xs)).astype(xs[0].dtype)
    return ref


def _binary_samples(lo=-3.0, hi=3.0, positive_first=False):
    def gen(rng, dt):
        for _ in range(n_samples()):
            s1, s2 = broadcast_shapes(rng, 2)
            a = arr(rng, s1, dt, 0.2 if positive_first else lo, hi)
            b = arr(rng, s2, dt, lo, hi)
            yield Sample([a, b])
    return gen


def _unary_samples(lo=-3.0, hi=3.0):
    def gen(rng, dt):
        from opdb import shape

        for _ in range(n_samples()):
            yield Sample([arr(rng, shape(rng), dt, lo, hi)])
    return gen


def _binary_errors(allowed):
    def gen(rng):
        mg = _errors_mod()
        yield ErrorInput(Sample([np.ones((2, 3), np.float32), np.ones((2, 3), np.float16)]),
                         mg.DataTypeError, "secondaryTensor")
        yield ErrorInput(Sample([np.ones((2, 3), np.float32), np.ones((4,), np.float32)]),
                         mg.ShapeError, "secondaryTensor")
        if DT.bool not in allowed:
            yield ErrorInput(Sample([np.ones((2,), bool), np.ones((2,), bool)]),
                             mg.DataTypeError, "primaryTensor")
        if DT.int32 not in allowed:
            yield ErrorInput(Sample([np.ones((2,), np.int32), np.ones((2,), np.int32)]),
                             mg.DataTypeError, "primaryTensor")
    return gen


def _unary_errors(allowed):
    def gen(rng):
        mg = _errors_mod()
        bad = DT.bool if DT.int32 in allowed else DT.int32
        yield ErrorInput(Sample([np.ones((2,), np_dtype(bad))]), mg.DataTypeError, "tensor")
    return gen


def _fmax(a, b):
    return np.fmax(a, b)


def _fmin(a, b):
    return np.fmin(a, b)


def _torch(name):
    def t(*xs):
        import torch

        return {"addition": lambda a, b: a + b, "subtraction": lambda a, b: a - b,
                "multiplication": lambda a, b: a * b, "division": lambda a, b: a / b,
                "maximum": torch.fmax, "minimum": torch.fmin, "power": torch.pow,
                "negative": torch.neg, "absolute": torch.abs, "square": torch.square,
                "exponent": torch.exp, "logarithm": torch.log, "squareRoot": torch.sqrt,
                "reciprocal": torch.reciprocal}[name](*xs)
    return t


# name, arity, dtypes, reference, differentiable, sample domain (lo, hi, positive first)
_BINARY = (
    ("addition", NUMERIC, _wrap(np.add), (0, 1), (-3, 3, False)),
    ("subtraction", NUMERIC, _wrap(np.subtract), (0, 1), (-3, 3, False)),
    ("multiplication", NUMERIC, _wrap(np.multiply), (0, 1), (-3, 3, False)),
    ("division", NUMERIC, _int_div, (0, 1), (-3, 3, False)),
    ("maximum", NUMERIC, _wrap(_fmax), (0, 1), (-3, 3, False)),
    ("minimum", NUMERIC, _wrap(_fmin), (0, 1), (-3, 3, False)),
    ("power", FLOAT, _wrap(np.power), (0, 1), (-2, 2, True)),
)
_UNARY = (
    ("negative", NUMERIC, _wrap(np.negative), (-3, 3)),
    ("absolute", NUMERIC, _wrap(np.abs), (-3, 3)),
    ("square", NUMERIC, _wrap(np.square), (-3, 3)),
    ("exponent", FLOAT, _wrap(np.exp), (-3, 3)),
    ("logarithm", FLOAT, _wrap(np.log), (0.05, 4)),
    ("squareRoot", FLOAT, _wrap(np.sqrt), (0.05, 4)),
    ("reciprocal", FLOAT, _wrap(np.reciprocal), (0.2, 3)),
)

for _name, _dts, _ref, _diff, (_lo, _hi, _pos) in _BINARY:
    add(OpInfo(
        _name, build=(lambda n: lambda g, a, b: getattr(g, n)(a, b))(_name), ref=_ref,
        samples=_binary_samples(_lo, _hi, _pos), dtypes=_dts, differentiable=_diff,
        torch_ref=_torch(_name), errors=_binary_errors(_dts),
        # division by operands near 0 and power's large values: relative error of a quotient
        tol={DT.float32: (1e-5, 1e-6)} if _name != "power" else {DT.float32: (1e-5, 1e-5)}))

for _name, _dts, _ref, (_lo, _hi) in _UNARY:
    add(OpInfo(
        _name, build=(lambda n: lambda g, x: getattr(g, n)(x))(_name), ref=_ref,
        samples=_unary_samples(_lo, _hi), dtypes=_dts, differentiable=(0,),
        torch_ref=_torch(_name), errors=_unary_errors(_dts)))


def _cmp(fn):
    def ref(a, b):
        if is_float(a):
            return fn(f64(a), f64(b))
        return fn(a, b)
    return ref


def _cmp_samples(rng, dt):
    for _ in range(n_samples()):
        s1, s2 = broadcast_shapes(rng, 2)
        a = arr(rng, s1, dt, -2, 2)
        b = arr(rng, s2, dt, -2, 2)
        if dt in FLOAT and a.size and b.size:  # ties and exact equality must be exercised
            b = np.broadcast_to(np.take(a.reshape(-1), rng.integers(0, a.size, b.shape)),
                                b.shape).astype(b.dtype)
        yield Sample([a, b])


for _name, _fn in (("equal", np.equal), ("greaterThan", np.greater)):
    add(OpInfo(_name, build=(lambda n: lambda g, a, b: getattr(g, n)(a, b))(_name),
               ref=_cmp(_fn), samples=_cmp_samples, dtypes=ALL,
               errors=lambda rng: iter([ErrorInput(
                   Sample([np.ones((2,), np.float32), np.ones((2,), np.int32)]),
                   _errors_mod().DataTypeError, "secondaryTensor")])))


def _select_ref(p, t, f):
    pt = p != 0 if p.dtype != bool else p
    if is_float(p):
        pt = (f64(p) != 0)  # NaN != 0: true
    if t.dtype.kind in "biu":
        return np.where(pt, t, f)
    return np.where(pt, f64(t), f64(f))


def _select_samples(rng, dt):
    pdts = (DT.bool, DT.float32, DT.int32, dt)
    for k in range(n_samples()):
        sp, st, sf = broadcast_shapes(rng, 3)
        pdt = pdts[k % len(pdts)]
        p = arr(rng, sp, pdt, -1, 1)
        yield Sample([p, arr(rng, st, dt), arr(rng, sf, dt)], diff=(1, 2))


add(OpInfo("select", build=lambda g, p, t, f: g.select(p, t, f), ref=_select_ref,
           samples=_select_samples, dtypes=ALL, differentiable=(1, 2),
           errors=lambda rng: iter([ErrorInput(
               Sample([np.ones((2,), bool), np.ones((2,), np.float32),
                       np.ones((2,), np.float16)]), _errors_mod().DataTypeError,
               "falseTensor")])))
