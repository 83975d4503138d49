"""Persistent GRU and single-gate RNN kernels (Triton): every time step of both directions of
the forward in ONE launch, and of the backward recurrence in another (the LSTM's design,
kernels/lstm_seq_fwd.py and lstm_seq_bwd.py, whose grid barrier, tiling, dot precisions and
R split this module reuses).

Equations: those of backends/_gru_glue.py (SPEC 4), per direction d, h_prev the state of the
previous processed step (h0 / zeros at the first), m[t] the mask of step t (1 when absent),
hm = h_prev * m[t], x' = x @ W^T + b (ONE cuBLAS GEMM over all steps and directions, by the
caller: `forward`):

  GRU, resetAfter:   z = f_z(x'_z + hm R_z^T), r = f_r(x'_r + hm R_r^T),
                     q = hm R_o^T + b2, o = f_o(x'_o + q * r)                  (one phase)
  GRU, otherwise:    phase A: z, r as above, hr = hm * r   -> scratch [T, N, D*H]
                     phase B: o = f_o(x'_o + hr R_o^T)                         (two phases)
  then               h = z h_prev + (1 - z) o   (flipZ: (1 - z) h_prev + z o)
  single gate:       a = x' + hm R^T -> zState, h = f(a)                       (one phase)

Backward (reverse processing order; t_next the step processed after t in the forward):

  dh   = dstate[t] + carry + rec                   (carry starts at dh_final)
  rec  = ([da_z, da_r, dq][t_next] @ R) * m[t_next]            (resetAfter)
       = ([da_z, da_r][t_next] @ R_zr) * m[t_next]             (GRU otherwise)
       = (da[t_next] @ R) * m[t_next]                          (single gate; carry = 0)
  GRU: dz = dh (h_prev - o), do = dh (1 - z), carry = dh z     (flipZ: signs swapped)
       da_o = do f_o'(o), da_z = dz f_z'(z)
       resetAfter: dq = da_o r, da_r = da_o q f_r'(r)  (q = hm R_o^T + b2: ONE GEMM over all
                   steps by the caller, before the kernel)
       otherwise, phase B after a grid barrier: u = da_o[t] @ R_o (all units),
                   da_r = u hm f_r'(r), carry += u r m[t]
  single gate: da = dh f'(f(zState[t]))
  dh0 = carry + rec of the first processed step.

The kernel writes dA = [da_z, da_r, da_o] (= dL/dx', gate order) in the input dtype, dq
(float32, resetAfter) and dh0 (float32); dR, dW, db, dsecondaryBias and dx are single GEMMs /
reductions over all steps in `backward` (dR_o from dq (resetAfter) or from da_o and hm * r).

Design: grid (P, D), program p owns BLOCK_N batch rows x BLOCK_U hidden units of direction d
(the LSTM's `plan` rule for the tile; P * D <= the multiprocessor count so that the spin
barrier cannot deadlock). A step is a few [BLOCK_N, H] x [H, BLOCK_U] tl.dots per gate block
(the operand rows loaded once per step and shared by the gate blocks in the forward), the gate
math of the tile, its stores, then a grid barrier (per direction). The GRU without resetAfter
needs two barriers per step (r of all units before the o product; da_o before u). R resident
(default where it fits, the LSTM's caps for the forward operand K = pow2(H), three gate tiles):
each program loads its [pow2(H), BLOCK_U] slices of the three gate blocks of R[d] once, before
the time loop; otherwise a K-chunk loop streams them from L2. MPSGRAPH_LSTM_R_RESIDENT=0 and
MPSGRAPH_LSTM_FP32_DOT act here as for the LSTM. Each step's read-only inputs are loaded one
step ahead, before the recurrent product (PREFETCH, the LSTM's: forward x' of the one-phase
variants; backward dstate, the gates, q, h_prev and the mask; MPSGRAPH_LSTM_PREFETCH=0 turns it
off). The launch takes the (num_warps, num_stages) whose compiled kernel spills fewest
registers (`_launch`; AOT compiles for sm_90 showed the three-stage pipeline of the float32
K-chunk loop spilling 500+ bytes per thread at H = 256). MPSGRAPH_GRU_TILING="BN,BU[,WARPS,
STAGES]" forces a tiling (benchmarking).

Precision: float32 R dots are three TF32 products (float32 accuracy; "split" / "tf32x3" as for
the LSTM, `lstm_seq_fwd.precision`), "tf32" when torch.backends.cuda.matmul.allow_tf32;
float16 / bfloat16: half dot operands (h_prev, dA rounded to R's dtype), float32 accumulation
and gate math, each output stored once in its dtype.

Interpreter / tests (TRITON_INTERPRET=1, on the CPU): one launch per step and phase (SYNC
False); the carry goes through a float32 buffer between launches. Same code as the persistent
launch.

Coverage: every option of SPEC 4 (reverse, bidirectional, resetGateFirst, resetAfter with or
without secondaryBias, flipZ, any activation per gate, a state-shaped or per-step mask, with or
without inputWeight / bias / initState, dh_final) in float32, float16 and bfloat16. Declined
(`forward` / `backward` return None: the caller runs the per-step torch path, which also takes
float64): other dtypes, T, N or H zero, a device where Triton cannot run, no tiling with every
program co-resident (very large N * H), MPSGRAPH_GRU_KERNEL=torch.
"""

from __future__ import annotations

import contextvars
import functools
import os

import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from . import cdiv, gru_cluster, pow2
from .lstm_cell import _act, _dact
from .lstm_seq_fwd import (
    _CNT_STRIDE,
    R_RESIDENT_MAX_OPERAND,
    R_RESIDENT_MAX_TILE,
    _sm_count,
    _tiling,
    grid_arrive,
    grid_barrier,
    grid_wait,
    launch,
    masked_if,
    precision,
    prefetch,
    program_tile,
    r_lo,
    rmma,
    split_r,
    step_time,
)

# ----------------------------------------------------------------------------------------------
# jit helpers
# ----------------------------------------------------------------------------------------------


@triton.jit
def _rows(base, s_n, mb, s_mn, rn, mn, kk, H, HAS_MASK: tl.constexpr):
    """Operand rows [BLOCK_N, len(kk)] at base (row stride s_n) as float32, times the mask rows
    at mb when HAS_MASK. Written by other programs during the launch: loaded through L2."""
    m = mn[:, None] & (kk < H)[None, :]
    v = tl.load(base + rn[:, None] * s_n + kk[None, :], mask=m, other=0.0,
                cache_modifier=".cg").to(tl.float32)
    if HAS_MASK:
        v = v * tl.load(mb + rn[:, None] * s_mn + kk[None, :], mask=m, other=0.0).to(tl.float32)
    return v


@triton.jit
def _load_tile(bb, s_bk, s_bu, ru, mu, H, RES_K: tl.constexpr):
    """A resident [RES_K, BLOCK_U] R tile: element (k, u) at bb + k * s_bk + ru[u] * s_bu."""
    kk = tl.arange(0, RES_K)
    return tl.load(bb + (kk * s_bk)[:, None] + (ru * s_bu)[None, :],
                   mask=(kk < H)[:, None] & mu[None, :], other=0.0)


@triton.jit
def _r_blocks(rb, s_rr, s_bk, s_bu, s_rs, ru, mu, H, GATES: tl.constexpr, BZ: tl.constexpr,
              BR: tl.constexpr, RES: tl.constexpr, RES_K: tl.constexpr, PREC: tl.constexpr,
              BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr):
    """The three gate blocks of R[d] at rb (z, r, o; the single gate's one block three times)
    and, with RES, their resident tiles (element (k, u) at block + k * s_bk + ru[u] * s_bu:
    the forward reads R transposed, the backward as it is) with their "split" remainders; the
    tiles are [BLOCK_N, BLOCK_U] zero placeholders without RES."""
    if GATES == 3:
        bz_ = rb + BZ * H * s_rr
        br_ = rb + BR * H * s_rr
        bo_ = rb + 2 * H * s_rr
    else:
        bz_ = rb
        br_ = rb
        bo_ = rb
    t_z = tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32)  # placeholders (not RES)
    t_r = t_z
    t_o = t_z
    l_z = t_z
    l_r = t_z
    l_o = t_z
    if RES:
        t_z = _load_tile(bz_, s_bk, s_bu, ru, mu, H, RES_K)
        l_z = t_z
        if PREC == "split":
            l_z = _load_tile(bz_ + s_rs, s_bk, s_bu, ru, mu, H, RES_K)
        t_r = t_z
        t_o = t_z
        l_r = l_z
        l_o = l_z
        if GATES == 3:
            t_r = _load_tile(br_, s_bk, s_bu, ru, mu, H, RES_K)
            t_o = _load_tile(bo_, s_bk, s_bu, ru, mu, H, RES_K)
            l_r = t_r
            l_o = t_o
            if PREC == "split":
                l_r = _load_tile(br_ + s_rs, s_bk, s_bu, ru, mu, H, RES_K)
                l_o = _load_tile(bo_ + s_rs, s_bk, s_bu, ru, mu, H, RES_K)
    return bz_, br_, bo_, t_z, t_r, t_o, l_z, l_r, l_o


@triton.jit
def _prod(acc0, acc1, acc2, NACC: tl.constexpr, ab, s_an, mb, s_mn, HAS_MASK: tl.constexpr,
          t0, l0, t1, l1, t2, l2, b0, b1, b2, s_bk, s_bu, s_rs, rn, mn, ru, mu, H,
          PREC: tl.constexpr, F32_DOT: tl.constexpr, RES: tl.constexpr, RES_K: tl.constexpr,
          BLOCK_K: tl.constexpr):
    """acc_i + A @ B_i for the first NACC of three R blocks: A the operand rows at ab ([BLOCK_N,
    H], times the mask rows with HAS_MASK, loaded once for all blocks), B_i element (k, u) at
    b_i + k * s_bk + ru[u] * s_bu, or the resident tiles t_i (remainders l_i with "split")."""
    if RES:
        a = _rows(ab, s_an, mb, s_mn, rn, mn, tl.arange(0, RES_K), H, HAS_MASK)
        acc0 = rmma(a, t0, l0, acc0, PREC, F32_DOT)
        if NACC > 1:
            acc1 = rmma(a, t1, l1, acc1, PREC, F32_DOT)
        if NACC > 2:
            acc2 = rmma(a, t2, l2, acc2, PREC, F32_DOT)
    else:
        for k0 in range(0, H, BLOCK_K):
            kk = k0 + tl.arange(0, BLOCK_K)
            a = _rows(ab, s_an, mb, s_mn, rn, mn, kk, H, HAS_MASK)
            rm = (kk < H)[:, None] & mu[None, :]
            off = (kk * s_bk)[:, None] + (ru * s_bu)[None, :]
            b = tl.load(b0 + off, mask=rm, other=0.0)
            acc0 = rmma(a, b, r_lo(b0 + off, s_rs, rm, b, PREC), acc0, PREC, F32_DOT)
            if NACC > 1:
                b = tl.load(b1 + off, mask=rm, other=0.0)
                acc1 = rmma(a, b, r_lo(b1 + off, s_rs, rm, b, PREC), acc1, PREC, F32_DOT)
            if NACC > 2:
                b = tl.load(b2 + off, mask=rm, other=0.0)
                acc2 = rmma(a, b, r_lo(b2 + off, s_rs, rm, b, PREC), acc2, PREC, F32_DOT)
    return acc0, acc1, acc2


@triton.jit
def _ld(ptr, m):
    return tl.load(ptr, mask=m, other=0.0, cache_modifier=".cg").to(tl.float32)


# ----------------------------------------------------------------------------------------------
# forward
# ----------------------------------------------------------------------------------------------


@triton.jit(do_not_specialize=["T", "k0", "nk", "phases"])
def _fwd_kernel(
        xp_ptr, r_ptr, h0_ptr, m_ptr, b2_ptr, z_ptr, h_ptr, hr_ptr, cnt_ptr,
        T, N, H, k0, nk, phases,
        s_xt, s_xn, s_rd, s_rr, s_rc, s_rs, s_h0n, s_mt, s_mn, s_zt, s_zn, s_ht, s_hn,
        s_hrt, s_hrn,
        GATES: tl.constexpr, BZ: tl.constexpr, BR: tl.constexpr, AZ: tl.constexpr,
        AR: tl.constexpr, AO: tl.constexpr, RESET_AFTER: tl.constexpr, FLIP_Z: tl.constexpr,
        HAS_H0: tl.constexpr, HAS_MASK: tl.constexpr, HAS_B2: tl.constexpr,
        REV: tl.constexpr, BIDIR: tl.constexpr, SYNC: tl.constexpr, PREC: tl.constexpr,
        F32_DOT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr,
        BLOCK_K: tl.constexpr, TILES_U: tl.constexpr, CNT_STRIDE: tl.constexpr,
        RES: tl.constexpr, RES_K: tl.constexpr, TWO_PHASE: tl.constexpr,
        PREFETCH: tl.constexpr):
    p, d, P, rn, ru, mn, mu, m2 = program_tile(N, H, TILES_U, BLOCK_N, BLOCK_U)
    dH = d * H
    dG = d * GATES * H
    rb = r_ptr + d.to(tl.int64) * s_rd
    tile_h = rn[:, None] * s_hn + dH + ru[None, :]
    tile_x = rn[:, None] * s_xn + dG + ru[None, :]
    tile_z = rn[:, None] * s_zn + dG + ru[None, :]
    tile_m = rn[:, None] * s_mn + dH + ru[None, :]
    tile_hr = rn[:, None] * s_hrn + dH + ru[None, :]
    # R blocks (forward: B(k, u) = R[d][block * H + u, k])
    bz_, br_, bo_, t_z, t_r, t_o, l_z, l_r, l_o = _r_blocks(
        rb, s_rr, s_rc, s_rr, s_rs, ru, mu, H, GATES, BZ, BR, RES, RES_K, PREC, BLOCK_N,
        BLOCK_U)
    if HAS_B2:
        b2v = tl.load(b2_ptr + dH + ru, mask=mu, other=0.0).to(tl.float32)[None, :]
    zero = tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32)
    # PREFETCH (one phase per step): x' of the first step; each step then issues the next
    # step's loads before its recurrent product, so that no step waits for them after the
    # barrier (the LSTM's design, lstm_seq_fwd.py)
    nx_z = zero
    nx_r = zero
    nx_o = zero
    if PREFETCH:
        xb0 = xp_ptr + step_time(k0, T, d, REV, BIDIR) * s_xt + tile_x
        m0 = masked_if(m2, nk > 0)
        if GATES == 1:
            nx_z = tl.load(xb0, mask=m0, other=0.0).to(tl.float32)
        else:
            nx_z = tl.load(xb0 + BZ * H, mask=m0, other=0.0).to(tl.float32)
            nx_r = tl.load(xb0 + BR * H, mask=m0, other=0.0).to(tl.float32)
            nx_o = tl.load(xb0 + 2 * H, mask=m0, other=0.0).to(tl.float32)
    for k in range(k0, k0 + nk):
        t = step_time(k, T, d, REV, BIDIR)
        tq = step_time(k - 1, T, d, REV, BIDIR)
        mb = m_ptr + t * s_mt + dH
        xnb = xp_ptr + step_time(k + 1, T, d, REV, BIDIR) * s_xt + tile_x
        mnx = masked_if(m2, k < k0 + nk - 1)
        # h_prev: the previous step's state, h0, or zeros
        zi = tq * 0  # (an int64 tensor: keeps both branches' values runtime tensors)
        has_prev = k > 0
        hb = h_ptr + (tq * s_ht + dH + zi)
        s_hb = s_hn + zi
        if k == 0:
            hb = h0_ptr + (dH + zi)
            s_hb = s_h0n + zi
            if HAS_H0:
                has_prev = k >= 0
        hp = zero
        if has_prev:
            hp = _ld(hb + rn[:, None] * s_hb + ru[None, :], m2)
        xb = xp_ptr + t * s_xt + tile_x
        zb = z_ptr + t * s_zt + tile_z
        last = k == k0 + nk - 1
        if (phases & 1) != 0:  # phase A (the only one unless TWO_PHASE)
            if GATES == 1:
                if PREFETCH:
                    a = nx_z
                    nx_z = tl.load(xnb, mask=mnx, other=0.0).to(tl.float32)
                else:
                    a = tl.load(xb, mask=m2, other=0.0).to(tl.float32)
                if has_prev:
                    a, _u1, _u2 = _prod(a, a, a, 1, hb, s_hb, mb, s_mn, HAS_MASK, t_z, l_z,
                                        t_z, l_z, t_z, l_z, bz_, bz_, bz_, s_rc, s_rr, s_rs,
                                        rn, mn, ru, mu, H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
                h = _act(a, AZ)
                tl.store(h_ptr + t * s_ht + tile_h, h, mask=m2)
                if SYNC:
                    if not last:
                        grid_arrive(cnt_ptr + d * CNT_STRIDE)
                tl.store(zb, a, mask=m2)
                if SYNC:
                    if not last:
                        grid_wait(cnt_ptr + d * CNT_STRIDE, P * (k - k0 + 1))
            else:
                if PREFETCH:
                    a_z = nx_z
                    a_r = nx_r
                    x_o = nx_o
                    nx_z = tl.load(xnb + BZ * H, mask=mnx, other=0.0).to(tl.float32)
                    nx_r = tl.load(xnb + BR * H, mask=mnx, other=0.0).to(tl.float32)
                    nx_o = tl.load(xnb + 2 * H, mask=mnx, other=0.0).to(tl.float32)
                else:
                    a_z = tl.load(xb + BZ * H, mask=m2, other=0.0).to(tl.float32)
                    a_r = tl.load(xb + BR * H, mask=m2, other=0.0).to(tl.float32)
                    x_o = tl.load(xb + 2 * H, mask=m2, other=0.0).to(tl.float32)
                q = zero
                if has_prev:
                    if RESET_AFTER:
                        a_z, a_r, q = _prod(a_z, a_r, q, 3, hb, s_hb, mb, s_mn, HAS_MASK, t_z,
                                            l_z, t_r, l_r, t_o, l_o, bz_, br_, bo_, s_rc, s_rr,
                                            s_rs, rn, mn, ru, mu, H, PREC, F32_DOT, RES, RES_K,
                                            BLOCK_K)
                    else:
                        a_z, a_r, q = _prod(a_z, a_r, q, 2, hb, s_hb, mb, s_mn, HAS_MASK, t_z,
                                            l_z, t_r, l_r, t_o, l_o, bz_, br_, bo_, s_rc, s_rr,
                                            s_rs, rn, mn, ru, mu, H, PREC, F32_DOT, RES, RES_K,
                                            BLOCK_K)
                z = _act(a_z, AZ)
                r = _act(a_r, AR)
                if RESET_AFTER:
                    if HAS_B2:
                        q += b2v
                    o = _act(x_o + q * r, AO)
                    if FLIP_Z:
                        h = (1.0 - z) * hp + z * o
                    else:
                        h = z * hp + (1.0 - z) * o
                    tl.store(h_ptr + t * s_ht + tile_h, h, mask=m2)
                    if SYNC:
                        if not last:
                            grid_arrive(cnt_ptr + d * CNT_STRIDE)
                    tl.store(zb + BZ * H, z, mask=m2)
                    tl.store(zb + BR * H, r, mask=m2)
                    tl.store(zb + 2 * H, o, mask=m2)
                    if SYNC:
                        if not last:
                            grid_wait(cnt_ptr + d * CNT_STRIDE, P * (k - k0 + 1))
                else:
                    hm = hp
                    if HAS_MASK:
                        hm = hp * tl.load(m_ptr + t * s_mt + tile_m, mask=m2,
                                          other=0.0).to(tl.float32)
                    tl.store(hr_ptr + t * s_hrt + tile_hr, hm * r, mask=m2)
                    if SYNC:
                        grid_arrive(cnt_ptr + d * CNT_STRIDE)
                    tl.store(zb + BZ * H, z, mask=m2)
                    tl.store(zb + BR * H, r, mask=m2)
                    if SYNC:
                        grid_wait(cnt_ptr + d * CNT_STRIDE, P * (2 * (k - k0) + 1))
        if TWO_PHASE:
            if (phases & 2) != 0:  # phase B: o from (hm * r) of all units
                a_o = tl.load(xb + 2 * H, mask=m2, other=0.0).to(tl.float32)
                a_o, _u1, _u2 = _prod(a_o, a_o, a_o, 1, hr_ptr + t * s_hrt + dH, s_hrn, mb,
                                      s_mn, False, t_o, l_o, t_o, l_o, t_o, l_o, bo_, bo_, bo_,
                                      s_rc, s_rr, s_rs, rn, mn, ru, mu, H, PREC, F32_DOT, RES,
                                      RES_K, BLOCK_K)
                o = _act(a_o, AO)
                z = _ld(zb + BZ * H, m2)
                if FLIP_Z:
                    h = (1.0 - z) * hp + z * o
                else:
                    h = z * hp + (1.0 - z) * o
                tl.store(h_ptr + t * s_ht + tile_h, h, mask=m2)
                if SYNC:
                    if not last:
                        grid_arrive(cnt_ptr + d * CNT_STRIDE)
                tl.store(zb + 2 * H, o, mask=m2)
                if SYNC:
                    if not last:
                        grid_wait(cnt_ptr + d * CNT_STRIDE, P * (2 * (k - k0) + 2))


# ----------------------------------------------------------------------------------------------
# backward
# ----------------------------------------------------------------------------------------------


@triton.jit
def _bwd_inputs(j, ok, T, d, ds_ptr, z_ptr, hf_ptr, h0_ptr, q_ptr, m_ptr, s_dst, s_zt, s_hft,
                s_qt, s_mt, tile_s, tile_z, tile_hf, tile_h0, tile_q, tile_m, m2, H,
                GATES: tl.constexpr, BZ: tl.constexpr, BR: tl.constexpr,
                RESET_AFTER: tl.constexpr, HAS_H0: tl.constexpr, HAS_MASK: tl.constexpr,
                REV: tl.constexpr, BIDIR: tl.constexpr):
    """The read-only inputs of backward step j as float32 tiles (zeros where `ok` is false):
    dstate[t]; z, r, o of zState[t] (single gate: the pre-activation, three times); q[t]
    (resetAfter; else a copy of z); h_prev (the state of the previous processed step, h0 or
    zeros at the first); the mask of t_next (when present; else a copy of dstate)."""
    m = masked_if(m2, ok)
    k = T - 1 - j
    t = step_time(k, T, d, REV, BIDIR)
    tq = step_time(k - 1, T, d, REV, BIDIR)
    tn = step_time(k + 1, T, d, REV, BIDIR)
    ds = tl.load(ds_ptr + t * s_dst + tile_s, mask=m, other=0.0).to(tl.float32)
    zb = z_ptr + t * s_zt + tile_z
    if GATES == 1:
        z = tl.load(zb, mask=m, other=0.0).to(tl.float32)
        r = z
        o = z
        hp = z
    else:
        z = tl.load(zb + BZ * H, mask=m, other=0.0).to(tl.float32)
        r = tl.load(zb + BR * H, mask=m, other=0.0).to(tl.float32)
        o = tl.load(zb + 2 * H, mask=m, other=0.0).to(tl.float32)
        hp = tl.load(hf_ptr + tq * s_hft + tile_hf, mask=masked_if(m, k > 0),
                     other=0.0).to(tl.float32)
        if HAS_H0:
            hp += tl.load(h0_ptr + tile_h0, mask=masked_if(m, k == 0), other=0.0).to(tl.float32)
    q = z
    if RESET_AFTER:
        q = tl.load(q_ptr + t * s_qt + tile_q, mask=m, other=0.0).to(tl.float32)
    m_next = ds
    if HAS_MASK:
        m_next = tl.load(m_ptr + tn * s_mt + tile_m, mask=masked_if(m, k < T - 1),
                         other=0.0).to(tl.float32)
    return ds, z, r, o, q, hp, m_next


@triton.jit(do_not_specialize=["T", "j0", "nj", "phases", "do_final"])
def _bwd_kernel(
        ds_ptr, z_ptr, hf_ptr, r_ptr, h0_ptr, m_ptr, q_ptr, dhf_ptr, da_ptr, dq_ptr, dh0_ptr,
        cb_ptr, cnt_ptr,
        T, N, H, j0, nj, phases, do_final,
        s_dst, s_dsn, s_zt, s_zn, s_hft, s_hfn, s_rd, s_rr, s_rc, s_rs, s_h0n, s_mt, s_mn,
        s_qt, s_qn, s_dhfn, s_dat, s_dan, s_dqt, s_dqn, s_dh0n, s_cbn,
        GATES: tl.constexpr, BZ: tl.constexpr, BR: tl.constexpr, AZ: tl.constexpr,
        AR: tl.constexpr, AO: tl.constexpr, RESET_AFTER: tl.constexpr, FLIP_Z: tl.constexpr,
        HAS_H0: tl.constexpr, HAS_MASK: tl.constexpr, HAS_DHF: tl.constexpr,
        REV: tl.constexpr, BIDIR: tl.constexpr, SYNC: tl.constexpr, PREC: tl.constexpr,
        F32_DOT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr,
        BLOCK_K: tl.constexpr, TILES_U: tl.constexpr, CNT_STRIDE: tl.constexpr,
        RES: tl.constexpr, RES_K: tl.constexpr, TWO_PHASE: tl.constexpr,
        NPH: tl.constexpr, PREFETCH: tl.constexpr):
    p, d, P, rn, ru, mn, mu, m2 = program_tile(N, H, TILES_U, BLOCK_N, BLOCK_U)
    dH = d * H
    dG = d * GATES * H
    rb = r_ptr + d.to(tl.int64) * s_rd
    tile_s = rn[:, None] * s_dsn + dH + ru[None, :]
    tile_z = rn[:, None] * s_zn + dG + ru[None, :]
    tile_a = rn[:, None] * s_dan + dG + ru[None, :]
    tile_m = rn[:, None] * s_mn + dH + ru[None, :]
    # R blocks (backward: B(k, u) = R[d][block * H + k, ru[u]])
    bz_, br_, bo_, t_z, t_r, t_o, l_z, l_r, l_o = _r_blocks(
        rb, s_rr, s_rr, s_rc, s_rs, ru, mu, H, GATES, BZ, BR, RES, RES_K, PREC, BLOCK_N,
        BLOCK_U)
    zero = tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32)
    cb = cb_ptr + rn[:, None] * s_cbn + dH + ru[None, :]  # the carry buffer [N, D*H]
    # the carry at the start of this launch: dh_final / zeros, or the previous launch's
    if (j0 == 0) & ((phases & 1) != 0):
        carry = zero
        if HAS_DHF:
            carry = tl.load(dhf_ptr + rn[:, None] * s_dhfn + dH + ru[None, :], mask=m2,
                            other=0.0).to(tl.float32)
    else:
        carry = tl.load(cb, mask=m2, other=0.0)
    tile_hf = rn[:, None] * s_hfn + dH + ru[None, :]
    tile_h0 = rn[:, None] * s_h0n + dH + ru[None, :]
    tile_q = rn[:, None] * s_qn + dH + ru[None, :]
    if PREFETCH:  # the first step's read-only inputs; each step then loads the next step's
        # before its recurrent product (as the LSTM's backward kernel)
        n_ds, n_z, n_r, n_o, n_q, n_hp, n_mn = _bwd_inputs(
            j0, nj > 0, T, d, ds_ptr, z_ptr, hf_ptr, h0_ptr, q_ptr, m_ptr, s_dst, s_zt, s_hft,
            s_qt, s_mt, tile_s, tile_z, tile_hf, tile_h0, tile_q, tile_m, m2, H, GATES, BZ, BR,
            RESET_AFTER, HAS_H0, HAS_MASK, REV, BIDIR)
    for j in range(j0, j0 + nj):
        k = T - 1 - j  # the forward processing index of this step
        t = step_time(k, T, d, REV, BIDIR)
        tn = step_time(k + 1, T, d, REV, BIDIR)
        if PREFETCH:
            ds, g_z, g_r, g_o, g_q, hp, m_next = n_ds, n_z, n_r, n_o, n_q, n_hp, n_mn
            n_ds, n_z, n_r, n_o, n_q, n_hp, n_mn = _bwd_inputs(
                j + 1, j < j0 + nj - 1, T, d, ds_ptr, z_ptr, hf_ptr, h0_ptr, q_ptr, m_ptr,
                s_dst, s_zt, s_hft, s_qt, s_mt, tile_s, tile_z, tile_hf, tile_h0, tile_q,
                tile_m, m2, H, GATES, BZ, BR, RESET_AFTER, HAS_H0, HAS_MASK, REV, BIDIR)
        else:
            ds, g_z, g_r, g_o, g_q, hp, m_next = _bwd_inputs(
                j, nj > 0, T, d, ds_ptr, z_ptr, hf_ptr, h0_ptr, q_ptr, m_ptr, s_dst, s_zt,
                s_hft, s_qt, s_mt, tile_s, tile_z, tile_hf, tile_h0, tile_q, tile_m, m2, H,
                GATES, BZ, BR, RESET_AFTER, HAS_H0, HAS_MASK, REV, BIDIR)
        ab = da_ptr + t * s_dat + tile_a
        if (phases & 1) != 0:  # phase A
            dh = carry + ds
            if j > 0:  # the recurrent carry of t_next
                rec = zero
                an = da_ptr + tn * s_dat + dG
                if GATES == 1:
                    rec, _u1, _u2 = _prod(rec, rec, rec, 1, an, s_dan, an, 0, False, t_z, l_z,
                                          t_z, l_z, t_z, l_z, bz_, bz_, bz_, s_rr, s_rc, s_rs,
                                          rn, mn, ru, mu, H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
                else:
                    rec, _u1, _u2 = _prod(rec, rec, rec, 1, an + BZ * H, s_dan, an, 0, False,
                                          t_z, l_z, t_z, l_z, t_z, l_z, bz_, bz_, bz_, s_rr,
                                          s_rc, s_rs, rn, mn, ru, mu, H, PREC, F32_DOT, RES,
                                          RES_K, BLOCK_K)
                    rec, _u1, _u2 = _prod(rec, rec, rec, 1, an + BR * H, s_dan, an, 0, False,
                                          t_r, l_r, t_r, l_r, t_r, l_r, br_, br_, br_, s_rr,
                                          s_rc, s_rs, rn, mn, ru, mu, H, PREC, F32_DOT, RES,
                                          RES_K, BLOCK_K)
                    if RESET_AFTER:
                        qn = dq_ptr + tn * s_dqt + dH
                        rec, _u1, _u2 = _prod(rec, rec, rec, 1, qn, s_dqn, qn, 0, False, t_o,
                                              l_o, t_o, l_o, t_o, l_o, bo_, bo_, bo_, s_rr,
                                              s_rc, s_rs, rn, mn, ru, mu, H, PREC, F32_DOT,
                                              RES, RES_K, BLOCK_K)
                if HAS_MASK:
                    rec = rec * m_next
                dh += rec
            if GATES == 1:
                y = _act(g_z, AZ)
                tl.store(ab, dh * _dact(y, AZ), mask=m2)
                carry = zero
            else:
                z = g_z
                r = g_r
                o = g_o
                if FLIP_Z:
                    dz = dh * (o - hp)
                    do = dh * z
                    carry = dh * (1.0 - z)
                else:
                    dz = dh * (hp - o)
                    do = dh * (1.0 - z)
                    carry = dh * z
                dao = do * _dact(o, AO)
                tl.store(ab + BZ * H, dz * _dact(z, AZ), mask=m2)
                tl.store(ab + 2 * H, dao, mask=m2)
                if RESET_AFTER:
                    tl.store(ab + BR * H, dao * g_q * _dact(r, AR), mask=m2)
                    tl.store(dq_ptr + t * s_dqt + rn[:, None] * s_dqn + dH + ru[None, :],
                             dao * r, mask=m2)
            if SYNC:
                grid_barrier(cnt_ptr + d * CNT_STRIDE, P * (NPH * (j - j0) + 1))
        if TWO_PHASE:
            if (phases & 2) != 0:  # phase B: u = da_o[t] @ R_o over all units
                u = zero
                ao = da_ptr + t * s_dat + dG + 2 * H
                u, _u1, _u2 = _prod(u, u, u, 1, ao, s_dan, ao, 0, False, t_o, l_o, t_o, l_o,
                                    t_o, l_o, bo_, bo_, bo_, s_rr, s_rc, s_rs, rn, mn, ru, mu,
                                    H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
                r = g_r
                hm = hp
                ur = u * r
                if HAS_MASK:
                    mt = tl.load(m_ptr + t * s_mt + tile_m, mask=m2, other=0.0).to(tl.float32)
                    hm = hp * mt
                    ur = ur * mt
                tl.store(ab + BR * H, u * hm * _dact(r, AR), mask=m2)
                carry += ur
                if SYNC:
                    grid_barrier(cnt_ptr + d * CNT_STRIDE, P * (NPH * (j - j0) + 2))
    tl.store(cb, carry, mask=m2)
    if do_final != 0:  # dh0 = carry + the recurrent carry of the first processed step
        t0 = step_time(0, T, d, REV, BIDIR)
        rec = zero
        an = da_ptr + t0 * s_dat + dG
        if GATES == 1:
            rec, _u1, _u2 = _prod(rec, rec, rec, 1, an, s_dan, an, 0, False, t_z, l_z, t_z,
                                  l_z, t_z, l_z, bz_, bz_, bz_, s_rr, s_rc, s_rs, rn, mn, ru,
                                  mu, H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
        else:
            rec, _u1, _u2 = _prod(rec, rec, rec, 1, an + BZ * H, s_dan, an, 0, False, t_z, l_z,
                                  t_z, l_z, t_z, l_z, bz_, bz_, bz_, s_rr, s_rc, s_rs, rn, mn,
                                  ru, mu, H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
            rec, _u1, _u2 = _prod(rec, rec, rec, 1, an + BR * H, s_dan, an, 0, False, t_r, l_r,
                                  t_r, l_r, t_r, l_r, br_, br_, br_, s_rr, s_rc, s_rs, rn, mn,
                                  ru, mu, H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
            if RESET_AFTER:
                qn = dq_ptr + t0 * s_dqt + dH
                rec, _u1, _u2 = _prod(rec, rec, rec, 1, qn, s_dqn, qn, 0, False, t_o, l_o, t_o,
                                      l_o, t_o, l_o, bo_, bo_, bo_, s_rr, s_rc, s_rs, rn, mn,
                                      ru, mu, H, PREC, F32_DOT, RES, RES_K, BLOCK_K)
        if HAS_MASK:
            rec = rec * tl.load(m_ptr + t0 * s_mt + tile_m, mask=m2, other=0.0).to(tl.float32)
        tl.store(dh0_ptr + rn[:, None] * s_dh0n + dH + ru[None, :], carry + rec, mask=m2)


# ----------------------------------------------------------------------------------------------
# planning
# ----------------------------------------------------------------------------------------------


def interpreting() -> bool:
    """Whether these kernels were defined for Triton's interpreter (programs run one after
    another: one launch per step and phase)."""
    return type(_fwd_kernel).__name__ == "InterpretedFunction"


def _resident_k(H: int, bn: int, bu: int, gates: int, half: bool, prec: str) -> int:
    """K (pow2(H), >= 16) of the resident R tiles (`gates` [K, BLOCK_U] tiles per program) when
    they fit the LSTM kernels' caps for a forward-sized operand (lstm_seq_fwd.r_resident), else
    0. MPSGRAPH_LSTM_R_RESIDENT=0 turns it off."""
    if os.environ.get("MPSGRAPH_LSTM_R_RESIDENT", "").strip() == "0":
        return 0
    K = max(16, pow2(H))
    kind = "half" if half else prec
    tile = gates * K * bu * (2 if kind == "split" else 1)
    fits = (tile <= R_RESIDENT_MAX_TILE[kind] and bn * K <= R_RESIDENT_MAX_OPERAND[kind][0]
            and (not half or K <= 512))
    return K if fits else 0


# (BN, BU) forced for the launches of this context: the autotuner's "ours:BN,BU" candidates
# and their choice (backends/torch/gru_route.py); MPSGRAPH_GRU_TILING wins over it
TILING: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "mpsgraph_gru_tiling", default=None)


def _override():
    """MPSGRAPH_GRU_TILING="BN,BU[,WARPS,STAGES]" (benchmarking; BN, BU powers of two >= 16),
    else the context's TILING, or None. With WARPS and STAGES the launches take them as they
    are (no spill check)."""
    spec = os.environ.get("MPSGRAPH_GRU_TILING", "").strip()
    if not spec:
        return TILING.get()
    try:
        v = [int(s) for s in spec.split(",")]
    except ValueError:
        v = []
    if len(v) not in (2, 4) or any(x < 16 or x & (x - 1) for x in v[:2]) or any(
            x < 1 for x in v[2:]):
        raise ValueError(f"MPSGRAPH_GRU_TILING={spec!r}: expected BN,BU[,WARPS,STAGES], BN "
                         "and BU powers of two >= 16")
    return tuple(v)


@functools.lru_cache(maxsize=512)
def _plan(N: int, H: int, D: int, gates: int, half: bool, prec: str,
          max_programs: int | None, forced, res_knob: str):
    """(Tiling, resident K) or None; the LSTM's rule (lstm_seq_fwd.plan): N <= 64 (latency
    bound) the most R-resident, then the narrowest BLOCK_N, then the fewest programs, BLOCK_U <=
    32; N > 64 the narrowest BLOCK_U, then the widest BLOCK_N, then the fewest programs."""
    del res_knob
    elem = 2 if half else 4
    if forced is not None:
        bn, bu = forced[:2]
        til = _tiling(N, H, bn, bu, elem, None, None, *forced[2:])
        if max_programs is not None and til.programs * D > max_programs:
            return None
        return til, _resident_k(H, bn, bu, gates, half, prec)
    best = None
    for bn in (16, 32, 64):
        if bn > 16 and bn >= 2 * pow2(N):
            continue
        for bu in (16, 32, 64):
            if (bu > 16 and bu >= 2 * pow2(H)) or bn * bu > 4096:
                continue
            P = cdiv(N, bn) * cdiv(H, bu)
            if max_programs is not None and P * D > max_programs:
                continue
            if N <= 64:
                if bu > 32:
                    continue
                key = (-(_resident_k(H, bn, bu, gates, half, prec) > 0), bn, P)
            else:
                key = (bu, -bn, P)
            if best is None or key < best[0]:
                best = (key, bn, bu)
    if best is None:
        return None
    til = _tiling(N, H, best[1], best[2], elem)
    return til, _resident_k(H, best[1], best[2], gates, half, prec)


def plan(N: int, H: int, D: int, gates: int, device: torch.device, dtype: torch.dtype,
         allow_tf32: bool, sync: bool):
    """(Tiling, resident K, dot precision) of a call, or None when no tiling keeps every
    program co-resident (sync launches on CUDA: P * D <= the multiprocessor count)."""
    if N <= 0 or H <= 0 or D not in (1, 2):
        return None
    max_programs = None
    if sync and device.type == "cuda":
        max_programs = _sm_count(torch.cuda.current_device() if device.index is None
                                 else device.index)
    half = dtype in (torch.float16, torch.bfloat16)
    prec = precision(dtype, allow_tf32, H)
    got = _plan(N, H, D, gates, half, prec, max_programs, _override(),
                os.environ.get("MPSGRAPH_LSTM_R_RESIDENT", ""))
    return None if got is None else (*got, prec)


def _unit(t):
    if t is None or t.dim() == 0 or t.stride(-1) == 1 or t.shape[-1] <= 1:
        return t
    return t.contiguous()


# ----------------------------------------------------------------------------------------------
# launchers
# ----------------------------------------------------------------------------------------------


def _meta(gates, blocks, acts, reset_after, flip_z, reverse, bidirectional, sync, prec, til,
          res_k, half, backward):
    del backward
    bz, br = blocks
    acts = tuple(int(v) for v in acts) + (0, 0)
    return dict(GATES=gates, BZ=bz, BR=br, AZ=acts[0], AR=acts[1], AO=acts[2],
                RESET_AFTER=bool(reset_after), FLIP_Z=bool(flip_z),
                REV=bool(reverse) and not bidirectional, BIDIR=bool(bidirectional),
                SYNC=bool(sync), PREC=prec, F32_DOT=half and interpreting(),
                BLOCK_N=til.block_n, BLOCK_U=til.block_u,
                BLOCK_K=til.block_k_fwd,  # both kernels' products run over K = H
                TILES_U=til.tiles_u, CNT_STRIDE=_CNT_STRIDE, RES=res_k > 0,
                RES_K=max(res_k, 16), num_warps=til.num_warps, num_stages=til.num_stages)


_CHOSEN: dict = {}


def _launch(kernel, grid, args, meta, key) -> dict:
    """launch(kernel, grid, args, meta) (lstm_seq_fwd.launch: fewer stages while shared memory
    does not suffice) with, on CUDA, the first of (num_warps, num_stages) = the tiling's,
    (4, 2), (8, 2), (4, 1), (8, 1) whose compiled kernel spills no registers (ptxas, read from
    the compiled kernel), else the one that spills least; chosen once per configuration
    (`key`) and cached. AOT compiles for sm_90 (no GPU) showed the three-stage software
    pipeline of the float32 K-chunk loop spilling 500+ bytes per thread at H=256 (16x32
    tile), none with 4 warps and 1 stage or 8 warps and 2. Skipped under the interpreter and
    when MPSGRAPH_GRU_TILING gives warps and stages."""
    if interpreting() or not args[0].is_cuda or (
            os.environ.get("MPSGRAPH_GRU_TILING", "").count(",") >= 3):
        return launch(kernel, grid, args, meta)
    k = (key, tuple(sorted(meta.items())))
    choice = _CHOSEN.get(k)
    if choice is None:
        choice = _least_spills(kernel, grid, args, meta)
        _CHOSEN[k] = choice
    return launch(kernel, grid, args, {**meta, **choice})


def _least_spills(kernel, grid, args, meta) -> dict:
    cands = [(meta["num_warps"], meta["num_stages"]), (4, 2), (8, 2), (4, 1), (8, 1)]
    best = None
    for nw, ns in dict.fromkeys(cands):
        m = {**meta, "num_warps": nw, "num_stages": ns}
        try:
            ck = kernel.warmup(*args, grid=grid, **m)
            init = getattr(ck, "_init_handles", None)
            if init is not None:
                init()
            spills = int(getattr(ck, "n_spills", 0) or 0)
        except OutOfResources:
            continue
        except Exception:  # noqa: BLE001 - no spill information: keep the tiling's choice
            return {}
        if spills == 0:
            return {"num_warps": nw, "num_stages": ns}
        if best is None or spills < best[0]:
            best = (spills, {"num_warps": nw, "num_stages": ns})
    return {} if best is None else best[1]


def _st(a, i):
    return 0 if a is None else a.stride(i)


def cluster_config(dev: torch.device, N: int, H: int, D: int, R: torch.Tensor, gates: int,
                   reset_after: bool, sync: bool | None, tensors):
    """The cluster path's Config (kernels/gru_cluster.py: float32, N <= 16, H in 32..256, a
    Hopper+ GPU) when the wrappers should take it: a CUDA call that asks for no particular
    tiling or launch mode (sync None, no TILING / MPSGRAPH_GRU_TILING); else None."""
    if (dev.type != "cuda" or sync is not None or _override() is not None
            or R.shape != (D, gates * H, H)):
        return None
    return gru_cluster.usable(dev, N, H, gates, reset_after, (R, *tensors))


def forward_sequence(xp, R, h0, mask, b2, state, zstate, *, gates: int,
                     blocks: tuple[int, int], activations, reset_after: bool, flip_z: bool,
                     reverse: bool, bidirectional: bool, allow_tf32: bool = False,
                     sync: bool | None = None) -> bool:
    """The forward recurrence of all steps and directions (module docstring). xp [T, N, D*G]
    (x' of every step, G = gates * H), R [D, G, H] (float32 or the half type of the dots),
    h0 [N, D*H] or None, mask [T, N, D*H] (stride 0 on T allowed) or None, b2 [D*H] or None
    (read with reset_after); outputs state [T, N, D*H], zstate [T, N, D*G] written in place.
    blocks = (block of z, block of r) on the 3H axis (o is block 2). Returns False (nothing
    written) when no tiling applies."""
    T, N, H = xp.shape[0], xp.shape[1], R.shape[-1]
    D = 2 if bidirectional else 1
    dev = xp.device
    if T == 0 or N == 0 or H == 0:
        return False
    cfg = cluster_config(dev, N, H, D, R, gates, reset_after, sync, (xp, h0, mask, b2, state,
                                                                     zstate))
    if cfg is not None and gru_cluster.forward(
            cfg, _unit(xp), _unit(R), _unit(h0), _unit(mask), b2, state, zstate, blocks=blocks,
            activations=activations, reset_after=reset_after, flip_z=flip_z, reverse=reverse,
            bidirectional=bidirectional):
        return True  # (the cluster path declines where its kernels cannot be compiled / run)
    if sync is None:
        sync = dev.type == "cuda" and not interpreting()
    got = plan(N, H, D, gates, dev, R.dtype, allow_tf32, sync)
    if got is None:
        return False
    til, res_k, prec = got
    if sync and interpreting() and til.programs > 1:
        raise ValueError("a persistent launch under the interpreter needs one program per "
                         "direction")
    two = gates == 3 and not reset_after
    meta = _meta(gates, blocks, activations, reset_after, flip_z, reverse, bidirectional, sync,
                 prec, til, res_k, R.dtype in (torch.float16, torch.bfloat16), False)
    R, s_rs = split_r(R, prec)
    xp, h0, mask = _unit(xp), _unit(None if h0 is None else h0.to(state.dtype)), _unit(mask)
    hr = torch.empty((T, N, D * H), dtype=state.dtype, device=dev) if two else None
    cnt = torch.zeros(D * _CNT_STRIDE, dtype=torch.int32, device=dev)
    dm = state
    b2 = None if (b2 is None or not reset_after) else b2.reshape(-1)
    args = (xp, R, dm if h0 is None else h0, dm if mask is None else mask,
            dm if b2 is None else b2, zstate, state, dm if hr is None else hr, cnt)
    strides = (xp.stride(0), xp.stride(1), R.stride(0), R.stride(1), R.stride(2), s_rs,
               _st(h0, 0), _st(mask, 0), _st(mask, 1), zstate.stride(0), zstate.stride(1),
               state.stride(0), state.stride(1), _st(hr, 0), _st(hr, 1))
    meta.update(HAS_H0=h0 is not None, HAS_MASK=mask is not None, HAS_B2=b2 is not None,
                TWO_PHASE=two, PREFETCH=prefetch() and not two)
    grid = (til.programs, D)
    if sync:
        _launch(_fwd_kernel, grid, (*args, T, N, H, 0, T, 3, *strides), meta,
                (xp.dtype, R.dtype, state.dtype))
    else:
        for k in range(T):
            meta = launch(_fwd_kernel, grid, (*args, T, N, H, k, 1, 1, *strides), meta)
            if two:
                meta = launch(_fwd_kernel, grid, (*args, T, N, H, k, 1, 2, *strides), meta)
    return True


def backward_sequence(dstate, zstate, out_fwd, R, h0, mask, q, dh_final, dA, dq, dh0, *,
                      gates: int, blocks: tuple[int, int], activations, reset_after: bool,
                      flip_z: bool, reverse: bool, bidirectional: bool,
                      allow_tf32: bool = False, sync: bool | None = None) -> bool:
    """The backward recurrence (module docstring): dstate [T, N, D*H], zstate [T, N, D*G] and
    out_fwd [T, N, D*H] (the training forward's outputs; out_fwd unused for the single gate),
    R [D, G, H], h0 [N, D*H] or None, mask as forward_sequence, q [T, N, D*H] (float32,
    hm R_o^T + b2 of every step; reset_after only), dh_final [N, D*H] or None; outputs dA
    [T, N, D*G] (in its dtype), dq [T, N, D*H] float32 (reset_after) and dh0 [N, D*H]
    float32. Returns False (nothing written) when no tiling applies."""
    T, N, H = zstate.shape[0], zstate.shape[1], R.shape[-1]
    D = 2 if bidirectional else 1
    dev = zstate.device
    if T == 0 or N == 0 or H == 0:
        return False
    cfg = cluster_config(dev, N, H, D, R, gates, reset_after, sync,
                         (dstate, zstate, out_fwd, h0, mask, q, dh_final, dA, dq, dh0))
    if cfg is not None and gru_cluster.backward(
            cfg, *(_unit(a) for a in (dstate, zstate, out_fwd, R, h0, mask, q, dh_final)), dA,
            dq, dh0, blocks=blocks, activations=activations, reset_after=reset_after,
            flip_z=flip_z, reverse=reverse, bidirectional=bidirectional):
        return True
    if sync is None:
        sync = dev.type == "cuda" and not interpreting()
    got = plan(N, H, D, gates, dev, R.dtype, allow_tf32, sync)
    if got is None:
        return False
    til, res_k, prec = got
    two = gates == 3 and not reset_after
    meta = _meta(gates, blocks, activations, reset_after, flip_z, reverse, bidirectional, sync,
                 prec, til, res_k, R.dtype in (torch.float16, torch.bfloat16), True)
    R, s_rs = split_r(R, prec)
    dstate, zstate, out_fwd, h0, mask, dh_final = (
        _unit(a) for a in (dstate, zstate, out_fwd, h0, mask, dh_final))
    cb = torch.empty((N, D * H), dtype=torch.float32, device=dev)
    cnt = torch.zeros(D * _CNT_STRIDE, dtype=torch.int32, device=dev)
    dm = dh0
    hf = zstate if out_fwd is None else out_fwd
    args = (dstate, zstate, hf, R, dm if h0 is None else h0, dm if mask is None else mask,
            dm if q is None else q, dm if dh_final is None else dh_final, dA,
            dm if dq is None else dq, dh0, cb, cnt)
    strides = (dstate.stride(0), dstate.stride(1), zstate.stride(0), zstate.stride(1),
               hf.stride(0), hf.stride(1), R.stride(0), R.stride(1), R.stride(2), s_rs,
               _st(h0, 0), _st(mask, 0), _st(mask, 1), _st(q, 0), _st(q, 1), _st(dh_final, 0),
               dA.stride(0), dA.stride(1), _st(dq, 0), _st(dq, 1), dh0.stride(0), cb.stride(0))
    meta.update(HAS_H0=h0 is not None, HAS_MASK=mask is not None,
                HAS_DHF=dh_final is not None, TWO_PHASE=two, NPH=2 if two else 1,
                PREFETCH=prefetch())
    grid = (til.programs, D)
    if sync:
        _launch(_bwd_kernel, grid, (*args, T, N, H, 0, T, 3, 1, *strides), meta,
                (dstate.dtype, zstate.dtype, R.dtype, dA.dtype))
    else:
        for j in range(T):
            meta = launch(_bwd_kernel, grid, (*args, T, N, H, j, 1, 1, 0, *strides), meta)
            if two:
                meta = launch(_bwd_kernel, grid, (*args, T, N, H, j, 1, 2, 0, *strides), meta)
        launch(_bwd_kernel, grid, (*args, T, N, H, T, 0, 1, 1, *strides), meta)
    return True
