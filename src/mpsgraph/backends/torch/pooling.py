"""torch kernels of the pooling family (semantics: backends/numpy/pooling.py).

Data is viewed as NCHW (an NHWC tensor is permuted as a view), padded once into a float32
working tensor large enough for every window (ceilMode windows may reach past the padding),
and each of the kH*kW taps is a strided view [N, C, Ho, Wo] of it:

    tap(p, q) = xp[:, :, p*ry : p*ry + sy*(Ho-1) + 1 : sy, q*rx : q*rx + sx*(Wo-1) + 1 : sx]

The forward ops use torch's max_pool2d / avg_pool2d where their semantics are the same (symmetric
padding of at most half the kernel, the same output size; avg: no dilation); every other case,
and the gradients (first maximum in window order gets the gradient), loop over the taps.
float16 / bFloat16 are computed in float32 and rounded once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...ops.pooling import Pool2DAttrs
from ...types import TensorNamedDataLayout as L
from . import device_table, kernel
from .arithmetic import F32

_NEG_INF = float("-inf")


def _nchw(x: torch.Tensor, layout: L) -> torch.Tensor:
    return x if layout == L.NCHW else x.permute(0, 3, 1, 2)


def _finish(y: torch.Tensor, a: Pool2DAttrs, dtype: torch.dtype) -> torch.Tensor:
    """To the user's layout and dtype, contiguous."""
    if a.data_layout == L.NHWC:
        y = y.permute(0, 2, 3, 1)
    return y.to(dtype, memory_format=torch.contiguous_format, copy=True)


def _padded(x: torch.Tensor, a: Pool2DAttrs, fill: float) -> torch.Tensor:
    n, c, h, w = x.shape
    hp, wp = a.work_hw
    pt, _, pl, _ = a.pads
    xp = torch.full((n, c, hp, wp), fill, dtype=F32, device=x.device)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    return xp


def _tap(xp: torch.Tensor, p: int, q: int, a: Pool2DAttrs) -> torch.Tensor:
    return xp[(slice(None), slice(None), *a.tap(p, q))]


def _axis_count(n_out: int, k: int, s: int, r: int, before: int, lo: int, hi: int,
                device) -> torch.Tensor:
    """Per output index along one axis, the number of taps whose position is in [lo, hi)."""
    pos = (torch.arange(n_out, device=device)[:, None] * s - before
           + torch.arange(k, device=device)[None, :] * r)
    return ((pos >= lo) & (pos < hi)).sum(dim=1)


def _inv_counts(a: Pool2DAttrs, device) -> torch.Tensor:
    """[Ho, Wo] reciprocals of the average's divisors (0 for a window with no tap)."""
    (kh, kw), (sy, sx), (ry, rx) = a.kernel, a.stride, a.dilation
    (h, w), (ho, wo) = a.in_hw, a.out_hw
    pt, pb, pl, pr = a.pads
    if a.include_zero_pad:
        cy = _axis_count(ho, kh, sy, ry, pt, -pt, h + pb, device)
        cx = _axis_count(wo, kw, sx, rx, pl, -pl, w + pr, device)
    else:
        cy = _axis_count(ho, kh, sy, ry, pt, 0, h, device)
        cx = _axis_count(wo, kw, sx, rx, pl, 0, w, device)
    cnt = (cy[:, None] * cx[None, :]).to(F32)
    return torch.where(cnt > 0, 1.0 / torch.clamp_min(cnt, 1.0),
                       torch.zeros((), dtype=F32, device=device))


def _max(xp: torch.Tensor, a: Pool2DAttrs) -> torch.Tensor:
    kh, kw = a.kernel
    y = _tap(xp, 0, 0, a).clone()
    for p in range(kh):
        for q in range(kw):
            if p or q:
                y = torch.maximum(y, _tap(xp, p, q, a))  # propagates NaN
    return y


def _empty(x_nchw: torch.Tensor, a: Pool2DAttrs) -> bool:
    n, c = x_nchw.shape[:2]
    return not (n and c and a.out_hw[0] and a.out_hw[1])


def _torch_pool_args(a: Pool2DAttrs, dilated_ok: bool) -> dict | None:
    """Arguments for F.max_pool2d / F.avg_pool2d giving exactly this pooling, or None."""
    (kh, kw), (sy, sx), (ry, rx) = a.kernel, a.stride, a.dilation
    pt, pb, pl, pr = a.pads
    if pt != pb or pl != pr or 2 * pt > kh or 2 * pl > kw:
        return None
    if not dilated_ok and (ry != 1 or rx != 1):
        return None
    (h, w), (ho, wo) = a.in_hw, a.out_hw

    def size(n, k, s, r, p, ceil):
        span = n + 2 * p - (r * (k - 1) + 1)
        if span < 0:
            return -1
        out = (-(-span // s) if ceil else span // s) + 1
        if ceil and (out - 1) * s >= n + p:
            out -= 1
        return out

    for ceil in (False, True):
        if (size(h, kh, sy, ry, pt, ceil), size(w, kw, sx, rx, pl, ceil)) == (ho, wo):
            return dict(kernel_size=(kh, kw), stride=(sy, sx), padding=(pt, pl), ceil_mode=ceil)
    return None


@kernel("maxPooling2D")
def maxPooling2D(x: torch.Tensor, a: Pool2DAttrs) -> torch.Tensor:
    xn = _nchw(x, a.data_layout)
    if _empty(xn, a):
        return _finish(torch.zeros((*xn.shape[:2], *a.out_hw), dtype=F32, device=x.device),
                       a, x.dtype)
    args = _torch_pool_args(a, dilated_ok=True)
    if args is not None:
        return _finish(F.max_pool2d(xn.to(F32), dilation=a.dilation, **args), a, x.dtype)
    return _finish(_max(_padded(xn, a, _NEG_INF), a), a, x.dtype)


@kernel("avgPooling2D")
def avgPooling2D(x: torch.Tensor, a: Pool2DAttrs) -> torch.Tensor:
    xn = _nchw(x, a.data_layout)
    if _empty(xn, a):
        return _finish(torch.zeros((*xn.shape[:2], *a.out_hw), dtype=F32, device=x.device),
                       a, x.dtype)
    args = _torch_pool_args(a, dilated_ok=False)
    if args is not None:
        y = F.avg_pool2d(xn.to(F32), count_include_pad=a.include_zero_pad, **args)
        return _finish(y, a, x.dtype)
    xp = _padded(xn, a, 0.0)
    kh, kw = a.kernel
    s = _tap(xp, 0, 0, a).clone()
    for p in range(kh):
        for q in range(kw):
            if p or q:
                s += _tap(xp, p, q, a)
    return _finish(s * _inv_counts(a, x.device), a, x.dtype)


def _to_source(dxp: torch.Tensor, a: Pool2DAttrs, dtype: torch.dtype) -> torch.Tensor:
    h, w = a.in_hw
    pt, _, pl, _ = a.pads
    return _finish(dxp[:, :, pt:pt + h, pl:pl + w], a, dtype)


@kernel("maxPooling2DGradient")
def maxPooling2DGradient(dy: torch.Tensor, x: torch.Tensor, a: Pool2DAttrs) -> torch.Tensor:
    xn = _nchw(x, a.data_layout)
    if _empty(xn, a):
        return _finish(torch.zeros(xn.shape, dtype=F32, device=x.device), a, dy.dtype)
    xp = _padded(xn, a, _NEG_INF)
    y = _max(xp, a)
    g = _nchw(dy, a.data_layout).to(F32)
    y_nan = torch.isnan(y)
    # only taps inside the source may receive the gradient (a padding tap equals a -inf max)
    inside = torch.zeros((1, 1, *xp.shape[2:]), dtype=torch.bool, device=x.device)
    h, w = a.in_hw
    pt, _, pl, _ = a.pads
    inside[:, :, pt:pt + h, pl:pl + w] = True
    taken = torch.zeros(y.shape, dtype=torch.bool, device=x.device)
    dxp = torch.zeros(xp.shape, dtype=F32, device=x.device)
    zero = torch.zeros((), dtype=F32, device=x.device)
    kh, kw = a.kernel
    for p in range(kh):
        for q in range(kw):
            t = _tap(xp, p, q, a)
            hit = ((t == y) | (y_nan & torch.isnan(t))) & _tap(inside, p, q, a) & ~taken
            taken |= hit
            _tap(dxp, p, q, a).add_(torch.where(hit, g, zero))
    return _to_source(dxp, a, dy.dtype)


@kernel("avgPooling2DGradient")
def avgPooling2DGradient(dy: torch.Tensor, x: torch.Tensor, a: Pool2DAttrs) -> torch.Tensor:
    xn = _nchw(x, a.data_layout)
    if _empty(xn, a):
        return _finish(torch.zeros(xn.shape, dtype=F32, device=x.device), a, dy.dtype)
    g = _nchw(dy, a.data_layout).to(F32) * _inv_counts(a, x.device)
    n, c = g.shape[:2]
    dxp = torch.zeros((n, c, *a.work_hw), dtype=F32, device=x.device)
    kh, kw = a.kernel
    for p in range(kh):
        for q in range(kw):
            _tap(dxp, p, q, a).add_(g)
    return _to_source(dxp, a, dy.dtype)



# ---------------------------------------------------------------------------- issue 18
# 4-D pooling, max pooling with indices, the gradient from indices, imToCol / colToIm: the
# N-D window kernels of backends/_window_nd.py (written once for both backends).
import numpy as np  # noqa: E402

from .. import _window_nd as W  # noqa: E402
from . import TORCH_DTYPES  # noqa: E402


def _tdt(dtype):
    """A NumPy dtype (or torch dtype, or bool) as a torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is bool:
        return torch.bool
    from ...types import DataType

    return TORCH_DTYPES[DataType.from_numpy(np.dtype(dtype))]


class _TorchOps:
    f32 = F32

    @staticmethod
    def full(shape, value, like=None, dtype=np.float32):
        return torch.full(tuple(shape), value, dtype=_tdt(dtype), device=like.device)

    @staticmethod
    def work(x):
        return x.to(F32)

    @staticmethod
    def where(c, a, b):
        dev = c.device  # (a Python number is filled on the device: no host-to-device copy,
        # which a CUDA-graph capture does not allow)
        a = a if isinstance(a, torch.Tensor) else torch.full((), a, device=dev)
        b = b if isinstance(b, torch.Tensor) else torch.full((), b, device=dev)
        return torch.where(c, a, b)

    isnan = staticmethod(torch.isnan)
    sqrt = staticmethod(torch.sqrt)

    @staticmethod
    def index_table(rows, like=None):
        return device_table(np.asarray(rows, np.int64), like.device).reshape(len(rows), -1)

    @staticmethod
    def arange(n, like=None):
        return torch.arange(n, dtype=torch.int64, device=like.device)

    @staticmethod
    def to_int64(a):
        return a.to(torch.int64)

    @staticmethod
    def finish(y, dtype):
        return y.to(_tdt(dtype)).contiguous()

    @staticmethod
    def scatter_add(n, flat_idx, vals, like=None):
        out = torch.zeros(n, dtype=F32, device=like.device)
        return out.index_add_(0, flat_idx, vals.to(F32))

    @staticmethod
    def any(m) -> bool:
        return bool(m.any().item())

    @staticmethod
    def min_max(a):
        if a.numel() == 0:
            return 0, 0
        return int(a.min().item()), int(a.max().item())


def _inv(a, like):
    return device_table(W.inv_counts(a), like.device)


@kernel("maxPooling4D")
def maxPooling4D(x, a):
    return W.max_pool(_TorchOps, x, a, False, x.dtype)[0]


@kernel("maxPooling2DReturnIndices")
@kernel("maxPooling4DReturnIndices")
def maxPoolingReturnIndices(x, a):
    y, idx, _ = W.max_pool(_TorchOps, x, a, a.mode != 0, x.dtype)
    return y if a.mode == 0 else (y, idx)


@kernel("avgPooling4D")
def avgPooling4D(x, a):
    return W.avg_pool(_TorchOps, x, a, _inv(a, x), x.dtype)


@kernel("L2NormPooling4D")
def L2NormPooling4D(x, a):
    return W.l2_pool(_TorchOps, x, a, x.dtype)


@kernel("maxPooling4DGradient")
def maxPooling4DGradient(dy, x, a):
    return W.max_pool_gradient(_TorchOps, dy, x, a, dy.dtype)


@kernel("avgPooling4DGradient")
def avgPooling4DGradient(dy, x, a):
    return W.avg_pool_gradient(_TorchOps, dy, x, a, _inv(a, x), dy.dtype)


@kernel("L2NormPooling4DGradient")
def L2NormPooling4DGradient(dy, x, a):
    return W.l2_pool_gradient(_TorchOps, dy, x, a, dy.dtype)


def _from_indices(op):
    def run(dy, idx, shape_tensor, a):
        return W.max_pool_gradient_from_indices(_TorchOps, dy, idx, a, dy.dtype, op)
    return run


kernel("maxPooling2DGradientIndices")(_from_indices("maxPooling2DGradient"))
kernel("maxPooling4DGradientIndices")(_from_indices("maxPooling4DGradient"))


@kernel("imToCol")
def imToCol(x, a):
    return W.im_to_col(_TorchOps, x, a, x.dtype)


@kernel("colToIm")
def colToIm(col, a):
    wd = F32 if col.dtype.is_floating_point and col.dtype != torch.float64 else col.dtype
    return W.col_to_im(_TorchOps, col, a, col.dtype, wd)
