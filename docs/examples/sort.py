"""Sorting: sort and argSort of a [2, 4] tensor along the last axis, and its topK with k = 2."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([2, 4], mg.float32, name="x")
s = g.sort(x, axis=-1)
a = g.argSort(x, axis=-1, descending=True)                          # int32 indices
vals, idx = g.topK(x, axis=-1, k=2)                                 # [2, 2] values and indices
out = g.run(feeds={x: np.array([[3, 1, 4, 1.5], [9, 2, 6, 5]], np.float32)},
            targetTensors=[s, a, vals, idx])
print("sort   ", out[s].numpy().tolist())
print("argSort", out[a].numpy().tolist(), "(descending)")
print("topK   ", out[vals].numpy().tolist(), out[idx].numpy().tolist())
