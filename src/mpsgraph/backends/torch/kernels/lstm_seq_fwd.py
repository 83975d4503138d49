"""Persistent LSTM forward (Triton): every time step of both directions in ONE launch.

Equations (SPEC 3.5), per direction d, for the steps t in the direction's processing order
(forward t = 0..T-1; reversed t = T-1..0; bidirectional: d = 0 forward, d = 1 reversed):

    a[t] = xp[t] + (h_prev * m[t]) @ R[d]^T + P(c_prev)     # [N, 4H]; xp = x @ W^T + b (caller)
    i, f, z, o = f_i(a_i), f_f(a_f), f_z(a_z), f_o(a_o)      -> zState[t]  (post-activation)
    c[t] = f * c_prev + i * z                                 -> cell[t]
    h[t] = o * g(c[t])                                        -> state[t]

h_prev / c_prev are h / c of the previous processed step, h0 / c0 (zeros when absent) at the
first; P(c) adds p_k * c to gate k (peephole, optional). Gate k lives in block blocks[k] of the
4H axis (i, f, z, o order, or i, z, f, o with forgetGateLast).

Design
------
Grid (P, D): program p of direction d owns a tile of BLOCK_N batch rows x BLOCK_U hidden
units (P = cdiv(N, BLOCK_N) * cdiv(H, BLOCK_U)) and computes the four gates of that tile at
every step:

- the recurrent product is four [BLOCK_N, BLOCK_U] accumulators (one per gate), started at
  xp[t] and fed by tl.dot of h_prev rows [BLOCK_N, BLOCK_K] against R[d] rows blocks[k]*H +
  units, read transposed through strides (no host transposes), over BLOCK_K chunks of H
  (software-pipelined by Triton: cp.async of chunk j+1 while chunk j multiplies), or in one
  dot per gate against the resident R (below);
- xp[t] was loaded by the previous step (PREFETCH, the default: each step issues the next
  step's xp loads before its own recurrent product, so that no step waits for HBM after the
  barrier; MPSGRAPH_LSTM_PREFETCH=0 loads xp[t] at the start of step t instead; measured 18-21%
  faster per training step at (N=64, H=256));
- with a mask, h_prev * m[t] comes from its producers ("mask at the producer"): each program
  also stores h[t] * m[t_next] of its tile into a scratch buffer [T, N, D*H], so the product
  loads one operand (h0 * m[t0] at the first step is masked by the reader);
- then the peephole term, the activations, c and h; state (and the masked copy) are stored,
  the program ARRIVES at the grid barrier (per direction: the next step needs all of h[t],
  written by all P programs of the direction), stores zState and cell (which nobody in this
  launch reads, so the barrier's release fence does not wait for them), then WAITS; c stays in
  registers from step to step (only this program ever needs it).

Per step and program: BLOCK_N * 4 * BLOCK_U * H multiply-adds; from L2: h_prev rows
(BLOCK_N * H * 4 bytes), the R slice (4 * BLOCK_U * H * R's element size: the barrier's acquire
invalidates L1 every step, so R streams from L2; see R resident below) and the tile's own xp /
outputs.

R resident (the default where `r_resident`'s caps hold; MPSGRAPH_LSTM_R_RESIDENT=0, read by the
wrappers at every call, turns it off): constexpr R_RESIDENT with RES_K = pow2(H) (>= 16). The
program loads its four [RES_K, BLOCK_U] gate slices of R[d] (read transposed, rows >= H and
units >= H masked to zero) ONCE before the time loop (`_load_r_fwd`), and a step's recurrent
product is one tl.dot per gate of the h_prev rows (times the mask) over the whole K extent
against them (`_rec_fwd_resident`): no K loop, no R traffic from L2 after the first step of a
launch (with per-step launches, under the interpreter, the load happens per launch). Triton
(sm_90, BLOCK_N = 16: mma.sync) keeps the resident tiles in shared memory and reads them with
ldmatrix each step. Applies only where `r_resident`'s caps hold (shared memory for the tiles and
registers for the step's [BLOCK_N, K] operand, by dot precision: never for "ieee"); elsewhere
the flag changes nothing. The backward kernel has the same variant (lstm_seq_bwd.py). Dot
operands, precisions and the interpreter's F32_DOT widening are those of the chunked path (the
same `mma`); only the summation order over K differs.

Grid barrier (`grid_barrier`, the pattern of cooperative groups' grid sync and of PyTorch
Inductor's `x_grid_barrier`): an int32 counter per direction (128 bytes apart), zeroed by the
wrapper before the launch. After its stores a program does a CTA barrier (all its threads' stores
are ordered before what follows), ONE scalar atomic add with release semantics (Triton issues a
scalar atomic from a single thread), then spins on an acquire atomic until the counter reaches
P * (steps done), then a CTA barrier. The counter only grows (no reset race). Data written by
other programs during the kernel (h_prev here) is loaded with cache_modifier=".cg" (L2, not the
non-coherent L1); the gpu-scope acquire also invalidates L1, so either suffices. (Triton 3.9
for sm_90 compiles the add to MEMBAR.ALL.GPU + REDG.ADD.STRONG.GPU by thread 0, the spin to
LDG.E.STRONG.GPU + CCTL.IVALL by thread 0, each between bar.syncs, and the h_prev chunks to
cp.async.cg when 16-byte aligned.)

Co-residency (a spin barrier deadlocks if a program waits for one that never gets an SM): the
wrapper launches at most `multi_processor_count` programs in all (P * D), one CTA per program;
any CTA that compiles fits on one SM, so every program of the grid is resident at once (as long
as no other kernel holds SMs indefinitely; see the risks in `plan`).

Interpreter / tests: TRITON_INTERPRET=1 runs programs one after another, so a spin barrier would
deadlock. The kernel takes SYNC (constexpr) and a step range (k0, nk): on CUDA the wrapper launches
once with all T steps and SYNC=True; otherwise (or with sync=False) it launches once per step
with SYNC=False, and c_prev is re-read from the cell output at the start of a launch. Same code.
(With one program per direction the persistent launch runs under the interpreter too: its
barrier then waits for nobody else; the tests use that to check the SYNC path.)

Precision: float32 dots are three TF32 products (float32 accuracy): "split" (R split into a TF32
high part and a remainder once per call by `split_r`, the h operand per step by `rmma`) for H <=
256, Triton's "tf32x3" above (`precision`); "tf32" with allow_tf32; with float16 / bfloat16 R
the dot operands (h_prev * m, R) are in R's dtype, and the accumulation, the cell and the gate
math are float32. The outputs are written in their buffers' dtype: the torch backend passes
buffers of the input dtype, so a half-type call stores h, the cell and the gates rounded once
(no float32 copies, no conversion kernels after). The next step reads h back from the state
buffer; rounded to the half type there, it is exactly the dot operand it would be rounded to
anyway (R's dtype); the cell is carried in float32 (registers, or a float32 scratch buffer
between per-step launches). Under the interpreter (whose bfloat16 dot is
broken) half dot operands are rounded, then widened to float32 for the dot (F32_DOT).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from . import cdiv, lstm_cluster, pow2
from .lstm_cell import cell_step

_CNT_STRIDE = 32  # int32 counters 128 bytes apart (one per direction)


# ----------------------------------------------------------------------------------------------
# shared jit helpers (also used by lstm_seq_bwd)
# ----------------------------------------------------------------------------------------------


@triton.jit
def grid_arrive(cnt_ptr):
    """Add this program's 1 to the counter at cnt_ptr, after every store issued so far by any
    of its threads (the release fence waits for them: issue the stores nobody waits for after
    this call)."""
    tl.debug_barrier()  # the stores of every thread of this program come first
    tl.atomic_add(cnt_ptr, 1, sem="release")


@triton.jit
def grid_wait(cnt_ptr, target):
    """Spin until the counter at cnt_ptr reaches `target`."""
    cur = tl.atomic_add(cnt_ptr, 0, sem="acquire")
    while cur < target:
        cur = tl.atomic_add(cnt_ptr, 0, sem="acquire")
    tl.debug_barrier()


@triton.jit
def grid_barrier(cnt_ptr, target):
    """Wait until the counter at cnt_ptr reaches `target` after adding this program's 1."""
    grid_arrive(cnt_ptr)
    grid_wait(cnt_ptr, target)


@triton.jit
def step_time(k, T, d, REV: tl.constexpr, BIDIR: tl.constexpr):
    """Time index (int64) of the k-th processed step of direction d."""
    if BIDIR:
        t = k + d * (T - 1 - 2 * k)
    elif REV:
        t = T - 1 - k
    else:
        t = k + 0
    return t.to(tl.int64)


@triton.jit
def masked_if(m, cond):
    """m & cond for a scalar tensor cond (in a form Triton's interpreter accepts too)."""
    return (m.to(tl.int32) * cond.to(tl.int32)) != 0


@triton.jit
def mma(a, b, acc, PREC: tl.constexpr, F32_DOT: tl.constexpr):
    """acc + a @ b; a is rounded to b's dtype first (the half types' dot operand)."""
    a = a.to(b.dtype)
    if F32_DOT:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        return tl.dot(a, b, acc, input_precision=PREC)


@triton.jit
def tf32_split(x):
    """(hi, lo) with x = hi + lo: hi is float32 x truncated to TF32's 10 mantissa bits (exact
    as a TF32 dot operand; never overflows), lo the remainder (|lo| < 2^-10 |x|; 0 where x is
    infinite, NaN where x is NaN, so that specials propagate as in a float32 product)."""
    hi = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return hi, tl.where(hi == x, 0.0, x - hi)


@triton.jit
def r_lo(ptrs, s_rs, m, hi, PREC: tl.constexpr):
    """The remainder part of a split R operand (PREC "split": `split_r`'s low half, s_rs
    elements after the high half at ptrs); `hi` itself (unused) otherwise."""
    if PREC == "split":
        return tl.load(ptrs + s_rs, mask=m, other=0.0)
    else:
        return hi


@triton.jit
def rmma(a, b, b_lo, acc, PREC: tl.constexpr, F32_DOT: tl.constexpr):
    """acc + a @ (R operand). PREC "split" (float32): b / b_lo are the TF32 high part and the
    remainder of R (`split_r`, once per call), `a` is split here (`tf32_split`), and the three
    TF32 products a_hi b + (a_lo b + a_hi b_lo) run as two independent accumulation chains
    (the main term onto acc, the corrections from zero): float32 accuracy like "tf32x3" without
    splitting R at every step. Other precisions: `mma` (b_lo unused)."""
    if PREC == "split":
        a_hi, a_lo = tf32_split(a.to(tl.float32))
        corr = tl.dot(a_lo, b, tl.full(acc.shape, 0.0, tl.float32), input_precision="tf32")
        corr = tl.dot(a_hi, b_lo, corr, input_precision="tf32")
        return tl.dot(a_hi, b, acc, input_precision="tf32") + corr
    else:
        return mma(a, b, acc, PREC, F32_DOT)


# ----------------------------------------------------------------------------------------------
# kernel
# ----------------------------------------------------------------------------------------------


@triton.jit
def program_tile(N, H, TILES_U: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr):
    """This program's place in the grid (P, D) of both persistent kernels: (p, d, P, batch rows
    rn, hidden units ru, their in-range masks mn / mu, and the [BLOCK_N, BLOCK_U] tile mask)."""
    p = tl.program_id(0)
    d = tl.program_id(1)
    P = tl.num_programs(0)
    rn = (p // TILES_U) * BLOCK_N + tl.arange(0, BLOCK_N)
    ru = (p % TILES_U) * BLOCK_U + tl.arange(0, BLOCK_U)
    mn = rn < N
    mu = ru < H
    return p, d, P, rn, ru, mn, mu, mn[:, None] & mu[None, :]


@triton.jit
def load_peephole(pb, mu, H, BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr,
                  BO: tl.constexpr):
    """The peephole weights of gates i, f, z, o for the units at pb (this direction's [4H] row
    plus the units), as [1, BLOCK_U] rows."""
    return (tl.load(pb + BI * H, mask=mu, other=0.0)[None, :],
            tl.load(pb + BF * H, mask=mu, other=0.0)[None, :],
            tl.load(pb + BZ * H, mask=mu, other=0.0)[None, :],
            tl.load(pb + BO * H, mask=mu, other=0.0)[None, :])


@triton.jit
def load_gates(base, m, H, BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr,
               BO: tl.constexpr):
    """The tiles of gates i, f, z, o at base + block * H, as float32."""
    return (tl.load(base + BI * H, mask=m, other=0.0).to(tl.float32),
            tl.load(base + BF * H, mask=m, other=0.0).to(tl.float32),
            tl.load(base + BZ * H, mask=m, other=0.0).to(tl.float32),
            tl.load(base + BO * H, mask=m, other=0.0).to(tl.float32))


@triton.jit
def _rec_fwd(acc_i, acc_f, acc_z, acc_o, hb, s_hn, mb, s_mn, rb, s_rr, s_rc, s_rs, rn, mn, ru,
             mu, H, BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr, BO: tl.constexpr,
             HAS_MASK: tl.constexpr, PREC: tl.constexpr, F32_DOT: tl.constexpr,
             BLOCK_K: tl.constexpr):
    """acc_k + (h_prev * m) @ R^T for the four gates k of the tile: h_prev rows at hb (row
    stride s_hn), mask rows at mb, R[d] at rb."""
    ri = ((BI * H + ru) * s_rr)[None, :]
    rf = ((BF * H + ru) * s_rr)[None, :]
    rz = ((BZ * H + ru) * s_rr)[None, :]
    ro = ((BO * H + ru) * s_rr)[None, :]
    for k0 in range(0, H, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        mk = kk < H
        hm = mn[:, None] & mk[None, :]
        # written by other programs during this launch: bypass L1
        hv = tl.load(hb + rn[:, None] * s_hn + kk[None, :], mask=hm, other=0.0,
                     cache_modifier=".cg").to(tl.float32)
        if HAS_MASK:
            hv = hv * tl.load(mb + rn[:, None] * s_mn + kk[None, :], mask=hm,
                              other=0.0).to(tl.float32)
        rm = mk[:, None] & mu[None, :]
        rk = rb + (kk * s_rc)[:, None]
        b = tl.load(rk + ri, mask=rm, other=0.0)
        acc_i = rmma(hv, b, r_lo(rk + ri, s_rs, rm, b, PREC), acc_i, PREC, F32_DOT)
        b = tl.load(rk + rf, mask=rm, other=0.0)
        acc_f = rmma(hv, b, r_lo(rk + rf, s_rs, rm, b, PREC), acc_f, PREC, F32_DOT)
        b = tl.load(rk + rz, mask=rm, other=0.0)
        acc_z = rmma(hv, b, r_lo(rk + rz, s_rs, rm, b, PREC), acc_z, PREC, F32_DOT)
        b = tl.load(rk + ro, mask=rm, other=0.0)
        acc_o = rmma(hv, b, r_lo(rk + ro, s_rs, rm, b, PREC), acc_o, PREC, F32_DOT)
    return acc_i, acc_f, acc_z, acc_o


@triton.jit
def _load_r_fwd(rb, s_rr, s_rc, ru, mu, H, BI: tl.constexpr, BF: tl.constexpr,
                BZ: tl.constexpr, BO: tl.constexpr, RES_K: tl.constexpr):
    """R_RESIDENT: the four [RES_K, BLOCK_U] gate slices of R[d] (R[d] at rb) read transposed,
    rows k >= H and units >= H zero: what _rec_fwd's K loop loads chunk by chunk, all at once."""
    kk = tl.arange(0, RES_K)
    rm = (kk < H)[:, None] & mu[None, :]
    rk = rb + (kk * s_rc)[:, None]
    return (tl.load(rk + ((BI * H + ru) * s_rr)[None, :], mask=rm, other=0.0),
            tl.load(rk + ((BF * H + ru) * s_rr)[None, :], mask=rm, other=0.0),
            tl.load(rk + ((BZ * H + ru) * s_rr)[None, :], mask=rm, other=0.0),
            tl.load(rk + ((BO * H + ru) * s_rr)[None, :], mask=rm, other=0.0))


@triton.jit
def _rec_fwd_resident(acc_i, acc_f, acc_z, acc_o, hb, s_hn, mb, s_mn, r_i, r_f, r_z, r_o, l_i,
                      l_f, l_z, l_o, rn, mn, H, HAS_MASK: tl.constexpr, PREC: tl.constexpr,
                      F32_DOT: tl.constexpr, RES_K: tl.constexpr):
    """_rec_fwd against the resident R tiles (_load_r_fwd; l_k: the remainder tiles with PREC
    "split", else unused): h_prev rows (times the mask) for the whole K extent, one dot per
    gate."""
    kk = tl.arange(0, RES_K)
    hm = mn[:, None] & (kk < H)[None, :]
    # written by other programs during this launch: bypass L1
    hv = tl.load(hb + rn[:, None] * s_hn + kk[None, :], mask=hm, other=0.0,
                 cache_modifier=".cg").to(tl.float32)
    if HAS_MASK:
        hv = hv * tl.load(mb + rn[:, None] * s_mn + kk[None, :], mask=hm,
                          other=0.0).to(tl.float32)
    acc_i = rmma(hv, r_i, l_i, acc_i, PREC, F32_DOT)
    acc_f = rmma(hv, r_f, l_f, acc_f, PREC, F32_DOT)
    acc_z = rmma(hv, r_z, l_z, acc_z, PREC, F32_DOT)
    acc_o = rmma(hv, r_o, l_o, acc_o, PREC, F32_DOT)
    return acc_i, acc_f, acc_z, acc_o


@triton.jit(do_not_specialize=["T", "k0", "nk"])
def _fwd_seq_kernel(
        xp_ptr, r_ptr, h0_ptr, c0_ptr, m_ptr, p_ptr, z_ptr, c_ptr, h_ptr, cnt_ptr, hm_ptr,
        T, N, H, k0, nk,
        s_xt, s_xn, s_rd, s_rr, s_rc, s_rs, s_h0n, s_c0n, s_mt, s_mn,
        s_zt, s_zn, s_ct, s_cn, s_ht, s_hn, s_hmt, s_hmn,
        BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr, BO: tl.constexpr,
        AI: tl.constexpr, AF: tl.constexpr, AZ: tl.constexpr, AO: tl.constexpr,
        AG: tl.constexpr, HAS_H0: tl.constexpr, HAS_C0: tl.constexpr,
        HAS_MASK: tl.constexpr, PEEP: tl.constexpr, REV: tl.constexpr, BIDIR: tl.constexpr,
        SYNC: tl.constexpr, PREC: tl.constexpr, F32_DOT: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr, BLOCK_K: tl.constexpr,
        TILES_U: tl.constexpr, CNT_STRIDE: tl.constexpr, R_RESIDENT: tl.constexpr,
        RES_K: tl.constexpr, PREFETCH: tl.constexpr):
    p, d, P, rn, ru, mn, mu, m2 = program_tile(N, H, TILES_U, BLOCK_N, BLOCK_U)
    dH = d * H
    rb = r_ptr + d.to(tl.int64) * s_rd
    tile_c = rn[:, None] * s_cn + dH + ru[None, :]
    tile_h = rn[:, None] * s_hn + dH + ru[None, :]
    tile_z = rn[:, None] * s_zn + 4 * dH + ru[None, :]
    tile_x = rn[:, None] * s_xn + 4 * dH + ru[None, :]
    if PEEP:
        p_i, p_f, p_z, p_o = load_peephole(p_ptr + 4 * dH + ru, mu, H, BI, BF, BZ, BO)
    if R_RESIDENT:  # the R slice, once for all the steps of this launch
        r_i, r_f, r_z, r_o = _load_r_fwd(rb, s_rr, s_rc, ru, mu, H, BI, BF, BZ, BO, RES_K)
        l_i, l_f, l_z, l_o = r_i, r_f, r_z, r_o  # the remainder tiles ("split" only)
        if PREC == "split":
            l_i, l_f, l_z, l_o = _load_r_fwd(rb + s_rs, s_rr, s_rc, ru, mu, H, BI, BF, BZ, BO,
                                             RES_K)

    # c_prev of the first step of this launch: c0 / zeros, or the cell written by the last launch
    if k0 == 0:
        if HAS_C0:
            c = tl.load(c0_ptr + rn[:, None] * s_c0n + dH + ru[None, :], mask=m2,
                        other=0.0).to(tl.float32)
        else:
            c = tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32)
    else:
        tq = step_time(k0 - 1, T, d, REV, BIDIR)
        c = tl.load(c_ptr + tq * s_ct + tile_c, mask=m2, other=0.0).to(tl.float32)

    if PREFETCH:  # xp of the first step; each step then loads the next step's before its own
        # recurrent product, so that no step waits for xp (read from HBM) after the barrier
        x_i, x_f, x_z, x_o = load_gates(
            xp_ptr + step_time(k0, T, d, REV, BIDIR) * s_xt + tile_x, m2, H, BI, BF, BZ, BO)
    for k in range(k0, k0 + nk):
        t = step_time(k, T, d, REV, BIDIR)
        mb = m_ptr + t * s_mt + dH
        # the accumulators start at xp[t]
        if PREFETCH:
            a_i, a_f, a_z, a_o = x_i, x_f, x_z, x_o
            x_i, x_f, x_z, x_o = load_gates(
                xp_ptr + step_time(k + 1, T, d, REV, BIDIR) * s_xt + tile_x,
                masked_if(m2, k < k0 + nk - 1), H, BI, BF, BZ, BO)
        else:
            a_i, a_f, a_z, a_o = load_gates(xp_ptr + t * s_xt + tile_x, m2, H, BI, BF, BZ, BO)
        if HAS_MASK:  # the next step's mask, for the h * m this step hands over
            m_nx = tl.load(m_ptr + step_time(k + 1, T, d, REV, BIDIR) * s_mt + dH
                           + rn[:, None] * s_mn + ru[None, :], mask=masked_if(m2, k < T - 1),
                           other=0.0).to(tl.float32)
        if k > 0:
            tq = step_time(k - 1, T, d, REV, BIDIR)
            if HAS_MASK:  # h[t_prev] * m[t], written by its producers: one operand to load
                hb = hm_ptr + tq * s_hmt + dH
                s_hb = s_hmn
            else:
                hb = h_ptr + tq * s_ht + dH
                s_hb = s_hn
            if R_RESIDENT:
                a_i, a_f, a_z, a_o = _rec_fwd_resident(
                    a_i, a_f, a_z, a_o, hb, s_hb, mb, s_mn, r_i, r_f, r_z, r_o, l_i, l_f, l_z,
                    l_o, rn, mn, H, False, PREC, F32_DOT, RES_K)
            else:
                a_i, a_f, a_z, a_o = _rec_fwd(
                    a_i, a_f, a_z, a_o, hb, s_hb, mb, s_mn, rb, s_rr, s_rc, s_rs, rn, mn, ru,
                    mu, H, BI, BF, BZ, BO, False, PREC, F32_DOT, BLOCK_K)
        else:
            if HAS_H0:
                if R_RESIDENT:
                    a_i, a_f, a_z, a_o = _rec_fwd_resident(
                        a_i, a_f, a_z, a_o, h0_ptr + dH, s_h0n, mb, s_mn, r_i, r_f, r_z, r_o,
                        l_i, l_f, l_z, l_o, rn, mn, H, HAS_MASK, PREC, F32_DOT, RES_K)
                else:
                    a_i, a_f, a_z, a_o = _rec_fwd(
                        a_i, a_f, a_z, a_o, h0_ptr + dH, s_h0n, mb, s_mn, rb, s_rr, s_rc, s_rs,
                        rn, mn, ru, mu, H, BI, BF, BZ, BO, HAS_MASK, PREC, F32_DOT, BLOCK_K)
        if PEEP:
            a_i += p_i * c
            a_f += p_f * c
            a_z += p_z * c
            a_o += p_o * c
        g_i, g_f, g_z, g_o, c, h = cell_step(a_i, a_f, a_z, a_o, c, AI, AF, AZ, AO, AG)
        tl.store(h_ptr + t * s_ht + tile_h, h, mask=m2)
        if HAS_MASK:  # (zeros after the last step)
            tl.store(hm_ptr + t * s_hmt + rn[:, None] * s_hmn + dH + ru[None, :], h * m_nx,
                     mask=m2)
        last = k == k0 + nk - 1
        if SYNC:  # all of h[t] before the next step: arrive after the h store only
            if not last:
                grid_arrive(cnt_ptr + d * CNT_STRIDE)
        # zState and cell are read by no program of this launch: stored while the barrier
        # completes (the release fence above does not wait for them)
        zb = z_ptr + t * s_zt + tile_z
        tl.store(zb + BI * H, g_i, mask=m2)
        tl.store(zb + BF * H, g_f, mask=m2)
        tl.store(zb + BZ * H, g_z, mask=m2)
        tl.store(zb + BO * H, g_o, mask=m2)
        tl.store(c_ptr + t * s_ct + tile_c, c, mask=m2)
        if SYNC:
            if not last:
                grid_wait(cnt_ptr + d * CNT_STRIDE, P * (k - k0 + 1))


# ----------------------------------------------------------------------------------------------
# tiling
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tiling:
    """How the persistent kernels cut an (N, H) problem: each of `programs` programs per
    direction owns block_n batch rows x block_u hidden units; block_k_fwd / block_k_bwd are the
    reduction chunks of the forward (over H) and backward (over 4H) recurrent products, and
    num_stages / num_stages_bwd the software-pipeline depths of those chunk loops."""
    block_n: int
    block_u: int
    block_k_fwd: int
    block_k_bwd: int
    num_warps: int
    num_stages: int
    tiles_n: int
    tiles_u: int
    num_stages_bwd: int = 2

    @property
    def programs(self) -> int:
        return self.tiles_n * self.tiles_u


# shared memory the K-chunk pipeline may take (one program per SM; an H200 SM has 227 KiB)
_PIPE_BYTES = 200 * 1024


def _stages(per_stage: int) -> int:
    """Software-pipeline depth of a K-chunk loop whose chunk operands take `per_stage` bytes:
    3 (measured best, below) while (stages + 2) * per_stage fits _PIPE_BYTES (Triton 3.6 took
    (stages + 1) * per_stage in the cases that overflowed), else fewer."""
    for st in (3, 2):
        if (st + 2) * per_stage <= _PIPE_BYTES:
            return st
    return 1


def _tiling(N: int, H: int, bn: int, bu: int, elem: int, bkf: int | None = None,
            bkb: int | None = None, warps: int | None = None,
            stages: int | None = None) -> Tiling:
    """A Tiling with the chunk sizes, warps and pipeline depths of the K-chunk loops, measured
    (H200, training step, `lstm_sweep.py`; LSTM_DESIGNS.md): forward chunks of 128 (half,
    BLOCK_N = 16: (N=64, H=1024) bf16 forward 785 -> 733 us against 64; 256: 1256) / 64 (half,
    wider BLOCK_N: 64 beat 128 at (N=256, H=512) 64x16, 1400 vs 1436 us) / 32 (float32) hidden
    units, backward chunks of 256 (half, BLOCK_N = 16) / 128 (half) / 64
    (float32), 4 warps, 3 stages where the shared memory allows (`_stages`; float32 counts R's
    "split" hi and lo). Against the previous 8192-element chunk cap, 8 warps from 1024 outputs
    and 2 stages: (N=64, H=1024) bf16 3.83 -> 2.12 ms, (64, 256) float32 2.25 -> 1.93,
    (8, 128) float32 0.59 -> 0.52, (256, 512) bf16 at 64x16 (4 stages) 4.36 vs 6.27 at 32x32.
    `stages` (the env override) sets both loops' depth."""
    half = elem == 2
    if bkf is None:
        bkf = max(16, min(pow2(H), (128 if bn <= 16 else 64) if half else 32))
    if bkb is None:
        bkb = max(16, min(pow2(4 * H), (256 if bn <= 16 else 128) if half else 64))
    if warps is None:
        warps = 4
    r_el = elem if half else 2 * elem  # float32 "split" streams R's hi and lo parts
    st_f = stages or _stages(bn * bkf * 4 + 4 * bu * bkf * r_el)  # h_prev rows (as float32)
    st_b = stages or _stages(bn * bkb * elem + bkb * bu * r_el)  # dA rows in R's dtype
    return Tiling(bn, bu, bkf, bkb, warps, st_f, cdiv(N, bn), cdiv(H, bu), st_b)


def _override(N: int, H: int, elem: int, backward: bool) -> Tiling | None:
    """MPSGRAPH_LSTM_TILING="BN,BU[,BKF,BKB[,WARPS[,STAGES]]]" (benchmarking), for the
    backward kernel MPSGRAPH_LSTM_TILING_BWD where set (the two kernels share no state, so
    they may be tiled differently). The other knobs: MPSGRAPH_LSTM_FP32_DOT (`precision`),
    MPSGRAPH_LSTM_R_RESIDENT (`r_resident`)."""
    name = "MPSGRAPH_LSTM_TILING"
    if backward and os.environ.get(name + "_BWD", "").strip():
        name += "_BWD"
    spec = os.environ.get(name, "").strip()
    if not spec:
        return None
    try:
        v = [int(s) for s in spec.split(",")]
    except ValueError:
        v = []
    if len(v) not in (2, 4, 5, 6) or any(x < 16 or x & (x - 1) for x in v[:4]):
        raise ValueError(f"{name}={spec!r}: expected BN,BU[,BKF,BKB[,WARPS[,STAGES]]], "
                         "powers of two >= 16")
    return _tiling(N, H, v[0], v[1], elem, *(v[2:4] or (None, None)),
                   *(v[4:5] or (None,)), *(v[5:6] or (None,)))


def plan(N: int, H: int, D: int, device: torch.device, dtype: torch.dtype = torch.float32,
         *, max_programs: int | None = None, allow_tf32: bool = False,
         backward: bool = False) -> Tiling | None:
    """The tiling of the persistent kernels for batch N, hidden H, D directions (of the
    backward kernel with `backward`: only the env override tells them apart), or None when
    the problem cannot be tiled with all P * D programs co-resident (the caller then uses the
    per-step path).

    P * D <= max_programs (default: the CUDA device's multiprocessor count; unbounded on other
    devices, where the kernels run one launch per step). Candidates: BLOCK_N, BLOCK_U in
    {16, 32, 64} (tl.dot's minimum is 16; N and H are padded with masks), BLOCK_N * BLOCK_U <=
    4096 (four float32 accumulators per program). The choice, by regime:

    - N <= 64 (latency-bound: a step's work is tiny next to its dependent round trips), a
      measured rule (H200, `benchmarks/lstm_sweep.py`; a cost model had the order wrong at
      every such shape measured): most kernels with R resident (`r_resident`, forward
      and backward), then the narrowest BLOCK_N, then the fewest programs, with BLOCK_U <= 32
      (64 measured slower at every shape). E.g. (N=64, H=256): 16x32 bf16 (1.01 ms vs 1.05 for
      16x16), 16x16 TF32 (both kernels resident: 1.58 vs 2.00), 16x32 float32 (2.81 vs 3.07);
      (N=8, H=128) 16x32 (0.64 ms vs 0.89 float32); (N=64, H=1024) 16x32 (3.97 ms vs 4.33 bf16).
    - N > 64 (each step a real GEMM): the narrowest BLOCK_U, then the widest BLOCK_N, then
      the fewest programs: 64x16 at (N=256, H=512), measured best in float32 (28.4 ms vs 38.4
      for 32x32) and bf16 (4.36 ms vs 5.42 for 32x32 with its forward R resident).

    Deadlock risks the caller accepts with SYNC launches: another kernel holding SMs for the
    whole run (a concurrent persistent kernel), or an SM budget smaller than
    multi_processor_count (MPS active-thread percentage, green contexts).

    Answers are cached per shape, dtype, SM budget and the values of the environment knobs
    that steer them (`_PLAN_KNOBS`, read at every call): 60 -> 3.5 us per call on the host."""
    if N <= 0 or H <= 0 or D not in (1, 2):
        return None
    if max_programs is None and device.type == "cuda":
        max_programs = _sm_count(torch.cuda.current_device() if device.index is None
                                 else device.index)
    knobs = tuple(os.environ.get(k, "") for k in _PLAN_KNOBS)
    return _plan(N, H, D, dtype, max_programs, allow_tf32, backward, knobs)


_PLAN_KNOBS = ("MPSGRAPH_LSTM_TILING", "MPSGRAPH_LSTM_TILING_BWD", "MPSGRAPH_LSTM_FP32_DOT",
               "MPSGRAPH_LSTM_R_RESIDENT")


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


@functools.lru_cache(maxsize=512)
def _plan(N: int, H: int, D: int, dtype: torch.dtype, max_programs: int | None,
          allow_tf32: bool, backward: bool, knobs: tuple[str, ...]) -> Tiling | None:
    """`plan` (`knobs`: the values of _PLAN_KNOBS it read, part of the cache key only)."""
    del knobs
    elem = 2 if dtype in (torch.float16, torch.bfloat16) else 4
    forced = _override(N, H, elem, backward)
    if forced is not None:
        if max_programs is not None and forced.programs * D > max_programs:
            return None
        return forced
    prec = precision(dtype, allow_tf32, H)
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
                til = _tiling(N, H, bn, bu, elem)
                res = sum(r_resident(H, til, dtype, prec, b) > 0 for b in (False, True))
                key = (-res, bn, P)
            else:
                key = (bu, -bn, P)
            if best is None or key < best[0]:
                best = (key, bn, bu)
    if best is None:
        return None
    return _tiling(N, H, best[1], best[2], elem)


# ----------------------------------------------------------------------------------------------
# wrapper
# ----------------------------------------------------------------------------------------------


def interpreting() -> bool:
    """Whether these kernels were defined for Triton's interpreter (TRITON_INTERPRET=1 when the
    module was imported): it runs programs one after another (no persistent launch)."""
    return type(_fwd_seq_kernel).__name__ == "InterpretedFunction"


def launch_plan(dev: torch.device, T: int, N: int, R: torch.Tensor, D: int,
                tiling: Tiling | None, sync: bool | None, allow_tf32: bool,
                backward: bool = False) -> tuple[Tiling | None, bool]:
    """(tiling, sync) of a call of the wrappers (R [D, 4H, H]; the backward kernel's with
    `backward`); tiling None when the call
    cannot run (nothing to do when T, N or H is 0). sync=None: one persistent launch on CUDA,
    one launch per step under the interpreter (which runs programs one after another: there a
    persistent launch only works with one program per direction, as the grid barrier then
    waits for nobody else)."""
    H = R.shape[-1]
    if T == 0 or N == 0 or H == 0:
        return None, bool(sync)
    assert R.shape == (D, 4 * H, H), R.shape
    dtype = R.dtype
    if sync is None:
        sync = dev.type == "cuda" and not interpreting()
    if tiling is None:
        tiling = plan(N, H, D, dev, dtype, max_programs=None if sync else 1 << 30,
                      allow_tf32=allow_tf32, backward=backward)
    elif sync and dev.type == "cuda" and tiling.programs * D > _sm_count(
            torch.cuda.current_device() if dev.index is None else dev.index):
        tiling = None
    if tiling is not None and sync and interpreting() and tiling.programs > 1:
        raise ValueError("a persistent launch (sync=True) under the interpreter needs a tiling "
                         "with one program per direction (it would wait forever)")
    return tiling, bool(sync)


def cluster_config(dev: torch.device, T: int, N: int, R: torch.Tensor, D: int,
                   tiling: Tiling | None, sync: bool | None, tensors) -> lstm_cluster.Config | None:
    """The cluster path's Config (kernels/lstm_cluster.py: float32, N <= 16, H in 32..256, a
    Hopper+ GPU) when the wrappers should take it: a CUDA call with T, N > 0 that asks for no
    particular tiling or launch mode (tiling None, sync None, no MPSGRAPH_LSTM_TILING); else
    None (the Triton kernels)."""
    if (dev.type != "cuda" or tiling is not None or sync is not None or T == 0 or N == 0
            or os.environ.get("MPSGRAPH_LSTM_TILING", "").strip()):
        return None
    H = R.shape[-1]
    if H == 0 or R.shape != (D, 4 * H, H):
        return None
    return lstm_cluster.usable(dev, N, H, (R, *tensors))


def launch(kernel, grid, args: tuple, meta: dict) -> dict:
    """kernel[grid](*args, **meta), retried with one software-pipeline stage fewer while Triton
    reports that shared memory does not suffice (`_stages` budgets conservatively; this is the
    net under it). Returns the meta that launched (reuse it for the next launches)."""
    while True:
        try:
            kernel[grid](*args, **meta)
            return meta
        except OutOfResources:
            if meta["num_stages"] <= 1:
                raise
            meta = {**meta, "num_stages": meta["num_stages"] - 1}


def _unit(t: torch.Tensor | None) -> torch.Tensor | None:
    """A view with a unit stride on the last axis (other strides free, 0 allowed)."""
    if t is None or t.dim() == 0 or t.stride(-1) == 1 or t.shape[-1] <= 1:
        return t
    return t.contiguous()


def prefetch() -> bool:
    """Whether the persistent kernels load each step's read-only inputs (forward: xp; backward:
    dstate, zState, cell, dcell, mask) one step ahead, in the step before (default), instead of
    at the start of the step that uses them. MPSGRAPH_LSTM_PREFETCH=0 turns it off (read at
    every call; for measuring)."""
    v = os.environ.get("MPSGRAPH_LSTM_PREFETCH", "").strip()
    if v not in ("", "0", "1"):
        raise ValueError(f"MPSGRAPH_LSTM_PREFETCH={v!r}: expected 0 or 1")
    return v != "0"


def precision(dtype: torch.dtype, allow_tf32: bool, H: int) -> str:
    """tl.dot's input_precision for hidden size H: float32 with allow_tf32 "tf32"; float32
    otherwise three TF32 products per product (hi*hi + hi*lo + lo*hi, accumulated in float32:
    float32 accuracy, the dropped lo*lo term is below float32's rounding of the operands):

    - "split" for H <= 256: R split into hi / lo once per call (`split_r`), the h / dA operand
      per step (`rmma`), the two correction products in their own accumulation chain;
      measured on the H200 (training step, LSTM_DESIGNS.md) 3-4% faster than "tf32x3" at the
      default tilings of (N=8, H=128) and (64, 256), 14% at 16x16;
    - "tf32x3" (Triton splits both operands at every dot) for H > 256, where "split" measured
      slower (its K-chunk loop reads R's two halves from L2: -2% at (64, 512) bidirectional,
      -22% at H = 1024). Both measured 1.3x (H=256) to 2x (H=1024) faster than "ieee" (FMA).

    MPSGRAPH_LSTM_FP32_DOT=ieee|tf32|tf32x3|split overrides it (it also sets how large a
    resident R fits: `r_resident`). Ignored for the half types (their tensor-core dot is exact
    per product, float32 accumulation)."""
    if dtype != torch.float32:
        return "tf32"
    forced = os.environ.get("MPSGRAPH_LSTM_FP32_DOT", "").strip().lower()
    if forced and forced not in ("ieee", "tf32", "tf32x3", "split"):
        raise ValueError(f"MPSGRAPH_LSTM_FP32_DOT={forced!r}: expected ieee, tf32, tf32x3 or "
                         "split")
    if forced:
        return forced
    return "tf32" if allow_tf32 else ("split" if H <= 256 else "tf32x3")


# R_RESIDENT caps, from ptxas for sm_90 (Triton 3.6 / 3.9, AOT compile on the CPU; numbers in
# lstm_seq_bwd's docstring). Triton keeps the resident tile in SHARED memory (one local_alloc
# before the time loop) and reads it with ldmatrix at every step; with mma.sync each warp holds
# a [16, K] slice of the step's operand (h_prev or dA rows) in registers, so two limits:
# - the resident tile(s), 4 * pow2(H) * BLOCK_U elements forward, pow2(4H) * BLOCK_U
#   backward: float32 <= 16384 (64 KiB); half <= 65536 (128 KiB: one program per SM leaves
#   227 KiB; forward 16x32 at H=512 takes 160 KiB, backward 194 KiB); "split" counts hi and lo
#   (<= 32768 elements: 16x32 at H=128 takes 136 KiB, no spills);
# - the step's operand, by dot precision and kernel (forward K = pow2(H), backward pow2(4H)):
#   half forward K <= 512 and BLOCK_N * K <= 16384 (at K=1024 a warp's [16, K] slice spills
#   2 KB), backward BLOCK_N * K <= 32768 (16x32 at K=2048: 32 bytes of stack; 32x32 at
#   K=1024: none); "tf32" <= 16384 both; "tf32x3" and "split" <= 2048 (hi / lo copies of the
#   operand: at 4096 ptxas spills KBs); "ieee" never (the FMA dot holds both operands in
#   registers: spills KBs at 16x16, H=128).
# Measured (H200, LSTM_DESIGNS.md): the half caps raised from 32768 / 16384 made (N=64, H=512)
# bf16 resident at 16x32, 1.55x faster per training step bidirectional, 1.63x one-directional;
# (256, 512) 32x32 forward-only resident 1.14x.
R_RESIDENT_MAX_TILE = {"half": 65536, "tf32": 16384, "tf32x3": 16384, "split": 32768,
                       "ieee": 16384}
R_RESIDENT_MAX_OPERAND = {  # (forward, backward): max BLOCK_N * K
    "half": (16384, 32768), "tf32": (16384, 16384), "tf32x3": (2048, 2048),
    "split": (2048, 2048), "ieee": (0, 0)}
R_RESIDENT_MAX_K = {"half": (512, 1 << 30)}  # (forward, backward); others: no cap of their own


def r_resident(H: int, tiling: Tiling, dtype: torch.dtype, prec: str, backward: bool) -> int:
    """The K extent (a power of two >= 16, tl.dot's minimum) of the resident R tiles when they
    fit the caps above, else 0 (the K-chunk loop). Forward K = pow2(H) (four [K, BLOCK_U] gate
    tiles), backward K = pow2(4H) (one [K, BLOCK_U] tile); `prec` is `precision`'s answer. On
    by default: measured on the H200 (benchmarks/lstm_sweep.py --resident, LSTM_DESIGNS.md)
    13-31% faster per training step in bf16 and TF32 and up to 29% in float32 where the caps
    let it run; MPSGRAPH_LSTM_R_RESIDENT=0 turns it off (read at every call)."""
    v = os.environ.get("MPSGRAPH_LSTM_R_RESIDENT", "").strip()
    if v not in ("", "0", "1"):
        raise ValueError(f"MPSGRAPH_LSTM_R_RESIDENT={v!r}: expected 0 or 1")
    if v == "0":
        return 0
    K = max(16, pow2(4 * H if backward else H))
    kind = "half" if dtype in (torch.float16, torch.bfloat16) else prec
    tile = K * tiling.block_u * (1 if backward else 4) * (2 if kind == "split" else 1)
    fits = (tile <= R_RESIDENT_MAX_TILE[kind]
            and tiling.block_n * K <= R_RESIDENT_MAX_OPERAND[kind][backward]
            and K <= R_RESIDENT_MAX_K.get(kind, (1 << 30, 1 << 30))[backward])
    return K if fits else 0


@triton.jit
def _split_r_kernel(r_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[0] = TF32 high part of r (truncated), out[1] = the remainder rounded to TF32 (NaN
    kept: NVIDIA's canonical NaN 0x7FFFFFFF would carry into the sign bit)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    hi, lo = tf32_split(tl.load(r_ptr + offs, mask=m, other=0.0))
    lo_r = ((lo.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    tl.store(out_ptr + offs, hi, mask=m)
    tl.store(out_ptr + n + offs, tl.where(lo == lo, lo_r, lo), mask=m)


def split_r(R: torch.Tensor, prec: str) -> tuple[torch.Tensor, int]:
    """The R operand of the kernels and s_rs, the offset (elements) of its remainder part: for
    prec "split" R float32 [D, 4H, H] becomes its TF32 high part (R truncated to 10 mantissa
    bits, exact as a TF32 operand) followed, s_rs elements later, by the remainder R - hi
    rounded to TF32 (|error| <= 2^-21 |R|; 0 where R is infinite, NaN where R is NaN), in one
    launch per call instead of a split of R at every step (`rmma`). Other precisions: (R, 0)."""
    if prec != "split":
        return R, 0
    R = R.contiguous()
    both = torch.empty((2, *R.shape), dtype=torch.float32, device=R.device)
    n = R.numel()
    _split_r_kernel[(cdiv(n, 1024),)](R, both, n, BLOCK=1024)
    return both[0], n


def kernel_meta(H: int, R: torch.Tensor, tiling: Tiling, *, sync: bool, allow_tf32: bool,
                blocks: tuple[int, int, int, int], activations: tuple[int, int, int, int, int],
                reverse: bool, bidirectional: bool, backward: bool) -> dict:
    """The compile-time arguments both persistent kernels share: gate blocks and activations,
    direction, SYNC, dot precision, tiling, R resident, prefetch, warps and stages."""
    half = R.dtype in (torch.float16, torch.bfloat16)
    prec = precision(R.dtype, allow_tf32, H)
    res_k = r_resident(H, tiling, R.dtype, prec, backward=backward)
    meta = dict(zip(("BI", "BF", "BZ", "BO"), blocks)) | dict(
        zip(("AI", "AF", "AZ", "AO", "AG"), (int(a) for a in activations)))
    meta.update(REV=bool(reverse) and not bidirectional, BIDIR=bool(bidirectional),
                SYNC=bool(sync), PREC=prec, F32_DOT=half and interpreting(),
                BLOCK_N=tiling.block_n, BLOCK_U=tiling.block_u,
                BLOCK_K=tiling.block_k_bwd if backward else tiling.block_k_fwd,
                TILES_U=tiling.tiles_u, CNT_STRIDE=_CNT_STRIDE, R_RESIDENT=res_k > 0,
                RES_K=max(res_k, 16), PREFETCH=prefetch(), num_warps=tiling.num_warps,
                num_stages=tiling.num_stages_bwd if backward else tiling.num_stages)
    return meta


def mask_and_peephole(mask: torch.Tensor | None, peephole: torch.Tensor | None, T: int,
                      N: int, D: int, H: int):
    """The mask as [T, N, D*H] (a state-shaped one broadcast over T, no copy) and the peephole
    as float32 [D, 4H], as both kernels read them."""
    if mask is not None and mask.dim() == 2:
        mask = mask.unsqueeze(0).expand(T, N, D * H)
    if peephole is not None:
        peephole = peephole.to(torch.float32).reshape(D, 4 * H).contiguous()
    return mask, peephole


def forward_sequence(xp: torch.Tensor, R: torch.Tensor, h0: torch.Tensor | None,
                     c0: torch.Tensor | None, mask: torch.Tensor | None,
                     peephole: torch.Tensor | None, state: torch.Tensor, cell: torch.Tensor,
                     zstate: torch.Tensor, *, reverse: bool, bidirectional: bool,
                     blocks: tuple[int, int, int, int],
                     activations: tuple[int, int, int, int, int], allow_tf32: bool = False,
                     tiling: Tiling | None = None, sync: bool | None = None) -> bool:
    """The LSTM forward over all steps and directions (module docstring). Shapes (D = 2 when
    bidirectional else 1; every tensor needs a unit stride on its last axis, other strides are
    free, so direction slices and broadcast rows work):

    - xp [T, N, D*4H]: x @ W^T + b of all steps (any float dtype, read as float32);
    - R [D, 4H, H]: recurrent weights, float32 or the half type the dots run in (any strides);
    - h0, c0 [N, D*H] or None (zeros); mask [T, N, D*H], or [N, D*H] (or stride 0 on T) for one
      mask at every step, or None; peephole [D, 4H] (used as float32; gate blocks in `blocks`
      order) or None;
    - outputs state, cell [T, N, D*H], zstate [T, N, D*4H], written in place in their dtype
      (the torch backend passes the input dtype's: a half-type store rounds the float32 value
      once, as a float32 buffer rounded afterwards would; the cell carry stays float32);
      with a mask, a scratch buffer like state (h * m of every step, "mask at the producer")
      is allocated for the call.

    blocks = (i, f, z, o) block indices on the 4H axis; activations = (f_i, f_f, f_z, f_o, g) as
    RNNActivation ints. sync=None: one persistent launch on CUDA (off under TRITON_INTERPRET),
    else one launch per step. With tiling and sync None, a float32 call with N <= 16 on a
    Hopper+ GPU runs on the thread-block-cluster kernel instead (`cluster_config`,
    kernels/lstm_cluster.py). Returns False (nothing written) when `plan` finds no tiling."""
    T, N, H, D = xp.shape[0], xp.shape[1], R.shape[-1], 2 if bidirectional else 1
    dev = xp.device
    cfg = cluster_config(dev, T, N, R, D, tiling, sync, (xp, h0, c0, mask, state, cell, zstate))
    xp, h0, c0, mask = _unit(xp), _unit(h0), _unit(c0), _unit(mask)
    mask, peephole = mask_and_peephole(mask, peephole, T, N, D, H)
    if cfg is not None and lstm_cluster.forward(
            cfg, xp, R, h0, c0, mask, peephole, state, cell, zstate, reverse=reverse,
            bidirectional=bidirectional, blocks=blocks, activations=activations):
        return True  # (the cluster path declines where its kernels cannot be compiled / run)
    tiling, sync = launch_plan(dev, T, N, R, D, tiling, sync, allow_tf32)
    if tiling is None:
        return False
    meta = kernel_meta(H, R, tiling, sync=sync, allow_tf32=allow_tf32, blocks=blocks,
                       activations=activations, reverse=reverse, bidirectional=bidirectional,
                       backward=False)
    R, s_rs = split_r(R, meta["PREC"])
    cell_out = cell
    if not sync and cell.dtype != torch.float32:  # the per-step launches hand the cell
        # carry over through this buffer: kept in float32, rounded once into `cell` at the end
        cell = torch.empty(cell.shape, dtype=torch.float32, device=dev)
    dummy = state
    cnt = torch.zeros(D * _CNT_STRIDE, dtype=torch.int32, device=dev)
    # mask at the producer: h[t] * m[t_next] of every step, the operand of the next product
    hm = None if mask is None else torch.empty((T, N, D * H), dtype=state.dtype, device=dev)
    args = (xp, R, dummy if h0 is None else h0, dummy if c0 is None else c0,
            dummy if mask is None else mask, dummy if peephole is None else peephole,
            zstate, cell, state, cnt, dummy if hm is None else hm)
    strides = (xp.stride(0), xp.stride(1), R.stride(0), R.stride(1), R.stride(2), s_rs,
               0 if h0 is None else h0.stride(0), 0 if c0 is None else c0.stride(0),
               0 if mask is None else mask.stride(0), 0 if mask is None else mask.stride(1),
               zstate.stride(0), zstate.stride(1), cell.stride(0), cell.stride(1),
               state.stride(0), state.stride(1), 0 if hm is None else hm.stride(0),
               0 if hm is None else hm.stride(1))
    for s in (state, cell, zstate):
        assert s.stride(-1) == 1, "outputs need a unit stride on the last axis"
    meta.update(HAS_H0=h0 is not None, HAS_C0=c0 is not None, HAS_MASK=mask is not None,
                PEEP=peephole is not None)
    grid = (tiling.programs, D)
    if sync:
        launch(_fwd_seq_kernel, grid, (*args, T, N, H, 0, T, *strides), meta)
    else:
        for k in range(T):
            meta = launch(_fwd_seq_kernel, grid, (*args, T, N, H, k, 1, *strides), meta)
    if cell is not cell_out:
        cell_out.copy_(cell)
    return True
