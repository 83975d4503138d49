"""Quantization: quantize a [5] float tensor to int8 (scale 0.1, zero point 2), dequantize it."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([5], mg.float32, name="x")
q = g.quantize(x, 0.1, 2, dataType=mg.int8)                         # round(x / 0.1 + 2), saturated
dq = g.dequantize(q, 0.1, 2, dataType=mg.float32)                   # 0.1 * (q - 2)
out = g.run(feeds={x: np.array([-1.0, -0.04, 0.26, 3.0, 20.0], np.float32)}, targetTensors=[q, dq])
print("quantize  ", out[q].numpy().tolist())
print("dequantize", np.round(out[dq].numpy().astype(np.float64), 4).tolist())
