"""Sample grid: bilinear sampleGrid of a [1, 2, 2, 1] NHWC image at (x, y) points [1, 1, 3, 2]."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
src = g.placeholder([1, 2, 2, 1], mg.float32, name="src")          # [N, H, W, C]
xy = g.placeholder([1, 1, 3, 2], mg.float32, name="xy")            # [N, Ho, Wo, (x, y)]
y = g.sampleGrid(src, xy, alignCorners=True)  # [1, 1, 3, 1]; -1 / +1: edge pixel centres
out = g.run(feeds={src: np.array([0, 1, 2, 3], np.float32).reshape(1, 2, 2, 1),
                   xy: np.array([[[[-1, -1], [1, -1], [0, 0]]]], np.float32)},
            targetTensors=[y])
print("top-left, top-right, centre:",
      np.round(out[y].numpy().ravel().astype(np.float64), 4).tolist())
