"""Sample helpers shared by the entry modules."""

from __future__ import annotations

import numpy as np

import mpsgraph as mg
from opdb import arr, f64, is_float, shape


def broadcast_shapes(rng: np.random.Generator, n: int, rank: int | None = None
                     ) -> list[tuple[int, ...]]:
    """`n` shapes that broadcast together (NumPy rules): a random result shape; each operand
    drops some leading axes and has some axes set to 1."""
    out = shape(rng, rank)
    res = []
    for _ in range(n):
        k = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.3 else 0
        s = [1 if rng.random() < 0.25 else d for d in out[k:]]
        res.append(tuple(s))
    return res


def elementwise_inputs(rng, n, dt, lo=-3.0, hi=3.0):
    return [arr(rng, s, dt, lo, hi) for s in broadcast_shapes(rng, n)]


def mg_module():
    """The mpsgraph module (for entry code that names its errors and enums)."""
    return mg


def cycle(rng: np.random.Generator):
    """pick(k, key, options): options[(k + offset) % len], one random offset per option key,
    so that n_samples() >= len(options) samples of a dtype see every option."""
    offsets: dict[str, int] = {}

    def pick(k, key, options):
        off = offsets.setdefault(key, int(rng.integers(0, 1 << 16)))
        return options[(k + off) % len(options)]
    return pick


def size(rng, lo=0, hi=3, p_edge=0.3) -> int:
    """A size in [lo, hi]; 0 and 1 (when lo allows) with probability p_edge / 2 each."""
    u = rng.random()
    if u < p_edge / 2 and lo <= 0:
        return 0
    if u < p_edge and lo <= 1:
        return 1
    return int(rng.integers(max(lo, 2), max(lo, 2, hi) + 1))


def ref_value(x):
    """The reference's view of an input: float64 for floats, the array itself otherwise."""
    return f64(x) if is_float(x) else np.asarray(x)


def host(a) -> np.ndarray:
    """A fed value (NumPy array, TensorData, a torch tensor on any device) as a host array,
    for a custom runner's reference (the runner still feeds the value itself)."""
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, mg.TensorData):
        return a.numpy()
    if hasattr(a, "detach"):  # torch, on any device; bfloat16 through its bits
        import ml_dtypes
        import torch

        t = a.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(a)
