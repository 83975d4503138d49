"""Gather and scatter: gather rows of a [4, 2] table by index, scatterWithData them back (add)."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
t = g.placeholder([4, 2], mg.float32, name="table")
idx = g.constant(np.array([3, 0, 3], np.int32))
rows = g.gather(t, indicesTensor=idx, axis=0)                       # [3, 2]: rows 3, 0, 3
back = g.scatterWithData(t, updates=rows, indices=idx, axis=0,
                         mode=mg.ScatterMode.add)                   # [4, 2]; row 3 added twice
out = g.run(feeds={t: np.arange(8, dtype=np.float32).reshape(4, 2)}, targetTensors=[rows, back])
print("gather ", out[rows].numpy().tolist())
print("scatter", out[back].numpy().tolist())
