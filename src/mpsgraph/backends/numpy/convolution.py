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

(M = N*Ho*Wo.) Groups are the batch axis of one batched matmul. With one group and no
horizontal dilation the kW taps of a kernel row are adjacent in memory, so `col` is built with
kH copies of kW*C-long runs (an overlapping strided view), not kH*kW; a 1x1 kernel at stride 1
needs no copy at all. `col` is built for a slice of the batch at a time so that it stays below
_COL_BYTES (a 64 MiB default). Depthwise convolution (one input channel per group) has no useful
GEMM: it is one einsum over zero-copy, overlapping views of the taps. The only Python loops are
over the kernel taps (and batch chunks of a large im2col). float16/bFloat16 are computed in
float32 and rounded once at the end.

Where PyTorch is installed, float32 work (float16 / bFloat16 included) runs on its CPU
convolutions instead (conv_accel.py: oneDNN on the same memory, 1.5-4x faster on the
gradients); `MPSGRAPH_CPU_ACCEL=0` keeps every op on the kernels below.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...ops.convolution import Conv2DAttrs
from ...types import TensorNamedDataLayout as L
from . import conv_accel, is_canonical, kernel

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


def _degenerate(a: Conv2DAttrs, *arrays: np.ndarray) -> bool:
    """An empty operand or result: the one early path of every op of the family. All three are
    sums of products over the taps, so the result is zeros (an empty sum), of its own shape."""
    return 0 in a.out_shape or any(t.size == 0 for t in arrays)


def _accel(op: str, first: np.ndarray, second: np.ndarray, a: Conv2DAttrs, dtype: np.dtype
           ) -> np.ndarray | None:
    """`op` (forward, data, weights) through conv_accel, in the user's layouts and `dtype`;
    None when the accelerator does not take it (then the NumPy kernels run)."""
    nhwc = a.data_layout == L.NHWC

    def nchw(t: np.ndarray) -> np.ndarray:
        return t.transpose(0, 3, 1, 2) if nhwc else t

    def oihw(t):
        return t.transpose(3, 2, 0, 1) if a.weights_layout == L.HWIO else t

    def nchw_shape(s):
        return (s[0], s[3], s[1], s[2]) if nhwc else tuple(s)

    pads = ((a.pads[0], a.pads[1]), (a.pads[2], a.pads[3]))
    if op == "forward":
        y = conv_accel.forward(nchw(first), oihw(second), a.stride, a.dilation, pads, a.groups,
                               nchw_shape(a.out_shape)[2:])
        perm = (0, 2, 3, 1) if nhwc else None
    elif op == "data" and _hwio_flip_ok(first, second, a):
        # deep HWIO layers: the data gradient as a forward correlation of dy with the flipped
        # kernel, I and O swapped; its channels-last weights [I, kH, kW, O] are a copy of
        # O-long runs of the HWIO array (a cheap block copy), not a transposition
        kh, kw = second.shape[:2]
        (ry, rx) = a.dilation
        wf = second[::-1, ::-1].transpose(2, 0, 1, 3)  # [I, kH, kW, O]
        y = conv_accel.forward(nchw(first), np.ascontiguousarray(wf).transpose(0, 3, 1, 2),
                               (1, 1), a.dilation,
                               ((ry * (kh - 1) - a.pads[0],) * 2, (rx * (kw - 1) - a.pads[2],) * 2),
                               1, nchw_shape(a.out_shape)[2:])
        perm = (0, 2, 3, 1)
    elif op == "data":
        y = conv_accel.data_gradient(nchw(first), oihw(second), nchw_shape(a.out_shape),
                                     a.stride, a.dilation, pads, a.groups, nhwc)
        perm = (0, 2, 3, 1) if nhwc else None
    else:
        s = a.out_shape
        if a.weights_layout == L.HWIO and int(np.prod(s)) >= second.size:
            # torch returns weights with O outermost, so HWIO costs a transposition of the
            # result; when the weights outweigh the source (deep layers: 4x512x7x7 -> 512,
            # 3x3), NumPy's GEMM, which yields HWIO as it goes, is the faster (0.7x vs 1.6x)
            return None
        w_shape = (s[3], s[2], s[0], s[1]) if a.weights_layout == L.HWIO else s
        y = conv_accel.weights_gradient(nchw(first), nchw(second), w_shape, a.stride,
                                        a.dilation, pads, a.groups)
        perm = (2, 3, 1, 0) if a.weights_layout == L.HWIO else None
    if y is None:
        return None
    if perm is not None:
        y = y.transpose(perm)
    return y if y.dtype == dtype and is_canonical(y) else _finish(y, None, dtype)


def _hwio_flip_ok(dy: np.ndarray, w: np.ndarray, a: Conv2DAttrs) -> bool:
    """The data gradient of a stride-1, one-group NHWC/HWIO convolution with symmetric
    paddings no wider than the dilated kernel, whose weights outweigh the incoming gradient."""
    if not (a.data_layout == L.NHWC and a.weights_layout == L.HWIO and a.groups == 1
            and a.stride == (1, 1) and w.size >= dy.size):
        return False
    (pt, pb, pl, pr), (ry, rx) = a.pads, a.dilation
    return pt == pb <= ry * (w.shape[0] - 1) and pl == pr <= rx * (w.shape[1] - 1)


def _padded(x_nhwc: np.ndarray, a: Conv2DAttrs, wd: np.dtype) -> np.ndarray:
    """The zero-padded source in the working dtype, [N, H+pt+pb, W+pl+pr, C] (one copy), with
    canonical C-order strides (the tap views below are built from them)."""
    pt, pb, pl, pr = a.pads
    n, h, w, c = x_nhwc.shape
    if not (pt or pb or pl or pr) and x_nhwc.dtype == wd and is_canonical(x_nhwc):
        return x_nhwc
    xp = np.zeros((n, h + pt + pb, w + pl + pr, c), wd)
    xp[:, pt:pt + h, pl:pl + w, :] = x_nhwc
    return xp


def _tap(xp: np.ndarray, p: int, q: int, ho: int, wo: int, a: Conv2DAttrs) -> np.ndarray:
    (sy, sx), (ry, rx) = a.stride, a.dilation
    return xp[:, p * ry: p * ry + sy * (ho - 1) + 1: sy, q * rx: q * rx + sx * (wo - 1) + 1: sx]


def _taps(xp: np.ndarray, kh: int, kw: int, ho: int, wo: int, stride, dilation) -> np.ndarray:
    """Every tap as a zero-copy view: [N, Ho, Wo, kH, kW, C] (overlapping strides) of `xp`,
    which must have canonical strides (`_padded` makes them)."""
    assert is_canonical(xp)
    n, _, _, c = xp.shape
    sn, sh, sw, sc = xp.strides
    (sy, sx), (ry, rx) = stride, dilation
    return as_strided(xp, (n, ho, wo, kh, kw, c), (sn, sy * sh, sx * sw, ry * sh, rx * sw, sc),
                      writeable=False)


_COL_BYTES = 64 << 20


def _im2col(xp: np.ndarray, kh: int, kw: int, ho: int, wo: int, g: int, a: Conv2DAttrs
            ) -> np.ndarray:
    """[N*Ho*Wo, G, kH*kW*Cg]: every tap of every group, side by side."""
    n, hp, wp, c = xp.shape
    cg = c // g
    m = n * ho * wo
    (sy, sx), (ry, rx) = a.stride, a.dilation
    assert is_canonical(xp)  # the runs below are views built from its strides
    if kh == kw == 1 and sy == sx == 1 and (ho, wo) == (hp, wp):
        return xp.reshape(m, g, cg)  # a 1x1 kernel: the source itself
    if g == 1 and rx == 1:  # the kW taps of a row are one run of kW*C values
        col = np.empty((n, ho, wo, kh, kw * c), xp.dtype)
        sn, sh, sw, sc = xp.strides
        for p in range(kh):
            run = as_strided(xp[:, p * ry:], (n, ho, wo, kw * c), (sn, sy * sh, sx * sw, sc),
                             writeable=False)
            col[:, :, :, p, :] = run
        return col.reshape(m, 1, kh * kw * c)
    col = np.empty((n, ho, wo, g, kh, kw, cg), xp.dtype)
    for p in range(kh):
        for q in range(kw):
            col[:, :, :, :, p, q, :] = _tap(xp, p, q, ho, wo, a).reshape(n, ho, wo, g, cg)
    return col.reshape(m, g, kh * kw * cg)


def _batch_chunks(n: int, per_sample_bytes: int) -> list[slice]:
    """Slices of the batch such that each im2col stays below _COL_BYTES."""
    step = max(1, _COL_BYTES // max(per_sample_bytes, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)] or [slice(0, 0)]


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


def _gemm_forward(xp: np.ndarray, w_hwio: np.ndarray, g: int, ho: int, wo: int,
                  a: Conv2DAttrs, wd: np.dtype) -> np.ndarray:
    """y [N, Ho, Wo, O] = im2col(xp) @ w, one GEMM per group and batch chunk."""
    n = xp.shape[0]
    kh, kw, cg, o = w_hwio.shape
    og, k = o // g, kh * kw * cg
    wg = _row_weights(w_hwio, g, wd).transpose(1, 0, 2, 3).reshape(g, k, og)
    y = np.empty((n, ho, wo, g, og), wd)
    for b in _batch_chunks(n, ho * wo * g * k * wd.itemsize):
        nb = b.stop - b.start
        col = _im2col(xp[b], kh, kw, ho, wo, g, a).transpose(1, 0, 2)  # [G, M, K]
        _bmm(col, wg, out=y[b].reshape(nb * ho * wo, g, og).transpose(1, 0, 2))
    return y.reshape(n, ho, wo, o)


def _nchw_pointwise(a: Conv2DAttrs, kh: int, kw: int) -> bool:
    """A 1x1, stride-1, unpadded NCHW convolution: per image one [O, C] @ [C, H*W] product,
    with no layout change at all."""
    return (a.data_layout == L.NCHW and kh == kw == 1 and a.stride == (1, 1)
            and not any(a.pads))


def _pointwise_weights(w: np.ndarray, a: Conv2DAttrs, wd: np.dtype) -> np.ndarray:
    """1x1 weights as [G, Og, Cg]."""
    g = a.groups
    if a.weights_layout == L.OIHW:
        o, cg = w.shape[:2]
        return np.asarray(w, dtype=wd).reshape(g, o // g, cg)
    cg, o = w.shape[2:]
    return np.asarray(w, dtype=wd).reshape(cg, g, o // g).transpose(1, 2, 0)


@kernel("convolution2D")
def convolution2D(x: np.ndarray, w: np.ndarray, a: Conv2DAttrs) -> np.ndarray:
    if _degenerate(a, x, w):
        return np.zeros(a.out_shape, x.dtype)
    wd = _work_dtype(x.dtype)
    if conv_accel.usable(wd) and (y := _accel("forward", x, w, a, x.dtype)) is not None:
        return y
    if _nchw_pointwise(a, *_hwio(w, a.weights_layout).shape[:2]):
        n, c, h, wdt = x.shape
        x4 = np.asarray(x, dtype=wd).reshape(n, a.groups, c // a.groups, h * wdt)
        y = np.matmul(_pointwise_weights(w, a, wd), x4)  # [N, G, Og, H*W]
        return _finish(y.reshape(a.out_shape), None, x.dtype)
    x_nhwc, w_hwio = _nhwc(x, a.data_layout), _hwio(w, a.weights_layout)
    n = x_nhwc.shape[0]
    kh, kw, cg, o = w_hwio.shape
    g = a.groups
    og = o // g
    ho, wo = _out_hw(a)
    xp = _padded(x_nhwc, a, wd)
    if g > 1 and cg == 1:  # depthwise: one multiply-accumulate over zero-copy tap views
        # einsum is fast only on contiguous operands (the views of the taps aside)
        wt = np.ascontiguousarray(w_hwio, dtype=wd).reshape(kh, kw, g, og)
        v = _taps(xp, kh, kw, ho, wo, a.stride, a.dilation)
        if og == 1:
            y = np.einsum("pqc,nhwpqc->nhwc", wt[..., 0], v)
        else:
            y = np.einsum("pqcm,nhwpqc->nhwcm", wt, v).reshape(n, ho, wo, o)
    else:
        y = _gemm_forward(xp, w_hwio, g, ho, wo, a, wd)
    return _finish(y, _data_perm(a), x.dtype)


@kernel("convolution2DDataGradient")
def convolution2DDataGradient(dy: np.ndarray, w: np.ndarray, shape_tensor: np.ndarray | None,
                              a: Conv2DAttrs) -> np.ndarray:
    if _degenerate(a, dy, w):
        return np.zeros(a.out_shape, dy.dtype)
    wd = _work_dtype(dy.dtype)
    if conv_accel.usable(wd) and (dx := _accel("data", dy, w, a, dy.dtype)) is not None:
        return dx
    if _nchw_pointwise(a, *_hwio(w, a.weights_layout).shape[:2]):
        n, o, h, wdt = dy.shape
        dy4 = np.asarray(dy, dtype=wd).reshape(n, a.groups, o // a.groups, h * wdt)
        dx = np.matmul(_pointwise_weights(w, a, wd).transpose(0, 2, 1), dy4)
        return _finish(dx.reshape(a.out_shape), None, dy.dtype)
    dy_nhwc, w_hwio = _nhwc(dy, a.data_layout), _hwio(w, a.weights_layout)
    n, ho, wo, o = dy_nhwc.shape
    kh, kw, cg, _ = w_hwio.shape
    g = a.groups
    og = o // g
    h, wdt = _out_hw(a)
    c = g * cg
    pt, pb, pl, pr = a.pads
    depthwise = g > 1 and cg == 1
    if not depthwise and a.stride == (1, 1):
        # stride 1: dx[h] = sum_p dy[h + pt - p*ry] w[p] is a forward correlation of dy, padded
        # by the dilated kernel extent, with the flipped kernel whose I/O are swapped per group
        (ry, rx) = a.dilation
        ey, ex = (kh - 1) * ry, (kw - 1) * rx
        dyp = np.zeros((n, h + ey, wdt + ex, o), wd)
        oy, ox = ey - pt, ex - pl  # where dy[0, 0] lands (may be < 0: padding > extent)
        sy0, sx0 = max(0, -oy), max(0, -ox)
        hh, ww = min(ho - sy0, h + ey - max(oy, 0)), min(wo - sx0, wdt + ex - max(ox, 0))
        if hh > 0 and ww > 0:
            dyp[:, max(oy, 0):max(oy, 0) + hh, max(ox, 0):max(ox, 0) + ww] = \
                dy_nhwc[:, sy0:sy0 + hh, sx0:sx0 + ww]
        w_t = w_hwio[::-1, ::-1].reshape(kh, kw, cg, g, og).transpose(0, 1, 4, 3, 2)
        dx = _gemm_forward(dyp, w_t.reshape(kh, kw, og, g * cg), g, h, wdt,
                           Conv2DAttrs((1, 1), a.dilation, (0, 0, 0, 0), g, L.NHWC, L.HWIO,
                                       ()), wd)
        return _finish(dx, _data_perm(a), dy.dtype)
    hp, wp = h + pt + pb, wdt + pl + pr
    dxp = (np.empty if depthwise else np.zeros)((n, hp, wp, c), wd)
    if depthwise:
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
    else:  # per batch chunk: GEMM to columns, then col2im (an add per tap)
        k = kh * kw * cg
        wgt = _row_weights(w_hwio, g, wd).transpose(1, 3, 0, 2).reshape(g, og, k)
        dy5 = dy_nhwc.reshape(n, ho, wo, g, og)
        for b in _batch_chunks(n, ho * wo * g * k * wd.itemsize):
            nb = b.stop - b.start
            dy3 = np.asarray(dy5[b], dtype=wd).reshape(nb * ho * wo, g, og).transpose(1, 0, 2)
            dcol = _bmm(dy3, wgt)  # [G, M, kH*kW*Cg]
            dcol = dcol.reshape(g, nb, ho, wo, kh, kw, cg).transpose(1, 2, 3, 0, 4, 5, 6)
            dxb = dxp[b]
            for p in range(kh):
                for q in range(kw):
                    tap = _tap(dxb, p, q, ho, wo, a).reshape(nb, ho, wo, g, cg)
                    tap += dcol[:, :, :, :, p, q, :]
    dx = dxp[:, pt:pt + h, pl:pl + wdt, :]
    return _finish(dx, _data_perm(a), dy.dtype)


@kernel("convolution2DWeightsGradient")
def convolution2DWeightsGradient(dy: np.ndarray, x: np.ndarray,
                                 shape_tensor: np.ndarray | None, a: Conv2DAttrs) -> np.ndarray:
    if _degenerate(a, dy, x):
        return np.zeros(a.out_shape, dy.dtype)
    wd = _work_dtype(dy.dtype)
    if conv_accel.usable(wd) and (dw := _accel("weights", dy, x, a, dy.dtype)) is not None:
        return dw
    dy_nhwc, x_nhwc = _nhwc(dy, a.data_layout), _nhwc(x, a.data_layout)
    n, ho, wo, o = dy_nhwc.shape
    g = a.groups
    og = o // g
    if a.weights_layout == L.HWIO:
        kh, kw, cg, _ = a.out_shape
    else:
        _, cg, kh, kw = a.out_shape
    if _nchw_pointwise(a, kh, kw):  # sum over images of [Og, H*W] @ [H*W, Cg], per group
        nn, c, h, wdt = x.shape
        x4 = np.asarray(x, dtype=wd).reshape(nn, g, cg, h * wdt)
        dy4 = np.asarray(dy, dtype=wd).reshape(nn, g, og, h * wdt)
        dwg = np.matmul(dy4, x4.transpose(0, 1, 3, 2)).sum(axis=0)  # [G, Og, Cg]
        if a.weights_layout == L.OIHW:
            return _finish(dwg.reshape(a.out_shape), None, dy.dtype)
        return _finish(dwg.transpose(2, 0, 1).reshape(a.out_shape), None, dy.dtype)
    xp = _padded(x_nhwc, a, wd)
    if g > 1 and cg == 1:  # depthwise: one reduction over n, h, w of zero-copy tap views
        dy5 = np.ascontiguousarray(dy_nhwc, dtype=wd).reshape(n, ho, wo, g, og)
        v = _taps(xp, kh, kw, ho, wo, a.stride, a.dilation)
        if og == 1:
            dw = np.einsum("nhwpqc,nhwc->pqc", v, dy5[..., 0]).reshape(kh, kw, 1, o)
        else:
            dw = np.einsum("nhwpqc,nhwcm->pqcm", v, dy5).reshape(kh, kw, 1, o)
    else:  # im2col (in batch chunks), dW += col^T @ dy, one GEMM per group and chunk
        k = kh * kw * cg
        dy5 = dy_nhwc.reshape(n, ho, wo, g, og)
        dwg = None
        for b in _batch_chunks(n, ho * wo * g * k * wd.itemsize):
            nb = b.stop - b.start
            col = _im2col(xp[b], kh, kw, ho, wo, g, a)  # [M, G, K]
            dy3 = np.asarray(dy5[b], dtype=wd).reshape(nb * ho * wo, g, og)
            part = _bmm(col.transpose(1, 2, 0), dy3.transpose(1, 0, 2))  # [G, K, Og]
            dwg = part if dwg is None else np.add(dwg, part, out=dwg)
        dw = dwg.reshape(g, kh, kw, cg, og).transpose(1, 2, 3, 0, 4).reshape(kh, kw, cg, o)
    return _finish(dw, None if a.weights_layout == L.HWIO else (3, 2, 0, 1), dy.dtype)


# ---------------------------------------------------------------------------- issue 18
# The transposed 2-D ops are the 2-D ops with their roles renamed (ops/conv_extra.py).
@kernel("convolutionTranspose2D")
def convolutionTranspose2D(x, w, shape_tensor, a: Conv2DAttrs):
    return convolution2DDataGradient(x, w, shape_tensor, a)


@kernel("convolutionTranspose2DDataGradient")
def convolutionTranspose2DDataGradient(dy, w, shape_tensor, a: Conv2DAttrs):
    return convolution2D(dy, w, a)


@kernel("convolutionTranspose2DWeightsGradient")
def convolutionTranspose2DWeightsGradient(dy, x, shape_tensor, a: Conv2DAttrs):
    return convolution2DWeightsGradient(x, dy, shape_tensor, a)


# N-D convolutions (3-D, depthwise 2-D / 3-D) in the canonical form of ops/conv_extra.py:
# data [B, C, *S], weights [O, Cg, *K], g groups. With T = prod(K) taps and M = prod(So):
#     tap(t)   = xp[:, :, t0*r0 : t0*r0 + s0*(So0-1) + 1 : s0, ...]      # [B, C, *So]
#     col      = [tap(t) for t] as [B, G, Cg*T, M]                      (one copy per tap)
#     forward  y  = w[G, Og, Cg*T] @ col                                 one batched GEMM
#     weights  dw = sum_b dy[b] @ col[b]^T                               one GEMM over B*M
#     data     dcol = w^T @ dy;  dxp[tap(t)] += dcol[:, :, :, t]         GEMM, then col2im
# The only Python loops are over the taps (and batch chunks keeping col below _COL_BYTES).
# Only basic slicing builds views, so any input strides are fine.
from ...ops.conv_extra import (  # noqa: E402
    ConvNDAttrs,
    as_depthwise_2d,
    from_canonical_array,
    to_canonical_array,
)


def _nd_taps(a: ConvNDAttrs, k):
    import itertools

    return list(itertools.product(*(range(n) for n in k)))


def _nd_tap_index(t, a: ConvNDAttrs, so):
    return (slice(None), slice(None), *(
        slice(ti * r, ti * r + s * (o - 1) + 1, s)
        for ti, r, s, o in zip(t, a.dilation, a.stride, so)))


def _nd_padded(xc: np.ndarray, a: ConvNDAttrs, wd, so, k) -> np.ndarray:
    """The zero-padded source, large enough for every window."""
    need = [max(pb + n + pe, (o - 1) * s + r * (kk - 1) + 1 if o > 0 else 0)
            for (pb, pe), n, o, s, r, kk in zip(a.pads, xc.shape[2:], so, a.stride,
                                                a.dilation, k)]
    xp = np.zeros((*xc.shape[:2], *need), wd)
    xp[(slice(None), slice(None), *(slice(pb, pb + n) for (pb, _), n in
                                    zip(a.pads, xc.shape[2:])))] = xc
    return xp


def _nd_col(xp: np.ndarray, a: ConvNDAttrs, so, k) -> np.ndarray:
    """[B, G, Cg*T, M] (channel-major, then tap)."""
    b, c = xp.shape[:2]
    g = a.groups
    taps = _nd_taps(a, k)
    m = int(np.prod(so)) if so else 1
    col = np.empty((b, c, len(taps), *so), xp.dtype)
    for i, t in enumerate(taps):
        col[:, :, i] = xp[_nd_tap_index(t, a, so)]
    return col.reshape(b, g, (c // g) * len(taps), m)


def _nd_chunks(b: int, per: int) -> list[slice]:
    return _batch_chunks(b, per)


def _nd_forward(xc: np.ndarray, wc: np.ndarray, a: ConvNDAttrs, wd) -> np.ndarray:
    b, o = xc.shape[0], wc.shape[0]
    so = a.y_c[2:]
    k = wc.shape[2:]
    g = a.groups
    wm = np.asarray(wc, wd).reshape(g, o // g, -1)  # [G, Og, Cg*T]
    xp = _nd_padded(xc, a, wd, so, k)
    y = np.empty((b, g, o // g, int(np.prod(so))), wd)
    per = xc.shape[1] * int(np.prod(k)) * int(np.prod(so)) * wd.itemsize
    for ch in _nd_chunks(b, per):
        np.matmul(wm[None], _nd_col(xp[ch], a, so, k), out=y[ch])
    return y.reshape(b, o, *so)


def _nd_weights_grad(dyc: np.ndarray, xc: np.ndarray, a: ConvNDAttrs, wd) -> np.ndarray:
    o, cg, *k = a.w_c
    so = a.y_c[2:]
    g = a.groups
    b = xc.shape[0]
    m = int(np.prod(so))
    xp = _nd_padded(xc, a, wd, so, k)
    dw = np.zeros((g, o // g, cg * int(np.prod(k))), wd)
    dy4 = np.asarray(dyc, wd).reshape(b, g, o // g, m)
    per = xc.shape[1] * int(np.prod(k)) * m * wd.itemsize
    for ch in _nd_chunks(b, per):
        col = _nd_col(xp[ch], a, so, k)  # [b, G, K, M]
        nb = col.shape[0]
        lhs = dy4[ch].transpose(1, 2, 0, 3).reshape(g, o // g, nb * m)
        rhs = col.transpose(1, 0, 3, 2).reshape(g, nb * m, col.shape[2])
        dw += np.matmul(lhs, rhs)
    return dw.reshape(o, cg, *k)


def _nd_data_grad(dyc: np.ndarray, wc: np.ndarray, a: ConvNDAttrs, wd) -> np.ndarray:
    b, c, *s_in = a.x_c
    o, cg, *k = wc.shape
    so = a.y_c[2:]
    g = a.groups
    taps = _nd_taps(a, k)
    m = int(np.prod(so))
    wt = np.asarray(wc, wd).reshape(g, o // g, cg * len(taps)).transpose(0, 2, 1)  # [G, K, Og]
    dy4 = np.asarray(dyc, wd).reshape(b, g, o // g, m)
    need = [max(pb + n + pe, (oo - 1) * st + r * (kk - 1) + 1 if oo > 0 else 0)
            for (pb, pe), n, oo, st, r, kk in zip(a.pads, s_in, so, a.stride, a.dilation, k)]
    dxp = np.zeros((b, c, *need), wd)
    per = c * len(taps) * m * wd.itemsize
    for ch in _nd_chunks(b, per):
        dcol = np.matmul(wt[None], dy4[ch])  # [b, G, Cg*T, M]
        nb = dcol.shape[0]
        dcol = dcol.reshape(nb, c, len(taps), *so)
        part = dxp[ch]
        for i, t in enumerate(taps):
            part[_nd_tap_index(t, a, so)] += dcol[:, :, i]
    return dxp[(slice(None), slice(None), *(slice(pb, pb + n) for (pb, _), n in
                                            zip(a.pads, s_in)))]


def _nd_channels_last(c: np.ndarray) -> bool:
    """A canonical [B, C, *S] view whose channels are the fastest axis (a channels-last user
    layout): the accelerator then returns its data gradient channels-last too."""
    return c.ndim > 2 and c.shape[1] > 1 and c.strides[1] == c.itemsize


def _nd_finish(yc: np.ndarray, perm, out_shape, dtype) -> np.ndarray:
    y = from_canonical_array(yc, perm, out_shape)
    out = np.empty(y.shape, dtype)
    np.copyto(out, y, casting="unsafe")
    return out


def _nd_empty(a: ConvNDAttrs, *arrays) -> bool:
    return 0 in a.out_shape or any(t.size == 0 for t in arrays) or 0 in a.x_c \
        or 0 in a.w_c or 0 in a.y_c


def _w2d(w, a: ConvNDAttrs) -> np.ndarray:
    """Depthwise weights as OIHW [C*M, 1, kH, kW] (for the 2-D kernels)."""
    return to_canonical_array(w, a.weights_perm, a.w_c).reshape(a.w_c[0], 1, a.w_c[-2],
                                                                 a.w_c[-1])


def _nd_fwd_kernel(x, w, a: ConvNDAttrs):
    if _nd_empty(a, x, w):
        return np.zeros(a.out_shape, x.dtype)
    a2 = as_depthwise_2d(a)  # depthwise 2-D: the 2-D kernels' zero-copy tap views
    if a2 is not None:
        return convolution2D(x, _w2d(w, a), a2)
    wd = _work_dtype(x.dtype)
    xc = to_canonical_array(x, a.data_perm, a.x_c)
    wc = to_canonical_array(w, a.weights_perm, a.w_c)
    if conv_accel.usable(wd):
        y = conv_accel.forward(xc, wc, a.stride, a.dilation, a.pads, a.groups, a.y_c[2:])
        if y is not None:
            return _nd_finish(y, a.data_perm, a.out_shape, x.dtype)
    return _nd_finish(_nd_forward(xc, wc, a, wd), a.data_perm, a.out_shape, x.dtype)


def _nd_dgrad_kernel(dy, w, shape_tensor, a: ConvNDAttrs):
    if _nd_empty(a, dy, w):
        return np.zeros(a.out_shape, dy.dtype)
    a2 = as_depthwise_2d(a)
    if a2 is not None:
        return convolution2DDataGradient(dy, _w2d(w, a), None, a2)
    wd = _work_dtype(dy.dtype)
    dyc = to_canonical_array(dy, a.data_perm, a.y_c)
    wc = to_canonical_array(w, a.weights_perm, a.w_c)
    if conv_accel.usable(wd):
        dx = conv_accel.data_gradient(dyc, wc, a.x_c, a.stride, a.dilation, a.pads, a.groups,
                                      _nd_channels_last(dyc))
        if dx is not None:
            return _nd_finish(dx, a.data_perm, a.out_shape, dy.dtype)
    return _nd_finish(_nd_data_grad(dyc, wc, a, wd), a.data_perm, a.out_shape, dy.dtype)


def _nd_wgrad_kernel(dy, x, shape_tensor, a: ConvNDAttrs):
    if _nd_empty(a, dy, x):
        return np.zeros(a.out_shape, dy.dtype)
    a2 = as_depthwise_2d(a)
    if a2 is not None:
        wc = (a.w_c[0], 1, a.w_c[-2], a.w_c[-1])
        dw = convolution2DWeightsGradient(dy, x, None, dataclasses.replace(a2, out_shape=wc))
        return _nd_finish(dw.reshape(a.w_c), a.weights_perm, a.out_shape, dy.dtype)
    wd = _work_dtype(dy.dtype)
    dyc = to_canonical_array(dy, a.data_perm, a.y_c)
    xc = to_canonical_array(x, a.data_perm, a.x_c)
    if conv_accel.usable(wd):
        dw = conv_accel.weights_gradient(dyc, xc, a.w_c, a.stride, a.dilation, a.pads, a.groups)
        if dw is not None:
            return _nd_finish(dw, a.weights_perm, a.out_shape, dy.dtype)
    return _nd_finish(_nd_weights_grad(dyc, xc, a, wd), a.weights_perm, a.out_shape, dy.dtype)


for _f in ("convolution3D", "depthwiseConvolution2D", "depthwiseConvolution3D"):
    kernel(_f)(_nd_fwd_kernel)
    kernel(_f + "DataGradient")(_nd_dgrad_kernel)
    kernel(_f + "WeightsGradient")(_nd_wgrad_kernel)
