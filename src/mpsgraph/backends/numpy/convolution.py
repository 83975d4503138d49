"""NumPy kernels of the convolution family.

Inside, data is NHWC ([N, H, W, C]) and weights are HWIO ([kH, kW, Cg, O]); layouts are
permuted at the edge, so the math is written once. All three ops reduce to matrix products over
the "taps" (p, q) of the kernel, with symbols as in ops/convolution.py (s strides, r dilation
rates, pt/pl the resolved top/left padding, xp the zero-padded source):

    tap(p, q)   = xp[:, p*ry : p*ry + sy*(Ho-1) + 1 : sy, q*rx : ... : sx, :]   # [N, Ho, Wo, C]
    col         = [tap(p, q) for all p, q] laid side by side               # [M, kH*kW*Cg] per group
    forward     y  = col @ w.reshape(kH*kW*Cg, O)                           # one GEMM per group
    weights     dw = col^T @ dy                                             # one GEMM per group
    data        dcol = dy @ w^T;  dxp[tap(p, q)] += dcol[:, (p, q)]          # GEMM, then col2im

(M = N*Ho*Wo.) Groups are the batch axis of one batched matmul. Depthwise convolution (one
input channel per group) has no useful GEMM: it is a multiply-accumulate per tap over the whole
tensor. The only Python loops are over the kH*kW taps. float16/bFloat16 are computed in float32
and rounded once at the end.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...ops.convolution import Conv2DAttrs
from ...types import TensorNamedDataLayout as L
from . import kernel

_F32 = np.dtype(np.float32)


def _work_dtype(dt: np.dtype) -> np.dtype:
    return dt if dt == np.float64 else _F32


def _nhwc(x: np.ndarray, layout: L) -> np.ndarray:
    return x if layout == L.NHWC else x.transpose(0, 2, 3, 1)


def _hwio(w: np.ndarray, layout: L) -> np.ndarray:
    return w if layout == L.HWIO else w.transpose(2, 3, 1, 0)


def _finish(y: np.ndarray, perm: tuple[int, ...] | None, dtype: np.dtype) -> np.ndarray:
    """Permute to the user's layout and round to the output dtype in ONE copy."""
    if perm is not None:
        y = y.transpose(perm)
    out = np.empty(y.shape, dtype)
    np.copyto(out, y, casting="unsafe")
    return out


def _padded(x_nhwc: np.ndarray, a: Conv2DAttrs, wd: np.dtype) -> np.ndarray:
    """The zero-padded source in the working dtype, [N, H+pt+pb, W+pl+pr, C] (one copy)."""
    pt, pb, pl, pr = a.pads
    n, h, w, c = x_nhwc.shape
    if not (pt or pb or pl or pr) and x_nhwc.dtype == wd and x_nhwc.flags.c_contiguous:
        return x_nhwc
    xp = np.zeros((n, h + pt + pb, w + pl + pr, c), wd)
    xp[:, pt:pt + h, pl:pl + w, :] = x_nhwc
    return xp


def _tap(xp: np.ndarray, p: int, q: int, ho: int, wo: int, a: Conv2DAttrs) -> np.ndarray:
    (sy, sx), (ry, rx) = a.stride, a.dilation
    return xp[:, p * ry: p * ry + sy * (ho - 1) + 1: sy, q * rx: q * rx + sx * (wo - 1) + 1: sx]


def _taps(xp: np.ndarray, kh: int, kw: int, ho: int, wo: int, stride, dilation) -> np.ndarray:
    """Every tap as a zero-copy view: [N, Ho, Wo, kH, kW, C] (overlapping strides)."""
    n, _, _, c = xp.shape
    sn, sh, sw, sc = xp.strides
    (sy, sx), (ry, rx) = stride, dilation
    return as_strided(xp, (n, ho, wo, kh, kw, c), (sn, sy * sh, sx * sw, ry * sh, rx * sw, sc),
                      writeable=False)


def _im2col(xp: np.ndarray, kh: int, kw: int, ho: int, wo: int, g: int, a: Conv2DAttrs
            ) -> np.ndarray:
    """[N, Ho, Wo, G, kH, kW, Cg]: every tap of every group, side by side (strides > 1)."""
    n, _, _, c = xp.shape
    cg = c // g
    col = np.empty((n, ho, wo, g, kh, kw, cg), xp.dtype)
    for p in range(kh):
        for q in range(kw):
            col[:, :, :, :, p, q, :] = _tap(xp, p, q, ho, wo, a).reshape(n, ho, wo, g, cg)
    return col


def _rowcol(xp: np.ndarray, kw: int, wo: int, g: int, a: Conv2DAttrs) -> np.ndarray:
    """[N, Hp, Wo, G, kW, Cg]: the kW taps of each row, side by side (the width half of im2col).

    With vertical stride 1, tap row p of output row i is padded row i + p*ry, so on the flat
    [N*Hp*Wo, ...] grid every tap row is the SAME contiguous block shifted by p*ry*Wo rows: each
    of the kH GEMMs reads this array in place, and im2col costs kW (not kH*kW) copies."""
    n, hp, wp, c = xp.shape
    cg = c // g
    sx, rx = a.stride[1], a.dilation[1]
    if kw == 1 and sx == 1 and wo == wp:
        return xp.reshape(n, hp, wo, g, 1, cg)
    out = np.empty((n, hp, wo, g, kw, cg), xp.dtype)
    for q in range(kw):
        out[:, :, :, :, q, :] = xp[:, :, q * rx: q * rx + sx * (wo - 1) + 1: sx, :].reshape(
            n, hp, wo, g, cg)
    return out


def _grid(y: np.ndarray, hp: int) -> np.ndarray:
    """[N, Ho, Wo, C] placed in the top rows of a zero [N, Hp, Wo, C] grid."""
    n, ho, wo, c = y.shape
    if ho == hp:
        return y
    out = np.zeros((n, hp, wo, c), y.dtype)
    out[:, :ho] = y
    return out


def _bmm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Group-batched matmul [G, M, K] @ [G, K, O]; one plain GEMM when G == 1."""
    if a.shape[0] == 1:
        return np.matmul(a[0], b[0], out=None if out is None else out[0])[None]
    return np.matmul(a, b, out=out)


def _row_weights(w_hwio: np.ndarray, g: int, wd: np.dtype) -> np.ndarray:
    """HWIO weights as [kH, G, kW*Cg, Og] (one GEMM operand per tap row and group)."""
    kh, kw, cg, o = w_hwio.shape
    og = o // g
    return np.ascontiguousarray(
        w_hwio.reshape(kh, kw, cg, g, og).transpose(0, 3, 1, 2, 4), dtype=wd
    ).reshape(kh, g, kw * cg, og)


def _out_hw(a: Conv2DAttrs) -> tuple[int, int]:
    s = a.out_shape
    return (s[1], s[2]) if a.data_layout == L.NHWC else (s[2], s[3])


def _data_perm(a: Conv2DAttrs) -> tuple[int, ...] | None:
    return None if a.data_layout == L.NHWC else (0, 3, 1, 2)


@kernel("convolution2D")
def convolution2D(x: np.ndarray, w: np.ndarray, a: Conv2DAttrs) -> np.ndarray:
    x_nhwc, w_hwio = _nhwc(x, a.data_layout), _hwio(w, a.weights_layout)
    wd = _work_dtype(x.dtype)
    n = x_nhwc.shape[0]
    kh, kw, cg, o = w_hwio.shape
    g = a.groups
    og = o // g
    ho, wo = _out_hw(a)
    xp = _padded(x_nhwc, a, wd)
    hp = xp.shape[1]
    if g > 1 and cg == 1:  # depthwise: one multiply-accumulate over zero-copy tap views
        # einsum is fast only on contiguous operands (the views of the taps aside)
        wt = np.ascontiguousarray(w_hwio, dtype=wd).reshape(kh, kw, g, og)
        v = _taps(xp, kh, kw, ho, wo, a.stride, a.dilation)
        if og == 1:
            y = np.einsum("pqc,nhwpqc->nhwc", wt[..., 0], v)
        else:
            y = np.einsum("pqcm,nhwpqc->nhwcm", wt, v).reshape(n, ho, wo, o)
    elif a.stride[0] == 1:  # row im2col; tap rows are shifted blocks of the flat grid
        r, step = n * hp * wo, a.dilation[0] * wo
        rg = max(r - (kh - 1) * step, 0)  # 0 only when N == 0
        A = _rowcol(xp, kw, wo, g, a).reshape(r, g, kw * cg).transpose(1, 0, 2)
        wr = _row_weights(w_hwio, g, wd)
        yg = np.empty((g, r, og), wd)
        tmp = np.empty((g, rg, og), wd) if kh > 1 else None
        for p in range(kh):
            if p == 0:
                _bmm(A[:, :rg], wr[0], out=yg[:, :rg])
            else:
                _bmm(A[:, p * step: p * step + rg], wr[p], out=tmp)
                yg[:, :rg] += tmp
        y = yg.reshape(g, n, hp, wo, og)[:, :, :ho].transpose(1, 2, 3, 0, 4)
        y = y.reshape(n, ho, wo, o) if g > 1 else y[..., 0, :]
    else:  # strided: full im2col, one GEMM per group
        m = n * ho * wo
        col = _im2col(xp, kh, kw, ho, wo, g, a).reshape(m, g, kh * kw * cg).transpose(1, 0, 2)
        wg = _row_weights(w_hwio, g, wd).transpose(1, 0, 2, 3).reshape(g, kh * kw * cg, og)
        y = _bmm(col, wg).transpose(1, 0, 2).reshape(n, ho, wo, o)
    return _finish(y, _data_perm(a), x.dtype)


@kernel("convolution2DDataGradient")
def convolution2DDataGradient(dy: np.ndarray, w: np.ndarray, shape_tensor: np.ndarray | None,
                              a: Conv2DAttrs) -> np.ndarray:
    dy_nhwc, w_hwio = _nhwc(dy, a.data_layout), _hwio(w, a.weights_layout)
    wd = _work_dtype(dy.dtype)
    n, ho, wo, o = dy_nhwc.shape
    kh, kw, cg, _ = w_hwio.shape
    g = a.groups
    og = o // g
    h, wdt = _out_hw(a)
    c = g * cg
    pt, pb, pl, pr = a.pads
    hp, wp = h + pt + pb, wdt + pl + pr
    dxp = (np.empty if g > 1 and cg == 1 else np.zeros)((n, hp, wp, c), wd)
    if g > 1 and cg == 1:
        # depthwise: the adjoint is a correlation of dy (dilated by the strides, zero-padded by
        # the dilated kernel extent) with the flipped kernel, over zero-copy tap views
        (sy, sx), (ry, rx) = a.stride, a.dilation
        ey, ex = (kh - 1) * ry, (kw - 1) * rx
        dyp = np.zeros((n, hp + ey, wp + ex, g, og), wd)
        dyp[:, ey: ey + sy * (ho - 1) + 1: sy, ex: ex + sx * (wo - 1) + 1: sx] = dy_nhwc.reshape(
            n, ho, wo, g, og)
        wf = np.ascontiguousarray(w_hwio[::-1, ::-1], dtype=wd).reshape(kh, kw, g, og)
        v = _taps(dyp.reshape(n, hp + ey, wp + ex, o), kh, kw, hp, wp, (1, 1), a.dilation)
        if og == 1:
            np.einsum("pqc,nhwpqc->nhwc", wf[..., 0], v, out=dxp)
        else:
            np.einsum("pqcm,nhwpqcm->nhwc", wf, v.reshape(n, hp, wp, kh, kw, g, og), out=dxp)
    elif a.stride[0] == 1:  # adjoint of the forward's row im2col
        r, step = n * hp * wo, a.dilation[0] * wo
        rg = max(r - (kh - 1) * step, 0)  # 0 only when N == 0
        dyg = _grid(np.asarray(dy_nhwc, dtype=wd), hp).reshape(r, g, og).transpose(1, 0, 2)
        wrt = _row_weights(w_hwio, g, wd).transpose(0, 1, 3, 2)  # [kH, G, Og, kW*Cg]
        dA = np.zeros((g, r, kw * cg), wd)
        tmp = np.empty((g, rg, kw * cg), wd)
        for p in range(kh):
            _bmm(dyg[:, :rg], wrt[p], out=tmp)
            dA[:, p * step: p * step + rg] += tmp
        dA = dA.reshape(g, n, hp, wo, kw, cg)
        sx, rx = a.stride[1], a.dilation[1]
        dxp5 = dxp.reshape(n, hp, wp, g, cg)
        for q in range(kw):
            dxp5[:, :, q * rx: q * rx + sx * (wo - 1) + 1: sx] += dA[:, :, :, :, q].transpose(
                1, 2, 3, 0, 4)
    else:  # strided: GEMM to columns, then col2im
        m = n * ho * wo
        dy3 = np.asarray(dy_nhwc, dtype=wd).reshape(m, g, og).transpose(1, 0, 2)
        wgt = _row_weights(w_hwio, g, wd).transpose(1, 0, 2, 3).reshape(g, kh * kw * cg, og)
        dcol = _bmm(dy3, wgt.transpose(0, 2, 1))  # [G, M, kH*kW*Cg]
        dcol = dcol.reshape(g, n, ho, wo, kh, kw, cg).transpose(1, 2, 3, 0, 4, 5, 6)
        for p in range(kh):
            for q in range(kw):
                tap = _tap(dxp, p, q, ho, wo, a).reshape(n, ho, wo, g, cg)
                tap += dcol[:, :, :, :, p, q, :]
    dx = dxp[:, pt:pt + h, pl:pl + wdt, :]
    return _finish(dx, _data_perm(a), dy.dtype)


@kernel("convolution2DWeightsGradient")
def convolution2DWeightsGradient(dy: np.ndarray, x: np.ndarray,
                                 shape_tensor: np.ndarray | None, a: Conv2DAttrs) -> np.ndarray:
    dy_nhwc, x_nhwc = _nhwc(dy, a.data_layout), _nhwc(x, a.data_layout)
    wd = _work_dtype(dy.dtype)
    n, ho, wo, o = dy_nhwc.shape
    g = a.groups
    og = o // g
    if a.weights_layout == L.HWIO:
        kh, kw, cg, _ = a.out_shape
    else:
        _, cg, kh, kw = a.out_shape
    xp = _padded(x_nhwc, a, wd)
    hp = xp.shape[1]
    if g > 1 and cg == 1:  # depthwise: one reduction over n, h, w of zero-copy tap views
        dy5 = np.ascontiguousarray(dy_nhwc, dtype=wd).reshape(n, ho, wo, g, og)
        v = _taps(xp, kh, kw, ho, wo, a.stride, a.dilation)
        if og == 1:
            dw = np.einsum("nhwpqc,nhwc->pqc", v, dy5[..., 0]).reshape(kh, kw, 1, o)
        else:
            dw = np.einsum("nhwpqc,nhwcm->pqcm", v, dy5).reshape(kh, kw, 1, o)
    elif a.stride[0] == 1:  # per tap row p: dW_p = rowcol(shifted by p)^T @ dy on the grid
        r, step = n * hp * wo, a.dilation[0] * wo
        rg = max(r - (kh - 1) * step, 0)  # 0 only when N == 0
        A = _rowcol(xp, kw, wo, g, a).reshape(r, g, kw * cg).transpose(1, 2, 0)  # [G, K1, R]
        dyg = _grid(np.asarray(dy_nhwc, dtype=wd), hp).reshape(r, g, og).transpose(1, 0, 2)
        dwr = np.empty((kh, g, kw * cg, og), wd)
        for p in range(kh):
            _bmm(A[:, :, p * step: p * step + rg], dyg[:, :rg], out=dwr[p])
        dw = dwr.reshape(kh, g, kw, cg, og).transpose(0, 2, 3, 1, 4).reshape(kh, kw, cg, o)
    else:  # strided: full im2col, one GEMM per group
        m = n * ho * wo
        col = _im2col(xp, kh, kw, ho, wo, g, a).reshape(m, g, kh * kw * cg)
        dy3 = np.asarray(dy_nhwc, dtype=wd).reshape(m, g, og)
        dwg = _bmm(col.transpose(1, 2, 0), dy3.transpose(1, 0, 2))  # [G, K, Og]
        dw = dwg.reshape(g, kh, kw, cg, og).transpose(1, 2, 3, 0, 4).reshape(kh, kw, cg, o)
    return _finish(dw, None if a.weights_layout == L.HWIO else (3, 2, 0, 1), dy.dtype)
