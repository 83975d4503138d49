"""Shape ops: reshape, transpose, sliceTensor and concatTensors."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([2, 3], mg.float32, name="x")
t = g.transpose(g.reshape(x, shape=[3, 2]), permutation=[1, 0])   # [2, 3]
s = g.sliceTensor(x, dimension=1, start=1, length=2)              # [2, 2]
c = g.concatTensors([x, x], dimension=0)                          # [4, 3]
out = g.run(feeds={x: np.arange(6, dtype=np.float32).reshape(2, 3)}, targetTensors=[t, s, c])
print(out[t].numpy().tolist(), out[s].shape, out[c].shape)
