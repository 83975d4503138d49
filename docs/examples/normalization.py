"""Normalization: mean and variance of a [2, 3] batch over axis 0, then normalize (gamma, beta)."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([2, 3], mg.float32, name="x")
m = g.mean(x, axes=[0])                                             # [1, 3]
v = g.variance(x, mean=m, axes=[0])                                 # [1, 3]
y = g.normalize(x, m, v, gamma=g.constant(2.0, [3], mg.float32),
                beta=g.constant(1.0, [3], mg.float32), epsilon=1e-5)  # [2, 3]
out = g.run(feeds={x: np.array([[1, 2, 3], [3, 6, 9]], np.float32)}, targetTensors=[m, v, y])
print("mean", out[m].numpy().tolist(), "variance", out[v].numpy().tolist())
print("normalize", np.round(out[y].numpy().astype(np.float64), 3).tolist())
