"""Persistent LSTM backward recurrence (Triton): every step of both directions in ONE launch.

Equations (SPEC 3.7; those of lstm_cell.py's `_bwd_kernel`), per direction d, for the steps in
REVERSE processing order (t_prev / t_next: the steps processed just before / after t in the
forward order; m[t] the mask of step t, 1 when absent):

    dh_rec = dh_final (zeros if absent)                           at the first backward step
           = (dA[t_next] @ R[d]) * m[t_next]                      afterwards        # [N, H]
    dh   = dstate[t] + dh_rec
    dc   = dc_carry + dh * o * g'(g(c[t]))  (+ dcell[t])          dc_carry starts at dc_final
    da_i = dc * z * f_i'(i);  da_f = dc * c_prev * f_f'(f);  da_z = dc * i * f_z'(z)
    da_o = dh * g(c[t]) * f_o'(o)                                 -> dA[t] (gate blocks)
    dc_carry = dc * f + sum_k da_k * p_k                          (peephole, optional)

and after the last step dh0 = (dA[t_first] @ R[d]) * m[t_first], dc0 = dc_carry. i, f, z, o are
the post-activation gates of zState[t], c_prev = cell[t_prev] (c0 / zeros at the first step).
The weight gradients, dx, db and the peephole gradient are large GEMMs / reductions over dA
done by the caller (backends/torch/rnn.py).

Design (see lstm_seq_fwd.py for the grid barrier, co-residency and the interpreter mode): grid
(P, D), program p owns BLOCK_N batch rows x BLOCK_U hidden units of its direction. A step's
read-only inputs (dstate, zState, cell[t], cell[t_prev], dcell, mask[t_next]: `_step_inputs`)
were loaded by the previous step (PREFETCH, the default, as in the forward; with
MPSGRAPH_LSTM_PREFETCH=0 they are loaded first, in flight together with dA[t_next]), then one
[BLOCK_N, 4H] x [4H, BLOCK_U] tl.dot over BLOCK_K chunks (dA[t_next] rows against the columns
`units` of R[d], i.e. R read untransposed), the gate-derivative math of the tile, the store of
its part of dA[t], then a grid barrier: the next step needs all of dA[t]. The cell carry stays
in registers. dA rows written during the launch are loaded with ".cg". Per step and program:
BLOCK_N * BLOCK_U * 4H multiply-adds, dA rows (BLOCK_N * 4H elements) and the R slice (4H *
BLOCK_U) from L2 (none with R resident).
Peephole gradient (DP, when the caller passes `dpeep`): each program sums dA_k * c_prev over its
rows and steps per unit in float32 registers and adds the sums to its row tile's partials
[tiles_n, D, 4H] at the end of the launch (only that program writes them: no atomics); the
wrapper adds the row tiles' partials in a fixed order (deterministic).
One launch per step (SYNC=False) carries dc through the dc0 buffer ([N, D*H] float32, read at
the start of a launch, written at its end), and the final dh0 product is then its own launch
(j0 = T, nj = 0, do_final = 1), because it needs every program's dA of the last step.

R resident (the default where it fits; lstm_seq_fwd.py's docstring and `r_resident`):
constexpr R_RESIDENT with RES_K = pow2(4H): the [RES_K, BLOCK_U] slice R[d][:, units] (rows
>= 4H and units >= H masked to zero) is loaded once per launch before the step loop
(`_load_r_bwd`) and every dh product, the final dh0 one included, is ONE tl.dot of the dA rows
of the whole K extent against it (`_rec_bwd_resident`). Resources of both kernels, ptxas for
sm_90a (Triton 3.9 AOT compile, no GPU; 4 warps; registers / stack bytes per thread / shared
KiB; "plain" = default options, "+opts" = mask, peephole, bidirectional), chunked -> resident:

    fwd H=256 16x16 bf16     136/0/24 -> 166/0/48     +opts 226/0/32 -> 255/128/48
    fwd H=256 16x32 bf16     126/0/20 -> 148/0/80     +opts 126/0/24 -> 255/24/80
    fwd H=256 16x16 tf32     224/0/40 -> 254/32/81    +opts 168/8/48 -> 255/96/80
    fwd H=256 16x16 tf32x3   255/32/40 -> 32/11576/80 (ptxas gives up: not selected)
    fwd H=128 16x16 bf16     136/0/24 -> 130/0/24     +opts 226/0/32 -> 232/0/24
    fwd H=128 16x16 tf32x3   255/32/40 -> 255/184/40  +opts 255/104/48 -> 255/280/40
    fwd H=128 16x32 tf32x3   228/0/36 -> 255/40/72    +opts 245/0/40 -> 255/72/72
    bwd H=256 16x16 bf16     154/0/16 -> 164/0/64     +opts 161/0/16 -> 198/0/64
    bwd H=256 16x32 bf16     158/0/12 -> 176/0/96     +opts 188/0/12 -> 220/0/96
    bwd H=256 16x16 tf32     148/0/16 -> 226/0/129    +opts 157/0/16 -> 250/0/128
    bwd H=256 16x16 tf32x3   255/368/16 -> 32/18320/128 (not selected)
    bwd H=128 16x16 bf16     154/0/16 -> 122/0/32     +opts 161/0/16 -> 150/0/32
    bwd H=128 16x16 tf32     148/0/16 -> 162/0/65     +opts 158/0/16 -> 196/0/64
    bwd H=128 16x16 tf32x3   255/368/16 -> 32/8648/64 (not selected)

dA is written in its buffer's dtype (the torch backend uses the input dtype, so that the half
types' weight-gradient GEMMs read it directly); the recurrent dot then reads it back as stored.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import lstm_cluster
from .lstm_cell import _act, _dact
from .lstm_seq_fwd import (
    _CNT_STRIDE,
    Tiling,
    _unit,
    cluster_config,
    grid_barrier,
    kernel_meta,
    launch,
    launch_plan,
    load_gates,
    load_peephole,
    mask_and_peephole,
    masked_if,
    program_tile,
    r_lo,
    rmma,
    split_r,
    step_time,
)


@triton.jit
def _rec_bwd(ab, s_an, rb, s_rr, s_rc, s_rs, rn, mn, ru, mu, H, PREC: tl.constexpr,
             F32_DOT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr,
             BLOCK_K: tl.constexpr):
    """dA rows at ab (row stride s_an, [BLOCK_N, 4H]) @ R[d][:, units] (R[d] at rb)."""
    acc = tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32)
    cols = (ru * s_rc)[None, :]
    for k0 in range(0, 4 * H, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        mk = kk < 4 * H
        # written by other programs during this launch: bypass L1
        av = tl.load(ab + rn[:, None] * s_an + kk[None, :], mask=mn[:, None] & mk[None, :],
                     other=0.0, cache_modifier=".cg")
        rp = rb + (kk * s_rr)[:, None] + cols
        rm = mk[:, None] & mu[None, :]
        rv = tl.load(rp, mask=rm, other=0.0, cache_modifier=".ca")  # read-only: stays in L1
        acc = rmma(av, rv, r_lo(rp, s_rs, rm, rv, PREC), acc, PREC, F32_DOT)
    return acc


@triton.jit
def _load_r_bwd(rb, s_rr, s_rc, ru, mu, H, RES_K: tl.constexpr):
    """R_RESIDENT: the [RES_K, BLOCK_U] slice R[d][:, units] (R[d] at rb), rows >= 4H and
    units >= H zero: what _rec_bwd's K loop loads chunk by chunk, all at once."""
    kk = tl.arange(0, RES_K)
    return tl.load(rb + (kk * s_rr)[:, None] + (ru * s_rc)[None, :],
                   mask=(kk < 4 * H)[:, None] & mu[None, :], other=0.0)


@triton.jit
def _rec_bwd_resident(ab, s_an, r_t, l_t, rn, mn, H, PREC: tl.constexpr, F32_DOT: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr, RES_K: tl.constexpr):
    """_rec_bwd against the resident R tile (_load_r_bwd; l_t its remainder with PREC "split",
    else unused): dA rows for the whole K extent, one dot."""
    kk = tl.arange(0, RES_K)
    # written by other programs during this launch: bypass L1
    av = tl.load(ab + rn[:, None] * s_an + kk[None, :], mask=mn[:, None] & (kk < 4 * H)[None, :],
                 other=0.0, cache_modifier=".cg")
    return rmma(av, r_t, l_t, tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32), PREC, F32_DOT)


@triton.jit
def _add(a, b):
    # for tl.reduce: tl.sum is a @jit function of Triton's standard library, which the
    # interpreter runs only when TRITON_INTERPRET=1 was set before triton itself was imported
    return a + b


@triton.jit
def _step_inputs(j, ok, T, d, ds_ptr, z_ptr, c_ptr, c0_ptr, dcs_ptr, m_ptr, s_dst, s_dsn, s_zt,
                 s_ct, s_c0n, s_dcst, s_dcsn, s_mt, rn, ru, m2, tile_c, tile_z, tile_m, dH, H,
                 BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr, BO: tl.constexpr,
                 HAS_C0: tl.constexpr, DCS: tl.constexpr, HAS_MASK: tl.constexpr,
                 REV: tl.constexpr, BIDIR: tl.constexpr):
    """The read-only inputs of backward step j, as float32 tiles (zeros where `ok` is false):
    dstate[t], the gates of zState[t], cell[t], c_prev (cell[t_prev], or c0 at the first
    step), dcell[t] and the mask of t_next (when present)."""
    m = masked_if(m2, ok)
    k = T - 1 - j  # the forward processing index of this step
    t = step_time(k, T, d, REV, BIDIR)
    tq = step_time(k - 1, T, d, REV, BIDIR)  # the steps before / after t (when they exist)
    tn = step_time(k + 1, T, d, REV, BIDIR)
    ds = tl.load(ds_ptr + t * s_dst + rn[:, None] * s_dsn + dH + ru[None, :], mask=m,
                 other=0.0).to(tl.float32)
    g_i, g_f, g_z, g_o = load_gates(z_ptr + t * s_zt + tile_z, m, H, BI, BF, BZ, BO)
    c = tl.load(c_ptr + t * s_ct + tile_c, mask=m, other=0.0).to(tl.float32)
    cp = tl.load(c_ptr + tq * s_ct + tile_c, mask=masked_if(m, k > 0), other=0.0).to(tl.float32)
    if HAS_C0:
        cp += tl.load(c0_ptr + rn[:, None] * s_c0n + dH + ru[None, :],
                      mask=masked_if(m, k == 0), other=0.0).to(tl.float32)
    dcs = ds  # a placeholder when absent (never read)
    if DCS:
        dcs = tl.load(dcs_ptr + t * s_dcst + rn[:, None] * s_dcsn + dH + ru[None, :], mask=m,
                      other=0.0).to(tl.float32)
    m_next = ds  # a placeholder when absent (never read)
    if HAS_MASK:
        m_next = tl.load(m_ptr + tn * s_mt + tile_m, mask=masked_if(m, k < T - 1),
                         other=0.0).to(tl.float32)
    return ds, g_i, g_f, g_z, g_o, c, cp, dcs, m_next


@triton.jit(do_not_specialize=["T", "j0", "nj", "do_final"])
def _bwd_seq_kernel(
        ds_ptr, z_ptr, c_ptr, r_ptr, c0_ptr, m_ptr, p_ptr, dcs_ptr, dhf_ptr, dcf_ptr,
        da_ptr, dh0_ptr, dc0_ptr, cnt_ptr, dp_ptr, hp_ptr,
        T, N, H, j0, nj, do_final,
        s_dst, s_dsn, s_zt, s_zn, s_ct, s_cn, s_rd, s_rr, s_rc, s_rs, s_c0n, s_mt, s_mn,
        s_dcst, s_dcsn, s_dhfn, s_dcfn, s_dat, s_dan, s_dh0n, s_dc0n, s_dpt, s_hpt, s_hpn,
        BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr, BO: tl.constexpr,
        AI: tl.constexpr, AF: tl.constexpr, AZ: tl.constexpr, AO: tl.constexpr,
        AG: tl.constexpr, HAS_C0: tl.constexpr, HAS_MASK: tl.constexpr, PEEP: tl.constexpr,
        DCS: tl.constexpr, HAS_DHF: tl.constexpr, HAS_DCF: tl.constexpr,
        REV: tl.constexpr, BIDIR: tl.constexpr, SYNC: tl.constexpr, PREC: tl.constexpr,
        F32_DOT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_U: tl.constexpr,
        BLOCK_K: tl.constexpr, TILES_U: tl.constexpr, CNT_STRIDE: tl.constexpr,
        R_RESIDENT: tl.constexpr, RES_K: tl.constexpr, PREFETCH: tl.constexpr,
        DP: tl.constexpr, HPREV: tl.constexpr):
    p, d, P, rn, ru, mn, mu, m2 = program_tile(N, H, TILES_U, BLOCK_N, BLOCK_U)
    dH = d * H
    rb = r_ptr + d.to(tl.int64) * s_rd
    tile_c = rn[:, None] * s_cn + dH + ru[None, :]
    tile_z = rn[:, None] * s_zn + 4 * dH + ru[None, :]
    tile_a = rn[:, None] * s_dan + 4 * dH + ru[None, :]
    tile_m = rn[:, None] * s_mn + dH + ru[None, :]
    tile_dc0 = rn[:, None] * s_dc0n + dH + ru[None, :]
    if PEEP:
        p_i, p_f, p_z, p_o = load_peephole(p_ptr + 4 * dH + ru, mu, H, BI, BF, BZ, BO)
    if R_RESIDENT:  # the R slice, once for all the steps (and the final product) of this launch
        r_t = _load_r_bwd(rb, s_rr, s_rc, ru, mu, H, RES_K)
        l_t = r_t  # its remainder ("split" only)
        if PREC == "split":
            l_t = _load_r_bwd(rb + s_rs, s_rr, s_rc, ru, mu, H, RES_K)

    # the cell carry at the start of this launch: dc_final / zeros, or the last launch's
    if j0 == 0:
        if HAS_DCF:
            dcc = tl.load(dcf_ptr + rn[:, None] * s_dcfn + dH + ru[None, :], mask=m2,
                          other=0.0).to(tl.float32)
        else:
            dcc = tl.full((BLOCK_N, BLOCK_U), 0.0, tl.float32)
    else:
        dcc = tl.load(dc0_ptr + tile_dc0, mask=m2, other=0.0)

    if DP:  # the peephole gradient of this tile's units: sum over its rows and steps
        dp_i = tl.full((BLOCK_U,), 0.0, tl.float32)
        dp_f = tl.full((BLOCK_U,), 0.0, tl.float32)
        dp_z = tl.full((BLOCK_U,), 0.0, tl.float32)
        dp_o = tl.full((BLOCK_U,), 0.0, tl.float32)
    if PREFETCH:  # the read-only inputs of the first step; each step then loads the next
        # step's before its recurrent product, so that no step waits for them after the barrier
        n_ds, n_gi, n_gf, n_gz, n_go, n_c, n_cp, n_dcs, n_mn = _step_inputs(
            j0, nj > 0, T, d, ds_ptr, z_ptr, c_ptr, c0_ptr, dcs_ptr, m_ptr, s_dst, s_dsn, s_zt,
            s_ct, s_c0n, s_dcst, s_dcsn, s_mt, rn, ru, m2, tile_c, tile_z, tile_m, dH, H, BI,
            BF, BZ, BO, HAS_C0, DCS, HAS_MASK, REV, BIDIR)
    for j in range(j0, j0 + nj):
        k = T - 1 - j  # the forward processing index of this step
        t = step_time(k, T, d, REV, BIDIR)
        tn = step_time(k + 1, T, d, REV, BIDIR)
        if PREFETCH:
            ds, g_i, g_f, g_z, g_o, c, cp, dcs, m_next = (n_ds, n_gi, n_gf, n_gz, n_go, n_c,
                                                          n_cp, n_dcs, n_mn)
            n_ds, n_gi, n_gf, n_gz, n_go, n_c, n_cp, n_dcs, n_mn = _step_inputs(
                j + 1, j < j0 + nj - 1, T, d, ds_ptr, z_ptr, c_ptr, c0_ptr, dcs_ptr, m_ptr,
                s_dst, s_dsn, s_zt, s_ct, s_c0n, s_dcst, s_dcsn, s_mt, rn, ru, m2, tile_c,
                tile_z, tile_m, dH, H, BI, BF, BZ, BO, HAS_C0, DCS, HAS_MASK, REV, BIDIR)
        else:  # this step's inputs first: their loads are in flight with dA[t_next]'s
            ds, g_i, g_f, g_z, g_o, c, cp, dcs, m_next = _step_inputs(
                j, nj > 0, T, d, ds_ptr, z_ptr, c_ptr, c0_ptr, dcs_ptr, m_ptr, s_dst, s_dsn, s_zt,
                s_ct, s_c0n, s_dcst, s_dcsn, s_mt, rn, ru, m2, tile_c, tile_z, tile_m, dH, H,
                BI, BF, BZ, BO, HAS_C0, DCS, HAS_MASK, REV, BIDIR)
        if j == 0:
            if HAS_DHF:
                dh = ds + tl.load(dhf_ptr + rn[:, None] * s_dhfn + dH + ru[None, :], mask=m2,
                                  other=0.0).to(tl.float32)
            else:
                dh = ds
        else:
            if R_RESIDENT:
                dh = _rec_bwd_resident(da_ptr + tn * s_dat + 4 * dH, s_dan, r_t, l_t, rn, mn,
                                       H, PREC, F32_DOT, BLOCK_N, BLOCK_U, RES_K)
            else:
                dh = _rec_bwd(da_ptr + tn * s_dat + 4 * dH, s_dan, rb, s_rr, s_rc, s_rs, rn, mn,
                              ru, mu, H, PREC, F32_DOT, BLOCK_N, BLOCK_U, BLOCK_K)
            if HAS_MASK:
                dh = dh * m_next
            dh += ds
        gc = _act(c, AG)
        dc = dcc + dh * g_o * _dact(gc, AG)
        if DCS:
            dc += dcs
        da_i = dc * g_z * _dact(g_i, AI)
        da_f = dc * cp * _dact(g_f, AF)
        da_z = dc * g_i * _dact(g_z, AZ)
        da_o = dh * gc * _dact(g_o, AO)
        ab = da_ptr + t * s_dat + tile_a
        tl.store(ab + BI * H, da_i, mask=m2)
        tl.store(ab + BF * H, da_f, mask=m2)
        tl.store(ab + BZ * H, da_z, mask=m2)
        tl.store(ab + BO * H, da_o, mask=m2)
        dcc = dc * g_f
        if PEEP:
            dcc += da_i * p_i + da_f * p_f + da_z * p_z + da_o * p_o
        if HPREV:  # h[t] * m[t_next], the recurrent-weight gradient's operand at t_next
            hv = g_o * gc
            if HAS_MASK:
                hv = hv * m_next
            tl.store(hp_ptr + tn * s_hpt + rn[:, None] * s_hpn + dH + ru[None, :], hv,
                     mask=masked_if(m2, k < T - 1))
        if DP:
            dp_i += tl.reduce(da_i * cp, 0, _add)
            dp_f += tl.reduce(da_f * cp, 0, _add)
            dp_z += tl.reduce(da_z * cp, 0, _add)
            dp_o += tl.reduce(da_o * cp, 0, _add)
        if SYNC:  # all of dA[t] before the next step (or the final product)
            grid_barrier(cnt_ptr + d * CNT_STRIDE, P * (j - j0 + 1))

    tl.store(dc0_ptr + tile_dc0, dcc, mask=m2)
    if DP:  # added to this launch's predecessors' (only this program writes these entries)
        pd = dp_ptr + (p // TILES_U) * s_dpt + 4 * dH + ru
        tl.store(pd + BI * H, tl.load(pd + BI * H, mask=mu) + dp_i, mask=mu)
        tl.store(pd + BF * H, tl.load(pd + BF * H, mask=mu) + dp_f, mask=mu)
        tl.store(pd + BZ * H, tl.load(pd + BZ * H, mask=mu) + dp_z, mask=mu)
        tl.store(pd + BO * H, tl.load(pd + BO * H, mask=mu) + dp_o, mask=mu)
    if do_final != 0:
        t0 = step_time(0, T, d, REV, BIDIR)
        if R_RESIDENT:
            dh = _rec_bwd_resident(da_ptr + t0 * s_dat + 4 * dH, s_dan, r_t, l_t, rn, mn, H,
                                   PREC, F32_DOT, BLOCK_N, BLOCK_U, RES_K)
        else:
            dh = _rec_bwd(da_ptr + t0 * s_dat + 4 * dH, s_dan, rb, s_rr, s_rc, s_rs, rn, mn, ru,
                          mu, H, PREC, F32_DOT, BLOCK_N, BLOCK_U, BLOCK_K)
        if HAS_MASK:
            dh = dh * tl.load(m_ptr + t0 * s_mt + tile_m, mask=m2, other=0.0).to(tl.float32)
        tl.store(dh0_ptr + rn[:, None] * s_dh0n + dH + ru[None, :], dh, mask=m2)


def backward_sequence(dstate: torch.Tensor, zstate: torch.Tensor, cell: torch.Tensor,
                      R: torch.Tensor, c0: torch.Tensor | None, mask: torch.Tensor | None,
                      peephole: torch.Tensor | None, dcell: torch.Tensor | None,
                      dh_final: torch.Tensor | None, dc_final: torch.Tensor | None,
                      dA: torch.Tensor, dh0: torch.Tensor, dc0: torch.Tensor, *,
                      reverse: bool, bidirectional: bool, blocks: tuple[int, int, int, int],
                      activations: tuple[int, int, int, int, int], allow_tf32: bool = False,
                      tiling: Tiling | None = None, sync: bool | None = None,
                      dpeep: torch.Tensor | None = None,
                      hprev: torch.Tensor | None = None) -> bool:
    """The LSTM backward recurrence over all steps and directions (module docstring). Shapes
    (D = 2 when bidirectional else 1; a unit stride on every last axis, other strides free):

    - dstate [T, N, D*H] (dL/dstate), zstate [T, N, D*4H] and cell [T, N, D*H] (the training
      forward's outputs), any float dtype, read as float32;
    - R [D, 4H, H], float32 or the half type the dots run in (any strides);
    - c0 [N, D*H] or None; mask [T, N, D*H], or [N, D*H] (or stride 0 on T) for one mask at
      every step, or None; peephole [D, 4H] (used as float32) or None; dcell [T, N, D*H]
      (dL/dcell per step) or None; dh_final, dc_final [N, D*H] (dL/d of the final state /
      cell) or None;
    - outputs: dA [T, N, D*4H] (dL/da per step, written in its dtype), dh0 and dc0 [N, D*H]
      (float32: dL/dh0 after the mask, dL/dc0); dpeep [D, 4H] float32 or None: the peephole
      gradient sum_t sum_n dA[t] * c_prev (per gate block of the 4H axis), accumulated in the
      kernel from the float32 dA (each program sums its rows and steps per unit; the
      per-row-tile partials [tiles_n, D, 4H] are added here, in a fixed order);
    - hprev [T, N, D*H] or None: h[t_prev] * m[t] (h = o * g(cell) from zstate and cell: the
      operand of the recurrent-weight gradient) at every step but each direction's first (left
      as it is: h0 there, which this function does not take), written by the kernel in
      passing, in hprev's dtype (float32 on the cluster path, which takes float32 only).

    Returns False (nothing written) when `plan` finds no tiling; sync, and the cluster path
    taken with tiling and sync None, as forward_sequence."""
    T, N, H, D = zstate.shape[0], zstate.shape[1], R.shape[-1], 2 if bidirectional else 1
    dev = zstate.device
    cfg = cluster_config(dev, T, N, R, D, tiling, sync, (dstate, zstate, cell, c0, mask, dcell,
                                                         dh_final, dc_final, dA, dh0, dc0,
                                                         hprev))
    dstate, zstate, cell, c0, mask, dcell, dh_final, dc_final = (
        _unit(a) for a in (dstate, zstate, cell, c0, mask, dcell, dh_final, dc_final))
    mask, peephole = mask_and_peephole(mask, peephole, T, N, D, H)
    if cfg is not None and lstm_cluster.backward(
            cfg, dstate, zstate, cell, R, c0, mask, peephole, dcell, dh_final, dc_final, dA,
            dh0, dc0, dpeep, hprev, reverse=reverse, bidirectional=bidirectional,
            blocks=blocks, activations=activations):
        return True  # (as in forward_sequence)
    tiling, sync = launch_plan(dev, T, N, R, D, tiling, sync, allow_tf32, backward=True)
    if tiling is None:
        return False
    assert dc0.dtype == torch.float32, "dc0 carries the cell gradient in float32"
    for s in (dA, dh0, dc0, hprev):
        assert s is None or s.stride(-1) == 1, "outputs need a unit stride on the last axis"
    meta = kernel_meta(H, R, tiling, sync=sync, allow_tf32=allow_tf32, blocks=blocks,
                       activations=activations, reverse=reverse, bidirectional=bidirectional,
                       backward=True)
    R, s_rs = split_r(R, meta["PREC"])
    cnt = torch.zeros(D * _CNT_STRIDE, dtype=torch.int32, device=dev)
    dm = dc0
    dpp = None if dpeep is None else torch.zeros((tiling.tiles_n, D, 4 * H),
                                                 dtype=torch.float32, device=dev)
    args = (dstate, zstate, cell, R, dm if c0 is None else c0, dm if mask is None else mask,
            dm if peephole is None else peephole, dm if dcell is None else dcell,
            dm if dh_final is None else dh_final, dm if dc_final is None else dc_final,
            dA, dh0, dc0, cnt, dm if dpp is None else dpp, dm if hprev is None else hprev)
    st = lambda a, i: 0 if a is None else a.stride(i)  # noqa: E731
    strides = (dstate.stride(0), dstate.stride(1), zstate.stride(0), zstate.stride(1),
               cell.stride(0), cell.stride(1), R.stride(0), R.stride(1), R.stride(2),
               s_rs, st(c0, 0), st(mask, 0), st(mask, 1), st(dcell, 0), st(dcell, 1),
               st(dh_final, 0), st(dc_final, 0), dA.stride(0), dA.stride(1), dh0.stride(0),
               dc0.stride(0), 0 if dpp is None else dpp.stride(0), st(hprev, 0), st(hprev, 1))
    meta.update(HAS_C0=c0 is not None, HAS_MASK=mask is not None, PEEP=peephole is not None,
                DCS=dcell is not None, HAS_DHF=dh_final is not None,
                HAS_DCF=dc_final is not None, DP=dpp is not None, HPREV=hprev is not None)
    grid = (tiling.programs, D)
    if sync:
        launch(_bwd_seq_kernel, grid, (*args, T, N, H, 0, T, 1, *strides), meta)
    else:
        for j in range(T):
            meta = launch(_bwd_seq_kernel, grid, (*args, T, N, H, j, 1, 0, *strides), meta)
        launch(_bwd_seq_kernel, grid, (*args, T, N, H, T, 0, 1, *strides), meta)
    if dpeep is not None:
        torch.sum(dpp, dim=0, out=dpeep.view(D, 4 * H))
    return True
