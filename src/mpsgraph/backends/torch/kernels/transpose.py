"""A tiled 2-D transpose (Triton): out[c, r] = src[r, c] for a row-major [R, C] matrix.

What it is for: MPSGraph's HWIO weights are, in memory, a row-major [kH*kW*I, O] matrix, and
cuDNN's NHWC convolutions want (O, kH, kW, I) - the transposed [O, kH*kW*I] matrix - so an NHWC
convolution with HWIO weights transposes the weights (and the weights gradient transposes its
result back). torch's generic strided copy does that at a fraction of the memory bandwidth
(measured on the H200: ~17 us for the 4.7 MB of 512x512x3x3 bfloat16 weights); this kernel
reads and writes whole [BLOCK_R, BLOCK_C] tiles, coalesced on both sides (the tile is
transposed in registers / shared memory by tl.trans).

Used by the convolution kernels' "cudnn_tt" path, a candidate of the autotuner for NHWC data
with HWIO weights (backends/torch/convolution.py; MPSGRAPH_TRITON_TRANSPOSE=1 forces it, =0
takes it away). Any dtype Triton loads (float32/16, bfloat16).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import cdiv


@triton.jit
def _transpose_kernel(src_ptr, out_ptr, R, C, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    r = pr * BLOCK_R + tl.arange(0, BLOCK_R)
    c = pc * BLOCK_C + tl.arange(0, BLOCK_C)
    m = (r[:, None] < R) & (c[None, :] < C)
    tile = tl.load(src_ptr + r[:, None].to(tl.int64) * C + c[None, :], mask=m)
    # out is [C, R]: row c, column r; store the transposed tile so that r runs fastest
    tl.store(out_ptr + c[:, None].to(tl.int64) * R + r[None, :], tl.trans(tile),
             mask=tl.trans(m))


def transpose_2d(src: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """src: a contiguous [R, C] matrix; returns (or writes into `out`, contiguous [C, R]) its
    transpose."""
    if src.dim() != 2 or not src.is_contiguous():
        raise ValueError(f"transpose_2d: expected a contiguous 2-D tensor, given shape "
                         f"{tuple(src.shape)} strides {src.stride()}")
    R, C = src.shape
    if out is None:
        out = torch.empty((C, R), dtype=src.dtype, device=src.device)
    if R == 0 or C == 0:
        return out
    br, bc = 64, 64
    grid = (cdiv(R, br), cdiv(C, bc))
    _transpose_kernel[grid](src, out, R, C, BLOCK_R=br, BLOCK_C=bc, num_warps=4)
    return out
