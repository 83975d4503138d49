"""Random: a seeded Philox state drives randomUniformTensor [2, 3]; a seed repeats the values."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
state = g.randomPhiloxStateTensor(seed=42)                          # int32 [7]
u, state2 = g.randomUniformTensor([2, 3], stateTensor=state)        # [values, next state]
n = g.randomTensor([3], mg.RandomOpDescriptor(distribution=mg.RandomDistribution.normal,
                                              dataType=mg.float32), stateTensor=state2)[0]
again = g.randomUniformTensor([2, 3], seed=7)
out1 = g.run(feeds={}, targetTensors=[u, n, again])
out2 = g.run(feeds={}, targetTensors=[u, again])
print("uniform", np.round(out1[u].numpy().astype(np.float64), 4).tolist())
print("normal ", np.round(out1[n].numpy().astype(np.float64), 4).tolist())
print("reproducible:", np.array_equal(out1[u].numpy(), out2[u].numpy()),
      np.array_equal(out1[again].numpy(), out2[again].numpy()))
