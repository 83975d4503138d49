"""Triton kernels of the torch backend, one kernel per file. Each is optional: `available()`
says whether Triton can run on a device (CUDA, or the CPU under TRITON_INTERPRET=1 for tests),
and callers fall back to plain torch otherwise."""

from __future__ import annotations

import os

import torch


def available(device: torch.device) -> bool:
    if os.environ.get("MPSGRAPH_NO_TRITON") == "1":
        return False
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True
