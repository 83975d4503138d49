"""Entry of nonMaximumSuppression (ops/nms.py): a plain greedy NMS written with Python loops
(sort by score, keep when no kept box of the same class / any class overlaps by IoU >
threshold) is the reference. Samples: both forms (scores [N, B, K]; scores [N, B, 1] with
classIndices), every coordinate mode, per-class or not, score thresholds, B and N 0 and 1."""

from __future__ import annotations

import numpy as np

from opdb import DT, ErrorInput, OpInfo, Sample, add, n_samples

from ._common import cycle
from ._common import mg_module as _mg

mg = _mg()
M = mg.NonMaximumSuppressionCoordinateMode


def _corners(b, mode):
    a = [float(v) for v in b]
    if mode == M.cornersHeightFirst:
        h0, w0, h1, w1 = a
    elif mode == M.cornersWidthFirst:
        w0, h0, w1, h1 = a
    else:
        hc, wc = (a[0], a[1]) if mode == M.centersHeightFirst else (a[1], a[0])
        h0, h1, w0, w1 = hc - a[2] / 2, hc + a[2] / 2, wc - a[3] / 2, wc + a[3] / 2
    return min(h0, h1), min(w0, w1), max(h0, h1), max(w0, w1)


def _iou(p, q):
    ih = min(p[2], q[2]) - max(p[0], q[0])
    iw = min(p[3], q[3]) - max(p[1], q[1])
    inter = max(ih, 0) * max(iw, 0)
    union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
    return inter / union if union > 0 else 0.0


def _ref(boxes, scores, *cls, **kw):
    n, nb, k = scores.shape
    out = np.full((n, nb * k), -1, np.int32)
    for i in range(n):
        cands = sorted(range(nb * k), key=lambda c: (-float(scores[i, c // k, c % k]), c))
        kept = []
        for c in cands:
            if not float(scores[i, c // k, c % k]) > kw["score"]:
                continue
            cl = int(cls[0][i, c // k]) if cls else c % k
            box = _corners(boxes[i, c // k], kw["mode"])
            if all(_iou(box, kb) <= kw["iou"] for kc, kb, kcl in kept
                   if not kw["per_class"] or kcl == cl):
                kept.append((c, box, cl))
        out[i, :len(kept)] = [c for c, _, _ in kept]
    return out


def _build(g, boxes, scores, *cls, **kw):
    extra = {"classIndicesTensor": cls[0]} if cls else {}
    return g.nonMaximumSuppression(boxes, scores, iouThreshold=kw["iou"],
                                   scoreThreshold=kw["score"],
                                   perClassSuppression=kw["per_class"],
                                   coordinateMode=kw["mode"], **extra)


def _samples(rng, dt):
    pick = cycle(rng)
    for i in range(n_samples() + 3):
        n = int(rng.choice([0, 1, 2, 2]))
        nb = int(rng.choice([0, 1, 3, 5, 7]))
        with_cls = pick(i, "form", [False, True])
        k = 1 if with_cls else int(rng.integers(1, 4))
        centre = rng.uniform(0, 4, (n, nb, 2))
        size = rng.uniform(0.5, 2.5, (n, nb, 2))
        boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=-1)
        mode = pick(i, "mode", list(M))
        if mode == M.cornersWidthFirst:
            boxes = boxes[..., [1, 0, 3, 2]]
        elif mode == M.centersHeightFirst:
            boxes = np.concatenate([centre, size], axis=-1)
        elif mode == M.centersWidthFirst:
            boxes = np.concatenate([centre[..., ::-1], size], axis=-1)
        scores = rng.random((n, nb, k)).astype(np.float32)
        inputs = [boxes.astype(np.float32), scores]
        if with_cls:
            inputs.append(rng.integers(0, 3, (n, nb)).astype(np.int32))
        kw = dict(iou=float(rng.choice([0.0, 0.2, 0.5, 1.0])),
                  score=float(rng.choice([-np.inf, 0.3])),
                  per_class=pick(i, "pc", [False, True]), mode=mode)
        yield Sample(inputs, kw, desc=f"{mode.name}")


def _errors(rng):
    b, s = np.zeros((1, 3, 4), np.float32), np.zeros((1, 3, 2), np.float32)
    kw = dict(iou=0.5, score=0.0, per_class=False, mode=M.cornersHeightFirst)
    yield ErrorInput(Sample([np.zeros((1, 3, 5), np.float32), s], kw), mg.ShapeError, "boxes")
    yield ErrorInput(Sample([b, np.zeros((1, 4, 2), np.float32)], kw), mg.ShapeError, "scores")
    yield ErrorInput(Sample([b, s.astype(np.float16)], kw), mg.DataTypeError, "scores")
    yield ErrorInput(Sample([b, s, np.zeros((1, 3), np.int32)], kw), mg.ShapeError, "scores")
    yield ErrorInput(Sample([b, s[..., :1], np.zeros((1, 3), np.int64)], kw),
                     mg.DataTypeError, "classIndices")
    yield ErrorInput(Sample([b, s], dict(kw, iou=1.5)), mg.GraphError, "iouThreshold")


add(OpInfo("nonMaximumSuppression", build=_build, ref=_ref, samples=_samples,
           dtypes=(DT.float32,), errors=_errors, nan=False))
