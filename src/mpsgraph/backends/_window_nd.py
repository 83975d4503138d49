"""The N-D window kernels of ops/pool_extra.py, written once for both backends.

Every function takes `xp`, a small adapter (`NumpyOps` here, `TorchOps` in
backends/torch/pooling.py) over the array library, and a `PoolNDAttrs` / `ImToColAttrs`.
The source is padded once into a float32 working array large enough for every window; each
window tap is a strided view of it (basic slicing only: any input strides are fine); the only
Python loops are over the taps. float16 / bFloat16 are computed in float32, rounded once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import GraphError, op_error

NEG_INF = float("-inf")


class NumpyOps:
    """The adapter for NumPy arrays."""

    f32 = np.float32

    @staticmethod
    def full(shape, value, like=None, dtype=np.float32):
        return np.full(tuple(shape), value, dtype)

    @staticmethod
    def work(x):
        return np.asarray(x, np.float32)

    where = staticmethod(np.where)
    isnan = staticmethod(np.isnan)
    sqrt = staticmethod(np.sqrt)

    @staticmethod
    def index_table(rows, like=None):
        return np.asarray(rows, np.int64).reshape(len(rows), -1)

    @staticmethod
    def arange(n, like=None):
        return np.arange(n, dtype=np.int64)

    @staticmethod
    def to_int64(a):
        return np.asarray(a, np.int64)

    @staticmethod
    def finish(y, dtype):
        out = np.empty(y.shape, dtype)
        np.copyto(out, y, casting="unsafe")
        return out

    @staticmethod
    def scatter_add(n, flat_idx, vals, like=None):
        out = np.zeros(n, np.float32)
        np.add.at(out, flat_idx, vals)
        return out

    @staticmethod
    def any(m) -> bool:
        return bool(np.any(m))

    @staticmethod
    def min_max(a):
        return (int(a.min()), int(a.max())) if a.size else (0, 0)


def _padded(xp, x, a, fill):
    w = xp.full(a.work_shape, fill, like=x)
    w[a.inside()] = xp.work(x)
    return w


def _inside_mask(xp, a, like):
    m = xp.full(a.work_shape, False, like=like, dtype=bool)
    m[a.inside()] = True
    return m


def _empty(a) -> bool:
    """No output (an empty source with outputs has only empty windows: computed as such)."""
    return 0 in a.out_shape


def _empty_grad(a) -> bool:
    return 0 in a.out_shape or 0 in a.in_shape


def max_pool(xp, x, a, want_index: bool, dtype):
    """(values, indices or None, best tap per output): first maximum in tap order; NaN
    propagates; an empty window gives -inf and tap -1."""
    if _empty(a):
        z = xp.full(a.out_shape, 0.0, like=x)
        idx = xp.full(a.out_shape, -1, like=x, dtype=np.dtype(a.index_dtype)) \
            if want_index else None
        return xp.finish(z, dtype), idx, None
    w = _padded(xp, x, a, NEG_INF)
    inside = _inside_mask(xp, a, x)
    y = xp.full(a.out_shape, NEG_INF, like=x)
    best = xp.full(a.out_shape, -1, like=x, dtype=np.int64)
    for ti, t in enumerate(a.taps()):
        sl = a.tap(t)
        v, m = w[sl], inside[sl]
        better = m & ((best < 0) | (v > y) | (xp.isnan(v) & ~xp.isnan(y)))
        y = xp.where(better, v, y)
        best = xp.where(better, ti, best)
    return xp.finish(y, dtype), (_indices(xp, a, best, x) if want_index else None), best


def _window_depth(a):
    return (a.mode - 1) % 4 + 1


def _indices(xp, a, best, like):
    """The argmax (tap `best` of each window) encoded by a.mode."""
    rank = len(a.in_shape)
    k = _window_depth(a)
    taps = xp.index_table(a.taps(), like)
    tc = taps[xp.where(best < 0, 0, best)]  # [*out, rank]: each argmax's tap
    idx = xp.full(a.out_shape, 0, like=like, dtype=np.int64)
    for ax in range(rank - k, rank):
        shape = [1] * rank
        shape[ax] = a.out_shape[ax]
        if a.mode <= 4:  # global: the coordinate in the source
            coord = (xp.arange(a.out_shape[ax], like).reshape(shape) * a.stride[ax]
                     - a.pads[ax][0] + tc[..., ax] * a.dilation[ax])
            idx = idx * a.in_shape[ax] + coord
        else:  # local: the tap in the window
            idx = idx * a.kernel[ax] + tc[..., ax]
    return xp.finish(xp.where(best < 0, -1, idx), np.dtype(a.index_dtype))


def max_pool_gradient(xp, dy, x, a, dtype):
    """Each window's gradient to its first maximum (the tap max_pool picked)."""
    if _empty_grad(a):
        return xp.finish(xp.full(a.in_shape, 0.0, like=x), dtype)
    _, _, best = max_pool(xp, x, a, False, np.float32)
    g = xp.work(dy)
    dw = xp.full(a.work_shape, 0.0, like=x)
    for ti, t in enumerate(a.taps()):
        sl = a.tap(t)
        dw[sl] += xp.where(best == ti, g, 0.0)
    return xp.finish(dw[a.inside()], dtype)


def _axis_count(n_out, k, s, r, before, lo, hi):
    pos = np.arange(n_out)[:, None] * s - before + np.arange(k)[None, :] * r
    return ((pos >= lo) & (pos < hi)).sum(axis=1)


def inv_counts(a) -> np.ndarray:
    """1 / (the number of taps inside the source, or the padded source) per output: a NumPy
    array of the output's shape (0 for an empty window)."""
    rank = len(a.in_shape)
    cnt = np.ones([1] * rank, np.float64)
    for ax in range(rank):
        pb, pe = a.pads[ax]
        n = a.in_shape[ax]
        lo, hi = (-pb, n + pe) if a.include_zero_pad else (0, n)
        c = _axis_count(a.out_shape[ax], a.kernel[ax], a.stride[ax], a.dilation[ax], pb, lo, hi)
        shape = [1] * rank
        shape[ax] = a.out_shape[ax]
        cnt = cnt * c.reshape(shape)
    with np.errstate(divide="ignore"):
        return np.where(cnt > 0, 1.0 / np.maximum(cnt, 1), 0.0).astype(np.float32)


def sum_pool(xp, x, a, square: bool):
    w = _padded(xp, x, a, 0.0)
    if square:
        w = w * w
    s = None
    for t in a.taps():
        v = w[a.tap(t)]
        s = v + 0.0 if s is None else s + v  # (the first: a new array, not a view)
    return s


def avg_pool(xp, x, a, inv, dtype):
    if _empty(a):
        return xp.finish(xp.full(a.out_shape, 0.0, like=x), dtype)
    return xp.finish(sum_pool(xp, x, a, False) * inv, dtype)


def l2_pool(xp, x, a, dtype):
    if _empty(a):
        return xp.finish(xp.full(a.out_shape, 0.0, like=x), dtype)
    return xp.finish(xp.sqrt(sum_pool(xp, x, a, True)), dtype)


def _spread(xp, g, a, like):
    """sum over the windows holding each source element of g (the adjoint of a window sum)."""
    dw = xp.full(a.work_shape, 0.0, like=like)
    for t in a.taps():
        dw[a.tap(t)] += g
    return dw[a.inside()]


def avg_pool_gradient(xp, dy, x, a, inv, dtype):
    if _empty_grad(a):
        return xp.finish(xp.full(a.in_shape, 0.0, like=x), dtype)
    return xp.finish(_spread(xp, xp.work(dy) * inv, a, x), dtype)


def l2_pool_gradient(xp, dy, x, a, dtype):
    """dx = x * sum over the windows holding x of dy / norm (0 where the norm is 0)."""
    if _empty_grad(a):
        return xp.finish(xp.full(a.in_shape, 0.0, like=x), dtype)
    y = xp.sqrt(sum_pool(xp, x, a, True))
    g = xp.where(y > 0, xp.work(dy) / xp.where(y > 0, y, 1.0), 0.0)
    g = xp.where(xp.isnan(y), y, g)
    return xp.finish(_spread(xp, g, a, x) * xp.work(x), dtype)


def max_pool_gradient_from_indices(xp, dy, idx, a, dtype, op: str):
    """Scatter-add each gradient element to the source position its index names."""
    rank = len(a.in_shape)
    total = int(np.prod(a.in_shape))
    if _empty(a) or total == 0:
        return xp.finish(xp.full(a.in_shape, 0.0, like=dy), dtype)
    k = _window_depth(a)
    idx = xp.to_int64(idx)
    valid = idx >= 0
    rest = xp.where(valid, idx, 0)
    span = int(np.prod((a.in_shape if a.mode <= 4 else a.kernel)[rank - k:]))
    lo, hi = xp.min_max(idx)
    if lo < -1 or hi >= span:
        raise op_error(GraphError, op, "indicesTensor", f"indices in [0, {span}) (or -1 for "
                       f"an empty window) for returnIndicesMode {a.mode}", f"values in "
                       f"[{lo}, {hi}]")
    flat = xp.full(a.out_shape, 0, like=dy, dtype=np.int64)
    ok = valid
    for ax in reversed(range(rank)):
        shape = [1] * rank
        shape[ax] = a.out_shape[ax]
        origin = xp.arange(a.out_shape[ax], dy).reshape(shape) * a.stride[ax] - a.pads[ax][0]
        if ax >= rank - k:
            n = a.in_shape[ax] if a.mode <= 4 else a.kernel[ax]
            part = rest % n
            rest = rest // n
            coord = part if a.mode <= 4 else origin + part * a.dilation[ax]
        else:
            coord = origin + flat * 0
        ok = ok & (coord >= 0) & (coord < a.in_shape[ax])
        flat = flat + coord * int(np.prod(a.in_shape[ax + 1:]))
    if xp.any(valid & ~ok):
        raise op_error(GraphError, op, "indicesTensor", "indices of positions inside the "
                       "source", "an index of a padding position")
    g = xp.where(ok, xp.work(dy), 0.0)
    out = xp.scatter_add(total, xp.where(ok, flat, 0).reshape(-1), g.reshape(-1), like=dy)
    return xp.finish(out.reshape(a.in_shape), dtype)


# ---------------------------------------------------------------------------- imToCol
def _nchw(x, a):
    if not a.nhwc:
        return x
    return x.permute(0, 3, 1, 2) if hasattr(x, "permute") else x.transpose(0, 3, 1, 2)


def im_to_col(xp, x, a, dtype) -> Any:
    n, c, h, w = a.image_nchw
    (kh, kw), (sy, sx), (ry, rx) = a.kernel, a.stride, a.dilation
    pt, pb, pl, pr = a.pads
    ho, wo = a.out_hw
    xw = xp.full((n, c, h + pt + pb, w + pl + pr), 0, like=x, dtype=dtype)
    xw[:, :, pt:pt + h, pl:pl + w] = _nchw(x, a)
    col = xp.full((n, c, kh, kw, ho, wo), 0, like=x, dtype=dtype)
    if 0 not in (n, c, ho, wo):
        for p in range(kh):
            for q in range(kw):
                col[:, :, p, q] = xw[:, :, p * ry: p * ry + sy * (ho - 1) + 1: sy,
                                     q * rx: q * rx + sx * (wo - 1) + 1: sx]
    if a.nhwc:  # [N, Ho*Wo, kH*kW*C]
        col = col.permute(0, 4, 5, 2, 3, 1) if hasattr(col, "permute") else \
            col.transpose(0, 4, 5, 2, 3, 1)
    return xp.finish(col.reshape(a.out_shape if not a.nhwc else
                                 (n, ho * wo, kh * kw * c)), dtype)


def col_to_im(xp, col, a, dtype, work_dtype) -> Any:
    n, c, h, w = a.image_nchw
    (kh, kw), (sy, sx), (ry, rx) = a.kernel, a.stride, a.dilation
    pt, pb, pl, pr = a.pads
    ho, wo = a.out_hw
    if a.nhwc:
        col6 = col.reshape(n, ho, wo, kh, kw, c)
        col6 = col6.permute(0, 5, 3, 4, 1, 2) if hasattr(col6, "permute") else \
            col6.transpose(0, 5, 3, 4, 1, 2)
    else:
        col6 = col.reshape(n, c, kh, kw, ho, wo)
    xw = xp.full((n, c, h + pt + pb, w + pl + pr), 0, like=col, dtype=work_dtype)
    if 0 not in (n, c, ho, wo):
        for p in range(kh):
            for q in range(kw):
                xw[:, :, p * ry: p * ry + sy * (ho - 1) + 1: sy,
                   q * rx: q * rx + sx * (wo - 1) + 1: sx] += col6[:, :, p, q]
    img = xw[:, :, pt:pt + h, pl:pl + w]
    if a.nhwc:
        img = img.permute(0, 2, 3, 1) if hasattr(img, "permute") else img.transpose(0, 2, 3, 1)
    return xp.finish(img, dtype)
