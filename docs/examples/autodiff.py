"""Automatic differentiation: d sum(tanh(x) * w) / dx and / dw with gradientForPrimaryTensor."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([3], mg.float32, name="x")
w = g.placeholder([3], mg.float32, name="w")
loss = g.reductionSum(g.multiplication(g.tanh(x), w), axis=0, name="loss")
grads = g.gradientForPrimaryTensor(loss, [x, w])
out = g.run(feeds={x: np.zeros(3, np.float32), w: np.array([1, 2, 3], np.float32)},
            targetTensors=[grads[x], grads[w]])
print(out[grads[x]].numpy().tolist(), out[grads[w]].numpy().tolist())  # [1, 2, 3] [0, 0, 0]
