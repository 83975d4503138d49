"""NumPy reference kernels of MPSGraph's LSTM and LSTMGradients (SPEC.md section 3).

Kernels work on CANONICAL arrays; the graph layer (ops/rnn.py) has validated every shape and
reshaped every argument to these forms. T time, N batch, I input, H hidden, D = 2 if
bidirectional else 1:

  x        [T, N, I], or [T, N, D*4H] when W is None (then x is already the gate input x')
  R        [D, 4H, H]               recurrent weights; R[d] for direction d
  W        [D*4H, I] or None        input weights; rows d*4H:(d+1)*4H for direction d
  b        [D*4H] or None           bias
  h0, c0   [N, D*H] or None         initial state / cell (zeros when None)
  mask     None, [N, D*H] (every step) or [T, N, D*H] (m[t] at the step consuming x[t])
  peephole [D, 4H] or None
  outputs  state, cell [T, N, D*H]; zState [T, N, D*4H] (post-activation gates)
  dstate   [T, N, D*H] = sourceGradient = dL/dstate
  dh_final, dc_final [N, D*H] or None (dL/d final state / cell of each direction);
  dcell_seq [T, N, D*H] or None (dL/dcell, added at every step); never both dc_final and it.

Every 4H axis stacks four H-blocks in the descriptor's gate order: [i, f, z, o], or
[i, z, f, o] when forget_gate_last. `activations` = (f_i, f_f, f_z, f_o, g) as RNNActivation
ints: 0 none, 1 relu, 2 tanh, 3 sigmoid, 4 hardSigmoid = clip(0.2 a + 0.5, 0, 1).

Semantics as the plain loop (per direction d; rev = (d == 1) if bidirectional else reverse):

    h, c = h0[:, dH:(d+1)H], c0[:, dH:(d+1)H]
    for t in (T-1, ..., 0) if rev else (0, ..., T-1):     # outputs stay aligned with x[t]
        a = x[t] @ W_d^T + b_d + (h * m[t]) @ R[d]^T + concat_k(p[d]_k * c)    # [N, 4H]
        i, f, z, o = f_i(a_i), f_f(a_f), f_z(a_z), f_o(a_o)
        c = f * c + i * z
        h = o * g(c)
        state[t, :, dH:(d+1)H], cell[t, :, dH:(d+1)H] = h, c
        zState[t, :, d4H:(d+1)4H] = [i, f, z, o] in gate order

Backward (SPEC 3.7), derivatives written from outputs (f'(a) as a function of y = f(a)),
h_prev recomputed as o * g(c) of the previous processed step (h0 at the first one):

    dh_c, dc_c = dh_final_d, dc_final_d                          # zeros when None
    for t in the reverse of the processing order:
        dh  = dstate[t] + dh_c
        dc  = dc_c + dh * o * g'(g(c[t])) (+ dcell_seq[t])
        da  = [dc * z * f_i'(i), dc * c_prev * f_f'(f), dc * i * f_z'(z), dh * g(c[t]) * f_o'(o)]
        dh_c = (da @ R[d]) * m[t]
        dc_c = dc * f + sum_k da_k * p[d]_k
        dR[d] += da^T @ (h_prev * m[t]);  dp[d]_k += sum_n da_k * c_prev;  dx'[t] = da
    dh0, dc0 = dh_c, dc_c;  dW = dx'^T @ x;  dx = dx' @ W (or dx' without W);  db = sum dx'

How the vectorised code maps to the loop (Python overhead per step dominates at small sizes,
so a step is one matmul per direction plus as few elementwise NumPy calls as possible):

- Forward: the input projection of all T steps and both directions is ONE matmul written into
  the zState buffer. A step computes h_prev @ R^T into a contiguous [N, 4H] buffer (R^T
  transposed once), adds x'[t], applies the activations in place and stores the gates into
  zState[t]. sigmoid(a) is evaluated as 0.5 * tanh(a / 2) + 0.5, with the 1/2 folded into the
  sigmoid rows of W, b, R and peephole beforehand (an exact power-of-two scaling), so a single
  tanh call covers every gate whose activation is tanh or sigmoid, and the affine part is two
  calls with [N, 4H] constants. Its error is below one unit in the last place of 1 (absolute),
  so sigmoid values far below the epsilon of the compute type lose relative precision.
- Backward: g(c) of all steps is computed once (one call) into a [T, N, H] work buffer. A step
  computes dh, dc, the multipliers (dc*z, dc*c_prev, dc*i, dh*g(c)) of the four gate blocks
  into one [N, 4H] buffer, the derivatives of all gate activations in one expression on
  [N, 4H] (f' = (alpha - y) * y + beta covers sigmoid and tanh), and writes their product to
  dA[t]; one [N, 4H] @ [4H, H] product gives the next dh carry. After the loop the work buffer
  is turned into h_prev * m in place and dR, dW, db, dp and dx are each one matmul / reduction
  over all steps (only dA [T, N, D*4H] and the [T, N, H] work buffer are allocated beyond the
  outputs).
- float16 / bfloat16 compute in float32 (state carried in float32); each output is rounded
  once, at the end. float32 and float64 compute in their own type.
"""

from __future__ import annotations

import numpy as np

from .._lstm_glue import (
    HARD_SIGMOID,
    NONE,
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
from . import kernel

__all__ = ["lstm_forward", "lstm_backward"]


# ----------------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------------


def _compute_dtype(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _cast(a, dtype):
    return None if a is None else np.asarray(a).astype(dtype, copy=False)





def _expand(operand, shape):
    """A vector operand as a contiguous array of the full `shape`: NumPy's elementwise loops
    are about twice as fast on equal contiguous shapes as with a broadcast row."""
    if isinstance(operand, np.ndarray):
        return np.ascontiguousarray(np.broadcast_to(operand, shape))
    return operand


def _transposed(R_d: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """(R_d * scale[:, None])^T as a C-contiguous [H, 4H] array, in one pass."""
    out = np.empty(R_d.shape[::-1], R_d.dtype)
    if scale is None:
        np.copyto(out, R_d.T)
    else:
        np.multiply(R_d.T, scale, out=out)
    return out


def _act_into(kind: int, src: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = f(src) for an RNNActivation `kind` (out may be src)."""
    if kind == TANH:
        np.tanh(src, out=out)
    elif kind == SIGMOID:
        np.negative(src, out=out)
        np.exp(out, out=out)
        np.add(out, 1.0, out=out)
        np.reciprocal(out, out=out)
    elif kind == RELU:
        np.maximum(src, 0.0, out=out)
    elif kind == HARD_SIGMOID:
        np.multiply(src, 0.2, out=out)
        np.add(out, 0.5, out=out)
        np.maximum(out, 0.0, out=out)
        np.minimum(out, 1.0, out=out)
    elif out is not src:
        np.copyto(out, src)
    return out


def _dact_into(kind: int, y: np.ndarray, out: np.ndarray) -> np.ndarray:
    """out = f'(a) written from the output y = f(a) (SPEC 3.1); out may be y.
    heaviside keeps NaN (a NaN output gives a NaN derivative for every activation)."""
    if kind == TANH:
        np.multiply(y, y, out=out)
        np.subtract(1.0, out, out=out)
    elif kind == SIGMOID:
        if np.shares_memory(y, out):
            y = y.copy()
        np.subtract(1.0, y, out=out)
        np.multiply(out, y, out=out)
    elif kind == RELU:
        np.heaviside(y, 0.0, out=out)
    elif kind == HARD_SIGMOID:
        inside_hi = np.heaviside(np.subtract(1.0, y), 0.0)      # y < 1
        np.heaviside(y, 0.0, out=out)                            # y > 0
        np.multiply(out, inside_hi, out=out)
        np.multiply(out, 0.2, out=out)
    else:
        np.add(np.multiply(y, 0.0, out=out), 1.0, out=out)      # 1 (NaN stays NaN)
    return out


def _gate_plan(blk_act: list[int], H: int, dtype: np.dtype):
    """In-place activation of the [.., 4H] pre-activations, as few NumPy calls as possible.

    Returns (scale, ops): `scale` [4H] is 0.5 on sigmoid blocks and 1 elsewhere (None when
    there is no sigmoid gate): the caller folds it into the weights so the buffer holds a/2 on
    those blocks. `ops` is a list of (ufunc, column slice, operand) applied in order; operand
    None means a unary call. tanh and sigmoid blocks that touch share one tanh call.
    """
    family = (TANH, SIGMOID)
    ops: list[tuple] = []
    k = 0
    while k < 4:
        act = blk_act[k]
        e = k + 1
        while e < 4 and (blk_act[e] in family if act in family else blk_act[e] == act):
            e += 1
        cols = slice(k * H, e * H)
        if act in family:
            ops.append((np.tanh, cols, None))
            sig = [j for j in range(k, e) if blk_act[j] == SIGMOID]
            runs = [j for j in sig if j - 1 not in sig]            # starts of sigmoid runs
            if len(runs) == 1:
                s = slice(sig[0] * H, (sig[-1] + 1) * H)
                ops += [(np.multiply, s, 0.5), (np.add, s, 0.5)]
            elif runs:
                sel = [blk_act[j] == SIGMOID for j in range(k, e)]
                mul = np.repeat(np.where(sel, 0.5, 1.0).astype(dtype), H)
                add = np.repeat(np.where(sel, 0.5, 0.0).astype(dtype), H)
                ops += [(np.multiply, cols, mul), (np.add, cols, add)]
        elif act == RELU:
            ops.append((np.maximum, cols, 0.0))
        elif act == HARD_SIGMOID:
            ops += [(np.multiply, cols, 0.2), (np.add, cols, 0.5),
                    (np.maximum, cols, 0.0), (np.minimum, cols, 1.0)]
        k = e
    if SIGMOID not in blk_act:
        return None, ops
    return np.repeat([0.5 if a == SIGMOID else 1.0 for a in blk_act], H).astype(dtype), ops


# ----------------------------------------------------------------------------------------------
# forward
# ----------------------------------------------------------------------------------------------


def lstm_forward(x, R, W=None, b=None, h0=None, c0=None, mask=None, peephole=None, *,
                 reverse: bool, bidirectional: bool, forget_gate_last: bool,
                 activations: tuple[int, int, int, int, int]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LSTM forward (SPEC 3.5). Returns (state [T,N,D*H], cell [T,N,D*H], zState [T,N,D*4H])."""
    in_dtype = np.dtype(x.dtype)
    dt = _compute_dtype(in_dtype)
    x, R, W, b, h0, c0, mask, peephole = (
        _cast(a, dt) for a in (x, R, W, b, h0, c0, mask, peephole))
    T, N = x.shape[0], x.shape[1]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    G = 4 * H
    bi, bf, bz, bo = gate_blocks(forget_gate_last)
    scale, plan = _gate_plan(block_activations((bi, bf, bz, bo), activations), H, dt)
    g_kind = int(activations[4])

    # Fold the 0.5 of the sigmoid blocks into every term of the pre-activation.
    if scale is not None:
        scale_d = np.tile(scale, D)
        W = None if W is None else W * scale_d[:, None]
        b = None if b is None else b * scale_d
        peephole = None if peephole is None else peephole * scale

    # Input projection of all steps and both directions: one matmul into the zState buffer.
    zs = np.empty((T, N, D * G), dt)
    with np.errstate(all="ignore"):
        if W is not None:
            np.matmul(x.reshape(T * N, x.shape[2]), W.T, out=zs.reshape(T * N, D * G))
        elif scale is not None:
            np.multiply(x, scale_d, out=zs)
        else:
            np.copyto(zs, x)
        if b is not None:
            zs += b
        state = np.empty((T, N, D * H), dt)
        cell = np.empty((T, N, D * H), dt)
        mask_seq = None if mask is None else np.broadcast_to(mask, (T, N, D * H))
        for d in range(D):
            _forward_direction(
                zs=_part(zs, d, G), cell=_part(cell, d, H), state=_part(state, d, H),
                RT=_transposed(R[d], scale),
                h0=_part(h0, d, H), c0=_part(c0, d, H), mask_seq=_part(mask_seq, d, H),
                peephole=None if peephole is None else peephole[d].reshape(4, H),
                plan=plan, g_kind=g_kind, blocks=(bi, bf, bz, bo),
                rev=(d == 1) if bidirectional else reverse)
    if dt != in_dtype:
        return state.astype(in_dtype), cell.astype(in_dtype), zs.astype(in_dtype)
    return state, cell, zs


def _forward_direction(*, zs, cell, state, RT, h0, c0, mask_seq, peephole, plan, g_kind,
                       blocks, rev):
    """One direction, in place. zs [T,N,4H] holds x' (pre-scaled) and receives the gates;
    cell/state [T,N,H] receive c and h. All may be strided views of the full outputs. A step
    builds its pre-activations in a contiguous [N,4H] buffer; the last activation call writes
    zs[t] (or, when the last call does not cover all gates, one copy does)."""
    T, N, G = zs.shape
    H = G // 4
    dt = zs.dtype
    zs4 = zs.reshape(T, N, 4, H)
    gi, gf, gz, go = (zs4[:, :, blk] for blk in blocks)
    a = np.empty((N, G), dt)                        # this step's pre-activations
    a4 = a.reshape(N, 4, H)
    acts = [(fn, cols, _expand(arg, a[:, cols].shape)) for fn, cols, arg in plan]
    last = None                                     # a call over all 4H that can write zs[t]
    if acts and acts[-1][1] == slice(0, G):
        last = acts.pop()
    acts = [(fn, a[:, cols], arg) for fn, cols, arg in acts]
    h = np.zeros((N, H), dt) if h0 is None else h0
    c = np.zeros((N, H), dt) if c0 is None else c0
    ic = np.empty((N, H), dt)                       # i * z
    hm = None if mask_seq is None else np.empty((N, H), dt)
    pc = None if peephole is None else np.empty((N, 4, H), dt)
    for t in step_order(T, rev):
        if hm is not None:
            np.matmul(np.multiply(h, mask_seq[t], out=hm), RT, out=a)
        else:
            np.matmul(h, RT, out=a)
        np.add(a, zs[t], out=a)
        if pc is not None:
            np.add(a4, np.multiply(c[:, None, :], peephole, out=pc), out=a4)
        for fn, v, arg in acts:
            if arg is None:
                fn(v, out=v)
            else:
                fn(v, arg, out=v)
        if last is None:
            np.copyto(zs[t], a)
        elif last[2] is None:
            last[0](a, out=zs[t])
        else:
            last[0](a, last[2], out=zs[t])
        ct = cell[t]
        np.multiply(gf[t], c, out=ct)
        np.add(ct, np.multiply(gi[t], gz[t], out=ic), out=ct)
        ht = state[t]
        if g_kind == NONE:
            np.multiply(ct, go[t], out=ht)
        else:
            np.multiply(_act_into(g_kind, ct, ht), go[t], out=ht)
        h, c = ht, ct


# ----------------------------------------------------------------------------------------------
# backward
# ----------------------------------------------------------------------------------------------


def lstm_backward(x, R, dstate, zstate, cell, W=None, b=None, h0=None, c0=None, mask=None,
                  peephole=None, dh_final=None, dc_final=None, dcell_seq=None, *,
                  reverse: bool, bidirectional: bool, forget_gate_last: bool,
                  activations: tuple[int, int, int, int, int],
                  need_b: bool, need_peephole: bool, need_h0: bool, need_c0: bool,
                  wide: tuple[str, ...] = ()) -> dict[str, np.ndarray | None]:
    """LSTMGradients (SPEC 3.7). Returns {'source', 'recurrentWeight', 'inputWeight', 'bias',
    'peephole', 'initState', 'initCell'}; inputWeight is None without W, the others None unless
    asked for. `b` is not read (zState already holds the gates). The gradients named in `wide`
    stay in the compute dtype (float32 for the half types), for a caller that reduces them
    before rounding once (the graph kernel: a broadcast initState / initCell)."""
    del b
    in_dtype = np.dtype(x.dtype)
    dt = _compute_dtype(in_dtype)
    (x, R, dstate, zstate, cell, W, h0, c0, mask, peephole, dh_final, dc_final,
     dcell_seq) = (_cast(a, dt) for a in (x, R, dstate, zstate, cell, W, h0, c0, mask,
                                           peephole, dh_final, dc_final, dcell_seq))
    T, N = x.shape[0], x.shape[1]
    D = 2 if bidirectional else 1
    H = R.shape[-1]
    G = 4 * H
    blocks = gate_blocks(forget_gate_last)
    blk_act = block_activations(blocks, activations)
    g_kind = int(activations[4])

    dA = np.empty((T, N, D * G), dt)          # dL/da (= dx' per step), both directions
    dR = np.zeros((D, G, H), dt)
    dp = np.zeros((D, 4, H), dt) if need_peephole else None
    dh0 = np.empty((N, D * H), dt)
    dc0 = np.empty((N, D * H), dt)
    mask_seq = None if mask is None else np.broadcast_to(mask, (T, N, D * H))
    with np.errstate(all="ignore"):
        work = np.empty((D, T, N, H), dt)     # per direction: g(c), then h_prev * m
        for d in range(D):
            _backward_direction(
                dA=_part(dA, d, G), work=work[d], dstate=_part(dstate, d, H),
                zs=_part(zstate, d, G), cell=_part(cell, d, H), R=R[d],
                h0=_part(h0, d, H), c0=_part(c0, d, H), mask_seq=_part(mask_seq, d, H),
                peephole=None if peephole is None else peephole[d].reshape(4, H),
                dh_final=_part(dh_final, d, H), dc_final=_part(dc_final, d, H),
                dcell_seq=_part(dcell_seq, d, H), blk_act=blk_act, g_kind=g_kind,
                blocks=blocks, rev=(d == 1) if bidirectional else reverse,
                dR=dR[d], dp=None if dp is None else dp[d],
                dh0=_part(dh0, d, H), dc0=_part(dc0, d, H))
        del work
        dA2 = dA.reshape(T * N, D * G)
        db = dA2.sum(axis=0) if need_b else None
        if W is not None:
            dW = dA2.T @ x.reshape(T * N, x.shape[2])
            dx = (dA2 @ W).reshape(x.shape)
        else:
            dW, dx = None, dA
    out = {"source": dx, "recurrentWeight": dR, "inputWeight": dW, "bias": db,
           "peephole": None if dp is None else dp.reshape(D, G),
           "initState": dh0 if need_h0 else None, "initCell": dc0 if need_c0 else None}
    if dt != in_dtype:
        out = {k: v if v is None or k in wide else v.astype(in_dtype)
               for k, v in out.items()}
    return out


def _backward_direction(*, dA, work, dstate, zs, cell, R, h0, c0, mask_seq, peephole,
                        dh_final, dc_final, dcell_seq, blk_act, g_kind, blocks, rev,
                        dR, dp, dh0, dc0):
    """One direction. Fills dA [T,N,4H] (a strided view of the full buffer), dR [4H,H],
    dp [4,H] (if not None), dh0/dc0 [N,H]; `work` [T,N,H] is scratch."""
    T, N, G = zs.shape
    H = G // 4
    dt = dA.dtype
    bi, bf, bz, bo = blocks
    zs4 = zs.reshape(T, N, 4, H)
    gi, gf, gz, go = zs4[:, :, bi], zs4[:, :, bf], zs4[:, :, bz], zs4[:, :, bo]
    dA4 = dA.reshape(T, N, 4, H)
    family = all(a in (TANH, SIGMOID) for a in blk_act)
    if family:                            # f'(y) = (alpha - y) * y + beta on all four blocks
        sig = np.repeat(np.array(blk_act) == SIGMOID, H)
        alpha = _expand(sig.astype(dt), (N, G))
        beta = None if sig.all() else _expand((~sig).astype(dt), (N, G))
    gs = _act_into(g_kind, cell, work)                      # g(c[t]) for all t
    step = 1 if rev else -1                                 # c_prev of step t is cell[t + step]
    cons, prod, first = step_shift(T, rev)
    c_init = np.zeros((N, H), dt) if c0 is None else c0

    dh = np.empty((N, H), dt)
    dc = np.empty((N, H), dt)
    k = np.empty((N, H), dt)
    mult = np.empty((N, G), dt)           # da = f'(gates) * mult; mult = dc*(z, c_prev, i), dh*g(c)
    mult4 = mult.reshape(N, 4, H)
    fp = np.empty((N, G), dt)             # f'(gates), contiguous
    fp4 = fp.reshape(N, 4, H)
    m_i, m_f, m_z, m_o = mult4[:, bi], mult4[:, bf], mult4[:, bz], mult4[:, bo]
    dh_c = np.zeros((N, H), dt) if dh_final is None else dh_final.copy()
    dc_c = np.zeros((N, H), dt) if dc_final is None else dc_final.copy()
    pc = None if peephole is None else np.empty((N, 4, H), dt)
    psum = None if peephole is None else np.empty((N, H), dt)
    for t in step_order(T, not rev):                            # reverse of the processing order
        zt, dat, gc = zs[t], dA[t], gs[t]
        c_prev = c_init if t == first else cell[t + step]
        np.add(dstate[t], dh_c, out=dh)
        _dact_into(g_kind, gc, k)                           # dc = dc_c + dh * o * g'(c)
        np.multiply(k, go[t], out=k)
        np.multiply(k, dh, out=k)
        np.add(k, dc_c, out=dc)
        if dcell_seq is not None:
            np.add(dc, dcell_seq[t], out=dc)
        np.multiply(gz[t], dc, out=m_i)
        np.multiply(c_prev, dc, out=m_f)
        np.multiply(gi[t], dc, out=m_z)
        np.multiply(gc, dh, out=m_o)
        if family:
            np.subtract(alpha, zt, out=fp)
            np.multiply(fp, zt, out=fp)
            if beta is not None:
                np.add(fp, beta, out=fp)
        else:
            for blk in range(4):
                _dact_into(blk_act[blk], zs4[t, :, blk], fp4[:, blk])
        np.multiply(fp, mult, out=dat)
        np.matmul(dat, R, out=dh_c)                         # carries to the previous step
        if mask_seq is not None:
            np.multiply(dh_c, mask_seq[t], out=dh_c)
        np.multiply(dc, gf[t], out=dc_c)
        if pc is not None:
            np.multiply(dA4[t], peephole, out=pc)
            np.add(dc_c, np.sum(pc, axis=1, out=psum), out=dc_c)
    dh0[...] = dh_c
    dc0[...] = dc_c
    if not T:
        return

    # Weight gradients over all steps at once; `work` turns into h_prev * m.
    hs = np.multiply(gs, go, out=gs)                        # h[t] = o * g(c)
    if mask_seq is not None:
        np.multiply(hs[prod], mask_seq[cons], out=hs[prod])
    rows = (T - 1) * N
    np.matmul(dA[cons].reshape(rows, G).T, hs[prod].reshape(rows, H), out=dR)
    if h0 is not None:
        h0m = h0 if mask_seq is None else h0 * mask_seq[first]
        dR += dA[first].T @ h0m
    if dp is not None:
        np.einsum("tnkh,tnh->kh", dA4[cons], cell[prod], out=dp)
        if c0 is not None:
            dp += np.einsum("nkh,nh->kh", dA4[first], c0)


# ----------------------------------------------------------------------------------------------
# graph kernels: the argument handling shared by the backends (backends/_lstm_glue.py)
# ----------------------------------------------------------------------------------------------


_XP = ArrayOps(
    ndim=lambda a: a.ndim,
    broadcast=np.broadcast_to,
    sum=lambda a, axes, keep: a.sum(axis=axes, keepdims=keep),
    widen=lambda a: (a.astype(np.float32) if a.dtype.itemsize < 4 else a, a.dtype),
    narrow=lambda a, dt: a.astype(dt, copy=False),
    contiguous=lambda a: np.asarray(a, order="C"),  # (ascontiguousarray makes 0-d 1-d)
)

LSTM = kernel("LSTM")(lstm_kernel(_XP, lstm_forward))
LSTMGradients = kernel("LSTMGradients")(lstm_gradients_kernel(_XP, lstm_backward))


# ----------------------------------------------------------------------------------------------
# GRU and singleGateRNN: the shared recurrences of backends/_gru_glue.py on NumPy arrays
# ----------------------------------------------------------------------------------------------


def _gated_ops():
    from .._gru_glue import GatedOps

    return GatedOps(
        base=_XP,
        empty=lambda shape, like: np.empty(shape, like.dtype),
        zeros=lambda shape, like: np.zeros(shape, like.dtype),
        t=lambda a: a.T,
        act=lambda kind, a: _act_into(kind, a, np.empty(a.shape, a.dtype)),
        dact=lambda kind, y: _dact_into(kind, y, np.empty(y.shape, y.dtype)),
        scope=lambda: np.errstate(all="ignore"),
    )


def _register_gated() -> None:
    from .._gru_glue import gated_kernels

    for _name, _fn in gated_kernels(_gated_ops()).items():
        kernel(_name)(_fn)


_register_gated()
