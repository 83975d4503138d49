"""GRU / singleGateRNN (and their gradients) through the fused Triton kernels of
kernels/gru_seq.py: the graph kernels' argument handling around them.

Routing (backends/torch/rnn.py `_register_gated`): MPSGRAPH_GRU_KERNEL=triton (the default)
tries these first; each function returns None where the kernels do not apply (see
kernels/gru_seq.py's docstring: dtype other than float32 / float16 / bfloat16, empty axes, no
device Triton can run on, no co-resident tiling), and the caller then runs the per-step torch
path of backends/_gru_glue.py. MPSGRAPH_GRU_KERNEL=torch forces that path (for comparing).

Around the recurrence kernels, everything is one GEMM / reduction over all steps: forward the
input projection x @ W^T + b (bias fused, in the input dtype); backward q = hm R_o^T (+ b2)
(resetAfter), then dR (per direction, per gate block: [da_z, da_r] and dq or da_o against hm or
hm * r), dW = dA^T x, dx = dA W, db, dsecondaryBias. float32 dots in the kernels honour
torch.backends.cuda.matmul.allow_tf32 as the LSTM's do.
"""

from __future__ import annotations

import os

import torch

from .._lstm_glue import _state, _unbroadcast, step_shift
from .._lstm_glue import direction_part as _part
from .kernels import available as _triton_available

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def enabled(device: torch.device) -> bool:
    """MPSGRAPH_GRU_KERNEL=triton|torch|cudnn (default triton) is not torch and Triton can run
    on `device`."""
    v = os.environ.get("MPSGRAPH_GRU_KERNEL", "").strip().lower() or "triton"
    if v not in ("triton", "torch", "cudnn"):
        raise ValueError(f"MPSGRAPH_GRU_KERNEL={v!r}: expected triton, torch or cudnn")
    return v != "torch" and _triton_available(device)  # ("cudnn": gru_route.py's route
    # where it maps, these kernels elsewhere)


def _applies(x, a) -> bool:
    return (x.dtype in _DTYPES and a.T > 0 and a.N > 0 and a.H > 0 and enabled(x.device))


def _blocks(a) -> tuple[int, int]:
    return (1, 0) if a.reset_gate_first else (0, 1)


def _tf32() -> bool:
    return bool(torch.backends.cuda.matmul.allow_tf32)


def _mask_seq(mask, a):
    if mask is None:
        return None
    DH = a.D * a.H
    if a.mask_per_step:
        return mask.expand(a.T, a.N, DH)
    return _state_t(mask, a.N, DH).unsqueeze(0).expand(a.T, a.N, DH)


class _XPT:  # the two ArrayOps members _state / _unbroadcast use, for torch tensors
    ndim = staticmethod(lambda t: t.dim())
    broadcast = staticmethod(lambda t, shape: t.expand(*shape))
    sum = staticmethod(lambda t, axes, keep: t.sum(dim=axes, keepdim=keep))
    widen = staticmethod(lambda t: (t.float() if t.dtype in (torch.float16, torch.bfloat16)
                                    else t, t.dtype))
    narrow = staticmethod(lambda t, dt: t.to(dt))


def _state_t(v, n, dh):
    return _state(_XPT, v, n, dh)


def forward(x, R, W, b, h0, mask, b2, a):
    """GRU / singleGateRNN outputs (state, or (state, zState) with training) in x's dtype, or
    None where the fused kernels do not apply."""
    if not _applies(x, a):
        return None
    from .kernels import gru_seq

    dt = x.dtype
    T, N, D, H, k = a.T, a.N, a.D, a.H, a.gates
    G = k * H
    R3 = R.to(dt).reshape(D, G, H)
    if W is not None:
        x2 = x.reshape(T * N, x.shape[2])
        Wt = W.to(dt).t()
        xp = (x2 @ Wt if b is None else torch.addmm(b.to(dt).reshape(-1), x2, Wt))
        xp = xp.view(T, N, D * G)
    else:
        xp = x if b is None else x + b.to(dt).reshape(-1)
    h0c = None if h0 is None else _state_t(h0.to(dt), N, D * H)
    state = torch.empty((T, N, D * H), dtype=dt, device=x.device)
    zs = torch.empty((T, N, D * G), dtype=dt, device=x.device)
    ran = gru_seq.forward_sequence(
        xp, R3, h0c, _mask_seq(mask, a), None if b2 is None else b2.to(torch.float32),
        state, zs, gates=k, blocks=_blocks(a), activations=a.activations,
        reset_after=a.reset_after, flip_z=a.flip_z, reverse=a.reverse,
        bidirectional=a.bidirectional, allow_tf32=_tf32())
    if not ran:
        return None
    return state if a.n_outputs == 1 else (state, zs)


def _prev_states(hs, h0, a):
    """h_prev of every step ([T, N, D*H]): hs shifted by one processed step per direction, h0
    (zeros) at each direction's first."""
    T, H = a.T, a.H
    hp = torch.empty_like(hs)
    for d in range(a.D):
        rev = (d == 1) if a.bidirectional else a.reverse
        cons, prod, first = step_shift(T, rev)
        hpd, hsd = _part(hp, d, H), _part(hs, d, H)
        hpd[cons] = hsd[prod]
        hpd[first] = 0.0 if h0 is None else _part(h0, d, H)
    return hp


def backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a):
    """GRUGradients / singleGateRNNGradients outputs (a.outputs, in order, x's dtype), or None
    where the fused kernels do not apply."""
    del b
    if not _applies(x, a):
        return None
    from .kernels import gru_seq
    from .rnn import _act

    dt = x.dtype
    f32 = torch.float32
    T, N, D, H, k = a.T, a.N, a.D, a.H, a.gates
    G = k * H
    dev = x.device
    R3 = R.to(dt).reshape(D, G, H)
    h0c = None if h0 is None else _state_t(h0.to(dt), N, D * H)
    dhf = None if dh_final is None else _state_t(dh_final.to(dt), N, D * H)
    m_seq = _mask_seq(mask, a)
    dstate, zs = dstate.to(dt), zs.to(dt)
    if k == 1:
        hs = _act(int(a.activations[0]), zs)        # h[t] = f(zState[t])
    else:
        hs = out_fwd.to(dt)
    hp = _prev_states(hs, h0c, a)
    hm = hp if m_seq is None else hp * m_seq
    bz, br = _blocks(a)
    q = None
    if k == 3 and a.reset_after:  # q = hm R_o^T + b2 of every step: one GEMM per direction
        q = torch.empty((T, N, D * H), dtype=f32, device=dev)
        for d in range(D):
            qd = (_part(hm, d, H).reshape(T * N, H) @ R3[d, 2 * H:].t()).view(T, N, H)
            if b2 is not None:
                qd = qd.float() + b2.to(f32)[d * H:(d + 1) * H]
            _part(q, d, H).copy_(qd)
    dA = torch.empty((T, N, D * G), dtype=dt, device=dev)
    dq = None if q is None else torch.empty((T, N, D * H), dtype=f32, device=dev)
    dh0 = torch.empty((N, D * H), dtype=f32, device=dev)
    ran = gru_seq.backward_sequence(
        dstate, zs, None if k == 1 else hs, R3, h0c, m_seq, q, dhf, dA, dq, dh0, gates=k,
        blocks=(bz, br), activations=a.activations, reset_after=a.reset_after,
        flip_z=a.flip_z, reverse=a.reverse, bidirectional=a.bidirectional,
        allow_tf32=_tf32())
    if not ran:
        return None
    rows = T * N
    dR = torch.empty((D, G, H), dtype=dt, device=dev)
    db2 = None
    if dq is not None:
        db2 = dq.reshape(rows, D * H).sum(0)
    for d in range(D):
        hm2 = _part(hm, d, H).reshape(rows, H)
        dAd = _part(dA, d, G).reshape(rows, G)
        if k == 1:
            torch.mm(dAd.t(), hm2, out=dR[d])
            continue
        torch.mm(dAd[:, :2 * H].t(), hm2, out=dR[d, :2 * H])
        if dq is not None:
            torch.mm(_part(dq, d, H).reshape(rows, H).to(dt).t(), hm2, out=dR[d, 2 * H:])
        else:
            hr = hm2 * _part(zs, d, G)[..., br * H:(br + 1) * H].reshape(rows, H)
            torch.mm(dAd[:, 2 * H:].t(), hr, out=dR[d, 2 * H:])
    dA2 = dA.view(rows, D * G)
    g = {"recurrentWeight": dR, "secondaryBias": db2}
    if W is not None:
        g["inputWeight"] = dA2.t() @ x.reshape(rows, x.shape[2]).to(dt)
        g["source"] = (dA2 @ W.to(dt)).view(x.shape)
    else:
        g["inputWeight"], g["source"] = None, dA
    out = []
    for name in a.outputs:
        if name == "bias":
            v = dA2.sum(0, dtype=f32).reshape(1, 1, -1).to(dt)
        elif name == "initState":
            v = _unbroadcast(_XPT, dh0, a.shape_of(name), dt)
        elif name == "secondaryBias":
            v = (torch.zeros(D * H, dtype=f32, device=dev) if db2 is None else db2)
            v = v.reshape(a.shape_of(name)).to(dt)
        elif name == "recurrentWeight":
            v = dR.reshape(a.shape_of(name))
        else:
            v = g[name].to(dt)
        out.append(v.contiguous())
    return out[0] if len(out) == 1 else tuple(out)
