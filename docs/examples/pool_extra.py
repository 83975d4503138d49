"""More pooling: maxPooling2DReturnIndices, maxPooling4D and imToCol of a [1, 1, 4, 4] image."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([1, 1, 4, 4], mg.float32, name="x")
d2 = mg.Pooling2DOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2, strideInY=2,
                              returnIndicesMode=mg.PoolingReturnIndicesMode.globalFlatten2D)
vals, idx = g.maxPooling2DReturnIndices(x, d2)                      # [1, 1, 2, 2] each
p4 = g.maxPooling4D(x, mg.Pooling4DOpDescriptor(kernelSizes=[1, 1, 2, 2], strides=[1, 1, 2, 2]))
cols = g.imToCol(x, mg.ImToColOpDescriptor(kernelWidth=2, kernelHeight=2, strideInX=2,
                                           strideInY=2))           # [1, 1*2*2, 2*2]
xv = np.array([[5, 1, 2, 8], [0, 3, 4, 1], [9, 2, 0, 0], [1, 1, 7, 6]], np.float32)
out = g.run(feeds={x: xv.reshape(1, 1, 4, 4)}, targetTensors=[vals, idx, p4, cols])
print("max", out[vals].numpy()[0, 0].tolist(), "at flat index", out[idx].numpy()[0, 0].tolist())
print("maxPooling4D", out[p4].numpy()[0, 0].tolist())
print("imToCol", out[cols].shape, "column 0:", out[cols].numpy()[0, :, 0].tolist())
