"""GRU and single-gate RNN kernels (SPEC 4), written once for the NumPy and torch backends.

The recurrences are written against a handful of array primitives (`GatedOps`: NumPy or torch),
with the operators both libraries share (`@`, `*`, `+`, slicing, `reshape`, `sum(0)`). A step
is batched over N and H: per direction the GRU does one [N, H] x [H, 3H] product
(resetAfter) or two ([N, H] x [H, 2H] and the reset-gated [N, H] x [H, H]) plus the gate math,
the single-gate RNN one [N, H] x [H, H] product. The input projection of all steps and both
directions is ONE GEMM before the loop; the weight gradients (dR, dW, db, dsecondaryBias) and
dx are one GEMM / reduction over all steps after it. Both directions go through one path.

Canonical arguments (the graph kernels below bring the user's forms to these), T time, N batch,
I input, H hidden, D directions, k gate blocks (3 GRU, 1 single gate), G = k*H:

  x        [T, N, I], or [T, N, D*G] when W is None (then x is the gate input x' itself)
  R        [D, G, H]         W [D*G, I] or None       b [D*G] or None
  h0       [N, D*H] or None  mask None, [N, D*H] (every step) or [T, N, D*H] (m[t] at step t)
  b2       [D*H] or None     (GRU secondaryBias, read only with reset_after)
  outputs  state [T, N, D*H]; zState [T, N, D*G]: GRU the activated gates in gate order
           ([z, r, o], or [r, z, o] with reset_gate_first), single gate the pre-activation z

GRU, per direction (rev: the reverse direction of a bidirectional call, or `reverse`;
outputs stay aligned with x[t]), x' = x @ W^T + b, hm = h_prev * m[t]:

    z = f_z(x'_z + hm @ R_z^T);  r = f_r(x'_r + hm @ R_r^T)
    c = (hm * r) @ R_o^T                     (reset_after: c = (hm @ R_o^T + b2) * r)
    o = f_o(x'_o + c)
    h = z * h_prev + (1 - z) * o             (flip_z: h = (1 - z) * h_prev + z * o)

Backward (h_prev from outputFwd shifted by one step, h0 at the first processed step; the
activation derivatives written from outputs, SPEC 3.1):

    dh    = dstate[t] + dh_c                               (dh_c starts as dh_final)
    dz    = dh * (h_prev - o), do = dh * (1 - z), dh_c = dh * z     (flip_z: signs swapped)
    da_o  = do * f_o'(o);  da_z = dz * f_z'(z)
    reset_after:  dq = da_o * r;  da_r = da_o * q * f_r'(r)  (q = hm @ R_o^T + b2);
                  dhm = [da_z, da_r, dq] @ R;  dR += [da_z, da_r, dq]^T @ hm;  db2 += dq
    otherwise:    u = da_o @ R_o;  da_r = u * hm * f_r'(r);
                  dhm = [da_z, da_r] @ R_zr + u * r;  dR_zr += [da_z, da_r]^T @ hm;
                  dR_o += da_o^T @ (hm * r)
    dh_c += dhm * m[t];  dx'[t] = [da_z, da_r, da_o]

Single gate: z = x' + hm @ R^T, h = f(z); backward dz = dh * f'(f(z)), dh_c = (dz @ R) * m[t],
dR += dz^T @ hm, h_prev = f(zState) of the previous processed step.

float16 / bfloat16 compute in float32 and round each output once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..ops.rnn import GatedRNNAttrs
from ._lstm_glue import ArrayOps, _state, _unbroadcast, step_order, step_shift

__all__ = ["GatedOps", "gated_kernels"]


@dataclass(frozen=True)
class GatedOps:
    base: ArrayOps
    empty: Callable[[tuple[int, ...], Any], Any]   # an uninitialised array like `like`
    zeros: Callable[[tuple[int, ...], Any], Any]
    t: Callable[[Any], Any]                        # 2-D transpose (a view)
    act: Callable[[int, Any], Any]                 # f(a) of an RNNActivation code
    dact: Callable[[int, Any], Any]                # f'(a) from y = f(a); NaN y gives NaN
    scope: Callable[[], Any] = contextlib.nullcontext  # e.g. np.errstate(all="ignore")


def _part(a, d: int, w: int):
    return None if a is None else a[..., d * w:(d + 1) * w]


def _gru_blocks(reset_gate_first: bool) -> tuple[int, int]:
    """(block of z, block of r) on the 3H axis; o is block 2 in both orders."""
    return (1, 0) if reset_gate_first else (0, 1)


def _project(xp: GatedOps, x, W, b, DG: int):
    """x' = x @ W^T + b for all steps and directions at once ([T, N, D*G])."""
    T, N = x.shape[0], x.shape[1]
    if W is not None:
        xw = (x.reshape(T * N, x.shape[2]) @ xp.t(W)).reshape(T, N, DG)
    else:
        xw = x
    return xw if b is None else xw + b


def _prev_states(xp: GatedOps, hs, h0, rev: bool):
    """h_prev of every step of one direction ([T, N, H]) from its states hs [T, N, H]."""
    T = hs.shape[0]
    hp = xp.empty(tuple(hs.shape), hs)
    if T:
        cons, prod, first = step_shift(T, rev)
        hp[cons] = hs[prod]
        hp[first] = 0.0 if h0 is None else h0
    return hp


# --------------------------------------------------------------------------------- forward
def gated_forward(xp: GatedOps, x, R, W, b, h0, mask, b2, a: GatedRNNAttrs):
    """(state [T, N, D*H], zState [T, N, D*G]) in the compute dtype."""
    T, N, D, H, k = a.T, a.N, a.D, a.H, a.gates
    G = k * H
    xw = _project(xp, x, W, b, D * G)
    zs = xp.empty((T, N, D * G), x)
    state = xp.empty((T, N, D * H), x)
    m_seq = None if mask is None else xp.base.broadcast(mask, (T, N, D * H))
    bz, br = _gru_blocks(a.reset_gate_first)
    for d in range(D):
        rev = (d == 1) if a.bidirectional else a.reverse
        xd, zd, sd, md = _part(xw, d, G), _part(zs, d, G), _part(state, d, H), _part(m_seq, d, H)
        RT = xp.t(R[d])                                             # [H, G]
        h = xp.zeros((N, H), x) if h0 is None else _part(h0, d, H)
        if k == 1:
            f = a.activations[0]
            for t in step_order(T, rev):
                hm = h if md is None else h * md[t]
                zt = xd[t] + hm @ RT
                zd[t] = zt
                h = xp.act(f, zt)
                sd[t] = h
            continue
        fz, fr, fo = a.activations
        q_bias = None if b2 is None else _part(b2, d, H)
        RT_zr, RT_o = RT[:, :2 * H], RT[:, 2 * H:]
        for t in step_order(T, rev):
            hm = h if md is None else h * md[t]
            xt = xd[t]
            if a.reset_after:
                p = hm @ RT                                         # [N, 3H]
                pre = xt[:, :2 * H] + p[:, :2 * H]
            else:
                pre = xt[:, :2 * H] + hm @ RT_zr                    # [N, 2H]
            z = xp.act(fz, pre[:, bz * H:(bz + 1) * H])
            r = xp.act(fr, pre[:, br * H:(br + 1) * H])
            if a.reset_after:
                q = p[:, 2 * H:] if q_bias is None else p[:, 2 * H:] + q_bias
                c = q * r
            else:
                c = (hm * r) @ RT_o
            o = xp.act(fo, xt[:, 2 * H:] + c)
            if a.flip_z:
                h = (1.0 - z) * h + z * o
            else:
                h = z * h + (1.0 - z) * o
            zt = zd[t]
            zt[:, bz * H:(bz + 1) * H] = z
            zt[:, br * H:(br + 1) * H] = r
            zt[:, 2 * H:] = o
            sd[t] = h
    return state, zs


# --------------------------------------------------------------------------------- backward
def gated_backward(xp: GatedOps, x, R, dstate, zs, out_fwd, W, h0, mask, b2, dh_final,
                   a: GatedRNNAttrs) -> dict:
    """{'source', 'recurrentWeight', 'inputWeight', 'initState', 'bias', 'secondaryBias'} in
    the compute dtype: dx [T, N, I] (or dx' [T, N, D*G]), dR [D, G, H], dW [D*G, I],
    dh0 [N, D*H], db [D*G], db2 [D*H]. `out_fwd` is the forward's state (GRU only)."""
    T, N, D, H, k = a.T, a.N, a.D, a.H, a.gates
    G = k * H
    dA = xp.empty((T, N, D * G), x)                 # dL/dx' of every step
    dR = xp.zeros((D, G, H), x)
    dh0 = xp.empty((N, D * H), x)
    db2 = xp.zeros((D * H,), x)
    m_seq = None if mask is None else xp.base.broadcast(mask, (T, N, D * H))
    bz, br = _gru_blocks(a.reset_gate_first)
    for d in range(D):
        rev = (d == 1) if a.bidirectional else a.reverse
        zd, dAd, md = _part(zs, d, G), _part(dA, d, G), _part(m_seq, d, H)
        dsd = _part(dstate, d, H)
        Rd = R[d]
        h0d = _part(h0, d, H)
        dh_c = xp.zeros((N, H), x) if dh_final is None else _part(dh_final, d, H)
        if k == 1:
            f = a.activations[0]
            ys = xp.act(f, zd)                                      # h[t] for all t
            dys = xp.dact(f, ys)
            hp = _prev_states(xp, ys, h0d, rev)
            for t in step_order(T, not rev):
                dz = (dsd[t] + dh_c) * dys[t]
                dAd[t] = dz
                dh_c = dz @ Rd
                if md is not None:
                    dh_c = dh_c * md[t]
            dh0[:, d * H:(d + 1) * H] = dh_c
            hm = hp if md is None else hp * md
            dR[d] = xp.t(dAd.reshape(T * N, G)) @ hm.reshape(T * N, H)
            continue
        fz, fr, fo = a.activations
        hp = _prev_states(xp, _part(out_fwd, d, H), h0d, rev)      # [T, N, H]
        hm = hp if md is None else hp * md
        zg = zd[..., bz * H:(bz + 1) * H]
        rg = zd[..., br * H:(br + 1) * H]
        og = zd[..., 2 * H:]
        dfz, dfr, dfo = xp.dact(fz, zg), xp.dact(fr, rg), xp.dact(fo, og)
        R_zr, R_o = Rd[:2 * H], Rd[2 * H:]
        if a.reset_after:
            q = (hm.reshape(T * N, H) @ xp.t(R_o)).reshape(T, N, H)
            if b2 is not None:
                q = q + _part(b2, d, H)
            dq_all = xp.empty((T, N, H), x)
        for t in step_order(T, not rev):
            dh = dsd[t] + dh_c
            z, r, o = zg[t], rg[t], og[t]
            if a.flip_z:
                dz, do, dh_c = dh * (o - hp[t]), dh * z, dh * (1.0 - z)
            else:
                dz, do, dh_c = dh * (hp[t] - o), dh * (1.0 - z), dh * z
            dao = do * dfo[t]
            daz = dz * dfz[t]
            dat = dAd[t]
            dat[:, bz * H:(bz + 1) * H] = daz
            dat[:, 2 * H:] = dao
            if a.reset_after:
                dq = dao * r
                dar = dao * q[t] * dfr[t]
                dat[:, br * H:(br + 1) * H] = dar
                dq_all[t] = dq
                dhm = dat[:, :2 * H] @ R_zr + dq @ R_o
            else:
                u = dao @ R_o                                       # dL/d(hm * r)
                dar = u * hm[t] * dfr[t]
                dat[:, br * H:(br + 1) * H] = dar
                dhm = dat[:, :2 * H] @ R_zr + u * r
            dh_c = dh_c + (dhm if md is None else dhm * md[t])
        dh0[:, d * H:(d + 1) * H] = dh_c
        rows = T * N
        hm2 = hm.reshape(rows, H)
        dR[d][:2 * H] = xp.t(dAd[..., :2 * H].reshape(rows, 2 * H)) @ hm2
        if a.reset_after:
            dq2 = dq_all.reshape(rows, H)
            dR[d][2 * H:] = xp.t(dq2) @ hm2
            db2[d * H:(d + 1) * H] = dq2.sum(0)
        else:
            dR[d][2 * H:] = xp.t(dAd[..., 2 * H:].reshape(rows, H)) @ (hm * rg).reshape(rows, H)
    dA2 = dA.reshape(T * N, D * G)
    if W is not None:
        dW = xp.t(dA2) @ x.reshape(T * N, x.shape[2])
        dx = (dA2 @ W).reshape(tuple(x.shape))
    else:
        dW, dx = None, dA
    return {"source": dx, "recurrentWeight": dR, "inputWeight": dW, "bias": dA2.sum(0),
            "initState": dh0, "secondaryBias": db2}


# --------------------------------------------------------------------------------- graph kernels
def _canonical(xp: GatedOps, a: GatedRNNAttrs, arrays: dict) -> dict:
    """Widen every array to the compute dtype and bring it to the canonical form."""
    D, H, N = a.D, a.H, a.N
    out = {}
    for n, v in arrays.items():
        out[n] = None if v is None else xp.base.widen(v)[0]
    out["R"] = out["R"].reshape(D, a.gates * H, H)
    for n in ("h0", "dh_final"):
        if out.get(n) is not None:
            out[n] = _state(xp.base, out[n], N, D * H)
    if out.get("mask") is not None and not a.mask_per_step:
        out["mask"] = _state(xp.base, out["mask"], N, D * H)
    return out


def gated_kernels(xp: GatedOps) -> dict[str, Callable[..., Any]]:
    """The four graph kernels (GRU, GRUGradients, singleGateRNN, singleGateRNNGradients) of a
    backend, keyed by op kind; arguments in the ops' input order (ops/rnn.py)."""

    def forward(x, R, W, b, h0, mask, b2, a: GatedRNNAttrs):
        dt = x.dtype
        with xp.scope():
            c = _canonical(xp, a, dict(x=x, R=R, W=W, b=b, h0=h0, mask=mask, b2=b2))
            state, zs = gated_forward(xp, c["x"], c["R"], c["W"], c["b"], c["h0"], c["mask"],
                                      c["b2"], a)
        outs = [xp.base.contiguous(xp.base.narrow(v, dt)) for v in (state, zs)[:a.n_outputs]]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a: GatedRNNAttrs):
        dt = x.dtype
        with xp.scope():
            c = _canonical(xp, a, dict(x=x, R=R, dstate=dstate, zs=zs, out_fwd=out_fwd,
                                       dh_final=dh_final, W=W, h0=h0, mask=mask, b2=b2))
            g = gated_backward(xp, c["x"], c["R"], c["dstate"], c["zs"], c["out_fwd"], c["W"],
                               c["h0"], c["mask"], c["b2"] if a.reset_after else None,
                               c["dh_final"], a)
            out = []
            for name in a.outputs:
                v = g[name]
                if name in ("recurrentWeight", "secondaryBias"):
                    v = xp.base.narrow(v.reshape(a.shape_of(name)), dt)
                elif name == "bias":
                    v = xp.base.narrow(v.reshape(1, 1, -1), dt)
                elif name == "initState":
                    v = _unbroadcast(xp.base, v, a.shape_of(name), dt)
                else:
                    v = xp.base.narrow(v, dt)
                out.append(xp.base.contiguous(v))
        return out[0] if len(out) == 1 else tuple(out)

    def GRU(x, R, W, b, h0, mask, b2, a):
        return forward(x, R, W, b, h0, mask, b2, a)

    def GRUGradients(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a):
        return backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a)

    def singleGateRNN(x, R, W, b, h0, mask, a):
        return forward(x, R, W, b, h0, mask, None, a)

    def singleGateRNNGradients(x, R, dstate, zs, dh_final, W, b, h0, mask, a):
        return backward(x, R, dstate, zs, None, dh_final, W, b, h0, mask, None, a)

    return {"GRU": GRU, "GRUGradients": GRUGradients, "singleGateRNN": singleGateRNN,
            "singleGateRNNGradients": singleGateRNNGradients}
