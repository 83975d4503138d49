"""Attention: scaledDotProductAttention of [1, 2, 3, 4] query/key/value with a causal bool mask."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
q, k, v = (g.placeholder([1, 2, 3, 4], mg.float32, name=n) for n in "qkv")  # [B, heads, L, d]
mask = g.constant(np.tril(np.ones((3, 3), bool)))          # True keeps key j <= query i
y = g.scaledDotProductAttention(q, k, v, mask=mask)        # scale 1/sqrt(4); [1, 2, 3, 4]
rng = np.random.default_rng(0)
feeds = {t: rng.standard_normal((1, 2, 3, 4), dtype=np.float32) for t in (q, k, v)}
out = g.run(feeds=feeds, targetTensors=[y])
print("y", out[y].shape)
print("query 0 sees only key 0, so y[0,0,0] == v[0,0,0]:",
      np.allclose(out[y].numpy()[0, 0, 0], feeds[v][0, 0, 0], atol=1e-6))
print("y[0,0,2]", np.round(out[y].numpy()[0, 0, 2].astype(np.float64), 3).tolist())
