"""torch kernel of the matrix family (semantics: backends/numpy/matrix.py). Half types are
widened to float32, multiplied, and rounded once; integers multiply in int64 and wrap back
(equal modulo 2^bits to NumPy's wrapping product), by `torch.matmul` where torch has an integer
GEMM (CPU) and as a broadcast product summed over k elsewhere (CUDA has none)."""

from __future__ import annotations

import torch

from . import KERNELS, host_for_wide_unsigned, kernel
from .arithmetic import I64, finish, work


@kernel("matrixMultiplication")
def matrixMultiplication(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return finish(torch.matmul(work(a), work(b)), a.dtype)
    ai, bi = a.to(I64), b.to(I64)
    if ai.device.type == "cpu":
        y = torch.matmul(ai, bi)
    else:
        y = (ai.unsqueeze(-1) * bi.unsqueeze(-3)).sum(dim=-2)
    return finish(y, a.dtype)


def _matmul_plain(a: torch.Tensor, b: torch.Tensor, attrs: None) -> torch.Tensor:
    return torch.matmul(a, b)


def _specialize(dtypes):
    """The kernel for inputs of these torch dtypes (known when an executable is compiled):
    float32 or complex64 operands of one dtype need neither widening nor a cast back, so the
    product alone."""
    a = dtypes[0] if dtypes else None
    if a in (torch.float32, torch.complex64) and all(d is a for d in dtypes):
        return _matmul_plain
    return matrixMultiplication


matrixMultiplication.specialize = _specialize

# uint16/32/64 on a GPU run on the host (see host_for_wide_unsigned)
for _name in [n for n, f in KERNELS.items() if f.__module__ == __name__]:
    KERNELS[_name] = host_for_wide_unsigned(KERNELS[_name])
