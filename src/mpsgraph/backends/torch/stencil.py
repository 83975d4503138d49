"""torch kernel of stencil (semantics: backends/numpy/stencil.py, whose index maps it uses):
padding by `index_select` per window dimension, windows by `Tensor.unfold`, one reduction."""

from __future__ import annotations

import numpy as np
import torch

from ...types import PaddingMode as P
from ...types import ReductionMode as R
from ..numpy.stencil import _padding_only, index_map
from . import device_table, kernel
from .arithmetic import finish, work


@kernel("stencil")
def stencil(x, w, ka):
    arg = ka.reduction in (R.argumentMin, R.argumentMax)
    if 0 in ka.out or x.numel() == 0:
        lead = tuple(x.shape[:-4])
        if x.numel() == 0 and 0 not in ka.out and 0 not in lead:
            out = _padding_only(np.zeros(x.shape, np.float32), w.detach().cpu().float()
                                .numpy(), ka, np.int32 if arg else np.float32)
            return torch.from_numpy(out).to(x.device, torch.int32 if arg else x.dtype)
        return torch.zeros(lead + tuple(ka.out), dtype=torch.int32 if arg else x.dtype,
                           device=x.device)
    y = work(x)
    r = y.dim()
    fill = 0.0 if ka.boundary == P.zero else ka.constant
    for a in range(4):
        ax = r - 4 + a
        idx, sign, valid = index_map(y.shape[ax], *ka.pads[a], ka.starts[a], ka.boundary)
        shp = [1] * r
        shp[ax] = -1
        t = y.index_select(ax, device_table(idx, y.device))
        t = t * device_table(sign, y.device, y.dtype).reshape(shp)
        vm = device_table(valid, y.device).reshape(shp)
        y = torch.where(vm, t, torch.full((), fill, dtype=y.dtype, device=y.device))
    eff = [(w.shape[a] - 1) * ka.dilations[a] + 1 for a in range(4)]
    for a in range(4):
        y = y.unfold(r - 4 + a, eff[a], ka.strides[a])
    y = y[(Ellipsis,) + tuple(slice(None, None, d) for d in ka.dilations)]
    y = y[(slice(None),) * (r - 4) + tuple(slice(None, o) for o in ka.out)]
    v = (y * work(w)).flatten(start_dim=r)
    if ka.reduction == R.sum:
        out = v.sum(dim=-1)
    elif ka.reduction == R.product:
        out = v.prod(dim=-1)
    elif ka.reduction == R.min:
        out = v.amin(dim=-1)
    elif ka.reduction == R.max:
        out = v.amax(dim=-1)
    else:
        f = torch.argmin if ka.reduction == R.argumentMin else torch.argmax
        return f(v, dim=-1).to(torch.int32)
    return finish(out.contiguous(), x.dtype)
