"""Compile options of the torch backend: allow_tf32 and cuda_graph (replay of the whole plan)."""

from __future__ import annotations

import numpy as np
import pytest

import mpsgraph as mg

torch = pytest.importorskip("torch")


def _graph():
    g = mg.Graph()
    x = g.placeholder([2, 3, 6, 6], name="x")
    w = g.placeholder([4, 3, 3, 3], name="w")
    d = mg.Convolution2DOpDescriptor(paddingStyle=mg.PaddingStyle.TF_SAME)
    y = g.reLU(g.convolution2D(x, w, d))
    loss = g.reductionSum(g.square(y), axes=[0, 1, 2, 3])
    grads = g.gradientForPrimaryTensor(loss, [x, w])
    feeds = {x: mg.ShapedType([2, 3, 6, 6]), w: mg.ShapedType([4, 3, 3, 3])}
    return g, feeds, [y, grads[x], grads[w]]


def test_option_errors():
    g, feeds, targets = _graph()
    with pytest.raises(mg.GraphError, match="cuda_graph"):
        g.compile(feeds, targets, cuda_graph=True)  # the CPU (NumPy) device
    with pytest.raises(mg.GraphError, match="cuda_graph"):
        g.compile(feeds, targets, device="torch-cpu", cuda_graph=True)
    with pytest.raises(mg.GraphError, match="allow_tf32"):
        g.compile(feeds, targets, allow_tf32=True)  # NumPy has no TF32
    with pytest.raises(mg.GraphError, match="options"):
        g.compile(feeds, targets, fast=True)


def test_allow_tf32_restores_the_flags(rng):
    g, feeds, targets = _graph()
    exe = g.compile(feeds, targets, device="torch-cpu", allow_tf32=True)
    before = torch.backends.cudnn.allow_tf32
    xs = [rng.standard_normal(s.shape).astype(np.float32) for s in feeds.values()]
    ref = g.compile(feeds, targets).run(xs)
    for a, b in zip(exe.run(xs), ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    assert torch.backends.cudnn.allow_tf32 == before


@pytest.mark.gpu
def test_cuda_graph_replay_matches_eager(rng):
    g, feeds, targets = _graph()
    eager = g.compile(feeds, targets, device="cuda")
    replay = g.compile(feeds, targets, device="cuda", cuda_graph=True)
    for _ in range(3):  # new data every run: the replay must read the new inputs
        xs = [torch.from_numpy(rng.standard_normal(s.shape).astype(np.float32)).cuda()
              for s in feeds.values()]
        want = [t.numpy().copy() for t in eager.run(xs)]
        got = [t.numpy().copy() for t in replay.run(xs)]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_cuda_graph_is_automatic_and_results_are_copies(rng):
    """By default a CUDA executable without variables replays a CUDA graph, and its results
    are copies that the next run does not overwrite."""
    g, feeds, targets = _graph()
    exe = g.compile(feeds, targets, device="cuda")
    ref = g.compile(feeds, targets)  # NumPy
    runs = []
    for _ in range(3):
        xs = [rng.standard_normal(s.shape).astype(np.float32) for s in feeds.values()]
        runs.append((exe.run(xs), [t.numpy() for t in ref.run(xs)]))
    assert exe._replay is not None  # captured, not fallen back
    for got, want in runs:  # earlier results survive later runs
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_graphs_with_host_syncing_ops_still_run(rng):
    """shapeOf makes its tensor on the host: capture fails and the executable runs op by op,
    with the right numbers; later runs keep working."""
    g = mg.Graph()
    x = g.placeholder([2, 3], name="x")
    y = g.reshape(g.exponent(x), shapeTensor=g.shapeOf(g.transpose(x, permutation=[1, 0])))
    for _ in range(2):
        xv = rng.standard_normal((2, 3)).astype(np.float32)
        out = g.run({x: xv}, [y], device="cuda")[y].numpy()
        np.testing.assert_allclose(out, np.exp(xv).reshape(3, 2), rtol=1e-6)


@pytest.mark.gpu
def test_bound_feeds_replay_without_copies_and_read_current_contents(rng):
    """Feeding the same device tensors again binds a graph to them: later runs read what the
    caller wrote into them in place; other tensors still give the right results."""
    g, feeds, targets = _graph()
    exe = g.compile(feeds, targets, device="cuda")
    ref = g.compile(feeds, targets)  # NumPy
    mine = [torch.from_numpy(rng.standard_normal(s.shape).astype(np.float32)).cuda()
            for s in feeds.values()]

    def check(xs):
        got = [t.numpy().copy() for t in exe.run(xs)]
        want = [t.numpy() for t in ref.run([x.cpu().numpy() for x in xs])]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)

    for k in range(8):
        if k % 2:  # fresh tensors (copied into the private buffers, or bound after a repeat)
            xs = [torch.from_numpy(rng.standard_normal(s.shape).astype(np.float32)).cuda()
                  for s in feeds.values()]
            check(xs)
            check(xs)
        else:  # the same tensors, refilled in place
            for m in mine:
                m.copy_(torch.from_numpy(rng.standard_normal(tuple(m.shape))
                                         .astype(np.float32)))
            check(mine)
    replayer = exe._replay.replayer
    assert 1 <= len(replayer._bound) <= replayer.MAX_BOUND
    # the graph bound to `mine`, replayed directly, writes what run returns
    graph = exe.captured_graph(mine)
    before = [t.numpy().copy() for t in exe.run(mine)]
    graph.replay()
    torch.cuda.synchronize()
    outs = replayer._bound[tuple((m.data_ptr(), m.stride()) for m in mine)][2]
    for a, b in zip(outs, before):
        np.testing.assert_allclose(a.cpu().numpy(), b, rtol=1e-6, atol=1e-6)


def test_captured_graph_needs_a_cuda_graph():
    g, feeds, targets = _graph()
    exe = g.compile(feeds, targets, device="torch-cpu")
    with pytest.raises(mg.GraphError, match="captured_graph"):
        exe.captured_graph([np.zeros(s.shape, np.float32) for s in feeds.values()])


def _swap_graph():
    g = mg.Graph()
    init_a, init_b = np.arange(3, dtype=np.float32), np.full(3, 10, np.float32)
    a = g.variable(init_a, [3], mg.float32, name="a")
    b = g.variable(init_b, [3], mg.float32, name="b")
    ra, rb = g.read(a), g.read(b)
    ops = [g.assign(a, rb), g.assign(b, ra)]
    return g, (init_a, init_b), (ra, rb), ops


@pytest.mark.parametrize("device", ["torch-cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_in_place_assigns_keep_the_variable_semantics(device):
    """torch devices write assigns into the variables' storage: a swap still swaps, results
    handed out earlier keep their values, the initial arrays are never written."""
    g, inits, (ra, rb), ops = _swap_graph()
    exe = g.compile({}, [ra, rb], ops, device=device)
    first = exe.run([])
    second = exe.run([])
    third = exe.run([])
    np.testing.assert_array_equal(first[0].numpy(), [0, 1, 2])
    np.testing.assert_array_equal(first[1].numpy(), 10)
    np.testing.assert_array_equal(second[0].numpy(), 10)  # swapped once
    np.testing.assert_array_equal(second[1].numpy(), [0, 1, 2])
    np.testing.assert_array_equal(third[0].numpy(), [0, 1, 2])  # swapped back
    np.testing.assert_array_equal(inits[0], [0, 1, 2])
    np.testing.assert_array_equal(inits[1], 10)


@pytest.mark.gpu
def test_training_loop_with_variables_replays_a_cuda_graph(rng):
    """A training step with variables and SGD assigns replays one CUDA graph and follows the
    NumPy backend step for step."""
    def build():
        g = mg.Graph()
        x = g.placeholder([4, 5], name="x")
        w = g.variable(np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3), [5, 3],
                       mg.float32, name="w")
        loss = g.reductionSum(g.square(g.tanh(g.matrixMultiplication(x, w))), axes=[0, 1])
        gw = g.gradientForPrimaryTensor(loss, [w])[w]
        step = g.assign(w, g.subtraction(w, g.multiplication(
            g.constant(0.1, [], mg.float32), gw)))
        return g, x, w, loss, step

    outs = {}
    xs = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(4)]
    for dev in ("cpu", "cuda"):
        g, x, w, loss, step = build()
        exe = g.compile({x: mg.ShapedType([4, 5])}, [loss, g.read(w)], [step], device=dev)
        outs[dev] = [[t.numpy().copy() for t in exe.run([xv])] for xv in xs]
        if dev == "cuda":
            assert exe._replay is not None and exe._replay.replayer._private is not None
    for a, b in zip(outs["cuda"], outs["cpu"]):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)
