"""Kernels of the graph's source ops that compute anything (read)."""

from __future__ import annotations

import torch

from . import kernel


@kernel("read")
def read(variable: torch.Tensor, attrs: None) -> torch.Tensor:
    return variable
