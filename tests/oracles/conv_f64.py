"""Independent float64 reference for 2D convolution and its two gradients (SPEC section 2).

This module deliberately does NOT import ``mpsgraph``: it is an oracle written straight from
the formulas of SPEC 2.4-2.8, as direct loops, so that it is obviously equal to the definition.

Everything is in the canonical layouts of SPEC 2.3: data ``NCHW`` ``[N, C, H, W]``, weights
``OIHW`` ``[O, C/groups, kH, kW]``. The helpers at the bottom convert from/to ``NHWC``/``HWIO``.

Conventions:

* ``stride`` is ``(sy, sx)``, ``dilation`` is ``(ry, rx)``, ``pads`` is the RESOLVED
  ``(top, bottom, left, right)`` (use :func:`resolve_pads` to get them from a padding style).
* Inputs are converted to float64; results are float64.
* Zero sizes (``N == 0``, ``O == 0``, ``Cg == 0``, spatial size 0 under the SAME styles) follow
  the formulas: an empty sum is 0 (SPEC 2.8).
* Shape errors raise ``ValueError``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "PADDING_STYLES",
    "resolve_pads",
    "resolve_axis",
    "conv_out_size",
    "conv2d_ref",
    "conv2d_data_grad_ref",
    "conv2d_weights_grad_ref",
    "nhwc_to_nchw",
    "nchw_to_nhwc",
    "hwio_to_oihw",
    "oihw_to_hwio",
]

PADDING_STYLES = ("explicit", "TF_VALID", "TF_SAME", "ONNX_SAME_LOWER")


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def resolve_axis(style: str, size: int, k: int, stride: int, dilation: int,
                 pad_before: int = 0, pad_after: int = 0) -> tuple[int, int, int]:
    """SPEC 2.4 for ONE spatial axis: return ``(out, pad_before, pad_after)``.

    ``pad_before``/``pad_after`` are read only for ``style == "explicit"``. Raises
    ``ValueError`` when the style's "requires" clause fails, or on invalid arguments.
    """
    if stride < 1 or dilation < 1:
        raise ValueError(f"stride and dilation must be >= 1, got {stride}, {dilation}")
    if size < 0 or k < 0:
        raise ValueError(f"negative size: in={size}, k={k}")
    k_eff = dilation * (k - 1) + 1
    if style == "explicit":
        pb, pe = int(pad_before), int(pad_after)
        if pb < 0 or pe < 0:
            raise ValueError(f"explicit paddings must be >= 0, got {pb}, {pe}")
        if size + pb + pe < k_eff:
            raise ValueError(f"explicit: in + pads = {size + pb + pe} < k_eff = {k_eff}")
        out = (size + pb + pe - k_eff) // stride + 1
    elif style == "TF_VALID":
        pb = pe = 0
        if size < k_eff:
            raise ValueError(f"TF_VALID: in = {size} < k_eff = {k_eff}")
        out = (size - k_eff) // stride + 1
    elif style in ("TF_SAME", "ONNX_SAME_LOWER"):
        out = _ceil_div(size, stride)
        total = max((out - 1) * stride + k_eff - size, 0)
        if style == "TF_SAME":
            pb = total // 2
            pe = total - pb
        else:
            pe = total // 2
            pb = total - pe
    else:
        raise ValueError(f"unknown or unsupported padding style {style!r}")
    return out, pb, pe


def resolve_pads(style: str, in_hw, k_hw, stride_hw, dilation_hw, explicit_tblr=(0, 0, 0, 0)):
    """SPEC 2.4 for both spatial axes.

    Args:
        style: one of ``"explicit"``, ``"TF_VALID"``, ``"TF_SAME"``, ``"ONNX_SAME_LOWER"``.
        in_hw: ``(H, W)`` of the forward convolution's source.
        k_hw: ``(kH, kW)`` forward kernel size (undilated).
        stride_hw: ``(sy, sx)``.
        dilation_hw: ``(ry, rx)``.
        explicit_tblr: ``(top, bottom, left, right)``, used only for ``"explicit"``.

    Returns:
        ``((Ho, Wo), (top, bottom, left, right))``.

    Raises:
        ValueError: when a "requires" clause of SPEC 2.4 fails or the style is unknown
        (``explicitOffset`` is not a convolution style: SPEC 2.1).
    """
    t, b, l, r = explicit_tblr
    ho, pt, pb = resolve_axis(style, in_hw[0], k_hw[0], stride_hw[0], dilation_hw[0], t, b)
    wo, pl, pr = resolve_axis(style, in_hw[1], k_hw[1], stride_hw[1], dilation_hw[1], l, r)
    return (ho, wo), (pt, pb, pl, pr)


def conv_out_size(size: int, k: int, stride: int, dilation: int, pb: int, pe: int) -> int:
    """Output size along one axis for already-resolved paddings.

    This is the explicit formula of SPEC 2.4. The one case where that formula's "requires"
    does not hold but the spec still defines a result is an empty input under TF_SAME /
    ONNX_SAME_LOWER (``in == 0`` gives ``out == 0``), so ``size == 0`` with too little padding
    yields 0 instead of an error.
    """
    k_eff = dilation * (k - 1) + 1
    if size + pb + pe >= k_eff:
        return (size + pb + pe - k_eff) // stride + 1
    if size == 0:
        return 0
    raise ValueError(f"in + pads = {size + pb + pe} < k_eff = {k_eff}")


def _check_common(x_shape, w_shape, groups):
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ValueError(f"rank-4 data and weights required, got {x_shape}, {w_shape}")
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    n, c, h, w = x_shape
    o, cg, kh, kw = w_shape
    if c != groups * cg:
        raise ValueError(f"C = {c} != groups * Cg = {groups} * {cg}")
    if o % groups:
        raise ValueError(f"O = {o} is not a multiple of groups = {groups}")
    return n, c, h, w, o, cg, kh, kw


def _out_hw(h, w, kh, kw, stride, dilation, pads):
    sy, sx = stride
    ry, rx = dilation
    pt, pb, pl, pr = pads
    return (conv_out_size(h, kh, sy, ry, pt, pb), conv_out_size(w, kw, sx, rx, pl, pr))


def conv2d_ref(x_nchw, w_oihw, stride=(1, 1), dilation=(1, 1), pads=(0, 0, 0, 0), groups=1):
    """Forward convolution, SPEC 2.5, as a direct loop over the definition::

        y[n, o, i, j] = sum_{c < Cg} sum_{p < kH} sum_{q < kW}
            x[n, (o // Og) * Cg + c, i*sy - pt + p*ry, j*sx - pl + q*rx] * w[o, c, p, q]

    with ``x`` zero outside ``[0, H) x [0, W)``. The sums over ``n`` (kept as a vector) and
    ``c`` (a dot product) are done by numpy; everything else is an explicit loop.
    """
    x = np.asarray(x_nchw, dtype=np.float64)
    wt = np.asarray(w_oihw, dtype=np.float64)
    n, c, h, w, o, cg, kh, kw = _check_common(x.shape, wt.shape, groups)
    sy, sx = stride
    ry, rx = dilation
    pt, _, pl, _ = pads
    ho, wo = _out_hw(h, w, kh, kw, stride, dilation, pads)
    og = o // groups
    y = np.zeros((n, o, ho, wo), dtype=np.float64)
    for oc in range(o):
        c0 = (oc // og) * cg  # first input channel of this output channel's group
        for i in range(ho):
            for j in range(wo):
                acc = np.zeros(n, dtype=np.float64)
                for p in range(kh):
                    hh = i * sy - pt + p * ry
                    if not 0 <= hh < h:
                        continue  # x is zero there
                    for q in range(kw):
                        ww = j * sx - pl + q * rx
                        if not 0 <= ww < w:
                            continue
                        # sum over c < Cg of x[n, c0 + c, hh, ww] * w[oc, c, p, q]
                        acc += x[:, c0:c0 + cg, hh, ww] @ wt[oc, :, p, q]
                y[:, oc, i, j] = acc
    return y


def conv2d_data_grad_ref(dy_nchw, w_oihw, x_shape_nchw, stride=(1, 1), dilation=(1, 1),
                         pads=(0, 0, 0, 0), groups=1):
    """Data gradient, SPEC 2.6, as a direct SCATTER loop (the adjoint of :func:`conv2d_ref`).

    For every output position ``(n, o, i, j)`` and tap ``(c, p, q)`` of the forward definition
    that reads ``x[n, c0 + c, h, w]`` inside the image, add ``dy[n, o, i, j] * w[o, c, p, q]``
    to ``dx[n, c0 + c, h, w]``. Positions no window touches stay 0.

    ``x_shape_nchw`` is the forward source shape ``[N, C, H, W]``; ``dy`` must have the forward
    result's shape for it.
    """
    dy = np.asarray(dy_nchw, dtype=np.float64)
    wt = np.asarray(w_oihw, dtype=np.float64)
    x_shape = tuple(int(s) for s in x_shape_nchw)
    n, c, h, w, o, cg, kh, kw = _check_common(x_shape, wt.shape, groups)
    sy, sx = stride
    ry, rx = dilation
    pt, _, pl, _ = pads
    ho, wo = _out_hw(h, w, kh, kw, stride, dilation, pads)
    if dy.shape != (n, o, ho, wo):
        raise ValueError(f"incoming gradient shape {dy.shape} != forward result {(n, o, ho, wo)}")
    og = o // groups
    dx = np.zeros(x_shape, dtype=np.float64)
    for oc in range(o):
        c0 = (oc // og) * cg
        for i in range(ho):
            for j in range(wo):
                g = dy[:, oc, i, j]  # [N]
                for p in range(kh):
                    hh = i * sy - pt + p * ry
                    if not 0 <= hh < h:
                        continue
                    for q in range(kw):
                        ww = j * sx - pl + q * rx
                        if not 0 <= ww < w:
                            continue
                        # dx[n, c0 + c, hh, ww] += dy[n, oc, i, j] * w[oc, c, p, q]
                        dx[:, c0:c0 + cg, hh, ww] += np.outer(g, wt[oc, :, p, q])
    return dx


def conv2d_weights_grad_ref(dy_nchw, x_nchw, w_shape_oihw, stride=(1, 1), dilation=(1, 1),
                            pads=(0, 0, 0, 0), groups=1):
    """Weights gradient, SPEC 2.7, as a direct loop::

        dw[o, c, p, q] = sum_n sum_{i < Ho} sum_{j < Wo}
            dy[n, o, i, j] * x[n, (o // Og) * Cg + c, i*sy - pt + p*ry, j*sx - pl + q*rx]

    ``w_shape_oihw`` is the forward weights shape ``[O, Cg, kH, kW]`` (the kernel size comes
    from it). The sum over ``n`` is a numpy dot product; the rest are explicit loops.
    """
    dy = np.asarray(dy_nchw, dtype=np.float64)
    x = np.asarray(x_nchw, dtype=np.float64)
    w_shape = tuple(int(s) for s in w_shape_oihw)
    n, c, h, w, o, cg, kh, kw = _check_common(x.shape, w_shape, groups)
    sy, sx = stride
    ry, rx = dilation
    pt, _, pl, _ = pads
    ho, wo = _out_hw(h, w, kh, kw, stride, dilation, pads)
    if dy.shape != (n, o, ho, wo):
        raise ValueError(f"incoming gradient shape {dy.shape} != forward result {(n, o, ho, wo)}")
    og = o // groups
    dw = np.zeros(w_shape, dtype=np.float64)
    for oc in range(o):
        c0 = (oc // og) * cg
        for p in range(kh):
            for q in range(kw):
                acc = np.zeros(cg, dtype=np.float64)
                for i in range(ho):
                    hh = i * sy - pt + p * ry
                    if not 0 <= hh < h:
                        continue
                    for j in range(wo):
                        ww = j * sx - pl + q * rx
                        if not 0 <= ww < w:
                            continue
                        # sum over n of dy[n, oc, i, j] * x[n, c0 + c, hh, ww], for every c
                        acc += dy[:, oc, i, j] @ x[:, c0:c0 + cg, hh, ww]
                dw[oc, :, p, q] = acc
    return dw


# ---------------------------------------------------------------------------------------------
# Layout helpers (SPEC 2.3): plain transposes, returned as views.


def nhwc_to_nchw(a):
    """``[N, H, W, C]`` -> ``[N, C, H, W]``."""
    return np.transpose(np.asarray(a), (0, 3, 1, 2))


def nchw_to_nhwc(a):
    """``[N, C, H, W]`` -> ``[N, H, W, C]``."""
    return np.transpose(np.asarray(a), (0, 2, 3, 1))


def hwio_to_oihw(a):
    """``[kH, kW, C/g, O]`` -> ``[O, C/g, kH, kW]``."""
    return np.transpose(np.asarray(a), (3, 2, 0, 1))


def oihw_to_hwio(a):
    """``[O, C/g, kH, kW]`` -> ``[kH, kW, C/g, O]``."""
    return np.transpose(np.asarray(a), (2, 3, 1, 0))
