"""GRU, GRUGradients, singleGateRNN and singleGateRNNGradients (SPEC 4) through the graph API,
on every CPU backend, against the float64 loops of tests/oracles/gru_f64.py (themselves checked
by central differences here), torch.nn.GRU / torch.nn.RNN through SPEC 4.2's mapping, and
finite differences through gradientForPrimaryTensor; every option alone and in pairs; the
flipZ and resetAfter decisions pinned by name; validation; the RNN header's surface."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import mpsgraph as mg
from helpers import DEVICES, api_rows
from oracles import gru_f64 as ref

A = mg.RNNActivation
CPU_DEVICES = [p for p in DEVICES if p.values[0] != "cuda"] + [
    p for p in DEVICES if p.values[0] == "cuda"]
F32_TOL = dict(rtol=2e-5, atol=2e-5)


def _dev(name):
    return mg.Device(name)


# ------------------------------------------------------------------------------ cases
class Case:
    """Random inputs of a GRU (gates=3) or single-gate RNN (gates=1) in the user's forms and
    the oracle's canonical forms. Options: bidirectional, has_w, has_b, h0 ('none', 'NDH',
    '1NDH', 'DH'), mask ('none', 'state', 'seq'), b2, sg (stateGradient)."""

    def __init__(self, rng, gates, T=4, N=3, I=5, H=4, bidirectional=False, has_w=True,
                 has_b=True, h0="NDH", mask="none", b2=False, sg=False):
        D = 2 if bidirectional else 1
        self.T, self.N, self.I, self.H, self.D, self.k = T, N, I, H, D, gates
        G = gates * H
        r = lambda *s: rng.uniform(-0.9, 0.9, s).astype(np.float32).astype(np.float64)  # noqa
        self.user, self.canon = {}, {}
        self.user["source"] = self.canon["x"] = r(T, N, I if has_w else D * G)
        R = r(D, G, H)
        self.user["recurrentWeight"] = R if bidirectional else R[0]
        self.canon["R"] = R
        if has_w:
            self.user["inputWeight"] = self.canon["W"] = r(D * G, I)
        if has_b:
            self.user["bias"] = self.canon["b"] = r(D * G)
        if h0 == "NDH":
            self.user["initState"] = self.canon["h0"] = r(N, D * H)
        elif h0 == "1NDH":
            v = r(1, N, D * H)
            self.user["initState"], self.canon["h0"] = v, v[0]
        elif h0 == "DH":
            v = r(D * H)
            self.user["initState"], self.canon["h0"] = v, np.broadcast_to(v, (N, D * H)).copy()
        if mask == "state":
            m = (rng.uniform(size=(N, D * H)) > 0.3) * 1.25
            self.user["mask"] = self.canon["mask"] = m
        elif mask == "seq":
            m = rng.uniform(0.0, 1.5, (T, N, D * H)).astype(np.float32).astype(np.float64)
            self.user["mask"] = self.canon["mask"] = m
        if b2:
            self.user["secondaryBias"] = self.canon["b2"] = r(D * H)
        self.dstate = r(T, N, D * H)
        self.sg = r(N, D * H) if sg else None

    def run(self, desc, device, grads=True, with_zstate=True):
        """(state, zState[, gradients list]) from our ops (without `with_zstate`: zState is no
        target, only the Gradients op reads it: (state, gradients...))."""
        g = mg.Graph()
        ph = {k: g.placeholder(list(v.shape), mg.float32, name=k) for k, v in self.user.items()}
        opt = {k: t for k, t in ph.items() if k not in ("source", "recurrentWeight")}
        if self.k == 3:
            state, z = g.GRU(ph["source"], ph["recurrentWeight"], descriptor=desc, **opt)
        else:
            state, z = g.singleGateRNN(ph["source"], ph["recurrentWeight"], descriptor=desc,
                                       **opt)
        targets = [state, z] if with_zstate else [state]
        feeds = {ph[k]: v.astype(np.float32) for k, v in self.user.items()}
        if grads:
            ds = g.placeholder([self.T, self.N, self.D * self.H], mg.float32)
            feeds[ds] = self.dstate.astype(np.float32)
            extra = {}
            if self.sg is not None:
                sgt = g.placeholder(list(self.sg.shape), mg.float32)
                feeds[sgt] = self.sg.astype(np.float32)
                extra["stateGradient"] = sgt
            if self.k == 3:
                gr = g.GRUGradients(ph["source"], ph["recurrentWeight"], ds, z, state,
                                    descriptor=desc, **extra, **opt)
            else:
                gr = g.singleGateRNNGradients(ph["source"], ph["recurrentWeight"], ds, z,
                                              descriptor=desc, **extra, **opt)
            targets += gr
        out = g.run(feeds, targets, device=_dev(device))
        return [np.asarray(out[t].numpy(), np.float64) for t in targets]

    def oracle(self, desc, grads=True):
        c = self.canon
        if self.k == 3:
            flags = dict(reverse=desc.reverse, bidirectional=desc.bidirectional,
                         reset_gate_first=desc.resetGateFirst, reset_after=desc.resetAfter,
                         flip_z=desc.flipZ, activations=(int(desc.updateGateActivation),
                                                         int(desc.resetGateActivation),
                                                         int(desc.outputGateActivation)))
            fw = ref.gru_ref(c["x"], c["R"], c.get("W"), c.get("b"), c.get("h0"),
                             c.get("mask"), c.get("b2"), **flags)
            order = ("source", "recurrentWeight", "inputWeight", "bias", "initState",
                     "secondaryBias")
        else:
            flags = dict(reverse=desc.reverse, bidirectional=desc.bidirectional,
                         activation=int(desc.activation))
            fw = ref.rnn_ref(c["x"], c["R"], c.get("W"), c.get("b"), c.get("h0"),
                             c.get("mask"), **flags)
            order = ("source", "recurrentWeight", "inputWeight", "bias", "initState")
        if not grads:
            return list(fw)
        extra = {"b2": c.get("b2")} if self.k == 3 else {}
        fn = ref.gru_grad_ref if self.k == 3 else ref.rnn_grad_ref
        res = fn(c["x"], c["R"], self.dstate, c.get("W"), c.get("b"), c.get("h0"),
                 c.get("mask"), dh_final=self.sg, **extra, **flags)
        out = []
        for n in order:
            if n not in self.user:
                continue
            v = res[n]
            if n == "bias":
                v = v.reshape(1, 1, -1)
            elif n == "initState":
                shp = self.user[n].shape
                v = v.sum(axis=0).reshape(shp) if len(shp) == 1 else v.reshape(shp)
            else:
                v = v.reshape(self.user[n].shape)
            out.append(v)
        return list(fw) + out


def _check(case, desc, device, tol=F32_TOL):
    got = case.run(desc, device)
    want = case.oracle(desc)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.shape == b.shape, (i, a.shape, b.shape)
        np.testing.assert_allclose(a, b, err_msg=f"output {i}", **tol)


# ------------------------------------------------------------------------------ oracle check
def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


@pytest.mark.parametrize("flags", [
    dict(), dict(reset_after=True), dict(flip_z=True, reset_gate_first=True),
    dict(bidirectional=True, reset_after=True), dict(reverse=True, flip_z=True),
    dict(activations=(4, 0, 1))], ids=str)
def test_gru_oracle_gradients_are_the_finite_differences_of_its_forward(rng, flags):
    f = dict(reverse=False, bidirectional=False, reset_gate_first=False, reset_after=False,
             flip_z=False, activations=(3, 3, 2))
    f.update(flags)
    D = 2 if f["bidirectional"] else 1
    T, N, I, H = 3, 2, 3, 2
    a = {"x": rng.normal(size=(T, N, I)), "R": rng.normal(size=(D, 3 * H, H)) * 0.7,
         "W": rng.normal(size=(D * 3 * H, I)) * 0.7, "b": rng.normal(size=D * 3 * H),
         "h0": rng.normal(size=(N, D * H)), "mask": rng.uniform(0.2, 1.5, (T, N, D * H)),
         "b2": rng.normal(size=D * H)}
    ds, sg = rng.normal(size=(T, N, D * H)), rng.normal(size=(N, D * H))

    def loss(**over):
        v = {**a, **over}
        s, _ = ref.gru_ref(v["x"], v["R"], v["W"], v["b"], v["h0"], v["mask"], v["b2"], **f)
        fin = np.concatenate([s[0 if (d == 1 or (D == 1 and f["reverse"])) else T - 1, :,
                                d * H:(d + 1) * H] for d in range(D)], axis=1)
        return float((s * ds).sum() + (fin * sg).sum())

    g = ref.gru_grad_ref(a["x"], a["R"], ds, a["W"], a["b"], a["h0"], a["mask"], a["b2"],
                         dh_final=sg, **f)
    for name, key in (("source", "x"), ("recurrentWeight", "R"), ("inputWeight", "W"),
                      ("bias", "b"), ("initState", "h0"), ("secondaryBias", "b2")):
        num = _fd(lambda v, key=key: loss(**{key: v}), a[key])
        np.testing.assert_allclose(g[name], num, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("act", [A.tanh, A.relu, A.sigmoid, A.none])
@pytest.mark.parametrize("bidirectional,reverse", [(False, False), (False, True), (True, False)])
def test_rnn_oracle_gradients_are_the_finite_differences_of_its_forward(rng, act, bidirectional,
                                                                        reverse):
    D = 2 if bidirectional else 1
    T, N, I, H = 3, 2, 3, 2
    a = {"x": rng.normal(size=(T, N, I)), "R": rng.normal(size=(D, H, H)) * 0.7,
         "W": rng.normal(size=(D * H, I)), "b": rng.normal(size=D * H),
         "h0": rng.normal(size=(N, D * H)), "mask": rng.uniform(0.2, 1.5, (N, D * H))}
    ds, sg = rng.normal(size=(T, N, D * H)), rng.normal(size=(N, D * H))
    f = dict(reverse=reverse, bidirectional=bidirectional, activation=int(act))

    def loss(**over):
        v = {**a, **over}
        s, _ = ref.rnn_ref(v["x"], v["R"], v["W"], v["b"], v["h0"], v["mask"], **f)
        fin = np.concatenate([s[0 if (d == 1 or (D == 1 and reverse)) else T - 1, :,
                                d * H:(d + 1) * H] for d in range(D)], axis=1)
        return float((s * ds).sum() + (fin * sg).sum())

    g = ref.rnn_grad_ref(a["x"], a["R"], ds, a["W"], a["b"], a["h0"], a["mask"], dh_final=sg,
                         **f)
    for name, key in (("source", "x"), ("recurrentWeight", "R"), ("inputWeight", "W"),
                      ("bias", "b"), ("initState", "h0")):
        num = _fd(lambda v, key=key: loss(**{key: v}), a[key])
        np.testing.assert_allclose(g[name], num, rtol=1e-6, atol=1e-7, err_msg=name)


# ------------------------------------------------------------------------------ options
GRU_OPTIONS = {
    "reverse": ({"reverse": True}, {}),
    "bidirectional": ({"bidirectional": True}, {"bidirectional": True}),
    "resetGateFirst": ({"resetGateFirst": True}, {}),
    "resetAfter": ({"resetAfter": True}, {"b2": True}),
    "flipZ": ({"flipZ": True}, {}),
    "activations": ({"updateGateActivation": A.hardSigmoid, "resetGateActivation": A.tanh,
                     "outputGateActivation": A.relu}, {}),
    "mask": ({}, {"mask": "state"}),
    "maskPerStep": ({}, {"mask": "seq"}),
    "noInputWeight": ({}, {"has_w": False}),
    "noBias": ({}, {"has_b": False}),
    "noInitState": ({}, {"h0": "none"}),
    "broadcastInitState": ({}, {"h0": "DH"}),
    "stateGradient": ({}, {"sg": True}),
    "secondaryBiasIgnored": ({}, {"b2": True}),
}
RNN_OPTIONS = {
    "reverse": ({"reverse": True}, {}),
    "bidirectional": ({"bidirectional": True}, {"bidirectional": True}),
    "tanh": ({"activation": A.tanh}, {}),
    "sigmoid": ({"activation": A.sigmoid}, {}),
    "hardSigmoid": ({"activation": A.hardSigmoid}, {}),
    "none": ({"activation": A.none}, {}),
    "mask": ({}, {"mask": "state"}),
    "maskPerStep": ({}, {"mask": "seq"}),
    "noInputWeight": ({}, {"has_w": False}),
    "noBias": ({}, {"has_b": False}),
    "noInitState": ({}, {"h0": "none"}),
    "initState1NDH": ({}, {"h0": "1NDH"}),
    "stateGradient": ({}, {"sg": True}),
}


def _combos(options):
    names = list(options)
    return [(n,) for n in names] + list(itertools.combinations(names, 2))


def _merged(options, combo):
    d, c = {}, {}
    for n in combo:
        d.update(options[n][0])
        c.update(options[n][1])
    if d.get("activation") is not None and sum("activation" in options[n][0] for n in combo) > 1:
        return None
    return d, c


@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("combo", _combos(GRU_OPTIONS), ids="+".join)
def test_gru_options_alone_and_in_pairs(rng, combo, device):
    d, c = _merged(GRU_OPTIONS, combo)
    case = Case(rng, 3, **c)
    _check(case, mg.GRUDescriptor(training=True, **d), device)


@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("combo", _combos(RNN_OPTIONS), ids="+".join)
def test_single_gate_options_alone_and_in_pairs(rng, combo, device):
    m = _merged(RNN_OPTIONS, combo)
    if m is None:
        pytest.skip("two activations")
    d, c = m
    case = Case(rng, 1, **c)
    _check(case, mg.SingleGateRNNDescriptor(training=True, **d), device)


# ------------------------------------------------------------------------------ decisions
def _one_step(desc, z_pre, o_pre, device, h0=0.5):
    """A 1-step, N=1, H=1 GRU with no recurrent weight: z = f_z(z_pre), o = f_o(o_pre)."""
    g = mg.Graph()
    x = g.constant(np.array([[[z_pre, 0.0, o_pre]]], np.float32), [1, 1, 3], mg.float32)
    if desc.resetGateFirst:
        x = g.constant(np.array([[[0.0, z_pre, o_pre]]], np.float32), [1, 1, 3], mg.float32)
    R = g.constant(np.zeros((3, 1), np.float32), [3, 1], mg.float32)
    h = g.constant(np.array([[h0]], np.float32), [1, 1], mg.float32)
    s = g.GRU(x, R, initState=h, descriptor=desc)[0]
    return float(g.run({}, [s], device=_dev(device))[s].numpy().ravel()[0])


@pytest.mark.parametrize("device", CPU_DEVICES)
def test_flipZ_follows_the_method_pages(device):
    """docs/semantics.md (GRU): flipZ=False gives h = z h_prev + (1 - z) o (the GRU(...) method
    pages, ONNX / PyTorch / cuDNN); flipZ=True gives (1 - z) h_prev + z o. (The flipZ property
    page says the opposite; SPEC 4.2 resolved it for the method pages.)"""
    z = 1 / (1 + np.exp(-0.7))
    o = np.tanh(0.3)
    for flip, want in ((False, z * 0.5 + (1 - z) * o), (True, (1 - z) * 0.5 + z * o)):
        got = _one_step(mg.GRUDescriptor(flipZ=flip), 0.7, 0.3, device)
        assert abs(got - want) < 1e-6, (flip, got, want)


@pytest.mark.parametrize("device", CPU_DEVICES)
def test_resetAfter_default_false_and_its_placement(rng, device):
    """resetAfter defaults to False (Apple's headers and +descriptor); False applies r to the
    state before the recurrent product, True after it and after adding secondaryBias, which
    False ignores."""
    assert mg.GRUDescriptor().resetAfter is False
    assert mg.GRUDescriptor.descriptor() == mg.GRUDescriptor()
    H = 1
    g = mg.Graph()
    x = g.constant(np.zeros((1, 1, 3), np.float32), [1, 1, 3], mg.float32)
    Rv = np.array([[0.0], [0.4], [2.0]], np.float32)             # R_z = 0, R_r, R_o
    R = g.constant(Rv, [3, H], mg.float32)
    h = g.constant(np.array([[0.5]], np.float32), [1, 1], mg.float32)
    b2 = g.constant(np.array([0.25], np.float32), [1], mg.float32)
    before = g.GRU(x, R, initState=h, secondaryBias=b2, descriptor=mg.GRUDescriptor())[0]
    after = g.GRU(x, R, initState=h, secondaryBias=b2,
                  descriptor=mg.GRUDescriptor(resetAfter=True))[0]
    out = g.run({}, [before, after], device=_dev(device))
    r = 1 / (1 + np.exp(-0.4 * 0.5))
    z = 0.5
    o_before = np.tanh((0.5 * r) * 2.0)
    o_after = np.tanh((0.5 * 2.0 + 0.25) * r)
    assert abs(out[before].numpy().item() - (z * 0.5 + (1 - z) * o_before)) < 1e-6
    assert abs(out[after].numpy().item() - (z * 0.5 + (1 - z) * o_after)) < 1e-6


def test_descriptor_defaults_are_apples():
    d = mg.GRUDescriptor()
    assert (d.reverse, d.bidirectional, d.training, d.resetGateFirst, d.resetAfter,
            d.flipZ) == (False,) * 6
    assert (d.updateGateActivation, d.resetGateActivation, d.outputGateActivation) == (
        A.sigmoid, A.sigmoid, A.tanh)
    s = mg.SingleGateRNNDescriptor()
    assert (s.reverse, s.bidirectional, s.training, s.activation) == (False, False, False,
                                                                      A.relu)
    assert mg.SingleGateRNNDescriptor.descriptor() == s
    with pytest.raises(AttributeError, match="flipZ"):
        d.flipz = True
    with pytest.raises(mg.UnknownPropertyError, match="activation"):
        mg.SingleGateRNNDescriptor(activaton=A.tanh)


# ------------------------------------------------------------------------------ torch oracle
torch = pytest.importorskip("torch")


def _torch_gru_mapping(m, bidirectional, H):
    """SPEC 4.2: resetGateFirst, resetAfter, flipZ False; bias = b_ih + [b_hr, b_hz, 0],
    secondaryBias = b_hn; bidirectional halves stacked / concatenated."""
    sfx = ["", "_reverse"] if bidirectional else [""]
    W = torch.cat([getattr(m, "weight_ih_l0" + s) for s in sfx], 0)
    Rs = [getattr(m, "weight_hh_l0" + s) for s in sfx]
    R = torch.stack(Rs) if bidirectional else Rs[0]
    bs, b2s = [], []
    for s in sfx:
        bih, bhh = getattr(m, "bias_ih_l0" + s), getattr(m, "bias_hh_l0" + s)
        bs.append(bih + torch.cat([bhh[:2 * H], torch.zeros_like(bhh[2 * H:])]))
        b2s.append(bhh[2 * H:])
    return W, R, torch.cat(bs), torch.cat(b2s)


@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_gru_against_torch_nn_gru(rng, bidirectional, device):
    T, N, I, H = 5, 3, 4, 6
    D = 2 if bidirectional else 1
    torch.manual_seed(int(rng.integers(1 << 30)))
    m = torch.nn.GRU(I, H, bidirectional=bidirectional).double()
    x = torch.randn(T, N, I, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(D, N, H, dtype=torch.float64, requires_grad=True)
    y, hn = m(x, h0)
    dy, dhn = torch.randn_like(y), torch.randn_like(hn)
    (y * dy).sum().backward(retain_graph=True)
    (hn * dhn).sum().backward()
    W, R, b, b2 = _torch_gru_mapping(m, bidirectional, H)
    f32 = lambda t: t.detach().numpy().astype(np.float32)  # noqa: E731
    h0u = h0.detach().transpose(0, 1).reshape(N, D * H)
    vals = {"x": x, "R": R, "W": W, "b": b, "h0": h0u, "b2": b2}
    g = mg.Graph()
    ph = {k: g.placeholder(list(v.shape), mg.float32, name=k) for k, v in vals.items()}
    desc = mg.GRUDescriptor(resetGateFirst=True, resetAfter=True, bidirectional=bidirectional)
    state = g.GRU(ph["x"], ph["R"], ph["W"], ph["b"], initState=ph["h0"],
                  secondaryBias=ph["b2"], descriptor=desc)[0]
    dyt = g.placeholder([T, N, D * H], mg.float32)
    dhnt = g.placeholder([N, D * H], mg.float32)
    last = [g.sliceTensor(state, dimension=0, start=T - 1, length=1)]
    fin = g.sliceTensor(last[0], dimension=2, start=0, length=H)
    if bidirectional:
        fin = g.concatTensors([fin, g.sliceTensor(g.sliceTensor(state, dimension=0, start=0,
                                                                 length=1),
                                                  dimension=2, start=H, length=H)], 2)
    loss = g.addition(g.reductionSum(g.multiplication(state, dyt), axes=[0, 1, 2]),
                      g.reductionSum(g.multiplication(g.reshape(fin, shape=[N, D * H]), dhnt),
                                     axes=[0, 1]))
    grads = g.gradientForPrimaryTensor(loss, [ph["x"], ph["h0"], ph["R"], ph["W"], ph["b2"]])
    feeds = {ph[k]: f32(v) for k, v in vals.items()}
    feeds[dyt] = f32(dy)
    feeds[dhnt] = f32(dhn.transpose(0, 1).reshape(N, D * H))
    targets = [state] + [grads[ph[k]] for k in ("x", "h0", "R", "W", "b2")]
    out = g.run(feeds, targets, device=_dev(device))
    got = [out[t].numpy().astype(np.float64) for t in targets]
    tol = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0], y.detach().numpy(), **tol)
    np.testing.assert_allclose(got[1], x.grad.numpy(), **tol)
    np.testing.assert_allclose(got[2], h0.grad.transpose(0, 1).reshape(N, D * H).numpy(), **tol)
    sfx = ["", "_reverse"] if bidirectional else [""]
    wr = [getattr(m, "weight_hh_l0" + s).grad.numpy() for s in sfx]
    np.testing.assert_allclose(got[3], np.stack(wr) if bidirectional else wr[0], **tol)
    wi = np.concatenate([getattr(m, "weight_ih_l0" + s).grad.numpy() for s in sfx])
    np.testing.assert_allclose(got[4], wi, **tol)
    b_hn = np.concatenate([getattr(m, "bias_hh_l0" + s).grad.numpy()[2 * H:] for s in sfx])
    np.testing.assert_allclose(got[5], b_hn, **tol)


@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_single_gate_against_torch_nn_rnn(rng, nonlinearity, bidirectional, device):
    T, N, I, H = 5, 3, 4, 6
    D = 2 if bidirectional else 1
    torch.manual_seed(int(rng.integers(1 << 30)))
    m = torch.nn.RNN(I, H, nonlinearity=nonlinearity, bidirectional=bidirectional).double()
    x = torch.randn(T, N, I, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(D, N, H, dtype=torch.float64, requires_grad=True)
    y, hn = m(x, h0)
    dy = torch.randn_like(y)
    (y * dy).sum().backward()
    sfx = ["", "_reverse"] if bidirectional else [""]
    W = torch.cat([getattr(m, "weight_ih_l0" + s) for s in sfx])
    Rs = [getattr(m, "weight_hh_l0" + s) for s in sfx]
    R = torch.stack(Rs) if bidirectional else Rs[0]
    b = torch.cat([getattr(m, "bias_ih_l0" + s) + getattr(m, "bias_hh_l0" + s) for s in sfx])
    f32 = lambda t: t.detach().numpy().astype(np.float32)  # noqa: E731
    vals = {"x": x, "R": R, "W": W, "b": b, "h0": h0.detach().transpose(0, 1).reshape(N, D * H)}
    g = mg.Graph()
    ph = {k: g.placeholder(list(v.shape), mg.float32, name=k) for k, v in vals.items()}
    act = A.tanh if nonlinearity == "tanh" else A.relu
    desc = mg.SingleGateRNNDescriptor(activation=act, bidirectional=bidirectional)
    state = g.singleGateRNN(ph["x"], ph["R"], inputWeight=ph["W"], bias=ph["b"],
                            initState=ph["h0"], descriptor=desc)[0]
    dyt = g.placeholder([T, N, D * H], mg.float32)
    loss = g.reductionSum(g.multiplication(state, dyt), axes=[0, 1, 2])
    grads = g.gradientForPrimaryTensor(loss, [ph["x"], ph["R"], ph["b"], ph["h0"]])
    feeds = {ph[k]: f32(v) for k, v in vals.items()}
    feeds[dyt] = f32(dy)
    targets = [state] + [grads[ph[k]] for k in ("x", "R", "b", "h0")]
    out = g.run(feeds, targets, device=_dev(device))
    got = [out[t].numpy().astype(np.float64) for t in targets]
    tol = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0], y.detach().numpy(), **tol)
    np.testing.assert_allclose(got[1], x.grad.numpy(), **tol)
    wr = [getattr(m, "weight_hh_l0" + s).grad.numpy() for s in sfx]
    np.testing.assert_allclose(got[2], np.stack(wr) if bidirectional else wr[0], **tol)
    bb = np.concatenate([getattr(m, "bias_ih_l0" + s).grad.numpy() for s in sfx])
    np.testing.assert_allclose(got[3], bb, **tol)
    np.testing.assert_allclose(got[4], h0.grad.transpose(0, 1).reshape(N, D * H).numpy(), **tol)


# ------------------------------------------------------------------------------ autodiff
def _fd_oracle_grads(case, desc, u):
    """Central differences (float64) of sum(u * state) of the oracle, for every user input."""
    c = case.canon
    keys = {"source": "x", "recurrentWeight": "R", "inputWeight": "W", "bias": "b",
            "initState": "h0", "mask": "mask", "secondaryBias": "b2"}

    def loss(name, v):
        user = dict(case.user)
        user[name] = v
        canon = dict(c)
        val = v
        if name == "recurrentWeight":
            val = v.reshape(c["R"].shape)
        elif name == "initState":
            val = np.broadcast_to(v.reshape(v.shape[-2:] if v.ndim > 2 else v.shape),
                                  c["h0"].shape)
        canon[keys[name]] = val
        if case.k == 3:
            s, _ = ref.gru_ref(canon["x"], canon["R"], canon.get("W"), canon.get("b"),
                               canon.get("h0"), canon.get("mask"), canon.get("b2"),
                               reverse=desc.reverse, bidirectional=desc.bidirectional,
                               reset_gate_first=desc.resetGateFirst,
                               reset_after=desc.resetAfter, flip_z=desc.flipZ,
                               activations=(int(desc.updateGateActivation),
                                            int(desc.resetGateActivation),
                                            int(desc.outputGateActivation)))
        else:
            s, _ = ref.rnn_ref(canon["x"], canon["R"], canon.get("W"), canon.get("b"),
                               canon.get("h0"), canon.get("mask"), reverse=desc.reverse,
                               bidirectional=desc.bidirectional,
                               activation=int(desc.activation))
        return float((s * u).sum())

    return {n: _fd(lambda v, n=n: loss(n, v), case.user[n]) for n in case.user}


AUTODIFF_CASES = [
    (3, dict(), dict(mask="seq", b2=True)),
    (3, dict(resetAfter=True, resetGateFirst=True), dict(mask="state", b2=True)),
    (3, dict(flipZ=True, bidirectional=True), dict(bidirectional=True, mask="seq", h0="DH")),
    (3, dict(reverse=True, resetAfter=True), dict(has_w=False, b2=True, mask="state")),
    (1, dict(activation=A.tanh), dict(mask="seq")),
    (1, dict(activation=A.sigmoid, bidirectional=True), dict(bidirectional=True,
                                                             mask="state")),
    (1, dict(activation=A.tanh, reverse=True), dict(has_w=False, h0="1NDH")),
]


@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("gates,dkw,ckw", AUTODIFF_CASES)
def test_gradient_for_primary_tensor_through_both_ops(rng, gates, dkw, ckw, training, device):
    """gradientForPrimaryTensor of sum(u * state) differentiates through the forward op (and
    the one its rule adds when the forward is not training) and the gradient op: every input
    (mask and secondaryBias included) against central differences of the float64 oracle."""
    case = Case(rng, gates, T=3, N=2, I=3, H=2, **ckw)
    desc = (mg.GRUDescriptor if gates == 3 else mg.SingleGateRNNDescriptor)(
        training=training, **dkw)
    u = rng.uniform(-1, 1, (case.T, case.N, case.D * case.H))
    g = mg.Graph()
    ph = {k: g.placeholder(list(v.shape), mg.float32, name=k) for k, v in case.user.items()}
    opt = {k: t for k, t in ph.items() if k not in ("source", "recurrentWeight")}
    op = g.GRU if gates == 3 else g.singleGateRNN
    state = op(ph["source"], ph["recurrentWeight"], descriptor=desc, **opt)[0]
    ut = g.constant(u.astype(np.float32), list(u.shape), mg.float32)
    loss = g.reductionSum(g.multiplication(state, ut), axes=[0, 1, 2])
    grads = g.gradientForPrimaryTensor(loss, list(ph.values()))
    feeds = {ph[k]: v.astype(np.float32) for k, v in case.user.items()}
    out = g.run(feeds, [grads[t] for t in ph.values()], device=_dev(device))
    want = _fd_oracle_grads(case, desc, u)
    for k, t in ph.items():
        np.testing.assert_allclose(out[grads[t]].numpy(), want[k], rtol=1e-4, atol=2e-5,
                                   err_msg=k)


def test_zstate_in_the_loss_is_refused(rng):
    g = mg.Graph()
    x = g.placeholder([2, 1, 6])
    R = g.placeholder([6, 2])
    s, z = g.GRU(x, R, descriptor=mg.GRUDescriptor(training=True))
    loss = g.reductionSum(z, axes=[0, 1, 2])
    with pytest.raises(mg.UnsupportedError, match="zState"):
        g.gradientForPrimaryTensor(loss, [x])


# ------------------------------------------------------------------------------ edges, dtypes
@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("gates", [3, 1])
@pytest.mark.parametrize("T,N,H", [(0, 2, 3), (3, 0, 3), (1, 1, 1), (2, 2, 0)])
def test_empty_and_unit_sizes(rng, gates, T, N, H, device):
    case = Case(rng, gates, T=T, N=N, I=2, H=H, sg=True, b2=gates == 3, mask="state")
    desc = (mg.GRUDescriptor(training=True, resetAfter=True) if gates == 3
            else mg.SingleGateRNNDescriptor(training=True))
    _check(case, desc, device)


@pytest.mark.parametrize("device", CPU_DEVICES)
@pytest.mark.parametrize("dtype,tol", [(mg.float16, 4e-3), (mg.bFloat16, 3e-2)])
@pytest.mark.parametrize("gates", [3, 1])
def test_half_types_compute_in_float32_and_round_once(rng, gates, dtype, tol, device):
    case = Case(rng, gates, T=3, N=2, I=3, H=4, b2=True, mask="seq")
    npdt = dtype.numpy_dtype
    for k in case.user:  # the inputs as the half type holds them
        case.user[k] = case.user[k].astype(npdt).astype(np.float64)
    case.canon = {{"source": "x", "recurrentWeight": "R", "inputWeight": "W", "bias": "b",
                   "initState": "h0", "mask": "mask", "secondaryBias": "b2"}[k]: v
                  for k, v in case.user.items() if gates == 3 or k != "secondaryBias"}
    case.canon["R"] = case.canon["R"].reshape(1, gates * 4, 4)
    desc = (mg.GRUDescriptor(training=True, resetAfter=True) if gates == 3
            else mg.SingleGateRNNDescriptor(training=True, activation=A.tanh))
    g = mg.Graph()
    ph = {k: g.placeholder(list(v.shape), dtype, name=k) for k, v in case.user.items()
          if gates == 3 or k != "secondaryBias"}
    opt = {k: t for k, t in ph.items() if k not in ("source", "recurrentWeight")}
    op = g.GRU if gates == 3 else g.singleGateRNN
    state, z = op(ph["source"], ph["recurrentWeight"], descriptor=desc, **opt)
    assert state.dataType == dtype and z.dataType == dtype
    out = g.run({ph[k]: case.user[k].astype(npdt) for k in ph}, [state, z], device=_dev(device))
    want = case.oracle(desc, grads=False)
    for t, w in zip((state, z), want):
        got = out[t].numpy().astype(np.float64)
        np.testing.assert_allclose(got, w, rtol=tol, atol=tol)


# ------------------------------------------------------------------------------ validation


GRU_BASE = {"source": (3, 2, 5), "recurrentWeight": (6, 2), "inputWeight": (6, 5)}
GRU_BAD = [
    ("recurrentWeight", (2, 6, 2), "recurrentWeight"),
    ("recurrentWeight", (8, 2), "recurrentWeight"),
    ("inputWeight", (8, 5), "inputWeight"),
    ("source", (3, 2, 4), "source"),
    ("source", (3, 2), "source"),
    ("bias", (8,), "bias"),
    ("initState", (3, 2), "initState"),
    ("mask", (2, 2, 2), "mask"),
    ("secondaryBias", (3,), "secondaryBias"),
]


@pytest.mark.parametrize("arg,shape,frag", GRU_BAD)
def test_gru_bad_shapes(arg, shape, frag):
    shapes = dict(GRU_BASE)
    shapes[arg] = shape
    g = mg.Graph()
    ph = {k: g.placeholder(list(s), mg.float32) for k, s in shapes.items()}
    with pytest.raises(mg.ShapeError, match=frag) as e:
        g.GRU(ph.pop("source"), ph.pop("recurrentWeight"), descriptor=mg.GRUDescriptor(), **ph)
    assert "GRU" in str(e.value)


def test_gru_gradients_bad_shapes_and_types():
    g = mg.Graph()
    x, R, W = g.placeholder([3, 2, 5]), g.placeholder([6, 2]), g.placeholder([6, 5])
    ok = dict(sourceGradient=[3, 2, 2], zState=[3, 2, 6], outputFwd=[3, 2, 2])
    for arg, bad in (("sourceGradient", [2, 3, 2]), ("zState", [3, 2, 2]),
                     ("outputFwd", [3, 2, 4])):
        shp = {**ok, arg: bad}
        t = {k: g.placeholder(v) for k, v in shp.items()}
        with pytest.raises(mg.ShapeError, match=arg):
            g.GRUGradients(x, R, t["sourceGradient"], t["zState"], t["outputFwd"],
                           inputWeight=W, descriptor=mg.GRUDescriptor())
    t = {k: g.placeholder(v) for k, v in ok.items()}
    with pytest.raises(mg.ShapeError, match="stateGradient"):
        g.GRUGradients(x, R, t["sourceGradient"], t["zState"], t["outputFwd"],
                       stateGradient=g.placeholder([3, 2]), inputWeight=W,
                       descriptor=mg.GRUDescriptor())
    with pytest.raises(mg.DataTypeError, match="recurrentWeight"):
        g.GRU(x, g.placeholder([6, 2], mg.float16), W, descriptor=mg.GRUDescriptor())
    with pytest.raises(mg.DataTypeError, match="source"):
        g.GRU(g.placeholder([3, 2, 6], mg.int32), g.placeholder([6, 2], mg.int32),
              descriptor=mg.GRUDescriptor())
    with pytest.raises(mg.DescriptorError, match="descriptor"):
        g.GRU(x, R, W, descriptor=mg.LSTMDescriptor())
    for prop, val in (("flipZ", "yes"), ("resetAfter", 2), ("outputGateActivation", 9),
                      ("updateGateActivation", True)):
        with pytest.raises(mg.DescriptorError, match=f"descriptor.{prop}"):
            g.GRU(x, R, W, descriptor=mg.GRUDescriptor(**{prop: val}))


def test_single_gate_bad_shapes_and_types():
    g = mg.Graph()
    x, R, W = g.placeholder([3, 2, 5]), g.placeholder([2, 2]), g.placeholder([2, 5])
    d = mg.SingleGateRNNDescriptor()
    with pytest.raises(mg.ShapeError, match="recurrentWeight"):
        g.singleGateRNN(x, g.placeholder([4, 2]), inputWeight=W, descriptor=d)
    with pytest.raises(mg.ShapeError, match="recurrentWeight"):
        g.singleGateRNN(x, R, inputWeight=g.placeholder([4, 5]),
                        descriptor=mg.SingleGateRNNDescriptor(bidirectional=True))
    with pytest.raises(mg.ShapeError, match="source"):
        g.singleGateRNN(x, R, descriptor=d)
    with pytest.raises(mg.ShapeError, match="inputWeight"):
        g.singleGateRNN(x, R, inputWeight=g.placeholder([3, 5]), descriptor=d)
    with pytest.raises(mg.ShapeError, match="zState"):
        g.singleGateRNNGradients(x, R, g.placeholder([3, 2, 2]), g.placeholder([3, 2, 3]),
                                 inputWeight=W, descriptor=d)
    with pytest.raises(mg.ShapeError, match="sourceGradient"):
        g.singleGateRNNGradients(x, R, g.placeholder([2, 3, 2]), g.placeholder([3, 2, 2]),
                                 inputWeight=W, descriptor=d)
    with pytest.raises(mg.DescriptorError, match="descriptor.activation"):
        g.singleGateRNN(x, R, inputWeight=W,
                        descriptor=mg.SingleGateRNNDescriptor(activation=11))
    with pytest.raises(mg.DescriptorError, match="descriptor"):
        g.singleGateRNN(x, R, inputWeight=W, descriptor=mg.GRUDescriptor())


def test_gradient_outputs_order_and_shapes():
    """Apple's order: source, recurrentWeight, inputWeight, bias ([1, 1, D*G*H]), initState,
    secondaryBias, each only when given."""
    g = mg.Graph()
    x, R, W = g.placeholder([3, 2, 5]), g.placeholder([2, 6, 2]), g.placeholder([12, 5])
    b, h0, b2 = g.placeholder([12]), g.placeholder([1, 2, 4]), g.placeholder([4])
    d = mg.GRUDescriptor(bidirectional=True)
    outs = g.GRUGradients(x, R, g.placeholder([3, 2, 4]), g.placeholder([3, 2, 12]),
                          g.placeholder([3, 2, 4]), inputWeight=W, bias=b, initState=h0,
                          secondaryBias=b2, descriptor=d)
    assert [o.shape for o in outs] == [[3, 2, 5], [2, 6, 2], [12, 5], [1, 1, 12], [1, 2, 4],
                                       [4]]
    outs = g.GRUGradients(g.placeholder([3, 2, 12]), R, g.placeholder([3, 2, 4]),
                          g.placeholder([3, 2, 12]), g.placeholder([3, 2, 4]), descriptor=d)
    assert [o.shape for o in outs] == [[3, 2, 12], [2, 6, 2]]
    sg = mg.SingleGateRNNDescriptor()
    outs = g.singleGateRNNGradients(x, g.placeholder([2, 2]), g.placeholder([3, 2, 2]),
                                    g.placeholder([3, 2, 2]), inputWeight=g.placeholder([2, 5]),
                                    bias=g.placeholder([2]), initState=g.placeholder([2, 2]),
                                    descriptor=sg)
    assert [o.shape for o in outs] == [[3, 2, 5], [2, 2], [2, 5], [1, 1, 2], [2, 2]]


def test_positional_arguments_are_those_every_overload_shares():
    """API.md rule 3: GRU(source, recurrentWeight, inputWeight, bias, *, ...) (every Swift GRU
    overload has inputWeight:bias:), GRUGradients' five leading ones, singleGateRNN's two,
    singleGateRNNGradients' four; the rest keyword-only."""
    import inspect

    def positional(fn):
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind == p.POSITIONAL_OR_KEYWORD][1:]

    assert positional(mg.Graph.GRU) == ["source", "recurrentWeight", "inputWeight", "bias"]
    assert positional(mg.Graph.GRUGradients) == ["source", "recurrentWeight", "sourceGradient",
                                                 "zState", "outputFwd"]
    assert positional(mg.Graph.singleGateRNN) == ["source", "recurrentWeight"]
    assert positional(mg.Graph.singleGateRNNGradients) == ["source", "recurrentWeight",
                                                           "sourceGradient", "zState"]


# ------------------------------------------------------------------------------ surface
HERE = Path(__file__).resolve().parent
COPY = HERE.parent / "data" / "MPSGRAPH_API_rnn.tsv"
SHARED = HERE.parents[1] / ".." / "shared" / "MPSGRAPH_API.tsv"


def _rows(path) -> list[dict]:
    return api_rows(path, lambda r: r["header"] == "MPSGraphRNNOps")


def test_the_rnn_copy_matches_the_shared_list():
    rows = _rows(COPY)
    assert len(rows) == 20
    if not SHARED.exists():
        pytest.skip("../shared/MPSGRAPH_API.tsv is not here")
    assert rows == _rows(SHARED)


@pytest.mark.parametrize("row", _rows(COPY), ids=lambda r: r["swift_signature"])
def test_every_rnn_swift_signature_is_a_graph_method_with_its_labels(row):
    sig = row["swift_signature"]
    name, labels = sig.split("(")[0], sig.split("(")[1].rstrip(")").split(":")[:-1]
    fn = getattr(mg.Graph, name)
    import inspect

    params = set(inspect.signature(fn).parameters)
    for lab in labels[1:]:
        assert lab in params, (sig, lab)


# ------------------------------------------------------------------------------ check suite
def test_check_gru_suite_passes_and_catches_a_wrong_gradient(monkeypatch, capsys):
    from mpsgraph import cli
    from mpsgraph.backends.numpy import KERNELS

    assert cli.main(["check", "--device", "cpu", "--suite", "gru"]) == 0
    out = capsys.readouterr().out
    for op in ("GRU", "GRUGradients", "singleGateRNN", "singleGateRNNGradients"):
        assert f"| {op} " in out
    good = KERNELS["GRUGradients"]

    def bad(*args):
        out = list(good(*args))
        out[1] = out[1] * np.float32(1.01)  # recurrentWeight gradient off by 1%
        return tuple(out)

    monkeypatch.setitem(KERNELS, "GRUGradients", bad)
    assert cli.main(["check", "--device", "cpu", "--suite", "gru"]) == 1
    assert "FAIL" in capsys.readouterr().out


# ------------------------------------------------------------------------------ native path
NATIVE_CASES = [
    (3, dict(resetGateFirst=True, resetAfter=True), dict(b2=True)),
    (3, dict(resetGateFirst=True, resetAfter=True, bidirectional=True),
     dict(bidirectional=True, b2=True, h0="1NDH")),
    (3, dict(resetGateFirst=True, resetAfter=True, reverse=True), dict(h0="none", has_b=False)),
    (1, dict(activation=A.tanh), dict()),
    (1, dict(activation=A.relu, bidirectional=True), dict(bidirectional=True, h0="DH")),
    (1, dict(activation=A.tanh, reverse=True), dict()),
    # options torch's op cannot express: the shared recurrence runs instead
    (3, dict(resetAfter=True), dict(b2=True)),
    (1, dict(activation=A.sigmoid), dict(mask="state")),
]


@pytest.mark.parametrize("device", [p for p in CPU_DEVICES if p.values[0] != "cpu"])
@pytest.mark.parametrize("gates,dkw,ckw", NATIVE_CASES)
def test_native_torch_path_matches_the_oracle(rng, monkeypatch, gates, dkw, ckw, device):
    """MPSGRAPH_RNN_NATIVE=1: inference forwards with torch's conventions go through torch.gru /
    torch.rnn_tanh / torch.rnn_relu (cuDNN on CUDA); the result is the same function."""
    from mpsgraph.backends.torch import gru_route

    monkeypatch.setenv("MPSGRAPH_RNN_NATIVE", "1")
    used = []
    real = gru_route.cudnn_forward

    def spy(*args):
        used.append(True)
        return real(*args)

    monkeypatch.setattr(gru_route, "cudnn_forward", spy)
    case = Case(rng, gates, **ckw)
    desc = (mg.GRUDescriptor if gates == 3 else mg.SingleGateRNNDescriptor)(**dkw)
    g = mg.Graph()
    ph = {k: g.placeholder(list(v.shape), mg.float32, name=k) for k, v in case.user.items()}
    opt = {k: t for k, t in ph.items() if k not in ("source", "recurrentWeight")}
    op = g.GRU if gates == 3 else g.singleGateRNN
    state = op(ph["source"], ph["recurrentWeight"], descriptor=desc, **opt)[0]
    out = g.run({ph[k]: v.astype(np.float32) for k, v in case.user.items()}, [state],
                device=_dev(device))
    got = out[state].numpy().astype(np.float64)
    np.testing.assert_allclose(got, case.oracle(desc, grads=False)[0], **F32_TOL)
    expressible = not (gates == 3 and dkw.get("resetGateFirst") is None) and \
        ckw.get("mask") is None and dkw.get("activation") != A.sigmoid
    assert used == ([True] if expressible else [])


ROUTE_CASES = NATIVE_CASES[:6] + [
    (3, dict(resetGateFirst=True, resetAfter=True, reverse=True, bidirectional=True),
     dict(bidirectional=True, b2=True, sg=True, h0="DH")),
    (1, dict(activation=A.relu), dict(sg=True, h0="1NDH", has_b=False)),
]


def _route_spies(monkeypatch):
    from mpsgraph.backends.torch import gru_route

    calls = {"forward": 0, "backward": 0}
    fwd, bwd = gru_route.cudnn_forward, gru_route.cudnn_backward

    def f(*a):
        calls["forward"] += 1
        return fwd(*a)

    def b(*a):
        calls["backward"] += 1
        return bwd(*a)

    monkeypatch.setattr(gru_route, "cudnn_forward", f)
    monkeypatch.setattr(gru_route, "cudnn_backward", b)
    return calls


@pytest.mark.parametrize("device", [p for p in CPU_DEVICES if p.values[0] != "cpu"])
@pytest.mark.parametrize("gates,dkw,ckw", ROUTE_CASES)
def test_torch_rnn_route_training_step_matches_the_oracle(rng, monkeypatch, gates, dkw, ckw,
                                                          device):
    """MPSGRAPH_GRU_KERNEL=cudnn: a training step (forward + Gradients op, zState read by the
    Gradients op alone) runs through torch.gru / rnn_tanh / rnn_relu under autograd (cuDNN on
    CUDA; gru_route.py), every gradient (stateGradient too) against the float64 oracle."""
    monkeypatch.setenv("MPSGRAPH_GRU_KERNEL", "cudnn")
    calls = _route_spies(monkeypatch)
    case = Case(rng, gates, **ckw)
    desc = (mg.GRUDescriptor if gates == 3 else mg.SingleGateRNNDescriptor)(training=True,
                                                                             **dkw)
    got = case.run(desc, device, with_zstate=False)
    want = case.oracle(desc)
    np.testing.assert_allclose(got[0], want[0], **F32_TOL)
    for k, gk in enumerate(got[1:]):
        np.testing.assert_allclose(gk, want[2 + k],
                                   err_msg=f"gradient {k}", rtol=1e-4, atol=1e-5)
    assert calls == {"forward": 1, "backward": 1}


@pytest.mark.parametrize("device", [p for p in CPU_DEVICES if p.values[0] != "cpu"])
def test_torch_rnn_route_not_taken_when_zstate_is_read(rng, monkeypatch, device):
    """A training GRU whose zState is a target (or read by another op) keeps our path: the
    zState must hold the gates. The same step with only the Gradients op reading it takes the
    route."""
    monkeypatch.setenv("MPSGRAPH_GRU_KERNEL", "cudnn")
    calls = _route_spies(monkeypatch)
    case = Case(rng, 3, b2=True)
    desc = mg.GRUDescriptor(training=True, resetGateFirst=True, resetAfter=True)
    got = case.run(desc, device)  # targets: state, zState, every gradient
    for i, (a, b) in enumerate(zip(got, case.oracle(desc))):
        np.testing.assert_allclose(a, b, err_msg=f"output {i}", **F32_TOL)
    assert calls == {"forward": 0, "backward": 0}


def test_torch_rnn_route_backward_declines_other_inputs():
    """The Gradients op given a placeholder zState of other inputs gets None from the route
    (and then recomputes the zState on our path)."""
    torch = pytest.importorskip("torch")
    from mpsgraph.backends.torch import gru_route
    from mpsgraph.ops.rnn import GatedRNNAttrs

    T, N, I, H = 3, 2, 4, 5
    a = GatedRNNAttrs(1, False, False, False, False, False, (2,), T, N, H, 2, False,
                      ("source", "recurrentWeight", "inputWeight"),
                      (("recurrentWeight", (H, H)), ("inputWeight", (H, I))))
    x, R, W = torch.randn(T, N, I), torch.randn(H, H) * 0.3, torch.randn(H, I) * 0.3
    state, zs = gru_route.cudnn_forward(x, R, W, None, None, None, a)
    rec = gru_route.record(zs)
    assert rec is not None and zs.shape == (T, N, H) and zs.untyped_storage().nbytes() <= 4
    ds = torch.randn(T, N, H)
    assert gru_route.cudnn_backward(rec, x.clone(), R, ds, None, W, None, None, None,
                                    a) is None
    g = gru_route.cudnn_backward(rec, x, R, ds, None, W, None, None, None, a)
    xr, Rr, Wr = (t.clone().double().requires_grad_() for t in (x, R, W))
    hs, h = [], torch.zeros(N, H, dtype=torch.float64)
    for t in range(T):
        h = torch.tanh(xr[t] @ Wr.t() + h @ Rr.t())
        hs.append(h)
    y = torch.stack(hs)
    torch.testing.assert_close(state.double(), y.detach(), rtol=1e-5, atol=1e-6)
    y.backward(ds.double())
    for got, leaf in zip(g, (xr, Rr, Wr)):
        torch.testing.assert_close(got.double(), leaf.grad, rtol=1e-4, atol=1e-5)
