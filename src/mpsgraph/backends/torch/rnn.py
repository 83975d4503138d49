"""torch kernels of MPSGraph's LSTM and LSTMGradients: a port of the NumPy reference kernels
(backends/numpy/rnn.py: the canonical argument forms, the equations and the backward are
documented there and in ops/rnn.py).

`lstm_forward` / `lstm_backward` take the same canonical arguments as the NumPy kernels. On
CUDA the way a call runs is chosen by measurement at its key's first call (lstm_route.py,
autotune.py: cuDNN itself where the options map onto it, the cluster kernels, the persistent
kernels under the plan's and a few other tilings, the per-step path); the hand rules below are
the fallback (tuning off, a capture of an untuned key, MPSGRAPH_LSTM_KERNEL / _TILING set).
Three ways to run the recurrence, chosen per call by the hand rules;
MPSGRAPH_LSTM_KERNEL=persistent|step|torch forces one (default: persistent where it applies,
else step, else torch):

- persistent (Triton; CUDA, or the CPU under TRITON_INTERPRET=1; float32 / float16 /
  bFloat16): ONE launch for all steps and both directions of the forward
  (kernels/lstm_seq_fwd.py) and one for the backward recurrence (kernels/lstm_seq_bwd.py), the
  steps separated by a grid barrier inside the kernel. Applies when `plan` can tile (N, H) with
  every program co-resident (at most one program per multiprocessor), else the next path.
  Half types keep the big GEMMs (input projection, weight gradients, dx) in their dtype (fp32
  accumulation) and run the recurrent dots with half operands; the state, the cell, the gate
  math and the carries are float32, each output stored once in the half type. On Hopper+ GPUs
  float32 calls with N <= 16 and H in 32..256 (a multiple of 32) run the same two recurrences on
  one thread-block cluster per direction instead (kernels/lstm_cluster.py: R in registers, h /
  dA exchanged through distributed shared memory, the hardware cluster barrier; exact float32
  products); MPSGRAPH_LSTM_CLUSTER=0 turns that off;
- step (Triton, float32): per step one addmm (accumulating into the projected input in place)
  plus ONE fused launch of the gate math (kernels/lstm_cell.py; in the backward it also adds
  dstate[t] to the masked carry);
- torch: plain torch per step (also the float64 reference, and the half types' fallback, which
  compute in float32).

In all of them:

- forward: the input projection of all steps and both directions is ONE matmul; a step is one
  [N, H] x [H, 4H] product per direction onto the projected input plus the gate math;
- backward: a step is the gate-derivative math plus one [N, 4H] x [4H, H] product (the carry to
  the previous step); the weight gradients (dR, dW, db, dp) and dx are one matmul / reduction
  over all steps at the end.

float32 recurrent dots in the persistent kernels honour torch.backends.cuda.matmul.allow_tf32
(which the executable sets for allow_tf32=True): "tf32", else three TF32 products per product
(float32 accuracy on the tensor cores: "split" for H <= 256, "tf32x3" above; `precision`). For
benchmarking, MPSGRAPH_LSTM_TILING and MPSGRAPH_LSTM_FP32_DOT override the persistent kernels'
tiling and float32 dot precision, and MPSGRAPH_LSTM_R_RESIDENT=0 stops them loading their slice
of R once, before the time loop, where it fits (the default, measured faster)
(kernels/lstm_seq_fwd.py: `plan`, `precision`, `r_resident`).
"""

from __future__ import annotations

import contextvars
import dataclasses
import os

import torch

from .._lstm_glue import (
    HARD_SIGMOID,
    RELU,
    SIGMOID,
    TANH,
    ArrayOps,
    block_activations,
    gate_blocks,
    lstm_gradients_kernel,
    lstm_kernel,
    step_order,
    step_shift,
)
from .._lstm_glue import direction_part as _part
from . import kernel, lstm_route
from .kernels import available as _triton_available

__all__ = ["lstm_forward", "lstm_backward"]


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _dims(x: torch.Tensor, R: torch.Tensor, bidirectional: bool) -> tuple[int, ...]:
    """(T, N, D, H, 4H) of an LSTM call: x [T, N, I], R [.., 4H, H]."""
    H = R.shape[-1]
    return x.shape[0], x.shape[1], 2 if bidirectional else 1, H, 4 * H


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def _cast(a, dtype):
    return None if a is None else a.to(dtype)


def _runs(blk_act: list[int]) -> list[tuple[int, int, int]]:
    """Maximal runs (first block, end block, activation) of equal activations."""
    out, k = [], 0
    while k < 4:
        e = k + 1
        while e < 4 and blk_act[e] == blk_act[k]:
            e += 1
        out.append((k, e, blk_act[k]))
        k = e
    return out




_PATHS = ("persistent", "step", "torch")
_HALF = (torch.float16, torch.bfloat16)


def _kernel_path() -> str:
    """MPSGRAPH_LSTM_KERNEL (module docstring); default persistent."""
    v = os.environ.get("MPSGRAPH_LSTM_KERNEL", "").strip().lower() or "persistent"
    if v not in _PATHS:
        raise ValueError(f"MPSGRAPH_LSTM_KERNEL={v!r}: expected one of {', '.join(_PATHS)}")
    return v


def _fused_kernels(device: torch.device, dtype: torch.dtype):
    """The fused Triton step kernels when they can run here (CUDA, or TRITON_INTERPRET=1),
    else None (plain torch)."""
    if dtype != torch.float32 or _kernel_path() == "torch" or not _triton_available(device):
        return None
    from .kernels import lstm_cell

    return lstm_cell


def _allow_tf32() -> bool:
    return bool(torch.backends.cuda.matmul.allow_tf32)


def _persistent_plan(device: torch.device, dtype: torch.dtype, T: int, N: int, H: int,
                     D: int, backward: bool = False):
    """The persistent kernels' tiling (the backward kernel's with `backward`) when they apply
    to this call, else None.

    By default (no MPSGRAPH_LSTM_KERNEL) float32 takes the persistent path only while a step's
    recurrent product is small (N * 4H * H <= 2**26 multiply-adds): measured on the H200, its
    in-kernel float32 dots lose to cuBLAS's per-step GEMMs beyond that ((T=100, N=64, H=1024):
    13.4 ms against 10.1 ms for the step path; (T=200, N=256, H=512): 28.4 against 20.9), while
    at (T=100, N=64, H=256) and (T=50, N=8, H=128) they win (3.1 against 3.3 ms; 0.89 against
    3.2 ms). (The step path has got faster since: 9.7 and 19.8 ms at the first two shapes.)
    The half types always take it (their step path computes in float32)."""
    path = _kernel_path()
    if (dtype not in (torch.float32, *_HALF) or T == 0 or N == 0 or H == 0
            or path != "persistent" or not _triton_available(device)):
        return None
    if (dtype == torch.float32 and "MPSGRAPH_LSTM_KERNEL" not in os.environ
            and N * 4 * H * H > 1 << 26):
        return None
    from .kernels import lstm_seq_fwd

    sync = device.type == "cuda" and not lstm_seq_fwd.interpreting()
    return lstm_seq_fwd.plan(N, H, D, device, dtype, max_programs=None if sync else 1 << 30,
                             allow_tf32=_allow_tf32(), backward=backward)


def plan_for(device: torch.device, dtype: torch.dtype, N: int, H: int, D: int,
             backward: bool = False):
    """The persistent kernels' planned tiling without the hand rule's size cutoff (a
    candidate of the autotuner, lstm_route.py), or None where they cannot run."""
    if dtype not in (torch.float32, *_HALF) or N == 0 or H == 0 or not _triton_available(
            device):
        return None
    from .kernels import lstm_seq_fwd

    sync = device.type == "cuda" and not lstm_seq_fwd.interpreting()
    return lstm_seq_fwd.plan(N, H, D, device, dtype, max_programs=None if sync else 1 << 30,
                             allow_tf32=_allow_tf32(), backward=backward)


# the path a call must take (set while the autotuner times a candidate; "hand": the hand
# rules): lstm_route.py's names
_FORCE: contextvars.ContextVar[str | None] = contextvars.ContextVar("mpsgraph_lstm_force",
                                                                    default=None)


def _path_tiling(path: str, device, dtype, N: int, H: int, D: int, backward: bool):
    """(takes the persistent kernels, their tiling: None = the wrappers decide, which is the
    cluster path where it applies) of a path name."""
    if path == "cluster":
        return True, None
    if path == "persistent":
        return True, plan_for(device, dtype, N, H, D, backward)
    if path.startswith("persistent:"):
        return True, lstm_route.tiling_of(path, device, dtype, N, H, D)
    return False, None


def _hand_path(x, R, bidirectional: bool) -> str | None:
    """The name (lstm_route.py) of the path the hand rules take for this call."""
    T, N, H, D = x.shape[0], x.shape[1], R.shape[-1], 2 if bidirectional else 1
    if _persistent_plan(x.device, x.dtype, T, N, H, D) is not None:
        from .kernels import lstm_seq_fwd

        probe = torch.empty((D, 4 * H, H), dtype=x.dtype, device="meta")
        if (x.dtype == torch.float32 and x.device.type == "cuda"
                and lstm_seq_fwd.cluster_config(x.device, T, N, probe, D, None, None, ())
                is not None):
            return "cluster"
        return "persistent"
    return "step" if _fused_kernels(x.device, _compute_dtype(x.dtype)) is not None and (
        x.dtype == torch.float32) else None


def _tuning_run(args: tuple, kw: dict):
    """run(path, train): one forward (and with `train` one backward with every gradient, of
    a fixed random dstate) of the call `args` on `path` (None: the hand rules)."""
    x, R, W, b, h0, c0, mask, peephole = args
    memo: dict[str, torch.Tensor] = {}

    def run(path, train):
        tok = _FORCE.set(path or "hand")
        try:
            st, ce, zs = lstm_forward(*args, **kw)
            if train:
                if "d" not in memo:
                    memo["d"] = torch.randn(st.shape, dtype=st.dtype, device=st.device)
                lstm_backward(x, R, memo["d"], zs, ce, W, b, h0, c0, mask, peephole, **kw,
                              need_b=b is not None, need_peephole=peephole is not None,
                              need_h0=h0 is not None, need_c0=c0 is not None)
        finally:
            _FORCE.reset(tok)

    return run



def _act(kind: int, a: torch.Tensor) -> torch.Tensor:
    if kind == TANH:
        return torch.tanh(a)
    if kind == SIGMOID:
        return torch.sigmoid(a)
    if kind == RELU:
        return torch.relu(a)
    if kind == HARD_SIGMOID:
        return torch.clamp(a * 0.2 + 0.5, 0.0, 1.0)
    return a


def _dact(kind: int, y: torch.Tensor) -> torch.Tensor:
    """f'(a) written from y = f(a); a NaN output gives a NaN derivative for every activation."""
    if kind == TANH:
        return 1.0 - y * y
    if kind == SIGMOID:
        return y * (1.0 - y)
    if kind == RELU:
        return torch.where(torch.isnan(y), y, (y > 0).to(y.dtype))
    if kind == HARD_SIGMOID:
        return torch.where(torch.isnan(y), y, ((y > 0) & (y < 1)).to(y.dtype) * 0.2)
    return y * 0.0 + 1.0


def _gates(a: torch.Tensor, runs, H: int) -> torch.Tensor:
    """Activate [N, 4H] pre-activations block by block (one call per run of equal ones)."""
    if len(runs) == 1:
        return _act(runs[0][2], a)
    return torch.cat([_act(k, a[:, s * H:e * H]) for s, e, k in runs], dim=1)


def _dgates(z: torch.Tensor, runs, H: int) -> torch.Tensor:
    if len(runs) == 1:
        return _dact(runs[0][2], z)
    return torch.cat([_dact(k, z[..., s * H:e * H]) for s, e, k in runs], dim=-1)


# ----------------------------------------------------------------------------------------------
# forward
# ----------------------------------------------------------------------------------------------


def lstm_forward(x, R, W=None, b=None, h0=None, c0=None, mask=None, peephole=None, *,
                 reverse: bool, bidirectional: bool, forget_gate_last: bool,
                 activations: tuple[int, int, int, int, int]):
    """LSTM forward. Returns (state [T,N,D*H], cell [T,N,D*H], zState [T,N,D*4H]). The path:
    the autotuner's choice (lstm_route.py) where it has one, else the hand rules below."""
    kw = dict(reverse=reverse, bidirectional=bidirectional, forget_gate_last=forget_gate_last,
              activations=activations)
    args = (x, R, W, b, h0, c0, mask, peephole)
    path = _FORCE.get()
    if path is None:
        path = lstm_route.forward_choice(_tuning_run(args, kw),
                                         lambda: _hand_path(x, R, bidirectional), *args, **kw)
    D = 2 if bidirectional else 1
    if path == "cudnn":
        return lstm_route.cudnn_forward(x, R, W, b, h0, c0, bidirectional=bidirectional,
                                        train=lstm_route.N_OUTPUTS.get() != 1)
    if path is not None and path != "hand":
        pers, tiling = _path_tiling(path, x.device, x.dtype, x.shape[1], R.shape[-1], D, False)
        if pers:
            return _forward_persistent(*args, **kw, tiling=tiling)
        return _forward_steps(*args, **kw)
    if _persistent_plan(x.device, x.dtype, x.shape[0], x.shape[1], R.shape[-1],
                        2 if bidirectional else 1) is not None:
        return _forward_persistent(x, R, W, b, h0, c0, mask, peephole, reverse=reverse,
                                   bidirectional=bidirectional,
                                   forget_gate_last=forget_gate_last, activations=activations)
    return _forward_steps(*args, **kw)


def _forward_steps(x, R, W, b, h0, c0, mask, peephole, *, reverse: bool, bidirectional: bool,
                   forget_gate_last: bool, activations: tuple[int, int, int, int, int]):
    """lstm_forward on the per-step paths (step / torch)."""
    in_dtype = x.dtype
    dt = _compute_dtype(in_dtype)
    x, R, W, b, h0, c0, mask, peephole = (
        _cast(a, dt) for a in (x, R, W, b, h0, c0, mask, peephole))
    T, N, D, H, G = _dims(x, R, bidirectional)
    dev = x.device
    blocks = gate_blocks(forget_gate_last)
    runs = _runs(block_activations(blocks, activations))
    g_kind = int(activations[4])

    # the input projection of all steps and both directions: one matmul (bias fused)
    if W is not None:
        x2 = x.reshape(T * N, x.shape[2])
        xp = (x2 @ W.t() if b is None else torch.addmm(b, x2, W.t())).reshape(T, N, D * G)
    else:
        xp = x if b is None else x + b
    # xp is ours unless it is the caller's x: then each step's addmm accumulates into it in
    # place (no copy of xp[t] into a new result per step; each step reads its slice once)
    own_xp = xp is not x
    zs = torch.empty((T, N, D * G), dtype=dt, device=dev)
    state = torch.empty((T, N, D * H), dtype=dt, device=dev)
    cell = torch.empty((T, N, D * H), dtype=dt, device=dev)
    mask_seq = None if mask is None else mask.expand(T, N, D * H)
    bi, bf, bz, bo = blocks
    fused = _fused_kernels(dev, dt)
    for d in range(D):
        RT = R[d].t().contiguous()                           # [H, 4H]
        xd, zd = _part(xp, d, G), _part(zs, d, G)
        sd, cd, md = _part(state, d, H), _part(cell, d, H), _part(mask_seq, d, H)
        p = None if peephole is None else peephole[d].reshape(4, H).contiguous()
        h = torch.zeros((N, H), dtype=dt, device=dev) if h0 is None else _part(h0, d, H)
        c = torch.zeros((N, H), dtype=dt, device=dev) if c0 is None else _part(c0, d, H)
        for t in step_order(T, (d == 1) if bidirectional else reverse):
            hin = h if md is None else h * md[t]
            a = xd[t].addmm_(hin, RT) if own_xp else torch.addmm(xd[t], hin, RT)
            if fused is not None:  # gate math, cell and state update in one launch
                fused.forward_step(a, c, p, zd[t], cd[t], sd[t], blocks, activations)
                c, h = cd[t], sd[t]
                continue
            if p is not None:
                a = a + (c[:, None, :] * p).reshape(N, G)
            z = _gates(a, runs, H)
            zd[t] = z
            z4 = z.view(N, 4, H)
            c = z4[:, bf] * c + z4[:, bi] * z4[:, bz]
            h = z4[:, bo] * _act(g_kind, c)
            cd[t] = c
            sd[t] = h
    if dt != in_dtype:
        return state.to(in_dtype), cell.to(in_dtype), zs.to(in_dtype)
    return state, cell, zs


# ----------------------------------------------------------------------------------------------
# backward
# ----------------------------------------------------------------------------------------------


def _gradients(dA, x, W, dR, dp, dh0, dc0, *, need_b: bool, need_h0: bool, need_c0: bool,
               db_dtype: torch.dtype | None = None) -> dict:
    """The gradients lstm_backward returns, given dL/da of every step (dA [T, N, D*4H]), dR,
    dp [D, 4, H] and the initial-state carries: db, dW and dx are one reduction / GEMM over
    all steps (db accumulated in `db_dtype`, default dA's)."""
    T, N, DG = dA.shape
    dA2 = dA.reshape(T * N, DG)
    db = dA2.sum(dim=0, dtype=db_dtype) if need_b else None
    if W is not None:
        dW = dA2.t() @ x.reshape(T * N, x.shape[2])
        dx = (dA2 @ W).reshape(x.shape)
    else:
        dW, dx = None, dA
    return {"source": dx, "recurrentWeight": dR, "inputWeight": dW, "bias": db,
            "peephole": None if dp is None else dp.reshape(dp.shape[0], DG // dp.shape[0]),
            "initState": dh0 if need_h0 else None, "initCell": dc0 if need_c0 else None}


def lstm_backward(x, R, dstate, zstate, cell, W=None, b=None, h0=None, c0=None, mask=None,
                  peephole=None, dh_final=None, dc_final=None, dcell_seq=None, *,
                  reverse: bool, bidirectional: bool, forget_gate_last: bool,
                  activations: tuple[int, int, int, int, int],
                  need_b: bool, need_peephole: bool, need_h0: bool, need_c0: bool,
                  wide: tuple[str, ...] = ()):
    """LSTMGradients. Returns {'source', 'recurrentWeight', 'inputWeight', 'bias', 'peephole',
    'initState', 'initCell'}; inputWeight is None without W, the others None unless asked
    for. `b` is read only to recompute the forward when zState / cell are the cuDNN path's
    placeholders of another call (lstm_route.py); zState holds the gates. The gradients named
    in `wide` stay in float32 for the half types (the caller reduces them, then rounds once).
    The path: that of the forward's tuned key where there is one, else the hand rules."""
    kw = dict(reverse=reverse, bidirectional=bidirectional, forget_gate_last=forget_gate_last,
              activations=activations)
    need = dict(need_b=need_b, need_peephole=need_peephole, need_h0=need_h0, need_c0=need_c0)
    rec = lstm_route.record(zstate)
    if rec is None:
        rec = lstm_route.record(cell)
    if rec is not None:
        g = lstm_route.cudnn_backward(rec, x, R, W, h0, c0, dstate, dh_final, dc_final,
                                      dcell_seq, bidirectional=bidirectional, need_b=need_b,
                                      need_h0=need_h0, need_c0=need_c0, wide=wide)
        if g is not None:
            return g
        # placeholders of another call (or a per-step cell gradient): the real zState / cell
        tok = _FORCE.set("hand")
        try:
            _, cell, zstate = lstm_forward(x, R, W, b, h0, c0, mask, peephole, **kw)
        finally:
            _FORCE.reset(tok)
    D = 2 if bidirectional else 1
    path = _FORCE.get()
    if path is None:
        path = lstm_route.backward_choice(x, R, W, b, h0, c0, mask, peephole, **kw)
    del b
    args = (x, R, dstate, zstate, cell, W, h0, c0, mask, peephole, dh_final, dc_final,
            dcell_seq)
    if path is not None and path not in ("hand", "cudnn"):
        pers, tiling = _path_tiling(path, x.device, x.dtype, x.shape[1], R.shape[-1], D, True)
        if pers:
            return _backward_persistent(*args, **kw, **need, wide=wide, tiling=tiling)
        return _backward_steps(*args, **kw, **need, wide=wide)
    if _persistent_plan(x.device, x.dtype, x.shape[0], x.shape[1], R.shape[-1],
                        2 if bidirectional else 1, backward=True) is not None:
        return _backward_persistent(*args, **kw, **need, wide=wide)
    return _backward_steps(*args, **kw, **need, wide=wide)


def _backward_steps(x, R, dstate, zstate, cell, W=None, h0=None, c0=None, mask=None,
                    peephole=None, dh_final=None, dc_final=None, dcell_seq=None, *,
                    reverse: bool, bidirectional: bool, forget_gate_last: bool,
                    activations: tuple[int, int, int, int, int],
                    need_b: bool, need_peephole: bool, need_h0: bool, need_c0: bool,
                    wide: tuple[str, ...] = ()):
    """lstm_backward on the per-step paths (step / torch)."""
    in_dtype = x.dtype
    dt = _compute_dtype(in_dtype)
    (x, R, dstate, zstate, cell, W, h0, c0, mask, peephole, dh_final, dc_final,
     dcell_seq) = (_cast(a, dt) for a in (x, R, dstate, zstate, cell, W, h0, c0, mask,
                                           peephole, dh_final, dc_final, dcell_seq))
    T, N, D, H, G = _dims(x, R, bidirectional)
    dev = x.device
    blocks = gate_blocks(forget_gate_last)
    bi, bf, bz, bo = blocks
    runs = _runs(block_activations(blocks, activations))
    g_kind = int(activations[4])

    dA = torch.empty((T, N, D * G), dtype=dt, device=dev)     # dL/da (= dx' per step)
    dR = torch.zeros((D, G, H), dtype=dt, device=dev)
    dp = torch.zeros((D, 4, H), dtype=dt, device=dev) if need_peephole else None
    dh0 = torch.empty((N, D * H), dtype=dt, device=dev)
    dc0 = torch.empty((N, D * H), dtype=dt, device=dev)
    mask_seq = None if mask is None else mask.expand(T, N, D * H)
    zero = torch.zeros((N, H), dtype=dt, device=dev)
    fused = _fused_kernels(dev, dt)
    for d in range(D):
        rev = (d == 1) if bidirectional else reverse
        zd, cd, dAd = _part(zstate, d, G), _part(cell, d, H), _part(dA, d, G)
        md, dsd, dcsd = _part(mask_seq, d, H), _part(dstate, d, H), _part(dcell_seq, d, H)
        z4 = zd.reshape(T, N, 4, H)
        gi, gf, gz, go = z4[:, :, bi], z4[:, :, bf], z4[:, :, bz], z4[:, :, bo]
        p = None if peephole is None else peephole[d].reshape(4, H).contiguous()
        Rd = R[d]
        gs = _act(g_kind, cd)                                  # g(c[t]) for all t
        if fused is None:
            dgs = _dact(g_kind, gs)
            fp = _dgates(zd, runs, H)                          # f'(gates) for all t
        step = 1 if rev else -1
        cons, prod, first = step_shift(T, rev)
        c_init = zero if c0 is None else _part(c0, d, H)
        dh_c = zero if dh_final is None else _part(dh_final, d, H)
        dc_c = zero if dc_final is None else _part(dc_final, d, H)
        dc_bufs = (torch.empty((N, H), dtype=dt, device=dev),
                   torch.empty((N, H), dtype=dt, device=dev))
        m_c = None  # (fused) the mask dh_c still needs: that of the step which produced it
        for k, t in enumerate(step_order(T, not rev)):             # reverse of processing order
            c_prev = c_init if t == first else cd[t + step]
            if fused is not None:  # dh = dstate[t] + dh_c * m, the gate derivatives and the
                dc_next = dc_bufs[k % 2]  # cell carry in one launch
                fused.backward_step(dh_c, dc_c, zd[t], cd[t], c_prev,
                                    None if dcsd is None else dcsd[t], p, dAd[t], dc_next,
                                    blocks, activations, dstate=dsd[t], carry_mask=m_c)
                dh_c = dAd[t] @ Rd
                m_c = None if md is None else md[t]
                dc_c = dc_next
                continue
            dh = dsd[t] + dh_c
            dc = dc_c + dh * go[t] * dgs[t]
            if dcsd is not None:
                dc = dc + dcsd[t]
            mult = torch.empty((N, 4, H), dtype=dt, device=dev)
            mult[:, bi] = dc * gz[t]
            mult[:, bf] = dc * c_prev
            mult[:, bz] = dc * gi[t]
            mult[:, bo] = dh * gs[t]
            da = fp[t] * mult.view(N, G)
            dAd[t] = da
            dh_c = da @ Rd
            if md is not None:
                dh_c = dh_c * md[t]
            dc_c = dc * gf[t]
            if p is not None:
                dc_c = dc_c + (da.view(N, 4, H) * p).sum(dim=1)
        dh0[:, d * H:(d + 1) * H] = dh_c if m_c is None else dh_c * m_c
        dc0[:, d * H:(d + 1) * H] = dc_c
        if not T:
            continue
        # weight gradients over all steps at once
        hs = go * gs                                           # h[t]
        hprev = hs[prod] if md is None else hs[prod] * md[cons]
        rows = (T - 1) * N
        dA4 = dAd.reshape(T, N, 4, H)
        dR[d] = dAd[cons].reshape(rows, G).t() @ hprev.reshape(rows, H)
        if h0 is not None:
            h0d = _part(h0, d, H)
            h0m = h0d if md is None else h0d * md[first]
            dR[d] += dAd[first].t() @ h0m
        if dp is not None:
            dp[d] = torch.einsum("tnkh,tnh->kh", dA4[cons], cd[prod])
            if c0 is not None:
                dp[d] += torch.einsum("nkh,nh->kh", dA4[first], _part(c0, d, H))
    out = _gradients(dA, x, W, dR, dp, dh0, dc0, need_b=need_b, need_h0=need_h0,
                     need_c0=need_c0)
    if dt != in_dtype:
        out = {k: v if v is None or k in wide else v.to(in_dtype) for k, v in out.items()}
    return out


# ----------------------------------------------------------------------------------------------
# persistent kernels (kernels/lstm_seq_fwd.py, kernels/lstm_seq_bwd.py)
# ----------------------------------------------------------------------------------------------


def _forward_persistent(x, R, W, b, h0, c0, mask, peephole, *, reverse: bool,
                        bidirectional: bool, forget_gate_last: bool,
                        activations: tuple[int, int, int, int, int], tiling=None):
    """lstm_forward through the persistent kernel (`tiling`: forced, else the wrapper's). The
    input projection stays in the input dtype (one GEMM, bias fused); the kernel widens
    everything it reads to float32, computes in float32 and writes the outputs in the input
    dtype (each value rounded once by its store; the cell is carried in float32)."""
    from .kernels import lstm_seq_fwd

    dt = x.dtype
    T, N, D, H, G = _dims(x, R, bidirectional)
    dev = x.device
    if W is not None:
        x2 = x.reshape(T * N, x.shape[2])
        xp = (x2 @ W.t() if b is None else torch.addmm(b, x2, W.t())).view(T, N, D * G)
    else:
        xp = x if b is None else x + b
    state = torch.empty((T, N, D * H), dtype=dt, device=dev)
    cell = torch.empty((T, N, D * H), dtype=dt, device=dev)
    zs = torch.empty((T, N, D * G), dtype=dt, device=dev)
    ran = lstm_seq_fwd.forward_sequence(
        xp, R.reshape(D, G, H), h0, c0, mask, peephole, state, cell, zs, reverse=reverse,
        bidirectional=bidirectional, blocks=gate_blocks(forget_gate_last),
        activations=activations, allow_tf32=_allow_tf32(), tiling=tiling)  # the wrapper
    # plans the tiling where none is given
    # again (cached) or takes the cluster path (kernels/lstm_cluster.py) where that applies
    assert ran, "persistent LSTM forward: planned but not run"
    return state, cell, zs


def _backward_persistent(x, R, dstate, zstate, cell, W, h0, c0, mask, peephole, dh_final,
                         dc_final, dcell_seq, *, reverse: bool, bidirectional: bool,
                         forget_gate_last: bool, activations: tuple[int, int, int, int, int],
                         need_b: bool, need_peephole: bool, need_h0: bool, need_c0: bool,
                         wide: tuple[str, ...] = (), tiling=None):
    """lstm_backward through the persistent recurrence kernel (`tiling`: forced, else the
    wrapper's), which writes dA (in the input
    dtype), dh0 and dc0 (float32); then the weight gradients are one GEMM each over all steps,
    in the input dtype (fp32 accumulation): dR[d] = dA_d^T @ (h_prev * m) with h_prev of every
    step (h0 / zeros at the first), dW = dA^T @ x, dx = dA @ W; db reduces in float32, the
    peephole gradient comes from the kernel (float32)."""
    from .kernels import lstm_seq_bwd

    dt = x.dtype
    f32 = torch.float32
    T, N, D, H, G = _dims(x, R, bidirectional)
    dev = x.device
    blocks = gate_blocks(forget_gate_last)
    mask_seq = None if mask is None else mask.expand(T, N, D * H)
    dA = torch.empty((T, N, D * G), dtype=dt, device=dev)
    dh0 = torch.empty((N, D * H), dtype=f32, device=dev)
    dc0 = torch.empty((N, D * H), dtype=f32, device=dev)
    # the peephole gradient is summed in the kernel (float32 dA, c_prev in registers)
    dp = torch.empty((D, 4, H), dtype=f32, device=dev) if need_peephole else None
    # h_prev * m of every step (the recurrent-weight gradient's operand) in the GEMM's dtype:
    # the backward kernels fill every step but each direction's first in passing
    hp = torch.empty((T, N, D * H), dtype=dt, device=dev)
    ran = lstm_seq_bwd.backward_sequence(
        dstate, zstate, cell, R.reshape(D, G, H), c0, mask, peephole, dcell_seq, dh_final,
        dc_final, dA, dh0, dc0, reverse=reverse, bidirectional=bidirectional, blocks=blocks,
        activations=activations, allow_tf32=_allow_tf32(), dpeep=dp,  # as in the forward
        hprev=hp, tiling=tiling)
    assert ran, "persistent LSTM backward: planned but not run"

    dR = torch.empty((D, G, H), dtype=dt, device=dev)
    for d in range(D):
        first = step_shift(T, (d == 1) if bidirectional else reverse)[2]
        dAd = _part(dA, d, G)
        hpd = _part(hp, d, H)
        if h0 is None:
            hpd[first] = 0.0
        else:
            hpd[first] = _part(h0, d, H) if mask_seq is None else (
                _part(h0, d, H) * _part(mask_seq, d, H)[first])
        # one GEMM in the input dtype
        dR[d] = dAd.reshape(T * N, G).t() @ hpd.reshape(T * N, H)
    out = _gradients(dA, x, W, dR, dp, dh0, dc0, need_b=need_b, need_h0=need_h0,
                     need_c0=need_c0, db_dtype=f32)
    return {k: v if v is None or k in wide else v.to(dt) for k, v in out.items()}


# ----------------------------------------------------------------------------------------------
# graph kernels: the argument handling shared by the backends (backends/_lstm_glue.py)
# ----------------------------------------------------------------------------------------------


_XP = ArrayOps(
    ndim=lambda a: a.dim(),
    broadcast=lambda a, shape: a.expand(*shape),
    sum=lambda a, axes, keep: a.sum(dim=axes, keepdim=keep),
    widen=lambda a: (a.float() if a.dtype in (torch.float16, torch.bfloat16) else a, a.dtype),
    narrow=lambda a, dt: a.to(dt),
    contiguous=lambda a: a.contiguous(),
)

_lstm_graph = lstm_kernel(_XP, lstm_forward)


@kernel("LSTM")
def LSTM(x, R, W, b, h0, c0, mask, peephole, a):
    tok = lstm_route.N_OUTPUTS.set(a.n_outputs)  # (an inference call may take cuDNN)
    try:
        return _lstm_graph(x, R, W, b, h0, c0, mask, peephole, a)
    finally:
        lstm_route.N_OUTPUTS.reset(tok)


LSTMGradients = kernel("LSTMGradients")(lstm_gradients_kernel(_XP, lstm_backward))


# ----------------------------------------------------------------------------------------------
# GRU and singleGateRNN: the shared recurrences of backends/_gru_glue.py on torch tensors
# (batched torch ops per step, on any device; float64 too; the half types compute in float32)
# ----------------------------------------------------------------------------------------------


def _gated_ops():
    from .._gru_glue import GatedOps

    return GatedOps(
        base=_XP,
        empty=lambda shape, like: torch.empty(shape, dtype=like.dtype, device=like.device),
        zeros=lambda shape, like: torch.zeros(shape, dtype=like.dtype, device=like.device),
        t=lambda a: a.t(),
        act=_act,
        dact=_dact,
    )


def _register_gated() -> None:
    """The gated kernels: cuDNN's own GRU / RNN where gru_route.py chooses it (the options are
    cuDNN's and the tuner measured it faster, or MPSGRAPH_GRU_KERNEL=cudnn), else the fused
    Triton kernels (backends/torch/gru_fused.py, kernels/gru_seq.py; MPSGRAPH_GRU_KERNEL=torch
    turns them off), else the per-step torch path."""
    from .._gru_glue import gated_kernels
    from . import gru_fused, gru_route

    ks = gated_kernels(_gated_ops())
    for _name, _fn in ks.items():
        kernel(_name)(_fn)

    def ours_forward(x, R, W, b, h0, mask, b2, a):
        y = gru_fused.forward(x, R, W, b, h0, mask, b2, a)
        if y is not None:
            return y
        if a.gates == 3:
            return ks["GRU"](x, R, W, b, h0, mask, b2, a)
        return ks["singleGateRNN"](x, R, W, b, h0, mask, a)

    def ours_backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a):
        g = gru_fused.backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a)
        if g is not None:
            return g
        if a.gates == 3:
            return ks["GRUGradients"](x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2,
                                      a)
        return ks["singleGateRNNGradients"](x, R, dstate, zs, dh_final, W, b, h0, mask, a)

    def forward(x, R, W, b, h0, mask, b2, a):
        choice = gru_route.forward_choice(
            x, R, W, b, h0, mask, b2, a,
            lambda a2: ours_forward(x, R, W, b, h0, mask, b2, a2),
            lambda zs, st, ga, ds: ours_backward(x, R, ds, zs, st, None, W, b, h0, mask, b2,
                                                 ga))
        if choice == "cudnn":
            return gru_route.cudnn_forward(x, R, W, b, h0, b2, a)
        with gru_route.tiling(choice):
            return ours_forward(x, R, W, b, h0, mask, b2, a)

    def backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a):
        rec = gru_route.record(zs)
        with gru_route.tiling(gru_route.backward_choice(x, W, b, h0, mask, b2, a)):
            if rec is not None:
                g = gru_route.cudnn_backward(rec, x, R, dstate, dh_final, W, b, h0, b2, a)
                if g is not None:
                    return g
                # a placeholder of other inputs: this call's zState (and state) on our path
                out_fwd, zs = ours_forward(x, R, W, b, h0, mask, b2,
                                           dataclasses.replace(a, n_outputs=2))
            return ours_backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a)

    def GRU(x, R, W, b, h0, mask, b2, a):
        return forward(x, R, W, b, h0, mask, b2, a)

    def singleGateRNN(x, R, W, b, h0, mask, a):
        return forward(x, R, W, b, h0, mask, None, a)

    def GRUGradients(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a):
        return backward(x, R, dstate, zs, out_fwd, dh_final, W, b, h0, mask, b2, a)

    def singleGateRNNGradients(x, R, dstate, zs, dh_final, W, b, h0, mask, a):
        return backward(x, R, dstate, zs, None, dh_final, W, b, h0, mask, None, a)

    kernel("GRU")(GRU)
    kernel("singleGateRNN")(singleGateRNN)
    kernel("GRUGradients")(GRUGradients)
    kernel("singleGateRNNGradients")(singleGateRNNGradients)


_register_gated()
