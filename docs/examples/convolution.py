"""Convolution: a 3x3 TF_SAME convolution of an NCHW image and its weights gradient."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([1, 2, 5, 5], mg.float32, name="x")      # [N, C, H, W]
w = g.placeholder([4, 2, 3, 3], mg.float32, name="w")      # [O, I, kH, kW]
d = mg.Convolution2DOpDescriptor(paddingStyle=mg.PaddingStyle.TF_SAME)
y = g.convolution2D(x, weights=w, descriptor=d, name="y")  # [1, 4, 5, 5]
dw = g.convolution2DWeightsGradient(g.constant(1.0, [1, 4, 5, 5], mg.float32), source=x,
                                    outputShape=[4, 2, 3, 3], forwardConvolutionDescriptor=d)
rng = np.random.default_rng(0)
out = g.run(feeds={x: rng.standard_normal((1, 2, 5, 5), dtype=np.float32),
                   w: rng.standard_normal((4, 2, 3, 3), dtype=np.float32)},
            targetTensors=[y, dw])
print("y", out[y].shape, "dw", out[dw].shape)
