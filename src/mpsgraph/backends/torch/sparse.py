"""torch kernel of sparseTensor (semantics: backends/numpy/sparse.py): `index_put_` with
accumulate=True on a zero matrix."""

from __future__ import annotations

import torch

from ..numpy.sparse import coordinates
from . import kernel


@kernel("sparseTensor")
def sparseTensor(vals, i0, i1, a):
    r, c = coordinates(vals.shape[0], i0.long(), i1.long(), a, xp=torch)
    out = torch.zeros(a.shape, dtype=vals.dtype, device=vals.device)
    return out.index_put_((r, c), vals, accumulate=True)
