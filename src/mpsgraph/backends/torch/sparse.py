"""torch kernel of sparseTensor (semantics: backends/numpy/sparse.py): `index_put_` with
accumulate=True on a zero matrix."""

from __future__ import annotations

import torch

from ..numpy.sparse import coordinates
from . import kernel
from .arithmetic import finish, work


@kernel("sparseTensor")
def sparseTensor(vals, i0, i1, a):
    r, c = coordinates(vals.shape[0], i0.long(), i1.long(), a, xp=torch)
    w = work(vals)  # half types accumulate in float32 and round once
    out = torch.zeros(a.shape, dtype=w.dtype, device=vals.device)
    return finish(out.index_put_((r, c), w, accumulate=True), vals.dtype)
