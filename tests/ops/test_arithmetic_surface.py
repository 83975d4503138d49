"""The arithmetic surface (issue 15): every Swift base name of Apple's MPSGraphArithmeticOps
header is a method of mg.Graph, called as API.md says; and the decisions of docs/semantics.md,
"Arithmetic decisions (issue 15)", each pinned on every CPU backend.

The header's rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/, so that the test
runs without the shared folder); when the shared file is present, the copy must match it."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from helpers import API_DATA, DEVICES, api_rows, check_api_copy, swift_base, swift_labels
from mpsgraph.ops.arithmetic import ELEMENTWISE

DT = mg.DataType
COPY = API_DATA / "MPSGRAPH_API_arithmetic.tsv"
HEADER = "MPSGraphArithmeticOps"
KEYWORDS = {"not": "not_", "if": "if_", "for": "for_", "while": "while_"}


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] == HEADER)


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 78)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: _base(r["swift_signature"]))
def test_every_swift_base_name_is_a_graph_method(row):
    name = _base(row["swift_signature"])
    py = KEYWORDS.get(name, name)
    assert callable(getattr(mg.Graph, py, None)), f"mg.Graph has no method {py!r}"
    assert callable(getattr(mg.Graph, name, None))  # getattr(g, "not") works too
    # API rule 9: the first argument is positional; the others are named by the Swift labels
    params = list(inspect.signature(getattr(mg.Graph, py)).parameters.values())[1:]
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    labels = swift_labels(row["swift_signature"])
    for label, p in zip(labels[1:], params[1:]):
        if label not in ("_", "name"):
            assert p.name == label, (name, label, p.name)
    assert "name" in {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_every_row_lands_on_its_own_line():
    """`grep -n "'erf'" src` finds the row of erf: one line of the table module starts the row
    of each op, with its name in single quotes."""
    src = (Path(mg.__file__).parent / "ops" / "arithmetic.py").read_text().splitlines()
    for name in ELEMENTWISE:
        rows = [ln for ln in src if ln.lstrip().startswith(f"E('{name}',")]
        assert len(rows) == 1, (name, rows)


def test_call_forms(device):
    g = mg.Graph()
    a, b, c = (g.placeholder([2]) for _ in range(3))
    outs = [g.atan2(a, b), g.atan2(a, secondaryTensor=b), g.atan2(primaryTensor=a,
                                                                  secondaryTensor=b),
            g.clamp(a, min=b, max=c), g.clamp(a, b, c),
            g.clamp(a, minValueTensor=b, maxValueTensor=c), g.sin(a, name="s")]
    x = np.array([0.5, -2.0], np.float32)
    y = np.array([1.0, 1.0], np.float32)
    z = np.array([0.0, 3.0], np.float32)
    res = g.run({a: x, b: y, c: z}, outs, device=device)
    np.testing.assert_allclose(res[outs[0]].numpy(), np.arctan2(x, y), rtol=1e-6)
    np.testing.assert_array_equal(res[outs[1]].numpy(), res[outs[0]].numpy())
    np.testing.assert_array_equal(res[outs[2]].numpy(), res[outs[0]].numpy())
    for k in (3, 4, 5):
        np.testing.assert_array_equal(res[outs[k]].numpy(), [0.0, 1.0])
    assert outs[6].operation.name == "s"
    with pytest.raises(mg.GraphError, match="clamp.*minValueTensor"):
        g.clamp(a, min=b, minValueTensor=b, max=c)
    with pytest.raises(TypeError):
        g.sin(a, "name")


# ---------------------------------------------------------------------------- helpers
def run(build, *arrays, device):
    g = mg.Graph()
    phs = [g.placeholder(list(np.shape(a)), DT.from_numpy(np.asarray(a).dtype))
           for a in arrays]
    out = build(g, *phs)
    return g.run(dict(zip(phs, arrays)), [out], device=device)[out].numpy()


def _op(name):
    return lambda g, *ts: getattr(g, name)(*ts)


def f32(*v):
    return np.array(v, np.float32)


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


# ---------------------------------------------------------------------------- decisions
INT_DTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dt", INT_DTS)
def test_integer_overflow_wraps(device, dt):
    info = np.iinfo(dt)
    a, one = np.array([info.max, info.min], dt), np.array([1, 1], dt)
    np.testing.assert_array_equal(run(lambda g, x, y: g.addition(x, y), a, one, device=device),
                                  np.array([info.min, info.min + 1], dt))
    if info.min < 0:
        m = np.array([info.min], dt)
        np.testing.assert_array_equal(run(lambda g, x: g.negative(x), m, device=device), m)
        np.testing.assert_array_equal(run(lambda g, x: g.absolute(x), m, device=device), m)
        np.testing.assert_array_equal(
            run(lambda g, x, y: g.division(x, y), m, np.array([-1], dt), device=device), m)


@pytest.mark.parametrize("dt", INT_DTS)
def test_shift_by_width_or_negative(device, dt):
    w = np.dtype(dt).itemsize * 8
    signed = np.dtype(dt).kind == "i"
    amounts = [w, w + 3, 1] + ([-1] if signed else [])
    a = np.array([-8 if signed else 8] * len(amounts), dt)
    b = np.array(amounts, dt)
    left = run(lambda g, x, y: g.bitwiseLeftShift(x, y), a, b, device=device)
    right = run(lambda g, x, y: g.bitwiseRightShift(x, y), a, b, device=device)
    np.testing.assert_array_equal(left, np.array([0, 0, -16 if signed else 16]
                                                 + ([0] if signed else []), dt))
    fill = -1 if signed else 0
    np.testing.assert_array_equal(right, np.array([fill, fill, -4 if signed else 4]
                                                  + ([fill] if signed else []), dt))
    if not signed:  # a logical shift: the top bit comes down
        top = np.array([1 << (w - 1)], dtype=object).astype(dt)
        np.testing.assert_array_equal(
            run(lambda g, x, y: g.bitwiseRightShift(x, y), top, np.array([w - 1], dt),
                device=device), np.array([1], dt))


@pytest.mark.parametrize("dt", INT_DTS)
def test_integer_division_and_modulo_by_zero(device, dt):
    signed = np.dtype(dt).kind == "i"
    a = np.array([7, -7, 0] if signed else [7, 9, 0], dt)
    zero = np.zeros(3, dt)
    for op in ("division", "divisionNoNaN", "modulo", "floorModulo"):
        np.testing.assert_array_equal(run(_op(op), a, zero,
                                          device=device), zero, err_msg=op)
    if signed:
        m = np.array([np.iinfo(dt).min], dt)
        for op in ("modulo", "floorModulo"):  # INT_MIN % -1 = 0 (no trap)
            np.testing.assert_array_equal(
                run(_op(op), m, np.array([-1], dt),
                    device=device), [0])


def test_modulo_sign_rules(device):
    a, b = f32(7, -7, 7, -7, 5.5), f32(3, 3, -3, -3, 0)
    np.testing.assert_array_equal(run(lambda g, x, y: g.modulo(x, y), a, b, device=device)[:4],
                                  f32(1, -1, 1, -1))  # the sign of the dividend
    np.testing.assert_array_equal(run(lambda g, x, y: g.floorModulo(x, y), a, b,
                                      device=device), f32(1, 2, -2, -1, 0))  # the divisor's
    assert math.isnan(run(lambda g, x, y: g.modulo(x, y), a, b, device=device)[4])
    ai, bi = np.array([7, -7, 7, -7], np.int32), np.array([3, 3, -3, -3], np.int32)
    np.testing.assert_array_equal(run(lambda g, x, y: g.modulo(x, y), ai, bi, device=device),
                                  [1, -1, 1, -1])
    np.testing.assert_array_equal(run(lambda g, x, y: g.floorModulo(x, y), ai, bi,
                                      device=device), [1, 2, -2, -1])
    big = run(lambda g, x, y: g.modulo(x, y), f32(3.4e38, 1.0), f32(1e-45, 0.3),
              device=device)  # exact even when the quotient overflows
    np.testing.assert_array_equal(big, np.fmod(f32(3.4e38, 1.0), f32(1e-45, 0.3)))


def test_division_no_nan(device):
    got = run(lambda g, x, y: g.divisionNoNaN(x, y), f32(0, 1, -1, np.nan, 1),
              f32(0, 0, -0.0, 0, np.nan), device=device)
    np.testing.assert_array_equal(got[:4], [0, 0, 0, 0])
    assert math.isnan(got[4])


def test_nan_in_comparisons_and_extrema(device):
    a, b = f32(np.nan, 1, np.nan), f32(1, np.nan, np.nan)
    for op, want in (("equal", [0, 0, 0]), ("notEqual", [1, 1, 1]), ("lessThan", [0, 0, 0]),
                     ("greaterThanOrEqualTo", [0, 0, 0]), ("lessThanOrEqualTo", [0, 0, 0])):
        np.testing.assert_array_equal(run(_op(op), a, b,
                                          device=device), np.array(want, bool), err_msg=op)
    np.testing.assert_array_equal(run(lambda g, x, y: g.maximum(x, y), a, b, device=device)[:2],
                                  [1, 1])
    for op in ("maximumWithNaNPropagation", "minimumWithNaNPropagation"):
        assert np.isnan(run(_op(op), a, b, device=device)).all()


def test_round_vs_rint(device):
    x = f32(0.5, 1.5, 2.5, -0.5, -2.5, 2.4999998, -0.4)
    np.testing.assert_array_equal(run(lambda g, t: g.round(t), x, device=device),
                                  f32(1, 2, 3, -1, -3, 2, -0.0))
    np.testing.assert_array_equal(run(lambda g, t: g.rint(t), x, device=device),
                                  f32(0, 2, 2, -0.0, -2, 2, -0.0))
    for dt in (np.float16, ml_dtypes.bfloat16):
        np.testing.assert_array_equal(
            run(lambda g, t: g.round(t), f32(2.5, -0.5).astype(dt), device=device).astype(
                np.float32), f32(3, -1))


def test_sign_of_zero_and_nan(device):
    got = run(lambda g, t: g.sign(t), f32(-0.0, 0.0, np.nan, -3, 1e-45), device=device)
    np.testing.assert_array_equal(got[[0, 1, 3, 4]], f32(0, 0, -1, 1))
    assert not np.signbit(got[0]) and math.isnan(got[2])
    np.testing.assert_array_equal(run(lambda g, t: g.sign(t), np.array([0, 200], np.uint8),
                                      device=device), [0, 1])
    np.testing.assert_array_equal(
        run(lambda g, t: g.signbit(t), f32(-0.0, 0.0, -1, np.copysign(np.nan, -1)),
            device=device), [True, False, True, True])


@pytest.mark.parametrize("dt", INT_DTS)
def test_popcount_of_negative_and_extreme_values(device, dt):
    info = np.iinfo(dt)
    w = np.dtype(dt).itemsize * 8
    x = np.array([info.min, info.max, 0, 5], dt)
    want = [1 if info.min < 0 else 0, w - 1 if info.min < 0 else w, 0, 2]
    np.testing.assert_array_equal(run(lambda g, t: g.bitwisePopulationCount(t), x,
                                      device=device), np.array(want, dt))
    if info.min < 0:
        np.testing.assert_array_equal(
            run(lambda g, t: g.bitwisePopulationCount(t), np.array([-1], dt), device=device),
            [w])


def test_logical_ops_on_non_bool(device):
    a, b = f32(0, -0.0, 2, np.nan), f32(1, 1, 0, 1)
    np.testing.assert_array_equal(run(lambda g, x, y: g.logicalAND(x, y), a, b, device=device),
                                  [False, False, False, True])
    np.testing.assert_array_equal(run(lambda g, t: g.not_(t), a, device=device),
                                  [True, True, False, False])
    ai = np.array([0, 3, -1], np.int8)
    np.testing.assert_array_equal(run(lambda g, x, y: g.logicalXOR(x, y), ai,
                                      np.array([0, 0, 5], np.int8), device=device),
                                  [False, True, False])


def test_clamp_nan_and_crossed_bounds(device):
    got = run(lambda g, x, lo, hi: g.clamp(x, min=lo, max=hi), f32(np.nan, 5, 5, 0),
              f32(0, 2, np.nan, 3), f32(1, 1, 9, 1), device=device)
    assert math.isnan(got[0]) and math.isnan(got[2])
    np.testing.assert_array_equal(got[[1, 3]], f32(1, 1))  # min > max: max


def test_erf_accuracy(device):
    x = np.linspace(-6, 6, 2001).astype(np.float32)
    got = run(lambda g, t: g.erf(t), x, device=device).astype(np.float64)
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-7)


def test_bitwise_ops_refuse_floats_and_bool():
    g = mg.Graph()
    for dt in (mg.float32, DT.bool):
        t = g.placeholder([2], dt)
        with pytest.raises(mg.DataTypeError, match="bitwiseAND.*primaryTensor"):
            g.bitwiseAND(t, t)


# ---------------------------------------------------------------------------- gradients
def _grad(build, x, device):
    g = mg.Graph()
    p = g.placeholder(list(x.shape))
    y = build(g, p)
    d = g.gradientForPrimaryTensor(g.reductionSum(y), [p])[p]
    return g.run({p: x}, [d], device=device)[d].numpy()


@pytest.mark.parametrize("op", ["floor", "ceil", "round", "rint", "truncate", "sign"])
def test_piecewise_constant_ops_have_zero_gradient(device, op):
    x = f32(0.3, -1.7, 2.5, np.inf)
    np.testing.assert_array_equal(_grad(lambda g, t: getattr(g, op)(t), x, device), f32(0, 0,
                                                                                          0, 0))


def test_no_gradient_through_comparisons_and_complex(device):
    x = f32(0.3, -1.7)
    # a comparison only selects: its predicate gets no gradient and needs none
    got = _grad(lambda g, t: g.select(g.lessThan(t, g.constant(0.0, dataType=mg.float32)),
                                      g.negative(t), t), x, device)
    np.testing.assert_array_equal(got, f32(1, -1))
    g = mg.Graph()
    p = g.placeholder([2])
    z = g.complexTensor(p, p)
    with pytest.raises(mg.UnsupportedError, match="complex"):
        g.gradientForPrimaryTensor(g.reductionSum(g.realPartOfTensor(z)), [p])


# ---------------------------------------------------------------------------- complex
def test_complex_round_trip(device):
    g = mg.Graph()
    z = g.placeholder([2, 3], DT.complexFloat32)
    re, im = g.placeholder([2, 3]), g.placeholder([3])
    outs = [g.realPartOfTensor(z), g.imaginaryPartOfTensor(z), g.planarTensor(z),
            g.absoluteSquare(z), g.planarTensor(g.conjugate(z)),
            g.planarTensor(g.complexTensor(re, imaginaryTensor=im))]
    zv = (np.arange(6).reshape(2, 3) + 1j * (np.arange(6).reshape(2, 3) - 2.5)).astype(
        np.complex64)
    rv, iv = np.ones((2, 3), np.float32), f32(1, 2, 3)
    r = g.run({z: zv, re: rv, im: iv}, outs, device=device)
    got = [r[o].numpy() for o in outs]
    assert [o.dataType for o in outs] == [mg.float32] * 6
    np.testing.assert_array_equal(got[0], zv.real)
    np.testing.assert_array_equal(got[1], zv.imag)
    np.testing.assert_array_equal(got[2], np.concatenate([zv.real, zv.imag], -1))
    np.testing.assert_array_equal(got[3], zv.real ** 2 + zv.imag ** 2)
    np.testing.assert_array_equal(got[4], np.concatenate([zv.real, -zv.imag], -1))
    np.testing.assert_array_equal(got[5], np.concatenate([rv, np.broadcast_to(iv, (2, 3))],
                                                         -1))
    assert g.planarTensor(g.placeholder([-1, 4], DT.complexFloat32)).shape == [-1, 8]
    # a real tensor passes through planarTensor / realPartOfTensor / conjugate unchanged
    x = g.placeholder([2])
    assert g.planarTensor(x).shape == [2] and g.imaginaryPartOfTensor(x).dataType == mg.float32
