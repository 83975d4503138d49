"""Control flow: if_ on a scalar predicate, and a for_ loop that doubles a [2] tensor 3 times."""
import numpy as np

import mpsgraph as mg

g = mg.Graph()
x = g.placeholder([2], mg.float32, name="x")
p = g.placeholder([], mg.bool, name="p")
(branch,) = g.if_(p, then=lambda: [g.multiplication(x, x)], elseBlock=lambda: [g.negative(x)])
(looped,) = g.for_(g.constant(3, [], mg.int32), [x],
                   lambda i, args: [g.addition(args[0], args[0])])
for pred in (True, False):
    out = g.run(feeds={x: np.array([1, 2], np.float32), p: np.array(pred)},
                targetTensors=[branch, looped])
    print(f"p={pred}: if_ ->", out[branch].numpy().tolist(),
          " for_ ->", out[looped].numpy().tolist())
