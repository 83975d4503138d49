"""Sample helpers shared by the entry modules."""

from __future__ import annotations

import numpy as np

from opdb import arr, shape


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
