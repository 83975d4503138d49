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


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for the host-side launch arithmetic (triton.cdiv is a @jit function whose
    Python call costs ~2 us: dozens of them per call added up in the eager paths)."""
    return -(-int(a) // int(b))


def pow2(v: int) -> int:
    """The smallest power of two >= v (>= 1); triton.next_power_of_2 without the @jit call."""
    return 1 << max(int(v) - 1, 0).bit_length()
