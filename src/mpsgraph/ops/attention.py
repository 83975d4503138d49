"""scaledDotProductAttention (Apple's MPSGraphMatrixMultiplicationOps.h; the descriptor form
with `SDPADescriptor` is macOS 27):

    query [..., Lq, d], key [..., Lk, d], value [..., Lk, dv] -> [..., Lq, dv]
    softmax(scale * query @ key^T + mask, over Lk) @ value

The leading (batch / head) dimensions broadcast (NumPy rules). `mask` (Swift `mask:` or
`descriptor.maskTensor`) broadcasts to [..., Lq, Lk]: a float mask (the query's dataType) is
ADDED to the scaled scores, as Apple says ("applied to the scaled, matrix multiplied query and
key"); a bool mask keeps the positions that are True (torch's convention). `descriptor.isCausal`
keeps key j <= query i (top-left aligned, torch's `is_causal`); it excludes a mask.
`descriptor.sinksTensor` [heads] (heads = dimension -3 of the result) adds one logit per head
to each row's softmax denominator only. `scale=None` means 1/sqrt(d). A row whose keys are all
masked out gives zeros (PyTorch >= 2.5's safe softmax). Softmax runs in float32 for the half
types, which round once at the end.

Gradient: query, key and value get gradients (the internal kind
`scaledDotProductAttentionGradient`, three results); the mask and sinks get none (documented).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..descriptors import SDPADescriptor
from ..errors import DataTypeError, DescriptorError, GraphError, ShapeError, op_error
from ..types import DataType, ShapedType
from ._checks import same_float_type
from ._registry import InferContext, register_op
from .arithmetic import broadcast_pair

if TYPE_CHECKING:
    from ..graph import Tensor

__all__ = ["AttentionOps", "SDPAAttrs"]

_QKV = ("query", "key", "value")


@dataclass(frozen=True)
class SDPAAttrs:
    scale: float | None
    causal: bool


@dataclass(frozen=True)
class SDPAKernelAttrs:
    scale: float
    causal: bool


def _shapes(ctx: InferContext):
    dt = same_float_type(ctx, _QKV)
    q, k, v = (ctx.type_of(n).shape for n in _QKV)
    for n, s in zip(_QKV, (q, k, v)):
        if s is not None and len(s) < 2:
            raise ctx.error(ShapeError, n, "a tensor of rank >= 2 ([..., length, depth])",
                            f"rank {len(s)} shape {s}")
    if q is None or k is None or v is None:
        return dt, None, None
    if q[-1] >= 0 and k[-1] >= 0 and q[-1] != k[-1]:
        raise ctx.error(ShapeError, "key", f"depth {q[-1]} (the query's last dimension, shape "
                        f"{q})", f"shape {k}")
    if k[-2] >= 0 and v[-2] >= 0 and k[-2] != v[-2]:
        raise ctx.error(ShapeError, "value", f"{k[-2]} rows (the key's length, shape {k})",
                        f"shape {v}")
    batch = broadcast_pair(q[:-2], k[:-2])
    batch = None if batch is None else broadcast_pair(batch, v[:-2])
    if batch is None:
        raise ctx.error(ShapeError, "key", f"batch dimensions broadcast-compatible with the "
                        f"query's {q[:-2]} and the value's {v[:-2]}", f"{k[:-2]}")
    scores = batch + [q[-2], k[-2]]
    m = ctx.type_of("mask")
    if m is not None:
        if m.dataType != DataType.bool and m.dataType != dt:
            raise ctx.error(DataTypeError, "mask", f"bool or {dt!r} (the query's dataType)",
                            m.dataType)
        if m.shape is not None:
            b = broadcast_pair(scores, m.shape)
            if b is None or len(m.shape) > len(scores) or any(
                    x >= 0 and y >= 0 and x != y for x, y in zip(b, scores)):
                raise ctx.error(ShapeError, "mask", f"a shape that broadcasts to the scores' "
                                f"{scores} ([..., Lq, Lk])", f"shape {m.shape}")
    s = ctx.type_of("sinks")
    if s is not None:
        if s.dataType != dt:
            raise ctx.error(DataTypeError, "sinks", f"{dt!r} (the query's dataType)",
                            s.dataType)
        heads = scores[-3] if len(scores) >= 3 else None
        if s.shape is not None and (len(s.shape) != 1 or heads is None or (
                s.shape[0] >= 0 and heads >= 0 and s.shape[0] != heads)):
            raise ctx.error(ShapeError, "sinks", f"a 1-D tensor [heads] = [{heads}] (dimension "
                            "-3 of the scores)" if heads is not None else "a query of rank >= 3 "
                            "(sinks need a heads dimension)", f"shape {s.shape}")
    return dt, batch, scores


def _kernel_attrs(ctx: InferContext):
    q = ctx.type_of("query").shape
    if q is None or q[-1] < 0:
        return None
    sc = ctx.attrs.scale
    return SDPAKernelAttrs(float(sc) if sc is not None else 1.0 / math.sqrt(max(q[-1], 1)),
                           ctx.attrs.causal)


def _infer_sdpa(ctx: InferContext):
    dt, batch, scores = _shapes(ctx)
    if scores is None:
        return [ShapedType(None, dt)], None
    v = ctx.type_of("value").shape
    return [ShapedType(batch + [scores[-2], v[-1]], dt)], _kernel_attrs(ctx)


def _infer_sdpa_grad(ctx: InferContext):
    dt, batch, scores = _shapes(ctx)
    return [ShapedType(ctx.type_of(n).shape, dt) for n in _QKV], _kernel_attrs(ctx)


def _grad_sdpa(g, op, dys):
    ins = [("incomingGradient", dys[0])] + [(n, op.input(n)) for n in
                                             ("query", "key", "value", "mask", "sinks")]
    outs = g._add("scaledDotProductAttentionGradient", ins, op.attrs, None,
                  optional=("mask", "sinks"))
    return {n: t for n, t in zip(_QKV, outs)}


register_op("scaledDotProductAttention", _infer_sdpa, _grad_sdpa)
register_op("scaledDotProductAttentionGradient", _infer_sdpa_grad)


class AttentionOps:
    """scaledDotProductAttention (mixed into `Graph`)."""

    def scaledDotProductAttention(self, query: Tensor, key: Tensor, value: Tensor, *,
                                  mask: Tensor | None = None, scale: float | None = None,
                                  descriptor: SDPADescriptor | None = None,
                                  name: str | None = None) -> Tensor:
        """softmax(scale * query @ key^T + mask) @ value: [..., Lq, d], [..., Lk, d],
        [..., Lk, dv] -> [..., Lq, dv]. Swift's three overloads: `mask=` and `scale=`, or
        `descriptor=` (an SDPADescriptor: scale, isCausal, maskTensor, sinksTensor), not
        both. `scale=None` is 1/sqrt(d)."""
        op = "scaledDotProductAttention"
        from ..graph import Tensor

        causal, sinks = False, None
        if descriptor is not None:
            if mask is not None or scale is not None:
                raise op_error(GraphError, op, "descriptor", "either a descriptor or mask / "
                               "scale", "both", name)
            if not isinstance(descriptor, SDPADescriptor):
                raise op_error(DescriptorError, op, "descriptor", "an SDPADescriptor",
                               type(descriptor).__name__, name)
            scale, mask, sinks = descriptor.scale, descriptor.maskTensor, descriptor.sinksTensor
            causal = descriptor.isCausal
            if not isinstance(causal, (bool, np.bool_)):
                raise op_error(DescriptorError, op, "descriptor.isCausal", "a bool", causal,
                               name)
            causal = bool(causal)
            if causal and mask is not None:
                raise op_error(DescriptorError, op, "descriptor.maskTensor", "None when "
                               "isCausal (Apple: mutually exclusive)", "a Tensor", name)
            for arg, t in (("descriptor.maskTensor", mask), ("descriptor.sinksTensor", sinks)):
                if t is not None and not isinstance(t, Tensor):
                    raise op_error(DescriptorError, op, arg, "a Tensor or None",
                                   type(t).__name__, name)
        if scale is not None:
            if isinstance(scale, (bool, np.bool_)) or not isinstance(
                    scale, (int, float, np.floating, np.integer)) or not math.isfinite(scale):
                raise op_error(GraphError, op, "scale", "a finite float", scale, name)
            scale = float(scale)
        return self._add(op, [("query", query), ("key", key), ("value", value), ("mask", mask),
                              ("sinks", sinks)], SDPAAttrs(scale, causal), name,
                         optional=("mask", "sinks"))[0]
