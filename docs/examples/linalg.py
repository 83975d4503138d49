"""Linear algebra: inverse of a [2, 2] matrix, bandPart of a [3, 3] one, and nonZeroIndices."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
a = g.placeholder([2, 2], mg.float32, name="a")
m = g.placeholder([3, 3], mg.float32, name="m")
inv = g.inverse(a)
band = g.bandPart(m, numLower=0, numUpper=1)                        # diagonal and one above
nz = g.nonZeroIndices(band)                                         # int32 [count, 2]
out = g.run(feeds={a: np.array([[4, 7], [2, 6]], np.float32),
                   m: np.arange(1, 10, dtype=np.float32).reshape(3, 3)},
            targetTensors=[inv, band, nz])
print("inverse ", np.round(out[inv].numpy().astype(np.float64), 4).tolist())
print("bandPart", out[band].numpy().tolist())
print("nonZero ", out[nz].numpy().tolist())
