"""Float64 GRU and single-gate RNN oracles written straight from SPEC.md 4.1 / 4.2.

Plain loops: one direction at a time, one time step at a time, one gate at a time, each
gradient written from the chain rule of the forward formulas. No mpsgraph import and nothing
shared with the kernels; meant to be obviously correct, not fast.

Canonical arguments, T time, N batch, I input, H hidden, D directions, k = 3 (GRU) or 1:
  x [T,N,I] ([T,N,D*k*H] when W is None), R [D,k*H,H], W [D*k*H,I], b [D*k*H], h0 [N,D*H],
  mask [N,D*H] or [T,N,D*H], b2 (secondaryBias) [D*H]; activations as RNNActivation ints
  (0 none, 1 relu, 2 tanh, 3 sigmoid, 4 hardSigmoid), GRU (f_z, f_r, f_o).
GRU gate blocks: [z, r, o], or [r, z, o] with reset_gate_first.
"""

from __future__ import annotations

import numpy as np

from .lstm_f64 import act, act_grad_from_output


def _f64(a):
    return None if a is None else np.asarray(a, dtype=np.float64)


def _steps(T, rev):
    return list(range(T - 1, -1, -1)) if rev else list(range(T))


def _mask_at(mask, t, N, d, H):
    if mask is None:
        return np.ones((N, H))
    m = mask[t] if mask.ndim == 3 else mask
    return m[:, d * H:(d + 1) * H]


def _names(reset_gate_first):
    return ["r", "z", "o"] if reset_gate_first else ["z", "r", "o"]


def _xproj(x, W, b, t, d, G):
    """x'[t] of direction d: [N, G]."""
    if W is not None:
        xp = x[t] @ W[d * G:(d + 1) * G].T
    else:
        xp = x[t][:, d * G:(d + 1) * G].copy()
    if b is not None:
        xp = xp + b[d * G:(d + 1) * G]
    return xp


def gru_ref(x, R, W=None, b=None, h0=None, mask=None, b2=None, *, reverse, bidirectional,
            reset_gate_first, reset_after, flip_z, activations):
    """Returns (state [T,N,D*H], zState [T,N,D*3H]: activated z, r, o in gate order)."""
    x, R, W, b, h0, mask, b2 = map(_f64, (x, R, W, b, h0, mask, b2))
    T, N = x.shape[:2]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    G = 3 * H
    names = _names(reset_gate_first)
    fz, fr, fo = activations
    state = np.zeros((T, N, D * H))
    zst = np.zeros((T, N, D * G))
    for d in range(D):
        rev = (d == 1) if bidirectional else reverse
        Rg = {nm: R[d][k * H:(k + 1) * H] for k, nm in enumerate(names)}
        b2d = np.zeros(H) if b2 is None else b2[d * H:(d + 1) * H]
        h = np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H].copy()
        for t in _steps(T, rev):
            xp = _xproj(x, W, b, t, d, G)
            xg = {nm: xp[:, k * H:(k + 1) * H] for k, nm in enumerate(names)}
            m = _mask_at(mask, t, N, d, H)
            z = act(fz, xg["z"] + (h * m) @ Rg["z"].T)
            r = act(fr, xg["r"] + (h * m) @ Rg["r"].T)
            if reset_after:
                c = ((h * m) @ Rg["o"].T + b2d) * r
            else:
                c = ((h * r) * m) @ Rg["o"].T
            o = act(fo, xg["o"] + c)
            if flip_z:
                h = (1 - z) * h + z * o
            else:
                h = z * h + (1 - z) * o
            state[t, :, d * H:(d + 1) * H] = h
            gates = {"z": z, "r": r, "o": o}
            for k, nm in enumerate(names):
                zst[t, :, d * G + k * H:d * G + (k + 1) * H] = gates[nm]
    return state, zst


def gru_grad_ref(x, R, dstate, W=None, b=None, h0=None, mask=None, b2=None, dh_final=None,
                 zstate=None, out_fwd=None, *, reverse, bidirectional, reset_gate_first,
                 reset_after, flip_z, activations):
    """Reverse-mode gradients of the loss sum(dstate * state) + sum(dh_final * final states),
    recomputing the forward. With `zstate` / `out_fwd` (GRUGradients' inputs), the gates of
    each step are read from zstate and h_prev from out_fwd (h0 at the first processed step),
    as SPEC 4.2 defines the gradient op on its inputs (they agree with the recomputed forward
    when they are the forward's outputs). Returns dict source, recurrentWeight [D,3H,H],
    inputWeight, bias [D*3H], initState [N,D*H], secondaryBias [D*H]."""
    x, R, W, b, h0, mask, b2, dstate, dh_final, zstate, out_fwd = map(
        _f64, (x, R, W, b, h0, mask, b2, dstate, dh_final, zstate, out_fwd))
    T, N = x.shape[:2]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    G = 3 * H
    names = _names(reset_gate_first)
    fz, fr, fo = activations
    dxp_all = np.zeros((T, N, D * G))
    dR = np.zeros_like(R)
    dh0 = np.zeros((N, D * H))
    db2 = np.zeros(D * H)
    for d in range(D):
        rev = (d == 1) if bidirectional else reverse
        Rg = {nm: R[d][k * H:(k + 1) * H] for k, nm in enumerate(names)}
        b2d = np.zeros(H) if b2 is None else b2[d * H:(d + 1) * H]
        h = np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H].copy()
        tape = []
        for t in _steps(T, rev):                                    # forward, recorded
            xp = _xproj(x, W, b, t, d, G)
            xg = {nm: xp[:, k * H:(k + 1) * H] for k, nm in enumerate(names)}
            m = _mask_at(mask, t, N, d, H)
            hm = h * m
            z = act(fz, xg["z"] + hm @ Rg["z"].T)
            r = act(fr, xg["r"] + hm @ Rg["r"].T)
            q = hm @ Rg["o"].T + b2d
            o = act(fo, xg["o"] + (q * r if reset_after else (h * r * m) @ Rg["o"].T))
            if zstate is not None:                                  # the op's own inputs
                zs = {nm: zstate[t][:, d * G + k * H:d * G + (k + 1) * H]
                      for k, nm in enumerate(names)}
                z, r, o = zs["z"], zs["r"], zs["o"]
            tape.append((t, h, m, z, r, o, q))
            h = (1 - z) * h + z * o if flip_z else z * h + (1 - z) * o
            if out_fwd is not None:
                h = out_fwd[t][:, d * H:(d + 1) * H]
        gh = np.zeros((N, H)) if dh_final is None else dh_final[:, d * H:(d + 1) * H].copy()
        dRg = {nm: np.zeros((H, H)) for nm in names}
        for t, hp, m, z, r, o, q in reversed(tape):                 # backward
            gh = gh + dstate[t][:, d * H:(d + 1) * H]
            if flip_z:
                g_z, g_o, g_hp = gh * (o - hp), gh * z, gh * (1 - z)
            else:
                g_z, g_o, g_hp = gh * (hp - o), gh * (1 - z), gh * z
            g_ao = g_o * act_grad_from_output(fo, o)                # d pre-activation of o
            g_az = g_z * act_grad_from_output(fz, z)
            if reset_after:
                g_q = g_ao * r
                g_r = g_ao * q
                g_hm = g_q @ Rg["o"]
                dRg["o"] += g_q.T @ (hp * m)
                db2[d * H:(d + 1) * H] += g_q.sum(axis=0)
            else:
                g_hrm = g_ao @ Rg["o"]                              # d (h*r*m)
                g_r = g_hrm * hp * m
                g_hm = g_hrm * r
                dRg["o"] += g_ao.T @ (hp * r * m)
            g_ar = g_r * act_grad_from_output(fr, r)
            g_hm = g_hm + g_az @ Rg["z"] + g_ar @ Rg["r"]
            dRg["z"] += g_az.T @ (hp * m)
            dRg["r"] += g_ar.T @ (hp * m)
            gh = g_hp + g_hm * m
            ga = {"z": g_az, "r": g_ar, "o": g_ao}
            for k, nm in enumerate(names):
                dxp_all[t, :, d * G + k * H:d * G + (k + 1) * H] = ga[nm]
        dh0[:, d * H:(d + 1) * H] = gh
        for k, nm in enumerate(names):
            dR[d][k * H:(k + 1) * H] = dRg[nm]
    return _finish(x, W, dxp_all, dR, dh0, {"secondaryBias": db2})


def _finish(x, W, dxp_all, dR, dh0, extra):
    T, N = x.shape[:2]
    if W is not None:
        dx = np.einsum("tng,gi->tni", dxp_all, W)
        dW = np.einsum("tng,tni->gi", dxp_all, x)
    else:
        dx, dW = dxp_all, None
    return {"source": dx, "recurrentWeight": dR, "inputWeight": dW,
            "bias": dxp_all.sum(axis=(0, 1)), "initState": dh0, **extra}


def rnn_ref(x, R, W=None, b=None, h0=None, mask=None, *, reverse, bidirectional, activation):
    """Single-gate RNN. Returns (state [T,N,D*H], zState [T,N,D*H]: pre-activation)."""
    x, R, W, b, h0, mask = map(_f64, (x, R, W, b, h0, mask))
    T, N = x.shape[:2]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    state = np.zeros((T, N, D * H))
    zst = np.zeros((T, N, D * H))
    for d in range(D):
        rev = (d == 1) if bidirectional else reverse
        h = np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H].copy()
        for t in _steps(T, rev):
            z = _xproj(x, W, b, t, d, H) + (h * _mask_at(mask, t, N, d, H)) @ R[d].T
            h = act(activation, z)
            zst[t, :, d * H:(d + 1) * H] = z
            state[t, :, d * H:(d + 1) * H] = h
    return state, zst


def rnn_grad_ref(x, R, dstate, W=None, b=None, h0=None, mask=None, dh_final=None,
                 zstate=None, *, reverse, bidirectional, activation):
    """Gradients of sum(dstate * state) + sum(dh_final * final states) (single gate). With
    `zstate` (singleGateRNNGradients' input) each step's pre-activation is read from it
    (h = f(zstate[t]))."""
    x, R, W, b, h0, mask, dstate, dh_final, zstate = map(
        _f64, (x, R, W, b, h0, mask, dstate, dh_final, zstate))
    T, N = x.shape[:2]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    dxp_all = np.zeros((T, N, D * H))
    dR = np.zeros_like(R)
    dh0 = np.zeros((N, D * H))
    for d in range(D):
        rev = (d == 1) if bidirectional else reverse
        h = np.zeros((N, H)) if h0 is None else h0[:, d * H:(d + 1) * H].copy()
        tape = []
        for t in _steps(T, rev):
            m = _mask_at(mask, t, N, d, H)
            y = act(activation, _xproj(x, W, b, t, d, H) + (h * m) @ R[d].T)
            if zstate is not None:
                y = act(activation, zstate[t][:, d * H:(d + 1) * H])
            tape.append((t, h, m, y))
            h = y
        gh = np.zeros((N, H)) if dh_final is None else dh_final[:, d * H:(d + 1) * H].copy()
        for t, hp, m, y in reversed(tape):
            gz = (gh + dstate[t][:, d * H:(d + 1) * H]) * act_grad_from_output(activation, y)
            dxp_all[t, :, d * H:(d + 1) * H] = gz
            dR[d] += gz.T @ (hp * m)
            gh = (gz @ R[d]) * m
        dh0[:, d * H:(d + 1) * H] = gh
    return _finish(x, W, dxp_all, dR, dh0, {})
