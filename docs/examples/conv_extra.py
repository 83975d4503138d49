"""More convolutions: depthwiseConvolution2D, a stride-2 convolutionTranspose2D, convolution3D."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([1, 2, 4, 4], mg.float32, name="x")                  # [N, C, H, W]
dw = g.depthwiseConvolution2D(x, g.constant(np.ones((1, 2, 3, 3), np.float32)),  # [M, C, kH, kW]
                              mg.DepthwiseConvolution2DOpDescriptor())  # [1, 2, 2, 2]
up = g.convolutionTranspose2D(x, g.constant(np.ones((2, 1, 2, 2), np.float32)),  # [O, C, kH, kW]
                              [1, 1, 8, 8], mg.Convolution2DOpDescriptor(strideInX=2, strideInY=2))
v = g.constant(np.arange(27, dtype=np.float32).reshape(1, 1, 3, 3, 3))  # [N, C, D, H, W]
c3 = g.convolution3D(v, g.constant(np.ones((1, 1, 2, 2, 2), np.float32)),
                     mg.Convolution3DOpDescriptor())                    # [1, 1, 2, 2, 2]
out = g.run(feeds={x: np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)},
            targetTensors=[dw, up, c3])
print("depthwise [1, 2, 2, 2]:", out[dw].numpy()[0].tolist())
print("transpose", out[up].shape, "row 0:", out[up].numpy()[0, 0, 0].tolist())
print("conv3D", out[c3].numpy().ravel().tolist())
