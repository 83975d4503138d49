"""NumPy kernel of nonMaximumSuppression (ops/nms.py): the pairwise IoU of all candidates at
once, then the greedy pass over the candidates in score order, each step vectorised over the
batch (`greedy`, written for NumPy and torch through `xp`)."""

from __future__ import annotations

import numpy as np

from ...types import NonMaximumSuppressionCoordinateMode as M
from . import kernel


def corners(xp, b, mode):
    """[..., 4] boxes -> (h0, w0, h1, w1) with h0 <= h1, w0 <= w1."""
    a0, a1, a2, a3 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    if mode == M.cornersHeightFirst:
        h0, w0, h1, w1 = a0, a1, a2, a3
    elif mode == M.cornersWidthFirst:
        w0, h0, w1, h1 = a0, a1, a2, a3
    else:
        hc, wc = (a0, a1) if mode == M.centersHeightFirst else (a1, a0)
        hh, ww = a2, a3
        h0, h1, w0, w1 = hc - hh / 2, hc + hh / 2, wc - ww / 2, wc + ww / 2
    return (xp.minimum(h0, h1), xp.minimum(w0, w1), xp.maximum(h0, h1),
            xp.maximum(w0, w1))


class _Np:
    minimum, maximum, where = staticmethod(np.minimum), staticmethod(np.maximum), \
        staticmethod(np.where)

    @staticmethod
    def arange(n, like):
        return np.arange(n)

    @staticmethod
    def argsort_desc(x):
        return np.argsort(-x, axis=1, kind="stable")

    @staticmethod
    def gather(t, idx):
        return np.take_along_axis(t, idx, axis=1)

    @staticmethod
    def relu(x):
        return np.clip(x, 0, None)

    @staticmethod
    def cumsum(x):
        return np.cumsum(x, axis=1)

    @staticmethod
    def full(shape, like):
        return np.full(shape, -1, np.int32)

    @staticmethod
    def nonzero(x):
        return np.nonzero(x)

    @staticmethod
    def int32(x):
        return x.astype(np.int32)


def greedy(xp, boxes, scores, classes, a):
    """int32 [N, B*K] of kept candidate indices (-1 padded); `xp` is _Np or the torch shim."""
    n, nb, k = scores.shape
    m = nb * k
    cs = scores.reshape(n, m)
    bidx = xp.arange(m, boxes) // k  # the box of each candidate
    if classes is not None:
        cls = classes.reshape(n, m)
    else:
        cls = (xp.arange(m, boxes) % k).reshape(1, m) + cs.reshape(n, m)[:, :1] * 0
    order = xp.argsort_desc(cs)
    ss, sc = xp.gather(cs, order), xp.gather(cls + 0 * order, order)
    sb = boxes[xp.arange(n, boxes).reshape(n, 1), bidx[order]]
    h0, w0, h1, w1 = corners(xp, sb, a.mode)
    area = (h1 - h0) * (w1 - w0)
    ih = xp.minimum(h1[:, :, None], h1[:, None, :]) - xp.maximum(h0[:, :, None], h0[:, None, :])
    iw = xp.minimum(w1[:, :, None], w1[:, None, :]) - xp.maximum(w0[:, :, None], w0[:, None, :])
    inter = xp.relu(ih) * xp.relu(iw)
    union = area[:, :, None] + area[:, None, :] - inter
    iou = xp.where(union > 0, inter / xp.where(union > 0, union, union * 0 + 1), union * 0)
    over = iou > a.iou
    if a.perClass:
        over = over & (sc[:, :, None] == sc[:, None, :])
    alive = ss > a.score
    keep = alive & False
    for i in range(m):  # greedy: candidate i survives if no kept better candidate covers it
        keep[:, i] = alive[:, i] & ~(keep & over[:, :, i]).any(1)
    rank = xp.cumsum(keep) - 1
    out = xp.full((n, m), boxes)
    rows = xp.nonzero(keep)
    out[rows[0], rank[rows]] = xp.int32(order[rows])
    return out


@kernel("nonMaximumSuppression")
def nonMaximumSuppression(boxes, scores, classes, a):
    return greedy(_Np, boxes.astype(np.float64), scores, classes, a)
