"""The autotuning cache (backends/torch/autotune.py) and the LSTM / convolution routing
through it, on the CPU: a fake, deterministic timer stands in for CUDA events (no timed
tests), MPSGRAPH_AUTOTUNE=1 turns tuning on off CUDA, and every cache file lives in tmp_path."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers import interpreter_only  # noqa: E402
from mpsgraph.backends.torch import autotune  # noqa: E402


@pytest.fixture
def tuner(tmp_path, monkeypatch):
    """autotune on, a cache file in tmp_path, a fake timer: each candidate's 'time' is read
    from COSTS by name (and its calls are counted)."""
    path = tmp_path / "cache" / "autotune.json"
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "1")
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE_CACHE", str(path))
    calls: list[str] = []

    def fake_timer(fn, device):
        name = fn()
        calls.append(name)
        return COSTS[name]

    autotune.clear()
    autotune.set_timer(fake_timer)
    yield path, calls
    autotune.set_timer(None)
    autotune.clear()


COSTS = {"a": 3.0, "b": 1.0, "c": 2.0, "bad": float("nan")}


def cands(*names):
    return {n: (lambda n=n: n) for n in names}


def test_picks_fastest_and_writes_cache(tuner):
    path, calls = tuner
    k = autotune.key_string("op", [2, 3], torch.float32, {"x": 1}, "ieee")
    assert autotune.choose(k, cands("a", "b", "c"), "a", "cpu") == "b"
    assert sorted(calls) == ["a", "b", "c"]
    data = json.loads(path.read_text())
    sec = data["sections"][autotune.identity()]
    assert sec[k]["choice"] == "b" and set(sec[k]["times_ms"]) == {"a", "b", "c"}
    ev = autotune.events()
    assert len(ev) == 1 and ev[0]["choice"] == "b" and not ev[0]["cached"]
    assert ev[0]["tune_ms"] >= 0 and autotune.tuning_ms() == ev[0]["tune_ms"]
    # second call: from memory, no timing
    calls.clear()
    assert autotune.choose(k, cands("a", "b", "c"), "a", "cpu") == "b"
    assert calls == []


def test_reads_cache_in_a_new_process_state(tuner):
    path, calls = tuner
    k = autotune.key_string("op", [5], torch.bfloat16)
    autotune.choose(k, cands("a", "c"), "a", "cpu")
    autotune.clear()  # forget memory: as a new process
    calls.clear()
    assert autotune.choose(k, cands("a", "c"), "a", "cpu") == "c"
    assert calls == []
    ev = autotune.events()
    assert ev and ev[0]["cached"] and ev[0]["tune_ms"] == 0.0
    assert autotune.lookup(k) == "c"


def test_cached_choice_not_a_candidate_is_retuned(tuner):
    _, calls = tuner
    k = autotune.key_string("op", [7])
    assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "b"
    calls.clear()
    assert autotune.choose(k, cands("a", "c"), "a", "cpu") == "c"
    assert sorted(calls) == ["a", "c"]


def test_corrupt_file_ignored_with_warning(tuner):
    path, calls = tuner
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    k = autotune.key_string("op", [1])
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "b"
    # rewritten, valid now
    assert json.loads(path.read_text())["sections"][autotune.identity()][k]["choice"] == "b"


@pytest.mark.parametrize("text", ['[1, 2]', '{"version": 99, "sections": {}}',
                                  '{"version": 1, "sections": {"x": {"k": {"no": 1}}}}'])
def test_wrong_structure_ignored(tuner, text):
    path, _ = tuner
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert autotune.choose(autotune.key_string("op", [2]), cands("a", "c"), "a",
                               "cpu") == "c"


def test_key_stability():
    k1 = autotune.key_string("LSTM", [1, 2], torch.float32, {"b": 1, "a": (2, 3)}, "tf32")
    k2 = autotune.key_string("LSTM", (1, 2), torch.float32, {"a": [2, 3], "b": 1}, "tf32")
    assert k1 == k2
    assert k1 == 'LSTM:[[1,2],"float32",{"a":[2,3],"b":1},"tf32"]'
    assert k1 != autotune.key_string("LSTM", [1, 2], torch.bfloat16, {"a": [2, 3], "b": 1},
                                     "tf32")
    assert k1 != autotune.key_string("LSTM", [1, 2], torch.float32, {"a": [2, 3], "b": 1},
                                     "ieee")


def test_disabled_flag_uses_fallback(tuner, monkeypatch):
    path, calls = tuner
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "0")
    assert not autotune.enabled("cuda")
    assert autotune.choose(autotune.key_string("op", [3]), cands("a", "b"), "a", "cpu") == "a"
    assert calls == [] and not path.exists()


def test_default_on_for_cuda_only(monkeypatch):
    monkeypatch.delenv("MPSGRAPH_AUTOTUNE", raising=False)
    assert autotune.enabled(torch.device("cuda", 0))
    assert not autotune.enabled("cpu")
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "yes")
    with pytest.raises(ValueError, match="MPSGRAPH_AUTOTUNE"):
        autotune.enabled("cpu")


def test_capture_falls_back_without_timing(tuner, monkeypatch):
    path, calls = tuner
    monkeypatch.setattr(autotune, "capturing", lambda: True)
    k = autotune.key_string("op", [4])
    assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "a"
    assert calls == [] and autotune.lookup(k) is None and not path.exists()
    # a key tuned before the capture keeps its choice inside it
    monkeypatch.setattr(autotune, "capturing", lambda: False)
    assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "b"
    monkeypatch.setattr(autotune, "capturing", lambda: True)
    calls.clear()
    assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "b" and calls == []


def test_failing_candidates(tuner):
    _, calls = tuner

    def boom():
        raise RuntimeError("no")

    k = autotune.key_string("op", [9])
    c = {"a": lambda: "a", "boom": boom, "bad": lambda: "bad"}
    assert autotune.choose(k, c, "boom", "cpu") == "a"
    k2 = autotune.key_string("op", [10])
    assert autotune.choose(k2, {"boom": boom, "x": boom}, "x", "cpu") == "x"


def test_unwritable_cache_keeps_memory(tuner, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE_CACHE", str(blocker / "sub" / "a.json"))
    autotune.clear()
    k = autotune.key_string("op", [11])
    with pytest.warns(RuntimeWarning, match="cannot write"):
        assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "b"
    assert autotune.choose(k, cands("a", "b"), "a", "cpu") == "b"


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.delenv("MPSGRAPH_AUTOTUNE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert autotune.cache_path() == tmp_path / "mpsgraph" / "autotune.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert autotune.cache_path().parts[-3:] == (".cache", "mpsgraph", "autotune.json")


# ----------------------------------------------------------------------------------------------
# routing: an LSTM training step and convolutions through the tuner give the hand rules'
# results (every candidate computes the same op), checked against float64 references


def _lstm_ref(x, R, W, b, h0, c0):
    """float64 torch LSTM (i, f, z, o; sigmoid / tanh), a plain loop: the independent
    reference, differentiated by autograd."""
    T = x.shape[0]
    H = R.shape[-1]
    h, c, hs = h0, c0, []
    for t in range(T):
        a = x[t] @ W.t() + b + h @ R.t()
        i, f, z, o = a.split(H, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(z)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs.append(h)
    return torch.stack(hs)


@pytest.mark.parametrize("T,N,I,H", [(3, 1, 4, 4), (4, 2, 3, 8)])
def test_lstm_training_step_through_tuner(tuner, T, N, I, H):
    import mpsgraph as mg

    autotune.set_timer(lambda fn, dev: (fn(), 1.0)[1])  # every candidate runs, ties: first
    g = mg.Graph()
    shapes = dict(source=[T, N, I], recurrentWeight=[4 * H, H], inputWeight=[4 * H, I],
                  bias=[4 * H], initState=[N, H], initCell=[N, H], dstate=[T, N, H])
    ph = {k: g.placeholder(v, dataType=mg.float32, name=k) for k, v in shapes.items()}
    d = mg.LSTMDescriptor(training=True)
    opt = {k: ph[k] for k in ("inputWeight", "bias", "initState", "initCell")}
    st, ce, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
    grads = g.LSTMGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, ce,
                            descriptor=d, **opt)
    feeds = {ph[k]: mg.ShapedType(v, mg.float32) for k, v in shapes.items()}
    exe = g.compile(feeds, [st, *grads], device="torch-cpu")
    rng = np.random.default_rng(1)
    vals = {k: rng.standard_normal(v) * 0.4 for k, v in shapes.items()}
    out = exe.run([torch.tensor(vals[t.operation.name], dtype=torch.float32)
                   for t in exe.feedTensors])
    # the reference
    lv = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k != "dstate")
          for k, v in vals.items()}
    y = _lstm_ref(lv["source"], lv["recurrentWeight"], lv["inputWeight"], lv["bias"],
                  lv["initState"], lv["initCell"])
    y.backward(lv["dstate"])
    got = [np.asarray(o.array if hasattr(o, "array") else o, dtype=np.float64) for o in out]
    np.testing.assert_allclose(got[0], y.detach().numpy(), rtol=1e-4, atol=1e-5)
    names = ["source", "recurrentWeight", "inputWeight", "bias", "initState", "initCell"]
    for gv, n in zip(got[1:], names):
        np.testing.assert_allclose(gv.reshape(lv[n].shape), lv[n].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=n)


def test_plan_hook_marks_internal_lstm_only():
    import mpsgraph as mg

    T, N, H = 2, 1, 4
    g = mg.Graph()
    x = g.placeholder([T, N, H], dataType=mg.float32, name="x")
    R = g.placeholder([4 * H, H], dataType=mg.float32, name="R")
    W = g.placeholder([4 * H, H], dataType=mg.float32, name="W")
    ds = g.placeholder([T, N, H], dataType=mg.float32, name="ds")
    d = mg.LSTMDescriptor(training=True)
    st, ce, z = g.LSTM(x, R, descriptor=d, inputWeight=W)
    grads = g.LSTMGradients(x, R, ds, z, ce, descriptor=d, inputWeight=W)
    feeds = {t: mg.ShapedType(list(t.shape), mg.float32) for t in (x, R, W, ds)}
    exe = g.compile(feeds, [st, *grads], device="torch-cpu")
    lstm = [s for s in exe._steps if s.kind == "LSTM"][0]
    assert getattr(lstm.kernel, "__name__", "") == "internal_lstm"
    # the cell is a target: not internal
    exe2 = g.compile(feeds, [st, ce, *grads], device="torch-cpu")
    lstm2 = [s for s in exe2._steps if s.kind == "LSTM"][0]
    assert getattr(lstm2.kernel, "__name__", "") != "internal_lstm"


@pytest.mark.parametrize("groups,layout", [(1, "NCHW"), (4, "NHWC"), (2, "NCHW")])
def test_conv_through_tuner(tuner, groups, layout):
    import torch.nn.functional as F

    import mpsgraph as mg

    autotune.set_timer(lambda fn, dev: (fn(), 1.0)[1])
    n, c, h, w, o, k, s = 2, 4, 5, 6, 4, 3, 2
    TL = mg.TensorNamedDataLayout
    nhwc = layout == "NHWC"
    desc = mg.Convolution2DOpDescriptor(
        strideInX=s, strideInY=s, dilationRateInX=1, dilationRateInY=1, groups=groups,
        paddingLeft=1, paddingRight=1, paddingTop=1, paddingBottom=1,
        paddingStyle=mg.PaddingStyle.explicit, dataLayout=TL.NHWC if nhwc else TL.NCHW,
        weightsLayout=TL.HWIO if nhwc else TL.OIHW)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((o, c // groups, k, k))
    ref = F.conv2d(torch.tensor(x), torch.tensor(wt), stride=s, padding=1, groups=groups)
    xl = x.transpose(0, 2, 3, 1) if nhwc else x
    wl = wt.transpose(2, 3, 1, 0) if nhwc else wt
    g = mg.Graph()
    a = g.placeholder(list(xl.shape), dataType=mg.float32, name="x")
    b = g.placeholder(list(wl.shape), dataType=mg.float32, name="w")
    y = g.convolution2D(a, weights=b, descriptor=desc)
    exe = g.compile({a: mg.ShapedType(list(xl.shape), mg.float32),
                     b: mg.ShapedType(list(wl.shape), mg.float32)}, [y], device="torch-cpu")
    out = exe.run([torch.tensor(xl, dtype=torch.float32), torch.tensor(wl, dtype=torch.float32)])
    got = np.asarray(out[0].array if hasattr(out[0], "array") else out[0], dtype=np.float64)
    want = ref.numpy().transpose(0, 2, 3, 1) if nhwc else ref.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@interpreter_only
def test_lstm_candidates_under_interpreter(tuner, monkeypatch):
    """Under TRITON_INTERPRET=1 our Triton paths are candidates: the tuner times each of them
    (a training step: forward + backward), every one agrees with the float64 reference, and a
    simulated capture takes the hand rules without timing."""
    pytest.importorskip("triton")
    from helpers import triton_kernels

    triton_kernels("lstm_seq_fwd", "lstm_seq_bwd", "lstm_cell")
    from mpsgraph.backends.torch import rnn

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # CPU tensors, on any machine
    for k in ("MPSGRAPH_LSTM_KERNEL", "MPSGRAPH_LSTM_TILING", "MPSGRAPH_LSTM_TILING_BWD",
              "MPSGRAPH_NO_TRITON"):
        monkeypatch.delenv(k, raising=False)
    seen: list[str] = []

    def timer(fn, dev):
        fn()
        seen.append("timed")
        return 1.0

    autotune.set_timer(timer)
    T, N, I, H = 3, 2, 3, 4
    gen = torch.Generator().manual_seed(3)
    x, R, W, b = (torch.randn(*s, generator=gen) * 0.5 for s in
                  ((T, N, I), (1, 4 * H, H), (4 * H, I), (4 * H,)))
    h0, c0, dst = (torch.randn(*s, generator=gen) * 0.5 for s in ((N, H), (N, H), (T, N, H)))
    kw = dict(reverse=False, bidirectional=False, forget_gate_last=False,
              activations=(3, 3, 2, 3, 2))
    lv = {k: v.double().requires_grad_() for k, v in
          dict(x=x, R=R, W=W, b=b, h0=h0, c0=c0).items()}
    y = _lstm_ref(lv["x"], lv["R"][0], lv["W"], lv["b"], lv["h0"], lv["c0"])
    y.backward(dst.double())

    def step():
        st, ce, zs = rnn.lstm_forward(x, R, W, b, h0, c0, None, None, **kw)
        g = rnn.lstm_backward(x, R, dst, zs, ce, W, b, h0, c0, None, None, **kw, need_b=True,
                              need_peephole=False, need_h0=True, need_c0=True)
        return st, g

    def check(st, g):
        np.testing.assert_allclose(st.numpy(), y.detach().numpy(), rtol=1e-4, atol=1e-5)
        for name, ref in (("source", lv["x"]), ("inputWeight", lv["W"]), ("bias", lv["b"]),
                          ("recurrentWeight", lv["R"]), ("initState", lv["h0"]),
                          ("initCell", lv["c0"])):
            np.testing.assert_allclose(g[name].reshape(ref.shape).numpy(),
                                       ref.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)

    check(*step())
    ev = autotune.events()
    assert len(ev) == 1 and ev[0]["key"].startswith("LSTM:") and not ev[0]["cached"]
    assert {"step", "persistent"} <= set(ev[0]["times_ms"]) and len(seen) >= 2
    assert ev[0]["choice"] in ev[0]["times_ms"]
    for path in ev[0]["times_ms"]:
        tok = rnn._FORCE.set(path)
        try:
            check(*step())
        finally:
            rnn._FORCE.reset(tok)
    # simulated capture of a new key: the hand rules, nothing timed
    monkeypatch.setattr(autotune, "capturing", lambda: True)
    seen.clear()
    x2 = torch.randn(T + 1, N, I, generator=gen)
    rnn.lstm_forward(x2, R, W, b, h0, c0, None, None, **kw)
    assert seen == [] and len(autotune.events()) == 1


@pytest.mark.parametrize("forward_bias", [True, False])
def test_backward_takes_the_forward_choice_whatever_bias_it_is_given(tuner, monkeypatch,
                                                                      forward_bias):
    """LSTMGradients' path is the tuned forward's, whether it is given the forward's bias or
    not (the key holds the bias's presence: a backward looking up the other presence took the
    hand rules' path, measured 2x slower on the H200)."""
    from mpsgraph.backends.torch import lstm_route

    for k in ("MPSGRAPH_LSTM_KERNEL", "MPSGRAPH_LSTM_TILING", "MPSGRAPH_LSTM_TILING_BWD"):
        monkeypatch.delenv(k, raising=False)
    T, N, I, H = 5, 2, 3, 4
    x, R, W, b, h0, c0 = (torch.zeros(s) for s in ((T, N, I), (1, 4 * H, H), (4 * H, I),
                                                   (4 * H,), (N, H), (N, H)))
    fb = b if forward_bias else None
    opts = dict(reverse=False, bidirectional=False, forget_gate_last=False,
                activations=(3, 3, 2, 3, 2))
    got = autotune.choose(
        lambda: lstm_route.key(x, R, W, fb, h0, c0, None, None, mode="train", **opts),
        cands("a", "b"), "a", "cpu",
        fast_key=lstm_route._fast_key(x, R, W, fb, h0, c0, None, None, "train", opts))
    assert got == "b"
    for given in (b, None):
        assert lstm_route.backward_choice(x, R, W, given, h0, c0, None, None, **opts) == "b"
    # another key (another T bucket): the hand rules
    x2 = torch.zeros((4 * T, N, I))
    assert lstm_route.backward_choice(x2, R, W, b, h0, c0, None, None, **opts) is None


@pytest.mark.parametrize("bidir", [False, True])
def test_cudnn_weight_mapping_on_cpu(bidir):
    """lstm_route's weight list and state layout, fed to torch's own LSTM (the CPU kernel has
    cuDNN's conventions), give the float64 reference."""
    from mpsgraph.backends.torch import lstm_route

    T, N, I, H = 3, 2, 3, 4
    D = 2 if bidir else 1
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(T, N, I, generator=gen, dtype=torch.float64)
    R = torch.randn(D, 4 * H, H, generator=gen, dtype=torch.float64) * 0.5
    W = torch.randn(D * 4 * H, I, generator=gen, dtype=torch.float64) * 0.5
    b = torch.randn(D * 4 * H, generator=gen, dtype=torch.float64) * 0.5
    h0 = torch.randn(N, D * H, generator=gen, dtype=torch.float64)
    c0 = torch.randn(N, D * H, generator=gen, dtype=torch.float64)
    ws = lstm_route._weights(R, W, b, D, H)
    hx, cx = lstm_route._state0(h0, N, D, H, x), lstm_route._state0(c0, N, D, H, x)
    out, _, _ = torch.lstm(x, (hx, cx), ws, True, 1, 0.0, False, bidir, False)
    G = 4 * H
    ref = [_lstm_ref(x, R[0], W[:G], b[:G], h0[:, :H], c0[:, :H])]
    if bidir:
        ref.append(_lstm_ref(x.flip(0), R[1], W[G:], b[G:], h0[:, H:], c0[:, H:]).flip(0))
    np.testing.assert_allclose(out.numpy(), torch.cat(ref, 2).numpy(), rtol=1e-10, atol=1e-12)


def test_cudnn_weights_buffer(monkeypatch):
    """lstm_route.cudnn_weights: the parameters written into one buffer in cuDNN's order (a
    layout set here as the probe of aten._cudnn_rnn_flatten_weight would find it), handed back
    as views of it; tuple entries joined; with no layout known, the parameters themselves."""
    from mpsgraph.backends.torch import lstm_route

    gen = torch.Generator().manual_seed(3)
    A, B = torch.randn(6, 3, generator=gen), torch.randn(2, 6, generator=gen).t()
    c, z = torch.randn(6, generator=gen), torch.zeros(6)
    ws = [A, B, c, (z[:4], c[4:])]  # (B a strided view: copied by the cat)
    key = (3, 3, 2, False, torch.float32, A.device)
    # order in the buffer: b_ih, w_ih, b_hh, w_hh
    monkeypatch.setitem(lstm_route._LAYOUTS, key, ([2, 0, 3, 1], [6, 30, 0, 24], 42))
    buf, views = lstm_route.cudnn_weights(ws, 3, 3, 2, False)
    assert buf.shape == (42,)
    want = [A, B, c, torch.cat([z[:4], c[4:]])]
    for v, w in zip(views, want):
        assert v.shape == w.shape and torch.equal(v, w)
        assert buf.data_ptr() <= v.data_ptr() < buf.data_ptr() + 42 * 4
    assert torch.equal(buf, torch.cat([c, A.reshape(-1), want[3], B.reshape(-1)]))
    monkeypatch.setitem(lstm_route._LAYOUTS, key, None)  # a layout with gaps: cuDNN copies
    buf, views = lstm_route.cudnn_weights(ws, 3, 3, 2, False)
    assert buf is None and views[0] is A and torch.equal(views[3], want[3])


def test_cudnn_maps_only_cudnn_options():
    from mpsgraph.backends.torch import lstm_route

    x = torch.zeros(2, 1, 4)
    R = torch.zeros(1, 16, 4)
    W = torch.zeros(16, 4)
    kw = dict(reverse=False, bidirectional=False, forget_gate_last=False,
              activations=(3, 3, 2, 3, 2))
    # a CPU tensor never maps (cuDNN is CUDA only)
    assert not lstm_route.cudnn_maps(x, R, W, None, None, None, None, None, **kw)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (cuDNN)")
@pytest.mark.parametrize("bidir", [False, True])
@pytest.mark.parametrize("dtname", ["float32", "bfloat16"])
@pytest.mark.parametrize("mode", ["cudnn", "tuned"])
def test_cudnn_path_training_step_gpu(bidir, dtname, mode, monkeypatch, tmp_path):
    """A compiled training step on the cuDNN path (forced: the forward's placeholders carry
    the reserve into LSTMGradients) and on the path the autotuner picks (real timing; cuDNN
    among the candidates), against the float64 reference."""
    import mpsgraph as mg
    from mpsgraph.backends.torch import rnn

    autotune.set_timer(None)
    autotune.clear()
    if mode == "tuned":
        monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "1")
        monkeypatch.setenv("MPSGRAPH_AUTOTUNE_CACHE", str(tmp_path / "at.json"))

    T, N, I, H = 5, 3, 6, 8
    D = 2 if bidir else 1
    mdt = mg.float32 if dtname == "float32" else mg.bFloat16
    tdt = torch.float32 if dtname == "float32" else torch.bfloat16
    g = mg.Graph()
    shapes = dict(source=[T, N, I], recurrentWeight=[2, 4 * H, H] if bidir else [4 * H, H],
                  inputWeight=[D * 4 * H, I], bias=[D * 4 * H], initState=[N, D * H],
                  initCell=[N, D * H], dstate=[T, N, D * H])
    ph = {k: g.placeholder(v, dataType=mdt, name=k) for k, v in shapes.items()}
    d = mg.LSTMDescriptor(training=True, bidirectional=bidir)
    opt = {k: ph[k] for k in ("inputWeight", "bias", "initState", "initCell")}
    st, ce, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
    grads = g.LSTMGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, ce,
                            descriptor=d, **opt)
    feeds = {ph[k]: mg.ShapedType(v, mdt) for k, v in shapes.items()}
    exe = g.compile(feeds, [st, *grads], device="cuda", cuda_graph=False)
    gen = torch.Generator().manual_seed(4)
    vals = {k: torch.randn(v, generator=gen) * 0.4 for k, v in shapes.items()}
    vals = {k: v.to(tdt).double() for k, v in vals.items()}  # representable in tdt
    tok = rnn._FORCE.set("cudnn" if mode == "cudnn" else None)
    try:
        out = exe.run([vals[t.operation.name].to("cuda", tdt) for t in exe.feedTensors])
    finally:
        rnn._FORCE.reset(tok)
    if mode == "tuned":
        ev = [e for e in autotune.events() if e["key"].startswith("LSTM:")]
        assert len(ev) == 1 and "cudnn" in ev[0]["times_ms"], ev
        autotune.clear()
    lv = {k: v.clone().requires_grad_(k != "dstate") for k, v in vals.items()}
    Rr = lv["recurrentWeight"].reshape(D, 4 * H, H)
    G = 4 * H
    ys = [_lstm_ref(lv["source"], Rr[0], lv["inputWeight"][:G], lv["bias"][:G],
                    lv["initState"][:, :H], lv["initCell"][:, :H])]
    if bidir:
        ys.append(_lstm_ref(lv["source"].flip(0), Rr[1], lv["inputWeight"][G:],
                            lv["bias"][G:], lv["initState"][:, H:],
                            lv["initCell"][:, H:]).flip(0))
    y = torch.cat(ys, 2)
    y.backward(lv["dstate"])
    tol = dict(rtol=1e-3, atol=1e-4) if dtname == "float32" else dict(rtol=5e-2, atol=5e-2)
    got = [o.array if hasattr(o, "array") else o for o in out]
    np.testing.assert_allclose(got[0].float().cpu().numpy(), y.detach().numpy(), **tol)
    for gv, n in zip(got[1:], ["source", "recurrentWeight", "inputWeight", "bias",
                               "initState", "initCell"]):
        np.testing.assert_allclose(gv.float().cpu().numpy().reshape(lv[n].shape),
                                   lv[n].grad.numpy(), err_msg=n, **tol)


@interpreter_only
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_depthwise_paths_under_interpreter(tuner, monkeypatch, layout):
    """Under TRITON_INTERPRET=1 a depthwise convolution has two candidates (the Triton kernels
    and cuDNN's aten path; NHWC's forward and weights gradient too, which the hand rule keeps
    on cuDNN): both are timed, and each path, forced, agrees with float64 torch."""
    pytest.importorskip("triton")
    import torch.nn.functional as F

    from helpers import triton_kernels

    triton_kernels("depthwise_conv", "depthwise_conv_wgrad")
    from mpsgraph.backends.torch import convolution as conv
    from mpsgraph.ops.convolution import Conv2DAttrs  # noqa: F401

    if not torch.cuda.is_available():
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.delenv("MPSGRAPH_NO_TRITON", raising=False)
    import mpsgraph as mg

    n, c, h, w, k, s = 2, 3, 5, 4, 3, 2
    TL = mg.TensorNamedDataLayout
    nhwc = layout == "NHWC"
    rng = np.random.default_rng(6)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((c, 1, k, k))
    xt, wtt = torch.tensor(x, requires_grad=True), torch.tensor(wt, requires_grad=True)
    y = F.conv2d(xt, wtt, stride=s, padding=1, groups=c)
    dy = torch.tensor(rng.standard_normal(tuple(y.shape)))
    y.backward(dy)
    to_l = (lambda a: a.transpose(0, 2, 3, 1)) if nhwc else (lambda a: a)
    w_l = wt.transpose(2, 3, 1, 0) if nhwc else wt
    desc = mg.Convolution2DOpDescriptor(
        strideInX=s, strideInY=s, dilationRateInX=1, dilationRateInY=1, groups=c,
        paddingLeft=1, paddingRight=1, paddingTop=1, paddingBottom=1,
        paddingStyle=mg.PaddingStyle.explicit, dataLayout=TL.NHWC if nhwc else TL.NCHW,
        weightsLayout=TL.HWIO if nhwc else TL.OIHW)
    g = mg.Graph()
    xa = g.placeholder(list(to_l(x).shape), dataType=mg.float32, name="x")
    wa = g.placeholder(list(w_l.shape), dataType=mg.float32, name="w")
    da = g.placeholder(list(to_l(dy.numpy()).shape), dataType=mg.float32, name="dy")
    outs = [g.convolution2D(xa, weights=wa, descriptor=desc),
            g.convolution2DDataGradient(da, weights=wa, outputShape=list(to_l(x).shape),
                                        forwardConvolutionDescriptor=desc),
            g.convolution2DWeightsGradient(da, source=xa, outputShape=list(w_l.shape),
                                           forwardConvolutionDescriptor=desc)]
    feeds = {t: mg.ShapedType(list(t.shape), mg.float32) for t in (xa, wa, da)}
    vals = {"x": to_l(x), "w": w_l, "dy": to_l(dy.numpy())}
    want = [to_l(y.detach().numpy()), to_l(xt.grad.numpy()),
            wtt.grad.numpy().transpose(2, 3, 1, 0) if nhwc else wtt.grad.numpy()]
    for fastest in ("triton", "cudnn"):
        autotune.clear(memory_only=False)
        order: list[str] = []

        def timer(fn, dev, order=order, fastest=fastest):
            fn()
            order.append("x")
            return 1.0 if len(order) % 2 == (1 if fastest == "cudnn" else 0) else 2.0

        autotune.set_timer(timer)
        exe = g.compile(feeds, outs, device="torch-cpu")
        got = exe.run([torch.tensor(vals[t.operation.name], dtype=torch.float32)
                       for t in exe.feedTensors])
        ev = autotune.events()
        assert len(ev) == 3 and all(set(e["times_ms"]) == {"cudnn", "triton"} for e in ev)
        assert all(e["choice"] == fastest for e in ev), ev
        for gv, wv in zip(got, want):
            gv = np.asarray(gv.array if hasattr(gv, "array") else gv, dtype=np.float64)
            np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-5)
    del conv


def test_fast_key_skips_key_and_candidates(tuner, monkeypatch):
    _, calls = tuner
    built = []

    def make():
        built.append(1)
        return cands("a", "b")

    def key():
        built.append("k")
        return autotune.key_string("op", [12])

    assert autotune.choose(key, make, "a", "cpu", fast_key=("op", 12)) == "b"
    assert built == [1, "k"]
    assert autotune.choose(key, make, "a", "cpu", fast_key=("op", 12)) == "b"
    assert built == [1, "k"]  # decided: neither rebuilt
    assert autotune.lookup(key, fast_key=("op", 12)) == "b"
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "0")  # off means off, even for a decided key
    assert autotune.choose(key, make, "a", "cpu", fast_key=("op", 12)) == "a"
    # a capture's fallback is not remembered
    monkeypatch.setenv("MPSGRAPH_AUTOTUNE", "1")
    monkeypatch.setattr(autotune, "capturing", lambda: True)
    assert autotune.choose(lambda: "op:new", make, "a", "cpu", fast_key=("new",)) == "a"
    monkeypatch.setattr(autotune, "capturing", lambda: False)
    assert autotune.choose(lambda: "op:new", make, "a", "cpu", fast_key=("new",)) == "b"


@pytest.mark.parametrize("winner", ["cudnn", "ours"])
@pytest.mark.parametrize("gates", [3, 1])
def test_gru_route_through_tuner(tuner, monkeypatch, winner, gates):
    """A GRU / singleGateRNN training step whose options are cuDNN's: the tuner times both
    ways (a forward + backward each), keeps the faster, and the compiled step gives the
    torch float64 reference's state and gradients either way; the second run reads the
    choice back without timing."""
    import mpsgraph as mg
    from mpsgraph.backends.torch import gru_route

    monkeypatch.delenv("MPSGRAPH_GRU_KERNEL", raising=False)
    timed: list[str] = []
    ran = {"cudnn": 0}
    real = gru_route.cudnn_forward

    def spy(*a):
        ran["cudnn"] += 1
        return real(*a)

    monkeypatch.setattr(gru_route, "cudnn_forward", spy)

    def timer(fn, dev):
        before = ran["cudnn"]
        fn()
        name = "cudnn" if ran["cudnn"] > before else "ours"
        timed.append(name)
        return 1.0 if name == winner else 2.0

    autotune.set_timer(timer)
    T, N, I, H = 4, 3, 5, 6
    G = gates * H
    g = mg.Graph()
    shapes = dict(source=[T, N, I], recurrentWeight=[G, H], inputWeight=[G, I], bias=[G],
                  initState=[N, H], dstate=[T, N, H])
    if gates == 3:
        shapes["secondaryBias"] = [H]
    ph = {k: g.placeholder(v, dataType=mg.float32, name=k) for k, v in shapes.items()}
    opt = {k: ph[k] for k in shapes if k not in ("source", "recurrentWeight", "dstate")}
    if gates == 3:
        d = mg.GRUDescriptor(training=True, resetGateFirst=True, resetAfter=True)
        st, z = g.GRU(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
        grads = g.GRUGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z, st,
                               descriptor=d, **opt)
    else:
        d = mg.SingleGateRNNDescriptor(training=True, activation=mg.RNNActivation.tanh)
        st, z = g.singleGateRNN(ph["source"], ph["recurrentWeight"], descriptor=d, **opt)
        grads = g.singleGateRNNGradients(ph["source"], ph["recurrentWeight"], ph["dstate"], z,
                                         descriptor=d, **opt)
    exe = g.compile({ph[k]: mg.ShapedType(v, mg.float32) for k, v in shapes.items()},
                    [st, *grads], device="torch-cpu")
    gen = torch.Generator().manual_seed(2)
    vals = {k: torch.randn(v, generator=gen) * 0.4 for k, v in shapes.items()}
    for _ in range(2):
        out = exe.run([vals[t.operation.name] for t in exe.feedTensors])
    assert sorted(timed) == ["cudnn", "ours"]  # tuned once, at the first run
    ev = [e for e in autotune.events() if e["key"].startswith(("GRU:", "singleGateRNN:"))]
    assert len(ev) == 1 and ev[0]["choice"] == winner
    # the reference: torch.nn.GRU / RNN in float64 (b_hh = [0, 0, secondaryBias])
    lv = {k: v.double().requires_grad_(k != "dstate") for k, v in vals.items()}
    m = (torch.nn.GRU(I, H) if gates == 3 else torch.nn.RNN(I, H)).double()
    bhh = torch.cat([torch.zeros(2 * H, dtype=torch.float64), lv["secondaryBias"]]) \
        if gates == 3 else torch.zeros(H, dtype=torch.float64)
    y, _ = torch.func.functional_call(m, {"weight_ih_l0": lv["inputWeight"],
                                          "weight_hh_l0": lv["recurrentWeight"],
                                          "bias_ih_l0": lv["bias"], "bias_hh_l0": bhh},
                                      (lv["source"], lv["initState"][None]))
    y.backward(lv["dstate"])
    got = [o.array if hasattr(o, "array") else o for o in out]
    np.testing.assert_allclose(got[0].numpy(), y.detach().numpy(), rtol=1e-4, atol=1e-5)
    names = ["source", "recurrentWeight", "inputWeight", "bias", "initState"] + (
        ["secondaryBias"] if gates == 3 else [])
    for gv, n in zip(got[1:], names):
        np.testing.assert_allclose(gv.numpy().reshape(lv[n].shape), lv[n].grad.numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=n)


def test_gru_route_keys_tell_activations_apart(tuner, monkeypatch):
    """tanh and relu single-gate RNNs of one shape are two keys (tuned apart), not one."""
    import mpsgraph as mg

    monkeypatch.delenv("MPSGRAPH_GRU_KERNEL", raising=False)
    autotune.set_timer(lambda fn, dev: (fn(), 1.0)[1])
    T, N, I, H = 3, 2, 4, 5
    for act in (mg.RNNActivation.tanh, mg.RNNActivation.relu):
        g = mg.Graph()
        x = g.placeholder([T, N, I], name="x")
        R = g.placeholder([H, H], name="R")
        W = g.placeholder([H, I], name="W")
        y = g.singleGateRNN(x, R, inputWeight=W,
                            descriptor=mg.SingleGateRNNDescriptor(activation=act))[0]
        exe = g.compile({t: mg.ShapedType(list(t.shape), mg.float32) for t in (x, R, W)}, [y],
                        device="torch-cpu")
        exe.run([torch.randn(list(t.shape)) for t in exe.feedTensors])
    keys = [e["key"] for e in autotune.events() if e["key"].startswith("singleGateRNN:")]
    assert len(keys) == 2 and keys[0] != keys[1], keys


def test_close_candidates_are_timed_again_round_robin(tuner, monkeypatch):
    """Candidates within REFINE_RATIO of the fastest are timed REFINE_ROUNDS more times,
    interleaved, and keep their best timing; a clearly slower one is timed once. Here "b"
    measures slow at its first timing only (drift): the refinement finds it faster than "c"."""
    _, calls = tuner
    seq = {"a": iter([9.0]), "b": iter([1.2, 0.8, 0.9]), "c": iter([1.0, 1.0, 1.0])}

    def timer(fn, dev):
        name = fn()
        calls.append(name)
        return next(seq[name])

    autotune.set_timer(timer)
    k = autotune.key_string("op", [11])
    assert autotune.choose(k, cands("a", "b", "c"), "a", "cpu") == "b"
    assert calls == ["a", "b", "c", "b", "c", "b", "c"]
    ev = autotune.events()[-1]
    assert ev["times_ms"] == {"a": 9.0, "b": 0.8, "c": 1.0}
