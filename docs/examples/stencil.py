"""Stencil: a 3-wide sum and max over the last axis of a [1, 1, 1, 6] tensor, zero-padded."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([1, 1, 1, 6], mg.float32, name="x")
w = g.constant(np.ones((1, 1, 1, 3), np.float32))                   # window [k0, k1, k2, k3]
pad = (0, 0, 0, 0, 0, 0, 1, 1)                                       # (before, after) per dimension
total = g.stencil(x, w, descriptor=mg.StencilOpDescriptor(explicitPadding=pad))  # [1, 1, 1, 6]
mx = g.stencil(x, w, descriptor=mg.StencilOpDescriptor(reductionMode=mg.ReductionMode.max,
                                                       explicitPadding=pad))
out = g.run(feeds={x: np.array([1, 5, 2, 0, 3, 4], np.float32).reshape(1, 1, 1, 6)},
            targetTensors=[total, mx])
print("sum", out[total].numpy().ravel().tolist())
print("max", out[mx].numpy().ravel().tolist())
