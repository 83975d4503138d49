"""torch kernels of the random family: the Philox streams and conversions of
backends/_random_math.py (shared with the NumPy backend: the same bits for the same seed), on
int64 / float64 tensors of the input's device, with no host synchronisation. A form without
seed or state draws its 64-bit key on the device from torch's generator, so that a captured
CUDA graph draws a fresh key on every replay."""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _random_math as rm
from . import TORCH_DTYPES, kernel


class _XP:
    """The array primitives _random_math needs, for torch tensors on one device."""

    where = staticmethod(torch.where)
    sqrt = staticmethod(torch.sqrt)
    log = staticmethod(torch.log)
    cos = staticmethod(torch.cos)
    sin = staticmethod(torch.sin)

    def __init__(self, device: torch.device):
        self.device = device

    def arange(self, n: int) -> torch.Tensor:
        return torch.arange(n, dtype=torch.int64, device=self.device)

    @staticmethod
    def minimum(a, b):
        return torch.clamp(a, max=b) if isinstance(b, float) else torch.minimum(a, b)

    @staticmethod
    def maximum(a, b):
        return torch.clamp(a, min=b) if isinstance(b, float) else torch.maximum(a, b)

    @staticmethod
    def stack4(ws) -> torch.Tensor:
        return torch.stack(torch.broadcast_tensors(*ws), dim=-1)

    @staticmethod
    def stack2(a, b) -> torch.Tensor:
        return torch.stack([a, b], dim=-1)

    @staticmethod
    def flat(a) -> torch.Tensor:
        return a.reshape(-1)

    @staticmethod
    def take_lane(a, lanes) -> torch.Tensor:
        return a.gather(1, lanes[:, None])[:, 0]

    @staticmethod
    def f64(a) -> torch.Tensor:
        return a.to(torch.float64)

    @staticmethod
    def cast(a, dt) -> torch.Tensor:
        td = torch.int32 if isinstance(dt, str) else TORCH_DTYPES[dt]
        if td == torch.float16 and a.dtype == torch.float64:
            a = a.to(torch.float32)  # float64 -> float32 -> float16 on every device
        return a.to(td)

    @staticmethod
    def none(mask) -> bool:
        return False  # never asked to the device: the rounds all run, the result is the same


def _fresh_key(device: torch.device):
    k = torch.randint(0, 2**32, (2,), dtype=torch.int64, device=device)
    return (0, 0, 0, 0), (k[0], k[1])


def _state_parts(state: torch.Tensor):
    w = state.to(torch.int64) & rm.MASK
    return (w[1], w[2], w[3], w[4]), (w[5], w[6])


def _on_device(fn):
    fn.needs_device = True  # Backend.kernel binds device= (these ops may have no input)
    return fn


@kernel("randomPhiloxStateTensor")
@_on_device
def randomPhiloxStateTensor(words, device):
    # fills on the device, not a host-to-device copy (capturable in a CUDA graph)
    return torch.stack([torch.full((), w, dtype=torch.int32, device=device) for w in words])


@kernel("randomTensor")
@_on_device
def randomTensor(shape_tensor, state, a, device):
    dev = device
    xp = _XP(dev)
    n = math.prod(a.shape)
    if a.stateful:
        base, key = _state_parts(state)
    elif a.seed is not None:
        base, key = rm.seed_state(a.seed)
    else:
        base, key = _fresh_key(dev)
    out = rm.sample(xp, a, n, base, key).reshape(a.shape)
    if not a.stateful:
        return out
    c = rm.add_counter(base, rm.stream_words(a, n))
    w = torch.stack([torch.full((), rm.STATE_VERSION, dtype=torch.int64, device=dev),
                     *c, *key])
    return out, rm.to_int32_bits(xp, w)


@kernel("dropout")
def dropout(x, rate, a):
    xp = _XP(x.device)
    base, key = _fresh_key(x.device)
    keep = rm.unit24(xp, rm.words(xp, x.numel(), base, key)).reshape(x.shape) >= a.rate
    scale = 1.0 / (1.0 - a.rate) if a.rate < 1.0 else 0.0
    scale = float(np.float32(scale))  # float32, as the NumPy kernel
    zero = torch.zeros((), dtype=torch.float32, device=x.device)
    mask = torch.where(keep, torch.full((), scale, dtype=torch.float32, device=x.device),
                       zero).to(x.dtype)
    y = torch.where(keep, x.float() * scale, zero).to(x.dtype)
    return y, mask
