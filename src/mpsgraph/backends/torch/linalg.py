"""torch kernels of the linear-algebra family (semantics: ops/linalg.py)."""

from __future__ import annotations

import torch

from ...ops.linalg import BandAttrs
from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import as_signed, finish, work


def _within(d: torch.Tensor, bound) -> torch.Tensor | bool:
    """d <= bound, or True for a negative bound; `bound` an int or a device scalar tensor
    (compared on the device: no host read, no host -> device copy)."""
    if isinstance(bound, int):
        return True if bound < 0 else d <= bound
    b = bound.reshape(-1)[0].to(torch.int64)
    return (b < 0) | (d <= b)


@kernel("bandPart")
def bandPart(x: torch.Tensor, *rest) -> torch.Tensor:
    a: BandAttrs = rest[-1]
    ts = list(rest[:-1])
    lo = a.numLower if a.numLower is not None else ts.pop(0)
    up = a.numUpper if a.numUpper is not None else ts.pop(0)
    m, n = x.shape[-2:]
    dev = x.device
    d = torch.arange(m, device=dev)[:, None] - torch.arange(n, device=dev)[None, :]  # i - j
    keep = _within(d, lo) & _within(-d, up)
    if keep is True:
        return x.clone()
    xs = as_signed(x)  # uint16/32/64: torch has no `where` for them (same bits, signed view)
    return torch.where(keep, xs, torch.zeros((), dtype=xs.dtype, device=dev)).view(x.dtype)


@kernel("inverse")
def inverse(x: torch.Tensor, attrs: None) -> torch.Tensor:
    w = work(x)
    if w.numel() == 0:
        return torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    y, info = torch.linalg.inv_ex(w)  # no host read; info != 0: singular
    bad = (info != 0) | torch.isnan(w).any(dim=-1).any(dim=-1)  # singular, or a NaN in it
    y = torch.where(bad[..., None, None], torch.full_like(y, float("nan")), y)
    return finish(y, x.dtype)


def _popcount(v: torch.Tensor) -> torch.Tensor:
    """Set bits of each element, as int64 (SWAR on the 64-bit two's complement)."""
    if v.dtype == torch.bool:
        return v.to(torch.int64)
    bits = 8 * v.element_size()
    x = v.to(torch.int64)
    if bits < 64:
        x = x & ((1 << bits) - 1)
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x = (x * 0x0101010101010101) >> 56
    return x & 0xFF


@kernel("HammingDistance")
def HammingDistance(a: torch.Tensor, b: torch.Tensor, dt) -> torch.Tensor:
    from . import torch_dtype

    x = torch.bitwise_xor(a[..., :, None, :], b[..., None, :, :])  # [.., M, N, K]
    return _popcount(x).sum(dim=-1).to(torch_dtype(dt))


@kernel("nonZeroIndices")
def nonZeroIndices(x: torch.Tensor, attrs: None) -> torch.Tensor:
    return torch.nonzero(as_signed(x)).to(torch.int32)  # the count: one device -> host read


for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
