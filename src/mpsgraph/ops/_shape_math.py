"""Shape arithmetic shared by op families: padding styles, convolution sizes, layouts.

-1 stands for a dimension not known yet; every helper propagates it instead of failing.
"""

from __future__ import annotations

from ..types import PaddingStyle, TensorNamedDataLayout

UNKNOWN = -1

# data NHWC <-> canonical NCHW; weights HWIO <-> canonical OIHW
_TO_CANON = {
    TensorNamedDataLayout.NCHW: (0, 1, 2, 3),
    TensorNamedDataLayout.NHWC: (0, 3, 1, 2),
    TensorNamedDataLayout.OIHW: (0, 1, 2, 3),
    TensorNamedDataLayout.HWIO: (3, 2, 0, 1),
}


def to_canonical(shape: list[int], layout: TensorNamedDataLayout) -> list[int]:
    """A data shape as [N, C, H, W] or a weights shape as [O, Cg, kH, kW]."""
    return [shape[i] for i in _TO_CANON[layout]]


def from_canonical(shape: list[int], layout: TensorNamedDataLayout) -> list[int]:
    """Inverse of `to_canonical`."""
    perm = _TO_CANON[layout]
    out = [0] * 4
    for k, i in enumerate(perm):
        out[i] = shape[k]
    return out


def known(*dims: int) -> bool:
    return all(d is not None and d >= 0 for d in dims)


def conv_output_size(size: int, k: int, stride: int, dilation: int, style: PaddingStyle,
                     pad_before: int, pad_after: int) -> tuple[int, int, int] | None:
    """(out, pad_before, pad_after) along one axis, per SPEC 2.4; None if the padded input is
    smaller than the dilated kernel (explicit / TF_VALID). Any unknown input gives UNKNOWNs."""
    if not known(size, k):
        return UNKNOWN, UNKNOWN, UNKNOWN
    k_eff = dilation * (k - 1) + 1
    if style == PaddingStyle.explicit or style == PaddingStyle.TF_VALID:
        pb, pe = (pad_before, pad_after) if style == PaddingStyle.explicit else (0, 0)
        if size + pb + pe < k_eff:
            return None
        return (size + pb + pe - k_eff) // stride + 1, pb, pe
    out = -(-size // stride)
    total = max((out - 1) * stride + k_eff - size, 0)
    if style == PaddingStyle.TF_SAME:
        pb = total // 2
        return out, pb, total - pb
    pe = total // 2  # ONNX_SAME_LOWER: the odd one goes before
    return out, total - pe, pe
