"""Depthwise 2-D convolution (Triton): the forward and its adjoint in the data (the weights
gradient is kernels/depthwise_conv_wgrad.py). A depthwise convolution has groups == C: one
input channel per group and a channel multiplier M = O / C; output channel o = c*M + m reads
input channel c = o // M.

Canonical NCHW data, weights [O, 1, kH, kW]; strides (sy, sx), dilation rates (ry, rx), top and
left padding (pt, pl); x is zero outside [0, H) x [0, W):

    forward   y[n, o, i, j]  = sum_{p<kH, q<kW} x[n, o//M, i*sy - pt + p*ry, j*sx - pl + q*rx]
                                                * w[o, 0, p, q]
    data grad dx[n, c, h, v] = sum_{m<M, p, q} dy[n, c*M + m, (h + pt - p*ry) / sy,
                                                  (v + pl - q*rx) / sx] * w[c*M + m, 0, p, q]

where a term of the data gradient exists only when both divisions are exact and land inside
[0, Ho) x [0, Wo) (the output positions whose window read x[n, c, h, v]). Both are gathers: one
program owns a tile of its result, so no atomics and no zero-fill. Every tensor is addressed
through its strides (any layout is correct); the tiling follows the memory layout:

    NCHW (W contiguous)  tile [planes, rows, cols] of the (n, channel) planes: W is the fast
                         axis; small images put several planes in one tile.
    NHWC (C contiguous)  tile [rows, cols, channels] of one image: the channel axis is the fast
                         one (128 bytes of channels per position; 16-byte vector loads where
                         Triton can prove the alignment, i.e. C % 16 == 0); a 2-D patch of
                         positions keeps the halo re-reads (from L1 / L2) low.

The layout of the RESULT picks the tiling (it is the one written with full, aligned rows); by
default the result has the memory format of the input (x, dy).

The taps are unrolled (kH * kW <= MAX_TAPS) with per-row and per-column masks; strides and
dilations are compile-time constants (a strided data gradient then costs integer shifts, not
divisions). float16 / bfloat16 / float32 data; the sums are float32 and rounded once to the
result's dtype. Offsets are int32, int64 when a tensor spans 2**31 elements or more.
"""

from __future__ import annotations

import functools
import os

import torch
import triton
import triton.language as tl

from . import available, cdiv
from . import pow2 as next_pow2

# defined under the interpreter (TRITON_INTERPRET=1 at import: they run on the CPU) or compiled
_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_TAPS = 64  # kH * kW: the taps are unrolled (and the weights gradient keeps one sum per tap)
_TILE = 1024  # elements of a forward / data-gradient tile (8 per thread at 4 warps)
NUM_WARPS = 4


@triton.jit
def _rounded(acc, like_ptr, SOFT_BF16: tl.constexpr):
    """The float32 `acc` rounded (to nearest even) to the element type of `like_ptr`.
    SOFT_BF16 (the interpreter, whose float32 -> bfloat16 cast truncates): round to bfloat16 by
    integer arithmetic first, so the CPU tests see the GPU's rounding bit for bit."""
    r = acc
    if SOFT_BF16:
        if like_ptr.dtype.element_ty == tl.bfloat16:
            b = acc.to(tl.uint32, bitcast=True)
            b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
            r = tl.where(acc != acc, acc, b.to(tl.float32, bitcast=True))
    return r.to(like_ptr.dtype.element_ty)


@triton.jit
def _planes_tile(TH, TW, BPL: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
                 I64: tl.constexpr):
    """This program's NCHW tile (TH x TW spatial tiles per plane block, spatial tiles fastest):
    plane indices [BPL, 1, 1] (n * channels + channel), rows [1, BH, 1], cols [1, 1, BW]."""
    pid = tl.program_id(0)
    tw = pid % TW
    th = (pid // TW) % TH
    tp = pid // (TW * TH)
    plane = tp * BPL + tl.arange(0, BPL)[:, None, None]
    i = th * BH + tl.arange(0, BH)[None, :, None]
    j = tw * BW + tl.arange(0, BW)[None, None, :]
    if I64:
        plane, i, j = plane.to(tl.int64), i.to(tl.int64), j.to(tl.int64)
    return plane, i, j


@triton.jit
def _pixels_tile(TH, TW, TC, BH: tl.constexpr, BW: tl.constexpr, BC: tl.constexpr,
                 I64: tl.constexpr):
    """This program's NHWC tile (channel tiles fastest, then TW, then TH, then the image):
    image n, rows [BH, 1, 1], cols [1, BW, 1], channels [1, 1, BC]."""
    pid = tl.program_id(0)
    tc = pid % TC
    tw = (pid // TC) % TW
    th = (pid // (TC * TW)) % TH
    n = pid // (TC * TW * TH)
    i = th * BH + tl.arange(0, BH)[:, None, None]
    j = tw * BW + tl.arange(0, BW)[None, :, None]
    c = tc * BC + tl.arange(0, BC)[None, None, :]
    if I64:
        n, i, j, c = n.to(tl.int64), i.to(tl.int64), j.to(tl.int64), c.to(tl.int64)
    return n, i, j, c


@triton.jit
def _fwd_nchw(x_ptr, w_ptr, y_ptr, P, O, H, W, Ho, Wo, pt, pl, TH, TW,
              x_sn, x_sc, x_sh, x_sw, w_so, w_sh, w_sw, y_sn, y_sc, y_sh, y_sw,
              M: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
              SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr, BPL: tl.constexpr,
              BH: tl.constexpr, BW: tl.constexpr, I64: tl.constexpr,
              SOFT_BF16: tl.constexpr):
    """y tile [BPL planes (n, o), BH rows, BW cols]; P = N * O planes."""
    plane, i, j = _planes_tile(TH, TW, BPL, BH, BW, I64)
    pm = plane < P
    n = plane // O
    o = plane % O
    x_base = x_ptr + n * x_sn + (o // M) * x_sc
    w_base = w_ptr + o * w_so
    acc = tl.full([BPL, BH, BW], 0.0, tl.float32)
    for p in tl.static_range(KH):
        ih = i * SY - pt + p * RY
        mh = pm & (ih >= 0) & (ih < H)
        for q in tl.static_range(KW):
            iw = j * SX - pl + q * RX
            xv = tl.load(x_base + ih * x_sh + iw * x_sw, mask=mh & (iw >= 0) & (iw < W),
                         other=0.0)
            wv = tl.load(w_base + p * w_sh + q * w_sw, mask=pm, other=0.0)
            acc += xv.to(tl.float32) * wv.to(tl.float32)
    tl.store(y_ptr + n * y_sn + o * y_sc + i * y_sh + j * y_sw,
             _rounded(acc, y_ptr, SOFT_BF16), mask=pm & (i < Ho) & (j < Wo))


@triton.jit
def _fwd_nhwc(x_ptr, w_ptr, y_ptr, O, H, W, Ho, Wo, pt, pl, TH, TW, TC,
              x_sn, x_sc, x_sh, x_sw, w_so, w_sh, w_sw, y_sn, y_sc, y_sh, y_sw,
              M: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
              SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr, BH: tl.constexpr,
              BW: tl.constexpr, BC: tl.constexpr, I64: tl.constexpr,
              SOFT_BF16: tl.constexpr):
    """y tile [BH rows, BW cols, BC output channels] of one image (channel tiles fastest)."""
    n, i, j, o = _pixels_tile(TH, TW, TC, BH, BW, BC, I64)
    om = o < O
    x_base = x_ptr + n * x_sn + (o // M) * x_sc
    w_base = w_ptr + o * w_so
    acc = tl.full([BH, BW, BC], 0.0, tl.float32)
    for p in tl.static_range(KH):
        ih = i * SY - pt + p * RY
        mh = (ih >= 0) & (ih < H)
        for q in tl.static_range(KW):
            iw = j * SX - pl + q * RX
            xv = tl.load(x_base + ih * x_sh + iw * x_sw,
                         mask=mh & (iw >= 0) & (iw < W) & om, other=0.0)
            wv = tl.load(w_base + p * w_sh + q * w_sw, mask=om, other=0.0)
            acc += xv.to(tl.float32) * wv.to(tl.float32)
    tl.store(y_ptr + n * y_sn + o * y_sc + i * y_sh + j * y_sw,
             _rounded(acc, y_ptr, SOFT_BF16), mask=(i < Ho) & (j < Wo) & om)


@triton.jit
def _src_index(h, pad, p, n_out, S: tl.constexpr, R: tl.constexpr):
    """The output index i with i*S - pad + p*R == h, and whether it exists in [0, n_out)."""
    t = h + pad - p * R
    if S == 1:
        i = t
        ok = (t >= 0) & (t < n_out)
    else:
        tc = tl.maximum(t, 0)  # no negative operand: // and % round alike everywhere
        i = tc // S
        ok = (t >= 0) & (tc % S == 0) & (i < n_out)
    return i, ok


@triton.jit
def _dgrad_nchw(dy_ptr, w_ptr, dx_ptr, P, C, H, W, Ho, Wo, pt, pl, TH, TW,
                dy_sn, dy_sc, dy_sh, dy_sw, w_so, w_sh, w_sw, dx_sn, dx_sc, dx_sh, dx_sw,
                M: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
                SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr, BPL: tl.constexpr,
                BH: tl.constexpr, BW: tl.constexpr, I64: tl.constexpr,
                SOFT_BF16: tl.constexpr):
    """dx tile [BPL planes (n, c), BH rows, BW cols]; P = N * C planes."""
    plane, h, v = _planes_tile(TH, TW, BPL, BH, BW, I64)
    pm = plane < P
    n = plane // C
    c = plane % C
    acc = tl.full([BPL, BH, BW], 0.0, tl.float32)
    for m in range(M):
        o = c * M + m
        dy_base = dy_ptr + n * dy_sn + o * dy_sc
        w_base = w_ptr + o * w_so
        for p in tl.static_range(KH):
            i, mi = _src_index(h, pt, p, Ho, SY, RY)
            mi = mi & pm
            for q in tl.static_range(KW):
                j, mj = _src_index(v, pl, q, Wo, SX, RX)
                g = tl.load(dy_base + i * dy_sh + j * dy_sw, mask=mi & mj, other=0.0)
                wv = tl.load(w_base + p * w_sh + q * w_sw, mask=pm, other=0.0)
                acc += g.to(tl.float32) * wv.to(tl.float32)
    tl.store(dx_ptr + n * dx_sn + c * dx_sc + h * dx_sh + v * dx_sw,
             _rounded(acc, dx_ptr, SOFT_BF16), mask=pm & (h < H) & (v < W))


@triton.jit
def _dgrad_nhwc(dy_ptr, w_ptr, dx_ptr, C, H, W, Ho, Wo, pt, pl, TH, TW, TC,
                dy_sn, dy_sc, dy_sh, dy_sw, w_so, w_sh, w_sw, dx_sn, dx_sc, dx_sh, dx_sw,
                M: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SY: tl.constexpr,
                SX: tl.constexpr, RY: tl.constexpr, RX: tl.constexpr, BH: tl.constexpr,
                BW: tl.constexpr, BC: tl.constexpr, I64: tl.constexpr,
                SOFT_BF16: tl.constexpr):
    """dx tile [BH rows, BW cols, BC input channels] of one image (channel tiles fastest)."""
    n, h, v, c = _pixels_tile(TH, TW, TC, BH, BW, BC, I64)
    cm = c < C
    acc = tl.full([BH, BW, BC], 0.0, tl.float32)
    for m in range(M):
        o = c * M + m
        dy_base = dy_ptr + n * dy_sn + o * dy_sc
        w_base = w_ptr + o * w_so
        for p in tl.static_range(KH):
            i, mi = _src_index(h, pt, p, Ho, SY, RY)
            for q in tl.static_range(KW):
                j, mj = _src_index(v, pl, q, Wo, SX, RX)
                g = tl.load(dy_base + i * dy_sh + j * dy_sw, mask=mi & mj & cm, other=0.0)
                wv = tl.load(w_base + p * w_sh + q * w_sw, mask=cm, other=0.0)
                acc += g.to(tl.float32) * wv.to(tl.float32)
    tl.store(dx_ptr + n * dx_sn + c * dx_sc + h * dx_sh + v * dx_sw,
             _rounded(acc, dx_ptr, SOFT_BF16), mask=(h < H) & (v < W) & cm)


# ----------------------------------------------------------------------------- wrappers
def supported(groups: int, c_in: int, c_out: int, kernel_hw, dtype: torch.dtype,
              device: torch.device) -> bool:
    """Whether these kernels run this convolution: depthwise (groups == C, O a multiple of C),
    at most MAX_TAPS taps, float16 / bfloat16 / float32, and Triton usable on `device` (CUDA
    with compiled kernels; the CPU only when this module was imported under TRITON_INTERPRET=1)."""
    kh, kw = kernel_hw
    if groups != c_in or c_in < 1 or c_out % c_in or not 1 <= kh * kw <= MAX_TAPS:
        return False
    if dtype not in DTYPES or not available(device):
        return False
    return device.type == "cuda" or _INTERPRETED


def out_size(n: int, k: int, stride: int, dilation: int, pad_before: int,
             pad_after: int) -> int:
    """The output size of one spatial axis (SPEC 2.4, explicit padding)."""
    return (n + pad_before + pad_after - dilation * (k - 1) - 1) // stride + 1


def channels_inner(t: torch.Tensor) -> bool:
    """Whether the NCHW-logical `t` has its channels innermost in memory (an NHWC tensor, i.e.
    channels_last); then the NHWC tiling applies, otherwise the NCHW one."""
    return t.shape[1] > 1 and t.stride(1) == 1


def memory_format(t: torch.Tensor) -> torch.memory_format:
    return torch.channels_last if channels_inner(t) else torch.contiguous_format


def needs_int64(*ts: torch.Tensor) -> bool:
    """Whether an element offset of one of the tensors can leave int32 (conservatively: reach
    2**31 - 1; a contiguous tensor of 2**31 elements or more)."""
    return any(sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride())) >= 2**31 - 1
               for t in ts if t.numel())


def _w_strides(w: torch.Tensor) -> tuple[int, int, int]:
    """The strides of weights [O, 1, kH, kW] on O, kH, kW."""
    return w.stride(0), w.stride(2), w.stride(3)


@functools.cache
def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (a small number for the interpreter)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4


def pow2(n: int, cap: int) -> int:
    """The power of two >= n (at least 1), at most cap."""
    return max(1, min(next_pow2(n), cap))


def _nchw_tile(planes: int, rows: int, cols: int) -> tuple[int, int, int]:
    """[planes, rows, cols] of about _TILE elements: up to 64 columns, then rows, then planes."""
    bw = pow2(cols, 64)
    bh = pow2(rows, _TILE // bw)
    return pow2(planes, _TILE // (bw * bh)), bh, bw


def _nhwc_tile(rows: int, cols: int, chans: int, dtype: torch.dtype) -> tuple[int, int, int]:
    """[rows, cols, channels]: 128 bytes of channels, 8 columns, rows up to about _TILE."""
    bc = pow2(chans, 128 // dtype.itemsize)
    bw = pow2(cols, 8)
    return pow2(rows, _TILE // (bw * bc)), bw, bc


def geometry(stride, dilation, pads, kernel_hw) -> dict:
    """The compile-time constants of a convolution's geometry (the multiplier M is added by the
    caller)."""
    (sy, sx), (ry, rx), (kh, kw) = stride, dilation, kernel_hw
    assert min(sy, sx, ry, rx) >= 1 and min(pads) >= 0, (stride, dilation, pads)
    return dict(KH=int(kh), KW=int(kw), SY=int(sy), SX=int(sx), RY=int(ry), RX=int(rx))


def forward(x: torch.Tensor, w: torch.Tensor, stride=(1, 1), dilation=(1, 1),
            pads=(0, 0, 0, 0), out: torch.Tensor | None = None) -> torch.Tensor:
    """Depthwise forward convolution (module docstring).

    x [N, C, H, W] and w [C*M, 1, kH, kW], any strides; stride (sy, sx), dilation (ry, rx),
    pads (top, bottom, left, right). Returns y [N, C*M, Ho, Wo] in x's dtype and memory format
    (contiguous NCHW or channels_last), or writes `out` (that shape and dtype, any strides) and
    returns it."""
    N, C, H, W = x.shape
    O, _, KH, KW = w.shape
    assert w.shape[1] == 1 and O % max(C, 1) == 0 and w.dtype == x.dtype, (x.shape, w.shape)
    cfg, (pt, pb, pl, pr) = geometry(stride, dilation, pads, (KH, KW)), pads
    Ho = out_size(H, KH, cfg["SY"], cfg["RY"], pt, pb)
    Wo = out_size(W, KW, cfg["SX"], cfg["RX"], pl, pr)
    assert Ho >= 1 and Wo >= 1, "the padded source is smaller than the dilated kernel"
    if out is None:
        out = torch.empty((N, O, Ho, Wo), dtype=x.dtype, device=x.device,
                          memory_format=memory_format(x))
    assert tuple(out.shape) == (N, O, Ho, Wo) and out.dtype == x.dtype
    if out.numel() == 0:
        return out
    if x.numel() == 0:  # H or W is 0: every window lies in the padding
        return out.zero_()
    cfg["M"] = O // C
    i64 = needs_int64(x, out)
    args = (H, W, Ho, Wo, pt, pl)
    if channels_inner(out):
        bh, bw, bc = _nhwc_tile(Ho, Wo, O, x.dtype)
        th, tw, tc = cdiv(Ho, bh), cdiv(Wo, bw), cdiv(O, bc)
        _fwd_nhwc[(N * th * tw * tc,)](
            x, w, out, O, *args, th, tw, tc, *x.stride(), *_w_strides(w), *out.stride(),
            **cfg, BH=bh, BW=bw, BC=bc, I64=i64, SOFT_BF16=_INTERPRETED,
            num_warps=NUM_WARPS)
    else:
        bpl, bh, bw = _nchw_tile(N * O, Ho, Wo)
        th, tw = cdiv(Ho, bh), cdiv(Wo, bw)
        _fwd_nchw[(cdiv(N * O, bpl) * th * tw,)](
            x, w, out, N * O, O, *args, th, tw, *x.stride(), *_w_strides(w),
            *out.stride(), **cfg, BPL=bpl, BH=bh, BW=bw, I64=i64, SOFT_BF16=_INTERPRETED,
            num_warps=NUM_WARPS)
    return out


def data_gradient(dy: torch.Tensor, w: torch.Tensor, x_shape, stride=(1, 1),
                  dilation=(1, 1), pads=(0, 0, 0, 0),
                  out: torch.Tensor | None = None) -> torch.Tensor:
    """Gradient of the depthwise convolution in its source (module docstring).

    dy [N, C*M, Ho, Wo] and w [C*M, 1, kH, kW], any strides; x_shape = (N, C, H, W), the
    forward source's shape (several H give the same Ho when sy > 1). Returns dx [N, C, H, W] in
    dy's dtype and memory format, or writes `out` (that shape and dtype, any strides) and
    returns it."""
    N, C, H, W = (int(s) for s in x_shape)
    O, _, KH, KW = w.shape
    assert w.shape[1] == 1 and O % max(C, 1) == 0 and w.dtype == dy.dtype
    assert tuple(dy.shape[:2]) == (N, O), (dy.shape, x_shape)
    cfg, (pt, pb, pl, pr) = geometry(stride, dilation, pads, (KH, KW)), pads
    Ho, Wo = dy.shape[2:]
    assert (Ho, Wo) == (out_size(H, KH, cfg["SY"], cfg["RY"], pt, pb),
                        out_size(W, KW, cfg["SX"], cfg["RX"], pl, pr)), (x_shape, dy.shape)
    if out is None:
        out = torch.empty((N, C, H, W), dtype=dy.dtype, device=dy.device,
                          memory_format=memory_format(dy))
    assert tuple(out.shape) == (N, C, H, W) and out.dtype == dy.dtype
    if out.numel() == 0:
        return out
    cfg["M"] = O // C
    i64 = needs_int64(dy, out)
    args = (C, H, W, Ho, Wo, pt, pl)
    if channels_inner(out):
        bh, bw, bc = _nhwc_tile(H, W, C, dy.dtype)
        th, tw, tc = cdiv(H, bh), cdiv(W, bw), cdiv(C, bc)
        _dgrad_nhwc[(N * th * tw * tc,)](
            dy, w, out, *args, th, tw, tc, *dy.stride(), *_w_strides(w), *out.stride(),
            **cfg, BH=bh, BW=bw, BC=bc, I64=i64, SOFT_BF16=_INTERPRETED,
            num_warps=NUM_WARPS)
    else:
        bpl, bh, bw = _nchw_tile(N * C, H, W)
        th, tw = cdiv(H, bh), cdiv(W, bw)
        _dgrad_nchw[(cdiv(N * C, bpl) * th * tw,)](
            dy, w, out, N * C, *args, th, tw, *dy.stride(), *_w_strides(w),
            *out.stride(), **cfg, BPL=bpl, BH=bh, BW=bw, I64=i64, SOFT_BF16=_INTERPRETED,
            num_warps=NUM_WARPS)
    return out


# ------------------------------------------------------------- 1x1 depthwise: a channel scale
@triton.jit
def _channel_scale(t_ptr, w_ptr, y_ptr, ROWS, COLS, C, CH_COLS: tl.constexpr,
                   BR: tl.constexpr, BCOL: tl.constexpr, SOFT_BF16: tl.constexpr,
                   I64: tl.constexpr):
    """y = t * w[channel] over a contiguous t seen as [ROWS, COLS]: NHWC (CH_COLS) as
    [N*H*W, C], the channel the column; NCHW as [N*C, H*W], the channel the row mod C (no
    division per element). The product in float32, rounded once."""
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    k = tl.program_id(1) * BCOL + tl.arange(0, BCOL)
    r_ok = r < ROWS
    k_ok = k < COLS
    if CH_COLS:
        wv = tl.load(w_ptr + k, mask=k_ok).to(tl.float32)[None, :]
    else:
        wv = tl.load(w_ptr + r % C, mask=r_ok).to(tl.float32)[:, None]
    if I64:
        r = r.to(tl.int64)
    off = r[:, None] * COLS + k[None, :]
    ok = r_ok[:, None] & k_ok[None, :]
    v = tl.load(t_ptr + off, mask=ok).to(tl.float32) * wv
    tl.store(y_ptr + off, _rounded(v, y_ptr, SOFT_BF16), mask=ok)


def channel_scale(t: torch.Tensor, w: torch.Tensor, nhwc: bool) -> torch.Tensor:
    """A 1x1 depthwise convolution (one output per channel, stride 1, no padding) as the
    per-channel scale it is: t [N, H, W, C] (nhwc) or [N, C, H, W], contiguous; w the C
    weights (contiguous, t's dtype). One pass over t in [rows, columns] tiles (torch's
    broadcast multiply runs its non-vectorised kernel here: 17.8 against cuDNN's 10.7 us for
    16x64x64x32 float32 on the H200, the tuner's timings). Returns a new contiguous tensor."""
    assert t.dim() == 4 and t.is_contiguous() and w.is_contiguous() and w.dtype == t.dtype
    y = torch.empty_like(t)
    c = t.shape[3] if nhwc else t.shape[1]
    cols = c if nhwc else t.shape[2] * t.shape[3]
    rows = t.numel() // max(cols, 1)
    if t.numel():
        bcol = min(next_pow2(cols), 1024)
        br = max(1, 4096 // bcol)
        _channel_scale[(cdiv(rows, br), cdiv(cols, bcol))](
            t, w, y, rows, cols, c, CH_COLS=nhwc, BR=br, BCOL=bcol, SOFT_BF16=_INTERPRETED,
            I64=needs_int64(t), num_warps=8)
    return y
