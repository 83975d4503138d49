"""mpsgraph.draw: the training step of a tiny model; SVG with Graphviz, DOT text without."""
import os
import tempfile
import warnings

import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([4, 3], mg.float32, name="x")
w = g.variable(np.ones((3, 2), np.float32), [3, 2], mg.float32, name="w")
loss = g.reductionSum(g.reLU(g.matrixMultiplication(x, w)), axes=[0, 1], name="loss")
grad = g.gradientForPrimaryTensor(loss, [w])[w]
step = g.assign(w, g.stochasticGradientDescent(g.constant(0.1, dataType=mg.float32), w, grad))
exe = g.compile({x: mg.ShapedType([4, 3], mg.float32)}, [loss], [step])
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Graphviz is not installed: DOT text"
    path = mg.draw(exe, os.path.join(tempfile.mkdtemp(), "step.svg"))
print(os.path.basename(path), "cluster_gradient" in open(path).read() or path.endswith(".svg"))
