"""torch kernel of nonMaximumSuppression (semantics and algorithm: backends/numpy/nms.py)."""

from __future__ import annotations

import torch

from ..numpy.nms import greedy
from . import kernel


class _Torch:
    minimum, maximum, where = staticmethod(torch.minimum), staticmethod(torch.maximum), \
        staticmethod(torch.where)

    @staticmethod
    def arange(n, like):
        return torch.arange(n, device=like.device)

    @staticmethod
    def argsort_desc(x):
        return torch.argsort(-x, dim=1, stable=True)

    @staticmethod
    def gather(t, idx):
        return torch.gather(t, 1, idx)

    @staticmethod
    def relu(x):
        return x.clamp(min=0)

    @staticmethod
    def cumsum(x):
        return torch.cumsum(x.long(), dim=1)

    @staticmethod
    def full(shape, like):
        return torch.full(shape, -1, dtype=torch.int32, device=like.device)

    @staticmethod
    def nonzero(x):
        return x.nonzero(as_tuple=True)

    @staticmethod
    def int32(x):
        return x.to(torch.int32)


@kernel("nonMaximumSuppression")
def nonMaximumSuppression(boxes, scores, classes, a):
    return greedy(_Torch, boxes.double(), scores, classes, a)
