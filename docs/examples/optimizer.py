"""Optimizers: one gradient-descent step on a variable, w <- w - lr * d(w^2)/dw."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
w = g.variable(np.array([1.0, -2.0], np.float32), [2], mg.float32, name="w")
loss = g.reductionSum(g.square(w), axis=0)
grad = g.gradientForPrimaryTensor(loss, [w])[w]
lr = g.constant(0.25, dataType=mg.float32)
step = g.assign(w, g.stochasticGradientDescent(lr, values=w, gradient=grad))
for _ in range(2):
    g.run(feeds={}, targetTensors=[], targetOperations=[step])
print(g.run(feeds={}, targetTensors=[w])[w].numpy().tolist())  # halved twice: [0.25, -0.5]
