"""Activations: reLU, sigmoid and softMax over the last axis of a [N, C] batch."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([2, 3], mg.float32, name="x")
r, s, p = g.reLU(x), g.sigmoid(x), g.softMax(x, axis=-1)
out = g.run(feeds={x: np.array([[-1, 0, 2], [3, 1, -2]], np.float32)}, targetTensors=[r, s, p])
print("reLU   ", out[r].numpy().tolist())
print("softMax", np.round(out[p].numpy().astype(np.float64), 4).tolist())  # rows sum to 1
