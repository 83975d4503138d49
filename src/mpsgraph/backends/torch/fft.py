"""torch kernels of the Fourier transform family (semantics: backends/numpy/fft.py):
`torch.fft` (cuFFT on CUDA) with norm="forward" for the unscaled positive phase factor."""

from __future__ import annotations

import torch

from ..numpy.fft import out_shape
from . import kernel


def _scaled(y, scale):
    return y * scale if scale != 1.0 else y


@kernel("fastFourierTransform")
def fastFourierTransform(x, axes_t, ka):
    if not ka.axes or x.numel() == 0:
        return x.to(torch.complex64)
    y = (torch.fft.ifftn(x, dim=ka.axes, norm="forward") if ka.inverse
         else torch.fft.fftn(x, dim=ka.axes))
    return _scaled(y, ka.scale).to(torch.complex64)


@kernel("realToHermiteanFFT")
def realToHermiteanFFT(x, axes_t, ka):
    if x.numel() == 0:
        return torch.zeros(out_shape(x, ka, "rfft"), dtype=torch.complex64, device=x.device)
    y = torch.fft.rfftn(x, dim=ka.axes)
    return _scaled(y.conj().resolve_conj() if ka.inverse else y, ka.scale)


@kernel("HermiteanToRealFFT")
def HermiteanToRealFFT(x, axes_t, ka):
    shp = out_shape(x, ka, "c2r")
    if x.numel() == 0 or 0 in shp:
        return torch.zeros(shp, dtype=torch.float32, device=x.device)
    z = x if ka.inverse else x.conj().resolve_conj()
    return _scaled(torch.fft.irfftn(z, s=ka.lengths, dim=ka.axes, norm="forward"),
                   ka.scale).to(torch.float32)
