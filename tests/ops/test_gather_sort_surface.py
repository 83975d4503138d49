"""The gather / scatter / sort / top-k / linear-algebra surface (issue 16): every Swift base
name of Apple's MPSGraphGatherOps, MPSGraphScatterNDOps, MPSGraphSortOps, MPSGraphTopKOps,
MPSGraphNonZeroOps, MPSGraphLinearAlgebraOps and MPSGraphMatrixInverseOps headers, and
HammingDistance, is a method of mg.Graph whose keyword arguments include every Swift label;
plus the decisions of docs/semantics.md, "Gather, scatter, sort and linear algebra decisions
(issue 16)", pinned on every CPU backend (deterministic duplicates, run-time index errors,
CUDA-graph exclusion of host-reading steps, nonZeroIndices in a compiled Executable).

The rows are a copy of ../shared/MPSGRAPH_API.tsv's (tests/data/); when the shared file is
present, the copy must match it."""

from __future__ import annotations

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

COPY = API_DATA / "MPSGRAPH_API_gather_sort.tsv"
HEADERS = {"MPSGraphGatherOps", "MPSGraphScatterNDOps", "MPSGraphSortOps", "MPSGraphTopKOps",
           "MPSGraphNonZeroOps", "MPSGraphLinearAlgebraOps", "MPSGraphMatrixInverseOps"}


def _mine(r: dict) -> bool:
    return r["header"] in HEADERS or r["swift_signature"].startswith("HammingDistance(")


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: _mine(r))


_base = swift_base


def test_the_copy_matches_the_shared_list():
    check_api_copy(_rows, COPY, 38)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_swift_base_name_is_a_graph_method(row):
    name = _base(row["swift_signature"])
    params = method_params(name)
    names = {p.name for p in params}
    labels = swift_labels(row["swift_signature"])
    for label in labels[1:]:
        if label not in ("_", "name"):
            assert label in names, (name, label, sorted(names))


def _run(g, feeds, targets, device):
    res = g.run(feeds, targets, device=device)
    return [res[t].numpy() for t in targets]


@pytest.mark.parametrize("device", DEVICES)
def test_gather_gradient_sums_duplicates_deterministically(device):
    g = mg.Graph()
    table = g.placeholder([5, 3], mg.float32)
    idx = g.placeholder([6], mg.int32)
    y = g.gather(table, indicesTensor=idx, axis=0)
    dy = g.placeholder([6, 3], mg.float32)
    loss = g.reductionSum(g.multiplication(y, dy), axes=[0, 1])
    dt = g.gradientForPrimaryTensor(loss, [table])[table]
    rng = np.random.default_rng(0)
    t = rng.standard_normal((5, 3)).astype(np.float32)
    i = np.array([1, 1, -4, 4, 1, 0], np.int32)  # -4 is row 1 too
    d = rng.standard_normal((6, 3)).astype(np.float32)
    want = np.zeros((5, 3), np.float64)
    for k, r in enumerate(i % 5):
        want[r] += d[k]
    outs = [_run(g, {table: t, idx: i, dy: d}, [dt], device)[0] for _ in range(3)]
    np.testing.assert_allclose(outs[0], want, rtol=1e-6, atol=1e-6)
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


@pytest.mark.parametrize("device", DEVICES)
def test_fed_out_of_range_index_is_a_run_time_graph_error(device):
    g = mg.Graph()
    table = g.placeholder([4, 2], mg.float32)
    idx = g.placeholder([3], mg.int64)
    y = g.gather(table, indicesTensor=idx, axis=0, name="emb")
    exe = g.compile({table: mg.ShapedType([4, 2], mg.float32),
                     idx: mg.ShapedType([3], mg.int64)}, [y], device=device)
    t = np.ones((4, 2), np.float32)
    exe.run([t, np.array([0, 3, -4], np.int64)])  # valid
    with pytest.raises(mg.GraphError, match=r"gather 'emb'.*indicesTensor.*4 at position \[1\]"):
        exe.run([t, np.array([0, 4, 0], np.int64)])
    # a constant index is refused when the op is built
    with pytest.raises(mg.ShapeError, match="indicesTensor"):
        g.gather(table, indicesTensor=g.constant(np.array([5], np.int32)), axis=0)


def test_host_reading_steps_are_marked_and_constant_indices_are_not():
    g = mg.Graph()
    x = g.placeholder([4, 2], mg.float32)
    fed = g.placeholder([3], mg.int32)
    a = g.gather(x, indicesTensor=fed, axis=0)
    b = g.gather(x, indicesTensor=g.constant(np.array([0, 1], np.int32)), axis=0)
    c = g.nonZeroIndices(x)
    d = g.gatherAlongAxis(0, updates=x, indices=g.constant(np.zeros((1, 2), np.int32)))
    host = {}
    for t in (a, b, c, d):
        exe = g.compile({x: mg.ShapedType([4, 2], mg.float32),
                         fed: mg.ShapedType([3], mg.int32)}, [t])
        host[t.operation.kind + str(t.operation.id)] = [s.host for s in exe._steps]
    assert list(host.values()) == [[True], [False], [True], [False]]


@pytest.mark.parametrize("device", DEVICES)
def test_nonzero_indices_shape_is_decided_per_run(device):
    g = mg.Graph()
    x = g.placeholder([2, 3], mg.float32)
    nz = g.nonZeroIndices(x)
    assert nz.shape == [-1, 2] and nz.dataType == mg.int32
    rows = g.gatherND(x, indicesTensor=nz)  # an op after the value-dependent shape
    exe = g.compile({x: mg.ShapedType([2, 3], mg.float32)}, [nz, rows], device=device)
    for v in (np.array([[0, 1, 0], [2, 0, 3]], np.float32), np.zeros((2, 3), np.float32),
              np.array([[np.nan, 1, 1], [1, 1, 1]], np.float32)):
        got_nz, got_rows = (r.numpy() for r in exe.run([v]))
        want = np.argwhere(v != 0)
        np.testing.assert_array_equal(got_nz, want)
        np.testing.assert_array_equal(got_rows, v[v != 0])


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_set_keeps_the_last_duplicate_and_modes_combine(device):
    g = mg.Graph()
    upd = g.placeholder([4], mg.float32)
    idx = g.constant(np.array([2, 0, 2, 2], np.int32))
    data = g.constant(np.array([1.0, 2.0, 3.0], np.float32))
    outs = [g.scatterWithData(data, updates=upd, indices=idx, axis=0, mode=m)
            for m in mg.ScatterMode]
    u = np.array([5.0, 7.0, -1.0, 2.0], np.float32)
    got = _run(g, {upd: u}, outs, device)
    want = {"add": [8, 2, 9], "sub": [-6, 2, -3], "mul": [7, 2, -30], "div": [1 / 7, 2, -0.3],
            "min": [1, 2, -1], "max": [7, 2, 5], "set": [7, 2, 2]}
    for m, r in zip(mg.ScatterMode, got):
        np.testing.assert_allclose(r, want[m.name], rtol=1e-6, err_msg=m.name)


@pytest.mark.parametrize("device", DEVICES)
def test_stable_descending_sort_and_topk_ties(device):
    g = mg.Graph()
    x = g.placeholder([6], mg.float32)
    s = g.argSort(x, axis=0, descending=True)
    v, i = g.topK(x, k=3)
    bv, bi = g.bottomK(x, axis=0, k=2)
    a = np.array([1, 3, np.nan, 3, 1, 2], np.float32)
    got = _run(g, {x: a}, [s, v, i, bv, bi], device)
    np.testing.assert_array_equal(got[0], [2, 1, 3, 5, 0, 4])
    np.testing.assert_array_equal(got[2], [2, 1, 3])
    np.testing.assert_array_equal(got[4], [0, 4])
    np.testing.assert_array_equal(got[3], [1, 1])


@pytest.mark.gpu
def test_cuda_graph_holds_constant_index_scatters_and_refuses_fed_ones():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    g = mg.Graph()
    x = g.placeholder([6, 4], mg.float32)
    fed = g.placeholder([5], mg.int32)
    const = g.constant(np.array([5, -1, 0, 2, 2], np.int32))
    y = g.gather(x, indicesTensor=const, axis=0)
    loss = g.reductionSum(g.multiplication(y, y), axes=[0, 1])
    dx = g.gradientForPrimaryTensor(loss, [x])[x]
    s = g.scatterWithData(x, updates=y, indices=const, axis=0, mode=mg.ScatterMode.set)
    exe = g.compile({x: mg.ShapedType([6, 4], mg.float32)}, [y, dx, s], device="cuda",
                    cuda_graph=True)  # no step reads back to the host: captured
    a = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    want = _run(g, {x: a}, [y, dx, s], "cpu")
    for _ in range(2):
        got = [r.numpy() for r in exe.run([torch.from_numpy(a).cuda()])]
        for gg, w in zip(got, want):
            np.testing.assert_allclose(gg, w, rtol=1e-6, atol=1e-6)
    z = g.gather(x, indicesTensor=fed, axis=0)
    with pytest.raises(mg.UnsupportedError, match="cuda_graph"):
        g.compile({x: mg.ShapedType([6, 4], mg.float32), fed: mg.ShapedType([5], mg.int32)},
                  [z], device="cuda", cuda_graph=True)


@pytest.mark.parametrize("device", DEVICES)
def test_fed_k_decides_the_topk_shape_per_run(device):
    g = mg.Graph()
    x = g.placeholder([2, 5], mg.float32)
    k = g.placeholder([], mg.int32)
    v, i = g.topK(x, k=k)
    assert v.shape == [2, -1] and i.dataType == mg.int32
    exe = g.compile({x: mg.ShapedType([2, 5], mg.float32), k: mg.ShapedType([], mg.int32)},
                    [v, i], device=device)
    a = np.array([[0, 4, 2, 4, 1], [3, 3, 3, 0, 9]], np.float32)
    for kk, want in ((1, [[1], [4]]), (3, [[1, 3, 2], [4, 0, 1]]), (0, [[], []])):
        got_v, got_i = (r.numpy() for r in exe.run([a, np.array(kk, np.int32)]))
        np.testing.assert_array_equal(got_i, np.array(want, np.int32).reshape(2, kk))
        np.testing.assert_array_equal(got_v, np.take_along_axis(a, got_i, 1))
    with pytest.raises(mg.ShapeError, match="kTensor.*k <= 5"):
        exe.run([a, np.array(6, np.int32)])
