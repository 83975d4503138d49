"""Resize: upsample a [1, 1, 2, 2] NCHW image to 4x4 with resizeNearest and resizeBilinear."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([1, 1, 2, 2], mg.float32, name="x")
L = mg.TensorNamedDataLayout.NCHW
near = g.resizeNearest(x, [4, 4], layout=L)                         # [1, 1, 4, 4]
bil = g.resizeBilinear(x, [4, 4], layout=L, alignCorners=True)      # corners map to corners
out = g.run(feeds={x: np.array([[[[0, 3], [6, 9]]]], np.float32)}, targetTensors=[near, bil])
print("nearest  row 0:", out[near].numpy()[0, 0, 0].tolist())
print("bilinear row 0:", out[bil].numpy()[0, 0, 0].tolist())
print("bilinear col 0:", out[bil].numpy()[0, 0, :, 0].tolist())
