"""Which way the torch backend runs an LSTM call, chosen by measurement (autotune.py), and the
cuDNN way itself.

The candidates of a call (`candidates`):

- "cudnn": torch's fused cuDNN LSTM (aten._cudnn_rnn / _cudnn_rnn_backward), where the op's
  options are cuDNN's: the default activations (sigmoid i, f, o; tanh z and cell), the gate
  order i, f, z, o (forgetGateLast False), no peephole, no mask, an input weight, a CUDA
  float32 / float16 / bFloat16 call, and the call either an inference one (the state alone) or
  a training one whose cell and zState are read by nothing but the LSTMGradients of the same
  LSTM (`plan_hook` marks those at compile time). cuDNN's backward needs its own reserve
  space, not zState: the forward then returns placeholder cell / zState tensors (one element,
  expanded to the shape: no memory) that carry the reserve, and the backward runs
  _cudnn_rnn_backward from it. The weights map with no reordering: W [D*4H, I] holds w_ih of
  each direction, R [D, 4H, H] w_hh, b is b_ih (b_hh = 0). float32 honours
  torch.backends.cuda.matmul.allow_tf32 (cuDNN's TF32 follows it for the call).
- "cluster" (kernels/lstm_cluster.py, where it applies), "persistent" (the plan's tiling,
  kernels/lstm_seq_fwd.py `plan`), "persistent:BN,BU" (a few other tilings that fit the
  SMs), "step" (float32: the per-step addmm + fused gate kernel).

A training call is timed as forward + backward (every gradient, a random dstate); an
inference call as the forward. The choice is cached per (shape, dtype, options, precision,
mode) key; the backward of an ours-path forward looks the same key up (never tunes). With
tuning off, under capture before the key was tuned, or when MPSGRAPH_LSTM_KERNEL /
MPSGRAPH_LSTM_TILING force a path, the hand rules of rnn.py decide (None here).
"""

from __future__ import annotations

import contextvars
import math
import os
import warnings
from typing import Any

import torch

from . import autotune

# set by the plan hook's kernel wrapper for an LSTM step whose cell / zState feed only its
# own LSTMGradients (the forward may then return placeholders for them)
INTERNAL: contextvars.ContextVar[bool] = contextvars.ContextVar("mpsgraph_lstm_internal",
                                                                default=False)
N_OUTPUTS: contextvars.ContextVar[int] = contextvars.ContextVar("mpsgraph_lstm_n_outputs",
                                                                default=3)
_DEFAULT_ACTS = (3, 3, 2, 3, 2)   # sigmoid i, f; tanh z; sigmoid o; tanh cell
_HALF = (torch.float16, torch.bfloat16)
_MODE_LSTM = 2                    # cudnnRNNMode_t CUDNN_LSTM
_TAG = "_mpsgraph_cudnn_lstm"
# the persistent kernels' other tilings tried besides the plan's: one per regime of `plan`
# (N <= 64: BLOCK_N 16 with BLOCK_U 16 or 32; larger N: BLOCK_U 16 with BLOCK_N 64 or 32), so
# that a key costs at most two Triton compiles per kernel (compile time is tuning time)
ALT_TILINGS = {True: ((16, 32), (16, 16)), False: ((64, 16), (32, 16))}


# ----------------------------------------------------------------------------------------------
# cuDNN


def cudnn_maps(x, R, W, b, h0, c0, mask, peephole, *, reverse: bool, bidirectional: bool,
               forget_gate_last: bool, activations) -> bool:
    """Whether cuDNN's LSTM computes this call (module docstring)."""
    return (x.device.type == "cuda" and torch.backends.cudnn.is_available()
            and torch.backends.cudnn.enabled and x.dtype in (torch.float32, *_HALF)
            and W is not None and mask is None and peephole is None and not forget_gate_last
            and not (reverse and not bidirectional)
            and tuple(int(a) for a in activations) == _DEFAULT_ACTS
            and min(x.shape[0], x.shape[1], R.shape[-1]) > 0
            and all(t is None or t.dtype == x.dtype for t in (R, W, b, h0, c0)))


_ZEROS: dict[tuple, torch.Tensor] = {}


def _zeros(shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """A read-only zero tensor, kept between calls (one memset less per call) unless it would
    be allocated inside a CUDA-graph capture (which records the fill without running it)."""
    k = (shape, like.dtype, like.device)
    z = _ZEROS.get(k)
    if z is None:
        z = torch.zeros(shape, dtype=like.dtype, device=like.device)
        if not autotune.capturing() and len(_ZEROS) < 64:
            _ZEROS[k] = z
    return z


def _weights(R, W, b, D: int, H: int) -> list[torch.Tensor]:
    G = 4 * H
    zero = _zeros((G,), W)
    bb = None if b is None else b.reshape(-1)
    ws = []
    for d in range(D):
        ws += [W[d * G:(d + 1) * G], R[d], zero if bb is None else bb[d * G:(d + 1) * G], zero]
    return ws


# cuDNN's flat weight layout per (mode, I, H, bidirectional, dtype, device): the order of the
# parameters in the buffer, their offsets and its size, or None where it is not gap-free
_LAYOUTS: dict[tuple, tuple[list[int], list[int], int] | None] = {}


def _pshape(w) -> tuple[int, ...]:
    return (sum(p.numel() for p in w),) if isinstance(w, tuple) else tuple(w.shape)


def cudnn_weights(ws: list, mode: int, I: int, H: int,
                  bidirectional: bool) -> tuple[torch.Tensor | None, list[torch.Tensor]]:
    """(weight_buf, weights) for aten._cudnn_rnn from `ws` ([w_ih, w_hh, b_ih, b_hh] per
    direction; an entry may be a tuple of 1-D parts, concatenated): cuDNN's flat buffer written
    by one cat kernel, and the parameters as views of it. Without a buffer cuDNN zeroes one of
    its own and copies the 4 * D parameters into it one by one at every call (the route's
    per-call cost). The layout is learnt once per configuration from
    aten._cudnn_rnn_flatten_weight, which sets the tensors it is given to views of the buffer
    it makes. (None, the parameters) where that layout is not the parameters end to end, or
    is not known yet under a CUDA-graph capture: cuDNN then copies as before."""
    first = ws[0][0] if isinstance(ws[0], tuple) else ws[0]
    k = (mode, I, H, bidirectional, first.dtype, first.device)
    lay = _LAYOUTS.get(k, False)
    if lay is False and not autotune.capturing():
        lay = _LAYOUTS[k] = _layout([_pshape(w) for w in ws], first, mode, I, H,
                                    bidirectional)
    if not lay:
        return None, [torch.cat(w) if isinstance(w, tuple) else w for w in ws]
    order, offs, total = lay
    buf = torch.empty((total,), dtype=first.dtype, device=first.device)
    torch.cat([p for i in order for p in (ws[i] if isinstance(ws[i], tuple)
                                          else (ws[i].reshape(-1),))], out=buf)
    views = []
    for w, off in zip(ws, offs):
        shape = _pshape(w)
        views.append(buf.narrow(0, off, math.prod(shape)).view(shape))
    return buf, views


def _layout(shapes, like, mode: int, I: int, H: int, bidirectional: bool):
    probe = [torch.empty(sh, dtype=like.dtype, device=like.device) for sh in shapes]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            buf = torch._cudnn_rnn_flatten_weight(probe, 4, I, mode, H, 0, 1, False,
                                                  bidirectional)
    except (RuntimeError, AttributeError, TypeError):
        return None
    size = buf.element_size()
    offs = [(p.data_ptr() - buf.data_ptr()) // size for p in probe]
    order = sorted(range(len(probe)), key=offs.__getitem__)
    pos = 0
    for i in order:
        if offs[i] != pos or not probe[i].is_contiguous() or tuple(probe[i].shape) != shapes[i]:
            return None
        pos += probe[i].numel()
    return (order, offs, pos) if pos == buf.numel() else None


def _state0(s, N: int, D: int, H: int, like):
    if s is None:
        return _zeros((D, N, H), like)
    return s.reshape(N, D, H).transpose(0, 1).contiguous()


def _tf32_flags():
    return torch.backends.cudnn.flags(enabled=True, benchmark=torch.backends.cudnn.benchmark,
                                      deterministic=torch.backends.cudnn.deterministic,
                                      allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32))


class _Record:
    """What the cuDNN backward needs from its forward."""

    def __init__(self, x, ws, wbuf, hx, cx, out, reserve, ptrs):
        self.x, self.ws, self.wbuf, self.hx, self.cx = x, ws, wbuf, hx, cx
        self.out, self.reserve, self.ptrs = out, reserve, ptrs


def _ptrs(x, R, W, h0, c0):
    return tuple(None if t is None else (t.data_ptr(), tuple(t.shape)) for t in (x, R, W, h0, c0))


def cudnn_forward(x, R, W, b, h0, c0, *, bidirectional: bool, train: bool):
    """(state, cell, zState) through cuDNN; with `train`, cell / zState are the placeholders
    carrying the reserve space (module docstring), else None."""
    T, N, _ = x.shape
    H = R.shape[-1]
    D = 2 if bidirectional else 1
    ws = _weights(R, W, b, D, H)
    hx, cx = _state0(h0, N, D, H, x), _state0(c0, N, D, H, x)
    xc = x.contiguous()
    buf, ws = cudnn_weights(ws, _MODE_LSTM, x.shape[2], H, bidirectional)
    with _tf32_flags(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, _hy, _cy, reserve, wbuf = torch.ops.aten._cudnn_rnn(
            xc, ws, 4, buf, hx, cx, _MODE_LSTM, H, 0, 1, False, 0.0, train, bidirectional, [],
            None)
    if not train:
        return out, None, None
    one = torch.empty((1, 1, 1), dtype=x.dtype, device=x.device)
    zs = one.expand(T, N, D * 4 * H)
    cell = one.expand(T, N, D * H)
    rec = _Record(xc, ws, wbuf, hx, cx, out, reserve, _ptrs(x, R, W, h0, c0))
    setattr(zs, _TAG, rec)
    setattr(cell, _TAG, rec)
    return out, cell, zs


def record(zstate) -> _Record | None:
    return getattr(zstate, _TAG, None)


def cudnn_backward(rec: _Record, x, R, W, h0, c0, dstate, dh_final, dc_final, dcell_seq, *,
                   bidirectional: bool, need_b: bool, need_h0: bool, need_c0: bool,
                   wide=()) -> dict | None:
    """LSTMGradients from the cuDNN forward's record, or None when the call is not the one
    that record belongs to (the caller then recomputes)."""
    if dcell_seq is not None or rec.ptrs != _ptrs(x, R, W, h0, c0):
        return None
    T, N, _ = x.shape
    H = R.shape[-1]
    D = 2 if bidirectional else 1
    dy = dstate.to(x.dtype).contiguous()
    dhy = None if dh_final is None else _state0(dh_final.to(x.dtype), N, D, H, x)
    dcy = None if dc_final is None else _state0(dc_final.to(x.dtype), N, D, H, x)
    if dhy is None and dcy is not None:
        dhy = _zeros(tuple(rec.hx.shape), rec.hx)
    if dcy is None and dhy is not None:
        dcy = _zeros(tuple(rec.cx.shape), rec.cx)
    with _tf32_flags(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dx, dhx, dcx, dws = torch.ops.aten._cudnn_rnn_backward(
            rec.x, rec.ws, 4, rec.wbuf, rec.hx, rec.cx, rec.out, dy, dhy, dcy, _MODE_LSTM, H,
            0, 1, False, 0.0, True, bidirectional, [], None, rec.reserve,
            [True, need_h0, need_c0, True])
    # (D = 1: views, no copies; the half types' gradients stay in their dtype: cuDNN wrote
    # them so, and `wide` only allows float32)
    dW = torch.cat([dws[4 * d] for d in range(D)], 0) if D > 1 else dws[0]
    dR = torch.stack([dws[4 * d + 1] for d in range(D)], 0) if D > 1 else dws[1].unsqueeze(0)
    db = None
    if need_b:
        db = torch.cat([dws[4 * d + 2] for d in range(D)], 0) if D > 1 else dws[2]

    def state_grad(g, need, name):
        if not need:
            return None
        return g.transpose(0, 1).reshape(N, D * H)

    out = {"source": dx, "recurrentWeight": dR, "inputWeight": dW, "bias": db,
           "peephole": None, "initState": state_grad(dhx, need_h0, "initState"),
           "initCell": state_grad(dcx, need_c0, "initCell")}
    dt = x.dtype
    return {k: v if v is None or k in wide else v.to(dt) for k, v in out.items()}


# ----------------------------------------------------------------------------------------------
# the choice


def forced() -> bool:
    """An environment knob forces the hand rules' path (benchmarks, tests)."""
    return any(os.environ.get(k, "").strip() for k in (
        "MPSGRAPH_LSTM_KERNEL", "MPSGRAPH_LSTM_TILING", "MPSGRAPH_LSTM_TILING_BWD"))


def key(x, R, W, b, h0, c0, mask, peephole, *, reverse, bidirectional, forget_gate_last,
        activations, mode: str) -> str:
    T, N = x.shape[0], x.shape[1]
    H = R.shape[-1]
    tf32 = x.dtype == torch.float32 and bool(torch.backends.cuda.matmul.allow_tf32)
    # T enters as its power-of-two bucket: the paths' relative speed is a per-step matter, and
    # variable-length batches then tune once per bucket, not once per length (a cached choice
    # that cannot run this T is retuned: `autotune.choose`)
    tb = 1 << max(int(T) - 1, 0).bit_length()
    return autotune.key_string(
        "LSTM", [tb, N, x.shape[2], H], x.dtype,
        dict(bidirectional=bidirectional, reverse=reverse, forget_gate_last=forget_gate_last,
             activations=[int(a) for a in activations], W=W is not None, b=b is not None,
             h0=h0 is not None, c0=c0 is not None,
             mask=None if mask is None else list(mask.shape), peephole=peephole is not None),
        "tf32" if tf32 else "ieee", mode)


def ours_paths(dev, dtype, T: int, N: int, H: int, D: int) -> list[str]:
    """Our paths that can run this call (their names, module docstring)."""
    from . import rnn
    from .kernels import available as triton_available

    out = []
    if not triton_available(dev):
        return out
    if dtype == torch.float32:
        out.append("step")
    from .kernels import lstm_seq_fwd

    if dev.type == "cuda" and not lstm_seq_fwd.interpreting():
        probe = torch.empty((D, 4 * H, H), dtype=dtype, device="meta")
        if dtype == torch.float32 and lstm_seq_fwd.cluster_config(
                dev, T, N, probe, D, None, None, ()) is not None:
            out.append("cluster")
        sms = lstm_seq_fwd._sm_count(torch.cuda.current_device() if dev.index is None
                                     else dev.index)
    else:
        sms = None
    pl = rnn.plan_for(dev, dtype, N, H, D)
    if pl is not None:
        out.append("persistent")
    # float32 products far beyond the hand rule's cutoff (rnn.py `_persistent_plan`): the
    # persistent kernels were measured far behind there; only the plan's tiling is tried
    big = dtype == torch.float32 and N * 4 * H * H > 1 << 28
    if sms is not None and pl is not None and not big:
        for bn, bu in ALT_TILINGS[N <= 64]:
            if (pl.block_n, pl.block_u) == (bn, bu):
                continue
            if bn > 16 and bn >= 2 * lstm_seq_fwd.pow2(N):
                continue
            if bu > 16 and bu >= 2 * lstm_seq_fwd.pow2(H):
                continue
            if lstm_seq_fwd.cdiv(N, bn) * lstm_seq_fwd.cdiv(H, bu) * D <= sms:
                out.append(f"persistent:{bn},{bu}")
                break
    return out


def tiling_of(path: str, dev, dtype, N: int, H: int, D: int):
    """The persistent kernels' Tiling a path name means (None: the plan's / the cluster's)."""
    if not path.startswith("persistent:"):
        return None
    from .kernels import lstm_seq_fwd

    bn, bu = (int(v) for v in path.split(":", 1)[1].split(","))
    elem = 2 if dtype in _HALF else 4
    return lstm_seq_fwd._tiling(N, H, bn, bu, elem)


def forward_choice(run_path, hand_path, x, R, W, b, h0, c0, mask, peephole, *, reverse,
                   bidirectional, forget_gate_last, activations) -> str | None:
    """The path this forward takes (None: rnn.py's hand rules). `run_path(path, train)` runs
    one training step (or forward) of a candidate; `hand_path()` gives the name of the hand
    rules' path (timed once, under that name) or None (timed as "__hand__"); it and the
    candidates are only worked out for a key not decided yet."""
    if forced() or not autotune.enabled(x.device):
        return None
    n_out = N_OUTPUTS.get()
    internal = INTERNAL.get()
    mode = "infer" if n_out == 1 else ("train_internal" if internal else "train")
    opts = dict(reverse=reverse, bidirectional=bidirectional,
                forget_gate_last=forget_gate_last, activations=activations)
    fk = _fast_key(x, R, W, b, h0, c0, mask, peephole, mode, opts)
    T, N, H = x.shape[0], x.shape[1], R.shape[-1]
    D = 2 if bidirectional else 1
    train = mode != "infer"
    def cands():
        paths = ours_paths(x.device, x.dtype, T, N, H, D)
        if mode != "train" and cudnn_maps(x, R, W, b, h0, c0, mask, peephole, **opts):
            paths.append("cudnn")
        if not paths:
            return {}
        out = {}
        hp = hand_path()
        hand = hp if hp in paths else "__hand__"
        if hand == "__hand__":
            out[hand] = lambda: run_path(None, train)
        out.update({p: (lambda p=p: run_path(p, train)) for p in paths})
        return out

    choice = autotune.choose(lambda: key(x, R, W, b, h0, c0, mask, peephole, mode=mode, **opts),
                             cands, "__hand__", x.device, fast_key=fk)
    return None if choice == "__hand__" else choice  # (a named path equal to the hand
    # rules' runs as that name: the same kernels)


def _fast_key(x, R, W, b, h0, c0, mask, peephole, mode, opts) -> tuple:
    return ("LSTM", tuple(x.shape), R.shape[-1], x.dtype, x.device, mode,
            opts["reverse"], opts["bidirectional"], opts["forget_gate_last"],
            tuple(int(a) for a in opts["activations"]), W is not None, b is not None,
            h0 is not None, c0 is not None, None if mask is None else tuple(mask.shape),
            peephole is not None,
            x.dtype == torch.float32 and bool(torch.backends.cuda.matmul.allow_tf32))


def backward_choice(x, R, W, b, h0, c0, mask, peephole, *, reverse, bidirectional,
                    forget_gate_last, activations) -> str | None:
    """The path the forward's tuning chose for this call's key (never "cudnn": that backward
    runs from the record), or None (the hand rules). The forward's key holds whether it had a
    bias; LSTMGradients may be given that bias or not (it reads it only to recompute a
    forward), so both are looked up, the given one first. (Before this, the backward looked up
    "no bias" only and, for a forward with a bias, took the hand rules' path instead of the
    tuned one: on the H200 the T=50 N=128 H=256 float32 step ran the plan's backward, 1.28
    ms, behind the tuned forward's 32x16 tiling, whose backward takes 0.61 ms.)"""
    if forced() or not autotune.enabled(x.device):
        return None
    opts = dict(reverse=reverse, bidirectional=bidirectional,
                forget_gate_last=forget_gate_last, activations=activations)
    for mode in ("train", "train_internal"):
        for bias in ((b, None) if b is not None else (None, R)):  # (R: any tensor, "a bias")
            c = autotune.lookup(
                lambda mode=mode, bias=bias: key(x, R, W, bias, h0, c0, mask, peephole,
                                                 mode=mode, **opts),
                fast_key=_fast_key(x, R, W, bias, h0, c0, mask, peephole, mode, opts))
            if c is not None and c not in ("cudnn", "__hand__"):
                return c
    return None


# ----------------------------------------------------------------------------------------------
# compile time: the LSTM steps whose cell / zState only their own LSTMGradients read


_SAME_INPUTS = ((0, 0), (1, 1), (2, 7), (3, 8), (4, 9), (5, 10), (6, 11), (7, 12))
# (LSTM input index, LSTMGradients input index): x, R, W, b, h0, c0, mask, peephole


def plan_hook(steps, keep) -> None:
    """Mark (by wrapping the kernel) every LSTM step with three outputs whose cell and zState
    are no target and are read only as cell / zState by LSTMGradients steps of the same inputs
    and descriptor. Called by the executable's plan (runtime/executable.py)."""
    mark_internal(steps, keep, "LSTM", 3, {1: 4, 2: 3}, "LSTMGradients", _SAME_INPUTS,
                  INTERNAL, "internal_lstm")


def mark_internal(steps, keep, kind: str, n_outs: int, reads: dict[int, int], grad_kind: str,
                  same_inputs, var: contextvars.ContextVar, name: str) -> None:
    """Wrap the kernel of every `kind` step with `n_outs` outputs whose outputs `reads` (output
    index -> the input position of `grad_kind` that may read it) are no targets and are read
    only there, by `grad_kind` steps with the same inputs (`same_inputs`: (forward input,
    gradient input) index pairs) and descriptor; the wrapper (named `name`) sets `var` to True
    while the kernel runs (lstm_route.py, gru_route.py: such a step may run on cuDNN)."""
    readers: dict[int, list[tuple[Any, int]]] = {}
    for st in steps:
        for i, s in enumerate(st.ins):
            if s >= 0:
                readers.setdefault(s, []).append((st, i))
    for st in steps:
        if getattr(st.op, "kind", None) != kind or len(st.outs) != n_outs:
            continue
        if any(st.outs[o] in keep for o in reads):
            continue
        ok = True
        for o, pos in reads.items():
            for rd, i in readers.get(st.outs[o], []):
                if (getattr(rd.op, "kind", None) != grad_kind or i != pos
                        or any(st.ins[a] != rd.ins[g] for a, g in same_inputs)
                        or _desc(st.op) != _desc(rd.op)):
                    ok = False
        if ok:
            st.kernel = _internal(st.kernel, var, name)


def _desc(op) -> Any:
    d = getattr(op.attrs, "descriptor", None)
    if d is None:
        return None
    try:
        return tuple(sorted((k, str(v)) for k, v in vars(d).items() if k != "training"))
    except TypeError:
        return repr(d)


def _internal(fn, var: contextvars.ContextVar, name: str):
    def internal(*args, **kw):
        tok = var.set(True)
        try:
            return fn(*args, **kw)
        finally:
            var.reset(tok)

    internal.__name__ = internal.__qualname__ = name
    internal.__wrapped__ = fn
    return internal
