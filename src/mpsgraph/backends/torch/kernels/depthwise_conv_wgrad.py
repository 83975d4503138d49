"""Depthwise 2-D convolution, weights gradient (Triton); the forward and the data gradient, and
the notation, are in kernels/depthwise_conv.py:

    dw[o, 0, p, q] = sum_{n, i<Ho, j<Wo} dy[n, o, i, j]
                                         * x[n, o//M, i*sy - pt + p*ry, j*sx - pl + q*rx]

One reduction over N*Ho*Wo per (output channel, tap), done as a deterministic split reduction:
the dy tiles of a channel are cut into S contiguous shares; program (channel(s), share s) walks
its share, loads each dy tile once and, for every tap, the matching x tile, and keeps a float32
partial product per tile element and tap in registers. The taps are a tensor axis (two
power-of-two groups, so 3x3 = 8 + 1 taps and nothing is wasted). At the end the program reduces
its partials and writes part[s, o, tap], a [S, O, kH*kW] float32 buffer that torch sums over s
(no atomics: the result does not depend on scheduling) and rounds once to the weights' dtype.

    NCHW (W contiguous)  tile [taps, rows, cols] of one (n, o) plane
    NHWC (C contiguous)  tile [taps, cols, channels] of one row of one image: 128 bytes of
                         channels (16-byte vector loads when C % 16 == 0)
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import cdiv
from . import pow2 as next_pow2
from .depthwise_conv import (
    NUM_WARPS,
    channels_inner,
    geometry,
    needs_int64,
    out_size,
    pow2,
    sm_count,
)

_ACC_PER_THREAD = 64  # float32 partials a thread keeps (taps x tile elements / threads)


@triton.jit
def _add(a, b):
    # tl.reduce(.., _add), not tl.sum (nor tl.zeros: tl.full): those are @jit functions of
    # Triton's standard library, which the interpreter runs only when TRITON_INTERPRET=1 was set
    # before triton itself was imported; the core builtins work either way
    return a + b


@triton.jit
def _taps(acc, g, x_base, i, j, ok, H, W, pt, pl, x_sh, x_sw, T0: tl.constexpr,
          KT: tl.constexpr, KK: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
          SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr):
    """acc[t] += g * x at tap T0 + t (t < KT; taps >= KK are masked off). g is the dy tile
    (float32, leading axis 1), i / j its output rows / columns, ok its in-range mask."""
    t = T0 + tl.arange(0, KT)[:, None, None]
    ih = i * SY - pt + (t // KW) * RY
    iw = j * SX - pl + (t % KW) * RX
    m = ok & (t < KK) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    xv = tl.load(x_base + ih * x_sh + iw * x_sw, mask=m, other=0.0)
    return acc + xv.to(tl.float32) * g


@triton.jit
def _tile_of(k, R, T):
    """Tile k of the order (n, r < R, t < T), t fastest, as (n, r, t)."""
    return k // (R * T), (k // T) % R, k % T


@triton.jit
def _next_tile(n, r, t, R, T):
    """The tile after (n, r, t) in that order: counters, no divisions in the loop."""
    t += 1
    wrap = t == T
    t = tl.where(wrap, 0, t)
    r = tl.where(wrap, r + 1, r)
    wrap = r == R
    r = tl.where(wrap, 0, r)
    n = tl.where(wrap, n + 1, n)
    return n, r, t


@triton.jit
def _wgrad_nchw(dy_ptr, x_ptr, part_ptr, O, H, W, Ho, Wo, pt, pl, TH, TW, ITERS, CHUNK,
                dy_sn, dy_sc, dy_sh, dy_sw, x_sn, x_sc, x_sh, x_sw,
                M: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
                SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr, KA: tl.constexpr,
                KB: tl.constexpr, HAS_B: tl.constexpr, BR: tl.constexpr, BW: tl.constexpr,
                I64: tl.constexpr):
    """Program (o, s): the tiles [BR rows, BW cols] number `ITERS` = N * TH * TW per channel;
    share s is [s * CHUNK, (s + 1) * CHUNK)."""
    pid = tl.program_id(0)
    o = pid % O
    s = pid // O
    c = o // M
    ri = tl.arange(0, BR)[None, :, None]
    rj = tl.arange(0, BW)[None, None, :]
    acc_a = tl.full([KA, BR, BW], 0.0, tl.float32)
    acc_b = tl.full([KB, BR, BW], 0.0, tl.float32)
    n, r, t = _tile_of(s * CHUNK, TH, TW)
    for _ in range(s * CHUNK, tl.minimum(s * CHUNK + CHUNK, ITERS)):
        i = r * BR + ri
        j = t * BW + rj
        nn = n
        if I64:
            nn, i, j = n.to(tl.int64), i.to(tl.int64), j.to(tl.int64)
        ok = (i < Ho) & (j < Wo)
        g = tl.load(dy_ptr + nn * dy_sn + o * dy_sc + i * dy_sh + j * dy_sw, mask=ok,
                    other=0.0).to(tl.float32)
        x_base = x_ptr + nn * x_sn + c * x_sc
        acc_a = _taps(acc_a, g, x_base, i, j, ok, H, W, pt, pl, x_sh, x_sw, 0, KA, KH * KW,
                      KW, SY, SX, RY, RX)
        if HAS_B:
            acc_b = _taps(acc_b, g, x_base, i, j, ok, H, W, pt, pl, x_sh, x_sw, KA, KB,
                          KH * KW, KW, SY, SX, RY, RX)
        n, r, t = _next_tile(n, r, t, TH, TW)
    out = part_ptr + (s * O + o) * (KH * KW)
    ta = tl.arange(0, KA)
    tl.store(out + ta, tl.reduce(tl.reduce(acc_a, 2, _add), 1, _add), mask=ta < KH * KW)
    if HAS_B:
        tb = KA + tl.arange(0, KB)
        tl.store(out + tb, tl.reduce(tl.reduce(acc_b, 2, _add), 1, _add), mask=tb < KH * KW)


@triton.jit
def _wgrad_nhwc(dy_ptr, x_ptr, part_ptr, O, H, W, Ho, Wo, pt, pl, TW, TC, ITERS, CHUNK,
                dy_sn, dy_sc, dy_sh, dy_sw, x_sn, x_sc, x_sh, x_sw,
                M: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
                SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr, KA: tl.constexpr,
                KB: tl.constexpr, HAS_B: tl.constexpr, BW: tl.constexpr, BC: tl.constexpr,
                I64: tl.constexpr):
    """Program (channel tile, s): the tiles [BW cols, BC channels] of the output rows number
    `ITERS` = N * Ho * TW; share s is [s * CHUNK, (s + 1) * CHUNK)."""
    pid = tl.program_id(0)
    tc = pid % TC
    s = pid // TC
    o = tc * BC + tl.arange(0, BC)[None, None, :]
    om = o < O
    c = o // M
    rj = tl.arange(0, BW)[None, :, None]
    acc_a = tl.full([KA, BW, BC], 0.0, tl.float32)
    acc_b = tl.full([KB, BW, BC], 0.0, tl.float32)
    n, i, t = _tile_of(s * CHUNK, Ho, TW)
    for _ in range(s * CHUNK, tl.minimum(s * CHUNK + CHUNK, ITERS)):
        j = t * BW + rj
        nn, ii = n, i
        if I64:
            nn, ii, j = n.to(tl.int64), i.to(tl.int64), j.to(tl.int64)
        ok = (j < Wo) & om
        g = tl.load(dy_ptr + nn * dy_sn + ii * dy_sh + j * dy_sw + o * dy_sc, mask=ok,
                    other=0.0).to(tl.float32)
        x_base = x_ptr + nn * x_sn + c * x_sc
        acc_a = _taps(acc_a, g, x_base, ii, j, ok, H, W, pt, pl, x_sh, x_sw, 0, KA, KH * KW,
                      KW, SY, SX, RY, RX)
        if HAS_B:
            acc_b = _taps(acc_b, g, x_base, ii, j, ok, H, W, pt, pl, x_sh, x_sw, KA, KB,
                          KH * KW, KW, SY, SX, RY, RX)
        n, i, t = _next_tile(n, i, t, Ho, TW)
    oo = tc * BC + tl.arange(0, BC)[None, :]
    out = part_ptr + (s * O + oo) * (KH * KW)
    ta = tl.arange(0, KA)[:, None]
    tl.store(out + ta, tl.reduce(acc_a, 1, _add), mask=(ta < KH * KW) & (oo < O))
    if HAS_B:
        tb = KA + tl.arange(0, KB)[:, None]
        tl.store(out + tb, tl.reduce(acc_b, 1, _add), mask=(tb < KH * KW) & (oo < O))


def _tap_groups(kk: int) -> tuple[int, int]:
    """kH*kW taps as two power-of-two groups (KA, KB): 9 = 8 + 1, 15 = 8 + 8 (7 used), ..."""
    ka = 1 << (kk.bit_length() - 1)
    return ka, (next_pow2(kk - ka) if kk > ka else 0)


def weights_gradient(dy: torch.Tensor, x: torch.Tensor, kernel_hw, stride=(1, 1),
                     dilation=(1, 1), pads=(0, 0, 0, 0), out: torch.Tensor | None = None,
                     splits: int | None = None) -> torch.Tensor:
    """Gradient of the depthwise convolution in its weights (module docstring).

    dy [N, C*M, Ho, Wo] and x [N, C, H, W], any strides (dy's memory format, contiguous NCHW
    or channels_last, picks the tiling); kernel_hw = (kH, kW); stride, dilation and pads as the
    forward's. Returns dw [C*M, 1, kH, kW] (contiguous, dy's dtype), or writes `out` (that
    shape and dtype, any strides, e.g. an HWIO view) and returns it. `splits` overrides the
    number of shares S of the reduction (default: about 16 programs per SM)."""
    N, O, Ho, Wo = dy.shape
    _, C, H, W = x.shape
    KH, KW = (int(k) for k in kernel_hw)
    assert x.shape[0] == N and O % max(C, 1) == 0, (dy.shape, x.shape)
    assert x.dtype == dy.dtype, (dy.dtype, x.dtype)
    cfg, (pt, pb, pl, pr) = geometry(stride, dilation, pads, (KH, KW)), pads
    assert (Ho, Wo) == (out_size(H, KH, cfg["SY"], cfg["RY"], pt, pb),
                        out_size(W, KW, cfg["SX"], cfg["RX"], pl, pr)), (dy.shape, x.shape)
    if out is None:
        out = torch.empty((O, 1, KH, KW), dtype=dy.dtype, device=dy.device)
    assert tuple(out.shape) == (O, 1, KH, KW) and out.dtype == dy.dtype
    if out.numel() == 0:
        return out
    if dy.numel() == 0 or x.numel() == 0:
        return out.zero_()
    cfg["M"] = O // C
    kk = KH * KW
    ka, kb = _tap_groups(kk)
    tile = 1 << ((_ACC_PER_THREAD * 32 * NUM_WARPS // (ka + kb)).bit_length() - 1)
    if channels_inner(dy):
        bc = pow2(O, 128 // dy.dtype.itemsize)
        bw = pow2(Wo, max(1, tile // bc))
        tw, tc = cdiv(Wo, bw), cdiv(O, bc)
        iters, programs = N * Ho * tw, tc
        kernel, grid_args, tiles = _wgrad_nhwc, (tw, tc), dict(BW=bw, BC=bc)
    else:  # scalar loads: a 64-bit address per element and tap; half the tile keeps the
        # registers near 64 (Triton 3.6, sm_90: 70 instead of 141)
        tile //= 2
        bw = pow2(Wo, min(64, tile))
        br = pow2(Ho, max(1, tile // bw))
        th, tw = cdiv(Ho, br), cdiv(Wo, bw)
        iters, programs = N * th * tw, O
        kernel, grid_args, tiles = _wgrad_nchw, (th, tw), dict(BR=br, BW=bw)
    s = splits if splits is not None else cdiv(16 * sm_count(dy.device), programs)
    chunk = cdiv(iters, max(1, min(s, iters)))
    s = cdiv(iters, chunk)  # every share non-empty
    part = torch.empty((s, O, kk), dtype=torch.float32, device=dy.device)
    kernel[(programs * s,)](
        dy, x, part, O, H, W, Ho, Wo, pt, pl, *grid_args, iters, chunk, *dy.stride(),
        *x.stride(), **cfg, KA=ka, KB=max(kb, 1), HAS_B=kb > 0, **tiles,
        I64=needs_int64(dy, x), num_warps=NUM_WARPS)
    out.copy_(part.sum(0).view(O, 1, KH, KW))
    return out
