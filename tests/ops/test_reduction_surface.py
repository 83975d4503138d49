"""The reduction and cumulative surface (issue 15): every Swift base name of Apple's
MPSGraphReductionOps and MPSGraphCumulativeOps headers is a method of mg.Graph, called as
API.md says; and the decisions of docs/semantics.md, "Reduction and cumulative decisions
(issue 15)", each pinned on every backend present.

The headers' rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/, so that the test
runs without the shared folder); when the shared file is present, the copy must match it."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import mpsgraph as mg
from helpers import (
    API_DATA,
    DEVICES,
    api_rows,
    check_api_copy,
    method_params,
    swift_base,
    swift_labels,
)
from mpsgraph.ops.cumulative import CUMULATIVE
from mpsgraph.ops.reduction import REDUCTIONS

DT = mg.DataType
COPY = API_DATA / "MPSGRAPH_API_reduction_cumulative.tsv"
HEADERS = ("MPSGraphReductionOps", "MPSGraphCumulativeOps")


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] in HEADERS)


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 34, 14)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_swift_signature_is_a_graph_method(row):
    name = _base(row["swift_signature"])
    # API rule 9: the first argument positional; the others keywords named by the Swift labels
    params = method_params(name)
    labels = swift_labels(row["swift_signature"])
    kw = {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}
    for label in labels[1:]:
        assert label in kw, (name, label, sorted(kw))


def test_every_row_lands_on_its_own_line():
    """`grep -n "'reductionProduct'" src` finds its row."""
    root = Path(mg.__file__).parent / "ops"
    for table, module, prefix in ((REDUCTIONS, "reduction.py", "R("),
                                  (CUMULATIVE, "cumulative.py", "C(")):
        src = (root / module).read_text().splitlines()
        for name in table:
            rows = [ln for ln in src if ln.lstrip().startswith(f"{prefix}'{name}',")]
            assert len(rows) == 1, (name, rows)


# ---------------------------------------------------------------------------- helpers
@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def run(build, *arrays, device):
    g = mg.Graph()
    phs = [g.placeholder(list(np.shape(a)), DT.from_numpy(np.asarray(a).dtype))
           for a in arrays]
    out = build(g, *phs)
    return g.run(dict(zip(phs, arrays)), [out], device=device)[out].numpy()


def f32(*v):
    return np.array(v, np.float32)


INT_DTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


# ---------------------------------------------------------------------------- call forms
def test_call_forms(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    one = lambda b: run(b, x, device=device)  # noqa: E731
    np.testing.assert_array_equal(one(lambda g, t: g.reductionProduct(t, axis=1)), [[0], [60]])
    np.testing.assert_array_equal(one(lambda g, t: g.reductionProduct(t, axes=[0, -1])),
                                  [[0]])
    np.testing.assert_array_equal(one(lambda g, t: g.reductionArgMaximum(t, axis=-1)),
                                  [[2], [2]])
    np.testing.assert_array_equal(one(lambda g, t: g.cumulativeSum(t, axis=1)),
                                  np.cumsum(x, 1))
    np.testing.assert_array_equal(
        one(lambda g, t: g.cumulativeSum(t, axisTensor=g.constant(1, dataType=mg.int32))),
        np.cumsum(x, 1))
    np.testing.assert_array_equal(
        one(lambda g, t: g.cumulativeSum(t, axis=g.constant(0, dataType=mg.int64),
                                         exclusive=True, reverse=True)), [[3, 4, 5], [0, 0, 0]])
    g = mg.Graph()
    t = g.placeholder([2, 3])
    with pytest.raises(TypeError):
        g.reductionArgMaximum(t)  # Swift requires the axis
    with pytest.raises(TypeError):
        g.cumulativeSum(t, 1)  # keyword-only, as API.md rule 9
    assert g.cumulativeMaximum(t, axis=0, name="cm").operation.name == "cm"


def test_fed_axis_tensor_is_read_at_run_time(device):
    g = mg.Graph()
    t = g.placeholder([2, 3])
    a = g.placeholder([], mg.int32)
    y = g.cumulativeProduct(t, axis=a)
    exe = g.compile({t: mg.ShapedType([2, 3], mg.float32), a: mg.ShapedType([], mg.int32)},
                    [y], device=device)
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    for ax in (0, 1, -1):
        (r,) = exe.run([x, np.array(ax, np.int32)])
        np.testing.assert_array_equal(r.numpy(), np.cumprod(x, ax))
    with pytest.raises(mg.ShapeError, match="axisTensor"):
        exe.run([x, np.array(2, np.int32)])


# ---------------------------------------------------------------------------- decisions
def test_empty_reductions(device):
    e = np.zeros((2, 0), np.float32)
    assert run(lambda g, t: g.reductionProduct(t, axis=1), e, device=device).tolist() == \
        [[1], [1]]
    assert run(lambda g, t: g.reductionAnd(t, axis=1), e, device=device).tolist() == [[1], [1]]
    assert run(lambda g, t: g.reductionOr(t, axis=1), e, device=device).tolist() == [[0], [0]]
    assert run(lambda g, t: g.reductionMaximumPropagateNaN(t, axis=1), e,
               device=device).tolist() == [[-np.inf], [-np.inf]]
    assert run(lambda g, t: g.reductionMinimumPropagateNaN(t, axis=1), e,
               device=device).tolist() == [[np.inf], [np.inf]]
    # an arg reduction of an empty axis has no answer: a ShapeError when the graph is built
    g = mg.Graph()
    with pytest.raises(mg.ShapeError, match="axis"):
        g.reductionArgMaximum(g.placeholder([2, 0]), axis=1)
    # ... or, for a dynamic dimension, when it is compiled for the fed shape
    g = mg.Graph()
    p = g.placeholder([2, -1])
    y = g.reductionArgMinimum(p, axis=1)
    with pytest.raises(mg.ShapeError, match="axis"):
        g.run({p: e}, [y], device=device)


def test_arg_ties_nan_and_type(device):
    x = f32(1, 3, 3, np.nan, 0, np.nan)
    for name, want in (("reductionArgMaximum", 3), ("reductionArgMinimum", 3)):
        r = run(lambda g, t, n=name: getattr(g, n)(t, axis=0), x, device=device)
        assert r.dtype == np.int32 and r.tolist() == [want]
    ties = f32(1, 3, 3, -2, -2)
    assert run(lambda g, t: g.reductionArgMaximum(t, axis=0), ties, device=device).tolist() == [1]
    assert run(lambda g, t: g.reductionArgMinimum(t, axis=0), ties, device=device).tolist() == [3]
    u = np.array([2**64 - 1, 0, 2**64 - 1], np.uint64)
    assert run(lambda g, t: g.reductionArgMaximum(t, axis=0), u, device=device).tolist() == [0]


def test_truth_folds(device):
    x = f32(np.nan, -0.0, 2)
    assert run(lambda g, t: g.reductionOr(t, axes=[0]), f32(np.nan, 0), device=device).tolist() \
        == [1]
    assert run(lambda g, t: g.reductionAnd(t, axis=0), x, device=device).tolist() == [0]
    r = run(lambda g, t: g.reductionAnd(t, axis=0), np.array([5, -1], np.int8), device=device)
    assert r.dtype == np.int8 and r.tolist() == [1]
    b = np.array([[True, False], [True, True]])
    assert run(lambda g, t: g.reductionAnd(t, axis=1), b, device=device).tolist() == \
        [[False], [True]]


def test_nan_propagating_extrema(device):
    x = f32(1, np.nan, 3)
    assert np.isnan(run(lambda g, t: g.reductionMaximumPropagateNaN(t, axis=0), x,
                        device=device)).all()
    assert run(lambda g, t: g.reductionMaximum(t, axis=0), x, device=device).tolist() == [3]


@pytest.mark.parametrize("dt", INT_DTS)
def test_integer_products_and_cumulative_sums_wrap(device, dt):
    info = np.iinfo(dt)
    x = np.array([info.max, 2, 3], dt)
    want = np.array(int(info.max) * 6 % (1 << (8 * x.itemsize)), np.uint64)
    got = run(lambda g, t: g.reductionProduct(t, axis=0), x, device=device)
    assert got.dtype == dt and int(got.view(f"u{x.itemsize}")[0]) == int(want)
    c = run(lambda g, t: g.cumulativeSum(t, axis=0), np.array([info.max, 1], dt), device=device)
    assert c.tolist() == [info.max, info.min]
    p = run(lambda g, t: g.cumulativeProduct(t, axis=0, exclusive=True), x, device=device)
    assert p.tolist()[0] == 1


def test_exclusive_starts_with_the_identity(device):
    x = f32(2, -1, 5)
    ex = {"exclusive": True}
    assert run(lambda g, t: g.cumulativeSum(t, axis=0, **ex), x, device=device).tolist() == \
        [0, 2, 1]
    assert run(lambda g, t: g.cumulativeProduct(t, axis=0, **ex), x, device=device).tolist() == \
        [1, 2, -2]
    assert run(lambda g, t: g.cumulativeMaximum(t, axis=0, **ex), x, device=device).tolist() == \
        [-np.inf, 2, 2]
    assert run(lambda g, t: g.cumulativeMinimum(t, axis=0, **ex, reverse=True), x,
               device=device).tolist() == [-1, 5, np.inf]
    i = np.array([3, 1], np.int16)
    assert run(lambda g, t: g.cumulativeMaximum(t, axis=0, **ex), i, device=device).tolist() == \
        [-32768, 3]
    u = np.array([3, 1], np.uint32)
    assert run(lambda g, t: g.cumulativeMinimum(t, axis=0, **ex), u, device=device).tolist() == \
        [2**32 - 1, 3]


def test_cumulative_nan_propagates(device):
    x = f32(1, np.nan, 3)
    for name in ("cumulativeMaximum", "cumulativeMinimum", "cumulativeSum"):
        r = run(lambda g, t, n=name: getattr(g, n)(t, axis=0), x, device=device)
        assert r[0] == 1 and np.isnan(r[1:]).all(), (name, r)


# ---------------------------------------------------------------------------- gradients
def _grad(build, x, device):
    g = mg.Graph()
    p = g.placeholder(list(x.shape))
    y = build(g, p)
    u = g.constant(np.linspace(1, -2, y.shape[-1] if y.shape else 1).astype(np.float32)
                   .reshape([1] * (len(y.shape) - 1) + [-1]) if y.shape else 1.0,
                   dataType=mg.float32)
    w = g.select(g.isInfinite(y), g.constant(0.0, dataType=mg.float32), y)
    loss = g.reductionSum(g.multiplication(w, u))
    d = g.gradientForPrimaryTensor(loss, [p])[p]
    return g.run({p: x}, [d], device=device)[d].numpy()


def test_product_gradient_with_zeros(device):
    x = np.array([[2, 0, 3, 4], [0, 5, 0, 1], [1, 2, 3, 4]], np.float32)
    d = _grad(lambda g, t: g.reductionProduct(t, axis=1), x, device)
    # one zero: the product of the others at the zero; two zeros: 0 everywhere
    np.testing.assert_allclose(d, [[0, 24, 0, 0], [0, 0, 0, 0], [24, 12, 8, 6]])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name", ["cumulativeMaximum", "cumulativeMinimum",
                                  "cumulativeProduct", "cumulativeSum"])
def test_cumulative_gradients_match_torch_autograd(device, name, exclusive, reverse):
    """Every option, ties and zeros included (the exclusive extrema start at -inf / +inf,
    which the generic opdb harness cannot weigh: checked here)."""
    torch = pytest.importorskip("torch")
    x = np.array([[1.5, -2, 3, 3, 0.5, 3], [0, 2, 0, -1, 4, 4], [-1, -1, 2, -3, 2, 5]],
                 np.float32)
    d = _grad(lambda g, t: getattr(g, name)(t, axis=1, exclusive=exclusive, reverse=reverse),
              x, device)
    t = torch.tensor(x.astype(np.float64), requires_grad=True)
    s = t.flip(1) if reverse else t
    y = {"cumulativeMaximum": lambda: s.cummax(1).values,
         "cumulativeMinimum": lambda: s.cummin(1).values,
         "cumulativeProduct": lambda: s.cumprod(1),
         "cumulativeSum": lambda: s.cumsum(1)}[name]()
    if exclusive:
        y = torch.cat([torch.zeros(3, 1, dtype=y.dtype), y[:, :-1]], 1)  # (the first: no grad)
    y = y.flip(1) if reverse else y
    u = torch.tensor(np.linspace(1, -2, 6))
    (y * u).sum().backward()
    np.testing.assert_allclose(d, t.grad.numpy(), rtol=1e-5, atol=1e-5)
