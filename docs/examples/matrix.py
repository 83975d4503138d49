"""matrixMultiplication: [B, M, K] x [K, N] -> [B, M, N] (batch dimensions broadcast)."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
a = g.placeholder([2, 3, 4], mg.float32, name="a")
b = g.placeholder([4, 5], mg.float32, name="b")
c = g.matrixMultiplication(a, b, name="c")
out = g.run(feeds={a: np.ones((2, 3, 4), np.float32), b: np.ones((4, 5), np.float32)},
            targetTensors=[c])
print(out[c].shape, out[c].numpy()[0, 0, 0])  # [2, 3, 5] 4.0
