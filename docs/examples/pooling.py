"""Pooling: 2x2 max and average pooling, stride 2, of an NCHW image."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([1, 1, 4, 4], mg.float32, name="x")
d = mg.Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2)
mx, av = g.maxPooling2D(x, d), g.avgPooling2D(x, d)
out = g.run(feeds={x: np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)},
            targetTensors=[mx, av])
print(out[mx].numpy()[0, 0].tolist(), out[av].numpy()[0, 0].tolist())
