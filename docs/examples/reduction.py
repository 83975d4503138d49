"""Reductions: sum, maximum and mean over axes (the reduced axes are kept with size 1)."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([2, 3], mg.float32, name="x")
s = g.reductionSum(x, axes=[0, 1])
m = g.reductionMaximum(x, axis=1)
mean = g.mean(x, axes=[0])
out = g.run(feeds={x: np.array([[1, 2, 3], [4, 5, 6]], np.float32)}, targetTensors=[s, m, mean])
print(out[s].numpy().tolist(), out[m].numpy().tolist(), out[mean].numpy().tolist())
