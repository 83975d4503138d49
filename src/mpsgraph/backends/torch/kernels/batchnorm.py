"""Batch normalization (Triton): the batch statistics, the normalization and the fused
backward of a batch norm over every axis but one, the channel axis c.

x of any rank, contiguous, read as the matrix [R, K] with K contiguous:

    channel axis with elements after it (NCHW: c = 1, inner size B = H*W > 1):
        R = A*C rows (A = the product of the axes before c), K = B; row r is channel r % C
    channel axis last (NHWC, B = 1): R = A, K = C; column k is channel k

Kernels (float32 sums whatever the data type; results rounded once):

    stats_partial   grid (channel blocks, S): per channel, the count, mean and M2 =
                    sum((x - mean)^2) of one of S slices of its rows: each tile [BR, BK]'s own
                    mean and M2 (two passes over the tile, in registers; per column when the
                    columns are channels) merged into the running ones by Chan's formula (no
                    E[x^2] - E[x]^2 cancellation)
    stats_combine   grid (channel blocks): the S partials -> mean and the population variance
                    M2 / N (Chan's merge of the parts: sum(M2_s) + sum(n_s (mean_s - mean)^2))
    normalize       grid over tiles of [R, K]: y = (x - m) / sqrt(v + e) * gamma + beta
    bwd_partial     like stats_partial: per channel slice, sum(dy) and sum(dy (x - m))
    bwd_combine     the S partials -> dbeta = sum(dy), dgamma = sum(dy (x - m)) r
    bwd_dx          grid over tiles: dx = gamma r (dy - sum(dy)/N - (x - m) r^2 sum(dy (x - m))/N)

(r = 1/sqrt(v + e); dx is ops/normalization.py's normalizationGradient with batch
statistics, ATen's and cuDNN's formula.) One read of x for the statistics, one read of x and a
write of y for the normalization, two reads of (x, dy) and a write of dx for the backward: the
passes of torch's own batch norm. The sums are float32: sequential over the tiles of a slice,
tree-shaped inside a tile and across the S slices.
"""

from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

from . import cdiv, pow2

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_TILE = 4096  # elements of one reduction tile
_ETILE = 2048  # elements of one elementwise tile


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _sum(x, axis: tl.constexpr):
    """tl.sum over `axis` (written with tl.reduce: the interpreter of a process that imported
    Triton before TRITON_INTERPRET was set cannot run the standard library's jit functions)."""
    return tl.reduce(x, axis, _add)


@triton.jit
def _stats_partial(x_ptr, n_ptr, mean_ptr, m2_ptr, R, K, C, ROWS_PER_SLICE,
                   CH_ON_ROWS: tl.constexpr, BR: tl.constexpr, BK: tl.constexpr):
    pc = tl.program_id(0)
    ps = tl.program_id(1)
    cols = tl.arange(0, BK)
    rr = tl.arange(0, BR)
    r0 = ps * ROWS_PER_SLICE
    if CH_ON_ROWS:
        # channel pc: rows a*C + pc for the slice's a, every column; one running part
        tot = tl.full([], 0.0, tl.float32)
        mu = tl.full([], 0.0, tl.float32)
        q = tl.full([], 0.0, tl.float32)
        a_end = tl.minimum(r0 + ROWS_PER_SLICE, R // C)
        for a in range(r0, a_end, BR):
            arow = a + rr
            rmask = arow < a_end
            for k0 in range(0, K, BK):
                kk = k0 + cols
                mask = rmask[:, None] & (kk < K)[None, :]
                offs = (arow.to(tl.int64) * C + pc)[:, None] * K + kk[None, :]
                v = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                tn = (tl.minimum(a_end - a, BR) * tl.minimum(K - k0, BK)).to(tl.float32)
                tmean = _sum(_sum(v, axis=1), axis=0) / tn
                d = tl.where(mask, v - tmean, 0.0)
                tm2 = _sum(_sum(d * d, axis=1), axis=0)
                nn = tot + tn
                delta = tmean - mu
                w = tn / nn
                mu = mu + delta * w
                q = q + tm2 + delta * delta * tot * w
                tot = nn
        tl.store(n_ptr + ps * C + pc, tot)
        tl.store(mean_ptr + ps * C + pc, mu)
        tl.store(m2_ptr + ps * C + pc, q)
    else:
        # channels pc*BK + cols (the columns); rows of the slice
        kk = pc * BK + cols
        kmask = kk < K
        n = tl.full([BK], 0.0, tl.float32)
        mean = tl.full([BK], 0.0, tl.float32)
        m2 = tl.full([BK], 0.0, tl.float32)
        r_end = tl.minimum(r0 + ROWS_PER_SLICE, R)
        for r in range(r0, r_end, BR):
            row = r + rr
            mask = (row < r_end)[:, None] & kmask[None, :]
            offs = row.to(tl.int64)[:, None] * K + kk[None, :]
            v = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tn = tl.where(kmask, tl.minimum(r_end - r, BR).to(tl.float32), 0.0)
            tmean = _sum(v, axis=0) / tl.maximum(tn, 1.0)
            d = tl.where(mask, v - tmean[None, :], 0.0)
            tm2 = _sum(d * d, axis=0)
            nn = n + tn
            delta = tmean - mean
            w = tn / tl.maximum(nn, 1.0)
            mean = mean + delta * w
            m2 = m2 + tm2 + delta * delta * n * w
            n = nn
        tl.store(n_ptr + ps * C + kk, n, mask=kmask)
        tl.store(mean_ptr + ps * C + kk, mean, mask=kmask)
        tl.store(m2_ptr + ps * C + kk, m2, mask=kmask)


@triton.jit
def _stats_combine(n_ptr, mean_ptr, m2_ptr, m_out, v_out, C, S,
                   BS: tl.constexpr, BC: tl.constexpr):
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    s = tl.arange(0, BS)
    mask = (s < S)[:, None] & (c < C)[None, :]
    offs = s[:, None] * C + c[None, :]
    n = tl.load(n_ptr + offs, mask=mask, other=0.0)
    mean = tl.load(mean_ptr + offs, mask=mask, other=0.0)
    m2 = tl.load(m2_ptr + offs, mask=mask, other=0.0)
    tot = _sum(n, axis=0)
    mu = _sum(n * mean, axis=0) / tot
    dm = tl.where(mask, mean - mu[None, :], 0.0)
    q = _sum(m2, axis=0) + _sum(n * dm * dm, axis=0)
    cm = c < C
    tl.store(m_out + c, mu.to(m_out.dtype.element_ty), mask=cm)
    tl.store(v_out + c, (q / tot).to(v_out.dtype.element_ty), mask=cm)


@triton.jit
def _per_channel(rows, cols, C, R, K, CH_ON_ROWS: tl.constexpr):
    """The channel of each row (CH_ON_ROWS) or column of a tile, and which are in range."""
    if CH_ON_ROWS:
        ch = rows % C
        ok = rows < R
    else:
        ch = cols
        ok = cols < K
    return ch, ok


@triton.jit
def _spread(t, CH_ON_ROWS: tl.constexpr):
    """A per-channel vector of a tile's rows or columns, as a [rows, 1] / [1, cols] tile."""
    if CH_ON_ROWS:
        out = t[:, None]
    else:
        out = t[None, :]
    return out


@triton.jit
def _normalize(x_ptr, y_ptr, m_ptr, v_ptr, g_ptr, b_ptr, eps, R, K, C,
               HAS_G: tl.constexpr, HAS_B: tl.constexpr, CH_ON_ROWS: tl.constexpr,
               BR: tl.constexpr, BK: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.program_id(1) * BK + tl.arange(0, BK)
    mask = (rows < R)[:, None] & (cols < K)[None, :]
    ch, cm = _per_channel(rows, cols, C, R, K, CH_ON_ROWS)
    # per channel (once per row / column of the tile): m, scale = gamma / sqrt(v + e), beta
    m = tl.load(m_ptr + ch, mask=cm, other=0.0).to(tl.float32)
    scale = 1.0 / tl.sqrt_rn(tl.load(v_ptr + ch, mask=cm, other=1.0).to(tl.float32) + eps)
    if HAS_G:
        scale = scale * tl.load(g_ptr + ch, mask=cm, other=0.0).to(tl.float32)
    offs = rows.to(tl.int64)[:, None] * K + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = (x - _spread(m, CH_ON_ROWS)) * _spread(scale, CH_ON_ROWS)
    if HAS_B:
        y = y + _spread(tl.load(b_ptr + ch, mask=cm, other=0.0).to(tl.float32), CH_ON_ROWS)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bwd_partial(dy_ptr, x_ptr, m_ptr, sdy_ptr, sdx_ptr, R, K, C, ROWS_PER_SLICE,
                 CH_ON_ROWS: tl.constexpr, BR: tl.constexpr, BK: tl.constexpr):
    pc = tl.program_id(0)
    ps = tl.program_id(1)
    cols = tl.arange(0, BK)
    rr = tl.arange(0, BR)
    r0 = ps * ROWS_PER_SLICE
    if CH_ON_ROWS:
        m = tl.load(m_ptr + pc).to(tl.float32)
        acc_dy = tl.full([BR, BK], 0.0, tl.float32)
        acc_dx = tl.full([BR, BK], 0.0, tl.float32)
        a_end = tl.minimum(r0 + ROWS_PER_SLICE, R // C)
        for a in range(r0, a_end, BR):
            arow = a + rr
            rmask = arow < a_end
            for k0 in range(0, K, BK):
                kk = k0 + cols
                mask = rmask[:, None] & (kk < K)[None, :]
                offs = (arow.to(tl.int64) * C + pc)[:, None] * K + kk[None, :]
                d = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
                acc_dy += d
                acc_dx += tl.where(mask, d * (x - m), 0.0)
        tl.store(sdy_ptr + ps * C + pc, _sum(_sum(acc_dy, axis=1), axis=0))
        tl.store(sdx_ptr + ps * C + pc, _sum(_sum(acc_dx, axis=1), axis=0))
    else:
        kk = pc * BK + cols
        kmask = kk < K
        m = tl.load(m_ptr + kk, mask=kmask, other=0.0).to(tl.float32)
        acc_dy = tl.full([BR, BK], 0.0, tl.float32)
        acc_dx = tl.full([BR, BK], 0.0, tl.float32)
        r_end = tl.minimum(r0 + ROWS_PER_SLICE, R)
        for r in range(r0, r_end, BR):
            row = r + rr
            mask = (row < r_end)[:, None] & kmask[None, :]
            offs = row.to(tl.int64)[:, None] * K + kk[None, :]
            d = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            acc_dy += d
            acc_dx += tl.where(mask, d * (x - m[None, :]), 0.0)
        tl.store(sdy_ptr + ps * C + kk, _sum(acc_dy, axis=0), mask=kmask)
        tl.store(sdx_ptr + ps * C + kk, _sum(acc_dx, axis=0), mask=kmask)


@triton.jit
def _bwd_combine(sdy_ptr, sdx_ptr, v_ptr, dg_ptr, db_ptr, ty_ptr, tx_ptr, eps, C, S,
                 BS: tl.constexpr, BC: tl.constexpr):
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    s = tl.arange(0, BS)
    mask = (s < S)[:, None] & (c < C)[None, :]
    offs = s[:, None] * C + c[None, :]
    sdy = _sum(tl.load(sdy_ptr + offs, mask=mask, other=0.0), axis=0)
    sdx = _sum(tl.load(sdx_ptr + offs, mask=mask, other=0.0), axis=0)
    cm = c < C
    r = 1.0 / tl.sqrt_rn(tl.load(v_ptr + c, mask=cm, other=1.0).to(tl.float32) + eps)
    tl.store(ty_ptr + c, sdy, mask=cm)
    tl.store(tx_ptr + c, sdx, mask=cm)
    tl.store(dg_ptr + c, (sdx * r).to(dg_ptr.dtype.element_ty), mask=cm)
    tl.store(db_ptr + c, sdy.to(db_ptr.dtype.element_ty), mask=cm)


@triton.jit
def _bwd_dx(dy_ptr, x_ptr, dx_ptr, m_ptr, v_ptr, g_ptr, ty_ptr, tx_ptr, eps, inv_n, R, K, C,
            HAS_G: tl.constexpr, CH_ON_ROWS: tl.constexpr, BR: tl.constexpr,
            BK: tl.constexpr):
    rows = tl.program_id(0) * BR + tl.arange(0, BR)
    cols = tl.program_id(1) * BK + tl.arange(0, BK)
    mask = (rows < R)[:, None] & (cols < K)[None, :]
    ch, cm = _per_channel(rows, cols, C, R, K, CH_ON_ROWS)
    # per channel: dx = k1 (dy - k2 - (x - m) k3)
    m = tl.load(m_ptr + ch, mask=cm, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt_rn(tl.load(v_ptr + ch, mask=cm, other=1.0).to(tl.float32) + eps)
    k2 = tl.load(ty_ptr + ch, mask=cm, other=0.0) * inv_n
    k3 = r * r * tl.load(tx_ptr + ch, mask=cm, other=0.0) * inv_n
    k1 = r
    if HAS_G:
        k1 = k1 * tl.load(g_ptr + ch, mask=cm, other=0.0).to(tl.float32)
    offs = rows.to(tl.int64)[:, None] * K + cols[None, :]
    d = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dx = _spread(k1, CH_ON_ROWS) * (d - _spread(k2, CH_ON_ROWS) - (x - _spread(m, CH_ON_ROWS))
                                    * _spread(k3, CH_ON_ROWS))
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------------------- host side
def supported(x: torch.Tensor, c: int) -> bool:
    """Whether the kernels take x with channel axis c (contiguous, a Triton dtype, not empty,
    fewer than 2**31 elements: row and column indices are int32, offsets int64)."""
    return (x.dtype in DTYPES and x.is_contiguous() and 0 < x.numel() < 2**31
            and 0 <= c < x.dim())


@functools.cache
def _sms(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _view(x: torch.Tensor, c: int) -> tuple[int, int, int, bool]:
    """(R, K, C, channel on rows) of the matrix view of x (module docstring)."""
    C = x.shape[c]
    A = x.numel() // max(C, 1)
    B = 1
    for d in x.shape[c + 1:]:
        B *= d
    if B > 1:
        return (A // B) * C, B, C, True
    return A, C, C, False


def _reduce_grid(R: int, K: int, C: int, on_rows: bool, device: torch.device):
    """(BR, BK, grid, rows per slice, S) of a partial reduction."""
    if on_rows:
        BK = min(pow2(K), _TILE)
        BR = max(1, _TILE // BK)
        rows = R // C  # rows per channel
        blocks = C
    else:
        BK = min(pow2(K), 64)
        BR = max(1, _TILE // BK)
        rows = R
        blocks = cdiv(K, BK)
    # enough programs to fill the GPU (~4 per SM), each with whole tiles of rows
    sms = _sms(device.index if device.index is not None else torch.cuda.current_device()
               ) if device.type == "cuda" else 4
    want = max(1, cdiv(4 * sms, blocks))
    S = max(1, min(want, cdiv(rows, BR), 256))
    per = cdiv(cdiv(rows, S), BR) * BR
    S = cdiv(rows, per)
    return BR, BK, (blocks, S), per, S


def _combine_blocks(C: int, S: int) -> tuple[int, int]:
    BS = pow2(S)
    BC = max(1, min(pow2(C), max(1, 4096 // BS), 256))
    return BS, BC


def _ew_grid(R: int, K: int):
    BK = min(pow2(K), _ETILE)
    BR = max(1, _ETILE // BK)
    return BR, BK, (cdiv(R, BR), cdiv(K, BK))


def statistics(x: torch.Tensor, c: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, variance) over every axis but c, each of x.shape[c] elements (x's dtype)."""
    R, K, C, on_rows = _view(x, c)
    BR, BK, grid, per, S = _reduce_grid(R, K, C, on_rows, x.device)
    f32 = dict(dtype=torch.float32, device=x.device)
    n, mean, m2 = (torch.empty((S, C), **f32) for _ in range(3))
    _stats_partial[grid](x, n, mean, m2, R, K, C, per, CH_ON_ROWS=on_rows, BR=BR, BK=BK,
                         num_warps=8)
    m = torch.empty(C, dtype=x.dtype, device=x.device)
    v = torch.empty(C, dtype=x.dtype, device=x.device)
    BS, BC = _combine_blocks(C, S)
    _stats_combine[(cdiv(C, BC),)](n, mean, m2, m, v, C, S, BS=BS, BC=BC, num_warps=4)
    return m, v


def normalize(x: torch.Tensor, c: int, mean: torch.Tensor, var: torch.Tensor,
              gamma: torch.Tensor | None, beta: torch.Tensor | None, eps: float
              ) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) * gamma + beta with per-channel 1-D contiguous operands."""
    R, K, C, on_rows = _view(x, c)
    y = torch.empty_like(x)
    BR, BK, grid = _ew_grid(R, K)
    _normalize[grid](x, y, mean, var, gamma if gamma is not None else mean,
                     beta if beta is not None else mean, float(eps), R, K, C,
                     HAS_G=gamma is not None, HAS_B=beta is not None, CH_ON_ROWS=on_rows,
                     BR=BR, BK=BK, num_warps=4)
    return y


def backward(dy: torch.Tensor, x: torch.Tensor, c: int, mean: torch.Tensor, var: torch.Tensor,
             gamma: torch.Tensor | None, eps: float
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dgamma, dbeta) of a batch norm with batch statistics (dy of x's shape and dtype,
    contiguous; mean, var, gamma per-channel 1-D contiguous); dgamma / dbeta 1-D."""
    R, K, C, on_rows = _view(x, c)
    BR, BK, grid, per, S = _reduce_grid(R, K, C, on_rows, x.device)
    f32 = dict(dtype=torch.float32, device=x.device)
    sdy, sdx = torch.empty((S, C), **f32), torch.empty((S, C), **f32)
    _bwd_partial[grid](dy, x, mean, sdy, sdx, R, K, C, per, CH_ON_ROWS=on_rows, BR=BR,
                       BK=BK, num_warps=8)
    dg = torch.empty(C, dtype=x.dtype, device=x.device)
    db = torch.empty(C, dtype=x.dtype, device=x.device)
    ty, tx = torch.empty(C, **f32), torch.empty(C, **f32)
    BS, BC = _combine_blocks(C, S)
    _bwd_combine[(cdiv(C, BC),)](sdy, sdx, var, dg, db, ty, tx, float(eps), C, S, BS=BS,
                                 BC=BC, num_warps=4)
    dx = torch.empty_like(x)
    n = x.numel() // C
    EBR, EBK, egrid = _ew_grid(R, K)
    _bwd_dx[egrid](dy, x, dx, mean, var, gamma if gamma is not None else mean, ty, tx,
                   float(eps), 1.0 / n, R, K, C, HAS_G=gamma is not None, CH_ON_ROWS=on_rows,
                   BR=EBR, BK=EBK, num_warps=4)
    return dx, dg, db
