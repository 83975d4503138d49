"""Float64 LSTM oracle written straight from SPEC.md 3.5 (forward) and 3.7 (backward).

Plain loops: one direction at a time, one time step at a time, one gate at a time. No mpsgraph
import and nothing shared with the kernels; meant to be obviously correct, not fast.

Canonical arguments (the kernels' form), T time, N batch, I input, H hidden, D directions:
  x [T,N,I] ([T,N,D*4H] when W is None), R [D,4H,H], W [D*4H,I], b [D*4H], h0/c0 [N,D*H],
  mask [N,D*H] or [T,N,D*H], peephole [D,4H]; activations = (f_i, f_f, f_z, f_o, g) as
  RNNActivation ints: 0 none, 1 relu, 2 tanh, 3 sigmoid, 4 hardSigmoid.
"""

from __future__ import annotations

import numpy as np


def act(kind, a):
    """SPEC 3.1, f(a)."""
    if kind == 0:
        return a.copy()
    if kind == 1:
        return np.maximum(a, 0.0)
    if kind == 2:
        return np.tanh(a)
    if kind == 3:
        with np.errstate(over="ignore"):                 # exp(-a) = inf gives sigmoid 0
            return 1.0 / (1.0 + np.exp(-a))
    if kind == 4:
        return np.clip(0.2 * a + 0.5, 0.0, 1.0)
    raise ValueError(kind)


def act_grad_from_output(kind, y):
    """SPEC 3.1, f'(a) written with y = f(a)."""
    if kind == 0:
        return np.ones_like(y)
    if kind == 1:
        return np.where(y > 0, 1.0, 0.0)
    if kind == 2:
        return 1.0 - y * y
    if kind == 3:
        return y * (1.0 - y)
    if kind == 4:
        return np.where((y > 0) & (y < 1), 0.2, 0.0)
    raise ValueError(kind)


def _f64(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


def _gate_names(forget_gate_last):
    return ["i", "z", "f", "o"] if forget_gate_last else ["i", "f", "z", "o"]


def _direction_setup(d, T, N, H, R, W, b, h0, c0, peephole, bidirectional, reverse):
    """Everything direction d reads (SPEC 3.5 'bidirectional')."""
    G = 4 * H
    rev = (d == 1) if bidirectional else reverse
    Rd = R[d]
    Wd = None if W is None else W[d * G:(d + 1) * G]
    bd = np.zeros(G) if b is None else b[d * G:(d + 1) * G]
    hd = np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H]
    cd = np.zeros((N, H)) if c0 is None else c0[:, d * H:(d + 1) * H]
    pd = np.zeros(G) if peephole is None else peephole[d]
    steps = list(range(T - 1, -1, -1)) if rev else list(range(T))
    return rev, Rd, Wd, bd, hd, cd, pd, steps


def _mask_at(mask, t, N, d, H):
    if mask is None:
        return np.ones((N, H))
    m = mask[t] if mask.ndim == 3 else mask
    return m[:, d * H:(d + 1) * H]


def lstm_ref(x, R, W=None, b=None, h0=None, c0=None, mask=None, peephole=None, *,
             reverse, bidirectional, forget_gate_last, activations):
    """Returns (state [T,N,D*H], cell [T,N,D*H], zState [T,N,D*4H]) in float64."""
    x, R, W, b, h0, c0, mask, peephole = map(_f64, (x, R, W, b, h0, c0, mask, peephole))
    T, N = x.shape[0], x.shape[1]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    G = 4 * H
    names = _gate_names(forget_gate_last)
    gate_act = dict(zip(["i", "f", "z", "o"], activations[:4]))
    g_act = activations[4]
    state = np.zeros((T, N, D * H))
    cell = np.zeros((T, N, D * H))
    zstate = np.zeros((T, N, D * G))
    for d in range(D):
        rev, Rd, Wd, bd, h, c, pd, steps = _direction_setup(
            d, T, N, H, R, W, b, h0, c0, peephole, bidirectional, reverse)
        for t in steps:
            if Wd is not None:
                xp = x[t] @ Wd.T + bd
            else:
                xp = x[t][:, d * G:(d + 1) * G] + bd
            m = _mask_at(mask, t, N, d, H)
            a = xp + (h * m) @ Rd.T
            for k in range(4):
                a[:, k * H:(k + 1) * H] += pd[k * H:(k + 1) * H] * c
            gate = {}
            for k, name in enumerate(names):
                gate[name] = act(gate_act[name], a[:, k * H:(k + 1) * H])
            c = gate["f"] * c + gate["i"] * gate["z"]
            h = gate["o"] * act(g_act, c)
            state[t, :, d * H:(d + 1) * H] = h
            cell[t, :, d * H:(d + 1) * H] = c
            for k, name in enumerate(names):
                zstate[t, :, d * G + k * H:d * G + (k + 1) * H] = gate[name]
    return state, cell, zstate


def lstm_grad_ref(x, R, dstate, zstate, cell, W=None, b=None, h0=None, c0=None, mask=None,
                  peephole=None, dh_final=None, dc_final=None, dcell_seq=None, *,
                  reverse, bidirectional, forget_gate_last, activations):
    """SPEC 3.7 backward equations, step by step. Returns the dict of the kernel's keys; an
    entry is None when its input is None (dx, dR always present)."""
    (x, R, dstate, zstate, cell, W, b, h0, c0, mask, peephole, dh_final, dc_final,
     dcell_seq) = map(_f64, (x, R, dstate, zstate, cell, W, b, h0, c0, mask, peephole,
                             dh_final, dc_final, dcell_seq))
    T, N = x.shape[0], x.shape[1]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    G = 4 * H
    names = _gate_names(forget_gate_last)
    gate_act = dict(zip(["i", "f", "z", "o"], activations[:4]))
    g_act = activations[4]
    dxp = np.zeros((T, N, D * G))          # dL/da for every step
    dR = np.zeros((D, G, H))
    dp = np.zeros((D, G))
    dh0 = np.zeros((N, D * H))
    dc0 = np.zeros((N, D * H))
    for d in range(D):
        rev, Rd, Wd, bd, hinit, cinit, pd, steps = _direction_setup(
            d, T, N, H, R, W, b, h0, c0, peephole, bidirectional, reverse)
        sl = slice(d * H, (d + 1) * H)
        dh_carry = np.zeros((N, H)) if dh_final is None else dh_final[:, sl].copy()
        dc_carry = np.zeros((N, H)) if dc_final is None else dc_final[:, sl].copy()
        for pos in range(len(steps) - 1, -1, -1):
            t = steps[pos]
            if pos == 0:
                h_prev, c_prev = hinit, cinit
            else:
                tp = steps[pos - 1]
                o_prev = zstate[tp, :, d * G + names.index("o") * H:
                                d * G + (names.index("o") + 1) * H]
                c_prev = cell[tp, :, sl]
                h_prev = o_prev * act(g_act, c_prev)     # recomputed, SPEC 3.6
            gate = {}
            for k, name in enumerate(names):
                gate[name] = zstate[t, :, d * G + k * H:d * G + (k + 1) * H]
            i, f, z, o = gate["i"], gate["f"], gate["z"], gate["o"]
            c = cell[t, :, sl]
            gc = act(g_act, c)
            m = _mask_at(mask, t, N, d, H)
            dh = dstate[t, :, sl] + dh_carry
            dc = dc_carry + dh * o * act_grad_from_output(g_act, gc)
            if dcell_seq is not None:
                dc = dc + dcell_seq[t, :, sl]
            da_gate = {
                "o": dh * gc * act_grad_from_output(gate_act["o"], o),
                "i": dc * z * act_grad_from_output(gate_act["i"], i),
                "z": dc * i * act_grad_from_output(gate_act["z"], z),
                "f": dc * c_prev * act_grad_from_output(gate_act["f"], f),
            }
            da = np.concatenate([da_gate[name] for name in names], axis=1)
            dxp[t, :, d * G:(d + 1) * G] = da
            dR[d] += da.T @ (h_prev * m)
            for k, name in enumerate(names):
                dp[d, k * H:(k + 1) * H] += np.sum(da_gate[name] * c_prev, axis=0)
            dh_carry = (da @ Rd) * m
            dc_carry = dc * f
            for k, name in enumerate(names):
                dc_carry = dc_carry + da_gate[name] * pd[k * H:(k + 1) * H]
        dh0[:, sl] = dh_carry
        dc0[:, sl] = dc_carry
    if W is not None:
        dx = np.zeros(x.shape)
        dW = np.zeros(W.shape)
        for t in range(T):
            dx[t] = dxp[t] @ W
            dW += dxp[t].T @ x[t]
    else:
        dx, dW = dxp, None
    db = None if b is None else dxp.sum(axis=(0, 1))
    return {"source": dx, "recurrentWeight": dR, "inputWeight": dW, "bias": db,
            "peephole": None if peephole is None else dp,
            "initState": None if h0 is None else dh0, "initCell": None if c0 is None else dc0}


def final_state_and_cell(state, cell, *, reverse, bidirectional):
    """Final state and cell of each direction as [N, D*H] (forward half at T-1, reversed half
    at 0); used to write the final-state form of the loss."""
    T = state.shape[0]
    if bidirectional:
        H = state.shape[-1] // 2
        hs = np.concatenate([state[T - 1, :, :H], state[0, :, H:]], axis=-1)
        cs = np.concatenate([cell[T - 1, :, :H], cell[0, :, H:]], axis=-1)
        return hs, cs
    idx = 0 if reverse else T - 1
    return state[idx], cell[idx]
