"""An optional accelerator for the NumPy backend's convolutions: PyTorch CPU (oneDNN).

The NumPy kernels of backends/numpy/convolution.py are the reference and the fallback. NumPy has
no convolution of its own: its best forms are an im2col copy plus one OpenBLAS GEMM (dense) and
one single-threaded einsum over tap views (depthwise), 1.6-4.4x PyTorch CPU's time on the
gradients. When PyTorch is installed (the `accel` extra, or the `torch` one) the default device
runs float32 convolutions, and float16 / bFloat16 ones computed in float32, through
`aten.convolution` / `aten.convolution_backward` (oneDNN's direct kernels on both cores), on the
NumPy arrays themselves: `torch.from_numpy` shares their memory, in any layout (an NHWC array is a
channels-last tensor), and the results come back by `Tensor.numpy()`, without a copy.

- `MPSGRAPH_CPU_ACCEL=0` forces the NumPy-only kernels (read at every call, so a test or a
  benchmark can switch within one process); any other value, or none, uses PyTorch when it can
  be imported. float64 always stays on NumPy (the reference precision).
- torch is imported on the first convolution that can use it, never by `import mpsgraph`.
- Paddings: PyTorch pads symmetrically. Unequal (before, after) paddings, and windows that stop
  short of the padded end (strides), are made symmetric by padding or cropping the source by the
  difference (`torch.nn.functional.pad`, which crops for negative widths); the data gradient is
  cropped or zero-padded back the same way.

All functions take arrays in the canonical channels-first form, data [B, C, *S] and weights
[O, Cg, *K] (strided views of the user's layout are fine), pads as (before, after) per spatial
axis, and return a NumPy array in that form (a view of torch's result), or None when the
accelerator is off or unavailable.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

_F32 = np.dtype(np.float32)
_torch: Any = None  # the module once imported; False when the import failed


def _get_torch() -> Any:
    global _torch
    if _torch is None:
        try:
            import torch

            _torch = torch
        except Exception:  # not installed, or a broken install: the NumPy kernels do it all
            _torch = False
    return _torch


def enabled() -> bool:
    """True when convolutions of float32 work run on PyTorch CPU (installed, not disabled)."""
    if os.environ.get("MPSGRAPH_CPU_ACCEL", "1").strip() == "0":
        return False
    return bool(_get_torch())


def usable(work_dtype: np.dtype) -> bool:
    """The accelerator takes this op: float32 work (float16 / bFloat16 included), and enabled."""
    return work_dtype == _F32 and enabled()


def _tensor(a: np.ndarray) -> Any:
    """`a` as a float32 CPU tensor sharing its memory where it can (a copy for other dtypes,
    negative strides and misaligned strides, which torch.from_numpy does not take). (Copying
    NumPy's 16-byte aligned buffers into torch's 64-byte aligned ones was tried: no faster.)"""
    torch = _torch
    if a.dtype != _F32:
        a = np.asarray(a, _F32)
    if any(s < 0 or s % a.itemsize for s in a.strides):
        a = np.array(a, order="C", copy=True)  # (ascontiguousarray keeps size-1 axes' strides)
    if not a.flags.writeable:  # read-only feeds: torch warns, but nothing here writes to them
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            t = torch.from_numpy(a)
    else:
        t = torch.from_numpy(a)
    return _exact_if_ambiguous(t)


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def _exact_if_ambiguous(t: Any) -> Any:
    """A 4-D / 5-D operand with one channel or one pixel is both contiguous and channels-last,
    and PyTorch's CPU convolution miscomputes some of them when their strides are not exactly
    the contiguous ones (an NHWC [3, 7, 8, 1] view with HWIO [1, 8, 1, 1] weights: errors of
    1e26; the torch backend's `_memory_format` has the same rule): such operands run as plain
    contiguous tensors, copied to exactly those strides."""
    if t.dim() not in (4, 5):
        return t
    spatial = 1
    for n in t.shape[2:]:
        spatial *= int(n)
    if (t.shape[1] != 1 and spatial != 1) or t.stride() == _contiguous_strides(t.shape):
        return t
    return _torch.empty(tuple(t.shape), dtype=t.dtype).copy_(t)


def _channels_last(t: Any) -> Any:
    """The memory format of a channels-last view, else None (oneDNN then keeps it)."""
    torch = _torch
    st = t.stride()
    if t.dim() not in (4, 5) or t.shape[1] == 1 or st[1] != 1:
        return None
    return torch.channels_last if t.dim() == 4 else torch.channels_last_3d


def _plan(sizes: Sequence[int], k: Sequence[int], out: Sequence[int], stride: Sequence[int],
          dilation: Sequence[int], pads: Sequence[tuple[int, int]]
          ) -> tuple[list[int], list[int]] | None:
    """(symmetric paddings for torch, F.pad widths of the source in F.pad's order) such that
    torch's output size is `out` on every axis; None when no such form exists."""
    sym, widths = [], []
    for n, kk, o, s, r, (pb, pe) in zip(sizes, k, out, stride, dilation, pads):
        p = min(pb, pe)
        eb, ee = pb - p, pe - p
        dk = r * (kk - 1) + 1
        if (n + pb + pe - dk) // s + 1 != o:  # make the padded extent exactly the windows'
            ee += (o - 1) * s + dk - (n + pb + pe)
        if n + eb + ee < 0 or -ee > n:
            return None
        sym.append(p)
        widths[:0] = [eb, ee]  # F.pad lists the last axis first
    return sym, widths


def _pad(t: Any, widths: list[int]) -> Any:
    if not any(widths):
        return t
    fmt = _channels_last(t)
    out = _torch.nn.functional.pad(t, widths)
    return out if fmt is None else out.contiguous(memory_format=fmt)


def forward(x: np.ndarray, w: np.ndarray, stride, dilation, pads, groups: int,
            out_spatial: Sequence[int]) -> np.ndarray | None:
    torch = _torch
    plan = _plan(x.shape[2:], w.shape[2:], out_spatial, stride, dilation, pads)
    if plan is None:
        return None
    sym, widths = plan
    xt, wt = _pad(_tensor(x), widths), _tensor(w)
    fmt = _channels_last(xt)
    if fmt is not None:
        wt = wt.contiguous(memory_format=fmt)
    nd = len(sym)
    y = torch.ops.aten.convolution(xt, wt, None, list(stride), sym, list(dilation), False,
                                   [0] * nd, groups)
    return y.numpy()


def data_gradient(dy: np.ndarray, w: np.ndarray, x_shape: Sequence[int], stride, dilation,
                  pads, groups: int, channels_last: bool) -> np.ndarray | None:
    """dL/dx of shape `x_shape`; `channels_last` asks for a channels-last result (NHWC data)."""
    torch = _torch
    plan = _plan(x_shape[2:], w.shape[2:], dy.shape[2:], stride, dilation, pads)
    if plan is None:
        return None
    sym, widths = plan
    dyt, wt = _tensor(dy), _tensor(w)
    nd = len(sym)
    # the padded source's shape (widths are last-axis first)
    xs = [*x_shape[:2], *(n + widths[2 * (nd - 1 - i)] + widths[2 * (nd - 1 - i) + 1]
                          for i, n in enumerate(x_shape[2:]))]
    fmt = (torch.channels_last if nd == 2 else torch.channels_last_3d) \
        if channels_last and nd in (2, 3) else None
    if fmt is not None:
        # oneDNN picks the result's memory format from the source's or the weights': a
        # channels-last placeholder source (allocated, never written) asks for it without
        # a channels-last copy of the weights (as large as the data on deep layers)
        dyt = dyt.contiguous(memory_format=fmt)
        dummy = torch.empty(xs, dtype=dyt.dtype, memory_format=fmt)
    else:
        dummy = dyt.new_empty(1).expand(xs)  # only its shape is read
    dx = torch.ops.aten.convolution_backward(dyt, dummy, wt, None, list(stride), sym,
                                             list(dilation), False, [0] * nd, groups,
                                             [True, False, False])[0]
    if any(widths):  # back to the source's extent: crop what was padded, zero-fill the crop
        dx = torch.nn.functional.pad(dx, [-v for v in widths])
    return dx.numpy()


def weights_gradient(dy: np.ndarray, x: np.ndarray, w_shape: Sequence[int], stride, dilation,
                     pads, groups: int) -> np.ndarray | None:
    torch = _torch
    plan = _plan(x.shape[2:], w_shape[2:], dy.shape[2:], stride, dilation, pads)
    if plan is None:
        return None
    sym, widths = plan
    xt, dyt = _pad(_tensor(x), widths), _tensor(dy)
    fmt = _channels_last(xt)
    if fmt is not None:
        dyt = dyt.contiguous(memory_format=fmt)
    nd = len(sym)
    dummy = dyt.new_empty(1).expand(list(w_shape))
    dw = torch.ops.aten.convolution_backward(dyt, xt, dummy, None, list(stride), sym,
                                             list(dilation), False, [0] * nd, groups,
                                             [False, True, False])[1]
    return dw.numpy()
