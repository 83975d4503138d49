"""Fused LSTM step kernels (Triton): the gate math of one time step in one launch.

Forward step, given the pre-activations `a = x'[t] + (h_prev * m) @ R^T` (one addmm):

    a_k += p_k * c_prev                      (peephole, every gate k; optional)
    i, f, z, o = f_i(a_i), f_f(a_f), f_z(a_z), f_o(a_o)      -> zState[t] (gate order of blocks)
    c = f * c_prev + i * z                   -> cell[t]
    h = o * g(c)                             -> state[t]

Backward step (reverse processing order), given dh = dstate[t] + carry * m (the carry dA[t_next]
@ R times the mask of t_next; the sum is done in the kernel) and the cell carry:

    dc   = dc_carry + dh * o * g'(g(c[t]))  (+ dcell[t])
    da_i = dc * z * f_i'(i);  da_f = dc * c_prev * f_f'(f);  da_z = dc * i * f_z'(z)
    da_o = dh * g(c[t]) * f_o'(o)            -> dA[t]
    dc_carry' = dc * f + sum_k da_k * p_k    (the next carry)

Activations are compile-time constants (0 none, 1 relu, 2 tanh, 3 sigmoid, 4 hardSigmoid
= clamp(0.2 a + 0.5, 0, 1)); derivatives are written from outputs as in SPEC 3.1. Every
pointer may be a row-strided view (the direction's slice of a [T, N, D*X] buffer). float32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import cdiv, pow2


@triton.jit
def _act(x, KIND: tl.constexpr):
    if KIND == 1:  # (selects, not maximum / minimum, which drop a NaN: relu(NaN) is NaN)
        return tl.where(x < 0.0, 0.0, x)
    elif KIND == 2:
        e = tl.exp(-2.0 * tl.abs(x))
        t = (1.0 - e) / (1.0 + e)
        return tl.where(x < 0, -t, t)
    elif KIND == 3:
        return 1.0 / (1.0 + tl.exp(-x))
    elif KIND == 4:
        h = 0.2 * x + 0.5
        return tl.where(h < 0.0, 0.0, tl.where(h > 1.0, 1.0, h))
    else:
        return x


@triton.jit
def cell_step(a_i, a_f, a_z, a_o, c_prev, AI: tl.constexpr, AF: tl.constexpr,
              AZ: tl.constexpr, AO: tl.constexpr, AG: tl.constexpr):
    """The gates (post-activation), the cell and the state of one step from the gate
    pre-activations a_k and c_prev (SPEC 3.5): (i, f, z, o, c, h)."""
    i = _act(a_i, AI)
    f = _act(a_f, AF)
    z = _act(a_z, AZ)
    o = _act(a_o, AO)
    c = f * c_prev + i * z
    return i, f, z, o, c, o * _act(c, AG)


@triton.jit
def _dact(y, KIND: tl.constexpr):
    """f'(a) written with y = f(a). NaN propagates (as the NumPy kernels)."""
    if KIND == 1:
        return tl.where(y != y, y, tl.where(y > 0.0, 1.0, 0.0))
    elif KIND == 2:
        return 1.0 - y * y
    elif KIND == 3:
        return y * (1.0 - y)
    elif KIND == 4:
        return tl.where(y != y, y, tl.where((y > 0.0) & (y < 1.0), 0.2, 0.0))
    else:
        return y * 0.0 + 1.0


@triton.jit
def _fwd_kernel(a_ptr, cprev_ptr, p_ptr, z_ptr, c_ptr, h_ptr, N, H,
                s_a, s_cp, s_z, s_c, s_h,
                BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr, BO: tl.constexpr,
                AI: tl.constexpr, AF: tl.constexpr, AZ: tl.constexpr, AO: tl.constexpr,
                AG: tl.constexpr, PEEP: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_H: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)[:, None]
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)[None, :]
    m = (rn < N) & (rh < H)
    cp = tl.load(cprev_ptr + rn * s_cp + rh, mask=m, other=0.0)
    ai = tl.load(a_ptr + rn * s_a + BI * H + rh, mask=m, other=0.0)
    af = tl.load(a_ptr + rn * s_a + BF * H + rh, mask=m, other=0.0)
    az = tl.load(a_ptr + rn * s_a + BZ * H + rh, mask=m, other=0.0)
    ao = tl.load(a_ptr + rn * s_a + BO * H + rh, mask=m, other=0.0)
    if PEEP:
        ai += tl.load(p_ptr + BI * H + rh, mask=rh < H, other=0.0) * cp
        af += tl.load(p_ptr + BF * H + rh, mask=rh < H, other=0.0) * cp
        az += tl.load(p_ptr + BZ * H + rh, mask=rh < H, other=0.0) * cp
        ao += tl.load(p_ptr + BO * H + rh, mask=rh < H, other=0.0) * cp
    i, f, z, o, c, h = cell_step(ai, af, az, ao, cp, AI, AF, AZ, AO, AG)
    tl.store(z_ptr + rn * s_z + BI * H + rh, i, mask=m)
    tl.store(z_ptr + rn * s_z + BF * H + rh, f, mask=m)
    tl.store(z_ptr + rn * s_z + BZ * H + rh, z, mask=m)
    tl.store(z_ptr + rn * s_z + BO * H + rh, o, mask=m)
    tl.store(c_ptr + rn * s_c + rh, c, mask=m)
    tl.store(h_ptr + rn * s_h + rh, h, mask=m)


@triton.jit
def _bwd_kernel(dh_ptr, dcc_ptr, z_ptr, c_ptr, cprev_ptr, dcs_ptr, p_ptr, da_ptr, dcout_ptr,
                ds_ptr, mc_ptr, N, H, s_dh, s_dcc, s_z, s_c, s_cp, s_dcs, s_da, s_dco, s_ds,
                s_mc, BI: tl.constexpr, BF: tl.constexpr, BZ: tl.constexpr, BO: tl.constexpr,
                AI: tl.constexpr, AF: tl.constexpr, AZ: tl.constexpr, AO: tl.constexpr,
                AG: tl.constexpr, PEEP: tl.constexpr, DCS: tl.constexpr, DS: tl.constexpr,
                MC: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_H: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)[:, None]
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)[None, :]
    m = (rn < N) & (rh < H)
    dh = tl.load(dh_ptr + rn * s_dh + rh, mask=m, other=0.0)
    if MC:  # the carry's mask (of the step that produced it)
        dh = dh * tl.load(mc_ptr + rn * s_mc + rh, mask=m, other=0.0)
    if DS:  # + dstate[t]
        dh += tl.load(ds_ptr + rn * s_ds + rh, mask=m, other=0.0)
    dcc = tl.load(dcc_ptr + rn * s_dcc + rh, mask=m, other=0.0)
    i = tl.load(z_ptr + rn * s_z + BI * H + rh, mask=m, other=0.0)
    f = tl.load(z_ptr + rn * s_z + BF * H + rh, mask=m, other=0.0)
    z = tl.load(z_ptr + rn * s_z + BZ * H + rh, mask=m, other=0.0)
    o = tl.load(z_ptr + rn * s_z + BO * H + rh, mask=m, other=0.0)
    c = tl.load(c_ptr + rn * s_c + rh, mask=m, other=0.0)
    cp = tl.load(cprev_ptr + rn * s_cp + rh, mask=m, other=0.0)
    gc = _act(c, AG)
    dc = dcc + dh * o * _dact(gc, AG)
    if DCS:
        dc += tl.load(dcs_ptr + rn * s_dcs + rh, mask=m, other=0.0)
    da_i = dc * z * _dact(i, AI)
    da_f = dc * cp * _dact(f, AF)
    da_z = dc * i * _dact(z, AZ)
    da_o = dh * gc * _dact(o, AO)
    tl.store(da_ptr + rn * s_da + BI * H + rh, da_i, mask=m)
    tl.store(da_ptr + rn * s_da + BF * H + rh, da_f, mask=m)
    tl.store(da_ptr + rn * s_da + BZ * H + rh, da_z, mask=m)
    tl.store(da_ptr + rn * s_da + BO * H + rh, da_o, mask=m)
    dco = dc * f
    if PEEP:
        dco += da_i * tl.load(p_ptr + BI * H + rh, mask=rh < H, other=0.0)
        dco += da_f * tl.load(p_ptr + BF * H + rh, mask=rh < H, other=0.0)
        dco += da_z * tl.load(p_ptr + BZ * H + rh, mask=rh < H, other=0.0)
        dco += da_o * tl.load(p_ptr + BO * H + rh, mask=rh < H, other=0.0)
    tl.store(dcout_ptr + rn * s_dco + rh, dco, mask=m)


def _blocks(N: int, H: int) -> tuple[int, int, tuple[int, int]]:
    bh = min(128, pow2(max(H, 1)))
    bn = max(1, min(pow2(max(N, 1)), 4096 // bh))
    return bn, bh, (cdiv(N, bn), cdiv(H, bh))


def _row_stride(t: torch.Tensor) -> int:
    assert t.stride(-1) == 1, "the last axis must be contiguous"
    return t.stride(0)


def _inp(t: torch.Tensor) -> torch.Tensor:
    """An input with a unit stride on its last axis (broadcast rows, stride 0, are fine)."""
    return t if t.stride(-1) == 1 else t.contiguous()


def forward_step(a: torch.Tensor, c_prev: torch.Tensor, peephole: torch.Tensor | None,
                 z: torch.Tensor, c: torch.Tensor, h: torch.Tensor, blocks, acts) -> None:
    """One fused forward step (see the module docstring). a, z [N, 4H]; c_prev, c, h [N, H];
    peephole [4, H] contiguous or None; blocks (i, f, z, o) block indices; acts 5 ints."""
    N, H = c.shape
    if N == 0 or H == 0:
        return
    bn, bh, grid = _blocks(N, H)
    a, c_prev = _inp(a), _inp(c_prev)
    p = peephole if peephole is not None else c_prev
    _fwd_kernel[grid](a, c_prev, p, z, c, h, N, H, _row_stride(a), _row_stride(c_prev),
                      _row_stride(z), _row_stride(c), _row_stride(h), *blocks, *acts,
                      PEEP=peephole is not None, BLOCK_N=bn, BLOCK_H=bh)


def backward_step(dh: torch.Tensor, dc_carry: torch.Tensor, z: torch.Tensor, c: torch.Tensor,
                  c_prev: torch.Tensor, dcell: torch.Tensor | None,
                  peephole: torch.Tensor | None, da: torch.Tensor, dc_out: torch.Tensor,
                  blocks, acts, *, dstate: torch.Tensor | None = None,
                  carry_mask: torch.Tensor | None = None) -> None:
    """One fused backward step (see the module docstring): writes da [N, 4H] and the next cell
    carry dc_out [N, H]. The state gradient used is dh * carry_mask + dstate (each [N, H],
    optional): the recurrent carry dh, times the mask of the step that produced it, plus this
    step's dstate - summed here rather than by two elementwise launches per step."""
    N, H = c.shape
    if N == 0 or H == 0:
        return
    bn, bh, grid = _blocks(N, H)
    dh, dc_carry, z, c, c_prev = _inp(dh), _inp(dc_carry), _inp(z), _inp(c), _inp(c_prev)
    dcell, dstate, carry_mask = (None if t is None else _inp(t)
                                 for t in (dcell, dstate, carry_mask))
    p = peephole if peephole is not None else c
    dcs, ds, mc = (c if t is None else t for t in (dcell, dstate, carry_mask))
    _bwd_kernel[grid](dh, dc_carry, z, c, c_prev, dcs, p, da, dc_out, ds, mc, N, H,
                      _row_stride(dh), _row_stride(dc_carry), _row_stride(z), _row_stride(c),
                      _row_stride(c_prev), _row_stride(dcs), _row_stride(da),
                      _row_stride(dc_out), _row_stride(ds), _row_stride(mc), *blocks, *acts,
                      PEEP=peephole is not None, DCS=dcell is not None, DS=dstate is not None,
                      MC=carry_mask is not None, BLOCK_N=bn, BLOCK_H=bh)
