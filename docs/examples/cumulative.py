"""Cumulative ops: running sum along an axis, inclusive and exclusive, forward and reversed."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([4], mg.float32, name="x")
inc = g.cumulativeSum(x, axis=0)
exc = g.cumulativeSum(x, axis=0, exclusive=True)
rev = g.cumulativeSum(x, axis=0, reverse=True)
out = g.run(feeds={x: np.array([1, 2, 3, 4], np.float32)}, targetTensors=[inc, exc, rev])
print(out[inc].numpy().tolist(), out[exc].numpy().tolist(), out[rev].numpy().tolist())
