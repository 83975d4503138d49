"""Implicit-GEMM 2-D convolutions of NHWC data with HWIO weights read as they are (Triton).

Why: MPSGraph's NHWC convolutions take HWIO weights `[kH, kW, I, O]`, which in memory are the
row-major `[kH*kW*I, O]` matrix of an im2col product. cuDNN has no such filter layout (its NHWC
kernels read (O, kH, kW, I)), so the cuDNN paths transpose the weights before the forward and
the data gradient and the weights gradient after: one more kernel (1-17 us on the H200) beside
a 10-40 us convolution. These kernels are the convolution as the matrix product it is, with the
weights as the B operand in place:

- forward: y[m, o] = sum over (kh, kw, c) of x[n, oh*sy + kh*ry - pt, ow*sx + kw*rx - pl, c] *
  W[kh, kw, c, o], m = (n, oh, ow): M = N*H'*W', K = kH*kW*C, the B tile a [BK, BN] slice of
  the weight matrix (rows c of tap (kh, kw), coalesced along o);
- data gradient (stride 1): the same kernel with the roles renamed, dx[m, c] = sum over
  (kh, kw, o) of dy[n, h - kh*ry + pt, w - kw*rx + pl, o] * W[kh, kw, c, o] (the B tile read
  transposed: the weight strides are arguments);
- weights gradient: dW[tap*C + c, o] = sum over pixels p of x[p shifted by the tap, c] *
  dy[p, o], one program per (tap, C block, O block, pixel split); with more than one split the
  float32 partial sums go to a [splits, kH*kW*C, O] buffer that `_sum_splits` adds up and
  rounds (fixed order: deterministic).

The A operand is gathered with masks (padding reads zeros; nothing is padded or copied) and the
K loop is one flat loop over (tap, channel block), which Triton software-pipelines. float16 /
bfloat16 accumulate in float32 and are rounded once; float32 runs TF32 products (the tuner only
offers these kernels for float32 when TF32 convolutions are allowed, as cuDNN's are by
default). Offsets are int64 where an offset into a tensor could leave int32
(`depthwise_conv.needs_int64`, from the strides: a strided source counts its span).

Used by backends/torch/convolution.py as the autotuner's "igemm" candidate (NHWC data, HWIO
weights, one group; the data gradient at stride 1). Runs on CUDA, and on the CPU under
TRITON_INTERPRET=1 for tests.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import cdiv, pow2
from .depthwise_conv import needs_int64, sm_count


@triton.jit
def _dot(a, b, acc, PREC: tl.constexpr, F32_DOT: tl.constexpr):
    """acc + a @ b; F32_DOT (Triton's interpreter, whose half-type dot is wrong) in float32."""
    if F32_DOT:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        return tl.dot(a, b, acc, input_precision=PREC)


@triton.jit
def _conv_nhwc(src_ptr, w_ptr, out_ptr, M, CS, CO, HS, WS, HO, WO, s_n, s_h, s_w, wk, wn,
               SH, SW, DH, DW, PT, PL, KH: tl.constexpr, KW: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
               PREC: tl.constexpr, F32_DOT: tl.constexpr, I64: tl.constexpr):
    """out[m, j] (row-major [M, CO]) = sum over taps and src channels c of
    src[img, oh*SH + kh*DH - PT, ow*SW + kw*DW - PL, c] * w[tap*CS*CO + c*wk + j*wn]."""
    pid = tl.program_id(0)
    num_m = (M + BM - 1) // BM
    num_n = (CO + BN - 1) // BN
    width = GROUP * num_n  # grouped order: GROUP row blocks share their B tiles in L2
    first = (pid // width) * GROUP
    rows = tl.minimum(num_m - first, GROUP)
    pm = first + (pid % width) % rows
    pn = (pid % width) // rows
    m = pm * BM + tl.arange(0, BM)
    j = pn * BN + tl.arange(0, BN)
    hw = HO * WO
    img = m // hw
    r = m - img * hw
    oh = r // WO
    ow = r - oh * WO
    m_ok = m < M
    j_ok = j < CO
    if I64:  # (one image may span more than int32 too: the row offset as well)
        img = img.to(tl.int64)
        oh = oh.to(tl.int64)
    kc = tl.arange(0, BK)
    cb = (CS + BK - 1) // BK  # (not tl.cdiv: a @jit the interpreter
    # cannot call from a module imported under it)
    acc = tl.full((BM, BN), 0.0, tl.float32)
    for t in range(0, KH * KW * cb):
        tap = t // cb
        c = (t - tap * cb) * BK + kc
        kh = tap // KW
        kw = tap - kh * KW
        ih = oh * SH + kh * DH - PT
        iw = ow * SW + kw * DW - PL
        ok = m_ok & (ih >= 0) & (ih < HS) & (iw >= 0) & (iw < WS)
        c_ok = c < CS
        base = img * s_n + ih * s_h + iw * s_w
        a = tl.load(src_ptr + base[:, None] + c[None, :], mask=ok[:, None] & c_ok[None, :],
                    other=0.0)
        b = tl.load(w_ptr + tap * CS * CO + c[:, None] * wk + j[None, :] * wn,
                    mask=c_ok[:, None] & j_ok[None, :], other=0.0)
        acc = _dot(a, b, acc, PREC, F32_DOT)
    if I64:
        m = m.to(tl.int64)
    tl.store(out_ptr + m[:, None] * CO + j[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=m_ok[:, None] & j_ok[None, :])


@triton.jit
def _wgrad_nhwc(x_ptr, dy_ptr, out_ptr, P, C, O, H, W, HO, WO, s_n, s_h, s_w,
                SH, SW, DH, DW, PT, PL, CB, STEPS, L, KW: tl.constexpr,
                BC: tl.constexpr, BO: tl.constexpr, BP: tl.constexpr, PREC: tl.constexpr,
                F32_DOT: tl.constexpr, I64: tl.constexpr):
    """out[split, tap*C + c, o] = sum over the pixels p of this split's STEPS blocks of
    x[p's source pixel at the tap, c] * dy[p, o]."""
    pid = tl.program_id(0)
    tap = pid // CB
    c = (pid - tap * CB) * BC + tl.arange(0, BC)
    o = tl.program_id(1) * BO + tl.arange(0, BO)
    split = tl.program_id(2)
    kh = tap // KW
    kw = tap - kh * KW
    c_ok = c < C
    o_ok = o < O
    hw = HO * WO
    acc = tl.full((BC, BO), 0.0, tl.float32)
    for s in range(0, STEPS):
        p = (split * STEPS + s) * BP + tl.arange(0, BP)
        img = p // hw
        r = p - img * hw
        oh = r // WO
        ow = r - oh * WO
        ih = oh * SH + kh * DH - PT
        iw = ow * SW + kw * DW - PL
        p_ok = p < P
        ok = p_ok & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        if I64:
            img = img.to(tl.int64)
            ih = ih.to(tl.int64)
            p = p.to(tl.int64)
        xa = tl.load(x_ptr + (img * s_n + ih * s_h + iw * s_w)[:, None] + c[None, :],
                     mask=ok[:, None] & c_ok[None, :], other=0.0)
        g = tl.load(dy_ptr + p[:, None] * O + o[None, :], mask=p_ok[:, None] & o_ok[None, :],
                    other=0.0)
        acc = _dot(tl.trans(xa), g, acc, PREC, F32_DOT)
    row = tap * C + c
    if I64:
        row = row.to(tl.int64)
    tl.store(out_ptr + split.to(tl.int64) * L + row[:, None] * O + o[None, :],
             acc.to(out_ptr.dtype.element_ty),
             mask=c_ok[:, None] & o_ok[None, :])


@triton.jit
def _sum_splits(part_ptr, out_ptr, S, L, BLOCK: tl.constexpr):
    """out[i] = sum over s of part[s, i] (float32, in order), rounded to out's dtype."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = i < L
    acc = tl.full((BLOCK,), 0.0, tl.float32)
    for s in range(0, S):
        acc += tl.load(part_ptr + s * L + i, mask=ok, other=0.0)
    tl.store(out_ptr + i, acc.to(out_ptr.dtype.element_ty), mask=ok)


# ----------------------------------------------------------------------------- wrappers
def _prec(dtype: torch.dtype):
    return "tf32" if dtype == torch.float32 else None


def interpreting() -> bool:
    """Whether these kernels were defined for Triton's interpreter (TRITON_INTERPRET=1 when the
    module was imported)."""
    return type(_conv_nhwc).__name__ == "InterpretedFunction"


def _f32_dot(dtype: torch.dtype) -> bool:
    return dtype != torch.float32 and interpreting()


def _tiles(M: int, K_c: int, N_c: int, dtype: torch.dtype) -> tuple[int, int, int, int]:
    """(BM, BN, BK, num_warps) of the forward / data-gradient product: rows of 128 pixels
    (64 where there are few), up to 128 output channels, 64 input channels a step (32 for
    float32: the same bytes). (64 x 64 tiles with one more stage were measured too, on the
    sweep's 17 NHWC rows of the H200: never the fastest.)"""
    bm = 128 if M >= 8192 else 64
    bn = max(16, min(128, pow2(N_c)))
    bk = max(16, min(32 if dtype == torch.float32 else 64, pow2(K_c)))
    return bm, bn, bk, (8 if bm * bn >= 128 * 128 else 4)


def _check(name: str, **ts: torch.Tensor) -> None:
    for k, t in ts.items():
        if t.dim() != 4 or t.stride(3) != 1:
            raise ValueError(f"conv_igemm.{name}: {k} must be 4-D with a unit channel stride, "
                             f"given shape {tuple(t.shape)} strides {t.stride()}")


def _launch(src, w, out, wk: int, wn: int, stride, dilation, pads) -> torch.Tensor:
    n, hs, ws, cs = src.shape
    _, ho, wo, co = out.shape
    kh, kw = w.shape[0], w.shape[1]
    M = n * ho * wo
    if M == 0 or co == 0:
        return out
    if cs == 0 or kh * kw == 0:
        return out.zero_()
    bm, bn, bk, warps = _tiles(M, cs, co, src.dtype)
    grid = (cdiv(M, bm) * cdiv(co, bn),)
    _conv_nhwc[grid](src, w, out, M, cs, co, hs, ws, ho, wo, *src.stride()[:3], wk, wn,
                     *stride, *dilation, *pads, KH=kh, KW=kw, BM=bm, BN=bn, BK=bk, GROUP=8,
                     PREC=_prec(src.dtype), F32_DOT=_f32_dot(src.dtype),
                     I64=needs_int64(src, w, out), num_warps=warps, num_stages=3)
    return out


def forward(x: torch.Tensor, w: torch.Tensor, out_hw, stride=(1, 1), dilation=(1, 1),
            pads=(0, 0, 0, 0)) -> torch.Tensor:
    """x [N, H, W, C] (channel stride 1), w HWIO [kH, kW, C, O] contiguous, out_hw (H', W');
    pads (top, bottom, left, right). Returns y [N, H', W', O] contiguous, x's dtype."""
    _check("forward", x=x)
    kh, kw, c, o = w.shape
    w = w.contiguous()
    y = torch.empty((x.shape[0], *out_hw, o), dtype=x.dtype, device=x.device)
    return _launch(x, w, y, o, 1, stride, dilation, (pads[0], pads[2]))


def data_gradient(dy: torch.Tensor, w: torch.Tensor, x_shape, dilation=(1, 1),
                  pads=(0, 0, 0, 0)) -> torch.Tensor:
    """dy [N, H', W', O] (channel stride 1), w HWIO [kH, kW, C, O] contiguous, x_shape the
    source's [N, H, W, C]; stride 1. Returns dx [N, H, W, C] contiguous, dy's dtype."""
    _check("data_gradient", dy=dy)
    w = w.contiguous()
    o = w.shape[3]
    dx = torch.empty(tuple(x_shape), dtype=dy.dtype, device=dy.device)
    return _launch(dy, w, dx, 1, o, (1, 1), (-dilation[0], -dilation[1]),
                   (-pads[0], -pads[2]))


def _wgrad_plan(P: int, taps: int, C: int, O: int, sms: int):
    """(BC, BO, BP, splits, steps): tiles of up to 128 x 128 weights, 64 pixels a step, and as
    many pixel splits as make the programs about two per SM (the nearest whole number: a few
    SMs running one program more than the others take that much longer), at most 32, each at
    least four steps long."""
    bc = max(16, min(128, pow2(C)))
    bo = max(16, min(128, pow2(O)))
    bp = 64
    tiles = taps * cdiv(C, bc) * cdiv(O, bo)
    blocks = cdiv(P, bp)
    splits = max(1, min(32, round(2 * sms / tiles), blocks // 4))
    steps = cdiv(blocks, splits)
    return bc, bo, bp, cdiv(blocks, steps), steps


def weights_gradient(dy: torch.Tensor, x: torch.Tensor, kernel_hw, stride=(1, 1),
                     dilation=(1, 1), pads=(0, 0, 0, 0)) -> torch.Tensor:
    """dy [N, H', W', O] contiguous, x [N, H, W, C] (channel stride 1). Returns dW HWIO
    [kH, kW, C, O] contiguous, dy's dtype."""
    _check("weights_gradient", dy=dy, x=x)
    dy = dy.contiguous()
    n, h, wd, c = x.shape
    _, ho, wo, o = dy.shape
    kh, kw = kernel_hw
    out = torch.empty((kh, kw, c, o), dtype=dy.dtype, device=dy.device)
    P = n * ho * wo
    if out.numel() == 0:
        return out
    if P == 0:
        return out.zero_()
    bc, bo, bp, splits, steps = _wgrad_plan(P, kh * kw, c, o, sm_count(dy.device))
    cb = cdiv(c, bc)
    dest = out if splits == 1 else torch.empty((splits, kh * kw * c, o), dtype=torch.float32,
                                               device=dy.device)
    grid = (kh * kw * cb, cdiv(o, bo), splits)
    warps = 8 if bc * bo >= 128 * 128 else 4
    _wgrad_nhwc[grid](x, dy, dest, P, c, o, h, wd, ho, wo, *x.stride()[:3], *stride,
                      *dilation, pads[0], pads[2], cb, steps, out.numel(), KW=kw, BC=bc,
                      BO=bo, BP=bp, PREC=_prec(dy.dtype), F32_DOT=_f32_dot(dy.dtype),
                      I64=needs_int64(x, dy, dest), num_warps=warps, num_stages=3)
    if splits > 1:
        L = out.numel()
        _sum_splits[(cdiv(L, 1024),)](dest, out, splits, L, BLOCK=1024, num_warps=4)
    return out
