"""The graph core: a placeholder, a variable, run, compile and an Executable re-run."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([3], mg.float32, name="x")
w = g.variable(np.array([1, 2, 3], np.float32), [3], mg.float32, name="w")
y = g.multiplication(x, w, name="y")
print(g.run(feeds={x: np.ones(3, np.float32)}, targetTensors=[y])[y].numpy().tolist())
exe = g.compile({x: mg.ShapedType([3], mg.float32)}, [y])
(y_data,) = exe.run([np.full(3, 2, np.float32)])
print(y_data.numpy().tolist())
