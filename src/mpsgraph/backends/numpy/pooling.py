"""NumPy kernels of the pooling family.

Data is viewed as NCHW (an NHWC array is transposed as a view, never copied), padded once into
a float32 working array large enough for every window (ceilMode windows may reach past the
padding), and each of the kH*kW taps is a strided view [N, C, Ho, Wo] of it:

    tap(p, q) = xp[:, :, p*ry : p*ry + sy*(Ho-1) + 1 : sy, q*rx : q*rx + sx*(Wo-1) + 1 : sx]

The only Python loops are over the taps. Window counts for the average are separable:
count[i, j] = cy[i] * cx[j]. float16 / bFloat16 are computed in float32 and rounded once.
Every kernel runs under np.errstate(all="ignore"), as the other NumPy kernels do: inf - inf,
inf * 0 (an empty window's gradient) and a half-type result that overflows give their IEEE
values without a RuntimeWarning.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ops.pooling import Pool2DAttrs
from ...types import TensorNamedDataLayout as L
from . import kernel

_F32 = np.dtype(np.float32)


def _quiet(fn):
    """`fn` under np.errstate(all="ignore") (IEEE results, no floating-point warnings)."""
    @functools.wraps(fn)
    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*args)
    return run


def _nchw(x: np.ndarray, layout: L) -> np.ndarray:
    return x if layout == L.NCHW else x.transpose(0, 3, 1, 2)


def _finish(y: np.ndarray, a: Pool2DAttrs, dtype: np.dtype) -> np.ndarray:
    """To the user's layout and dtype in one copy."""
    if a.data_layout == L.NHWC:
        y = y.transpose(0, 2, 3, 1)
    out = np.empty(y.shape, dtype)
    np.copyto(out, y, casting="unsafe")
    return out


def _padded(x: np.ndarray, a: Pool2DAttrs, fill: float) -> np.ndarray:
    n, c, h, w = x.shape
    hp, wp = a.work_hw
    pt, _, pl, _ = a.pads
    xp = np.full((n, c, hp, wp), fill, _F32)
    xp[:, :, pt:pt + h, pl:pl + w] = x
    return xp


def _tap(xp: np.ndarray, p: int, q: int, a: Pool2DAttrs) -> np.ndarray:
    return xp[(slice(None), slice(None), *a.tap(p, q))]


def _axis_count(n_out: int, k: int, s: int, r: int, before: int, lo: int, hi: int
                ) -> np.ndarray:
    """Per output index along one axis, the number of taps whose position is in [lo, hi)."""
    pos = np.arange(n_out)[:, None] * s - before + np.arange(k)[None, :] * r
    return ((pos >= lo) & (pos < hi)).sum(axis=1)


def _counts(a: Pool2DAttrs) -> np.ndarray:
    """[Ho, Wo] divisors of the average: taps inside the input (or the padded input)."""
    (kh, kw), (sy, sx), (ry, rx) = a.kernel, a.stride, a.dilation
    (h, w), (ho, wo) = a.in_hw, a.out_hw
    pt, pb, pl, pr = a.pads
    if a.include_zero_pad:
        cy = _axis_count(ho, kh, sy, ry, pt, -pt, h + pb)
        cx = _axis_count(wo, kw, sx, rx, pl, -pl, w + pr)
    else:
        cy = _axis_count(ho, kh, sy, ry, pt, 0, h)
        cx = _axis_count(wo, kw, sx, rx, pl, 0, w)
    return (cy[:, None] * cx[None, :]).astype(_F32)


def _max(xp: np.ndarray, a: Pool2DAttrs) -> np.ndarray:
    kh, kw = a.kernel
    y = _tap(xp, 0, 0, a).copy()
    for p in range(kh):
        for q in range(kw):
            if p or q:
                np.maximum(y, _tap(xp, p, q, a), out=y)  # propagates NaN
    return y


def _inv_counts(a: Pool2DAttrs) -> np.ndarray:
    cnt = _counts(a)
    with np.errstate(divide="ignore"):
        return np.where(cnt > 0, 1.0 / np.maximum(cnt, 1), 0.0).astype(_F32)


def _empty_out(x_nchw: np.ndarray, a: Pool2DAttrs, dtype: np.dtype) -> np.ndarray | None:
    """The (empty) result when some output dimension is 0, else None."""
    n, c = x_nchw.shape[:2]
    if n and c and a.out_hw[0] and a.out_hw[1]:
        return None
    return _finish(np.zeros((n, c, *a.out_hw), _F32), a, dtype)


def _empty_grad(x_nchw: np.ndarray, a: Pool2DAttrs, dtype: np.dtype) -> np.ndarray | None:
    """Zeros of the source's shape when the forward result is empty, else None."""
    n, c = x_nchw.shape[:2]
    if n and c and a.out_hw[0] and a.out_hw[1]:
        return None
    return _finish(np.zeros(x_nchw.shape, _F32), a, dtype)


@kernel("maxPooling2D")
@_quiet
def maxPooling2D(x: np.ndarray, a: Pool2DAttrs) -> np.ndarray:
    e = _empty_out(_nchw(x, a.data_layout), a, x.dtype)
    if e is not None:
        return e
    xp = _padded(_nchw(x, a.data_layout), a, -np.inf)
    return _finish(_max(xp, a), a, x.dtype)


@kernel("avgPooling2D")
@_quiet
def avgPooling2D(x: np.ndarray, a: Pool2DAttrs) -> np.ndarray:
    e = _empty_out(_nchw(x, a.data_layout), a, x.dtype)
    if e is not None:
        return e
    xp = _padded(_nchw(x, a.data_layout), a, 0.0)
    kh, kw = a.kernel
    s = _tap(xp, 0, 0, a).copy()
    for p in range(kh):
        for q in range(kw):
            if p or q:
                s += _tap(xp, p, q, a)
    s *= _inv_counts(a)
    return _finish(s, a, x.dtype)


def _scatter_to_source(dxp: np.ndarray, a: Pool2DAttrs, dtype: np.dtype) -> np.ndarray:
    h, w = a.in_hw
    pt, _, pl, _ = a.pads
    return _finish(dxp[:, :, pt:pt + h, pl:pl + w], a, dtype)


@kernel("maxPooling2DGradient")
@_quiet
def maxPooling2DGradient(dy: np.ndarray, x: np.ndarray, a: Pool2DAttrs) -> np.ndarray:
    e = _empty_grad(_nchw(x, a.data_layout), a, dy.dtype)
    if e is not None:
        return e
    xp = _padded(_nchw(x, a.data_layout), a, -np.inf)
    y = _max(xp, a)
    g = np.asarray(_nchw(dy, a.data_layout), dtype=_F32)
    y_nan = np.isnan(y)
    # only taps inside the source may receive the gradient (a padding tap equals a -inf max)
    inside = np.zeros((1, 1, *xp.shape[2:]), bool)
    h, w = a.in_hw
    pt, _, pl, _ = a.pads
    inside[:, :, pt:pt + h, pl:pl + w] = True
    taken = np.zeros(y.shape, bool)
    dxp = np.zeros(xp.shape, _F32)
    kh, kw = a.kernel
    for p in range(kh):
        for q in range(kw):
            t = _tap(xp, p, q, a)
            hit = (t == y) | (y_nan & np.isnan(t))
            hit &= _tap(inside, p, q, a)
            hit &= ~taken
            taken |= hit
            _tap(dxp, p, q, a)[...] += np.where(hit, g, 0.0)
    return _scatter_to_source(dxp, a, dy.dtype)


@kernel("avgPooling2DGradient")
@_quiet
def avgPooling2DGradient(dy: np.ndarray, x: np.ndarray, a: Pool2DAttrs) -> np.ndarray:
    e = _empty_grad(_nchw(x, a.data_layout), a, dy.dtype)
    if e is not None:
        return e
    g = np.asarray(_nchw(dy, a.data_layout), dtype=_F32) * _inv_counts(a)
    n, c = g.shape[:2]
    dxp = np.zeros((n, c, *a.work_hw), _F32)
    kh, kw = a.kernel
    for p in range(kh):
        for q in range(kw):
            _tap(dxp, p, q, a)[...] += g
    return _scatter_to_source(dxp, a, dy.dtype)


# ---------------------------------------------------------------------------- issue 18
# 4-D pooling, max pooling with indices, the gradient from indices, imToCol / colToIm: the
# N-D window kernels of backends/_window_nd.py (written once for both backends).
from .. import _window_nd as W  # noqa: E402

_NP = W.NumpyOps


@kernel("maxPooling4D")
@_quiet
def maxPooling4D(x, a):
    return W.max_pool(_NP, x, a, False, x.dtype)[0]


@kernel("maxPooling2DReturnIndices")
@kernel("maxPooling4DReturnIndices")
@_quiet
def maxPoolingReturnIndices(x, a):
    y, idx, _ = W.max_pool(_NP, x, a, a.mode != 0, x.dtype)
    return y if a.mode == 0 else (y, np.asarray(idx, np.dtype(a.index_dtype)))


@kernel("avgPooling4D")
@_quiet
def avgPooling4D(x, a):
    return W.avg_pool(_NP, x, a, W.inv_counts(a), x.dtype)


@kernel("L2NormPooling4D")
@_quiet
def L2NormPooling4D(x, a):
    return W.l2_pool(_NP, x, a, x.dtype)


@kernel("maxPooling4DGradient")
@_quiet
def maxPooling4DGradient(dy, x, a):
    return W.max_pool_gradient(_NP, dy, x, a, dy.dtype)


@kernel("avgPooling4DGradient")
@_quiet
def avgPooling4DGradient(dy, x, a):
    return W.avg_pool_gradient(_NP, dy, x, a, W.inv_counts(a), dy.dtype)


@kernel("L2NormPooling4DGradient")
@_quiet
def L2NormPooling4DGradient(dy, x, a):
    return W.l2_pool_gradient(_NP, dy, x, a, dy.dtype)


def _from_indices(op):
    @_quiet
    def run(dy, idx, shape_tensor, a):
        return W.max_pool_gradient_from_indices(_NP, dy, idx, a, dy.dtype, op)
    return run


kernel("maxPooling2DGradientIndices")(_from_indices("maxPooling2DGradient"))
kernel("maxPooling4DGradientIndices")(_from_indices("maxPooling4DGradient"))


@kernel("imToCol")
def imToCol(x, a):
    return W.im_to_col(_NP, x, a, x.dtype)


@kernel("colToIm")
def colToIm(col, a):
    wd = _F32 if col.dtype.kind == "f" or col.dtype.kind == "V" else col.dtype
    return W.col_to_im(_NP, col, a, col.dtype, wd)
