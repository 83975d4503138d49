"""Arithmetic: broadcasting binary ops, a unary op and clamp, on [2, 3] and [3] tensors."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
a = g.placeholder([2, 3], mg.float32, name="a")
b = g.constant(np.array([10, 20, 30], np.float32))
lo, hi = g.constant(0.0, dataType=mg.float32), g.constant(25.0, dataType=mg.float32)
y = g.clamp(g.addition(g.multiplication(a, b), g.square(a)), min=lo, max=hi)
out = g.run(feeds={a: np.array([[1, 2, 3], [-1, 0, 0.5]], np.float32)}, targetTensors=[y])
print(out[y].numpy().tolist())  # [[11, 25, 25], [0, 0, 15.25]]
