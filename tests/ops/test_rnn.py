"""LSTM and LSTMGradients through the graph API, against the float64 per-step oracle
(tests/oracles/lstm_f64.py), torch.nn.LSTM where installed, and finite differences through
gradientForPrimaryTensor. The kernel-level sweep of every option combination is in
tests/backends/test_numpy_rnn_kernel.py; here the graph layer's own work is tested: argument
forms (state-shaped tensors, peephole forms, mask forms), output arity, gradient shapes and
order, validation, and autodiff."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import mpsgraph as mg
from oracles import lstm_f64 as ref

A = mg.RNNActivation


def _desc(**kw):
    return mg.LSTMDescriptor(**kw)


class LSTMCase:
    """Random inputs in the user's forms plus their canonical forms for the oracle."""

    def __init__(self, rng, T=4, N=3, I=5, H=4, bidirectional=False, has_w=True, has_b=True,
                 h0_form="none", c0_form="none", mask_form="none", peep_form="none",
                 dtype=mg.float32):
        D = 2 if bidirectional else 1
        self.T, self.N, self.I, self.H, self.D = T, N, I, H, D
        self.dtype = dtype
        npdt = dtype.numpy_dtype
        r = lambda *s: rng.uniform(-0.8, 0.8, s).astype(npdt).astype(np.float64)  # noqa: E731
        self.user, self.canon = {}, {}
        feat = I if has_w else D * 4 * H
        self.user["source"] = self.canon["x"] = r(T, N, feat)
        R = r(D, 4 * H, H)
        self.user["recurrentWeight"] = R if bidirectional else R[0]
        self.canon["R"] = R
        if has_w:
            self.user["inputWeight"] = self.canon["W"] = r(D * 4 * H, I)
        if has_b:
            self.user["bias"] = self.canon["b"] = r(D * 4 * H)
        for name, key, form in (("initState", "h0", h0_form), ("initCell", "c0", c0_form)):
            if form == "none":
                continue
            if form == "NDH":
                v = r(N, D * H)
                self.user[name], self.canon[key] = v, v
            elif form == "1NDH":
                v = r(1, N, D * H)
                self.user[name], self.canon[key] = v, v[0]
            elif form == "DH":  # broadcast over the batch
                v = r(D * H)
                self.user[name], self.canon[key] = v, np.broadcast_to(v, (N, D * H)).copy()
        if mask_form == "state":
            m = (rng.uniform(size=(N, D * H)) > 0.3).astype(np.float64)
            self.user["mask"], self.canon["mask"] = m, m
        elif mask_form == "seq":
            m = (rng.uniform(size=(T, N, D * H)) > 0.3).astype(np.float64)
            self.user["mask"], self.canon["mask"] = m, m
        if peep_form != "none":
            p = r(D, 4 * H)
            self.canon["peephole"] = p
            self.user["peephole"] = {"4H": p[0], "2x4H": p, "8H": p.reshape(-1)}[peep_form]

    def placeholders(self, g):
        return {k: g.placeholder(list(v.shape), self.dtype, name=k) for k, v in self.user.items()}

    def feeds(self, ph, extra=None):
        npdt = self.dtype.numpy_dtype
        f = {ph[k]: v.astype(npdt) for k, v in self.user.items()}
        for t, v in (extra or {}).items():
            f[t] = v.astype(npdt)
        return f

    def ref_forward(self, d: mg.LSTMDescriptor):
        c = self.canon
        return ref.lstm_ref(c["x"], c["R"], c.get("W"), c.get("b"), c.get("h0"), c.get("c0"),
                            c.get("mask"), c.get("peephole"), **_opts(d))


def _opts(d):
    return dict(reverse=d.reverse, bidirectional=d.bidirectional,
                forget_gate_last=d.forgetGateLast,
                activations=tuple(int(x) for x in (
                    d.inputGateActivation, d.forgetGateActivation, d.cellGateActivation,
                    d.outputGateActivation, d.activation)))


def _kw(ph, names):
    return {k: ph[k] for k in names if k in ph}


OPTIONAL = ("inputWeight", "bias", "initState", "initCell", "mask", "peephole")

CONFIGS = [
    dict(),
    dict(reverse=True),
    dict(bidirectional=True),
    dict(forgetGateLast=True, inputGateActivation=A.hardSigmoid, forgetGateActivation=A.tanh,
         cellGateActivation=A.relu, outputGateActivation=A.none, activation=A.sigmoid),
    dict(bidirectional=True, reverse=True, activation=A.hardSigmoid),
    dict(reverse=True, cellGateActivation=A.sigmoid, activation=A.relu),
]
FORMS = [
    dict(),
    dict(h0_form="1NDH", c0_form="NDH", mask_form="state", peep_form="4H"),
    dict(h0_form="DH", c0_form="1NDH", mask_form="seq", peep_form="8H"),
    dict(has_w=False, has_b=True, h0_form="NDH", peep_form="2x4H"),
    dict(has_w=False, has_b=False, mask_form="seq"),
]


def _peep(form, bidirectional):
    if form.get("peep_form") in ("8H", "2x4H") and not bidirectional:
        return {**form, "peep_form": "4H"}
    if form.get("peep_form") == "4H" and bidirectional:
        return {**form, "peep_form": "2x4H"}
    return form


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}" for k in c) or "default")
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "-".join(f"{v}" for v in f.values())
                         or "plain")
@pytest.mark.parametrize("grads", ["none", "state+finalcell", "state+seqcell"])
def test_roundtrip_against_f64_oracle(rng, cfg, form, grads):
    """LSTM(training) -> LSTMGradients on the same graph, every argument in a user form,
    against the oracle's forward and backward."""
    d = _desc(training=True, **cfg)
    case = LSTMCase(rng, bidirectional=d.bidirectional, **_peep(form, d.bidirectional))
    g = mg.Graph()
    ph = case.placeholders(g)
    state, cell, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d,
                            **_kw(ph, OPTIONAL))
    T, N, DH = case.T, case.N, case.D * case.H
    dstate_v = rng.standard_normal((T, N, DH))
    dstate = g.placeholder([T, N, DH], name="dstate")
    extra = {dstate: dstate_v}
    kw = {}
    dh_final = dc_final = dcell_seq = None
    if grads != "none":
        dh_final = rng.standard_normal((N, DH))
        kw["stateGradient"] = g.placeholder([1, N, DH], name="sg")
        extra[kw["stateGradient"]] = dh_final[None]
        if grads == "state+finalcell":
            dc_final = rng.standard_normal((N, DH))
            kw["cellGradient"] = g.placeholder([N, DH], name="cg")
            extra[kw["cellGradient"]] = dc_final
        else:
            dcell_seq = rng.standard_normal((T, N, DH))
            kw["cellGradient"] = g.placeholder([T, N, DH], name="cg")
            extra[kw["cellGradient"]] = dcell_seq
    outs = g.LSTMGradients(ph["source"], ph["recurrentWeight"], dstate, z, cell, descriptor=d,
                           **kw, **_kw(ph, OPTIONAL))
    res = g.run(case.feeds(ph, extra), [state, cell, z, *outs])
    s_ref, c_ref, z_ref = case.ref_forward(d)
    for t, want in ((state, s_ref), (cell, c_ref), (z, z_ref)):
        np.testing.assert_allclose(res[t].numpy(), want, rtol=1e-5, atol=1e-5)
    c = case.canon
    gref = ref.lstm_grad_ref(c["x"], c["R"], dstate_v, z_ref, c_ref, c.get("W"), c.get("b"),
                             c.get("h0"), c.get("c0"), c.get("mask"), c.get("peephole"),
                             dh_final, dc_final, dcell_seq, **_opts(d))
    names = [n for n in ("source", "recurrentWeight", "inputWeight", "bias", "peephole",
                         "initState", "initCell") if n in case.user]
    assert len(outs) == len(names)
    for n, t in zip(names, outs):
        got = res[t].numpy().astype(np.float64)
        want = gref[n]
        if n == "recurrentWeight":
            want = want.reshape(case.user[n].shape)
        elif n == "bias":
            assert got.shape == (1, 1, case.D * 4 * case.H)
            want = want.reshape(1, 1, -1)
        elif n == "peephole":
            want = want.reshape(case.user[n].shape)
        elif n in ("initState", "initCell"):
            shape = case.user[n].shape
            if shape == (case.D * case.H,):
                want = want.sum(axis=0)
            want = want.reshape(shape)
        assert got.shape == case.user[n].shape if n != "bias" else True
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4, err_msg=n)


@pytest.mark.parametrize("produceCell,training,n", [(False, False, 1), (True, False, 2),
                                                     (False, True, 3), (True, True, 3)])
def test_output_arity(rng, produceCell, training, n):
    case = LSTMCase(rng)
    g = mg.Graph()
    ph = case.placeholders(g)
    outs = g.LSTM(ph["source"], ph["recurrentWeight"], inputWeight=ph["inputWeight"],
                  descriptor=_desc(produceCell=produceCell, training=training))
    assert isinstance(outs, list) and len(outs) == n
    H = case.H
    assert [o.shape for o in outs] == [[4, 3, H], [4, 3, H], [4, 3, 4 * H]][:n]


def test_hard_sigmoid_constants_pinned():
    """hardSigmoid = clip(0.2 a + 0.5, 0, 1) (a documented choice: see docs/semantics.md)."""
    g = mg.Graph()
    H = 1
    x = g.constant(np.array([[[-3.0, 1.0, 0.0, 0.0]]], np.float32))  # [T=1, N=1, 4H] gates
    R = g.constant(np.zeros((4, 1), np.float32))
    d = _desc(training=True, inputGateActivation=A.hardSigmoid, cellGateActivation=A.none,
              forgetGateActivation=A.hardSigmoid, outputGateActivation=A.none, activation=A.none)
    state, cell, z = g.LSTM(x, R, descriptor=d)
    out = g.run({}, [z, cell])
    np.testing.assert_allclose(out[z].numpy().reshape(4 * H), [0.0, 0.7, 0.0, 0.0], atol=1e-7)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_against_torch_nn_lstm(rng, bidirectional):
    torch = pytest.importorskip("torch")
    T, N, I, H = 5, 3, 4, 6
    D = 2 if bidirectional else 1
    m = torch.nn.LSTM(I, H, bidirectional=bidirectional).double()
    x = torch.tensor(rng.standard_normal((T, N, I)), requires_grad=True)
    h0 = torch.tensor(rng.standard_normal((D, N, H)), requires_grad=True)
    c0 = torch.tensor(rng.standard_normal((D, N, H)), requires_grad=True)
    y, (hn, cn) = m(x, (h0, c0))
    dy = torch.tensor(rng.standard_normal(y.shape))
    (y * dy).sum().backward()
    sfx = ["", "_reverse"][:D]
    Wih = np.concatenate([getattr(m, f"weight_ih_l0{s}").detach().numpy() for s in sfx])
    Whh = np.stack([getattr(m, f"weight_hh_l0{s}").detach().numpy() for s in sfx])
    b = np.concatenate([(getattr(m, f"bias_ih_l0{s}") + getattr(m, f"bias_hh_l0{s}"))
                        .detach().numpy() for s in sfx])
    h0n = h0.detach().numpy().transpose(1, 0, 2).reshape(N, D * H)
    c0n = c0.detach().numpy().transpose(1, 0, 2).reshape(N, D * H)
    g = mg.Graph()
    f32 = lambda a: np.asarray(a, np.float32)  # noqa: E731
    vals = dict(source=x.detach().numpy(), recurrentWeight=Whh if bidirectional else Whh[0],
                inputWeight=Wih, bias=b, initState=h0n, initCell=c0n)
    ph = {k: g.placeholder(list(v.shape), name=k) for k, v in vals.items()}
    d = _desc(bidirectional=bidirectional, training=True, produceCell=True)
    state, cell, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d,
                            **_kw(ph, OPTIONAL))
    dyt = g.placeholder(list(dy.shape), name="dy")
    grads = g.LSTMGradients(ph["source"], ph["recurrentWeight"], dyt, z, cell, descriptor=d,
                            **_kw(ph, OPTIONAL))
    feeds = {ph[k]: f32(v) for k, v in vals.items()}
    feeds[dyt] = f32(dy.numpy())
    out = g.run(feeds, [state, *grads])
    np.testing.assert_allclose(out[state].numpy(), y.detach().numpy(), rtol=1e-4, atol=1e-5)
    dx, dR, dW, db, dh0, dc0 = (out[t].numpy() for t in grads)
    np.testing.assert_allclose(dx, x.grad.numpy(), rtol=1e-4, atol=1e-4)
    want_R = np.stack([getattr(m, f"weight_hh_l0{s}").grad.numpy() for s in sfx])
    np.testing.assert_allclose(dR, want_R if bidirectional else want_R[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dW, np.concatenate(
        [getattr(m, f"weight_ih_l0{s}").grad.numpy() for s in sfx]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db.reshape(-1), np.concatenate(
        [getattr(m, f"bias_ih_l0{s}").grad.numpy() for s in sfx]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dh0, h0.grad.numpy().transpose(1, 0, 2).reshape(N, D * H),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dc0, c0.grad.numpy().transpose(1, 0, 2).reshape(N, D * H),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cfg", [dict(), dict(bidirectional=True, forgetGateLast=True),
                                 dict(reverse=True, activation=A.sigmoid)])
@pytest.mark.parametrize("use", ["state", "cell"])
def test_autodiff_through_lstm(rng, cfg, use):
    """gradientForPrimaryTensor through LSTM (not in training mode: the rule re-runs it with
    training=True) equals the oracle's backward for the sum of the used output."""
    d = _desc(produceCell=True, **cfg)
    case = LSTMCase(rng, bidirectional=d.bidirectional, h0_form="1NDH", c0_form="NDH",
                    peep_form="2x4H" if d.bidirectional else "4H", mask_form="state")
    g = mg.Graph()
    ph = case.placeholders(g)
    state, cell = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **_kw(ph, OPTIONAL))
    primary = state if use == "state" else cell
    wrt = [ph[k] for k in ("source", "recurrentWeight", "inputWeight", "bias", "initState",
                           "initCell", "peephole")]
    grads = g.gradientForPrimaryTensor(primary, wrt)
    out = g.run(case.feeds(ph), [grads[t] for t in wrt])
    c = case.canon
    s_ref, c_ref, z_ref = case.ref_forward(d)
    ones = np.ones_like(s_ref)
    gref = ref.lstm_grad_ref(
        c["x"], c["R"], ones if use == "state" else np.zeros_like(s_ref), z_ref, c_ref,
        c.get("W"), c.get("b"), c.get("h0"), c.get("c0"), c.get("mask"), c.get("peephole"),
        dcell_seq=None if use == "state" else ones, **_opts(d))
    for k, t in zip(("source", "recurrentWeight", "inputWeight", "bias", "initState",
                     "initCell", "peephole"), wrt):
        got = out[grads[t]].numpy()
        assert got.shape == tuple(t.shape)
        np.testing.assert_allclose(got.reshape(-1), gref[k].reshape(-1), rtol=2e-4, atol=2e-4,
                                   err_msg=k)


@pytest.mark.parametrize("dtype,tol", [(mg.float16, 1e-2), (mg.bFloat16, 6e-2)])
def test_half_precision(rng, dtype, tol):
    d = _desc(training=True, bidirectional=True)
    case = LSTMCase(rng, bidirectional=True, h0_form="NDH", dtype=dtype)
    g = mg.Graph()
    ph = case.placeholders(g)
    outs = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **_kw(ph, OPTIONAL))
    res = g.run(case.feeds(ph), outs)
    for t, want in zip(outs, case.ref_forward(d)):
        got = res[t].numpy()
        assert got.dtype == dtype.numpy_dtype
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("T,N", [(0, 3), (4, 0)])
def test_empty_sequence_or_batch(rng, T, N):
    d = _desc(training=True)
    case = LSTMCase(rng, T=T, N=N, h0_form="NDH", c0_form="NDH")
    g = mg.Graph()
    ph = case.placeholders(g)
    state, cell, z = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **_kw(ph, OPTIONAL))
    dstate = g.placeholder([T, N, case.H])
    sg = g.placeholder([N, case.H])
    outs = g.LSTMGradients(ph["source"], ph["recurrentWeight"], dstate, z, cell,
                           stateGradient=sg, descriptor=d, **_kw(ph, OPTIONAL))
    sgv = rng.standard_normal((N, case.H))
    res = g.run(case.feeds(ph, {dstate: np.zeros((T, N, case.H)), sg: sgv}), [state, *outs])
    assert res[state].shape == [T, N, case.H]
    dx, dR, dW, db, dh0, dc0 = (res[t].numpy() for t in outs)
    if T == 0:
        assert not dR.any() and not dW.any() and not db.any()
        np.testing.assert_allclose(dh0, sgv.astype(np.float32))  # passes straight through
        assert not dc0.any()
    else:
        assert dx.shape == (T, 0, case.I) and not dR.any()


def test_nan_propagates(rng):
    case = LSTMCase(rng)
    case.user["source"] = case.user["source"].copy()
    case.user["source"][1, 0, 2] = np.nan
    g = mg.Graph()
    ph = case.placeholders(g)
    (state,) = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=_desc(),
                      **_kw(ph, OPTIONAL))
    s = g.run(case.feeds(ph), [state])[state].numpy()
    assert np.isnan(s[1:, 0]).all() and np.isfinite(s[0]).all() and np.isfinite(s[:, 1:]).all()


def test_descriptor_is_copied(rng):
    case = LSTMCase(rng)
    g = mg.Graph()
    ph = case.placeholders(g)
    d = _desc()
    (a,) = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **_kw(ph, OPTIONAL))
    d.reverse = True
    d.training = True
    (b,) = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=_desc(), **_kw(ph, OPTIONAL))
    out = g.run(case.feeds(ph), [a, b])
    np.testing.assert_array_equal(out[a].numpy(), out[b].numpy())


# ------------------------------------------------------------------ validation
def _bad(rng, fn, cls, *fragments):
    with pytest.raises(cls) as e:
        fn()
    msg = str(e.value)
    for f in fragments:
        assert f in msg, msg
    return msg


def _graph_with(shapes, dtype=mg.float32):
    g = mg.Graph()
    return g, {k: g.placeholder(list(v), dtype if k != "int" else mg.int32, name=k)
               for k, v in shapes.items()}


BASE = dict(source=(4, 3, 5), recurrentWeight=(16, 4), inputWeight=(16, 5), bias=(16,))


@pytest.mark.parametrize("change,arg,frag", [
    (dict(source=(4, 3)), "source", "rank-3"),
    (dict(recurrentWeight=(15, 4)), "recurrentWeight", "4H"),
    (dict(recurrentWeight=(2, 16, 4)), "recurrentWeight", "[4H, H]"),
    (dict(inputWeight=(16, 6)), "source", "I = inputWeight"),
    (dict(inputWeight=(12, 5)), "inputWeight", "D*4H"),
    (dict(bias=(8,)), "bias", "[16]"),
    (dict(initState=(3, 5)), "initState", "state-shaped"),
    (dict(initCell=(2, 3, 4)), "initCell", "state-shaped"),
    (dict(mask=(5, 3, 4)), "mask", "[T, N, D*H]"),
    (dict(peephole=(8,)), "peephole", "[16]"),
])
def test_lstm_bad_shapes(rng, change, arg, frag):
    shapes = {**BASE, **change}
    g, ph = _graph_with(shapes)
    _bad(rng, lambda: g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=_desc(),
                             name="L", **_kw(ph, OPTIONAL)),
         mg.ShapeError, "LSTM 'L'", f"'{arg}'", frag)


def test_lstm_bad_bidirectional_and_dtypes(rng):
    g, ph = _graph_with(BASE)
    _bad(rng, lambda: g.LSTM(ph["source"], ph["recurrentWeight"], inputWeight=ph["inputWeight"],
                             descriptor=_desc(bidirectional=True)),
         mg.ShapeError, "'recurrentWeight'", "[2, 4H, H]")
    h = g.placeholder([16], mg.float16, name="h")
    _bad(rng, lambda: g.LSTM(ph["source"], ph["recurrentWeight"], bias=h, descriptor=_desc()),
         mg.DataTypeError, "'bias'", "float32")
    i = g.placeholder([4, 3, 16], mg.int32)
    _bad(rng, lambda: g.LSTM(i, ph["recurrentWeight"], descriptor=_desc()), mg.DataTypeError,
         "'source'")
    _bad(rng, lambda: g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=None),
         mg.DescriptorError, "descriptor")
    _bad(rng, lambda: g.LSTM(ph["source"], ph["recurrentWeight"],
                             descriptor=_desc(activation=7)), mg.DescriptorError, "activation")
    _bad(rng, lambda: g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=_desc()),
         mg.ShapeError, "'source'", "no inputWeight")


@pytest.mark.parametrize("arg,shape,frag", [
    ("sourceGradient", (4, 3, 5), "dL/dstate"),
    ("zState", (4, 3, 4), "zState"),
    ("cellOutputFwd", (3, 3, 4), "cell output"),
    ("stateGradient", (2, 4), "state-shaped"),
    ("cellGradient", (4, 2, 4), "[T, N, D*H]"),
])
def test_lstm_gradients_bad_shapes(rng, arg, shape, frag):
    shapes = dict(BASE, sourceGradient=(4, 3, 4), zState=(4, 3, 16), cellOutputFwd=(4, 3, 4))
    shapes[arg] = shape
    g, ph = _graph_with(shapes)
    _bad(rng, lambda: g.LSTMGradients(ph["source"], ph["recurrentWeight"],
                                      ph["sourceGradient"], ph["zState"], ph["cellOutputFwd"],
                                      descriptor=_desc(), name="G",
                                      **_kw(ph, OPTIONAL + ("stateGradient", "cellGradient"))),
         mg.ShapeError, "LSTMGradients 'G'", f"'{arg}'", frag)


def test_every_option_combination_compiles(rng):
    """Every descriptor flag combination builds and runs through the graph (the numerics of
    each are covered by the kernel sweep against the oracle)."""
    for rev, bi, fgl in itertools.product([False, True], repeat=3):
        d = _desc(reverse=rev, bidirectional=bi, forgetGateLast=fgl, training=True)
        case = LSTMCase(rng, T=2, N=2, H=2, I=3, bidirectional=bi)
        g = mg.Graph()
        ph = case.placeholders(g)
        outs = g.LSTM(ph["source"], ph["recurrentWeight"], descriptor=d, **_kw(ph, OPTIONAL))
        res = g.run(case.feeds(ph), outs)
        for t, want in zip(outs, case.ref_forward(d)):
            np.testing.assert_allclose(res[t].numpy(), want, rtol=1e-5, atol=1e-6)
    assert ml_dtypes  # bfloat16 support imported for dtype cases above
