"""The NumPy LSTM kernels (backends/numpy/rnn.py) against independent references.

* kernel vs the float64 oracle (tests/oracles/lstm_f64.py), forward and backward, over a sweep of
  direction x forgetGateLast x peephole x mask, cycling through activation assignments (each of
  the five activations at each of the five positions), missing W/b/h0/c0 and the three forms of
  the incoming state/cell gradients;
* the oracle's backward vs central differences of the oracle's forward (<u, J v> = <J^T u, v>);
* kernel and oracle vs torch.nn.LSTM in float64 (default gates; also reverse by flipping time and
  forgetGateLast by permuting weight blocks);
* float32 / float16 / bfloat16 at tolerances that follow from "compute in float32, round once";
* T = 0, N = 0, NaN propagation, the hardSigmoid constants, inputs left untouched.

Arrays are in the kernels' canonical forms (SPEC 3.4): R [D,4H,H], W [D*4H,I], b [D*4H],
h0/c0 [N,D*H], peephole [D,4H], mask [N,D*H] or [T,N,D*H].
"""

from __future__ import annotations

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest

from mpsgraph.backends.numpy import rnn
from oracles import gradcheck
from oracles import lstm_f64 as oracle

NONE, RELU, TANH, SIGMOID, HARD_SIGMOID = range(5)
DEFAULT_ACTS = (SIGMOID, SIGMOID, TANH, SIGMOID, TANH)
# Position j of rotation k gets activation (k + j) % 5: every activation at every position.
ROTATIONS = [tuple((k + j) % 5 for j in range(5)) for k in range(5)]
ACT_CHOICES = [DEFAULT_ACTS, *ROTATIONS]
DIRECTIONS = {"fwd": (False, False), "rev": (True, False), "bi": (False, True),
              "bi-rev": (True, True)}                      # name -> (reverse, bidirectional)
MASKS = ("nomask", "mask-state", "mask-seq")
# Which of W, b, h0, c0 are passed: all 16 subsets.
PRESENT = [dict(zip(("W", "b", "h0", "c0"), bits)) for bits in itertools.product((1, 0), repeat=4)]
# Incoming gradients besides dstate: state-shaped final-state/-cell forms or the per-step form.
GRAD_FORMS = ("none", "dh", "dc", "dh+dc", "dcseq", "dh+dcseq")

T_, N_, I_, H_ = 4, 3, 5, 3


def _case_params():
    cases = []
    grid = itertools.product(DIRECTIONS, (False, True), (False, True), MASKS)
    for n, (direction, fgl, peep, mask) in enumerate(grid):
        acts = ACT_CHOICES[n % len(ACT_CHOICES)]
        present = PRESENT[(5 * n) % len(PRESENT)]
        grads = GRAD_FORMS[(n // 2) % len(GRAD_FORMS)]
        missing = "".join(k for k, v in present.items() if not v) or "all"
        cid = (f"{direction}-{'fgl' if fgl else 'ifzo'}-{'peep' if peep else 'nopeep'}-{mask}-"
               f"acts{''.join(map(str, acts))}-missing_{missing}-{grads}")
        cases.append(pytest.param(direction, fgl, peep, mask, acts, present, grads, id=cid))
    return cases


CASES = _case_params()


def test_sweep_covers_every_choice():
    seen = {"acts": set(), "present": set(), "grads": set(), "pos": set()}
    for p in CASES:
        _, _, _, _, acts, present, grads = p.values
        seen["acts"].add(acts)
        seen["present"].add(tuple(present.values()))
        seen["grads"].add(grads)
        seen["pos"].update(enumerate(acts))
    assert seen["acts"] == set(ACT_CHOICES)
    assert len(seen["present"]) == 16
    assert seen["grads"] == set(GRAD_FORMS)
    assert seen["pos"] == set(itertools.product(range(5), range(5)))


def make_problem(rng, *, direction="fwd", fgl=False, peep=False, mask="nomask",
                 acts=DEFAULT_ACTS, present=None, grads="dh+dc", T=T_, N=N_, I=I_, H=H_):
    """Random float64 inputs (canonical) and keyword flags for one configuration."""
    reverse, bi = DIRECTIONS[direction]
    D = 2 if bi else 1
    G = 4 * H
    present = present or dict(W=1, b=1, h0=1, c0=1)
    # Per-gate offsets keep the gates asymmetric so a permuted gate order cannot pass.
    gate_shift = np.repeat([0.3, -0.2, 0.1, 0.5], H)
    a = {}
    if present["W"]:
        a["x"] = rng.standard_normal((T, N, I))
        a["W"] = rng.standard_normal((D * G, I)) * 0.5
    else:
        a["x"] = rng.standard_normal((T, N, D * G)) + np.tile(gate_shift, D)
        a["W"] = None
    a["R"] = rng.standard_normal((D, G, H)) * 0.5
    a["b"] = rng.standard_normal(D * G) * 0.3 + np.tile(gate_shift, D) if present["b"] else None
    a["h0"] = rng.standard_normal((N, D * H)) if present["h0"] else None
    a["c0"] = rng.standard_normal((N, D * H)) if present["c0"] else None
    mshape = {"nomask": None, "mask-state": (N, D * H), "mask-seq": (T, N, D * H)}[mask]
    # dropout-like: zeros and scales
    a["mask"] = None if mshape is None else (rng.uniform(0.5, 1.5, mshape)
                                             * (rng.uniform(size=mshape) > 0.25))
    a["peephole"] = rng.standard_normal((D, G)) * 0.5 if peep else None
    g = {"dstate": rng.standard_normal((T, N, D * H)),
         "dh_final": rng.standard_normal((N, D * H)) if "dh" in grads else None,
         "dc_final": rng.standard_normal((N, D * H)) if grads in ("dc", "dh+dc") else None,
         "dcell_seq": rng.standard_normal((T, N, D * H)) if "dcseq" in grads else None}
    flags = dict(reverse=reverse, bidirectional=bi, forget_gate_last=fgl, activations=acts)
    return a, g, flags


def _needs(a):
    return dict(need_b=a["b"] is not None, need_peephole=a["peephole"] is not None,
                need_h0=a["h0"] is not None, need_c0=a["c0"] is not None)


def run_kernel(a, g, flags, fwd_out=None):
    """Kernel forward; then the backward on `fwd_out` (default: the kernel's own outputs)."""
    state, cell, zs = rnn.lstm_forward(a["x"], a["R"], a["W"], a["b"], a["h0"], a["c0"],
                                       a["mask"], a["peephole"], **flags)
    _, fcell, fzs = fwd_out if fwd_out is not None else (state, cell, zs)
    grads = rnn.lstm_backward(a["x"], a["R"], g["dstate"], fzs, fcell, a["W"], a["b"], a["h0"],
                              a["c0"], a["mask"], a["peephole"], g["dh_final"], g["dc_final"],
                              g["dcell_seq"], **flags, **_needs(a))
    return (state, cell, zs), grads


def run_oracle(a, g, flags, fwd_out=None):
    f64 = {k: None if v is None else np.asarray(v, np.float64) for k, v in a.items()}
    out = oracle.lstm_ref(f64["x"], f64["R"], f64["W"], f64["b"], f64["h0"], f64["c0"],
                          f64["mask"], f64["peephole"], **flags)
    _, fcell, fzs = fwd_out if fwd_out is not None else out
    grads = oracle.lstm_grad_ref(f64["x"], f64["R"], g["dstate"], fzs, fcell, f64["W"],
                                 f64["b"], f64["h0"], f64["c0"], f64["mask"], f64["peephole"],
                                 g["dh_final"], g["dc_final"], g["dcell_seq"], **flags)
    return out, grads


def assert_close(actual, expected, rtol, atol_rel, what=""):
    """allclose with an absolute floor relative to the largest reference magnitude."""
    expected = np.asarray(expected, np.float64)
    actual_f = np.asarray(actual).astype(np.float64)
    assert actual_f.shape == expected.shape, (what, actual_f.shape, expected.shape)
    finite = np.isfinite(expected)
    scale = float(np.max(np.abs(expected[finite]), initial=1.0))
    np.testing.assert_allclose(actual_f, expected, rtol=rtol, atol=atol_rel * scale,
                               err_msg=what)


def compare_all(k_fwd, k_grads, o_fwd, o_grads, rtol, atol_rel):
    for name, ka, oa in zip(("state", "cell", "zState"), k_fwd, o_fwd):
        assert_close(ka, oa, rtol, atol_rel, name)
    assert set(k_grads) == set(o_grads)
    for key, og in o_grads.items():
        if og is None:
            assert k_grads[key] is None, key
        else:
            assert_close(k_grads[key], og, rtol, atol_rel, key)


# ----------------------------------------------------------------------------------------------
# kernel vs oracle, float64


@pytest.mark.parametrize("direction, fgl, peep, mask, acts, present, grads", CASES)
def test_kernel_matches_oracle_f64(rng, direction, fgl, peep, mask, acts, present, grads):
    a, g, flags = make_problem(rng, direction=direction, fgl=fgl, peep=peep, mask=mask,
                               acts=acts, present=present, grads=grads)
    before = {k: None if v is None else v.copy() for k, v in {**a, **g}.items()}
    o_fwd, o_grads = run_oracle(a, g, flags)
    k_fwd, k_grads = run_kernel(a, g, flags, fwd_out=o_fwd)
    compare_all(k_fwd, k_grads, o_fwd, o_grads, rtol=1e-10, atol_rel=1e-12)
    # the backward on the kernel's own forward outputs agrees too
    _, k_grads2 = run_kernel(a, g, flags)
    for key, og in o_grads.items():
        if og is not None:
            assert_close(k_grads2[key], og, 1e-10, 1e-12, key)
    for key, v in {**a, **g}.items():                      # inputs are not written to
        if v is not None:
            np.testing.assert_array_equal(v, before[key], err_msg=key)


@pytest.mark.parametrize("acts", ACT_CHOICES, ids=lambda a: "acts" + "".join(map(str, a)))
@pytest.mark.parametrize("fgl", [False, True], ids=["ifzo", "fgl"])
def test_kernel_matches_oracle_every_activation_bidirectional(rng, acts, fgl):
    a, g, flags = make_problem(rng, direction="bi", fgl=fgl, peep=True, mask="mask-seq",
                               acts=acts, grads="dh+dcseq", T=5, N=2, H=4)
    o_fwd, o_grads = run_oracle(a, g, flags)
    k_fwd, k_grads = run_kernel(a, g, flags, fwd_out=o_fwd)
    compare_all(k_fwd, k_grads, o_fwd, o_grads, rtol=1e-10, atol_rel=1e-12)


def test_kernel_matches_oracle_longer_and_wider(rng):
    a, g, flags = make_problem(rng, direction="bi", peep=True, mask="mask-state", T=12, N=5,
                               I=7, H=6)
    o_fwd, o_grads = run_oracle(a, g, flags)
    k_fwd, k_grads = run_kernel(a, g, flags, fwd_out=o_fwd)
    compare_all(k_fwd, k_grads, o_fwd, o_grads, rtol=1e-10, atol_rel=1e-12)


# ----------------------------------------------------------------------------------------------
# oracle backward vs finite differences of the oracle forward

FD_CASES = CASES[::3]


@pytest.mark.parametrize("direction, fgl, peep, mask, acts, present, grads", FD_CASES)
def test_oracle_backward_matches_finite_differences(rng, direction, fgl, peep, mask, acts,
                                                    present, grads):
    a, g, flags = make_problem(rng, direction=direction, fgl=fgl, peep=peep, mask=mask,
                               acts=acts, present=present, grads=grads)
    names = [k for k in ("x", "R", "W", "b", "h0", "c0", "peephole") if a[k] is not None]
    per_step_cell = grads in ("dcseq", "dh+dcseq")
    T, N = a["x"].shape[:2]
    DH = g["dstate"].shape[-1]

    def forward(*args):
        kw = dict(a, **dict(zip(names, args)))
        state, cell, _ = oracle.lstm_ref(kw["x"], kw["R"], kw["W"], kw["b"], kw["h0"], kw["c0"],
                                         kw["mask"], kw["peephole"], **flags)
        if per_step_cell:              # loss = <dstate, state> + <dcell_seq, cell> (+ <dh, h_T>)
            hT, _ = oracle.final_state_and_cell(state, cell, reverse=flags["reverse"],
                                                bidirectional=flags["bidirectional"])
            return np.concatenate([state.ravel(), cell.ravel(), hT.ravel()])
        hT, cT = oracle.final_state_and_cell(state, cell, reverse=flags["reverse"],
                                             bidirectional=flags["bidirectional"])
        return np.concatenate([state.ravel(), hT.ravel(), cT.ravel()])

    def vjp(u, *args):
        kw = dict(a, **dict(zip(names, args)))
        n_seq = T * N * DH
        ds = u[:n_seq].reshape(T, N, DH)
        if per_step_cell:
            dcs, dh = u[n_seq:2 * n_seq].reshape(T, N, DH), u[2 * n_seq:].reshape(N, DH)
            dc = None
        else:
            dh, dc = u[n_seq:n_seq + N * DH].reshape(N, DH), u[n_seq + N * DH:].reshape(N, DH)
            dcs = None
        _, cell, zs = oracle.lstm_ref(kw["x"], kw["R"], kw["W"], kw["b"], kw["h0"], kw["c0"],
                                      kw["mask"], kw["peephole"], **flags)
        gr = oracle.lstm_grad_ref(kw["x"], kw["R"], ds, zs, cell, kw["W"], kw["b"], kw["h0"],
                                  kw["c0"], kw["mask"], kw["peephole"], dh, dc, dcs, **flags)
        key = {"x": "source", "R": "recurrentWeight", "W": "inputWeight", "b": "bias",
               "h0": "initState", "c0": "initCell", "peephole": "peephole"}
        return [gr[key[n]] for n in names]

    gradcheck.check_vjp(forward, [a[n] for n in names], vjp, eps=1e-6, trials=2, rtol=1e-7,
                        atol=1e-9, seed=int(rng.integers(1 << 30)))


# ----------------------------------------------------------------------------------------------
# torch.nn.LSTM (float64) as an external oracle (SPEC 3.9)


def _torch_lstm(torch, a, bi, H):
    """An nn.LSTM holding the weights of problem `a` (R, W, b split into bias_ih/bias_hh)."""
    I = a["x"].shape[-1]
    G = 4 * H
    m = torch.nn.LSTM(I, H, bidirectional=bi).double()
    with torch.no_grad():
        for d, sfx in enumerate(["", "_reverse"][: 2 if bi else 1]):
            getattr(m, "weight_ih_l0" + sfx).copy_(torch.from_numpy(a["W"][d * G:(d + 1) * G]))
            getattr(m, "weight_hh_l0" + sfx).copy_(torch.from_numpy(a["R"][d]))
            b = a["b"][d * G:(d + 1) * G]
            getattr(m, "bias_ih_l0" + sfx).copy_(torch.from_numpy(0.25 * b))
            getattr(m, "bias_hh_l0" + sfx).copy_(torch.from_numpy(0.75 * b))
    return m


def _to_torch_state(torch, s, D, H):
    """[N, D*H] -> [D, N, H] (the inverse of SPEC 3.9's transpose(0, 1).reshape(N, 2H))."""
    N = s.shape[0]
    return torch.from_numpy(np.ascontiguousarray(s.reshape(N, D, H).transpose(1, 0, 2)))


def _from_torch_state(t, N):
    return t.detach().numpy().transpose(1, 0, 2).reshape(N, -1)


@pytest.mark.parametrize("bi", [False, True], ids=["uni", "bi"])
def test_kernel_and_oracle_match_torch_lstm(rng, bi):
    torch = pytest.importorskip("torch")
    T, N, I, H = 5, 3, 4, 3
    D = 2 if bi else 1
    a, g, flags = make_problem(rng, direction="bi" if bi else "fwd", grads="dh+dc",
                               T=T, N=N, I=I, H=H)
    m = _torch_lstm(torch, a, bi, H)
    x = torch.from_numpy(a["x"]).requires_grad_()
    h0 = _to_torch_state(torch, a["h0"], D, H).requires_grad_()
    c0 = _to_torch_state(torch, a["c0"], D, H).requires_grad_()
    out, (hn, cn) = m(x, (h0, c0))
    loss = ((out * torch.from_numpy(g["dstate"])).sum()
            + (hn * _to_torch_state(torch, g["dh_final"], D, H)).sum()
            + (cn * _to_torch_state(torch, g["dc_final"], D, H)).sum())
    loss.backward()
    G = 4 * H
    expected_grads = {
        "source": x.grad.numpy(),
        "recurrentWeight": np.stack([getattr(m, "weight_hh_l0" + s).grad.numpy()
                                     for s in ["", "_reverse"][:D]]),
        "inputWeight": np.concatenate([getattr(m, "weight_ih_l0" + s).grad.numpy()
                                       for s in ["", "_reverse"][:D]]),
        "bias": np.concatenate([getattr(m, "bias_ih_l0" + s).grad.numpy()
                                for s in ["", "_reverse"][:D]]),
        "peephole": None,
        "initState": _from_torch_state(h0.grad, N),
        "initCell": _from_torch_state(c0.grad, N),
    }
    for d, s in enumerate(["", "_reverse"][:D]):      # torch's two biases get one gradient
        np.testing.assert_allclose(getattr(m, "bias_hh_l0" + s).grad.numpy(),
                                   expected_grads["bias"][d * G:(d + 1) * G], rtol=1e-12)
    for fwd, grads in (run_kernel(a, g, flags), run_oracle(a, g, flags)):
        state, cell, _ = fwd
        assert_close(state, out.detach().numpy(), 1e-10, 1e-12, "state")
        hT, cT = oracle.final_state_and_cell(state, cell, reverse=False, bidirectional=bi)
        assert_close(hT, _from_torch_state(hn, N), 1e-10, 1e-12, "h_n")
        assert_close(cT, _from_torch_state(cn, N), 1e-10, 1e-12, "c_n")
        for key, exp in expected_grads.items():
            if exp is None:
                assert grads[key] is None
            else:
                assert_close(grads[key], exp, 1e-10, 1e-12, key)


def test_reverse_matches_torch_on_flipped_time(rng):
    """reverse=True is a forward LSTM over x[::-1] with outputs flipped back (time-aligned)."""
    torch = pytest.importorskip("torch")
    a, g, flags = make_problem(rng, direction="rev", grads="dh+dc", T=6, N=2, I=3, H=4)
    m = _torch_lstm(torch, a, False, 4)
    x = torch.from_numpy(a["x"][::-1].copy()).requires_grad_()
    out, (hn, cn) = m(x, (_to_torch_state(torch, a["h0"], 1, 4),
                          _to_torch_state(torch, a["c0"], 1, 4)))
    loss = ((out * torch.from_numpy(g["dstate"][::-1].copy())).sum()
            + (hn[0] * torch.from_numpy(g["dh_final"])).sum()
            + (cn[0] * torch.from_numpy(g["dc_final"])).sum())
    loss.backward()
    (state, cell, _), grads = run_kernel(a, g, flags)
    assert_close(state, out.detach().numpy()[::-1], 1e-10, 1e-12, "state")
    assert_close(state[0], hn[0].detach().numpy(), 1e-10, 1e-12, "final state at t=0")
    assert_close(cell[0], cn[0].detach().numpy(), 1e-10, 1e-12, "final cell at t=0")
    assert_close(grads["source"], x.grad.numpy()[::-1], 1e-10, 1e-12, "source")
    assert_close(grads["recurrentWeight"][0], m.weight_hh_l0.grad.numpy(), 1e-10, 1e-12, "R")
    assert_close(grads["inputWeight"], m.weight_ih_l0.grad.numpy(), 1e-10, 1e-12, "W")


def test_forget_gate_last_matches_torch_with_permuted_blocks(rng):
    """[i, z, f, o] weights give torch's [i, f, g, o] LSTM after swapping blocks 1 and 2."""
    torch = pytest.importorskip("torch")
    H = 3
    a, g, flags = make_problem(rng, direction="fwd", fgl=True, grads="dh+dc", T=4, N=2, I=3,
                               H=H)
    perm = np.concatenate([np.arange(H), np.arange(2 * H, 3 * H), np.arange(H, 2 * H),
                           np.arange(3 * H, 4 * H)])                     # an involution
    torch_a = dict(a, W=a["W"][perm], R=a["R"][:, perm], b=a["b"][perm])
    m = _torch_lstm(torch, torch_a, False, H)
    out, _ = m(torch.from_numpy(a["x"]), (_to_torch_state(torch, a["h0"], 1, H),
                                          _to_torch_state(torch, a["c0"], 1, H)))
    (state, _, zs), _ = run_kernel(a, g, flags)
    assert_close(state, out.detach().numpy(), 1e-10, 1e-12, "state")
    # zState is in descriptor order: block 1 (z) is tanh-valued and can be negative
    assert (zs[..., H:2 * H] < 0).any() and (zs[..., 2 * H:3 * H] > 0).all()


# ----------------------------------------------------------------------------------------------
# reduced precision: computed in float32, rounded once

# (rtol, atol relative to the largest |value|): float32 compute error; for float16/bfloat16
# one rounding of the float32 result (half an ulp: 2^-11, 2^-8) plus float32 noise.
DTYPE_TOLS = {
    "float32": (np.float32, 2e-5, 2e-6),
    "float16": (np.float16, 2.0 ** -10, 1e-5),
    "bfloat16": (ml_dtypes.bfloat16, 2.0 ** -7, 1e-5),
}


@pytest.mark.parametrize("dtype_name", list(DTYPE_TOLS))
@pytest.mark.parametrize("direction, peep, mask, grads",
                         [("fwd", False, "nomask", "dh+dc"), ("bi", True, "mask-seq", "dh+dcseq"),
                          ("rev", True, "mask-state", "dc")])
def test_reduced_precision_matches_oracle(rng, dtype_name, direction, peep, mask, grads):
    dt, rtol, atol_rel = DTYPE_TOLS[dtype_name]
    a, g, flags = make_problem(rng, direction=direction, peep=peep, mask=mask, grads=grads,
                               T=6, N=3, I=5, H=4)
    # Inputs are representable in `dt`; the oracle sees the same values in float64.
    a = {k: None if v is None else v.astype(dt) for k, v in a.items()}
    g = {k: None if v is None else v.astype(dt) for k, v in g.items()}
    k_fwd, k_grads = run_kernel(a, g, flags)
    for arr in [*k_fwd, *(v for v in k_grads.values() if v is not None)]:
        assert arr.dtype == np.dtype(dt)
    o_fwd = oracle.lstm_ref(*(None if a[k] is None else a[k].astype(np.float64)
                              for k in ("x", "R", "W", "b", "h0", "c0", "mask", "peephole")),
                            **flags)
    for name, ka, oa in zip(("state", "cell", "zState"), k_fwd, o_fwd):
        assert_close(ka, oa, rtol, atol_rel, name)
    # the backward from the same (rounded) saved tensors
    saved = tuple(t.astype(np.float64) for t in k_fwd)
    g64 = {k: None if v is None else v.astype(np.float64) for k, v in g.items()}
    _, o_grads = run_oracle(a, g64, flags, fwd_out=saved)
    for key, og in o_grads.items():
        if og is not None:
            assert_close(k_grads[key], og, rtol, atol_rel, key)


def test_half_state_is_carried_in_float32(rng):
    """A long float16 run equals the float32 run rounded once (no per-step rounding)."""
    a, g, flags = make_problem(rng, T=40, N=2, I=3, H=4, grads="none")
    a16 = {k: None if v is None else v.astype(np.float16) for k, v in a.items()}
    a32 = {k: None if v is None else v.astype(np.float32) for k, v in a16.items()}
    out16 = rnn.lstm_forward(*(a16[k] for k in ("x", "R", "W", "b", "h0", "c0", "mask",
                                                 "peephole")), **flags)
    out32 = rnn.lstm_forward(*(a32[k] for k in ("x", "R", "W", "b", "h0", "c0", "mask",
                                                 "peephole")), **flags)
    for o16, o32 in zip(out16, out32):
        np.testing.assert_array_equal(o16, o32.astype(np.float16))


# ----------------------------------------------------------------------------------------------
# edge cases


@pytest.mark.parametrize("direction", ["fwd", "rev", "bi"])
@pytest.mark.parametrize("with_w", [True, False], ids=["W", "noW"])
@pytest.mark.parametrize("grads", ["dh+dc", "dh+dcseq", "none"])
def test_zero_time_steps(rng, direction, with_w, grads):
    a, g, flags = make_problem(rng, direction=direction, peep=True, mask="mask-seq",
                               present=dict(W=int(with_w), b=1, h0=1, c0=1), grads=grads, T=0)
    (state, cell, zs), gr = run_kernel(a, g, flags)
    D = 2 if flags["bidirectional"] else 1
    assert state.shape == cell.shape == (0, N_, D * H_) and zs.shape == (0, N_, D * 4 * H_)
    assert gr["source"].shape == a["x"].shape
    for key, ref in (("recurrentWeight", a["R"]), ("inputWeight", a["W"]), ("bias", a["b"]),
                     ("peephole", a["peephole"])):
        if ref is None:
            assert gr[key] is None
        else:
            np.testing.assert_array_equal(gr[key], np.zeros_like(ref))
    zeros = np.zeros((N_, D * H_))
    np.testing.assert_array_equal(gr["initState"], zeros if g["dh_final"] is None
                                  else g["dh_final"])
    np.testing.assert_array_equal(gr["initCell"], zeros if g["dc_final"] is None
                                  else g["dc_final"])
    _, o_grads = run_oracle(a, g, flags)
    compare_all((state, cell, zs), gr, (state, cell, zs), o_grads, 0, 0)


@pytest.mark.parametrize("direction", ["fwd", "bi"])
@pytest.mark.parametrize("with_w", [True, False], ids=["W", "noW"])
def test_zero_batch(rng, direction, with_w):
    a, g, flags = make_problem(rng, direction=direction, peep=True, mask="mask-state",
                               present=dict(W=int(with_w), b=1, h0=1, c0=1), N=0)
    (state, cell, zs), gr = run_kernel(a, g, flags)
    D = 2 if flags["bidirectional"] else 1
    assert state.shape == (T_, 0, D * H_) and zs.shape == (T_, 0, D * 4 * H_)
    assert gr["source"].shape == a["x"].shape
    assert gr["initState"].shape == gr["initCell"].shape == (0, D * H_)
    for key in ("recurrentWeight", "inputWeight", "bias", "peephole"):
        if gr[key] is not None:
            assert not gr[key].any(), key


@pytest.mark.parametrize("direction", ["fwd", "rev", "bi"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_propagates(rng, direction, dtype):
    """A NaN in x[1] of batch row 0 poisons exactly what the oracle says (the other batch rows
    stay finite in the forward); no warning, no exception."""
    a, g, flags = make_problem(rng, direction=direction, peep=True, mask="mask-seq")
    a["x"][1, 0, 0] = np.nan
    a = {k: None if v is None else v.astype(dtype) for k, v in a.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k_fwd, k_grads = run_kernel(a, g, flags)
    o_fwd, o_grads = run_oracle(a, g, flags)
    state = k_fwd[0]
    assert np.isnan(state[1, 0]).any() and np.isfinite(state[:, 1:]).all()
    for ka, oa in zip(k_fwd, o_fwd):
        np.testing.assert_array_equal(np.isnan(ka), np.isnan(oa))
    for key, og in o_grads.items():
        if og is not None:
            np.testing.assert_array_equal(np.isnan(k_grads[key]), np.isnan(og), err_msg=key)
    assert np.isnan(k_grads["recurrentWeight"]).any()


def test_hard_sigmoid_is_clip_02a_plus_05():
    """Pins SPEC 3.1's resolution (ONNX/Keras constants, not PyTorch's a/6 + 1/2)."""
    a_vals = np.array([-3.0, -2.5, -1.0, 0.0, 1.0, 2.5, 3.0])
    x = np.tile(a_vals[None, :, None], (1, 1, 4))                       # all gates see a
    R = np.zeros((1, 4, 1))
    acts = (HARD_SIGMOID,) * 5
    state, cell, zs = rnn.lstm_forward(x, R, reverse=False, bidirectional=False,
                                       forget_gate_last=False, activations=acts)
    hs = np.clip(0.2 * a_vals + 0.5, 0.0, 1.0)
    np.testing.assert_allclose(zs[0], np.repeat(hs[:, None], 4, axis=1), rtol=1e-15)
    np.testing.assert_allclose(cell[0, :, 0], hs * hs, rtol=1e-15)       # f*0 + i*z
    np.testing.assert_allclose(state[0, :, 0], hs * np.clip(0.2 * hs * hs + 0.5, 0, 1),
                               rtol=1e-15)
