"""cuDNN's own GRU / RNN for the GRU and singleGateRNN calls whose options are cuDNN's, and the
choice between it and our kernels (fused Triton, gru_fused.py, or the per-step torch path),
by measurement on CUDA (autotune.py), as lstm_route.py does for the LSTM. The candidates of a
call: "ours" (the kernels as planned: the cluster kernels of kernels/gru_cluster.py where they
apply, else the persistent kernels under the plan's tiling), "ours:BN,BU" (the persistent
kernels under one of a few other tilings that fit the multiprocessors, `ALT_TILINGS`, and the
plan's own where "ours" is the cluster; a Gradients call looks the forward's choice up and runs
its kernel under the same tiling) and "cudnn" (below).

The mapping (SPEC 4.2): a GRU with resetGateFirst, resetAfter, flipZ off and the default
activations (sigmoid z, sigmoid r, tanh o) is torch.nn.GRU with w_ih = inputWeight, w_hh =
recurrentWeight, b_ih = bias, b_hh = [0, 0, secondaryBias] (zeros where absent); a single-gate
RNN with tanh or relu is torch.nn.RNN (b_hh = 0). inputWeight must be given and the mask
absent; a unidirectional `reverse` runs on the time-flipped sequence. The op is torch.gru /
torch.rnn_tanh / torch.rnn_relu: cuDNN on CUDA, torch's own kernels elsewhere (which the CPU
tests use). float32 calls honour torch.backends.cuda.matmul.allow_tf32 (cuDNN's TF32 follows
it for the call); on the CPU the half types compute in float32.

Training calls: cuDNN keeps its own reserve space, not MPSGraph's zState. The route takes a
training call only when its zState is read by nothing but the Gradients op of the same inputs
and descriptor (`plan_hook` marks those steps at compile time, as lstm_route.plan_hook does).
The forward then returns the state and a placeholder zState (one element, expanded to the
shape: no memory) carrying what the backward needs: on CUDA aten._cudnn_rnn's reserve space
(the forward and the Gradients op call aten._cudnn_rnn / _cudnn_rnn_backward themselves, the
weights in one flat buffer: lstm_route.cudnn_weights), elsewhere torch's op run under autograd,
which the Gradients op differentiates with torch.autograd.grad; every gradient in the shapes
and order the op returns. A Gradients call whose placeholder belongs to other inputs
(`cudnn_backward` returns None) recomputes the zState on our path first.

MPSGRAPH_GRU_KERNEL (gru_fused.py): "triton" (the default; on CUDA the tuner chooses where the
route maps), "torch" (never the route), "cudnn" (the route wherever it maps, on any device).
MPSGRAPH_RNN_NATIVE=1 (older knob) takes the route for inference calls.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
from typing import Any

import torch

from . import autotune

INTERNAL: contextvars.ContextVar[bool] = contextvars.ContextVar("mpsgraph_gru_internal",
                                                                default=False)
_TAG = "_mpsgraph_torch_rnn"
_SIGMOID, _TANH, _RELU = 3, 2, 1          # RNNActivation codes
_FORWARD = {"GRU": "GRUGradients", "singleGateRNN": "singleGateRNNGradients"}
# (forward input index, gradient input index): source, recurrentWeight, inputWeight, bias,
# initState, mask, secondaryBias
_SAME_INPUTS = {"GRU": ((0, 0), (1, 1), (2, 6), (3, 7), (4, 8), (5, 9), (6, 10)),
                "singleGateRNN": ((0, 0), (1, 1), (2, 5), (3, 6), (4, 7), (5, 8))}


def _knob() -> str:
    return os.environ.get("MPSGRAPH_GRU_KERNEL", "").strip().lower() or "triton"


def torch_op(a) -> Any:
    """torch.gru / torch.rnn_tanh / torch.rnn_relu for these options, or None."""
    if a.gates == 3:
        if (a.reset_gate_first and a.reset_after and not a.flip_z
                and tuple(int(v) for v in a.activations) == (_SIGMOID, _SIGMOID, _TANH)):
            return torch.gru
        return None
    return {_TANH: torch.rnn_tanh, _RELU: torch.rnn_relu}.get(int(a.activations[0]))


def maps(x, W, mask, a) -> bool:
    """Whether torch's (cuDNN's) op computes this call (module docstring)."""
    return (W is not None and mask is None and min(a.T, a.N, a.H) > 0 and torch_op(a) is not None
            and x.dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64)
            and (x.device.type != "cuda" or (torch.backends.cudnn.is_available()
                                             and torch.backends.cudnn.enabled)))


def _compute_dtype(x) -> torch.dtype:
    if x.device.type == "cuda" or x.dtype in (torch.float32, torch.float64):
        return x.dtype
    return torch.float32


def _flags():
    return torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled,
                                      benchmark=torch.backends.cudnn.benchmark,
                                      deterministic=torch.backends.cudnn.deterministic,
                                      allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32))


def _ptrs(*ts) -> tuple:
    return tuple(None if t is None else (t.data_ptr(), tuple(t.shape), t.dtype) for t in ts)


class _Record:
    """What the Gradients op needs from a route forward: the autograd outputs and leaves."""

    def __init__(self, y, hn, leaves: dict, ptrs: tuple):
        self.y, self.hn, self.leaves, self.ptrs = y, hn, leaves, ptrs


def record(zs) -> _Record | _Direct | None:
    return getattr(zs, _TAG, None)


def _run(x, R, W, b, h0, b2, a, train: bool):
    """(y [T, N, D*H], h_n [D, N, H], leaves) of torch's op in the compute dtype; with
    `train` under autograd, the leaves being detached copies of the user's tensors."""
    fn = torch_op(a)
    dt = _compute_dtype(x)
    named = dict(source=x, recurrentWeight=R, inputWeight=W, bias=b, initState=h0,
                 secondaryBias=b2)
    leaves = {}
    if train:
        for k, t in named.items():
            if t is not None:
                leaves[k] = named[k] = t.detach().requires_grad_()
    xs = named["source"].to(dt)
    params = [torch.cat(p) if isinstance(p, tuple) else p for p in _params(
        xs, named["recurrentWeight"], named["inputWeight"], named["bias"],
        named["secondaryBias"], a)]
    hx = _hx(named["initState"], a, dt, x.device)
    flip = a.reverse and not a.bidirectional
    src = xs.flip(0) if flip else xs
    y, hn = fn(src, hx, params, True, 1, 0.0, train, a.bidirectional, False)
    if flip:
        y = y.flip(0)
    return y, hn, leaves


_MODES = {torch.gru: 3, torch.rnn_tanh: 1, torch.rnn_relu: 0}  # cudnnRNNMode_t


class _Direct:
    """What a CUDA route forward keeps for its backward (aten._cudnn_rnn's outputs)."""

    def __init__(self, xc, ws, buf, hx, y, reserve, ptrs, flip: bool, mode: int):
        self.xc, self.ws, self.buf, self.hx, self.y = xc, ws, buf, hx, y
        self.reserve, self.ptrs, self.flip, self.mode = reserve, ptrs, flip, mode


def _params(x, R, W, b, b2, a) -> list:
    """torch's [w_ih, w_hh, b_ih, b_hh] per direction (the mapping of the module docstring) in
    x's dtype; b_hh with a secondaryBias as the parts (zeros, b2), which
    lstm_route.cudnn_weights (or a cat) joins."""
    from .lstm_route import _zeros

    D, H, G = a.D, a.H, a.gates * a.H
    dt = x.dtype
    W, R3 = W.to(dt), R.to(dt).reshape(D, G, H)
    zeros = _zeros((G,), x)
    bs = None if b is None else b.to(dt).reshape(-1)
    b2s = None if b2 is None else b2.to(dt).reshape(-1)
    params = []
    for d in range(D):
        bih = zeros if bs is None else bs[d * G:(d + 1) * G]
        bhh = zeros
        if a.gates == 3 and b2s is not None:
            bhh = (zeros[:2 * H], b2s[d * H:(d + 1) * H])
        params += [W[d * G:(d + 1) * G], R3[d], bih, bhh]
    return params


def _hx(h0, a, dt, device) -> torch.Tensor:
    from .._lstm_glue import _state
    from .rnn import _XP

    N, D, H = a.N, a.D, a.H
    if h0 is None:
        return torch.zeros((D, N, H), dtype=dt, device=device)
    return _state(_XP, h0.to(dt), N, D * H).reshape(N, D, H).transpose(0, 1).contiguous()


def _direct_forward(x, R, W, b, h0, b2, a, train: bool):
    """cuDNN through aten._cudnn_rnn itself on CUDA (no autograd; weights in one flat buffer,
    lstm_route.cudnn_weights): the state, and with `train` the record for `_direct_backward`."""
    import warnings

    from . import lstm_route

    mode = _MODES[torch_op(a)]
    hx = _hx(h0, a, x.dtype, x.device)
    flip = a.reverse and not a.bidirectional
    xc = (x.flip(0) if flip else x).contiguous()
    buf, ws = lstm_route.cudnn_weights(_params(x, R, W, b, b2, a), mode, x.shape[2], a.H,
                                       a.bidirectional)
    with _flags(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, _hy, _cy, reserve, wbuf = torch.ops.aten._cudnn_rnn(
            xc, ws, 4, buf, hx, None, mode, a.H, 0, 1, False, 0.0, train, a.bidirectional, [],
            None)
    state = y.flip(0) if flip else y
    rec = _Direct(xc, ws, wbuf, hx, y, reserve, _ptrs(x, R, W, b, h0, b2), flip,
                  mode) if train else None
    return state, rec


def _direct_backward(rec: _Direct, x, dstate, dh_final, h0, a) -> Any:
    import warnings

    from .._lstm_glue import _unbroadcast
    from .rnn import _XP

    N, D, H, G = a.N, a.D, a.H, a.gates * a.H
    dt = x.dtype
    dy = dstate.to(dt)
    dy = (dy.flip(0) if rec.flip else dy).contiguous()
    dhy = None if dh_final is None else _hx(dh_final, a, dt, x.device)
    need_h0 = "initState" in a.outputs and h0 is not None
    with _flags(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dx, dhx, _dcx, dws = torch.ops.aten._cudnn_rnn_backward(
            rec.xc, rec.ws, 4, rec.buf, rec.hx, None, rec.y, dy, dhy, None, rec.mode, H, 0, 1,
            False, 0.0, True, a.bidirectional, [], None, rec.reserve,
            [True, need_h0, False, True])
    cat = (lambda ts: torch.cat(ts, 0)) if D > 1 else (lambda ts: ts[0])
    g = {"source": dx.flip(0) if rec.flip else dx,
         "inputWeight": cat([dws[4 * d] for d in range(D)]),
         "recurrentWeight": torch.stack([dws[4 * d + 1] for d in range(D)], 0)
         if D > 1 else dws[1],
         "bias": cat([dws[4 * d + 2] for d in range(D)]),
         "secondaryBias": cat([dws[4 * d + 3][2 * H:] for d in range(D)]) if G == 3 * H
         else None,
         "initState": None if not need_h0 else dhx.transpose(0, 1).reshape(N, D * H)}
    out = []
    for name in a.outputs:
        v = g.get(name)
        if name == "initState":
            v = (torch.zeros(a.shape_of(name), dtype=dt, device=x.device) if v is None
                 else _unbroadcast(_XP, v, a.shape_of(name), dt))
        elif name == "bias":
            v = v.reshape(1, 1, -1)
        elif name in ("recurrentWeight", "secondaryBias"):
            v = v.reshape(a.shape_of(name))
        out.append(v.to(dt).contiguous())
    return out[0] if len(out) == 1 else tuple(out)


def cudnn_forward(x, R, W, b, h0, b2, a):
    """The state (inference) or (state, placeholder zState) (training) through torch's op
    (on CUDA, aten._cudnn_rnn itself: `_direct_forward`)."""
    train = a.n_outputs != 1
    if x.device.type == "cuda":
        state, rec = _direct_forward(x, R, W, b, h0, b2, a, train)
        if not train:
            return state.contiguous()
        one = torch.empty((1, 1, 1), dtype=x.dtype, device=x.device)
        zs = one.expand(a.T, a.N, a.D * a.gates * a.H)
        setattr(zs, _TAG, rec)
        return state.contiguous(), zs
    with _flags(), (torch.enable_grad() if train else torch.no_grad()):
        y, hn, leaves = _run(x, R, W, b, h0, b2, a, train)
    state = y.detach().to(x.dtype).contiguous()
    if not train:
        return state
    one = torch.empty((1, 1, 1), dtype=x.dtype, device=x.device)
    zs = one.expand(a.T, a.N, a.D * a.gates * a.H)
    setattr(zs, _TAG, _Record(y, hn, leaves, _ptrs(x, R, W, b, h0, b2)))
    return state, zs


def cudnn_backward(rec: _Record, x, R, dstate, dh_final, W, b, h0, b2, a) -> Any:
    """The Gradients op's outputs (a.outputs, in order, x's dtype) from a route forward's
    record, or None when the record belongs to other inputs."""
    if rec.ptrs != _ptrs(x, R, W, b, h0, b2):
        return None
    if isinstance(rec, _Direct):
        return _direct_backward(rec, x, dstate, dh_final, h0, a)
    from .._lstm_glue import _state
    from .rnn import _XP

    N, D, H = a.N, a.D, a.H
    outs, grads_in = [rec.y], [dstate.to(rec.y.dtype)]
    if dh_final is not None:
        dhn = _state(_XP, dh_final.to(rec.y.dtype), N, D * H).reshape(N, D, H).permute(1, 0, 2)
        outs.append(rec.hn)
        grads_in.append(dhn.contiguous())
    names = [n for n in a.outputs if n in rec.leaves]
    with _flags():
        got = torch.autograd.grad(outs, [rec.leaves[n] for n in names], grads_in,
                                  retain_graph=True, allow_unused=True)
    g = dict(zip(names, got))
    dt = x.dtype
    out = []
    for name in a.outputs:
        v = g.get(name)
        if name == "bias":
            v = v.reshape(1, 1, -1)
        elif name in ("recurrentWeight", "secondaryBias", "initState"):
            shape = a.shape_of(name)
            v = torch.zeros(shape, dtype=dt, device=x.device) if v is None else v.reshape(shape)
        if v is None:
            v = torch.zeros_like(rec.leaves.get(name, x))
        out.append(v.detach().to(dt).contiguous())
    return out[0] if len(out) == 1 else tuple(out)


# ----------------------------------------------------------------------------------------------
# the choice


def _gradient_attrs(a):
    """Attrs of the Gradients op of a forward call (every gradient of the inputs it has)."""
    have = dict(a.shapes)
    names = ["source", "recurrentWeight", "inputWeight", "bias", "initState"]
    if a.gates == 3:
        names.append("secondaryBias")
    outs = tuple(n for n in names if n in ("source", "recurrentWeight") or n in have)
    return dataclasses.replace(a, n_outputs=2, outputs=outs)


# our persistent kernels' other tilings timed besides the plan's (lstm_route.ALT_TILINGS)
ALT_TILINGS = {True: ((16, 32), (16, 16)), False: ((64, 16), (32, 16))}


def _mode(a) -> str:
    if a.n_outputs == 1:
        return "infer"
    return "train_internal" if INTERNAL.get() else "train"


def _given(W, b, h0, mask, b2) -> tuple:
    return (W is not None, b is not None, None if h0 is None else tuple(h0.shape),
            None if mask is None else tuple(mask.shape), b2 is not None)


def _tf32(x) -> bool:
    return x.dtype == torch.float32 and bool(torch.backends.cuda.matmul.allow_tf32)


def _fast_key(x, W, b, h0, mask, b2, a, mode: str) -> tuple:
    return ("GRU-route", tuple(x.shape), a.H, x.dtype, x.device, mode, a.gates, a.reverse,
            a.bidirectional, a.reset_gate_first, a.reset_after, a.flip_z,
            tuple(int(v) for v in a.activations), _given(W, b, h0, mask, b2), _tf32(x))


def _key(x, W, b, h0, mask, b2, a, mode: str) -> str:
    tb = 1 << max(int(a.T) - 1, 0).bit_length()  # T by its power-of-two bucket
    return autotune.key_string(
        "GRU" if a.gates == 3 else "singleGateRNN", [tb, a.N, x.shape[2], a.H], x.dtype,
        dict(reverse=a.reverse, bidirectional=a.bidirectional,
             reset_gate_first=a.reset_gate_first, reset_after=a.reset_after, flip_z=a.flip_z,
             activations=[int(v) for v in a.activations],
             given=[list(v) if isinstance(v, tuple) else v
                    for v in _given(W, b, h0, mask, b2)]),
        "tf32" if _tf32(x) else "ieee", mode)


def our_tilings(x, a) -> list[str]:
    """"ours:BN,BU" names of the persistent kernels' other tilings worth timing for this call
    (CUDA launches only; none under MPSGRAPH_GRU_TILING or MPSGRAPH_GRU_KERNEL=torch)."""
    from . import gru_fused

    if (x.device.type != "cuda" or os.environ.get("MPSGRAPH_GRU_TILING", "").strip()
            or not gru_fused.enabled(x.device) or min(a.T, a.N, a.H) <= 0
            or x.dtype not in (torch.float32, torch.float16, torch.bfloat16)):
        return []
    from .kernels import gru_seq, lstm_seq_fwd

    if lstm_seq_fwd.interpreting():
        return []
    got = gru_seq.plan(a.N, a.H, a.D, a.gates, x.device, x.dtype, _tf32(x), True)
    if got is None:
        return []
    til = got[0]
    sms = lstm_seq_fwd._sm_count(torch.cuda.current_device() if x.device.index is None
                                 else x.device.index)
    out = []
    probe = torch.empty((a.D, a.gates * a.H, a.H), dtype=x.dtype, device="meta")
    if gru_seq.cluster_config(x.device, a.N, a.H, a.D, probe, a.gates, a.reset_after, None,
                              (x,)) is not None:
        # "ours" is the cluster kernel (kernels/gru_cluster.py): the plan's tiling of the
        # persistent kernels is a candidate of its own
        out.append(f"ours:{til.block_n},{til.block_u}")
    for bn, bu in ALT_TILINGS[a.N <= 64]:
        if (til.block_n, til.block_u) == (bn, bu):
            continue
        if (bn > 16 and bn >= 2 * lstm_seq_fwd.pow2(a.N)) or (
                bu > 16 and bu >= 2 * lstm_seq_fwd.pow2(a.H)):
            continue
        if lstm_seq_fwd.cdiv(a.N, bn) * lstm_seq_fwd.cdiv(a.H, bu) * a.D <= sms:
            out.append(f"ours:{bn},{bu}")
    return out


@contextlib.contextmanager
def tiling(choice: str | None):
    """Run our kernels under the tiling an "ours:BN,BU" choice names (else as planned)."""
    if not choice or not choice.startswith("ours:"):
        yield
        return
    from .kernels import gru_seq

    bn, bu = (int(v) for v in choice[5:].split(","))
    tok = gru_seq.TILING.set((bn, bu))
    try:
        yield
    finally:
        gru_seq.TILING.reset(tok)


def forward_choice(x, R, W, b, h0, mask, b2, a, ours_forward, ours_backward) -> str | None:
    """The way this forward runs: "cudnn" (the route), "ours:BN,BU" (our kernels under that
    tiling) or None (our kernels as planned). `ours_forward(a)` / `ours_backward(zs, state,
    ga, dstate)` run our path; the tuner times a training step (or a forward) of each way."""
    knob = _knob()
    if knob == "torch":
        return None
    mode = _mode(a)
    routable = mode != "train" and maps(x, W, mask, a)  # (zState read elsewhere: ours)
    if knob == "cudnn" or (mode == "infer"
                           and os.environ.get("MPSGRAPH_RNN_NATIVE", "").strip() == "1"):
        return "cudnn" if routable else None
    if not autotune.enabled(x.device):
        return None
    train = mode != "infer"

    def cands():
        names = (["cudnn"] if routable else []) + our_tilings(x, a)
        if not names:
            return {}
        memo: dict[str, torch.Tensor] = {}
        ga = _gradient_attrs(a)
        a2 = dataclasses.replace(a, n_outputs=2) if train else a

        def dstate(like):
            if "d" not in memo:
                memo["d"] = torch.randn(like.shape, dtype=like.dtype, device=like.device)
            return memo["d"]

        def ours(choice=None):
            with tiling(choice):
                out = ours_forward(a2)
                if train:
                    ours_backward(out[1], out[0], ga, dstate(out[0]))

        def cudnn():
            out = cudnn_forward(x, R, W, b, h0, b2, a2)
            if train:
                cudnn_backward(record(out[1]), x, R, dstate(out[0]), None, W, b, h0, b2, ga)

        c = {"ours": ours}
        for n in names:
            c[n] = cudnn if n == "cudnn" else (lambda n=n: ours(n))
        return c

    choice = autotune.choose(lambda: _key(x, W, b, h0, mask, b2, a, mode), cands, "ours",
                             x.device, fast_key=_fast_key(x, W, b, h0, mask, b2, a, mode))
    return None if choice == "ours" else choice


def backward_choice(x, W, b, h0, mask, b2, a) -> str | None:
    """The tiling the forward's tuning chose for this call ("ours:BN,BU"), or None: a
    Gradients call on our path runs its kernel as the forward did."""
    if _knob() == "torch" or not autotune.enabled(x.device):
        return None
    for mode in ("train", "train_internal"):
        c = autotune.lookup(lambda mode=mode: _key(x, W, b, h0, mask, b2, a, mode),
                            fast_key=_fast_key(x, W, b, h0, mask, b2, a, mode))
        if c is not None and c.startswith("ours:"):
            return c
    return None


# ----------------------------------------------------------------------------------------------
# compile time: the GRU / singleGateRNN steps whose zState only their own Gradients op reads


def plan_hook(steps, keep) -> None:
    """Mark (by wrapping the kernel) every training GRU / singleGateRNN step whose zState is
    no target and is read only as zState by Gradients steps of the same inputs and
    descriptor. Called by the executable's plan (runtime/executable.py)."""
    from .lstm_route import mark_internal

    for kind, grad_kind in _FORWARD.items():
        mark_internal(steps, keep, kind, 2, {1: 3}, grad_kind, _SAME_INPUTS[kind], INTERNAL,
                      "internal_gated")
