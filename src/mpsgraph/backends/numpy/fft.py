"""NumPy kernels of the Fourier transform family (ops/fft.py): `numpy.fft` (pocketfft) with
norm="backward" for the negative phase factor and ifft*(norm="forward") for the positive one
(both unscaled), then the descriptor's scale once. The Hermitean-to-real transform with the
negative phase factor is the positive one of the conjugate (its result is real)."""

from __future__ import annotations

import numpy as np

from . import kernel

C64, F32 = np.dtype(np.complex64), np.dtype(np.float32)


def _scaled(y, scale, dtype):
    if scale != 1.0:
        y = y * np.asarray(scale, y.real.dtype)
    return np.asarray(y).astype(dtype, copy=False, order="C")


def out_shape(x, ka, kind):
    shp = list(x.shape)
    if kind == "rfft":
        shp[ka.axes[-1]] = shp[ka.axes[-1]] // 2 + 1
    elif kind == "c2r":
        shp[ka.axes[-1]] = ka.lengths[-1]
    return shp


@kernel("fastFourierTransform")
def fastFourierTransform(x, axes_t, ka):
    if not ka.axes or x.size == 0:
        return x.astype(C64)
    y = (np.fft.ifftn(x, axes=ka.axes, norm="forward") if ka.inverse
         else np.fft.fftn(x, axes=ka.axes))
    return _scaled(y, ka.scale, C64)


@kernel("realToHermiteanFFT")
def realToHermiteanFFT(x, axes_t, ka):
    if x.size == 0:
        return np.zeros(out_shape(x, ka, "rfft"), C64)
    y = np.fft.rfftn(x, axes=ka.axes)
    return _scaled(np.conj(y) if ka.inverse else y, ka.scale, C64)


@kernel("HermiteanToRealFFT")
def HermiteanToRealFFT(x, axes_t, ka):
    shp = out_shape(x, ka, "c2r")
    if x.size == 0 or 0 in shp:
        return np.zeros(shp, F32)
    y = np.fft.irfftn(x if ka.inverse else np.conj(x), s=ka.lengths, axes=ka.axes,
                      norm="forward")
    return _scaled(y, ka.scale, F32)
