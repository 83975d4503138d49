"""PyTorch float64 adapters used as a second, independent oracle for SPEC 2.5-2.7.

``torch`` is imported lazily inside the functions, so this module imports without torch.
Everything is canonical (SPEC 2.3): data ``NCHW``, weights ``OIHW``; ``pads_tblr`` are the
resolved ``(top, bottom, left, right)`` paddings (see ``conv_f64.resolve_pads``). Asymmetric
padding is applied with ``torch.nn.functional.pad`` (zeros) before a ``padding=0`` convolution.
Inputs are converted to float64 and results are returned as float64 NumPy arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["conv2d_torch", "conv2d_grads_torch"]


def _t(a, requires_grad=False):
    import torch

    t = torch.from_numpy(np.array(a, dtype=np.float64, copy=True, order="C"))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _forward(xt, wt, stride, dilation, pads_tblr, groups):
    import torch.nn.functional as F

    top, bottom, left, right = (int(p) for p in pads_tblr)
    # F.pad takes the last axis first: (left, right, top, bottom).
    xp = F.pad(xt, (left, right, top, bottom), mode="constant", value=0.0)
    return F.conv2d(xp, wt, bias=None, stride=tuple(stride), padding=0,
                    dilation=tuple(dilation), groups=int(groups))


def conv2d_torch(x_nchw, w_oihw, stride=(1, 1), dilation=(1, 1), pads_tblr=(0, 0, 0, 0),
                 groups=1):
    """Forward convolution through ``torch.nn.functional.conv2d`` in float64."""
    import torch

    with torch.no_grad():
        y = _forward(_t(x_nchw), _t(w_oihw), stride, dilation, pads_tblr, groups)
    return y.numpy().astype(np.float64, copy=True)


def conv2d_grads_torch(x_nchw, w_oihw, dy_nchw, stride=(1, 1), dilation=(1, 1),
                       pads_tblr=(0, 0, 0, 0), groups=1):
    """``(dx, dw)`` of ``y = conv(x, w)`` for the incoming gradient ``dy``, by torch autograd.

    Computes ``y.backward(dy)``; ``dx`` has the shape of ``x`` (the gradient that flows through
    the zero padding is discarded by ``F.pad``'s backward), ``dw`` the shape of ``w``.
    """
    xt = _t(x_nchw, requires_grad=True)
    wt = _t(w_oihw, requires_grad=True)
    y = _forward(xt, wt, stride, dilation, pads_tblr, groups)
    dyt = _t(dy_nchw)
    if tuple(dyt.shape) != tuple(y.shape):
        raise ValueError(f"dy shape {tuple(dyt.shape)} != forward result {tuple(y.shape)}")
    y.backward(dyt)
    dx = xt.grad.numpy() if xt.grad is not None else np.zeros(xt.shape)
    dw = wt.grad.numpy() if wt.grad is not None else np.zeros(wt.shape)
    return dx.astype(np.float64, copy=True), dw.astype(np.float64, copy=True)
