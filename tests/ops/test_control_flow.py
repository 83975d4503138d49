"""Control flow (issue 17): the surface of MPSGraphControlFlowOps and MPSGraphCallOps, and the
decisions of docs/semantics.md, "Control flow decisions (issue 17)", on every backend present:
blocks as Python callables, if_ on a scalar predicate and its gradient, while_ with before /
after blocks, for_ in both forms (with and without an index), controlDependency ordering an
assign before a read (also inside a captured CUDA graph), and call.

The headers' rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/)."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES, api_rows

HERE = Path(__file__).resolve().parent
COPY = HERE.parent / "data" / "MPSGRAPH_API_control.tsv"
SHARED = HERE.parents[1] / ".." / "shared" / "MPSGRAPH_API.tsv"
HEADERS = ("MPSGraphControlFlowOps", "MPSGraphCallOps")
KEYWORDS = {"if": "if_", "for": "for_", "while": "while_"}
OBJC = {"else": "elseBlock", "with": "operations"}  # Swift labels that are Python keywords
F32 = mg.float32


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] in HEADERS)


def test_the_copy_matches_the_shared_list():
    rows = _rows(COPY)
    assert len(rows) == 6
    if not SHARED.exists():
        pytest.skip("../shared/MPSGRAPH_API.tsv is not here")
    assert rows == _rows(SHARED)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_swift_base_name_is_a_graph_method(row):
    sig = row["swift_signature"]
    name = sig.split("(")[0]
    py = KEYWORDS.get(name, name)
    method = getattr(mg.Graph, py, None)
    assert callable(method), f"mg.Graph has no method {py!r}"
    params = list(inspect.signature(method).parameters.values())[1:]
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD  # API rule 9
    names = {p.name for p in params}
    for label in sig.split("(", 1)[1].rstrip(")").split(":")[1:-1]:
        assert OBJC.get(label, label) in names, (sig, label)
    assert "name" in {p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


def _f(*xs):
    return np.array(xs, np.float32)


# ------------------------------------------------------------------------------ if_
@pytest.mark.parametrize("pred_dtype", [mg.bool, mg.int32, F32])
def test_if_takes_the_branch_of_the_predicate(device, pred_dtype):
    g = mg.Graph()
    x = g.placeholder([3], F32)
    p = g.placeholder([1, 1], pred_dtype)  # any one-element tensor
    two = g.constant(2.0, [3], F32)
    r, s = g.if_(p, then=lambda: [g.multiplication(x, two), g.constant(1, [], mg.int32)],
                 elseBlock=lambda: [g.sin(x), g.constant(7, [], mg.int32)])
    xs = _f(1, 2, 3)
    npd = pred_dtype.numpy_dtype
    for pv, want, ws in ((1, xs * 2, 1), (0, np.sin(xs), 7)):
        out = g.run({x: xs, p: np.full((1, 1), pv, npd)}, [r, s], device=device)
        np.testing.assert_allclose(out[r].numpy(), want, rtol=1e-6)
        assert out[s].numpy() == ws and out[s].dataType == mg.int32


def test_if_then_block_may_return_an_outer_tensor_and_nests(device):
    g = mg.Graph()
    x = g.placeholder([2], F32)
    p = g.placeholder([], mg.bool)
    q = g.placeholder([], mg.bool)

    def inner():
        return g.if_(q, then=lambda: [g.negative(x)], elseBlock=lambda: [g.square(x)])

    r, = g.if_(p, then=lambda: [x], elseBlock=inner)
    xs = _f(3, -4)
    for pv, qv, want in ((True, False, xs), (False, True, -xs), (False, False, xs * xs)):
        got = g.run({x: xs, p: np.array(pv), q: np.array(qv)}, [r], device=device)[r].numpy()
        np.testing.assert_array_equal(got, want)


def test_if_gradient_flows_through_the_taken_branch(device):
    g = mg.Graph()
    x = g.placeholder([4], F32)
    w = g.placeholder([4], F32)
    p = g.placeholder([], mg.bool)
    r, = g.if_(p, then=lambda: [g.multiplication(g.sin(x), w)],
               elseBlock=lambda: [g.exponent(x)])
    loss = g.reductionSum(g.multiplication(r, r))
    gr = g.gradientForPrimaryTensor(loss, [x, w])
    xs = _f(0.1, -0.5, 1.0, 2.0)
    ws = _f(1.5, -1.0, 0.25, 3.0)
    for pv in (True, False):
        out = g.run({x: xs, w: ws, p: np.array(pv)}, [gr[x], gr[w]], device=device)
        x64, w64 = xs.astype(np.float64), ws.astype(np.float64)
        if pv:
            y = np.sin(x64) * w64
            dx, dw = 2 * y * np.cos(x64) * w64, 2 * y * np.sin(x64)
        else:
            y = np.exp(x64)
            dx, dw = 2 * y * y, np.zeros(4)
        np.testing.assert_allclose(out[gr[x]].numpy(), dx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out[gr[w]].numpy(), dw, rtol=1e-5, atol=1e-6)


def test_nested_if_gradient(device):
    g = mg.Graph()
    x = g.placeholder([2], F32)
    p, q = g.placeholder([], mg.bool), g.placeholder([], mg.bool)
    r, = g.if_(p, then=lambda: g.if_(q, then=lambda: [g.sin(x)],
                                    elseBlock=lambda: [g.square(x)]),
               elseBlock=lambda: [g.multiplication(x, g.constant(3.0, [], F32))])
    d = g.gradientForPrimaryTensor(r, [x])[x]
    xs = _f(0.5, 2)
    for pv, qv, want in ((1, 1, np.cos(xs)), (1, 0, 2 * xs), (0, 1, _f(3, 3))):
        got = g.run({x: xs, p: np.array(bool(pv)), q: np.array(bool(qv))}, [d],
                    device=device)[d].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_if_gradient_counts_an_outer_op_between_captures_once(device):
    g = mg.Graph()
    x = g.placeholder([2], F32)
    p = g.placeholder([], mg.bool)
    c = g.sin(x)  # both c and x are captured; d/dx goes through sin once
    r, = g.if_(p, then=lambda: [g.addition(c, x)], elseBlock=lambda: [c])
    d = g.gradientForPrimaryTensor(r, [x])[x]
    xs = _f(0.5, 2)
    for pv, want in ((True, 1 + np.cos(xs)), (False, np.cos(xs))):
        got = g.run({x: xs, p: np.array(pv)}, [d], device=device)[d].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_if_gradient_against_central_differences(rng):
    g = mg.Graph()
    x = g.placeholder([3], F32)
    p = g.constant(True, [], mg.bool)
    r, = g.if_(p, then=lambda: [g.tanh(g.multiplication(x, x))],
               elseBlock=lambda: [x])
    loss = g.reductionSum(r)
    dx = g.gradientForPrimaryTensor(loss, [x])[x]
    xs = rng.standard_normal(3).astype(np.float32)
    got = g.run({x: xs}, [dx])[dx].numpy().astype(np.float64)
    x64, eps = xs.astype(np.float64), 1e-6
    num = np.array([(np.tanh((x64 + eps * e) ** 2).sum() - np.tanh((x64 - eps * e) ** 2).sum())
                    / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-6)


def test_if_errors():
    g = mg.Graph()
    x = g.placeholder([2], F32)
    p = g.placeholder([], mg.bool)
    with pytest.raises(mg.ShapeError, match="predicate"):
        g.if_(x, then=lambda: [x], elseBlock=lambda: [x])
    with pytest.raises(mg.GraphError, match="then"):
        g.if_(p, then=3, elseBlock=lambda: [x])
    with pytest.raises(mg.DataTypeError, match="elseBlock"):
        g.if_(p, then=lambda: [x], elseBlock=lambda: [g.cast(x, mg.int32)])
    with pytest.raises(mg.ShapeError, match="elseBlock"):
        g.if_(p, then=lambda: [x], elseBlock=lambda: [g.constant(1.0, [3], F32)])
    with pytest.raises(mg.GraphError, match="elseBlock"):
        g.if_(p, then=lambda: [x], elseBlock=lambda: [x, x])
    with pytest.raises(mg.GraphError, match="elseBlock"):
        g.if_(p, then=lambda: [x])  # results need an else
    with pytest.raises(mg.UnsupportedError, match="placeholder"):
        g.if_(p, then=lambda: [g.placeholder([2], F32)], elseBlock=lambda: [x])
    v = g.variable(_f(1, 2), [2], F32)
    with pytest.raises(mg.UnsupportedError, match="assign"):
        g.if_(p, then=lambda: (g.assign(v, x), [x])[1], elseBlock=lambda: [x])
    assert g.if_(p, then=lambda: []) == []  # no results: else may be absent


# ------------------------------------------------------------------------------ while_
def test_while_before_and_after(device):
    g = mg.Graph()
    s0 = g.placeholder([2], F32)
    lim = g.placeholder([], F32)

    def before(ins, results):
        results.append(ins[0])
        results.append(g.reductionSum(ins[0], axes=[0]))
        return g.lessThan(g.reductionSum(ins[0], axes=[0]), g.reshape(lim, [1]))

    def after(args):
        return [g.multiplication(args[0], g.constant(2.0, [], F32))]

    s, tot = g.while_([s0], before=before, after=after)
    for lv, want in ((10.0, _f(4, 8)), (0.5, _f(1, 2)), (13.0, _f(8, 16))):
        out = g.run({s0: _f(1, 2), lim: np.float32(lv)}, [s, tot], device=device)
        np.testing.assert_array_equal(out[s].numpy(), want)
        np.testing.assert_array_equal(out[tot].numpy(), [want.sum()])


def test_while_counts_with_an_integer_state(device):
    g = mg.Graph()
    n = g.placeholder([], mg.int32)
    i0 = g.constant(0, [], mg.int32)
    acc0 = g.constant(1.0, [], F32)
    one = g.constant(1, [], mg.int32)

    def before(ins, results):
        results.extend(ins)
        return g.lessThan(ins[0], n)

    i, acc = g.while_([i0, acc0], before=before,
                      after=lambda a: [g.addition(a[0], one),
                                       g.multiplication(a[1], g.constant(3.0, [], F32))])
    for nv in (0, 1, 5):
        out = g.run({n: np.int32(nv)}, [i, acc], device=device)
        assert out[i].numpy() == nv and out[acc].numpy() == 3.0 ** nv


def test_while_errors_and_no_gradient():
    g = mg.Graph()
    x = g.placeholder([2], F32)
    t = g.constant(True, [], mg.bool)
    with pytest.raises(mg.GraphError, match="initialInputs"):
        g.while_([], before=lambda i, r: t, after=lambda a: [])
    with pytest.raises(mg.ShapeError, match="after"):
        g.while_([x], before=lambda i, r: (r.extend(i), t)[1],
                 after=lambda a: [g.constant(1.0, [3], F32)])
    with pytest.raises(mg.ShapeError, match="before"):
        g.while_([x], before=lambda i, r: (r.extend(i), x)[1], after=lambda a: a)
    w, = g.while_([x], before=lambda i, r: (r.extend(i), g.constant(False, [], mg.bool))[1],
                  after=lambda a: a)
    with pytest.raises(mg.UnsupportedError, match="while_"):
        g.gradientForPrimaryTensor(g.reductionSum(w), [x])


# ------------------------------------------------------------------------------ for_
def test_for_number_of_iterations_with_and_without_index(device):
    g = mg.Graph()
    n = g.placeholder([], mg.int32)
    x = g.placeholder([3], F32)
    a0 = g.constant(0.0, [3], F32)
    s, = g.for_(n, [a0], lambda i, a: [g.addition(a[0], g.multiplication(
        x, g.cast(i, F32)))])
    p, = g.for_(numberOfIterations=n, initialBodyArguments=[x],
                body=lambda a: [g.multiplication(a[0], x)])
    xs = _f(1, 2, -1)
    for nv in (0, 1, 4):
        out = g.run({n: np.int32(nv), x: xs}, [s, p], device=device)
        np.testing.assert_allclose(out[s].numpy(), xs * sum(range(nv)), rtol=1e-6)
        np.testing.assert_allclose(out[p].numpy(), xs ** (nv + 1), rtol=1e-6)
    out = g.run({n: np.int32(-3), x: xs}, [s], device=device)  # no iteration
    np.testing.assert_array_equal(out[s].numpy(), np.zeros(3))


@pytest.mark.parametrize("lo,hi,st", [(0, 5, 1), (2, 11, 3), (5, 0, -2), (3, 3, 1), (4, 1, 1)])
def test_for_range_is_half_open_like_python(device, lo, hi, st):
    g = mg.Graph()
    b = [g.placeholder([], mg.int32) for _ in range(3)]
    acc0 = g.constant(0, [], mg.int32)
    cnt0 = g.constant(0, [], mg.int32)
    one = g.constant(1, [], mg.int32)
    acc, cnt = g.for_(lowerBound=b[0], upperBound=b[1], step=b[2],
                      initialBodyArguments=[acc0, cnt0],
                      body=lambda i, a: [g.addition(a[0], i), g.addition(a[1], one)])
    out = g.run(dict(zip(b, map(np.int32, (lo, hi, st)))), [acc, cnt], device=device)
    assert out[acc].numpy() == sum(range(lo, hi, st))
    assert out[cnt].numpy() == len(range(lo, hi, st))


def test_for_errors():
    g = mg.Graph()
    x = g.placeholder([2], F32)
    n = g.constant(2, [], mg.int32)
    with pytest.raises(mg.DataTypeError, match="numberOfIterations"):
        g.for_(g.constant(2.0, [], F32), [x], lambda i, a: a)
    with pytest.raises(mg.ShapeError, match="numberOfIterations"):
        g.for_(g.constant([2, 3], [2], mg.int32), [x], lambda i, a: a)
    with pytest.raises(mg.GraphError, match="upperBound"):
        g.for_(lowerBound=n, initialBodyArguments=[x], body=lambda i, a: a)
    with pytest.raises(mg.DataTypeError, match="body"):
        g.for_(n, [x], lambda i, a: [g.cast(a[0], mg.int32)])
    with pytest.raises(mg.GraphError, match="body"):
        g.for_(n, [x], lambda i, a: [])
    z = g.constant(0, [], mg.int32)
    r, = g.for_(lowerBound=n, upperBound=n, step=z, initialBodyArguments=[x],
                body=lambda i, a: a)
    with pytest.raises(mg.GraphError, match="step"):
        g.run({x: _f(1, 2)}, [r])
    f, = g.for_(n, [x], lambda i, a: [g.sin(a[0])])
    with pytest.raises(mg.UnsupportedError, match="for_"):
        g.gradientForPrimaryTensor(g.reductionSum(f), [x])


def test_loop_is_planned_once(device):
    g = mg.Graph()
    x = g.placeholder([2], F32)
    f, = g.for_(g.constant(50, [], mg.int32), [x], lambda i, a: [g.addition(a[0], x)])
    exe = g.compile({x: mg.ShapedType([2], F32)}, [f], device=device)
    from mpsgraph.runtime import executable as ex

    made = []
    orig = ex.Executable._plan
    ex.Executable._plan = lambda self, *a: (made.append(1), orig(self, *a))[1]
    try:
        for _ in range(3):
            np.testing.assert_array_equal(exe.run([_f(1, 2)])[0].numpy(), _f(51, 102))
    finally:
        ex.Executable._plan = orig
    assert made == []


# ------------------------------------------------------------------------------ controlDependency
def test_control_dependency_orders_an_assign_before_a_read(device):
    g = mg.Graph()
    v = g.variable(_f(1, 2), [2], F32)
    x = g.placeholder([2], F32)
    before = g.read(v)  # outside the block: the value at the start of the run
    asg = g.assign(v, g.addition(v, x))
    after, twice = g.controlDependency(
        [asg], dependentBlock=lambda: [g.read(v), g.multiplication(v, g.constant(2.0, [], F32))])
    out = g.run({x: _f(10, 20)}, [before, after, twice], device=device)  # assign not targeted
    np.testing.assert_array_equal(out[before].numpy(), _f(1, 2))
    np.testing.assert_array_equal(out[after].numpy(), _f(11, 22))
    np.testing.assert_array_equal(out[twice].numpy(), _f(22, 44))
    np.testing.assert_array_equal(g.run({}, [v], device=device)[v].numpy(), _f(11, 22))
    exe = g.compile({x: mg.ShapedType([2], F32)}, [after], device=device)
    np.testing.assert_array_equal(exe.run([_f(1, 1)])[0].numpy(), _f(12, 23))
    np.testing.assert_array_equal(exe.run([_f(1, 1)])[0].numpy(), _f(13, 24))


def test_control_dependency_block_returning_the_variable_and_control_flow(device):
    g = mg.Graph()
    v = g.variable(_f(1, 2), [2], F32)
    x = g.placeholder([2], F32)
    p = g.placeholder([], mg.bool)
    asg = g.assign(v, x)

    def block():
        r, = g.if_(p, then=lambda: [v], elseBlock=lambda: [g.negative(v)])
        f, = g.for_(g.constant(2, [], mg.int32), [v], lambda a: [g.addition(a[0], v)])
        return [v, r, f]

    same, r, f = g.controlDependency([asg], dependentBlock=block)
    out = g.run({x: _f(5, 7), p: np.array(False)}, [same, r, f], device=device)
    np.testing.assert_array_equal(out[same].numpy(), _f(5, 7))
    np.testing.assert_array_equal(out[r].numpy(), _f(-5, -7))
    np.testing.assert_array_equal(out[f].numpy(), _f(15, 21))


def test_control_dependency_on_plain_operations_and_its_gradient(device):
    g = mg.Graph()
    x = g.placeholder([3], F32)
    side = g.exponent(x)
    y, = g.controlDependency(side.operation, dependentBlock=lambda: [g.square(x)], name="cd")
    dx = g.gradientForPrimaryTensor(g.reductionSum(y), [x])[x]
    out = g.run({x: _f(1, 2, 3)}, [y, dx], device=device)
    np.testing.assert_array_equal(out[y].numpy(), _f(1, 4, 9))
    np.testing.assert_array_equal(out[dx].numpy(), _f(2, 4, 6))
    with pytest.raises(mg.GraphError, match="operations"):
        g.controlDependency([x], dependentBlock=lambda: [x])
    with pytest.raises(mg.GraphError, match="dependentBlock"):
        g.controlDependency([], dependentBlock=None)


@pytest.mark.gpu
def test_control_dependency_inside_a_captured_cuda_graph():
    g = mg.Graph()
    v = g.variable(_f(0, 0), [2], F32)
    x = g.placeholder([2], F32)
    asg = g.assign(v, g.addition(v, x))
    r, = g.controlDependency([asg], dependentBlock=lambda: [g.multiplication(g.read(v), v)])
    exe = g.compile({x: mg.ShapedType([2], F32)}, [r], device="cuda", cuda_graph=True)
    import torch

    xs = torch.ones(2, device="cuda")
    for k in range(1, 5):
        got = exe.run([xs])[0].numpy().copy()
        np.testing.assert_array_equal(got, _f(k * k, k * k))
    np.testing.assert_array_equal(g.run({}, [v], device="cuda")[v].numpy(), _f(4, 4))


@pytest.mark.gpu
def test_constant_bounds_loops_are_captured_on_cuda():
    g = mg.Graph()
    x = g.placeholder([2], F32)
    f, = g.for_(g.constant(3, [], mg.int32), [x],
                lambda i, a: [g.addition(a[0], g.cast(i, F32))])
    r, = g.if_(g.constant(True, [], mg.bool), then=lambda: [f], elseBlock=lambda: [x])
    exe = g.compile({x: mg.ShapedType([2], F32)}, [r], device="cuda", cuda_graph=True)
    np.testing.assert_array_equal(exe.run([_f(1, 2)])[0].numpy(), _f(4, 5))


def test_value_dependent_control_flow_refuses_a_forced_cuda_graph():
    pytest.importorskip("torch")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    g = mg.Graph()
    p = g.placeholder([], mg.bool)
    x = g.placeholder([2], F32)
    r, = g.if_(p, then=lambda: [x], elseBlock=lambda: [g.negative(x)])
    with pytest.raises(mg.UnsupportedError, match="cuda_graph"):
        g.compile({p: mg.ShapedType([], mg.bool), x: mg.ShapedType([2], F32)}, [r],
                  device="cuda", cuda_graph=True)


# ------------------------------------------------------------------------------ call
def _callee(device):
    h = mg.Graph()
    a = h.placeholder([2], F32)
    b = h.placeholder([2], F32)
    y = h.addition(h.multiplication(a, b), h.constant(1.0, [], F32))
    return h.compile({a: mg.ShapedType([2], F32), b: mg.ShapedType([2], F32)}, [y],
                     device=device)


def test_call_runs_an_executable_from_a_graph(device):
    callee = _callee("cpu")  # compiled for another device: recompiled for this one
    g = mg.Graph()
    x = g.placeholder([2], F32)
    y, = g.call("fma", inputTensors=[x, x], outputTypes=[mg.ShapedType([2], F32)])
    z = g.negative(y)
    cd = mg.CompilationDescriptor(callables={"fma": callee})
    exe = g.compile({x: mg.ShapedType([2], F32)}, [z], device=device, compilationDescriptor=cd)
    np.testing.assert_array_equal(exe.run([_f(2, 3)])[0].numpy(), _f(-5, -10))
    ed = mg.ExecutionDescriptor(compilationDescriptor=cd)
    out = g.run({x: _f(1, 4)}, [z], device=device, executionDescriptor=ed)
    np.testing.assert_array_equal(out[z].numpy(), _f(-2, -17))
    with pytest.raises(mg.GraphError, match="fma"):
        g.compile({x: mg.ShapedType([2], F32)}, [z], device=device)
    bad = g.call("fma", inputTensors=[x], outputTypes=[mg.ShapedType([2], F32)])[0]
    with pytest.raises(mg.GraphError, match="inputTensors"):
        g.compile({x: mg.ShapedType([2], F32)}, [bad], compilationDescriptor=cd)
    bad = g.call("fma", inputTensors=[x, x], outputTypes=[mg.ShapedType([3], F32)])[0]
    with pytest.raises(mg.GraphError, match="outputTypes"):
        g.compile({x: mg.ShapedType([2], F32)}, [bad], compilationDescriptor=cd)
    with pytest.raises(mg.GraphError, match="symbolName"):
        g.call("", inputTensors=[x], outputTypes=[])
    with pytest.raises(mg.UnsupportedError, match="call"):
        g.gradientForPrimaryTensor(g.reductionSum(y), [x])


def test_a_tensor_built_inside_a_block_is_refused_outside():
    g = mg.Graph()
    x = g.placeholder([2], F32)
    p = g.placeholder([], mg.bool)
    kept = []
    r, = g.if_(p, then=lambda: kept.append(g.sin(x)) or [kept[0]], elseBlock=lambda: [x])
    with pytest.raises(mg.GraphError, match="inside a block"):
        g.addition(kept[0], x)
    g.addition(r, x)  # the op's results are fine
